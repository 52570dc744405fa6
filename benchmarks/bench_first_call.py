"""Time each public analysis' first call, and each dashboard tab's first build.

    python benchmarks/bench_first_call.py [--trace PATH] [--runs 3] [--tabs-trace PATH]

Analyses: every name of the analysis groups of ``docs/api_groups.py`` (breakdowns,
communication, host, memory, perfmodel, diagnosis, comparison) that is a function of a
trace, called with its defaults (``compare``/``trace_diff`` compare the trace with itself).
Each run is a fresh process that loads the trace (``cache=False``) and then calls every
analysis once, in a fixed order, timing each call; a name that raises prints the error's
class instead of a time. Each time is the median of ``--runs`` runs. So that no analysis
takes credit for work an earlier one already did, ``--isolated`` gives each analysis its
own process (slower; the strict first call).

The default trace is a ~200k-event CPU inference trace with Python stacks
(``scripts/record_stack_trace.py``), recorded on demand into ``benchmarks/.data/``.
Tabs: ``DashboardData(trace).tab(id)`` for every tab, in a fresh process per run, on the
bundled sample (``tv.sample_path()``) unless ``--tabs-trace`` says otherwise.
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
DEFAULT_TRACE = DATA / "stack_200k.pt.trace.json.gz"
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
out = {"load_s": time.perf_counter() - w, "calls": {}}
for name in names:
    fn = getattr(tv, name)
    w = time.perf_counter()
    try:
        fn(trace, trace) if name in pairwise else fn(trace, **kwargs.get(name, {}))
        out["calls"][name] = time.perf_counter() - w
    except Exception as e:
        out["calls"][name] = type(e).__name__
print(json.dumps(out))
"""

TAB_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData
trace = tv.load(sys.argv[1], cache=False, progress=False)
out = {}
for tab_id, _ in DashboardData(trace).tabs:
    data = DashboardData(trace)
    data.payload()
    w = time.perf_counter()
    data.tab(tab_id)
    out[tab_id] = time.perf_counter() - w
print(json.dumps(out))
"""


def analysis_names() -> list[str]:
    sys.path.insert(0, str(ROOT / "docs"))
    from api_groups import GROUPS  # type: ignore[import-not-found]

    return [n for g in GROUPS if g.slug in ANALYSIS_GROUPS for n in g.names if n not in NOT_ANALYSES]


def _child(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _median(values: list) -> str:
    nums = [v for v in values if isinstance(v, float)]
    if not nums:
        return str(values[0])
    return f"{statistics.median(nums):.3f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    p.add_argument("--tabs-trace", default="")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--isolated", action="store_true", help="one process per analysis")
    p.add_argument("--only", nargs="*", default=None, help="these analyses only")
    p.add_argument("--no-tabs", action="store_true")
    a = p.parse_args()
    if a.trace == DEFAULT_TRACE and not DEFAULT_TRACE.exists():
        sys.path.insert(0, str(ROOT / "scripts"))
        from record_stack_trace import record  # type: ignore[import-not-found]

        print(f"recording {DEFAULT_TRACE} (about a minute) ...", flush=True)
        record(DEFAULT_TRACE, events=200_000)
    names = a.only or analysis_names()
    runs: list[dict] = []
    for _ in range(a.runs):
        if a.isolated:
            merged: dict = {"calls": {}}
            for n in names:
                out = _child(CHILD, str(a.trace), json.dumps([n]), json.dumps(sorted(PAIRWISE)), json.dumps(KWARGS))
                merged["load_s"] = out["load_s"]
                merged["calls"].update(out["calls"])
            runs.append(merged)
        else:
            runs.append(
                _child(CHILD, str(a.trace), json.dumps(names), json.dumps(sorted(PAIRWISE)), json.dumps(KWARGS))
            )
    print(
        f"trace: {a.trace} ({a.trace.stat().st_size / 1e6:.1f} MB); load (cache=False) "
        f"{_median([r['load_s'] for r in runs])} s; median of {a.runs} run(s); "
        f"{'one process per analysis' if a.isolated else 'one process, calls in this order'}"
    )
    print("| analysis | first call (s) |")
    print("|---|---|")
    for n in names:
        print(f"| {n} | {_median([r['calls'][n] for r in runs])} |")
    if a.no_tabs:
        return
    tabs_trace = (
        a.tabs_trace
        or _child("import jupyter_traceview as tv; import json; print(json.dumps({'p': str(tv.sample_path())}))")["p"]
    )
    tab_runs = [_child(TAB_CHILD, tabs_trace) for _ in range(a.runs)]
    print(f"\ndashboard tabs on {tabs_trace}: first build, median of {a.runs} fresh process(es)")
    print("| tab | first build (s) |")
    print("|---|---|")
    for t in tab_runs[0]:
        print(f"| {t} | {_median([r[t] for r in tab_runs])} |")


if __name__ == "__main__":
    main()
