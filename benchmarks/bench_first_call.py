"""Time each public analysis' first call, and each dashboard tab's first build.

    python benchmarks/bench_first_call.py [--trace PATH] [--runs 3] [--tabs-trace PATH] [--roots A B]
    python benchmarks/bench_first_call.py --tabs-only [--runs 3] [--roots A B]

Analyses: every name of the analysis groups of ``docs/api_groups.py`` (breakdowns,
communication, host, memory, perfmodel, diagnosis, comparison) that is a function of a
trace, called with its defaults (``compare``/``trace_diff`` compare the trace with itself).
Each run is a fresh process that loads the trace (``cache=False``) and then calls every
analysis once, in a fixed order, timing each call (wall and CPU time: on a shared machine
the CPU time is the steadier figure); a name that raises prints the error's
class instead of a time. Each time is the median of ``--runs`` runs. So that no analysis
takes credit for work an earlier one already did, ``--isolated`` gives each analysis its
own process (slower; the strict first call).

The default trace is a ~200k-event CPU inference trace with Python stacks
(``scripts/record_stack_trace.py``), recorded on demand into ``benchmarks/.data/``.
Tabs: ``DashboardData(trace).tab(id)`` for every tab on the bundled sample
(``tv.sample_path()``) unless ``--tabs-trace`` says otherwise, after the payload, two ways:
*in order*, every tab in one fresh process per run with one ``DashboardData`` (as
``tv.Dashboard`` keeps one: a later tab finds what an earlier one computed and imported), and
*alone*, each tab in its own fresh process (``tv.load``, the payload, then that tab only: the
strict first build, bokeh's import included). ``--roots``
names checkouts of the package (e.g. a ``git archive`` of main with its extensions built) to
time side by side, runs interleaved.

``--overview-split N``: the Overview's parts, in N fresh processes per checkout (alternating):
the charts (bokeh) imported *before* the clock, then ``data.frame("findings")`` (the Overview's
findings step), then the rest of the tab; a change of 0.1-0.2 s there is visible on a busy
machine where the whole tab's spread (bokeh's import included) hides it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / ".data"
DEFAULT_TRACE = DATA / "stack_200k" / "stack_200k.pt.trace.json.gz"
ANALYSIS_GROUPS = ("breakdowns", "communication", "host", "memory", "perfmodel", "diagnosis", "comparison")
PAIRWISE = {"compare", "trace_diff"}
NOT_ANALYSES = {"peaks_table", "DevicePeaks", "FindingRules"}  # tables of constants, classes
# the required keywords of the analyses that have some (an operator of the recorded trace)
KWARGS = {
    "kernel_pace": {"name": "conv", "match": "contains"},
    "frequent_kernel_sequences": {"operator": "aten::conv2d"},
}

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jupyter_traceview as tv
path, names, pairwise, kwargs = sys.argv[1], json.loads(sys.argv[2]), set(json.loads(sys.argv[3])), json.loads(sys.argv[4])
w = time.perf_counter()
trace = tv.load(path, cache=False, progress=False)
out = {"load_s": time.perf_counter() - w, "calls": {}, "cpu": {}}
for name in names:
    fn = getattr(tv, name)
    w, c = time.perf_counter(), time.process_time()
    try:
        fn(trace, trace) if name in pairwise else fn(trace, **kwargs.get(name, {}))
        out["calls"][name] = time.perf_counter() - w
        out["cpu"][name] = time.process_time() - c
    except Exception as e:
        out["calls"][name] = out["cpu"][name] = type(e).__name__
out["package"] = tv.__file__
print(json.dumps(out))
"""

TAB_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData
trace = tv.load(sys.argv[1], cache=False, progress=False)
data = DashboardData(trace)
data.payload()
only = sys.argv[2] if len(sys.argv) > 2 else ""
out = {}
for tab_id, _ in data.tabs:
    if only and tab_id != only:
        continue
    w, c = time.perf_counter(), time.process_time()
    data.tab(tab_id)
    out[tab_id] = [time.perf_counter() - w, time.process_time() - c]
print(json.dumps(out))
"""


SPLIT_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData
import jupyter_traceview.charts
trace = tv.load(sys.argv[1], cache=False, progress=False)
data = DashboardData(trace)
data.payload()
c = time.process_time()
data.frame("findings")
f = time.process_time() - c
c = time.process_time()
data.tab("overview")
print(json.dumps([f, time.process_time() - c]))
"""


def analysis_names() -> list[str]:
    sys.path.insert(0, str(ROOT / "docs"))
    from api_groups import GROUPS

    return [n for g in GROUPS if g.slug in ANALYSIS_GROUPS for n in g.names if n not in NOT_ANALYSES]


def _child(code: str, *args: str, root: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules byte-compiled once
    # cwd=root: ``python -c`` puts the working folder first on sys.path, before PYTHONPATH.
    r = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False, cwd=str(root)
    )
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _median(values: list) -> str:
    nums = [v for v in values if isinstance(v, float)]
    if not nums:
        return str(values[0])
    return f"{statistics.median(nums):.3f}"


