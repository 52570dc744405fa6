"""The what-if replay without a change reproduces every step of the recorded traces (median error <= 2 %).

The figures (median and largest error per trace) are printed: ``pytest -s`` shows them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import jupyter_traceview as tv

DATA = Path(__file__).resolve().parents[1] / "data"
#: Every trace of tests/data with ProfilerStep iterations, and the bundled sample.
TRACES = [
    *(DATA / "compare" / n for n in ("allreduce", "base", "dataloader", "matmul", "sleep")),
    DATA / "h100_bert_small",
    *(DATA / "h200_cuda" / n for n in ("compiled", "matmul", "train")),
    DATA / "hta_cpu_only",
    DATA / "hta_dlrm_2of128_ranks",
    DATA / "hta_mi250_rocm",
    DATA / "hta_triton",
    *(DATA / "perfmodel_cpu" / n for n in ("cnn_cpu.json.gz", "mlp_cpu.json.gz", "transformer_cpu.json.gz")),
    *(DATA / "torch_cpu" / n for n in ("plain", "shapes", "stack")),
    *(DATA / "cpu_memory" / n for n in ("leak", "mlp_train")),
    None,  # the sample
]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: "sample" if p is None else f"{p.parent.name}/{p.name}")
def test_the_replay_reproduces_the_measured_steps(path: Path | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(tv.sample_path() if path is None else path)
        out = tv.what_if(trace)
    assert len(trace.iterations), "a trace with steps"
    assert (out["step"] >= 0).all()
    err = (out["replayed_ns"] - out["measured_ns"]).abs() / out["measured_ns"].clip(lower=1) * 100
    print(f"{path}: {len(out)} steps, replay error median {err.median():.3f} %, max {err.max():.3f} %")
    assert err.median() <= 2.0
    assert (out["predicted_ns"] == out["replayed_ns"]).all()
    assert (out["saving_ns"] == 0).all()
