"""The performance findings rules (gemm_below_peak, tiny_gemms, fp32_matmul) on tiny traces."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb

H100 = "NVIDIA H100 80GB HBM3"


def addmm(m: int, k: int, n: int, dtype: str) -> dict:
    return {
        "Input Dims": [[n], [m, k], [k, n], [], []],
        "Input type": [dtype, dtype, dtype, "Scalar", "Scalar"],
        "Concrete Inputs": ["", "", "", "1", "1"],
    }


def load(tmp_path: Path, events: list[dict], device: str = H100) -> tv.Trace:
    d = kb.doc(events, rank=0, deviceProperties=[{"id": 0, "name": device}])
    return tv.load(kb.write(tmp_path / "rank-0.json", d), cache=False)


def by_id(f: pd.DataFrame, rule: str) -> pd.Series:
    rows = f[f["id"] == rule]
    assert len(rows) == 1, f["id"].tolist()
    return rows.iloc[0]


def test_gemm_far_below_peak(tmp_path: Path) -> None:
    # 2048x4096x4096 bf16 in 1 ms: 68.7 TFLOP/s, 6.9 % of the H100's 989.5 (compute-bound).
    events = [
        kb.step(1, 0, 1200),
        kb.cpu_op("aten::addmm", 10, 20, **addmm(2048, 4096, 4096, "c10::BFloat16")),
        *kb.launch("gemm", 15, 100, 1000, corr=1),
    ]
    f = tv.findings(load(tmp_path, events))
    g = by_id(f, "gemm_below_peak")
    flops = 2 * 2048 * 4096 * 4096 + 2048 * 4096
    ideal = flops / 989.5e3
    assert g["evidence"]["shapes"][0]["pct_of_peak"] == pytest.approx(100 * ideal / 1_000_000)
    assert g["time_at_stake_ns"] == int(1_000_000 - ideal)
    assert "M=2048 N=4096 K=4096" in g["title"]
    assert "fp32_matmul" not in set(f["id"])
    # At 69 % of peak (100 us) it is not named.
    events[2 + 1]["dur"] = 100
    assert "gemm_below_peak" not in set(tv.findings(load(tmp_path, events))["id"])


def test_tiny_gemms(tmp_path: Path) -> None:
    events: list[dict] = [kb.step(1, 0, 10_000)]
    for i in range(60):  # 60 calls of [16,64]x[64,64], 3 us each on the GPU
        t = 10 + i * 100
        events += [
            kb.cpu_op("aten::mm", t, 20, **{"Input Dims": [[16, 64], [64, 64]], "Input type": ["float", "float"]}),
            *kb.launch("gemm_small", t + 5, t + 50, 3, corr=i + 1),
        ]
    f = tv.findings(load(tmp_path, events))
    g = by_id(f, "tiny_gemms")
    assert g["evidence"]["calls"] == {"0": 60} or g["evidence"]["calls"] == {0: 60}
    assert g["time_at_stake_ns"] == 60 * 3000
    rules = tv.FindingRules(tiny_gemm_min_count=61)
    assert "tiny_gemms" not in set(tv.findings(load(tmp_path, events), rules=rules)["id"])


def test_fp32_matmul_on_a_device_with_fast_units(tmp_path: Path) -> None:
    events = [
        kb.step(1, 0, 1200),
        kb.cpu_op("aten::addmm", 10, 20, **addmm(1024, 1024, 1024, "float")),
        *kb.launch("sgemm", 15, 100, 500, corr=1),
    ]
    f = tv.findings(load(tmp_path, events))
    g = by_id(f, "fp32_matmul")
    # H100: fp32 67, bf16 989.5 TFLOP/s: what the same time would take at the fast rate.
    assert g["time_at_stake_ns"] == int(500_000 * (1 - 67 / 989.5))
    assert "bf16" in g["title"]
    # A V100 has no TF32/BF16: nothing to say.
    assert "fp32_matmul" not in set(tv.findings(load(tmp_path, events, device="Tesla V100-SXM2-32GB"))["id"])
