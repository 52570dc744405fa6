"""Operator performance: modelled work against the GPU time it took and the device's peaks.

Which operators count. Every CPU operator with recorded shapes is run through the model
(:mod:`.model`). A modelled operator *counts* unless an enclosing operator already counts
(its work includes what it calls: ``aten::addmm`` covers the ``aten::copy_`` it may make), or
it is a composite (``aten::linear``, ``aten::matmul``, ...) with a modelled operator inside
it (the work is counted there, once). Counted operators therefore never nest, and a kernel
launched inside one belongs to it: its GPU time is the summed duration of the kernels,
memcpys and memsets whose launch call ran inside the operator (at any depth, on its thread;
the enclosure test of :func:`~jupyter_traceview.op_kernels`). GPU work outside every counted
operator is *not covered*; the innermost operator that launched it is listed with status
``not_modelled`` and the reason, so that no GPU time disappears silently. A JAX GPU profile's
XLA ops, with XLA's cost analysis, are rows too (:mod:`.xla`).

Figures. ``tflops`` = flops / GPU time, ``gbps`` = bytes / GPU time, ``intensity`` =
flops / bytes. Matrix families (gemm, conv, attention) are compared with the compute peak
of their dtype and the memory bandwidth (the roofline): the ridge point is peak / bandwidth
FLOP/byte; an operator below it is ``memory`` bound, above it ``compute`` bound;
``ideal_ns`` = max(flops / peak, bytes / bandwidth) is its time at the roofline and
``pct_of_peak`` = 100 x ideal_ns / gpu_ns. The other families (norm, softmax, elementwise,
reduction, embedding) do not run on matrix units: they are compared with the bandwidth
only (``memory`` bound, ``ideal_ns`` = bytes / bandwidth). ``lost_ns`` = gpu_ns - ideal_ns
(>= 0) is the time lost to running below the roofline.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...errors import OptionError, TraceviewWarning
from ...model.schema import EventKind
from ...model.text import as_text
from ...model.trace import Trace
from .. import _enclose as en
from .. import _links as lk
from .. import loops
from .._common import empty
from ..launch import rows_of
from ..operators import GPU_WORK_KINDS, RankLinks
from .model import COMPOSITE, NotModelled, OpCall, Work, model_op
from .peaks import DevicePeaks, device_peaks
from .roofline import MATRIX_FAMILIES, SHAPE_COLUMNS, by_shape, peak_columns
from .xla import xla_op_rows

__all__ = ["MATRIX_FAMILIES", "MFU_COLUMNS", "OP_PERFORMANCE_COLUMNS", "mfu", "op_performance"]

OP_PERFORMANCE_COLUMNS = {
    "rank": "int64",
    "eid": "int64",
    "name": "str",
    "status": "str",
    "reason": "str",
    "family": "str",
    "dtype": "str",
    "shape": "str",
    "detail": "str",
    "step": "int64",
    "ts_ns": "int64",
    "flops": "float64",
    "bytes": "float64",
    "intensity": "float64",
    "kernels": "int64",
    "gpu_ns": "int64",
    "tflops": "float64",
    "gbps": "float64",
    "peak_tflops": "float64",
    "peak_gbps": "float64",
    "bound": "str",
    "ideal_ns": "float64",
    "lost_ns": "float64",
    "pct_of_peak": "float64",
}

MFU_COLUMNS = {
    "rank": "int64",
    "step": "int64",
    "device": "str",
    "dur_ns": "int64",
    "flops": "float64",
    "modelled_flops": "float64",
    "ideal_ns": "float64",
    "mfu_pct": "float64",
    "gpu_ns": "int64",
    "uncovered_gpu_ns": "int64",
    "uncovered_gpu_pct": "float64",
    "not_modelled_ops": "int64",
}

PeaksArg = DevicePeaks | Mapping[str, Any] | None


# ---------------------------------------------------------------------------------- parsing
def _parse_list(text: object) -> list[Any]:
    if not isinstance(text, str):
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


@lru_cache(maxsize=65536)
def _model_key(name: str, dims: object, types: object, concrete: object) -> Work | NotModelled | None:
    raw_dims = _parse_list(dims)
    shapes = tuple(
        tuple(int(x) for x in d) if isinstance(d, list) and all(isinstance(x, int) for x in d) else () for d in raw_dims
    )
    call = OpCall(
        name=name,
        dims=shapes,
        types=tuple(str(t) for t in _parse_list(types)),
        concrete=tuple(str(c) for c in _parse_list(concrete)),
    )
    return model_op(call)


def work_of_ops(ev: pd.DataFrame, oa: pd.DataFrame, op_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Model result per operator row (None: no work; NotModelled: with the reason), as codes
    into an object array of the distinct results. Each distinct (name, shapes, types,
    concrete inputs) is modelled once."""
    n = len(op_rows)
    distinct: list[Any] = [NotModelled("no shapes recorded (record_shapes=False?)")]
    code = np.zeros(n, dtype=np.int64)
    name_col = ev["name"]
    names = np.asarray(name_col.cat.categories, dtype=object)
    name_codes = np.asarray(name_col.array.codes)  # as stored (int8-32): gathered, then widened
    if len(oa) and n:
        rows = rows_of(ev, oa["eid"].to_numpy())
        j: np.ndarray | None
        if len(rows) == n and np.array_equal(rows, op_rows):
            # One argument row per operator, in operator order (as recorded): row k is
            # operator k's, nothing to look up or deduplicate.
            j = None
        else:
            # Position of each argument row's operator among op_rows (-1: not an operator's).
            op_pos = np.full(len(ev) + 1, -1, dtype=np.int64)  # the last slot: rows == -1
            op_pos[op_rows] = np.arange(n, dtype=np.int64)
            at = op_pos[rows]
            j = np.flatnonzero(at >= 0)
            # Several argument rows for one operator: the last one counts (as a loop would);
            # in operator order.
            aj = at[j]
            if len(aj) > 1 and not bool((aj[1:] > aj[:-1]).all()):
                _, last_rev = np.unique(aj[::-1], return_index=True)
                j = j[::-1][last_rev]

        def picked(a: np.ndarray) -> np.ndarray:
            return a if j is None else a[j]

        # Codes as stored (int8-64) for the compiled loop, which reads any width; int64 otherwise.
        native = loops.native if j is None else None
        cols = [_codes_and_values(oa[c], widen=native is None) for c in ("input_dims", "input_type", "concrete_inputs")]
        span = float(len(names) + 1)
        for _, vals in cols:
            span *= len(vals) + 1
        found = _native_calls(native, name_codes, rows, cols) if native is not None and span < 2.0**62 else None
        if found is not None:
            inv, first = found
        elif span < 2.0**62:  # one integer per distinct call (codes + 1: 0 is "no text")
            call_codes = name_codes[picked(rows)].astype(np.int64)
            key = call_codes  # a new array: built in place (no temporaries the size of the calls)
            for c, vals in cols:
                key *= len(vals) + 1
                key += picked(c)
                key += 1
            # Hashing, not sorting, the calls; distinct keys in sorted order as np.unique
            # gives them, each with one of its rows (any: equal keys, equal calls).
            inv, _ = pd.factorize(key, sort=True)
            first = np.empty(int(inv.max()) + 1 if len(inv) else 0, dtype=np.int64)
            first[inv] = np.arange(len(inv), dtype=np.int64)
        else:
            call_codes = name_codes[picked(rows)].astype(np.int64)
            stacked = np.stack([call_codes, *(picked(c) for c, _ in cols)], axis=1)
            _, first, inv = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
        jf = first if j is None else j[first]  # argument rows of the distinct calls
        for k in jf.tolist():
            r = int(rows[k])
            distinct.append(
                _model_key(
                    str(names[name_codes[r]]),
                    *(vals[int(c[k])] if c[k] >= 0 else None for c, vals in cols),
                )
            )
        if j is None:
            code[:] = 1 + inv.reshape(-1)
        else:
            code[at[j]] = 1 + inv.reshape(-1)
    # Operators without shapes that would do no work anyway (the probe depends on the name).
    no_shapes = np.array(
        [isinstance(w, NotModelled) and w.reason.startswith("no shapes") for w in distinct], dtype=bool
    )
    flagged = no_shapes[code]
    if flagged.any():
        codes = name_codes[op_rows[flagged]].astype(np.int64)
        uc, inv_c = np.unique(codes, return_inverse=True)
        idle = np.array([model_op(OpCall(str(names[c]), (), ())) is None for c in uc.tolist()], dtype=bool)
        code[np.flatnonzero(flagged)[idle[inv_c.reshape(-1)]]] = len(distinct)
    distinct.append(None)
    out = np.empty(len(distinct), dtype=object)
    out[:] = distinct
    return code, out


