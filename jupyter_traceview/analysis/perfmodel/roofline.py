"""The roofline columns of :func:`~jupyter_traceview.op_performance`, and its ``by="shape"`` grouping.

:func:`peak_columns` compares each row's modelled work with its device's peaks (see
:mod:`.performance` for the figures); :func:`by_shape` groups the per-call rows by rank,
name and shapes and computes those columns on the groups. Both work on numpy arrays, not
per-group pandas calls: ``op_performance(by="shape")`` and the findings' matrix products
(:mod:`.matrix`) call :func:`by_shape` on every first call.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import _links as lk
from .peaks import DevicePeaks

__all__ = ["MATRIX_FAMILIES", "SHAPE_COLUMNS", "by_shape", "peak_columns"]

#: Families compared with a compute peak (the others with the memory bandwidth only).
MATRIX_FAMILIES = ("gemm", "conv", "attention")

#: The columns of ``op_performance(by="shape")``, in order, with their dtypes.
SHAPE_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "status": "str",
    "reason": "str",
    "family": "str",
    "dtype": "str",
    "shape": "str",
    "detail": "str",
    "count": "int64",
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
    "first_eid": "int64",
}

#: The columns a shape is grouped by.
_KEYS = ["rank", "name", "status", "reason", "family", "dtype", "shape", "detail"]
#: Text columns of the ``by="shape"`` result (missing values stay missing).
_TEXTS = ("name", "status", "reason", "family", "dtype", "shape", "detail", "bound")


def _peak_arrays(
    fam: np.ndarray,
    dtype: np.ndarray,
    flops: np.ndarray,
    nbytes: np.ndarray,
    gpu: np.ndarray,
    modelled: np.ndarray,
    peaks: DevicePeaks | None,
    tf32: bool,
) -> dict[str, np.ndarray | float]:
    """peak_tflops, peak_gbps, bound (object: None where unknown), ideal_ns, lost_ns and
    pct_of_peak of rows with these families, dtypes, work, GPU time (ns) and status."""
    n = len(fam)
    matrix = np.isin(fam, MATRIX_FAMILIES)
    peak_t = np.full(n, np.nan)
    bw = np.nan
    if peaks is not None:
        bw = float(peaks.bandwidth_gbps)
        for i in np.flatnonzero(matrix).tolist():
            d = "tf32" if tf32 and dtype[i] == "fp32" else dtype[i]
            v = peaks.tflops(d)
            peak_t[i] = np.nan if v is None else float(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_compute = flops / (peak_t * 1e3)  # TFLOP/s = 1e3 FLOP/ns
        t_memory = nbytes / bw  # GB/s = bytes/ns
        ideal = np.where(matrix, np.maximum(t_compute, t_memory), t_memory)
        pct = np.where(gpu > 0, 100.0 * ideal / gpu, np.nan)
    ideal = np.where(modelled, ideal, np.nan)
    kind = np.where(matrix & (t_compute >= t_memory), "compute", "memory").astype(object)
    kind[~modelled | np.isnan(ideal)] = None
    return {
        "peak_tflops": peak_t,
        "peak_gbps": bw if peaks is not None else np.nan,
        "bound": kind,
        "ideal_ns": ideal,
        "lost_ns": np.where(gpu > 0, np.maximum(gpu - ideal, 0.0), np.nan),
        "pct_of_peak": np.where(modelled, pct, np.nan),
    }


def peak_columns(frame: pd.DataFrame, peaks: DevicePeaks | None, tf32: bool) -> None:
    """Add peak_tflops, peak_gbps, bound, ideal_ns, lost_ns, pct_of_peak (in place)."""
    a = _peak_arrays(
        frame["family"].to_numpy(dtype=object),
        frame["dtype"].to_numpy(dtype=object),
        frame["flops"].to_numpy(dtype=np.float64),
        frame["bytes"].to_numpy(dtype=np.float64),
        frame["gpu_ns"].to_numpy(dtype=np.float64),
        frame["status"].to_numpy(dtype=object) == "modelled",
        peaks,
        tf32,
    )
    for c, v in a.items():
        frame[c] = pd.array(v, dtype="str") if c == "bound" else v


def by_shape(inst: pd.DataFrame, device_peaks_of: Mapping[int, DevicePeaks | None], tf32: bool) -> pd.DataFrame:
    """``op_performance(by="shape")`` from its per-call rows ``inst``: one row per (rank, name,
    status, reason, family, dtype, shape, detail), in the order of :data:`SHAPE_COLUMNS`,
    sorted by rank, GPU time (largest first) and first eid.

    What ``inst.groupby(keys, dropna=False).agg(...)`` gives (a missing key is a group of its
    own), computed with one factorisation per key and ``bincount`` sums: ``flops`` and
    ``bytes`` summed over their known values (NaN for none), exactly, when they are whole
    numbers whose sums stay below 2**53 (then every summation order gives the same); other
    values are summed by pandas, as before.
    """
    n = len(inst)
    codes = np.empty((n, len(_KEYS)), dtype=np.int64)
    for j, k in enumerate(_KEYS):
        codes[:, j] = pd.factorize(inst[k].to_numpy(), use_na_sentinel=False)[0]
    ids, first = lk.row_ids(codes)  # groups in order of first appearance
    m = len(first)
    eid = inst["eid"].to_numpy(dtype=np.int64)
    first_eid = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_eid, ids, eid)
    kernels = np.zeros(m, dtype=np.int64)
    np.add.at(kernels, ids, inst["kernels"].to_numpy(dtype=np.int64))
    gpu_ns = np.zeros(m, dtype=np.int64)
    np.add.at(gpu_ns, ids, inst["gpu_ns"].to_numpy(dtype=np.int64))
    sums = {c: _known_sums(inst[c].to_numpy(dtype=np.float64), ids, m) for c in ("flops", "bytes")}
    if any(v is None for v in sums.values()):
        g = inst.groupby(_KEYS, dropna=False, sort=False)
        for c, v in sums.items():
            if v is None:
                sums[c] = g[c].agg(lambda s: s.sum(min_count=1)).to_numpy(dtype=np.float64)
    flops, nbytes = sums["flops"], sums["bytes"]
    assert flops is not None and nbytes is not None
    gpu = gpu_ns.astype(np.float64)
    out: dict[str, object] = {k: inst[k].to_numpy()[first] for k in _KEYS}
    rank = out["rank"] = np.asarray(out["rank"], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["intensity"] = np.where(nbytes > 0, flops / nbytes, np.nan)
        out["tflops"] = np.where(gpu > 0, flops / gpu / 1e3, np.nan)
        out["gbps"] = np.where(gpu > 0, nbytes / gpu, np.nan)
    fam, dtype = np.asarray(out["family"], dtype=object), np.asarray(out["dtype"], dtype=object)
    modelled = np.asarray(out["status"], dtype=object) == "modelled"
    peak: dict[str, np.ndarray] = {
        "peak_tflops": np.full(m, np.nan),
        "peak_gbps": np.full(m, np.nan),
        "bound": np.full(m, None, dtype=object),
        "ideal_ns": np.full(m, np.nan),
        "lost_ns": np.full(m, np.nan),
        "pct_of_peak": np.full(m, np.nan),
    }
    for r in np.unique(rank).tolist():  # each rank against its own device's peaks
        sel = np.flatnonzero(rank == r)
        a = _peak_arrays(
            fam[sel], dtype[sel], flops[sel], nbytes[sel], gpu[sel], modelled[sel], device_peaks_of.get(int(r)), tf32
        )
        for c, values in a.items():
            peak[c][sel] = values
    out.update(peak)
    out.update(count=np.bincount(ids, minlength=m).astype(np.int64), flops=flops, bytes=nbytes)
    out.update(kernels=kernels, gpu_ns=gpu_ns, first_eid=first_eid)
    # Sorted by rank, GPU time (largest first), first eid, then as grouped (a stable sort).
    order = np.lexsort((np.arange(m), first_eid, -gpu_ns, rank))
    res = pd.DataFrame({c: np.asarray(out[c])[order] for c in SHAPE_COLUMNS})
    for c in _TEXTS:
        res[c] = _texts(res[c])
    return res


def _known_sums(v: np.ndarray, ids: np.ndarray, m: int) -> np.ndarray | None:
    """Per group, the sum of the non-NaN values of ``v`` (NaN for a group without one), when
    they are whole numbers whose absolute sum is below 2**53 (exact in any order); else None."""
    known = ~np.isnan(v)
    x = v[known]
    if len(x) and not (np.isfinite(x).all() and (x == np.rint(x)).all() and np.abs(x).sum() < 2.0**53):
        return None
    out = np.bincount(ids[known], weights=x, minlength=m).astype(np.float64)
    out[np.bincount(ids[known], minlength=m) == 0] = np.nan
    return out


def _texts(col: pd.Series) -> pd.Series:
    """``col`` as pandas' string dtype, missing values kept missing (as ``astype("str")`` does
    on pandas 3; pandas 2 writes "None", hence the second pass where values are missing)."""
    missing = col.isna().to_numpy()
    out = col.astype("str")
    if missing.any():
        out = out.where(~missing, None).astype("str")
    return out
