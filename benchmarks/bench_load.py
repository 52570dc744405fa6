"""Load benchmark: jupyter_traceview against HTA, side by side, on the same folders.

    bash benchmarks/hta_env.sh                     # once: HTA in benchmarks/.venv-hta
    python benchmarks/bench_load.py [--runs 3] [--sets dlrm synth:8:100000 ...] [--hta-timeout 900]

For every data set and tool, each run is a fresh Python process (nothing warm but the OS
page cache, the same for both tools). Measured: wall time of the load call; peak RSS of
the main process above its baseline (its RSS high-water mark right before the call,
after imports), and the peak of the summed RSS of the main process and all its
descendants (both tools parse ranks in worker processes), sampled every 20 ms, above the
same sum before the call. The sum uses PSS (proportional set size), so that pages shared
by forked workers count once. The sampler waits at least five times as long as a sample
took, so it never takes more than a sixth of a core (reading the PSS of a multi-GB process
is not free); its own CPU is reported apart. CPU time of the load: this process (its clock,
not psutil's 10 ms ticks), its workers and its forkserver (ticks, read before and after the
window: listing a process's children reads all of /proc), the sampler's CPU taken out. ``--no-memory`` times the
loads without the sampler (a thread of this process: beside a load of a tenth of a
second, the bundled sample's, it adds ~50 ms), for both tools alike. Reported: medians over the runs, the HTA/ours ratio, and our throughput in MB
of uncompressed JSON per second and per core used.

Tools:
* ``ours-cold``: ``tv.load(path, cache=False)``
* ``ours-cached``: ``tv.load(path, cache=DIR)`` with the cache filled beforehand
* ``hta``: ``TraceAnalysis(trace_dir=path)`` (HTA parses every rank file at construction)

Data sets: ``dlrm`` (the bundled 8-rank DLRM sample); real traces with rich ``args``:
``bert`` (H100 bert-small inference with shapes and memory), ``mi250`` (AMD MI250, ROCm),
``dlrm128`` (2 of 128 DLRM ranks), read from ``../shared/traces`` (or
``$TRACEVIEW_SHARED_TRACES``), and ``stack`` (a ~200k-event CPU inference loop recorded with
``record_shapes=True, with_stack=True`` by ``scripts/record_stack_trace.py``, on demand into
``benchmarks/.data/``); and ``synth:RANKS:EVENTS`` (written
once by ``benchmarks/synth.py`` into ``benchmarks/.data/``, EVENTS per rank; ``synth:1:190000``
is one 55 MB file, which ``engine="auto"`` reads in byte ranges by a pool).
Results go to ``benchmarks/results/load.json`` and a Markdown table on stdout.

``--roots A B`` runs our tools from each checkout (``PYTHONPATH``; built with
``python hatch_build.py``), run by run in turn (A, B, A, B, ...), so that a before/after
comparison shares the machine's minutes; rows are labelled ``ours-cold[0]``, ``ours-cold[1]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".data"
HTA_PYTHON = HERE / ".venv-hta" / "bin" / "python"

PROBE = r"""
import json, os, resource, sys, threading, time
import psutil
path, tool, cache, engine, memory = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"

def tree_rss():
    # This process and every descendant (worker pools, forkservers), summed at one instant.
    # PSS, not RSS: pages shared between forked processes count once, split between them.
    me = psutil.Process()
    total = me.memory_full_info().pss
    for child in me.children(recursive=True):
        try:
            total += child.memory_full_info().pss
        except psutil.Error:
            pass
    return total

def children_cpu():
    # CPU seconds of this process's reaped children (a fork pool's workers) and of its live
    # children with what they reaped (a forkserver and the workers it forked), from psutil's
    # ticks (only pools have children). Read outside the load's window: listing the children
    # reads every process of /proc (~3 ms of CPU on a busy machine, as much as a small
    # file's whole load, which the first version counted into the load).
    me = psutil.Process()
    t = me.cpu_times()
    total = t.children_user + t.children_system
    for child in me.children():
        try:
            c = child.cpu_times()
            total += c.user + c.system + c.children_user + c.children_system
        except psutil.Error:
            pass
    return total

