"""Scale-out benchmark: a many-rank job on dask workers, the notebook process kept small; HTA alongside.

    python benchmarks/synth.py /tmp/r1024 --ranks 1024 --events 100000 --gzip   # once (~2.3 GB)
    bash benchmarks/hta_env.sh                                                 # once: HTA
    python benchmarks/bench_scaleout.py /tmp/r1024 [--runs 1] [--hta] [--hta-mem-gb 18] [--hta-timeout 1800]
    python benchmarks/bench_scaleout.py --ranks 64 --events 100000 --runs 3 --hta  # generates under .data/

Ours (each run a fresh Python process, the "driver" standing for the notebook kernel):
start a ``LocalCluster`` (``--workers`` single-threaded worker processes, default one per
core), ``tv.load(path, engine="dask", client=client, cache=False)``, then
``tv.summary(trace)``, ``tv.utilization_heatmap(trace)`` (both computed per rank on the
workers, only the results coming back) and, with ``--timeline``, the timeline's index
(``TimelineIndex(trace)``: per-rank parts built and kept on the workers) and one overview
window request. Measured per phase: wall time; the driver's resident memory (a sampler
thread reads ``VmRSS`` from ``/proc/self/status`` every 20 ms; ``VmHWM``, the kernel's own
high-water mark, at the end); the workers' memory (the summed RSS of the worker processes,
sampled by the parent every 0.5 s, and the scheduler's per-worker memory metric).

HTA (``--hta``): ``TraceAnalysis(trace_dir=path)`` then
``get_temporal_breakdown(visualize=False)`` in HTA's own environment, under a watchdog
that kills the process tree when its summed PSS passes ``--hta-mem-gb`` or it runs
longer than ``--hta-timeout``; reported: finished or where it stopped, wall time per phase
and peak memory (PSS summed over HTA's process and its parsing pool, sampled every 0.5 s).

Reported: medians over ``--runs`` (one run when ``--runs 1``), as a Markdown table on
stdout and JSON in ``benchmarks/results/scaleout-<ranks>x<events>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".data"
HTA_PYTHON = HERE / ".venv-hta" / "bin" / "python"

OURS = r"""
import json, os, sys, threading, time

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0

peak = [0]
stop = threading.Event()
def sample():
    while not stop.is_set():
        peak[0] = max(peak[0], status("VmRSS"))
        time.sleep(0.02)

def emit(**kw):
    print("@@" + json.dumps(kw), flush=True)

def worker_memory(client):
    import inspect
    kw = {"n_workers": -1} if "n_workers" in inspect.signature(client.scheduler_info).parameters else {}
    info = client.scheduler_info(**kw)
    return sum(w["metrics"]["memory"] for w in info["workers"].values())

def phase(name, fn):
    peak[0] = status("VmRSS")
    t = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t
    emit(phase=name, wall_s=wall, driver_peak_rss=max(peak[0], status("VmRSS")), driver_rss_after=status("VmRSS"))
    return out

