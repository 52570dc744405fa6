"""``memory_timeline``: allocated and reserved memory over time, per rank and device."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ...errors import OptionError
from ...model.trace import Trace
from .._common import scoped
from ._records import OOM, DeviceOption, Want, finish, rank_has_records, records, run
from .binning import bin_step, even_edges

__all__ = ["TIMELINE_COLUMNS", "memory_timeline"]

TIMELINE_COLUMNS = {
    "rank": "int64",
    "device_type": "category",
    "device": "int16",
    "ts_ns": "int64",
    "allocated_bytes": "int64",
    "reserved_bytes": "int64",
    "cached_bytes": "int64",
}


def memory_timeline(
    trace: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    device: DeviceOption = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    resample: int | None = None,
) -> pd.DataFrame:
    """Allocated and reserved memory over time, per rank and device (a step function).

    Parameters
    ----------
    device
        None (every device), a device index (``0``), a type (``"cuda"``, ``"cpu"``) or both
        (``"cuda:0"``). A device the trace has no records of raises :class:`OptionError`.
    resample
        None: one row per allocation or free (the value after it, in force until the next
        row). N (>= 2): N rows per rank and device on an even grid over the scope's time
        span, for plotting; each row carries the **maximum** of its bin [t, t + step) (the
        value in force at t and every record inside), so peaks survive resampling. Bins
        before a series' first record have no value and no row. The binning is
        :func:`.binning.bin_step`, the one the timeline's memory lanes use.

    Returns
    -------
    DataFrame
        ``rank``; ``device_type`` (CPU, CUDA, ...); ``device`` (index, -1 for CPU);
        ``ts_ns`` (absolute ns); ``allocated_bytes`` (the allocator's ``Total Allocated``);
        ``reserved_bytes`` (``Total Reserved``: allocated plus cached; 0 for the CPU
        allocator); ``cached_bytes`` (reserved minus allocated, 0 where nothing is
        reserved). Rows are sorted by rank, device and time.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())     # recorded without profile_memory
    >>> tv.memory_timeline(trace).empty
    True
    """
    if resample is not None and (
        isinstance(resample, bool) or not isinstance(resample, (int, np.integer)) or resample < 2
    ):
        raise OptionError(f"resample={resample!r} is not accepted; give a number of points >= 2, or None")
    scope = scoped(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    out = finish(run(scope, _rank_timeline, device), TIMELINE_COLUMNS)
    if resample is None or out.empty:
        return out
    lo, hi = scope.window if scope.window is not None else (int(out["ts_ns"].min()), int(out["ts_ns"].max()) + 1)
    return _resample(out, lo, hi, int(resample))


def _rank_timeline(trace: Trace, *, want: Want) -> pd.DataFrame | None:
    if not rank_has_records(trace):
        return None
    rec = records(trace, want)
    rec = rec.take(rec.action != OOM)
    if not len(rec):
        return None
    (r,) = trace.ranks
    allocated, reserved = rec.allocated, rec.reserved
    return pd.DataFrame(
        {
            "rank": np.full(len(rec), r, dtype=np.int64),
            "device_type": rec.device_type,
            "device": rec.device,
            "ts_ns": rec.ts,
            "allocated_bytes": allocated,
            "reserved_bytes": reserved,
            "cached_bytes": np.where(reserved > 0, np.maximum(reserved - allocated, 0), 0),
        }
    )


def _resample(series: pd.DataFrame, lo: int, hi: int, n: int) -> pd.DataFrame:
    """``n`` even bins over ``[lo, hi)`` per rank and device, binned by :func:`.binning.bin_step`.

    A row per bin, at the bin's start, with the bin's maximum; bins before a series' first
    record have no value and no row.
    """
    edges = even_edges(lo, hi, n)
    parts = []
    for (r, t, d), g in series.groupby(["rank", "device_type", "device"], observed=True, sort=True):
        ts = g["ts_ns"].to_numpy(dtype=np.int64)
        cols = {
            c: bin_step(ts, g[c].to_numpy(), edges)[0] for c in ("allocated_bytes", "reserved_bytes", "cached_bytes")
        }
        known = ~np.isnan(cols["allocated_bytes"])
        parts.append(
            pd.DataFrame(
                {
                    "rank": r,
                    "device_type": t,
                    "device": d,
                    "ts_ns": edges[:-1][known],
                    **{c: v[known].astype(np.int64) for c, v in cols.items()},
                }
            )
        )
    return finish(parts, TIMELINE_COLUMNS)
