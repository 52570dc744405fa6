"""Snapshot the outputs of findings and the analyses it reads, to check a change leaves them identical.

    python scripts/findings_snapshot.py save /tmp/before.pkl benchmarks/.data/synth_8x100000
    (change the code)
    python scripts/findings_snapshot.py save /tmp/after.pkl benchmarks/.data/synth_8x100000
    python scripts/findings_snapshot.py compare /tmp/before.pkl /tmp/after.pkl

On the bundled sample, every trace folder and file in ``tests/data`` and the extra paths
given, each in four scopes (all ranks, the middle half of the time, the iterations after the
first, the ranks after the first): every findings rule's output on a fresh context, the
context's per-rank facts, ``findings()``, ``host_facts``, 21 analyses (summary, efficiency,
iteration_stats, kernel_overlap_stats, stragglers, kernel_launch_stats, nccl_summary,
matrix_shapes, concurrency, temporal, overlap, idle, kernel and queue breakdowns) and 16
``user_annotation_breakdown`` variants. ``compare`` requires exactly equal frames (dtypes
included) and equal reprs otherwise. Run both with the same data paths (the keys hold them).
"""

from __future__ import annotations

import argparse
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import jupyter_traceview as tv

ANALYSES: dict[str, Callable[..., Any]] = {
    "summary": lambda t, kw: tv.summary(t, **kw),
    "eff_job": lambda t, kw: tv.efficiency(t, **kw),
    "eff_rank": lambda t, kw: tv.efficiency(t, per="rank", **kw),
    "eff_it": lambda t, kw: tv.efficiency(t, per="iteration", **kw),
    "its_step": lambda t, kw: tv.iteration_stats(t, per="step", **kw),
    "its_sr": lambda t, kw: tv.iteration_stats(t, **kw),
    "kos_rank": lambda t, kw: tv.kernel_overlap_stats(t, per="rank", **kw),
    "kos_job": lambda t, kw: tv.kernel_overlap_stats(t, **kw),
    "str_rank": lambda t, kw: tv.stragglers(t, by="rank", **kw),
    "str_arr": lambda t, kw: tv.stragglers(t, by="arrival", **kw),
    "str_coll": lambda t, kw: tv.stragglers(t, by="collective", **kw),
    "kls_rank": lambda t, kw: tv.kernel_launch_stats(t, per="rank", short_kernel_ns=10_000, **kw),
    "kls": lambda t, kw: tv.kernel_launch_stats(t, **kw),
    "nccl": lambda t, kw: tv.nccl_summary(t, **kw),
    "matrix": lambda t, kw: _matrix_shapes(t, kw),
    "concurrency": lambda t, kw: tv.concurrency(t, **kw),
    "temporal": lambda t, kw: tv.temporal_breakdown(t, **kw),
    "overlap": lambda t, kw: tv.comm_comp_overlap(t, **kw),
    "idle": lambda t, kw: tv.idle_time_breakdown(t, **kw),
    "kbd": lambda t, kw: tv.kernel_breakdown(t, **kw),
    "queue": lambda t, kw: tv.queue_length(t, **kw),
}


def _matrix_shapes(trace: tv.Trace, kw: dict[str, Any]) -> pd.DataFrame:
    from jupyter_traceview.analysis.perfmodel.matrix import matrix_shapes

    narrowed = {k: v for k, v in kw.items() if k != "time_range"}
    return matrix_shapes(trace.select(**narrowed) if narrowed else trace, time_range=kw.get("time_range"))


def _paths(extra: list[str]) -> list[str]:
    data = Path("tests/data")
    out = [str(tv.sample_path())]
    skip = ("nsys_sqlite", "torch_cpu", "cpu_memory", "perfmodel_cpu")
    out += [str(p) for p in sorted(data.iterdir()) if p.is_dir() and p.name not in skip]
    for sub in ("torch_cpu", "cpu_memory"):
        out += [str(p) for p in sorted((data / sub).iterdir()) if p.is_dir()]
    out += [str(p) for p in sorted((data / "perfmodel_cpu").glob("*.json.gz"))]
    return out + extra


