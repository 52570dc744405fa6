"""Analysis benchmark: jupyter_traceview against HTA, side by side, on the same traces.

    bash benchmarks/hta_env.sh                 # once: HTA in benchmarks/.venv-hta
    python benchmarks/bench_analyses.py [--runs 5] [--sets dlrm synth:8:100000 ...] [--no-hta]
        [--only user_annotation_breakdown ...] [--cached]

Each tool loads the data set once in its own fresh process, then runs every analysis
``--runs`` times; the table reports the median time of a call (after load) for both tools
and the ratio. Analyses HTA does not have are timed for us alone. HTA's calls are the ones
HTA's docs and ``scripts/hta_reference.py`` use, on all ranks.

``--only`` times some analyses only; ``--cached`` loads our side through the cache (a
second load of the set: for sets whose cold load takes minutes, e.g. the 64 x 1M set; the
load time reported is then the cached one). Results go to ``benchmarks/results/analyses.json``
and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HTA_PYTHON = HERE / ".venv-hta" / "bin" / "python"
sys.path.insert(0, str(HERE))

#: analysis -> (our call, HTA's call or None); ``t`` is the trace, ``ranks`` all ranks, ``op`` an operator.
PAIRS: dict[str, tuple[str, str | None]] = {
    "temporal_breakdown": ("tv.temporal_breakdown(t)", "ta.get_temporal_breakdown(visualize=False)"),
    "comm_comp_overlap": ("tv.comm_comp_overlap(t)", "ta.get_comm_comp_overlap(visualize=False)"),
    "kernel_breakdown": (
        "tv.kernel_breakdown(t); tv.kernel_breakdown(t, by='type')",
        "ta.get_gpu_kernel_breakdown(visualize=False)",
    ),
    "idle_time_breakdown": (
        "tv.idle_time_breakdown(t)",
        "ta.get_idle_time_breakdown(ranks=ranks, visualize=False, show_idle_interval_stats=True)",
    ),
    "kernel_launch_stats": (
        "tv.kernel_launch_stats(t)",
        "ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)",
    ),
    "queue_length": ("tv.queue_length(t, per='stream')", "ta.get_queue_length_summary(ranks=ranks)"),
    "memory_bandwidth": ("tv.memory_bandwidth(t, per='kind')", "ta.get_memory_bw_summary(ranks=ranks)"),
    "frequent_kernel_sequences": (
        "tv.frequent_kernel_sequences(t, operator=op, ranks=[ranks[0]], match='substring')",
        "ta.get_frequent_cuda_kernel_sequences(operator_name=op, output_dir=tmp, rank=ranks[0])",
    ),
    "op_kernels": ("tv.op_kernels(t)", "ta.get_aten_op_kernels_and_delay(ranks=ranks)"),
    "user_annotation_breakdown": (
        "tv.user_annotation_breakdown(t, kind='cpu')",
        "ta.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)",
    ),
    "stragglers": ("tv.stragglers(t)", "ta.get_potential_stragglers()"),
    "utilization_heatmap": ("tv.utilization_heatmap(t, bins=1000)", None),
    "efficiency": ("tv.efficiency(t)", None),
    "concurrency": ("tv.concurrency(t)", None),
    "nccl_summary": ("tv.nccl_summary(t)", None),
    "iteration_stats": ("tv.iteration_stats(t)", None),
    "critical_path": ("tv.critical_path(t, ranks=ranks[0])", None),
    "findings": ("tv.findings(t)", None),
}

PROBE = r"""
import contextlib, io, json, statistics, sys, tempfile, time, warnings
tool, path, runs, op = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
pairs = json.loads(sys.argv[5])
cached = sys.argv[6] == "cached"
warnings.simplefilter("ignore")
quiet = contextlib.redirect_stdout(io.StringIO())
out = {}
with tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    if tool == "hta":
        from hta.trace_analysis import TraceAnalysis
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ta = TraceAnalysis(trace_dir=path)
        ranks = sorted(ta.t.traces)
        env = {"ta": ta, "ranks": ranks, "op": op, "tmp": tmp}
    else:
        import jupyter_traceview as tv
        if cached:
            tv.load(path, progress=False)  # fill the cache if need be
            t0 = time.perf_counter()
        t = tv.load(path, cache=cached, progress=False)
        ranks = list(t.ranks)
        env = {"tv": tv, "t": t, "ranks": ranks, "op": op, "tmp": tmp}
    out["_load"] = time.perf_counter() - t0
    for name, code in pairs.items():
        times = []
        try:
            for _ in range(runs):
                s = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(code, env)
                times.append(time.perf_counter() - s)
            out[name] = times
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
print(json.dumps(out))
"""


def dataset_path(spec: str) -> Path:
    from bench_load import dataset_path as load_dataset_path

    return load_dataset_path(spec)


def run(
    tool: str, path: Path, runs: int, op: str, timeout: float, only: list[str] | None = None, cached: bool = False
) -> dict:
    python = HTA_PYTHON if tool == "hta" else sys.executable
    index = 1 if tool == "hta" else 0
    pairs = {
        name: calls[index]
        for name, calls in PAIRS.items()
        if calls[index] is not None and (only is None or name in only)
    }
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run(
            [
                str(python),
                "-c",
                PROBE,
                tool,
                str(path),
                str(runs),
                op,
                json.dumps(pairs),
                "cached" if cached else "cold",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(ROOT),
        )
    except subprocess.TimeoutExpired:
        return {"_error": f"did not finish in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"_error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms"


def ratio_text(ours: float, hta: float) -> str:
    r = hta / ours
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


def table(results: dict[str, dict[str, dict]]) -> str:
    """The Markdown tables of ``results`` (data set -> {"ours": ..., "hta": ...})."""
    lines = []
    for spec, both in results.items():
        ours, hta = both["ours"], both["hta"]
        lines.append(
            f"\n**{spec}** (load: ours {fmt(ours.get('_load', float('nan')))}, "
            f"HTA {fmt(hta['_load']) if '_load' in hta else hta.get('_error', 'not run')})\n"
        )
        lines.append("| analysis | ours (median) | HTA (median) | HTA / ours |")
        lines.append("|---|---|---|---|")
        for name in PAIRS:
            o, h = ours.get(name), hta.get(name)
            if o is None and h is None:
                continue  # not run (--only)
            o_s = fmt(statistics.median(o)) if isinstance(o, list) else (o or "")
            if isinstance(h, list):
                h_s = fmt(statistics.median(h))
            elif isinstance(h, str):
                h_s = f"fails: {h}"
            else:
                h_s = "no such analysis" if PAIRS[name][1] is None else ""
            ratio = (
                ratio_text(statistics.median(o), statistics.median(h))
                if isinstance(o, list) and isinstance(h, list) and statistics.median(o) > 0
                else ""
            )
            lines.append(f"| {name} | {o_s} | {h_s} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sets", nargs="+", default=["dlrm", "synth:8:100000"])
    p.add_argument("--operator", default="aten::linear", help="operator for frequent_kernel_sequences")
    p.add_argument("--no-hta", action="store_true")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--out", type=Path, default=HERE / "results" / "analyses.json")
    p.add_argument("--table", action="store_true", help="only print the tables of the results in --out")
    p.add_argument("--only", nargs="+", choices=sorted(PAIRS), help="time these analyses only")
    p.add_argument("--cached", action="store_true", help="our load through the cache (after filling it)")
    a = p.parse_args()
    if a.table:
        print(table(json.loads(a.out.read_text())))
        return
    if not a.no_hta and not HTA_PYTHON.exists():
        sys.exit("HTA is not installed: run `bash benchmarks/hta_env.sh` first (or pass --no-hta)")
    results = {}
    for spec in a.sets:
        path = dataset_path(spec)
        ours = run("ours", path, a.runs, a.operator, a.timeout, a.only, a.cached)
        hta = {} if a.no_hta else run("hta", path, a.runs, a.operator, a.timeout, a.only)
        results[spec] = {"ours": ours, "hta": hta}
        print(f"{spec}: ours {ours.get('_error', 'ok')}, HTA {hta.get('_error', 'ok')}", file=sys.stderr)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