peak_tree = [0]
sampler_cpu = [0.0]
stop = threading.Event()
def sample():
    # Every 20 ms, or less often where a sample is slow (reading the PSS of multi-GB processes
    # walks their page tables): the sampler never takes more than ~1/6 of a core from the load.
    # The first sample 20 ms in (the baseline was sampled right before the call): one at once
    # would contend with the first milliseconds of the load for the GIL (a 5 ms load took
    # ~3 ms more CPU beside it), and see nothing the baseline did not.
    while not stop.wait(0.02):
        c = time.thread_time()
        peak_tree[0] = max(peak_tree[0], tree_rss())
        took = time.thread_time() - c
        sampler_cpu[0] += took
        if stop.wait(max(0.0, 5 * took - 0.02)):
            break
if tool == "hta":
    import contextlib, io
    from hta.trace_analysis import TraceAnalysis
else:
    import jupyter_traceview as tv
    # `import jupyter_traceview` is lazy: import what tv.load uses (pandas, pyarrow, the
    # readers) before the clock starts, as HTA's import above does for HTA.
    import jupyter_traceview.loading.loader, jupyter_traceview.loading.readers.kineto
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base_tree = tree_rss()
kids0 = children_cpu()
cpu0 = time.process_time()  # this process's own CPU from its clock (nanoseconds), right at the call
sampler = threading.Thread(target=sample, daemon=True)
if memory:
    sampler.start()
t = time.perf_counter()
if tool == "hta":
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        ta = TraceAnalysis(trace_dir=path)
    n_ranks = len(ta.t.traces)
else:
    trace = tv.load(path, cache=(cache if tool == "ours-cached" else False), progress=False, engine=engine)
    n_ranks = len(trace.ranks)
elapsed = time.perf_counter() - t
stop.set()
if memory:
    sampler.join()  # (its every sample lies between cpu0 and cpu1: its CPU is taken out exactly)
cpu1 = time.process_time()
cpu = cpu1 - cpu0 + children_cpu() - kids0 - sampler_cpu[0]
peak_tree[0] = max(peak_tree[0], tree_rss()) if memory else 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": elapsed, "rss_base_kb": base, "rss_peak_kb": peak, "child_peak_kb": child,
                  "tree_base_kb": base_tree // 1024, "tree_peak_kb": peak_tree[0] // 1024, "ranks": n_ranks,
                  "cpu_seconds": cpu, "sampler_cpu_seconds": sampler_cpu[0], "load_average": os.getloadavg()[0]}))