def _scopes(trace: tv.Trace) -> dict[str, dict[str, Any]]:
    steps = sorted(set(trace.iterations["step"].tolist())) if len(trace.iterations) else []
    lo = trace.t0_ns
    hi = max(int((e["ts_ns"] + e["dur_ns"]).max()) for e in (trace.rank_data(r).events for r in trace.ranks))
    scopes: dict[str, dict[str, Any]] = {
        "all": {},
        "win": {"time_range": (lo + (hi - lo) // 4, lo + 3 * (hi - lo) // 4)},
    }
    if len(steps) >= 2:
        scopes["it"] = {"iterations": steps[1:]}
    if len(trace.ranks) >= 2:
        scopes["r"] = {"ranks": list(trace.ranks)[1:]}
    return scopes


def _attempt(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - an error is an output too: it must stay the same
        return repr(exc)


def save(out_path: Path, extra: list[str]) -> None:
    from jupyter_traceview.analysis.findings.config import FindingRules
    from jupyter_traceview.analysis.findings.context import Context
    from jupyter_traceview.analysis.findings.registry import all_rules
    from jupyter_traceview.analysis.host_findings import host_facts

    warnings.simplefilter("ignore")
    out: dict[tuple[str, ...], Any] = {}
    for p in _paths(extra):
        try:
            trace = tv.load(p, progress=False)
        except tv.TraceviewError as exc:
            print("skip", p, exc)
            continue
        for sname, kw in _scopes(trace).items():
            rules = FindingRules()
            ctx = Context(
                trace, rules, ranks=kw.get("ranks"), iterations=kw.get("iterations"), time_range=kw.get("time_range")
            )
            out[(p, sname, "facts")] = ctx.facts
            for r in all_rules():
                out[(p, sname, "rule", r.id)] = r.run(ctx, rules.of(r.id))
            out[(p, sname, "findings")] = tv.findings(trace, **kw)
            narrowed = {k: v for k, v in kw.items() if k != "time_range"}
            scoped = trace.select(**narrowed) if narrowed else trace
            out[(p, sname, "host_facts")] = host_facts(scoped, time_range=kw.get("time_range"))
            for name, fn in ANALYSES.items():
                out[(p, sname, name)] = _attempt(lambda fn=fn, kw=kw, trace=trace: fn(trace, kw))
            for kind in ("cpu", "gpu"):
                for opt in ({}, {"top_k": 2}, {"same_thread": True}, {"pattern": "Step|forward|back"}):
                    out[(p, sname, "uab", kind, str(opt))] = _attempt(
                        lambda kind=kind, opt=opt, kw=kw, trace=trace: tv.user_annotation_breakdown(
                            trace, kind=kind, **opt, **kw
                        )
                    )
        print("done", p, len(out), flush=True)
    out_path.write_bytes(pickle.dumps(out))


def compare(a_path: Path, b_path: Path) -> int:
    a = pickle.loads(a_path.read_bytes())
    b = pickle.loads(b_path.read_bytes())
    if a.keys() != b.keys():
        print("keys differ:", sorted(a.keys() ^ b.keys(), key=str)[:10])
        return 1
    bad = 0
    for k in a:
        x, y = a[k], b[k]
        try:
            if isinstance(x, pd.DataFrame):
                pd.testing.assert_frame_equal(x, y, check_exact=True)
            else:
                assert repr(x) == repr(y)
        except AssertionError as exc:
            bad += 1
            print("DIFF", k, str(exc)[:300])
    print("compared", len(a), "outputs,", bad, "different")
    return 1 if bad else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save")
    s.add_argument("out", type=Path)
    s.add_argument("paths", nargs="*")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    if args.command == "save":
        save(args.out, args.paths)
    else:
        raise SystemExit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