def _native_calls(
    native: Any, name_codes: np.ndarray, rows: np.ndarray, cols: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`work_of_ops`' distinct calls by one compiled hashing pass (``_loops.factorize_calls``):
    each call's position among the distinct keys in increasing order (``pd.factorize(key,
    sort=True)``) and each key's last call; None where the loop does not take these codes."""
    n = len(rows)
    inv, first = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    radix = np.array([len(vals) + 1 for _, vals in cols], dtype=np.int64)
    try:
        k = native.factorize_calls(
            name_codes, np.ascontiguousarray(rows, dtype=np.int64), *(c for c, _ in cols), radix, inv, first
        )
    except (TypeError, ValueError, BufferError):
        return None
    return inv, first[:k]


def shape_texts(oa: pd.DataFrame, ev: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """The ``shape`` text (``Input Dims`` and ``Input type``) of the operators at ``rows``
    (sorted event rows; None where no arguments were recorded)."""
    shape = np.full(len(rows), None, dtype=object)
    if len(oa) and len(rows):
        r_oa = rows_of(ev, oa["eid"].to_numpy())
        j = np.flatnonzero(np.isin(r_oa, rows))
        _, last_rev = np.unique(r_oa[j][::-1], return_index=True)  # the last argument row counts
        j = j[::-1][last_rev]
        # The text once per distinct (dims, types) pair, not per operator.
        d_codes, _ = _codes_and_values(oa["input_dims"])
        t_codes, t_vals = _codes_and_values(oa["input_type"])
        pair = (d_codes[j] + 1) * (len(t_vals) + 1) + (t_codes[j] + 1)
        _, rep, inv = np.unique(pair, return_index=True, return_inverse=True)
        dims_text = oa["input_dims"].iloc[j[rep]].astype(object).to_numpy()
        types_text = oa["input_type"].iloc[j[rep]].astype(object).to_numpy()
        u_text = np.array(
            [
                f"{dt} {tt}" if isinstance(tt, str) else str(dt)
                for dt, tt in zip(dims_text.tolist(), types_text.tolist(), strict=True)
            ],
            dtype=object,
        )
        shape[np.searchsorted(rows, r_oa[j])] = u_text[inv.reshape(-1)]
    return shape


def _codes_and_values(col: pd.Series, widen: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (-1: no text) and the texts of an op_args column (categorical or not).
    The codes are int64, or with ``widen=False`` a categorical's codes as stored (int8-64)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        values = np.asarray(col.cat.categories, dtype=object)
        codes = np.asarray(col.cat.codes.to_numpy())
        if widen:
            codes = codes.astype(np.int64)
    else:
        obj = col.astype(object).to_numpy()
        text = np.array([isinstance(v, str) for v in obj.tolist()], dtype=bool)
        values, inv = np.unique(as_text(obj[text]), return_inverse=True)
        values = values.astype(object)
        codes = np.full(len(obj), -1, dtype=np.int64)
        codes[text] = inv.reshape(-1)
    # A category that is not text (never in practice) counts as absent, as before.
    is_text = np.array([isinstance(v, str) for v in values.tolist()], dtype=bool)
    if len(values) and not is_text.all():
        codes = np.where((codes >= 0) & is_text[np.maximum(codes, 0)], codes, -1)
    return codes, values


# ---------------------------------------------------------------------------------- peaks
def resolve_peaks(trace: Trace, peaks: PeaksArg) -> dict[int, DevicePeaks | None]:
    if peaks is not None:
        if isinstance(peaks, DevicePeaks):
            given = peaks
        elif isinstance(peaks, Mapping):
            try:
                given = DevicePeaks.from_mapping("user", peaks)
            except (TypeError, ValueError) as exc:
                raise OptionError(f"peaks: {exc}") from None
        else:
            raise OptionError(
                f"peaks must be a DevicePeaks or a mapping such as {{'bandwidth_gbps': 3350, 'bf16': 989.5}}, "
                f"got {type(peaks).__name__}"
            )
        return dict.fromkeys(trace.ranks, given)
    meta = trace.metadata
    out: dict[int, DevicePeaks | None] = {}
    unknown: dict[str, list[int]] = {}
    for rank, name in zip(meta["rank"].tolist(), meta["device_name"].tolist(), strict=True):
        found = device_peaks(name)
        out[int(rank)] = found
        if found is None:
            unknown.setdefault(str(name) or "(no deviceProperties)", []).append(int(rank))
    if unknown:
        listed = "; ".join(f"{n!r} (ranks {rs})" for n, rs in unknown.items())
        warnings.warn(
            f"no peak figures for device {listed}: figures are given without percentages. "
            "Pass peaks={'bandwidth_gbps': ..., 'bf16': ..., ...} (TFLOP/s) to compare with your device's peaks",
            TraceviewWarning,
            stacklevel=3,
        )
    return out


def delegated_work(
    ev: pd.DataFrame, op_rows: np.ndarray, at: np.ndarray, is_work: np.ndarray, family: np.ndarray
) -> np.ndarray:
    """Per operator (positions in ``op_rows``), whether one of ``at`` (modelled operators)
    encloses a modelled operator of its own family from a later row (a descendant)."""
    out = np.zeros(len(op_rows), dtype=bool)
    fam = family[at]
    for f in pd.unique(fam).tolist():  # one sweep per family (a rank has a few)
        r = at[fam == f]
        out[r] = en.encloses_later(ev, op_rows[r], op_rows[is_work & (family == f)])
    return out


# ---------------------------------------------------------------------------------- per rank
def _rank_instances(
    trace: Trace, rank: int, window: tuple[int, int] | None, *, texts: bool = True
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One row per reported operator of ``rank`` (the ``by="instance"`` columns before the
    peak columns) and the per-activity arrays ``mfu`` reads. ``texts=False`` leaves the text
    columns as object arrays (``by="shape"`` groups them and converts only the groups)."""
    links = RankLinks(trace, rank, list(GPU_WORK_KINDS), window)
    ev = links.ev
    d = trace.rank_data(rank)
    op_rows = np.flatnonzero(lk.category_mask(ev["kind"], [EventKind.CPU_OP.value]))
    work_code, distinct = work_of_ops(ev, d.op_args, op_rows)
    n_ops = len(op_rows)
    u_is_work = np.array([isinstance(w, Work) for w in distinct.tolist()], dtype=bool)
    is_work = u_is_work[work_code]
    names = links.names[links.name_codes[op_rows]] if n_ops else np.empty(0, dtype=object)
    # Decided per distinct name (a rank has few), not per operator.
    composite_name = np.isin(as_text(links.names), list(COMPOSITE))
    composite = composite_name[links.name_codes[op_rows]] if n_ops else np.zeros(0, dtype=bool)
    # Enclosure among operators (ancestors: of equal ranges, the earlier row), by sweeps.
    # A composite delegates to the modelled operators inside it of its own family (a
    # convolution to its cudnn/mkldnn convolution, not to the zero_ that fills its output).
    u_family = np.array([w.family if isinstance(w, Work) else "" for w in distinct.tolist()], dtype=object)
    family = u_family[work_code]
    delegated = delegated_work(ev, op_rows, np.flatnonzero(composite & is_work), is_work, family)
    candidate = is_work & ~(composite & delegated)
    # Covered: a candidate encloses it from an earlier row.
    counted = candidate & ~(en.outermost(ev, op_rows[candidate], op_rows) < op_rows)

    # GPU activities: the counted operator around each launch (counted operators never
    # nest), else the innermost operator.
    n_acts = len(links.acts)
    counted_at = np.flatnonzero(counted)
    act_row = en.innermost(ev, op_rows[counted_at], links.launch)
    act_op = np.where(act_row >= 0, np.searchsorted(op_rows, np.maximum(act_row, 0)), -1)
    innermost_row = en.innermost(ev, op_rows, links.launch)
    text = _texts if texts else _objects
    # A JAX GPU profile's XLA ops, with XLA's cost analysis (.xla): they cover their kernels.
    xla_frame, in_xla_op = xla_op_rows(trace, rank, links, window, text)
    uncovered = (act_op < 0) & ~in_xla_op
    act_inner = np.where(innermost_row >= 0, np.searchsorted(op_rows, np.maximum(innermost_row, 0)), -1)
    owner = np.where(uncovered, act_inner, act_op)
    dur = links.acts["dur_ns"].to_numpy().astype(np.int64)
    has_owner = owner >= 0
    gpu_ns = np.bincount(owner[has_owner], weights=dur[has_owner].astype(np.float64), minlength=n_ops)
    kernels = np.bincount(owner[has_owner], minlength=n_ops)
    listed_unmodelled = np.zeros(n_ops, dtype=bool)
    listed_unmodelled[owner[uncovered & has_owner]] = True
    listed_unmodelled &= ~counted

    report = counted | listed_unmodelled
    if window is not None:
        ts = links.ts[op_rows]
        end = ts + links.dur[op_rows]
        in_window = (ts < window[1]) & (end > window[0])
        report &= (kernels > 0) | in_window
    idx = np.flatnonzero(report)
    rows = op_rows[idx]
    shape = shape_texts(d.op_args, links.ev, rows)
    # Per distinct model result, then per reported operator.
    u = distinct.tolist()
    u_reason = np.array(
        [
            w.reason
            if isinstance(w, NotModelled)
            else "inside a composite whose work is counted elsewhere"
            if isinstance(w, Work)
            else "an operator that should do no GPU work launched some"
            for w in u
        ],
        dtype=object,
    )
    u_attr = {
        c: np.array([getattr(w, c) if isinstance(w, Work) else None for w in u], dtype=object)
        for c in ("family", "dtype", "detail")
    }
    u_num = {
        c: np.array([float(getattr(w, c)) if isinstance(w, Work) else np.nan for w in u], dtype=np.float64)
        for c in ("flops", "bytes")
    }
    wc = work_code[idx]
    modelled = counted[idx] & u_is_work[wc]
    none = np.full(len(idx), None, dtype=object)
    recs: dict[str, Any] = {
        "status": np.where(modelled, "modelled", "not_modelled").astype(object),
        "reason": np.where(modelled, none, u_reason[wc]),
        **{c: np.where(modelled, v[wc], none) for c, v in u_attr.items()},
        **{c: np.where(modelled, v[wc], np.nan) for c, v in u_num.items()},
    }
    flops = np.array(recs["flops"], dtype=np.float64)
    nbytes = np.array(recs["bytes"], dtype=np.float64)
    g = np.rint(gpu_ns[idx]).astype(np.int64)

    with np.errstate(divide="ignore", invalid="ignore"):
        frame = pd.DataFrame(
            {
                "rank": np.full(len(idx), rank, dtype=np.int64),
                "eid": ev["eid"].to_numpy()[rows],
                "name": text(as_text(names[idx])),
                "status": text(recs["status"]),
                "reason": text(recs["reason"]),
                "family": text(recs["family"]),
                "dtype": text(recs["dtype"]),
                "shape": text(shape),
                "detail": text(recs["detail"]),
                "step": ev["step"].to_numpy()[rows].astype(np.int64),
                "ts_ns": links.ts[rows].astype(np.int64),
                "flops": flops,
                "bytes": nbytes,
                "intensity": np.where(nbytes > 0, flops / nbytes, np.nan),
                "kernels": kernels[idx].astype(np.int64),
                "gpu_ns": g,
                "tflops": np.where(g > 0, flops / g / 1e3, np.nan),
                "gbps": np.where(g > 0, nbytes / g, np.nan),
            }
        )
    if xla_frame is not None and len(xla_frame):
        frame = pd.concat([f for f in (frame, xla_frame) if len(f)], ignore_index=True)
    # Per-step GPU coverage for mfu().
    act_step = links.ev["step"].to_numpy()[links.act_rows] if n_acts else np.empty(0, dtype=np.int64)
    extra = {
        "act_step": act_step,
        "act_dur": dur,
        "act_uncovered": uncovered,
    }
    return frame, extra


def _texts(values: np.ndarray) -> Any:
    return pd.array(values, dtype="str")


def _objects(values: np.ndarray) -> Any:
    # (A plain object array would be inferred as "str" by the DataFrame: keep it object.)
    return pd.Series(values, dtype=object, copy=False)


def _check_scope_options(by: str, tf32: object) -> None:
    if by not in ("instance", "shape"):
        raise OptionError.invalid("by", by, ("instance", "shape"))
    if not isinstance(tf32, bool):
        raise OptionError(f"tf32 must be True or False, got {tf32!r}")


def op_performance(
    trace: Trace,
    *,
    by: Literal["instance", "shape"] = "instance",
    peaks: PeaksArg = None,
    tf32: bool = False,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """FLOPs, bytes, achieved throughput and % of the device's peak of every operator.

    Needs a trace recorded with ``record_shapes=True``, or a JAX GPU profile's ``.xplane.pb``
    (its XLA ops, with XLA's cost analysis: ``docs/jax.md``). The FLOP/byte model of each operator
    family is described in :mod:`jupyter_traceview.analysis.perfmodel.model` and
    ``docs/semantics.md``; which operators count, and how GPU time is attributed, in
    :mod:`jupyter_traceview.analysis.perfmodel.performance`.

    Parameters
    ----------
    trace : Trace
    by : {"instance", "shape"}, default "instance"
        One row per operator call, or one per (rank, name, recorded shapes and dtypes,
        status) with sums over the calls.
    peaks : DevicePeaks or mapping, optional
        The device's peaks, for every rank (``{"bandwidth_gbps": 3350, "bf16": 989.5, ...}``,
        TFLOP/s per dtype). Default: the built-in table (:func:`peaks_table`), by the
        ``deviceProperties`` name of the rank's device; an unknown device gives figures
        without percentages and a warning.
    tf32 : bool, default False
        Compare fp32 matrix products with the TF32 tensor-core peak (when the run allowed
        TF32: ``torch.backends.cuda.matmul.allow_tf32``) instead of the FP32 peak.
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`); ``time_range`` keeps the GPU work running in it,
        clipped to it.

    Returns
    -------
    pandas.DataFrame
        With ``by="instance"``, sorted by rank and ``gpu_ns`` descending:

        ``rank``; ``eid`` (the operator event); ``name``; ``status``: ``modelled`` or
        ``not_modelled`` (an operator whose GPU work no model covers); ``reason`` (why not
        modelled); ``family`` (gemm, conv, attention, norm, softmax, elementwise,
        reduction, embedding); ``dtype`` (fp64, fp32, fp16, bf16, fp8; NaN for integer
        work); ``shape`` (recorded ``Input Dims`` and ``Input type``); ``detail`` (the
        sizes the figures come from, e.g. ``M=8 N=64 K=32``); ``step``; ``ts_ns``;
        ``flops`` (FLOP); ``bytes`` (bytes moved, the minimum); ``intensity``
        (FLOP/byte); ``kernels`` (GPU activities launched); ``gpu_ns`` (their summed
        duration, ns); ``tflops`` (achieved TFLOP/s); ``gbps`` (achieved GB/s);
        ``peak_tflops`` (the device's peak for the dtype; NaN for memory-only families);
        ``peak_gbps`` (the device's bandwidth); ``bound`` (``compute`` or ``memory``);
        ``ideal_ns`` (time at the roofline, ns); ``lost_ns`` (gpu_ns - ideal_ns, >= 0);
        ``pct_of_peak`` (100 x ideal_ns / gpu_ns).

        With ``by="shape"``: ``rank``, ``name``, ``status``, ``reason``, ``family``,
        ``dtype``, ``shape``, ``detail``, ``count`` (calls), the sums ``flops``,
        ``bytes``, ``kernels``, ``gpu_ns``, ``ideal_ns``, ``lost_ns``; ``intensity``,
        ``tflops``, ``gbps``, ``pct_of_peak`` of the sums; ``peak_tflops``,
        ``peak_gbps``, ``bound``; ``first_eid``. Sorted by rank and ``gpu_ns`` descending.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path(), ranks=[0])
    >>> perf = tv.op_performance(trace, by="shape")
    >>> gemm = perf[perf["family"] == "gemm"]
    >>> bool((gemm["pct_of_peak"] > 0).all())
    True
    """
    _check_scope_options(by, tf32)
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    device_peaks_of = resolve_peaks(trace, peaks)
    frames = []
    for r in trace.ranks:
        # By shape, the peak columns are computed on the groups (by_shape), not per call.
        frame, _ = _rank_instances(trace, r, window, texts=by == "instance")
        if by == "instance":
            peak_columns(frame, device_peaks_of.get(r), tf32)
        frames.append(frame)
    if not frames or all(f.empty for f in frames):
        return empty(OP_PERFORMANCE_COLUMNS if by == "instance" else SHAPE_COLUMNS)
    out = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    if by == "shape":
        return by_shape(out, device_peaks_of, tf32)
    out = out.sort_values(["rank", "gpu_ns", "eid"], ascending=[True, False, True], kind="stable")
    return out[list(OP_PERFORMANCE_COLUMNS)].reset_index(drop=True)


def mfu(
    trace: Trace,
    *,
    model_flops: float | None = None,
    dtype: str | None = None,
    peaks: PeaksArg = None,
    tf32: bool = False,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
) -> pd.DataFrame:
    """Model FLOPs utilisation per ProfilerStep iteration and rank.

    MFU = the time the step's matrix FLOPs (gemm, conv, attention) would take at the
    device's peak for their dtype, over the step's duration (the ProfilerStep span):
    ``100 x sum_dtype(flops_dtype / peak_dtype) / dur``; for one dtype that is the usual
    ``flops / (dur x peak)``. The FLOPs are those :func:`op_performance` models; GPU work
    outside the modelled operators has unknown FLOPs, so the rows also give the share of
    the step's GPU time it takes (``uncovered_gpu_pct``): MFU is a lower bound by that much.

    With ``model_flops`` (FLOPs of one training step per rank, e.g. ``6 x parameters x tokens``),
    MFU = model_flops / (dur x peak[dtype]); ``dtype`` (default: the dtype of most modelled
    matrix FLOPs, else bf16) picks the peak.

    Returns
    -------
    pandas.DataFrame
        ``rank``; ``step``; ``device`` (peaks used); ``dur_ns`` (step span, ns); ``flops``
        (the numerator: modelled matrix FLOPs, or ``model_flops``); ``modelled_flops``
        (modelled matrix FLOPs); ``ideal_ns`` (time of ``flops`` at peak, ns); ``mfu_pct``;
        ``gpu_ns`` (summed GPU activity time in the step); ``uncovered_gpu_ns`` and
        ``uncovered_gpu_pct`` (GPU time not under a modelled operator, and its share of
        ``gpu_ns``); ``not_modelled_ops`` (operator calls listed as not modelled).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> m = tv.mfu(trace)
    >>> m["device"].unique().tolist()
    ['Tesla V100-SXM2-32GB']
    >>> bool(((m["mfu_pct"] > 0) & (m["mfu_pct"] < 100)).all())
    True
    """
    if model_flops is not None and not (isinstance(model_flops, int | float) and model_flops > 0):
        raise OptionError(f"model_flops must be a positive number of FLOPs per step, got {model_flops!r}")
    if dtype is not None and dtype not in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"):
        raise OptionError.invalid("dtype", dtype, ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"))
    _check_scope_options("instance", tf32)
    trace, _ = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=None)
    device_peaks_of = resolve_peaks(trace, peaks)
    its = trace.iterations
    rows = []
    for r in trace.ranks:
        frame, extra = _rank_instances(trace, r, None)
        pk = device_peaks_of.get(r)
        mine = its[its["rank"] == r]
        matrix = frame[(frame["status"] == "modelled") & frame["family"].isin(MATRIX_FAMILIES)]
        for step, dur in zip(mine["step"].tolist(), mine["dur_ns"].tolist(), strict=True):
            m = matrix[matrix["step"] == step]
            modelled = float(m["flops"].sum())
            if model_flops is not None:
                by_dtype = {dtype or _main_dtype(matrix): float(model_flops)}
            else:
                by_dtype = m.groupby("dtype")["flops"].sum().to_dict()
            ideal = _ideal_ns(by_dtype, pk, tf32)
            in_step = extra["act_step"] == step
            gpu = int(extra["act_dur"][in_step].sum())
            unc = int(extra["act_dur"][in_step & extra["act_uncovered"]].sum())
            nm = int(((frame["step"] == step) & (frame["status"] == "not_modelled")).sum())
            rows.append(
                {
                    "rank": r,
                    "step": int(step),
                    "device": pk.name if pk is not None else None,
                    "dur_ns": int(dur),
                    "flops": float(model_flops) if model_flops is not None else modelled,
                    "modelled_flops": modelled,
                    "ideal_ns": ideal,
                    "mfu_pct": 100.0 * ideal / dur if dur > 0 else np.nan,
                    "gpu_ns": gpu,
                    "uncovered_gpu_ns": unc,
                    "uncovered_gpu_pct": 100.0 * unc / gpu if gpu > 0 else np.nan,
                    "not_modelled_ops": nm,
                }
            )
    if not rows:
        return empty(MFU_COLUMNS)
    out = pd.DataFrame(rows)
    out["device"] = out["device"].astype("str")
    return out[list(MFU_COLUMNS)]


def _main_dtype(matrix: pd.DataFrame) -> str:
    if matrix.empty or matrix["dtype"].isna().all():
        return "bf16"
    return str(matrix.groupby("dtype")["flops"].sum().idxmax())


def _ideal_ns(by_dtype: Mapping[Any, float], pk: DevicePeaks | None, tf32: bool) -> float:
    if pk is None:
        return float("nan")
    total = 0.0
    for d, f in by_dtype.items():
        if not f:
            continue
        key = "tf32" if tf32 and d == "fp32" else d
        peak = pk.tflops(str(key)) if isinstance(d, str) else None
        if peak is None:
            return float("nan")
        total += f / (peak * 1e3)
    return total
