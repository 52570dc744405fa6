"""Our operator figures against TraceLens's on real traces with shapes (docs/semantics.md).

The reference files in ``tests/golden/tracelens`` are TraceLens's numbers, written by
``scripts/tracelens_reference.py`` in TraceLens's own environment. Where the definitions
agree the figures must be equal; every row where they differ is one of the differences
``docs/semantics.md`` lists, checked here for what it is.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from tests.conftest import KINETO_FOLDERS

GOLDEN = Path(__file__).parents[2] / "golden" / "tracelens"
MIB = 2**20


def _ours(folder: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    trace = trace.select(ranks=[trace.ranks[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        perf = tv.op_performance(trace)
    ev = trace.events(trace.ranks[0]).set_index("eid")
    perf["external_id"] = ev.loc[perf["eid"], "external_id"].to_numpy()
    return perf, ev


#: Composites TraceLens gives figures to as well as to the operator they call (we count once).
DOUBLE_COUNTED = {
    "aten::layer_norm": "aten::native_layer_norm",
    "aten::_scaled_dot_product_flash_attention": "aten::_flash_attention_forward",
    "aten::mean": "aten::mean",
}


@pytest.mark.parametrize("folder", ["h100_bert_small", "dlrm_8rank_v100"])
def test_figures_equal_tracelens_where_the_definitions_agree(folder: str) -> None:
    ref = pd.read_csv(GOLDEN / f"{folder}.csv")
    perf, ev = _ours(folder)
    mine = perf.set_index("external_id")
    compared = 0
    for row in ref.itertuples(index=False):
        if row.external_id not in mine.index:
            # Counted once, in the operator it called (inside it) or that called it (around it).
            other = DOUBLE_COUNTED[row.name]
            eid = ev.index[(ev["external_id"] == row.external_id).to_numpy()][0]
            lo, hi = ev.loc[eid, "ts_ns"], ev.loc[eid, "ts_ns"] + ev.loc[eid, "dur_ns"]
            end = perf["ts_ns"] + (ev.loc[perf["eid"], "dur_ns"].to_numpy())
            nested = ((perf["ts_ns"] >= lo) & (end <= hi)) | ((perf["ts_ns"] <= lo) & (end >= hi))
            inside = perf[(perf["name"] == other) & nested]
            assert len(inside) == 1, (row.name, row.external_id)
            if row.name != "aten::layer_norm":  # layer norm: see the norm difference below
                assert inside["flops"].iloc[0] == pytest.approx(row.gflops * 1e9, rel=1e-9)
            continue
        ours = mine.loc[row.external_id]
        assert ours["name"] == row.name
        assert ours["gpu_ns"] / 1e3 == pytest.approx(row.kernel_time_us, abs=1e-3)
        if ours["family"] == "norm":
            # Ours: 7 FLOPs per element (affine); TraceLens: 5 plus per-channel terms.
            n = 141 * 512
            assert ours["flops"] == 7 * n and row.gflops * 1e9 == pytest.approx(5 * n + 6 * 512)
            assert ours["bytes"] == (2 * n + 2 * 512) * 2  # bf16 input + output, weight + bias
            assert row.data_moved_mb * MIB - ours["bytes"] == 4096
            continue
        compared += 1
        assert ours["flops"] == pytest.approx(row.gflops * 1e9, rel=1e-9), row
        assert ours["bytes"] == pytest.approx(row.data_moved_mb * MIB, rel=1e-9), row
        if row.kernel_time_us > 0:
            assert ours["tflops"] == pytest.approx(row.tflops, rel=1e-3)
    assert compared >= 30


def test_pinned_figures_of_the_bert_trace() -> None:
    """Numbers from the comparison, pinned: a wrong model or attribution fails here."""
    perf, _ = _ours("h100_bert_small")
    head = perf[perf["detail"] == "M=141 N=30522 K=512"].iloc[0]  # the vocabulary projection
    assert head["flops"] == 2 * 141 * 30522 * 512 + 141 * 30522 == 4_411_192_050
    assert head["gpu_ns"] == 41_280
    assert head["tflops"] == pytest.approx(106.860273, rel=1e-6)
    assert head["bound"] == "memory"  # intensity 115 FLOP/byte < 989.5e12 / 3.35e12 = 295
    assert head["pct_of_peak"] == pytest.approx(100 * head["bytes"] / 3350 / 41_280)
    att = perf[perf["family"] == "attention"]
    assert att["flops"].tolist() == [40_716_288.0] * 4 and att["bytes"].tolist() == [577_536.0] * 4
    shapes = tv.op_performance(tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False), by="shape")
    assert shapes.groupby("family")["count"].sum().to_dict() == {
        "attention": 4,
        "elementwise": perf["family"].eq("elementwise").sum(),
        "embedding": 3,
        "gemm": 26,
        "norm": 10,
        "reduction": 1,
    }