"""


#: Real traces with rich ``args`` (recorded shapes, strides, concrete inputs, stacks): the
#: shared third-party recordings (``../shared/traces``, see its SOURCES.md) and our own.
SHARED = ROOT.parent.parent / "shared" / "traces"
REAL_SETS = {
    "bert": "h100_bert_small",  # HF bert-small inference, H100, shapes and memory
    "mi250": "hta_mi250_rocm",  # AMD MI250, ROCm 6.2
    "dlrm128": "hta_dlrm_2of128_ranks",  # 2 ranks of a 128-rank DLRM job
}


def dataset_path(spec: str) -> Path:
    if spec == "dlrm":
        return ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100"
    if spec in REAL_SETS:
        for base in (Path(os.environ.get("TRACEVIEW_SHARED_TRACES", SHARED)), Path("/work/shared/traces")):
            if (base / REAL_SETS[spec]).is_dir():
                return base / REAL_SETS[spec]
        sys.exit(f"{spec}: {REAL_SETS[spec]} not found under {SHARED} (set TRACEVIEW_SHARED_TRACES)")
    if spec == "stack":  # a ~200k-event CPU inference trace with Python stacks, recorded here
        out = DATA / "stack_200k"
        if not (out / "stack_200k.pt.trace.json.gz").exists():
            sys.path.insert(0, str(ROOT / "scripts"))
            from record_stack_trace import record

            print(f"recording {spec} into {out} ...", file=sys.stderr, flush=True)
            record(out / "stack_200k.pt.trace.json.gz", events=200_000)
        return out
    if spec.startswith("synth:"):
        _, ranks, events = spec.split(":")
        out = DATA / f"synth_{ranks}x{events}"
        if not (out / "DONE").exists():
            sys.path.insert(0, str(HERE))
            from synth import generate

            print(f"generating {spec} into {out} ...", file=sys.stderr, flush=True)
            generate(out, int(ranks), int(events))
            (out / "DONE").write_text("ok\n")
        return out
    return Path(spec)


def json_bytes(folder: Path) -> int:
    total = 0
    for f in sorted(folder.iterdir()):
        if f.name.endswith(".gz"):
            with gzip.open(f, "rb") as fh:
                while chunk := fh.read(1 << 24):
                    total += len(chunk)
        elif f.name.endswith(".json"):
            total += f.stat().st_size
    return total


def run_probe(
    python: Path | str,
    path: Path,
    tool: str,
    cache: str,
    timeout: float,
    engine: str = "auto",
    memory: bool = True,
    root: Path = ROOT,
) -> dict | None:
    env = dict(os.environ, PYTHONPATH=str(root))
    try:
        proc = subprocess.run(
            [str(python), "-c", PROBE, str(path), tool, cache, engine, "1" if memory else "0"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(root),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        killed = proc.returncode in (-9, 137)
        return {"error": "killed (out of memory?)" if killed else tail[:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sets", nargs="+", default=["dlrm", "synth:8:100000", "synth:8:1000000"])
    p.add_argument("--tools", nargs="+", default=["ours-cold", "ours-cached", "hta"])
    p.add_argument("--hta-timeout", type=float, default=900)
    p.add_argument("--engine", default="auto", help="tv.load's engine for our tools (auto, serial, process)")
    p.add_argument("--out", type=Path, default=HERE / "results" / "load.json")
    p.add_argument(
        "--no-memory",
        action="store_true",
        help="time only: no memory sampler beside the load (a thread of the probe reading the processes' "
        "PSS: ~50 ms more on the 0.08 s load of the bundled sample); the memory columns are then empty",
    )
    p.add_argument(
        "--roots",
        nargs="+",
        type=Path,
        default=[ROOT],
        help="checkouts whose package our tools load (each built), run by run in turn: before/after in one run",
    )
    a = p.parse_args()
    roots = [r.resolve() for r in a.roots]
    if "hta" in a.tools and not HTA_PYTHON.exists():
        sys.exit("HTA is not installed: run `bash benchmarks/hta_env.sh` first (or pass --tools ours-cold ours-cached)")

    results = []
    for spec in a.sets:
        path = dataset_path(spec)
        size = json_bytes(path)
        files = sum(1 for f in path.iterdir() if f.name.endswith((".json", ".gz")))
        # As engine="auto" decides (loading/plan.py): several files above PARALLEL_BYTES
        # in a pool, one file above SPLIT_BYTES in byte ranges by a pool, else in-process.
        from jupyter_traceview.loading import plan

        cpus = os.cpu_count() or 1
        if files > 1:
            cores = min(files, cpus) if size > plan.PARALLEL_BYTES else 1
        else:
            # One file: split only where a pool starts cheaply; the probe is threaded (its
            # memory sampler), so its first pool would wait for a cold forkserver: in-process.
            cores = cpus if a.engine == "process" else 1
        if a.engine == "serial":
            cores = 1
        row: dict = {"set": spec, "path": str(path), "json_bytes": size, "files": files, "cores_used": cores}
        with tempfile.TemporaryDirectory() as cache:
            for tool in a.tools:
                python = HTA_PYTHON if tool == "hta" else sys.executable
                timeout = a.hta_timeout if tool == "hta" else 3600
                # Each checkout's runs in turn (one label per checkout where there are several).
                if tool == "hta" or len(roots) == 1:
                    where = [(tool, roots[0])]
                else:
                    where = [(f"{tool}[{j}]", r) for j, r in enumerate(roots)]
                if tool == "ours-cached":
                    for label, root in where:  # fill the cache (one per checkout: their formats may differ)
                        run_probe(sys.executable, path, tool, os.path.join(cache, label), 3600, a.engine, root=root)
                all_runs: dict[str, list[dict]] = {label: [] for label, _ in where}
                failed: set[str] = set()
                for i in range(a.runs):
                    for label, root in where:
                        if label in failed:
                            continue
                        c = os.path.join(cache, label) if tool == "ours-cached" else cache
                        r = run_probe(python, path, tool, c, timeout, a.engine, memory=not a.no_memory, root=root)
                        print(f"{spec} {label} run {i + 1}: {r}", file=sys.stderr, flush=True)
                        if r is None or "error" in r:
                            row[label] = {"error": (r or {}).get("error", "failed")}
                            failed.add(label)
                            continue
                        all_runs[label].append(r)
                for label, runs in all_runs.items():
                    if label in failed:
                        continue
                    row[label] = {
                        "seconds": median_of(runs, "seconds"),
                        "all_seconds": [r["seconds"] for r in runs],
                        "rss_above_base_mb": median_of(runs, "rss_peak_kb") / 1024
                        - median_of(runs, "rss_base_kb") / 1024,
                        "worker_peak_mb": median_of(runs, "child_peak_kb") / 1024,
                        "tree_above_base_mb": (median_of(runs, "tree_peak_kb") - median_of(runs, "tree_base_kb"))
                        / 1024,
                        "ranks": runs[0]["ranks"],
                        "cpu_seconds": median_of(runs, "cpu_seconds"),
                        "sampler_cpu_seconds": median_of(runs, "sampler_cpu_seconds"),
                        "load_average": [r["load_average"] for r in runs],
                        "memory": not a.no_memory,
                    }
        results.append(row)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(results, indent=2))

    print(table(results))


def table(results: list[dict]) -> str:
    lines = [
        "| data set | JSON | tool | load (median) | HTA / ours | MB/s | MB/s per core | CPU, all processes | MB/s of CPU | HTA / ours, CPU | peak RSS above baseline: main process | all processes | peak / JSON |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        mb = row["json_bytes"] / 1e6
        hta = row.get("hta", {})
        labels = [k for t in ("ours-cold", "ours-cached", "hta") for k in row if k == t or k.startswith(t + "[")]
        for tool in labels:
            r = row[tool]
            if "error" in r:
                lines.append(f"| {row['set']} | {mb:.0f} MB | {tool} | {r['error']} | | | | | | | | | |")
                continue
            ratio = f"{hta['seconds'] / r['seconds']:.1f}x" if "seconds" in hta and tool != "hta" else ""
            speed = mb / r["seconds"]
            per_core = f"{speed / row['cores_used']:.0f}" if tool.startswith("ours-cold") else ""
            cpu = r.get("cpu_seconds", float("nan"))
            cpu_ratio = f"{hta['cpu_seconds'] / cpu:.1f}x" if "cpu_seconds" in hta and tool != "hta" and cpu else ""
            per_cpu = f"{mb / cpu:.0f}" if cpu else ""
            mem = r.get("tree_above_base_mb") if r.get("memory", True) else None
            ratio_mem = f"{mem / mb:.2f}x" if mem is not None and mb else ""
            lines.append(
                f"| {row['set']} | {mb:.1f} MB | {tool} | {r['seconds']:.3f} s | {ratio} | {speed:.0f} | {per_core} "
                f"| {cpu:.3f} s | {per_cpu} | {cpu_ratio} | {_mb(r, 'rss_above_base_mb')} | {_mb(r, 'tree_above_base_mb')} "
                f"| {ratio_mem} |"
            )
    return "\n".join(lines)


def _mb(r: dict, key: str) -> str:
    return f"{r[key]:.0f} MB" if r.get("memory", True) else "(not measured)"


if __name__ == "__main__":
    main()
