"""Time per user annotation (``record_function`` ranges) on the CPU and on the GPU."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceviewWarning
from ..model import intervals as iv
from ..model.schema import GPU_ACTIVITY_KINDS, EventKind
from ..model.trace import Trace
from . import _enclose as en
from . import _links as lk
from ._common import empty, pct, warn_no_gpu
from ._gpu import CLASSES, OTHER, activities
from ._memo import sharing
from ._range_names import split_range_names
from .launch import rows_of

__all__ = ["user_annotation_breakdown"]

ANNOTATION_COLUMNS = {
    "rank": "int64",
    "name": "str",
    "count": "int64",
    "total_ns": "int64",
    "mean_ns": "int64",
    "min_ns": "int64",
    "max_ns": "int64",
    "std_ns": "float64",
    "kernels": "int64",
    "kernel_ns": "int64",
    "gpu_busy_ns": "int64",
    "gpu_busy_pct": "float64",
}

OTHERS = "others"
#: The GPU activity kinds and the work classes (compute, communication, memory): what
#: ``activities(trace, rank, work_only=True)`` selects.
_ACTIVITY_KINDS = frozenset(k.value for k in GPU_ACTIVITY_KINDS)
_WORK_CLASSES = frozenset(CLASSES[:OTHER])
#: Rows per block of :func:`_flags`' lookups.
_BLOCK = 8192
#: A rank's names are taken from an array of all of them up to this many (as classify does).
_FEW_NAMES = 4096


class _Columns:
    """A rank's events columns as numpy arrays, each read from the frame once (a pandas
    column read costs about as much as the arithmetic on a small rank's annotations)."""

    def __init__(self, ev: pd.DataFrame) -> None:
        self.frame = ev
        self._got: dict[str, np.ndarray] = {}
        self._cat: dict[str, pd.Categorical] = {}

    @classmethod
    def of(cls, ev: pd.DataFrame | _Columns) -> _Columns:
        return ev if isinstance(ev, _Columns) else cls(ev)

    def __call__(self, name: str) -> np.ndarray:
        got = self._got.get(name)
        if got is None:
            got = self._got[name] = self.frame[name].to_numpy()
        return got

    def array(self, name: str) -> pd.Categorical:
        """A categorical column's array (codes and categories), read once."""
        got = self._cat.get(name)
        if got is None:
            got = self._cat[name] = self.frame[name].array
        return got

    def __len__(self) -> int:
        return len(self.frame)


