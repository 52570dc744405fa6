"""Speed of ``tv.what_if`` with one change on a many-rank trace loaded with the Dask engine.

    python benchmarks/synth.py /tmp/swi --ranks 16 --events 100000
    PYTHONPATH=. python benchmarks/whatif_scale.py /tmp/swi [--workers 2] [--change BalanceStraggler]
        [--then RemoveSyncs] [--in-process-replay]

Loads the folder with ``engine="dask"`` (a local cluster of ``--workers`` processes, one
thread each; ``cache=False``), then times, in the notebook process:

* the first ``tv.what_if(trace, change)``: the replay graph built (every rank's dependency
  graph and the collectives tying them) plus the replay without a change and with it;
* a second ``tv.what_if(trace, other_change)``: one more change's replay on the built graph
  (what each further question, or each fired finding rule, costs).

Prints wall and CPU time of this process and its peak RSS, the workers' CPU time (all
of them together) and their peak RSS (the largest), and the distributed replay's rounds
per change (``whatif/spread.py``). ``--in-process-replay`` replays as before it: every
rank's graph gathered into this process (the baseline). Issue 33's target is <= 30 s for
one change on 64 ranks x 1M events; see benchmarks/README.md for the sizes measured here
and the extrapolation.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings
from pathlib import Path

import jupyter_traceview as tv


def _timed(label: str, fn):  # type: ignore[no-untyped-def]
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    print(f"  {label}: {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU", flush=True)
    return out


def _worker_stats() -> tuple[float, float]:
    """This (worker) process's CPU seconds so far and its peak RSS in MB."""
    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _workers(client, label: str, before: dict | None = None) -> dict:  # type: ignore[no-untyped-def]
    now = client.run(_worker_stats)
    if before is not None:
        cpu = sum(now[w][0] - before[w][0] for w in now)
        peak = max(v[1] for v in now.values())
        print(f"  workers during {label}: {cpu:.2f} s CPU in all, peak RSS {peak:.0f} MB (largest worker)", flush=True)
    return now


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--change", default="BalanceStraggler", help="a tv.changes class without arguments")
    p.add_argument("--then", default="RemoveSyncs", help="the second change (timed on the built graph)")
    p.add_argument(
        "--in-process-replay",
        action="store_true",
        help="the replay as before the distributed one: every rank's graph gathered in this process (a baseline)",
    )
    a = p.parse_args()
    if a.in_process_replay:
        import jupyter_traceview.analysis.whatif as whatif

        whatif._spread_steps = lambda trace, changes: None  # type: ignore[assignment]
    warnings.simplefilter("ignore", tv.TraceviewWarning)
    import distributed

    cluster = distributed.LocalCluster(
        n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster)
    try:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        trace = _timed("load (dask)", lambda: tv.load(a.folder, engine="dask", client=client, cache=False))
        print(f"{a.folder}: {len(trace.ranks)} ranks, {len(trace):,} events", flush=True)
        first = getattr(tv.changes, a.change)()
        then = getattr(tv.changes, a.then)()
        w0 = _workers(client, "")
        rows = _timed(f"first what_if({a.change}())", lambda: tv.what_if(trace, first))
        w1 = _workers(client, "the first what_if", w0)
        _timed(f"then what_if({a.then}())", lambda: tv.what_if(trace, then))
        _workers(client, "the second what_if", w1)
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        print(f"  median saving {rows['saving_ns'].median() / 1e6:.3f} ms/step; peak RSS +{peak:.0f} MB", flush=True)
        spread = trace._cache.get("whatif_spread")
        if spread is not None:
            print(
                f"  distributed replay: {len(spread.arrival)} collective instances; rounds per change: "
                + ", ".join(
                    f"{' + '.join(type(c).__name__ for c in k) or 'none'} {n}" for k, n in spread.rounds.items()
                ),
                flush=True,
            )
        else:
            print("  in-process replay (the graph gathered here)", flush=True)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
