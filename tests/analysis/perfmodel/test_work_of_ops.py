"""performance.work_of_ops against the computation it replaced (sorting, not hashing, the calls).

The reference below is the earlier code: operators found by ``searchsorted``, the last
argument row of each operator by ``np.unique``, distinct calls by ``np.unique``. The
recorded traces have one argument row per operator, in order; the shuffled and
duplicated argument tables take the other path.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _links as lk
from jupyter_traceview.analysis.perfmodel.model import NotModelled, OpCall, model_op
from jupyter_traceview.analysis.perfmodel.performance import _codes_and_values, _model_key, work_of_ops
from jupyter_traceview.model.schema import EventKind
from tests.conftest import DATA


def _reference(ev: pd.DataFrame, oa: pd.DataFrame, op_rows: np.ndarray, table: np.ndarray) -> tuple[Any, Any]:
    n = len(op_rows)
    distinct: list[Any] = [NotModelled("no shapes recorded (record_shapes=False?)")]
    code = np.zeros(n, dtype=np.int64)
    names = np.asarray(ev["name"].cat.categories, dtype=object)
    name_codes = ev["name"].cat.codes.to_numpy().astype(np.int64)
    if len(oa) and n:
        rows = lk.lookup(table, oa["eid"].to_numpy())
        at = np.minimum(np.searchsorted(op_rows, rows), n - 1)
        j = np.flatnonzero((rows >= 0) & (op_rows[at] == rows))
        _, last_rev = np.unique(at[j][::-1], return_index=True)
        j = j[::-1][last_rev]
        cols = [_codes_and_values(oa[c]) for c in ("input_dims", "input_type", "concrete_inputs")]
        key = name_codes[rows[j]]
        for c, vals in cols:
            key = key * (len(vals) + 1) + (c[j] + 1)
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        for k in first.tolist():
            r = int(rows[j[k]])
            args = (vals[int(c[j[k]])] if c[j[k]] >= 0 else None for c, vals in cols)
            distinct.append(_model_key(str(names[name_codes[r]]), *args))
        code[at[j]] = 1 + inv.reshape(-1)
    no_shapes = np.array([isinstance(w, NotModelled) and w.reason.startswith("no shapes") for w in distinct])
    flagged = no_shapes[code]
    if flagged.any():
        uc, inv_c = np.unique(name_codes[op_rows[flagged]], return_inverse=True)
        idle = np.array([model_op(OpCall(str(names[c]), (), ())) is None for c in uc.tolist()], dtype=bool)
        code[np.flatnonzero(flagged)[idle[inv_c.reshape(-1)]]] = len(distinct)
    distinct.append(None)
    return code, distinct


def _args_variants(oa: pd.DataFrame) -> list[pd.DataFrame]:
    rng = np.random.default_rng(7)
    shuffled = oa.iloc[rng.permutation(len(oa))].reset_index(drop=True)
    # Some operators with a second, different argument row (the last one counts).
    extra = oa.iloc[rng.choice(len(oa), size=max(len(oa) // 5, 1), replace=False)].copy()
    extra["input_dims"] = oa["input_dims"].iloc[rng.permutation(len(oa))[: len(extra)]].to_numpy()
    duplicated = pd.concat([oa, extra], ignore_index=True)
    return [oa, shuffled, duplicated, duplicated.iloc[::-1].reset_index(drop=True)]


@pytest.mark.parametrize(
    "path",
    [tv.sample_path(), DATA / "h100_bert_small", DATA / "perfmodel_cpu" / "transformer_cpu.json.gz"],
    ids=["dlrm", "bert", "transformer_cpu"],
)
def test_work_of_ops_as_before(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(path, cache=False, progress=False)
    for r in trace.ranks:
        d = trace.rank_data(r)
        ev = d.events
        op_rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]))
        table = lk.eid_rows(ev)
        assert len(d.op_args) > 0
        rows = lk.lookup(table, d.op_args["eid"].to_numpy())
        if path == DATA / "h100_bert_small":  # one argument row per operator, in order: the fast path
            assert np.array_equal(rows, op_rows)
        for oa in _args_variants(d.op_args):
            code, distinct = work_of_ops(ev, oa, op_rows)
            want_code, want_distinct = _reference(ev, oa, op_rows, table)
            assert np.array_equal(code, want_code)
            assert [repr(w) for w in distinct.tolist()] == [repr(w) for w in want_distinct]