def _analyses(a: argparse.Namespace, names: list[str], root: Path) -> dict:
    """One run: every analysis' first call, in one process (or one process each)."""
    args = (json.dumps(sorted(PAIRWISE)), json.dumps(KWARGS))
    if not a.isolated:
        return _child(CHILD, str(a.trace), json.dumps(names), *args, root=root)
    merged: dict = {"calls": {}, "cpu": {}}
    for n in names:
        out = _child(CHILD, str(a.trace), json.dumps([n]), *args, root=root)
        merged["load_s"], merged["package"] = out["load_s"], out["package"]
        merged["calls"].update(out["calls"])
        merged["cpu"].update(out["cpu"])
    return merged


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    p.add_argument("--tabs-trace", default="")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--isolated", action="store_true", help="one process per analysis")
    p.add_argument("--only", nargs="*", default=None, help="these analyses only")
    p.add_argument("--no-tabs", action="store_true")
    p.add_argument("--tabs-only", action="store_true", help="the dashboard tabs only (no analysis)")
    p.add_argument(
        "--roots",
        nargs="*",
        type=Path,
        default=[ROOT],
        help="checkouts of the package to compare side by side (runs interleaved; default: this one)",
    )
    p.add_argument("--overview-split", type=int, default=0, metavar="N", help="only the Overview's parts, N runs")
    a = p.parse_args()
    if a.overview_split:
        _print_split(a, [r.resolve() for r in a.roots])
        return
    if not a.tabs_only and a.trace == DEFAULT_TRACE and not DEFAULT_TRACE.exists():
        sys.path.insert(0, str(ROOT / "scripts"))
        from record_stack_trace import record

        print(f"recording {DEFAULT_TRACE} (about a minute) ...", flush=True)
        record(DEFAULT_TRACE, events=200_000)
    names = a.only or analysis_names()
    roots = [r.resolve() for r in a.roots]
    for root in roots:  # byte-compiled first, as an installation is: no first call pays for it
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "jupyter_traceview")], check=True)
    if not a.tabs_only:
        _print_analyses(a, names, roots)
    if not a.no_tabs:
        _print_tabs(a, roots)


def _print_analyses(a: argparse.Namespace, names: list[str], roots: list[Path]) -> None:
    runs: dict[Path, list[dict]] = {r: [] for r in roots}
    for _ in range(a.runs):
        for root in roots:
            runs[root].append(_analyses(a, names, root))
    print(
        f"trace: {a.trace} ({a.trace.stat().st_size / 1e6:.1f} MB); median of {a.runs} run(s); "
        f"{'one process per analysis' if a.isolated else 'one process, calls in this order'}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for i, root in enumerate(roots):
        package = runs[root][0].get("package", "?")
        print(f"[{i}] {root} ({package}): load (cache=False) {_median([r['load_s'] for r in runs[root]])} s")
    head = " | ".join(f"[{i}] wall (s) | [{i}] CPU (s)" for i in range(len(roots)))
    print(f"| analysis | {head} |")
    print("|---|" + "---|---|" * len(roots))
    for n in names:
        cells = " | ".join(
            f"{_median([r['calls'][n] for r in runs[root]])} | {_median([r['cpu'][n] for r in runs[root]])}"
            for root in roots
        )
        print(f"| {n} | {cells} |")


def _print_tabs(a: argparse.Namespace, roots: list[Path]) -> None:
    head = " | ".join(f"[{i}] wall (s) | [{i}] CPU (s)" for i in range(len(roots)))
    tabs_trace = (
        a.tabs_trace
        or _child("import jupyter_traceview as tv; import json; print(json.dumps({'p': str(tv.sample_path())}))")["p"]
    )
    in_order: dict[Path, list[dict]] = {r: [] for r in roots}
    alone: dict[Path, list[dict]] = {r: [] for r in roots}
    for _ in range(a.runs):
        for root in roots:
            in_order[root].append(_child(TAB_CHILD, tabs_trace, root=root))
        for tab_id in in_order[roots[0]][0]:
            for root in roots:
                if len(alone[root]) < len(in_order[root]):
                    alone[root].append({})
                alone[root][-1].update(_child(TAB_CHILD, tabs_trace, tab_id, root=root))
    for title, runs in (("in order, one process", in_order), ("alone, one process per tab", alone)):
        print(f"\ndashboard tabs on {tabs_trace}: first build, {title}; median of {a.runs} run(s)")
        print(f"| tab | {head} |")
        print("|---|" + "---|---|" * len(roots))
        for t in runs[roots[0]][0]:
            cells = " | ".join(
                f"{_median([r[t][0] for r in runs[root]])} | {_median([r[t][1] for r in runs[root]])}" for root in roots
            )
            print(f"| {t} | {cells} |")


def _print_split(a: argparse.Namespace, roots: list[Path]) -> None:
    tabs_trace = a.tabs_trace or str(ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100")
    runs: dict[Path, list[list[float]]] = {r: [] for r in roots}
    for i in range(a.overview_split):
        for root in roots if i % 2 == 0 else roots[::-1]:
            runs[root].append(_child(SPLIT_CHILD, tabs_trace, root=root))  # type: ignore[arg-type]
    print(f"Overview on {tabs_trace}, charts imported first; {a.overview_split} runs; load {os.getloadavg()[0]:.1f}")
    print("| checkout | findings, CPU median (min) | rest of the Overview, CPU median (min) |")
    print("|---|---|---|")
    for i, root in enumerate(roots):
        f, o = ([r[k] for r in runs[root]] for k in (0, 1))
        print(f"| [{i}] {root} | {_median(f)} s ({min(f):.3f} s) | {_median(o)} s ({min(o):.3f} s) |")


if __name__ == "__main__":
    main()