def main():
    import warnings
    import distributed
    import jupyter_traceview as tv
    from jupyter_traceview.views.timeline.index import TimelineIndex

    path, workers, timeline = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    threading.Thread(target=sample, daemon=True).start()
    emit(phase="imports", driver_rss_after=status("VmRSS"), package=tv.__file__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = phase("cluster", lambda: distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40))
    client = distributed.Client(cluster)
    emit(pids=[p for p in client.run(os.getpid).values()])
    emit(worker_package=list(set(client.run(lambda: __import__("jupyter_traceview").__file__).values())))
    trace = phase("load", lambda: tv.load(path, engine="dask", client=client, cache=False))
    emit(note=f"{len(trace.ranks)} ranks", workers_reported=worker_memory(client))
    s = phase("summary", lambda: tv.summary(trace))
    emit(note=f"summary {s.shape}", workers_reported=worker_memory(client))
    h = phase("utilization_heatmap", lambda: tv.utilization_heatmap(trace))
    emit(note=f"heatmap {h.shape}", workers_reported=worker_memory(client))
    if timeline:
        ix = phase("timeline_index", lambda: TimelineIndex(trace))
        phase("timeline_overview", lambda: ix.window(0, ix.end_ns, 1800, summaries=list(trace.ranks)))
        # Zoomed-in requests on the ~40 rows of a screen (two ranks expanded): each asks the
        # workers holding those ranks (one task per rank) for the rows' events or bins.
        import numpy as np
        rng = np.random.default_rng(0)
        times = []
        for _ in range(20):
            r0 = int(rng.integers(0, len(trace.ranks) - 1))
            shown = {trace.ranks[r0], trace.ranks[r0 + 1]}
            rows = [r.id for r in ix.rows if r.rank in shown][:40]
            span = ix.end_ns / 10 ** rng.uniform(0, 5)
            lo = int(rng.uniform(0, ix.end_ns - span))
            t = time.perf_counter()
            ix.window(lo, lo + int(span), 1800, rows=rows)
            times.append(time.perf_counter() - t)
        times.sort()
        emit(note="zoomed windows", zoomed_p50_ms=1e3 * times[len(times) // 2], zoomed_p95_ms=1e3 * times[int(len(times) * 0.95) - 1])
        emit(workers_reported=worker_memory(client))
    emit(phase="end", driver_hwm=status("VmHWM"), driver_rss_after=status("VmRSS"), workers_reported=worker_memory(client))
    stop.set()
    os._exit(0)  # not waiting for the cluster's orderly shutdown (the parent kills the workers)


if __name__ == "__main__":
    main()
"""

HTA = r"""
import json, sys, time

def emit(**kw):
    print("@@" + json.dumps(kw), flush=True)

def main():
    path = sys.argv[1]
    emit(phase="imports")
    from hta.trace_analysis import TraceAnalysis
    t = time.perf_counter()
    emit(started="load")
    analyzer = TraceAnalysis(trace_dir=path)
    emit(phase="load", wall_s=time.perf_counter() - t)
    t = time.perf_counter()
    emit(started="temporal_breakdown")
    df = analyzer.get_temporal_breakdown(visualize=False)
    emit(phase="temporal_breakdown", wall_s=time.perf_counter() - t, rows=len(df))
    emit(phase="end")


if __name__ == "__main__":
    main()
"""


def tree(pid: int) -> list[Any]:
    import psutil

    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.Error:
        return []


def memory(procs: list[Any], *, pss: bool) -> int:
    import psutil

    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss if pss else p.memory_info().rss
    return total


def run_once(
    cmd: list[str], *, mem_cap: float | None, timeout: float, pss: bool, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run a probe; collect its ``@@`` records, peak memory of its process tree (and of the worker pids it names)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env)
    records: list[dict[str, Any]] = []
    state: dict[str, Any] = {"peak_tree": 0, "peak_workers": 0, "killed": None, "pids": []}
    t0 = time.perf_counter()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.5):
            procs = tree(proc.pid)
            m = memory(procs, pss=pss)
            state["peak_tree"] = max(state["peak_tree"], m)
            if state["pids"]:
                w = [p for p in procs if p.pid in state["pids"]]
                state["peak_workers"] = max(state["peak_workers"], memory(w, pss=pss))
            elapsed = time.perf_counter() - t0
            why = None
            if mem_cap is not None and m > mem_cap:
                why = f"memory {m / 2**30:.1f} GiB > cap {mem_cap / 2**30:.0f} GiB"
            elif elapsed > timeout:
                why = f"time {elapsed:.0f} s > cap {timeout:.0f} s"
            if why:
                state["killed"] = f"killed after {elapsed:.0f} s: {why}"
                os.killpg(proc.pid, signal.SIGKILL)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("@@"):
            rec = json.loads(line[2:])
            if "pids" in rec:
                state["pids"] = rec["pids"]
            records.append(rec)
            print(f"    {rec}", file=sys.stderr, flush=True)
    proc.wait()
    done.set()
    watcher.join()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftover workers of the probe's cluster
    out: dict[str, Any] = {
        "wall_total_s": time.perf_counter() - t0,
        "records": records,
        "peak_tree_bytes": state["peak_tree"],
        "peak_workers_bytes": state["peak_workers"],
        "returncode": proc.returncode,
    }
    finished = any(r.get("phase") == "end" for r in records)
    out["finished"] = finished
    if not finished:
        started = [r["started"] for r in records if "started" in r]
        phases = [r["phase"] for r in records if "phase" in r]
        out["failed"] = state["killed"] or f"exit code {proc.returncode}"
        out["failed_in"] = started[-1] if started else (phases[-1] if phases else "start")
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase: median wall time, max driver peak; overall: median peaks."""
    out: dict[str, Any] = {"runs": len(runs), "finished": all(r["finished"] for r in runs)}
    phases: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        for rec in r["records"]:
            if "wall_s" in rec:
                phases.setdefault(rec["phase"], []).append(rec)
    out["phases"] = {
        name: {
            "wall_s": statistics.median(x["wall_s"] for x in recs),
            **(
                {"driver_peak_rss": statistics.median(x["driver_peak_rss"] for x in recs)}
                if "driver_peak_rss" in recs[0]
                else {}
            ),
        }
        for name, recs in phases.items()
    }
    ends = [next((x for x in r["records"] if x.get("phase") == "end"), None) for r in runs]
    if all(e is not None and "driver_hwm" in e for e in ends):
        out["driver_hwm"] = statistics.median(e["driver_hwm"] for e in ends if e is not None)
    out["peak_tree"] = statistics.median(r["peak_tree_bytes"] for r in runs)
    out["peak_workers"] = statistics.median(r["peak_workers_bytes"] for r in runs)
    reported = [max((x.get("workers_reported", 0) for x in r["records"]), default=0) for r in runs]
    out["workers_reported_peak"] = statistics.median(reported)
    out["wall_total_s"] = statistics.median(r["wall_total_s"] for r in runs)
    for key in ("zoomed_p50_ms", "zoomed_p95_ms"):
        vals = [x[key] for r in runs for x in r["records"] if key in x]
        if vals:
            out[key] = statistics.median(vals)
    failed = [r for r in runs if not r["finished"]]
    if failed:
        out["failed"] = failed[0]["failed"]
        out["failed_in"] = failed[0]["failed_in"]
    return out


def gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB"


def table(label: str, ours: dict[str, Any], hta: dict[str, Any] | None) -> str:
    lines = [f"### {label}", ""]
    lines.append(f"ours: {ours['runs']} run(s), medians; {'finished' if ours['finished'] else ours.get('failed')}")
    lines.append("")
    lines.append("| phase | ours wall | ours driver peak RSS |")
    lines.append("|---|---:|---:|")
    for name, p in ours["phases"].items():
        rss = gib(p["driver_peak_rss"]) if "driver_peak_rss" in p else ""
        lines.append(f"| {name} | {p['wall_s']:.2f} s | {rss} |")
    lines.append("")
    lines.append(f"* driver VmHWM (whole run): {gib(ours.get('driver_hwm', 0))}")
    lines.append(f"* workers, summed RSS peak (sampled): {gib(ours['peak_workers'])}")
    lines.append(f"* workers, scheduler-reported memory peak: {gib(ours['workers_reported_peak'])}")
    lines.append(f"* whole process tree peak: {gib(ours['peak_tree'])}; total wall {ours['wall_total_s']:.1f} s")
    if "zoomed_p50_ms" in ours:
        lines.append(
            f"* timeline window requests zoomed in on two ranks' rows (20 random zooms): "
            f"p50 {ours['zoomed_p50_ms']:.0f} ms, p95 {ours['zoomed_p95_ms']:.0f} ms"
        )
    if hta is not None:
        lines.append("")
        state = "finished" if hta["finished"] else f"did not finish: {hta['failed']} (in {hta['failed_in']})"
        lines.append(f"HTA: {hta['runs']} run(s), {state}")
        lines.append("")
        lines.append("| phase | HTA wall |")
        lines.append("|---|---:|")
        for name, p in hta["phases"].items():
            lines.append(f"| {name} | {p['wall_s']:.2f} s |")
        lines.append("")
        lines.append(f"* HTA peak memory (PSS summed over its processes): {gib(hta['peak_tree'])}")
        lines.append(f"* HTA total wall: {hta['wall_total_s']:.1f} s")
        o, h = ours["phases"], hta["phases"]
        if hta["finished"] and "load" in o and "load" in h:
            ours_t = o["load"]["wall_s"] + o["summary"]["wall_s"]
            hta_t = h["load"]["wall_s"] + h["temporal_breakdown"]["wall_s"]
            lines.append(
                f"* load + one whole-job analysis: HTA {hta_t:.1f} s vs ours {ours_t:.1f} s "
                f"(summary, a superset of the temporal breakdown): HTA / ours = {hta_t / ours_t:.2f}"
            )
            lines.append(
                f"* peak memory, all processes: HTA {gib(hta['peak_tree'])} vs ours {gib(ours['peak_tree'])}; "
                f"notebook process: ours {gib(ours.get('driver_hwm', 0))}"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", nargs="?", help="trace folder (else synth --ranks x --events under benchmarks/.data)")
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--timeline", action="store_true", help="also build the timeline index on the workers")
    p.add_argument("--timeout", type=float, default=3600, help="seconds, our run")
    p.add_argument("--hta", action="store_true", help="also run HTA on the same folder")
    p.add_argument("--hta-runs", type=int, default=None, help="default: --runs")
    p.add_argument("--hta-python", default=str(HTA_PYTHON))
    p.add_argument("--hta-mem-gb", type=float, default=18)
    p.add_argument("--hta-timeout", type=float, default=1800)
    p.add_argument("--out", default=None)
    a = p.parse_args()

    if a.folder:
        folder = Path(a.folder)
    else:
        folder = DATA / f"synth-{a.ranks}x{a.events}-gz"
        if not folder.exists():
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "synth.py"),
                    str(folder),
                    "--ranks",
                    str(a.ranks),
                    "--events",
                    str(a.events),
                    "--gzip",
                ],
                check=True,
            )
    if not folder.is_dir():
        sys.exit(f"{folder} is not a folder of traces")
    n_files = sum(1 for f in folder.iterdir() if f.is_file())
    size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    label = f"{folder.name}: {n_files} files, {size / 1e9:.2f} GB on disk, {a.workers} dask workers"
    print(label, file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe_ours.py"
        probe.write_text(OURS)
        ours_runs = []
        # This checkout's jupyter_traceview, in the probe and in the dask workers it starts.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        for i in range(a.runs):
            print(f"ours, run {i + 1}/{a.runs}", file=sys.stderr)
            cmd = [sys.executable, str(probe), str(folder), str(a.workers), "1" if a.timeline else "0"]
            ours_runs.append(run_once(cmd, mem_cap=None, timeout=a.timeout, pss=False, env=env))
        ours = summarise(ours_runs)
        hta = None
        if a.hta:
            if not Path(a.hta_python).exists():
                sys.exit("HTA is not installed: run `bash benchmarks/hta_env.sh` first (or pass --hta-python)")
            probe = Path(tmp) / "probe_hta.py"
            probe.write_text(HTA)
            hta_runs = []
            for i in range(a.hta_runs or a.runs):
                print(f"HTA, run {i + 1}", file=sys.stderr)
                cmd = [a.hta_python, str(probe), str(folder)]
                r = run_once(cmd, mem_cap=a.hta_mem_gb * 2**30, timeout=a.hta_timeout, pss=True)
                hta_runs.append(r)
                if not r["finished"]:
                    break  # a run that hit a cap would hit it again
            hta = summarise(hta_runs)
    text = table(label, ours, hta)
    print(text)
    out = Path(a.out) if a.out else HERE / "results" / f"scaleout-{folder.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"label": label, "ours": ours, "hta": hta, "ours_runs": ours_runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
