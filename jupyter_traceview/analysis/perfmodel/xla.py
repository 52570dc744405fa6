"""The XLA ops of a JAX GPU profile in :func:`~.performance.op_performance` (docs/jax.md).

A JAX profile's work with FLOPs is the device's XLA ops, not host operators: each execution
of an HLO op is an event of the device's ``XLA Ops`` line (which xprof derives from the
kernels' ``hlo_op``; a ``gpu_user_annotation`` here), named by the op, inside the event of
the program's run on the ``XLA Modules`` line of the same stream group, named
``<module>(<program_id>)``. The op's FLOPs and bytes are XLA's cost analysis of that
(program, op) (:mod:`jupyter_traceview.model.xla_cost`, read from xprof's ``op_profile``
when the XSpace was loaded); its GPU time is the summed duration of the device's kernels,
copies and memsets inside the op's event (the first op event enclosing each, where stream
groups overlap). The rows then take the roofline of every operator
(``roofline.peak_columns``).

Families: ops whose xprof category (else the op's name) says ``convolution``/``conv`` are
``conv``; ``dot``, ``gemm``, ``matmul``, ``cublas`` ``gemm``; ``reduce`` ``reduction``; any
other op ``elementwise`` (compared with the memory bandwidth only). ``dtype`` is the element
type of the op's result (``f32`` -> fp32, ``bf16``, ``f16``, ``f8*`` -> fp8, ``f64``; NaN for
integer results); ``shape`` is the op's HLO text (its operands' shapes), ``detail`` its
result's type and xprof's category (``f32[128,64]{1,0} (loop fusion)``). Collectives (``all-reduce``, ...) are listed ``not_modelled``: they move
data between devices, which no roofline of one device measures; so is an op the cost
analysis does not cover.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from ...model.xla_cost import xla_cost
from .. import _enclose as en
from .. import _links as lk
from ..operators import RankLinks

__all__ = ["xla_op_rows"]

_OPS_LINE = re.compile(r"^XLA Ops(?: - from #(\d+))?$")
_MODULES_LINE = re.compile(r"^XLA Modules(?: - from #(\d+))?$")
_PROGRAM = re.compile(r"\((\d+)\)$")
_COLLECTIVE = re.compile(r"all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute")
_RESULT = re.compile(r"=\s*\(?([a-z][a-z0-9]*)\[")
_SHAPE = re.compile(r"=\s*(\([^)]*\)|\S+)")
_DTYPES = {"f64": "fp64", "f32": "fp32", "f16": "fp16", "bf16": "bf16"}


def _family(category: str, name: str) -> str:
    text = f"{category} {name}".lower()
    if "conv" in text:
        return "conv"
    if any(k in text for k in ("dot", "gemm", "matmul", "cublas")):
        return "gemm"
    if "reduce" in text:
        return "reduction"
    return "elementwise"


def _dtype(expression: str) -> str | None:
    m = _RESULT.search(expression)
    if not m:
        return None
    t = m.group(1)
    return "fp8" if t.startswith("f8") else _DTYPES.get(t)


def _lines(trace: Trace, rank: int, pattern: re.Pattern[str]) -> dict[tuple[int, int], str]:
    """(pid, tid) -> stream group (``#13``'s ``13``, or "") of the rank's lines named so."""
    out = {}
    for pid, tid, name in trace.meta(rank).thread_names:
        m = pattern.match(name)
        if m:
            out[(int(pid), int(tid))] = m.group(1) or ""
    return out


def _rows_on(ev: pd.DataFrame, rows: np.ndarray, lines: dict[tuple[int, int], str]) -> tuple[np.ndarray, np.ndarray]:
    """The ``rows`` on ``lines``, and each one's (pid, group) key as text."""
    pid, tid = ev["pid"].to_numpy()[rows], ev["tid"].to_numpy()[rows]
    keys = np.array(
        [lines.get((int(p), int(t))) for p, t in zip(pid.tolist(), tid.tolist(), strict=True)], dtype=object
    )
    on = np.array([k is not None for k in keys.tolist()], dtype=bool)
    group = np.array([f"{p}/{k}" for p, k in zip(pid[on].tolist(), keys[on].tolist(), strict=True)], dtype=object)
    return rows[on], group


def xla_op_rows(
    trace: Trace, rank: int, links: RankLinks, window: tuple[int, int] | None, text: Callable[[np.ndarray], Any]
) -> tuple[pd.DataFrame | None, np.ndarray]:
    """The rank's XLA op executions as rows of ``op_performance`` (its columns before the peak
    columns; ``text`` makes a text column), and per GPU activity of ``links`` whether it is
    inside one of them; None and no activity where the rank has no cost analysis."""
    n_acts = len(links.acts)
    inside = np.zeros(n_acts, dtype=bool)
    cost = xla_cost(trace.meta(rank))
    ops_lines = _lines(trace, rank, _OPS_LINE)
    if cost is None or not ops_lines:
        return None, inside
    ev = links.ev
    annotations = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.GPU_USER_ANNOTATION.value]))
    op_rows, op_group = _rows_on(ev, annotations, ops_lines)
    mod_rows, mod_group = _rows_on(ev, annotations, _lines(trace, rank, _MODULES_LINE))
    n = len(op_rows)
    if n == 0:
        return None, inside
    names = as_text(links.names[links.name_codes[op_rows]])
    # The program of each op: the module run enclosing it on the line of the same stream group.
    program = np.full(n, -1, dtype=np.int64)
    if len(mod_rows):
        mod_names = as_text(links.names[links.name_codes[mod_rows]])
        ids = np.array([int(pm.group(1)) if (pm := _PROGRAM.search(s)) else -1 for s in mod_names.tolist()])
        for group in np.unique(op_group):  # a stream group's modules enclose its ops (by a sweep)
            ops_in, mods_in = op_group == group, np.flatnonzero(mod_group == group)
            row = en.innermost(ev, mod_rows[mods_in], op_rows[ops_in], scope="process")
            at = np.searchsorted(mod_rows, np.maximum(row, 0))
            program[np.flatnonzero(ops_in)] = np.where(row >= 0, ids[np.minimum(at, len(ids) - 1)], -1)
    key = pd.MultiIndex.from_arrays([program, names])
    table = cost.set_index(["program_id", "hlo_op"])
    table = table[~table.index.duplicated()]
    at = table.index.get_indexer(key)
    found = at >= 0
    collective = np.array([bool(_COLLECTIVE.search(s)) for s in names.tolist()], dtype=bool)
    modelled = found & ~collective
    # GPU activities inside each op (the first op enclosing it).
    act_rows = links.act_rows
    owner = np.full(n_acts, -1, dtype=np.int64)
    outer = en.outermost(ev, op_rows, act_rows, scope="process")
    found_op = outer >= 0
    owner[found_op] = np.searchsorted(op_rows, outer[found_op])
    has = owner >= 0
    inside[:] = has & modelled[np.maximum(owner, 0)]
    dur = links.acts["dur_ns"].to_numpy().astype(np.float64)
    gpu_ns = np.rint(np.bincount(owner[has], weights=dur[has], minlength=n)).astype(np.int64)
    kernels = np.bincount(owner[has], minlength=n).astype(np.int64)
    step = ev["step"].to_numpy()[op_rows].astype(np.int64)
    if has.any():  # an op's step: its activities' (they take their launch's)
        np.maximum.at(step, owner[has], ev["step"].to_numpy()[act_rows[has]].astype(np.int64))
    report = np.ones(n, dtype=bool)
    if window is not None:
        ts, end = links.ts[op_rows], links.ts[op_rows] + links.dur[op_rows]
        report = (kernels > 0) | ((ts < window[1]) & (end > window[0]))
    category = np.full(n, None, dtype=object)
    category[found] = table["category"].to_numpy(dtype=object)[at[found]]
    expression = np.full(n, None, dtype=object)
    expression[found] = table["expression"].to_numpy(dtype=object)[at[found]]
    flops = np.where(modelled, table["flops"].to_numpy()[np.maximum(at, 0)], np.nan)
    nbytes = np.where(modelled, table["bytes"].to_numpy()[np.maximum(at, 0)], np.nan)
    none = np.full(n, None, dtype=object)
    reason = np.where(
        collective,
        "a collective: data moved between devices, not compared with one device's roofline",
        "no XLA cost analysis for this op (program, HLO op) in the profile",
    ).astype(object)
    family = np.array(
        [_family(c or "", s) for c, s in zip(category.tolist(), names.tolist(), strict=True)], dtype=object
    )
    dtype = np.array([_dtype(e) if e else None for e in expression.tolist()], dtype=object)
    result = [(sm.group(1) if (sm := _SHAPE.search(e)) else "") if e else "" for e in expression.tolist()]
    detail = np.array(
        [f"{r} ({c})".strip() if c else None for r, c in zip(result, category.tolist(), strict=True)], dtype=object
    )
    k = np.flatnonzero(report)
    g = gpu_ns[k]
    f, b = flops[k], nbytes[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        frame = pd.DataFrame(
            {
                "rank": np.full(len(k), rank, dtype=np.int64),
                "eid": ev["eid"].to_numpy()[op_rows[k]],
                "name": text(names[k].astype(object)),
                "status": text(np.where(modelled, "modelled", "not_modelled").astype(object)[k]),
                "reason": text(np.where(modelled, none, reason)[k]),
                "family": text(np.where(modelled, family, none)[k]),
                "dtype": text(np.where(modelled, dtype, none)[k]),
                "shape": text(expression[k]),
                "detail": text(np.where(modelled, detail, none)[k]),
                "step": step[k],
                "ts_ns": links.ts[op_rows[k]].astype(np.int64),
                "flops": f,
                "bytes": b,
                "intensity": np.where(b > 0, f / b, np.nan),
                "kernels": kernels[k],
                "gpu_ns": g,
                "tflops": np.where(g > 0, f / g / 1e3, np.nan),
                "gbps": np.where(g > 0, b / g, np.nan),
            }
        )
    return frame, inside
