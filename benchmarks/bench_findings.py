"""CPU time of ``findings`` and ``user_annotation_breakdown`` after a cached load (median of ``--runs``).

    python benchmarks/synth.py benchmarks/.data/synth_8x100000 --ranks 8 --events 100000
    python benchmarks/bench_findings.py benchmarks/.data/synth_8x100000 [--runs 3]
    flock /work/big.lock python benchmarks/bench_findings.py benchmarks/.data/synth_64x1000000 --runs 1 --per-rule
    python benchmarks/bench_findings.py benchmarks/.data/synth_64x1000000 --ranks 4 --only-per-rule

Process CPU time rather than wall time: on a shared machine the wall clock measures the
neighbours (the wall time is printed too, with the load average). The first ``tv.load``
fills the Arrow cache; the timed calls run on the second, in this process.

The first call of an analysis on a freshly loaded trace also pays for what is computed once
per rank table and shared by every later call and analysis (``trace.iterations``), so the
table gives the first call and the median of the later ones separately.

``--per-rule`` also times the findings rules one by one, in the order ``findings`` runs
them, on a fresh findings context after the timed calls' memos were dropped by reloading
(each rule's time includes the analyses it is the first to ask for: the context computes
each once). Prints Markdown tables.

Inside ``findings`` the per-rank results of the analyses are kept with the ranks' cache
entries (``analysis/_memo.per_rank``) and read back by a later process: the first run after
a change to the analysis code (or on a fresh cache) computes and writes them, later runs
read them. Run twice to see both. On a big trace the first run shares that work with a
worker process (``analysis/_workers.py``): the per-rule table then gives this process's
CPU time per rule, the workers' CPU time in one row, and the sum; the wall column is the
one to read for what both cores did together. ``--workers on/off`` compares the two ways.

``--cold-load`` measures a user's first session: the load reads the files into a new cache
folder (removed at the end), timed, and the findings call follows in the same process.
A big load prepares the per-rank results there (``tv.load(..., prepare=)``,
``loading/prepare.py``); ``--prepare off`` compares with a load that does not:

    flock /work/big.lock python benchmarks/bench_findings.py /work/bench-data/synth_64x1000000 --only-per-rule --cold-load --cache-root /work --prepare auto|off
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jupyter_traceview as tv

CALLS: dict[str, Callable[[tv.Trace], object]] = {
    'user_annotation_breakdown(kind="cpu")': lambda t: tv.user_annotation_breakdown(t, kind="cpu"),
    "findings": tv.findings,
}


#: Load only the first N ranks (``--ranks``; None: all).
RANKS: int | None = None
#: The cache folder (``--cold-load``: a new one; None: the user's).
CACHE: str | None = None
#: ``tv.load``'s ``prepare=`` (``--prepare``).
PREPARE: bool | None = None


def _load(path: Path) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a DONE marker file next to the traces
        return tv.load(
            path,
            progress=False,
            ranks=None if RANKS is None else range(RANKS),
            cache=True if CACHE is None else CACHE,
            prepare=PREPARE,
        )


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    c, w = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()
    return time.process_time() - c, time.perf_counter() - w


def _fmt(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def per_rule(path: Path) -> None:
    from jupyter_traceview.analysis._memo import save_facts
    from jupyter_traceview.analysis.findings.config import FindingRules
    from jupyter_traceview.analysis.findings.context import Context
    from jupyter_traceview.analysis.findings.registry import all_rules

    holder_t: list[tv.Trace] = []
    children = _children_cpu()
    cpu, wall = _timed(lambda: holder_t.append(_load(path)))
    trace = holder_t[0]  # a fresh trace: nothing memoised on its tables yet
    if CACHE is not None:
        workers = _children_cpu() - children  # the load's pool, ended with the load
        print(
            f"\nCold load (a new cache folder, prepare={PREPARE}): {_fmt(wall)} wall, {_fmt(cpu)} CPU in this process, "
            f"{_fmt(workers)} in its worker processes"
        )
    rules = FindingRules()
    holder: list[Context] = []
    cpu, wall = _timed(lambda: holder.append(Context(trace, rules, ranks=None, iterations=None, time_range=None)))
    ctx = holder[0]
    print(f"\nPer rule, {path.name} (first findings call on a freshly loaded trace; load average {_load_avg()}):\n")
    print("| step | CPU | wall | findings |")
    print("|---|---|---|---|")
    print(f"| context (per-rank GPU facts) | {_fmt(cpu)} | {_fmt(wall)} | |")
    total_c, total_w = cpu, wall
    for r in all_rules():
        out: list[object] = []
        cpu, wall = _timed(lambda r=r, out=out: out.extend(r.run(ctx, rules.of(r.id))))
        total_c, total_w = total_c + cpu, total_w + wall
        print(f"| `{r.id}` | {_fmt(cpu)} | {_fmt(wall)} | {len(out)} |")
    # What findings does at its end: write the per-rank results computed here to the cache
    # entries (nothing when they were all read from there).
    cpu, wall = _timed(save_facts)
    total_c, total_w = total_c + cpu, total_w + wall
    print(f"| keeping the per-rank facts | {_fmt(cpu)} | {_fmt(wall)} | |")
    # The worker processes that computed a share of the per-rank results (if any started:
    # a big trace whose results were not kept yet): their CPU time, once they have ended.
    before = _children_cpu()
    cpu, wall = _timed(ctx.close)
    workers = _children_cpu() - before
    total_w += wall
    print(f"| total, this process | {_fmt(total_c)} | {_fmt(total_w)} | |")
    print(f"| worker processes (CPU while the rules ran) | {_fmt(workers)} | | |")
    print(f"| **total CPU, all processes** | **{_fmt(total_c + workers)}** | | |")
    if PER_FUNCTION:
        n = len(trace.ranks)
        print(f"\nPer-rank functions in this process ({n} ranks; nested calls counted in their callers too):\n")
        print("| function | CPU | per rank |")
        print("|---|---|---|")
        for name, t in sorted(PER_FUNCTION.items(), key=lambda kv: -kv[1]):
            if t >= 0.0005 * n:
                print(f"| `{name}` | {_fmt(t)} | {t / n * 1e3:.1f} ms |")


#: CPU time per per-rank function (``--per-function``), filled while the rules run.
PER_FUNCTION: dict[str, float] = {}


def _time_per_function() -> None:
    """Time every function ``Trace.map_ranks`` runs (the per-rank work), into PER_FUNCTION."""
    from jupyter_traceview.model.trace import Trace

    original = Trace.map_ranks

    def timed_map(self: Trace, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> dict[int, Any]:
        def timed(one: Trace, *a: Any, **k: Any) -> Any:
            c = time.process_time()
            try:
                return fn(one, *a, **k)
            finally:
                PER_FUNCTION[fn.__qualname__] = PER_FUNCTION.get(fn.__qualname__, 0.0) + time.process_time() - c

        return original(self, timed, *args, **kwargs)

    Trace.map_ranks = timed_map  # type: ignore[method-assign]


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _load_avg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--runs", type=int, default=3, help="later calls timed after the first (median)")
    p.add_argument("--per-rule", action="store_true", help="also time the findings rules one by one")
    p.add_argument("--only-per-rule", action="store_true", help="only the per-rule table (one findings run)")
    p.add_argument("--ranks", type=int, help="load only the first N ranks (e.g. 4 of the 64 x 1M set)")
    p.add_argument(
        "--first-call",
        action="store_true",
        help="time a first call whatever was kept: the per-rank results are keyed by a code key of this run only "
        "(what it keeps is outdated for the next run, which computes again)",
    )
    p.add_argument(
        "--workers",
        choices=("auto", "on", "off"),
        default="auto",
        help="the first call's worker processes: as findings decides (auto), used however busy the machine is (on), "
        "none: all the per-rank work in this process (off)",
    )
    p.add_argument(
        "--take-over",
        choices=("on", "off"),
        default="on",
        help="with workers: this process takes over the big ranks a worker has not started once its own share is "
        "done (on, as findings does), or waits for the workers' whole share at every per-rank call (off)",
    )
    p.add_argument(
        "--per-function",
        action="store_true",
        help="with the per-rule table: the CPU time of each per-rank function in this process (with --workers off: all)",
    )
    p.add_argument(
        "--cold-load",
        action="store_true",
        help="with the per-rule table: load into a new cache folder (under --cache-root) first, timed, as a user's "
        "first load; the findings call then follows in the same process",
    )
    p.add_argument("--cache-root", type=Path, default=None, help="where --cold-load makes its cache folder")
    p.add_argument(
        "--prepare", choices=("auto", "on", "off"), default="auto", help="tv.load's prepare=: None (auto), True, False"
    )
    args = p.parse_args()
    global RANKS, CACHE, PREPARE
    RANKS = args.ranks
    PREPARE = {"auto": None, "on": True, "off": False}[args.prepare]
    if args.cold_load:
        import tempfile

        CACHE = tempfile.mkdtemp(prefix="bench-findings-cache-", dir=args.cache_root)
    if args.per_function:
        _time_per_function()
    if args.first_call:
        from jupyter_traceview.analysis import _memo

        key = f"bench_findings {os.getpid()} {time.time()}"
        _memo.code_key = lambda: key  # type: ignore[assignment]
    if args.take_over == "off":
        from jupyter_traceview.analysis import _workers

        _workers.STEAL_MIN_EVENTS = 2**62
    if args.workers != "auto":
        from jupyter_traceview.analysis import _workers

        if args.workers == "off":
            _workers.MIN_EVENTS = 2**62
        else:
            _workers.idle_cores = lambda: 1  # type: ignore[assignment]
    if not args.only_per_rule:
        calls(args.paths, args.runs)
    try:
        if args.per_rule or args.only_per_rule:
            for path in args.paths:
                per_rule(path)
    finally:
        if CACHE is not None:
            import shutil

            shutil.rmtree(CACHE, ignore_errors=True)


def calls(paths: list[Path], runs: int) -> None:
    print("| trace | call | first call: CPU | wall | later calls (median): CPU | wall |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        _load(path)  # fill the cache
        for name, fn in CALLS.items():
            trace = _load(path)  # a fresh trace per call: each first call pays for its own memos
            first = _timed(lambda fn=fn, trace=trace: fn(trace))
            later = [_timed(lambda fn=fn, trace=trace: fn(trace)) for _ in range(runs)]
            c = statistics.median(x[0] for x in later) if later else float("nan")
            w = statistics.median(x[1] for x in later) if later else float("nan")
            print(
                f"| {path.name} | `{name}` | {_fmt(first[0])} | {_fmt(first[1])} | {_fmt(c)} | {_fmt(w)} |", flush=True
            )
    print(f"\nload average after: {_load_avg()}")


if __name__ == "__main__":
    main()
