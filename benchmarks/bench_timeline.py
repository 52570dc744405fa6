"""Timeline window requests on synthetic traces: how long the kernel takes to answer one.

    python benchmarks/bench_timeline.py --ranks 64 --events 1000000 [--requests 300] [--width 1200]

Generates (once, under benchmarks/.data/) a synthetic trace with ``benchmarks/synth.py``
(``--events`` is per rank, as synth counts it: flow events included, so about two thirds
become table events), loads it, builds the timeline index, then times the ``_window``
command of ``tv.Timeline`` (query and binary encoding, what the kernel does per request)
for the requests the front end makes:

* ``overview``: the whole trace, every rank collapsed to its summary row (how a trace with
  more than 16 ranks opens);
* ``visible``: a random zoom level (the whole trace down to 1/100,000 of it) at a random
  place, on the rows a 900 px tall view shows (about 40) starting at a random rank;
* ``all_gpu_rows``: the whole trace on every GPU stream row of every rank at once (far
  more than a screen shows: a worst case).

Widths are the front end's: the plot width times 1.5 (it fetches a margin on each side).
Prints percentiles and writes them to benchmarks/results/timeline.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import synth  # noqa: E402

import jupyter_traceview as tv  # noqa: E402
from jupyter_traceview.views.timeline.index import TimelineIndex  # noqa: E402

#: Rows a 900 px tall view shows (rank headers, 18 px GPU rows, 15 px CPU rows).
VISIBLE_ROWS = 40


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {
        "n": len(a),
        "p50_ms": float(np.percentile(a, 50)),
        "p95_ms": float(np.percentile(a, 95)),
        "max_ms": float(a.max()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--events", type=int, default=1_000_000, help="per rank, as synth.py counts them")
    p.add_argument("--requests", type=int, default=300, help="random 'visible' requests")
    p.add_argument("--width", type=int, default=1200, help="plot width in px")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / ".data")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "timeline.json")
    a = p.parse_args()

    folder = a.data / f"timeline-{a.ranks}x{a.events}"
    if not (folder / f"rank-{a.ranks - 1}.pt.trace.json.gz").exists():
        t = time.perf_counter()
        synth.generate(folder, a.ranks, a.events, seed=a.seed, gz=True)
        print(f"generated {folder} in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    trace = tv.load(folder)
    load_s = time.perf_counter() - t
    n_events = len(trace)
    print(f"loaded {a.ranks} ranks, {n_events:,} events in {load_s:.1f} s (peak RSS {rss_gb():.1f} GB)")

    from jupyter_traceview.widgets.timeline import Timeline

    t = time.perf_counter()
    index = TimelineIndex.of(trace)
    build_s = time.perf_counter() - t
    print(
        f"index: {len(index.rows)} rows, {len(index.start):,} events, built in {build_s:.1f} s (peak RSS {rss_gb():.1f} GB)"
    )
    t = time.perf_counter()
    tl = Timeline(trace)
    widget_s = time.perf_counter() - t

    width = round(a.width * 1.5)
    end = index.end_ns
    rng = np.random.default_rng(a.seed)
    order = [r.id for r in index.rows]
    gpu_rows = [r.id for r in index.rows if r.type == "gpu"]

    def ask(lo: float, hi: float, rows: list[int], summaries: list[int]) -> tuple[float, dict]:
        msg = {"seq": 0, "lo": lo, "hi": hi, "width": width, "rows": rows, "summaries": summaries, "pattern": ""}
        gc.disable()
        t0 = time.perf_counter()
        meta, buffers = tl._window(msg, [])
        ms = (time.perf_counter() - t0) * 1e3
        gc.enable()
        if "error" in meta:
            raise RuntimeError(meta["error"])
        meta["bytes"] = sum(len(b) for b in buffers)
        return ms, meta

    ask(0, end, order[:VISIBLE_ROWS], [])  # warm-up
    results: dict[str, object] = {
        "ranks": a.ranks,
        "events": n_events,
        "events_per_rank": n_events / a.ranks,
        "rows": len(index.rows),
        "plot_width_px": a.width,
        "request_width": width,
        "load_s": load_s,
        "index_build_s": build_s,
        "widget_init_s": widget_s,
        "peak_rss_gb": rss_gb(),
        "cpu_count": os.cpu_count(),
    }

    ms = []
    for _ in range(30):
        m, meta = ask(0, end, [], list(trace.ranks))
        ms.append(m)
    results["overview"] = {**percentiles(ms), "bytes": meta["bytes"]}

    ms, raw, binned, sizes = [], [], [], []
    for _ in range(a.requests):
        span = end / 10 ** rng.uniform(0, 5)
        lo = rng.uniform(0, max(end - span, 1))
        first = int(rng.integers(0, max(len(order) - VISIBLE_ROWS, 1)))
        m, meta = ask(lo, lo + span, order[first : first + VISIBLE_ROWS], [])
        ms.append(m)
        raw.append(sum(r["count"] for r in meta["rows"] if r["mode"] == "raw"))
        binned.append(sum(1 for r in meta["rows"] if r["mode"] == "bins"))
        sizes.append(meta["bytes"])
    results["visible"] = {
        **percentiles(ms),
        "rows": VISIBLE_ROWS,
        "raw_events_mean": float(np.mean(raw)),
        "raw_events_max": int(np.max(raw)),
        "binned_rows_mean": float(np.mean(binned)),
        "bytes_mean": float(np.mean(sizes)),
    }

    ms = []
    for _ in range(10):
        m, meta = ask(0, end, gpu_rows, [])
        ms.append(m)
    results["all_gpu_rows"] = {**percentiles(ms), "rows": len(gpu_rows), "bytes": meta["bytes"]}

    for name in ("overview", "visible", "all_gpu_rows"):
        r = results[name]
        assert isinstance(r, dict)
        print(
            f"{name:>13}: p50 {r['p50_ms']:6.1f} ms  p95 {r['p95_ms']:6.1f} ms  max {r['max_ms']:6.1f} ms  ({r['n']} requests)"
        )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
