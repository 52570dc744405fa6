"""Speed of ``tv.what_if`` with one change on a many-rank trace loaded with the Dask engine.

    python benchmarks/synth.py /tmp/swi --ranks 16 --events 100000
    PYTHONPATH=. python benchmarks/whatif_scale.py /tmp/swi [--workers 2] [--change BalanceStraggler]

Loads the folder with ``engine="dask"`` (a local cluster of ``--workers`` processes, one
thread each; ``cache=False``), then times, in the notebook process:

* the first ``tv.what_if(trace, change)``: the replay graph built (every rank's dependency
  graph and the collectives tying them) plus the replay without a change and with it;
* a second ``tv.what_if(trace, other_change)``: one more change's replay on the built graph
  (what each further question, or each fired finding rule, costs).

Prints wall and CPU time of this process, and its peak RSS. Issue 33's target is <= 30 s
for one change on 64 ranks x 1M events; see benchmarks/README.md for the sizes measured
here and the extrapolation.
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--change", default="BalanceStraggler", help="a tv.changes class without arguments")
    p.add_argument("--then", default="RemoveSyncs", help="the second change (timed on the built graph)")
    a = p.parse_args()
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
        rows = _timed(f"first what_if({a.change}())", lambda: tv.what_if(trace, first))
        _timed(f"then what_if({a.then}())", lambda: tv.what_if(trace, then))
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        print(f"  median saving {rows['saving_ns'].median() / 1e6:.3f} ms/step; peak RSS +{peak:.0f} MB", flush=True)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
