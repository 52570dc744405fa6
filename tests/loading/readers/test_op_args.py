"""The ``op_args`` table: recorded operator arguments kept verbatim, keyed to the op's eid."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.model.schema import OP_ARGS_COLUMNS
from tests import kineto_builder as kb

ADDMM_ARGS = {
    "Input Dims": [[64], [8, 32], [32, 64], [], []],
    "Input type": ["float", "float", "float", "Scalar", "Scalar"],
    "Input Strides": [[1], [32, 1], [1, 32], [], []],
    "Concrete Inputs": ["", "", "", "1", "1"],
}


def _events() -> list[dict]:
    return [
        kb.step(1, 1000, 100),
        kb.cpu_op("aten::linear", 1010, 40),
        kb.cpu_op("aten::addmm", 1015, 30, **ADDMM_ARGS),
        *kb.launch("gemm_kernel", 1020, 1050, 20, corr=11),
        kb.cpu_op("aten::relu", 1060, 10, **{"Input Dims": [[8, 64]], "Input type": ["float"]}),
        kb.annotation("my_region", 1070, 10, **{"Input Dims": [[1]]}),  # not an operator: not kept
    ]


def _load(tmp_path: Path, events: list[dict], **kw: object) -> tv.Trace:
    return tv.load(kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0)), **kw)


def test_op_args_rows_are_the_operators_with_shapes(tmp_path: Path) -> None:
    trace = _load(tmp_path, _events(), cache=False)
    oa = trace.op_args(0)
    assert list(oa.columns) == [c.name for c in OP_ARGS_COLUMNS]
    ev = trace.events(0).set_index("eid")
    assert ev.loc[oa["eid"], "name"].astype(str).tolist() == ["aten::addmm", "aten::relu"]
    addmm = oa.iloc[0]
    assert addmm["input_dims"] == "[[64],[8,32],[32,64],[],[]]"  # compact JSON, whatever the file's spacing
    assert json.loads(addmm["input_dims"]) == ADDMM_ARGS["Input Dims"]
    assert json.loads(addmm["input_type"]) == ADDMM_ARGS["Input type"]
    assert json.loads(addmm["input_strides"]) == ADDMM_ARGS["Input Strides"]
    assert json.loads(addmm["concrete_inputs"]) == ADDMM_ARGS["Concrete Inputs"]
    relu = oa.iloc[1]
    assert json.loads(relu["input_dims"]) == [[8, 64]]
    assert pd.isna(relu["input_strides"]) and pd.isna(relu["concrete_inputs"])
    for c in OP_ARGS_COLUMNS[1:]:
        assert isinstance(oa[c.name].dtype, pd.CategoricalDtype)
    # All ranks: a leading rank column, as the other tables.
    assert trace.op_args()["rank"].tolist() == [0, 0]


def test_op_args_survive_selection_cache_and_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_traceview.loading.readers.kineto import decode

    events = [*_events(), kb.step(2, 2000, 100), kb.cpu_op("aten::addmm", 2010, 30, **ADDMM_ARGS)]
    whole = _load(tmp_path, events, cache=False)
    assert len(whole.op_args(0)) == 3
    # Narrowing keeps the rows of the kept operators only.
    assert len(whole.select(iterations=[2]).op_args(0)) == 1
    # Cache round trip.
    cache = tmp_path / "cache"
    _load(tmp_path, events, cache=cache)
    cached = _load(tmp_path, events, cache=cache)
    pd.testing.assert_frame_equal(whole.op_args(0), cached.op_args(0))
    # Chunked decoding gives the same table.
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1)
    monkeypatch.setattr(decode, "CHUNK_EVENTS", 3)
    chunked = _load(tmp_path, events, cache=False)
    pd.testing.assert_frame_equal(whole.op_args(0), chunked.op_args(0))


def test_odd_values_go_through_the_tolerant_path(tmp_path: Path) -> None:
    events = _events()
    events[1]["args"]["Input Dims"] = [[2, 3]]
    events[-1]["args"]["grid"] = {"not": "a list"}  # another event: forces the event-by-event decoder
    with pytest.warns(tv.TraceviewWarning, match="unreadable args"):
        trace = _load(tmp_path, events, cache=False)
    oa = trace.op_args(0)
    assert len(oa) == 3  # the annotation lost its args; the operators (linear now too) kept theirs
    assert json.loads(oa.iloc[0]["input_dims"]) == [[2, 3]]
    assert json.loads(oa.iloc[1]["concrete_inputs"]) == ADDMM_ARGS["Concrete Inputs"]


def test_traces_without_shapes_have_an_empty_table(tmp_path: Path) -> None:
    trace = _load(tmp_path, [kb.step(1, 0, 10), kb.cpu_op("aten::mm", 1, 5)], cache=False)
    oa = trace.op_args(0)
    assert oa.empty and list(oa.columns) == [c.name for c in OP_ARGS_COLUMNS]


def test_real_trace_keeps_every_operator_with_shapes() -> None:
    # h100_bert_small: all 479 cpu_op events carry Input Dims (counted from the JSON).
    trace = tv.load(Path(__file__).parents[2] / "data" / "h100_bert_small", cache=False)
    oa = trace.op_args(0)
    assert len(oa) == 479
    ev = trace.events(0).set_index("eid")
    assert (ev.loc[oa["eid"], "kind"] == "cpu_op").all()