def user_annotation_breakdown(
    trace: Trace,
    *,
    kind: Literal["gpu", "cpu"] = "gpu",
    pattern: str | None = None,
    top_k: int | None = None,
    same_thread: bool = False,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Time per user annotation name: the ranges' own durations and the GPU time under them.

    ``kind="gpu"`` takes the ``gpu_user_annotation`` ranges (Kineto projects each
    ``record_function`` range onto the GPU stream that ran its kernels); ``kind="cpu"``
    takes the CPU-side ``user_annotation`` ranges (``record_function``, ``ProfilerStep#N``,
    ``## forward ##``...).

    Names are taken without the per-call suffix of PyTorch's ``emit_nvtx`` ranges
    (``aten::mm, seq = 3, op_id = 7`` counts as ``aten::mm``; :mod:`._range_names`), so
    one kind of range gives one row; ``pattern`` is matched against the names as recorded.

    Two kinds of numbers come out, per (rank, name):

    * the ranges' own durations: ``count``, ``total_ns`` and their statistics. This is
      what HTA's ``get_gpu_user_annotation_breakdown`` sums (``use_gpu_annotation=False``
      for ``kind="cpu"``). A CPU range's duration is host time: it says little about the
      GPU when the host runs ahead of it.
    * the GPU work attributed to the name, which answers "how much GPU time does this
      part of my model take": with ``kind="cpu"``, the GPU activities (kernels, memcpy,
      memset; not sync records) *launched* inside any range of that name, whole, wherever
      they run: their launch call was made while the range was open, on any thread of its
      process (the autograd engine runs the backward pass on its own threads while the
      main thread waits inside ``## backward ##``), or on the range's own thread with
      ``same_thread=True``; with ``kind="gpu"``, the parts of the activities on the
      range's own device and stream that run *inside* the range.
      ``gpu_busy_ns`` is the length of the union of those activities (wall-clock time
      with at least one of them running: overlap across streams counts once).

    Parameters
    ----------
    trace : Trace
    kind : {"gpu", "cpu"}, default "gpu"
    pattern : str, optional
        Regular expression (``re.search``): only annotation names matching it.
    top_k : int, optional
        Keep the ``top_k`` names with the largest ``total_ns`` per rank and pool the rest
        into one ``"others"`` row, whose statistics are over the pooled ranges themselves
        (HTA instead reports statistics of the per-name totals there). None keeps all.
    same_thread : bool, default False
        ``kind="cpu"``: attribute only the activities launched on the range's own thread.
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`). With ``time_range``, the ranges that overlap it
        and the GPU work that runs in it, both clipped to it (the work launched inside a
        range counts even when the launch call itself came before the window).

    Returns
    -------
    pandas.DataFrame
        One row per (rank, name), sorted by rank then ``total_ns`` descending:

        ``rank`` (int); ``name`` (str); ``count`` (int): ranges; ``total_ns``, ``mean_ns``,
        ``min_ns``, ``max_ns`` (int, ns): sum and statistics of the range durations;
        ``std_ns`` (float, ns): their standard deviation (ddof=1; 0 for a single range);
        ``kernels`` (int): GPU activities attributed; ``kernel_ns`` (int, ns): their summed
        duration (``kind="gpu"``: the parts inside the ranges); ``gpu_busy_ns`` (int, ns):
        the length of their union; ``gpu_busy_pct`` (float, %): ``gpu_busy_ns`` over the
        rank's GPU busy time (union of all its GPU work), NaN without GPU work.

        A rank without GPU activity keeps its ``kind="cpu"`` rows (the range durations
        are still right) with zero GPU columns; a warning says so. With ``kind="gpu"``
        such a rank has no rows.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> ann = tv.user_annotation_breakdown(trace, kind="cpu", ranks=0)
    >>> bool((ann["gpu_busy_ns"] <= ann["kernel_ns"]).all())
    True
    """
    if kind not in ("gpu", "cpu"):
        raise OptionError.invalid("kind", kind, ("gpu", "cpu"))
    if top_k is not None and top_k < 1:
        raise OptionError(f"top_k must be >= 1 or None, got {top_k}")
    trace, window = lk.scope_linked(trace, ranks=ranks, iterations=iterations, time_range=time_range)
    ann_kind = EventKind.GPU_USER_ANNOTATION.value if kind == "gpu" else EventKind.USER_ANNOTATION.value
    parts: list[dict[str, np.ndarray]] = []
    no_gpu: list[int] = []
    seen_any = False
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        cols = _Columns(ev)
        is_ann = _flags(cols.array("kind"), {ann_kind})
        if pattern is not None:
            is_ann = is_ann & lk.match_names(ev["name"], pattern, "regex", what="annotation pattern")
        if window is not None:
            ts = cols("ts_ns")
            end = ts + cols("dur_ns")
            is_ann = is_ann & (ts < window[1]) & ((end > window[0]) | (ts == window[0]))
        if not is_ann.any():  # only whether the rank has GPU work (for the warning)
            if not _has_work(trace, r, window, cols):
                no_gpu.append(r)
            continue
        acts = _work_activities(trace, r, window, cols, with_device=kind == "gpu")
        if not len(acts["ts_ns"]):
            no_gpu.append(r)
        seen_any = True
        if kind == "gpu" and not len(acts["ts_ns"]):
            continue
        part = _rank_breakdown(cols, acts, is_ann, window, kind=kind, top_k=top_k, same_thread=same_thread)
        part["rank"] = np.full(len(part["name"]), r, dtype=np.int64)
        parts.append(part)
    if no_gpu:
        warn_no_gpu("user_annotation_breakdown", no_gpu)
    elif not seen_any:
        hint = " (try kind='cpu')" if kind == "gpu" else ""
        warnings.warn(
            f"user_annotation_breakdown: no {ann_kind} events"
            + (f" matching {pattern!r}" if pattern is not None else "")
            + f" in rank(s) {list(trace.ranks)}{hint}",
            TraceviewWarning,
            stacklevel=2,
        )
    if not parts:
        return empty(ANNOTATION_COLUMNS)
    # One frame for all ranks (a frame per rank costs more than the rank's arithmetic),
    # each column built in its documented dtype (an astype of the frame costs more than the
    # ranks' arithmetic on a small trace).
    columns: dict[str, object] = {}
    for c, dtype in ANNOTATION_COLUMNS.items():
        values = np.concatenate([p[c] for p in parts])
        columns[c] = pd.array(values.tolist(), dtype=dtype) if dtype == "str" else values.astype(dtype, copy=False)
    return pd.DataFrame(columns)


def _work_activities(
    trace: Trace, rank: int, window: tuple[int, int] | None, cols: _Columns, *, with_device: bool = True
) -> dict[str, np.ndarray]:
    """The rank's GPU work (compute, communication, memory; clipped to ``trace.window``, then
    to ``window`` as :func:`._links.clip_to_window`), in start order: only the columns the
    breakdown reads, gathered from the events by row."""
    if sharing():  # computed once per rank for every analysis of the scope (findings)
        a = activities(trace, rank, work_only=True)
        ts, end, rows = a.ts, a.end, a.rows
    else:  # alone: only the rows and the times (no class, name or stream columns)
        rows, ts, end = _work_rows(cols, trace.window)
    if window is not None:
        lo, hi = window
        c_ts, c_end = np.maximum(ts, lo), np.minimum(end, hi)
        keep = np.flatnonzero((c_end > c_ts) | ((end == ts) & (ts >= lo) & (ts < hi)))
        ts, end, rows = c_ts[keep], c_end[keep], rows[keep]
    out = {"ts_ns": ts, "end_ns": end, "launch_eid": cols("launch_eid")[rows]}
    if with_device:  # only kind="gpu" matches activities by device and stream
        out["device"] = cols("device")[rows]
        out["stream"] = cols("stream")[rows]
    return out


def _flags(column: pd.Categorical, values: frozenset[str] | set[str], codes: np.ndarray | None = None) -> np.ndarray:
    """Rows of a categorical column whose value is in ``values`` (:func:`._links.category_mask`
    for the few categories of kinds and classes): one flag per category, then one gather.
    ``codes``: of some rows of the column only (default: every row's)."""
    lut = np.array([c in values for c in column.categories.tolist()] + [False], dtype=bool)  # code -1: False
    if codes is None:
        codes = np.asarray(column.codes)
    one = np.flatnonzero(lut)
    if len(one) == 1:  # one value (an annotation kind): one comparison of the codes
        out: np.ndarray = codes == one[0]
        return out
    if len(one) and one[-1] - one[0] + 1 == len(one):  # consecutive codes (the work classes): two comparisons
        out = codes >= one[0]
        out &= codes <= one[-1]
        return out
    # One lookup per block of rows: a take converts its indices to intp, and a block's stay
    # small (the rows' would be a temporary of 8 bytes a row: fresh pages after a cached load).
    # mode="wrap" gives code -1 the last flag (False), as an index of -1 would, unbuffered.
    out = np.empty(len(codes), dtype=bool)
    for i in range(0, len(codes), _BLOCK):
        lut.take(codes[i : i + _BLOCK], out=out[i : i + _BLOCK], mode="wrap")
    return out


def _has_work(trace: Trace, rank: int, window: tuple[int, int] | None, cols: _Columns) -> bool:
    """``len(_work_activities(trace, rank, window, cols)["ts_ns"]) > 0``: without the times
    when neither the trace nor the call has a window (nothing is clipped away)."""
    if sharing() or window is not None or trace.window is not None:
        return len(_work_activities(trace, rank, window, cols, with_device=False)["ts_ns"]) > 0
    return len(_work_row_ids(cols)) > 0


def _work_row_ids(cols: _Columns) -> np.ndarray:
    """Rows of the GPU work (a GPU activity kind, a work class), in order."""
    # The work classes first (the rarer rows), then the kinds of those rows only.
    rows = np.flatnonzero(_flags(cols.array("gpu_class"), _WORK_CLASSES))
    kinds = cols.array("kind")
    of_kind = _flags(kinds, _ACTIVITY_KINDS, np.asarray(kinds.codes)[rows])
    return rows if of_kind.all() else rows[of_kind]


def _work_rows(cols: _Columns, window: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, starts and ends of the GPU work that ``activities(..., work_only=True)`` selects
    (clipped to ``window`` as it clips to the trace's window), without its other columns."""
    rows = _work_row_ids(cols)
    ts = cols("ts_ns")[rows]
    end = cols("dur_ns")[rows]
    end += ts
    if window is not None:
        lo, hi = window
        zero = end == ts
        ts, end = np.maximum(ts, lo), np.minimum(end, hi)
        keep = np.flatnonzero((end > ts) | (zero & (ts >= lo) & (ts < hi)))
        rows, ts, end = rows[keep], ts[keep], end[keep]
    return rows, ts, end


def _rank_breakdown(
    cols: _Columns,
    acts: dict[str, np.ndarray],
    is_ann: np.ndarray,
    window: tuple[int, int] | None,
    *,
    kind: str,
    top_k: int | None,
    same_thread: bool,
) -> dict[str, np.ndarray]:
    ann_rows = np.flatnonzero(is_ann)
    a_start = cols("ts_ns")[ann_rows]
    a_end = a_start + cols("dur_ns")[ann_rows]
    if window is not None:
        lo, hi = window
        a_start, a_end = np.maximum(a_start, lo), np.minimum(a_end, hi)
        a_end = np.maximum(a_end, a_start)
    a_dur = a_end - a_start
    name = cols.array("name")
    codes = np.asarray(name.codes)[ann_rows].astype(np.int64)

    # Dense name ids, the names beyond top_k (by total duration) pooled into "others".
    uniq, gid = np.unique(codes, return_inverse=True)
    gid = gid.reshape(-1)
    # The texts of these names only (a rank has many more names than annotation names).
    categories = name.categories  # (all of them as an array when they are few: cheaper than a take)
    texts = categories.to_numpy()[uniq] if len(categories) <= _FEW_NAMES else categories.array.take(uniq)
    names = np.array([str(x) for x in texts.tolist()], dtype=object)
    # One row per range name: per-call suffixes (", seq = N", ", op_id = N") taken off.
    base, suffix = split_range_names(names)
    if (suffix != "").any():
        names, merged = np.unique(base, return_inverse=True)
        gid = merged.reshape(-1)[gid]
        uniq = np.arange(len(names))
    totals = np.bincount(gid, weights=a_dur.astype(np.float64), minlength=len(uniq))
    if top_k is not None and len(uniq) > top_k:
        rank_of = np.empty(len(uniq), dtype=np.int64)
        # Names sort through their dense ranks: no fixed-width string array as wide as the longest name.
        name_order = _text_ranks(names)
        rank_of[np.lexsort((name_order, -totals))] = np.arange(len(uniq))
        kept = rank_of < top_k
        remap = np.where(kept, np.cumsum(kept) - 1, int(kept.sum()))
        names = np.append(names[kept], OTHERS)
        gid = remap[gid]
    n = len(names)

    count = np.bincount(gid, minlength=n)
    total = np.bincount(gid, weights=a_dur.astype(np.float64), minlength=n)
    mean = total / np.maximum(count, 1)
    dev = a_dur - mean[gid]
    var = np.bincount(gid, weights=dev * dev, minlength=n) / np.maximum(count - 1, 1)
    order = np.lexsort((a_dur, gid))
    starts = np.searchsorted(gid[order], np.arange(n))
    ends = np.append(starts[1:], len(gid)) - 1
    total_ns = np.rint(total).astype(np.int64)
    out: dict[str, np.ndarray] = {
        "name": names,
        "count": count.astype(np.int64),
        "total_ns": total_ns,
        "mean_ns": np.rint(mean).astype(np.int64),
        "min_ns": a_dur[order][starts].astype(np.int64),
        "max_ns": a_dur[order][ends].astype(np.int64),
        "std_ns": np.where(count > 1, np.sqrt(var), 0.0),
    }
    if not len(acts["ts_ns"]):
        zero = np.zeros(n, dtype=np.int64)
        out["kernels"], out["kernel_ns"], out["gpu_busy_ns"] = zero, zero, zero
        out["gpu_busy_pct"] = np.full(n, np.nan)
    else:
        if kind == "cpu":
            pair_g, p_start, p_end, _ = _launched_inside(
                cols, acts, ann_rows, gid, "thread" if same_thread else "process"
            )
            out["kernels"], out["kernel_ns"], out["gpu_busy_ns"] = _attributed_distinct(pair_g, p_start, p_end, n)
        else:
            pair_g, p_start, p_end, p_act = _running_inside(cols, acts, ann_rows, gid, a_start, a_end)
            out["kernels"], out["kernel_ns"], out["gpu_busy_ns"] = _attributed(pair_g, p_start, p_end, p_act, n)
        out["gpu_busy_pct"] = np.asarray(pct(out["gpu_busy_ns"], _union_length(acts)), dtype=np.float64)
    # Sorted by total_ns descending, then name (the names' sorted ranks break ties).
    name_rank = _text_ranks(names)
    o = np.lexsort((name_rank, -total_ns))
    return {c: v[o] for c, v in out.items()}


def _union_length(acts: dict[str, np.ndarray]) -> int:
    """Length of the union of the activities (:func:`~..model.intervals.union`): in one pass
    when they come in start order, as they do."""
    ts, end = acts["ts_ns"], acts["end_ns"]
    if len(ts) < 2 or (ts[1:] < ts[:-1]).any():
        return iv.length(*iv.union(ts, end))
    run = np.maximum.accumulate(end)
    new = np.empty(len(ts), dtype=bool)
    new[0] = True
    np.greater(ts[1:], run[:-1], out=new[1:])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(ts) - 1)
    return int(run[last].sum() - ts[first].sum())


def _text_ranks(names: np.ndarray) -> np.ndarray:
    """Dense ranks of texts in sorted order (equal texts, equal ranks), as
    ``pd.factorize(..., sort=True)`` numbers them: for the few names of a breakdown, Python's
    sort (code point order, which is also UTF-8 byte order) beats building a string array."""
    texts = [str(x) for x in names.tolist()]
    rank_of = {t: i for i, t in enumerate(sorted(set(texts)))}
    return np.array([rank_of[t] for t in texts], dtype=np.int64)


def _launched_inside(
    cols: _Columns, acts: dict[str, np.ndarray], ann_rows: np.ndarray, gid: np.ndarray, scope: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(name id, start, end, activity index) for each activity launched inside a range of
    that name, each (name id, activity) once, in activity order."""
    launch = rows_of(cols.frame, acts["launch_eid"])
    act_i, g = _launch_groups(cols, ann_rows, gid, launch, scope)
    return g, acts["ts_ns"][act_i], acts["end_ns"][act_i], act_i


def _launch_groups(
    ev: pd.DataFrame | _Columns, ann_rows: np.ndarray, gid: np.ndarray, launch: np.ndarray, scope: str
) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct (point index, name id) where a range of that name encloses the point
    (the enclosure test of :mod:`._enclose`: same process, or thread, ``range.ts <= point.ts``
    and ``point.end <= range.end``), sorted by point index then name id.

    Without one pair per (point, range): the ranges of a process (thread) cut its time into
    elementary segments; per segment, each name covering it keeps the latest end of its
    ranges covering it. A point of positive duration starting in a segment lies in a range of
    that name exactly when it ends by that end (a range encloses it iff the range starts at
    or before its start and ends after it, i.e. covers that segment, and ends by its end).
    Points of zero duration (which a range ending at their start, or a zero-length range,
    encloses too) take one sweep per name (:func:`._enclose.outermost` over that name's
    ranges). Cost: O(points log ranges + pairs), without sorting the pairs.
    """
    cols = _Columns.of(ev)
    ts, dur = cols("ts_ns"), cols("dur_ns")  # ends only of the rows needed, not of every event
    key_cols = [cols("pid")] + ([cols("tid")] if scope == "thread" else [])
    out_p: list[np.ndarray] = []
    out_g: list[np.ndarray] = []
    # Index arrays are built only where a step drops points: on a big rank each one is a
    # fresh allocation of the points' size (the call's time goes mostly to such passes).
    valid: np.ndarray | None = None  # positions in `launch` of the points still in play; None: all
    p_rows = launch
    if len(launch) and launch.min() < 0:
        valid = np.flatnonzero(launch >= 0)
        p_rows = launch[valid]
    p_dur = dur[p_rows]
    zero = p_dur == 0
    if zero.any():
        pos = np.arange(len(launch), dtype=np.int64) if valid is None else valid
        z_rows = np.where(zero, p_rows, -1)
        n_g = int(gid.max()) + 1
        keys = [np.empty(0, dtype=np.int64)]
        for g in np.unique(gid).tolist():  # one sweep per name: is a range of it around the point
            i = np.flatnonzero(en.outermost(cols.frame, ann_rows[gid == g], z_rows, scope=scope) >= 0)
            keys.append(pos[i] * n_g + g)
        key = np.unique(np.concatenate(keys))
        out_p.append(key // (int(gid.max()) + 1))
        out_g.append(key % (int(gid.max()) + 1))
        keep = np.flatnonzero(~zero)
        valid, p_rows, p_dur = pos[keep], p_rows[keep], p_dur[keep]
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    # One process (thread) in the rank, or the ranges and the points in one (the GPU's rows
    # in others): one step, every point in it.
    if all(len(c) and c.min() == c.max() for c in key_cols) or all(
        _one_value(c[ann_rows], c[p_rows]) for c in key_cols
    ):
        groups.append((ann_rows, gid, None))
    else:
        both = row_key(key_cols, np.concatenate((ann_rows, p_rows)))
        r_key, p_key = both[: len(ann_rows)], both[len(ann_rows) :]
        # One step per process (thread) with ranges.
        groups += [
            (ann_rows[r_key == k], gid[r_key == k], np.flatnonzero(p_key == k)) for k in np.unique(r_key).tolist()
        ]
    n_g = int(gid.max()) + 1
    for rr, rg, pts in groups:
        if pts is not None and not len(pts):
            continue
        r_s = ts[rr]
        r_e = r_s + dur[rr]
        bounds = np.unique(np.concatenate((r_s, r_e)))
        lo = np.searchsorted(bounds, r_s)
        hi = np.searchsorted(bounds, r_e)
        cnt = hi - lo  # the segments [bounds[j], bounds[j + 1]) each range covers
        if not cnt.any():  # zero-length ranges only: they enclose no point of positive duration
            continue
        seg = np.arange(int(cnt.sum()), dtype=np.int64) + np.repeat(lo - np.cumsum(cnt) + cnt, cnt)
        # Per (segment, name): the latest end of that name's ranges covering the segment.
        sg = seg * n_g + np.repeat(rg, cnt)
        sg_e = np.repeat(r_e, cnt)
        o = np.lexsort((sg_e, sg))
        sg, sg_e = sg[o], sg_e[o]
        last = np.append(sg[1:] != sg[:-1], True)
        sg, sg_e = sg[last], sg_e[last]
        s_seg, s_g = sg // n_g, sg % n_g
        offs = np.searchsorted(s_seg, np.arange(len(bounds) + 1))
        # By a point's searchsorted(bounds, ts, "right") j (its segment is j - 1; none for
        # j = 0 or j = len(bounds)): the first of its (segment, name) entries and their number.
        first_at = np.concatenate(([0], offs[:-1]))
        count_at = np.concatenate(([0], np.diff(offs)[:-1], [0]))
        q_rows = p_rows if pts is None else p_rows[pts]
        q_ts = ts[q_rows]
        q_dur = p_dur if pts is None else p_dur[pts]
        j = np.searchsorted(bounds, q_ts, side="right")
        c = count_at[j]
        first = first_at[j]
        p_of: np.ndarray | None  # indices into q_rows; None: each once, in order
        if len(c) and c.max() <= 1:  # no segment covered by two names: one entry per point at most
            if c.min() == 1:
                ent, p_of, e_of = first, None, np.add(q_ts, q_dur, out=q_ts)  # (q_ts is not read again)
            else:
                p_of = np.flatnonzero(c)
                ent, e_of = first[p_of], q_ts[p_of] + q_dur[p_of]
        else:
            ent = np.arange(int(c.sum()), dtype=np.int64) + np.repeat(first - np.cumsum(c) + c, c)
            p_of = np.repeat(np.arange(len(c), dtype=np.int64), c)
            e_of = np.repeat(q_ts + q_dur, c)
        ok = e_of <= sg_e[ent]
        if not ok.all():
            sel = np.flatnonzero(ok)
            ent = ent[sel]
            p_of = sel if p_of is None else p_of[sel]
        # Back to positions in `launch`: through pts (this process's points), then valid.
        at = p_of if pts is None else (pts if p_of is None else pts[p_of])
        if at is None:  # every point, in order
            out_p.append(np.arange(len(q_rows), dtype=np.int64) if valid is None else valid)
        else:
            out_p.append(at if valid is None else valid[at])
        out_g.append(s_g[ent])
    if not out_p:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty.copy()
    if len(out_p) == 1:
        return out_p[0], out_g[0]
    # Several processes (threads), or zero-duration points: back in order.
    p_all, g_all = np.concatenate(out_p), np.concatenate(out_g)
    o = np.lexsort((g_all, p_all))
    return p_all[o], g_all[o]


def _one_value(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` (not empty) and ``b`` hold one value between them."""
    lo, hi = a.min(), a.max()
    return bool(lo == hi and (not len(b) or (b.min() == lo and b.max() == lo)))


def row_key(cols: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """One integer per distinct (pid[, tid]) of ``rows`` (equal keys, equal integers)."""
    if len(cols) == 1:
        return np.asarray(cols[0][rows], dtype=np.int64)
    return lk.row_ids(np.column_stack([c[rows] for c in cols]))[0] if len(rows) else np.empty(0, np.int64)


def _running_inside(
    cols: _Columns,
    acts: dict[str, np.ndarray],
    ann_rows: np.ndarray,
    gid: np.ndarray,
    a_start: np.ndarray,
    a_end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(name id, clipped start, clipped end, activity index) of activity parts inside a range
    on the range's own (device, stream)."""
    dev = acts["device"].astype(np.int64)
    stream = acts["stream"]
    lane_key = dev * (1 << 40) + stream
    order = np.lexsort((acts["ts_ns"], lane_key))
    k_lane = lane_key[order]
    k_start = acts["ts_ns"][order]
    k_end = acts["end_ns"][order]
    # Running max of ends within each lane (activities on a stream rarely overlap, but may).
    run_end = pd.Series(k_end).groupby(k_lane).cummax().to_numpy()
    a_lane = cols("device")[ann_rows].astype(np.int64) * (1 << 40) + cols("stream")[ann_rows]
    lane_lo = np.searchsorted(k_lane, a_lane, side="left")
    lane_hi = np.searchsorted(k_lane, a_lane, side="right")
    # Within the lane: candidates from the first activity whose running end passes the
    # range start to the last one starting before the range end.
    lo = np.empty(len(ann_rows), dtype=np.int64)
    hi = np.empty(len(ann_rows), dtype=np.int64)
    for_lane = np.unique(a_lane)
    for lane in for_lane.tolist():  # one step per (device, stream), not per event
        sel = np.flatnonzero(a_lane == lane)
        l0, l1 = int(lane_lo[sel[0]]), int(lane_hi[sel[0]])
        lo[sel] = l0 + np.searchsorted(run_end[l0:l1], a_start[sel], side="right")
        hi[sel] = l0 + np.searchsorted(k_start[l0:l1], a_end[sel], side="left")
    cnt = np.maximum(hi - lo, 0)
    ann_i = np.repeat(np.arange(len(ann_rows)), cnt)
    act_pos = np.arange(int(cnt.sum())) + np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
    s = np.maximum(k_start[act_pos], a_start[ann_i])
    e = np.minimum(k_end[act_pos], a_end[ann_i])
    ok = e > s
    return gid[ann_i[ok]], s[ok], e[ok], order[act_pos[ok]]


def _attributed(
    g: np.ndarray, start: np.ndarray, end: np.ndarray, act: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per name id: distinct activities, their summed (clipped) time, and the union length."""
    if len(g) == 0:
        zero = np.zeros(n, dtype=np.int64)
        return zero, zero.copy(), zero.copy()
    # An activity under two ranges of one name (nested, or pooled into "others") counts once.
    key = g * (int(act.max()) + 1) + act
    order = np.lexsort((-(end - start), key))
    first = np.concatenate(([True], key[order][1:] != key[order][:-1]))
    piece = order[first]  # the longest (clipped) part of each (name, activity)
    kernels = np.bincount(g[piece], minlength=n).astype(np.int64)
    kernel_ns = np.rint(np.bincount(g[piece], weights=(end - start)[piece].astype(np.float64), minlength=n)).astype(
        np.int64
    )
    busy = _grouped_union_length(g, start, end, n)
    return kernels, kernel_ns, busy


def _attributed_distinct(
    g: np.ndarray, start: np.ndarray, end: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_attributed` for pairs that are distinct (name id, activity) already and come
    in the activities' start order: no sort of the pairs."""
    if len(g) == 0:
        zero = np.zeros(n, dtype=np.int64)
        return zero, zero.copy(), zero.copy()
    kernels = np.bincount(g, minlength=n).astype(np.int64)
    kernel_ns = np.bincount(g, weights=(end - start).astype(np.float64), minlength=n)
    # Group by name keeping the start order (a stable sort of small integers is a radix
    # sort), then one running maximum over all groups: each group's times are shifted into
    # its own band, above every earlier group's, so the groups' unions do not mix.
    if (g[1:] < g[:-1]).any():  # (not when each name's activities follow the previous name's)
        o = np.argsort(g.astype(np.uint16) if n < 2**16 else g, kind="stable")
        g, start, end = g[o], start[o], end[o]
    lo = int(start.min())
    band = int(end.max()) - lo + 1
    if band * n < 2**62:
        shift = g * band
        s = start - lo
        s += shift
        run = end - lo
        run += shift
        np.maximum.accumulate(run, out=run)
        new = np.empty(len(g), dtype=bool)
        new[0] = True
        new[1:] = s[1:] > run[:-1]
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, len(g) - 1)
        busy = np.bincount(g[first], weights=(run[last] - s[first]).astype(np.float64), minlength=n)
    else:
        busy = _grouped_union_length(g, start, end, n).astype(np.float64)
    return kernels, np.rint(kernel_ns).astype(np.int64), np.rint(busy).astype(np.int64)


def _grouped_union_length(g: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Length of the union of the intervals of each group, vectorised over groups."""
    order = np.lexsort((start, g))
    g, start, end = g[order], start[order], end[order]
    run_end = pd.Series(end).groupby(g).cummax().to_numpy()
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (start[1:] > run_end[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(g) - 1)
    lengths = run_end[last] - start[first]
    return np.rint(np.bincount(g[first], weights=lengths.astype(np.float64), minlength=n)).astype(np.int64)
