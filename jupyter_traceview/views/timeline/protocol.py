"""The timeline's wire protocol, free of any UI package: initial state and command answers.

``tv.Timeline`` (an anywidget), ``tv.Dashboard`` and the Jupyter server (for the JupyterLab
Traces sidebar, over HTTP) answer the same four commands of the timeline front end
(``js/timeline/``) with the functions here, so that one TypeScript view works in every host:

========== ============================================== ==========================================
command    request                                        answer
========== ============================================== ==========================================
``_window``  ``{seq, lo, hi, width, rows, summaries,       JSON layout and one binary buffer
             pattern, name_colors, memory}``             (:func:`encode_window`)
``_details`` ``{rank, eid}``                               tooltip details (:meth:`TimelineIndex.details`)
``_find``    ``{pattern, t, direction, rows}``             the next/previous match
``_summary`` ``{lo, hi, ranks}``                           per-kind summary of a range
``_ranks``   ``{}``                                        the rank picker's presets
                                                           (:func:`.ranks.rank_presets`)
``_collective`` ``{rank, eid}``                            the kernel's collective instance on every
                                                           rank (:func:`.collective.collective_instance`)
========== ============================================== ==========================================

Errors are answered as ``{"error": message}`` (and no buffer), never raised. The messages are
typed in :mod:`.messages` (mirrored by ``js/timeline/messages.ts``).

Every size a client sends is bounded before anything is allocated: the window's width is
clamped to :data:`MAX_WIDTH` columns, lists of rows or ranks lose their duplicates and may hold
at most :data:`MAX_IDS` ids, times must be finite and are clamped to :data:`MAX_TIME_NS`, and a
search pattern is at most :data:`~jupyter_traceview.views.timeline.pattern.MAX_PATTERN_CHARS`
characters (and matched in linear time, see :mod:`~jupyter_traceview.views.timeline.pattern`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast

import numpy as np

from ...errors import OptionError, TraceSelectionError, TraceviewError
from ...model.trace import Trace
from ..colors import palette
from .collective import collective_instance
from .commands import COMMANDS
from .index import LevelOfDetail, TimelineIndex, Window
from .memory import MEMORY_SERIES, MemoryIndex, MemoryWindow
from .messages import (
    Answer,
    CollectiveInstance,
    CollectiveRequest,
    CommandError,
    DetailsRequest,
    EventDetails,
    FindRequest,
    FindResult,
    FoldRequest,
    FoldSummary,
    LaneMeta,
    Layout,
    MemorySlice,
    RangeSummary,
    RankPresets,
    RowMeta,
    RowSlice,
    StepMark,
    SummaryRequest,
    SummarySlice,
    TimelineModel,
    WindowError,
    WindowRequest,
    WindowResponseMeta,
    message_of,
)
from .pattern import check_pattern
from .ranks import initial_cpu_collapsed, rank_presets

__all__ = [
    "COLLAPSE_ABOVE",
    "COMMANDS",
    "MAX_IDS",
    "MAX_TIME_NS",
    "MAX_WIDTH",
    "answer",
    "answer_details",
    "answer_find",
    "answer_fold",
    "answer_ranks",
    "answer_summary",
    "answer_window",
    "encode_window",
    "timeline_state",
]

#: Ranks collapsed to their summary row when the timeline opens, above this many ranks.
COLLAPSE_ABOVE = 16
#: The most pixel columns a window is answered at (a 4K screen at twice the density, plus the
#: front end's fetch margin, stays under it); a wider request is answered at this width.
MAX_WIDTH = 16_384
#: The most row or rank ids one request may list (after dropping duplicates).
MAX_IDS = 100_000
#: Times beyond +-this many ns (about 73 years) are clamped: int64 arithmetic stays exact.
MAX_TIME_NS = 2**61


def check_ranks(trace: Trace, ranks: Iterable[int] | int) -> list[int]:
    """``ranks`` as a sorted list, after checking that the trace holds each of them."""
    wanted = [int(r) for r in ([ranks] if isinstance(ranks, (int, np.integer)) else ranks)]
    for r in wanted:
        if r not in trace.ranks:
            raise TraceSelectionError.unknown("rank", r, trace.ranks)
    return sorted(set(wanted))


def timeline_state(
    trace: Trace,
    index: TimelineIndex | None = None,
    *,
    ranks: Iterable[int] | None = None,
    cpu: bool = True,
    color_by: str = "kind",
    height: int = 0,
    height_key: str = "",
    focus: int | None = None,
) -> TimelineModel:
    """The timeline's synced state when it opens (JSON-able; ``js/timeline/messages.ts``).

    The traits of :class:`jupyter_traceview.Timeline`, by name: what a host that is not an
    anywidget (the Traces sidebar) hands to the TypeScript view as its local model. ``focus``
    is a rank to emphasise (scrolled to and highlighted; added to ``ranks`` if they lack it).
    Above :data:`~.ranks.CPU_COLLAPSE_ABOVE` ranks shown, each rank's CPU threads open folded
    into one row (``cpu_collapsed``).
    ``height`` 0 fits the lanes shown (``js/timeline/resize.ts``); ``height_key`` names
    where a dragged height is remembered (the notebook's path; "" for the page's).
    """
    if height < 0:
        raise OptionError(f"height must be a number of pixels >= 0 (0: fit the lanes shown), got {height}")
    ix = index or TimelineIndex.of(trace)
    shown = check_ranks(trace, ranks) if ranks is not None else list(trace.ranks)
    if focus is not None:
        focus = check_ranks(trace, [focus])[0]
        if focus not in shown:
            shown = sorted([*shown, focus])
    # Fit shows every event, zero-length markers included (the index bins drawn events
    # only): the span of each rank tv.summary reports (trace_span_ns) lies inside it.
    end = float(max(ix.end_ns, trace._extent_ns() if ix.t0_ns == trace.t0_ns else 0, 1))
    lo, hi = 0.0, end
    if trace.window is not None:
        lo = float(max(trace.window[0] - ix.t0_ns, 0))
        hi = float(min(trace.window[1] - ix.t0_ns, hi))
    return {
        "_palette": palette(),
        "_rows": [message_of(r, RowMeta) for r in ix.rows],
        "_lanes": [message_of(ln, LaneMeta) for ln in ix.lanes],
        "_memory": list(MemoryIndex.of(trace).lanes),
        "_all_ranks": list(trace.ranks),
        "_steps": [StepMark(step=st, start=float(a), end=float(b)) for st, a, b in ix.steps()],
        "_span": [0.0, end],
        "_kinds": ix.kinds_present,
        "_t0_ns": str(ix.t0_ns),
        "_search_count": 0,
        "x_range": [lo, hi],
        "ranks": shown,
        "collapsed": list(trace.ranks) if len(trace.ranks) > COLLAPSE_ABOVE else [],
        "cpu_collapsed": initial_cpu_collapsed(shown),
        "pinned": [],
        "focus_rank": focus,
        "show_cpu": bool(cpu),
        "color_by": cast(Literal["kind", "name"], color_by),
        "search": "",
        "selected_event": {},
        "selected_range": [],
        "height": int(height),
        "_height_key": str(height_key),
    }


def _pack(sections: dict[str, np.ndarray]) -> tuple[Layout, bytes]:
    """Concatenate arrays into one buffer, each 8-byte aligned: (layout, bytes).

    ``layout[name] = [byte offset, length, dtype]`` with dtype one of f8, f4, u4, u1.
    """
    layout: Layout = {}
    chunks: list[bytes] = []
    off = 0
    for name, arr in sections.items():
        arr = np.ascontiguousarray(arr)
        pad = (-off) % 8
        if pad:
            chunks.append(b"\0" * pad)
            off += pad
        layout[name] = (off, len(arr), arr.dtype.str.lstrip("<|="))
        data = arr.tobytes()
        chunks.append(data)
        off += len(data)
    return layout, b"".join(chunks)


def encode_window(
    index: TimelineIndex,
    win: Window,
    *,
    pattern: str | None = None,
    memory: list[MemoryWindow] | None = None,
    seq: int = 0,
) -> tuple[WindowResponseMeta, bytes]:
    """The binary answer to a window request: JSON metadata and one buffer.

    Raw events of all rows are concatenated (sections ``ev_start``, ``ev_dur`` and ``ev_eid``
    as float64, ``ev_name`` as uint32 indices into ``names``, ``ev_kind`` as uint8 and, with a
    ``pattern``, ``ev_match`` as uint8: 1 where the event's name or argument text matches); binned
    rows, then summaries, then folded CPU rows, are ``width`` columns each in ``bin_frac`` (float32 busy fraction),
    ``bin_kind``, ``bin_count`` and, when asked for, ``bin_match`` and ``bin_color``. Memory
    lanes (``memory``) are ``width`` columns each in ``mem_<series>_max`` and
    ``mem_<series>_end`` (float64 bytes, NaN before the first record; see
    :mod:`~jupyter_traceview.views.timeline.memory`).
    """
    width = len(win.edges) - 1
    raw = [r for r in win.rows if r.mode == "raw"]
    binned = [r for r in win.rows if r.mode == "bins"] + win.summaries + win.folds
    pos = (
        np.concatenate([r.events for r in raw if r.events is not None]) if raw else np.empty(0, dtype=np.int64)
    ).astype(np.int64)
    cols = index.event_columns(pos)
    uniq, local = np.unique(cols["name"], return_inverse=True)
    rows_meta: list[RowSlice] = []
    off = 0
    bin_k = 0
    for r in win.rows:
        if r.mode == "raw":
            n = 0 if r.events is None else len(r.events)
            rows_meta.append(RowSlice(row=r.row, mode="raw", offset=off, count=n))
            off += n
        else:
            rows_meta.append(RowSlice(row=r.row, mode="bins", offset=bin_k * width, count=width))
            bin_k += 1
    sums_meta: list[SummarySlice] = []
    for s in win.summaries:
        sums_meta.append(SummarySlice(rank=s.row, offset=bin_k * width, count=width))
        bin_k += 1
    folds_meta: list[SummarySlice] = []
    for f in win.folds:
        folds_meta.append(SummarySlice(rank=f.row, offset=bin_k * width, count=width))
        bin_k += 1
    bw = np.diff(win.edges).astype(np.float64)
    fracs = [
        np.divide(r.coverage_ns, bw, out=np.zeros(width), where=bw > 0).astype(np.float32)
        for r in binned
        if r.coverage_ns is not None
    ]
    sections: dict[str, np.ndarray] = {
        "ev_start": cols["start"].astype(np.float64),
        "ev_dur": (cols["end"] - cols["start"]).astype(np.float64),
        "ev_eid": cols["eid"].astype(np.float64),
        "ev_name": local.astype(np.uint32).reshape(-1),
        "ev_kind": cols["kind"].astype(np.uint8),
        "bin_frac": np.concatenate(fracs) if fracs else np.empty(0, dtype=np.float32),
        "bin_kind": _cat([r.kind for r in binned], np.uint8),
        "bin_count": _cat([r.count for r in binned], np.uint32),
    }
    if pattern:
        # Per raw event: does its name or its argument text match (views/timeline/args.py).
        sections["ev_match"] = _cat(
            [r.matches if r.matches is not None else np.zeros(len(r.events or ()), bool) for r in raw], np.uint8
        )
    has_match = any(r.matches is not None for r in binned)
    if has_match:
        sections["bin_match"] = _cat(
            [r.matches if r.matches is not None else np.zeros(width, np.uint32) for r in binned], np.uint32
        )
    if any(r.name_color is not None for r in binned):
        sections["bin_color"] = _cat(
            [r.name_color if r.name_color is not None else np.full(width, 255, np.uint8) for r in binned], np.uint8
        )
    mem_meta: list[MemorySlice] = []
    for j, c in enumerate(memory or []):
        mem_meta.append(MemorySlice(memory=c.id, offset=j * width, count=width))
    for name in MEMORY_SERIES:
        for part, k in (("max", 0), ("end", 1)):
            got = [c.series[name][k] for c in memory or []]
            if got:
                sections[f"mem_{name}_{part}"] = np.concatenate(got).astype(np.float64)
    layout, buf = _pack(sections)
    names = [index.names[i] for i in uniq.tolist()]
    meta = WindowResponseMeta(
        seq=seq,
        lo=win.lo,
        hi=win.hi,
        width=width,
        rows=rows_meta,
        summaries=sums_meta,
        memory=mem_meta,
        names=names,
        name_colors=index.name_colors[uniq].tolist() if len(uniq) else [],
        layout=layout,
        kernel_ms=0.0,
    )
    meta["folds"] = folds_meta
    if pattern:
        meta["name_match"] = index.name_mask(pattern)[uniq].tolist() if len(uniq) else []
    return meta, buf


def _cat(parts: list[np.ndarray | None], dtype: Any) -> np.ndarray:
    arrays = [p for p in parts if p is not None]
    return np.concatenate(arrays).astype(dtype) if arrays else np.empty(0, dtype=dtype)


_ERRORS = (TraceviewError, ValueError, KeyError, TypeError, OverflowError)


def answer(
    index: TimelineIndex, command: str, msg: Mapping[str, Any], *, lod: LevelOfDetail | None = None
) -> tuple[Answer, list[bytes]]:
    """The answer to one timeline command: ``(JSON message, binary buffers)``.

    ``command`` is one of :data:`COMMANDS`; ``msg`` its request as received (JSON from the
    front end, checked here). A malformed request is answered with ``{"error": ...}`` (the
    front end shows it), an unknown command raises ValueError.
    """
    # The requests are untrusted JSON: each field is checked where it is read.
    if command == "_window":
        return answer_window(index, cast(WindowRequest, msg), lod=lod)
    if command == "_details":
        return answer_details(index, cast(DetailsRequest, msg))
    if command == "_find":
        return answer_find(index, cast(FindRequest, msg))
    if command == "_ranks":
        return answer_ranks(index)
    if command == "_summary":
        return answer_summary(index, cast(SummaryRequest, msg))
    if command == "_collective":
        return answer_collective(index, cast(CollectiveRequest, msg))
    if command == "_fold":
        return answer_fold(index, cast(FoldRequest, msg))
    raise ValueError(f"unknown timeline command {command!r}; commands are {', '.join(COMMANDS)}")


def answer_ranks(index: TimelineIndex) -> tuple[RankPresets | CommandError, list[bytes]]:
    """``_ranks``: the rank picker's presets (:func:`.ranks.rank_presets`)."""
    try:
        return rank_presets(index.trace), []
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []


def answer_details(index: TimelineIndex, msg: DetailsRequest) -> tuple[EventDetails | CommandError, list[bytes]]:
    """``_details``: the event's details (:meth:`TimelineIndex.details`)."""
    try:
        return index.details(int(msg["rank"]), int(msg["eid"])), []
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []


def answer_summary(index: TimelineIndex, msg: SummaryRequest) -> tuple[RangeSummary | CommandError, list[bytes]]:
    """``_summary``: what happened in the range (:meth:`TimelineIndex.range_summary`)."""
    try:
        lo, hi = _span(msg)
        ranks = _ids(msg, "ranks") or None
        return index.range_summary(lo, hi, ranks=ranks), []
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []


def answer_fold(index: TimelineIndex, msg: FoldRequest) -> tuple[FoldSummary | CommandError, list[bytes]]:
    """``_fold``: what a rank's CPU threads do in a range, for the folded row (:meth:`TimelineIndex.fold_summary`)."""
    try:
        lo, hi = _span(msg)
        return index.fold_summary(int(msg["rank"]), lo, hi), []
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []


def answer_collective(
    index: TimelineIndex, msg: CollectiveRequest
) -> tuple[CollectiveInstance | CommandError, list[bytes]]:
    """``_collective``: a communication kernel's instance on every rank (:func:`.collective.collective_instance`)."""
    try:
        return collective_instance(index, int(msg["rank"]), int(msg["eid"])), []
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []


def _time(msg: Mapping[str, Any], key: str) -> float:
    """A finite time from the request, clamped to +-:data:`MAX_TIME_NS`."""
    t = float(msg[key])
    if not math.isfinite(t):
        raise ValueError(f"{key} must be a finite time in ns, got {msg[key]!r}")
    return min(max(t, -MAX_TIME_NS), MAX_TIME_NS)


def _span(msg: Mapping[str, Any]) -> tuple[int, int]:
    """``[lo, hi)`` of a request, in whole ns, ``hi > lo``."""
    lo = math.floor(_time(msg, "lo"))
    hi = max(math.ceil(_time(msg, "hi")), lo + 1)
    return lo, hi


def _ids(msg: Mapping[str, Any], key: str) -> list[int] | None:
    """The ids listed under ``key`` (None when absent), duplicates dropped, at most :data:`MAX_IDS`."""
    raw = msg.get(key)
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"{key} must be a list of ids, got {type(raw).__name__}")
    if len(raw) > 4 * MAX_IDS:
        raise ValueError(f"{key}: {len(raw):,} ids; at most {MAX_IDS:,} may be asked for at once")
    ids = list(dict.fromkeys(int(r) for r in raw))
    if len(ids) > MAX_IDS:
        raise ValueError(f"{key}: {len(ids):,} ids; at most {MAX_IDS:,} may be asked for at once")
    return ids


def _width(msg: Mapping[str, Any]) -> int:
    """The window's width, clamped to at most :data:`MAX_WIDTH` columns (under 1 is refused by the index)."""
    w = float(msg["width"])
    if not math.isfinite(w):
        raise ValueError(f"width must be a number of pixels, got {msg['width']!r}")
    return int(min(w, MAX_WIDTH))


def answer_window(
    index: TimelineIndex, msg: WindowRequest, *, lod: LevelOfDetail | None = None
) -> tuple[WindowResponseMeta | WindowError, list[bytes]]:
    """``_window``: the rows and summaries of the window, JSON layout and one buffer (:func:`encode_window`)."""
    t = time.perf_counter()
    at_ms = time.time() * 1e3
    cpu = time.process_time()
    seq = msg.get("seq")
    try:
        lo, hi = _span(msg)
        width = _width(msg)
        rows = _ids(msg, "rows") or []
        summaries = _ids(msg, "summaries") or []
        pattern = check_pattern(str(msg.get("pattern") or "")) or None
        win = index.window(
            lo,
            hi,
            width,
            rows=rows,
            summaries=summaries,
            lod=lod or LevelOfDetail(),
            pattern=pattern,
            with_name_colors=bool(msg.get("name_colors", False)),
            folds=_ids(msg, "folds") or [],
        )
        wanted = _ids(msg, "memory") or []
        memory = MemoryIndex.of(index.trace).window(win.edges, wanted) if wanted else None
        meta, buf = encode_window(index, win, pattern=pattern, memory=memory, seq=seq)
    except _ERRORS as exc:
        return WindowError(seq=seq, error=str(exc)), []
    meta["kernel_ms"] = (time.perf_counter() - t) * 1e3
    meta["kernel_cpu_ms"] = (time.process_time() - cpu) * 1e3
    meta["kernel_at_ms"] = at_ms
    return meta, [buf]


def answer_find(index: TimelineIndex, msg: FindRequest) -> tuple[FindResult | CommandError, list[bytes]]:
    """``_find``: the next (``direction`` >= 0) or previous match of the pattern after ``t``."""
    try:
        pattern = check_pattern(str(msg["pattern"]))
        pos = index.find(
            pattern,
            _time({"t": msg.get("t", -1)}, "t"),
            direction=1 if int(msg.get("direction", 1)) >= 0 else -1,
            rows=_ids(msg, "rows"),
        )
    except _ERRORS as exc:
        return CommandError(error=str(exc)), []
    if pos is None:
        return FindResult(found=False), []
    return FindResult(
        found=True,
        rank=int(index.rank[pos]),
        eid=int(index.eid[pos]),
        row=index.row_at(pos),
        start=int(index.start[pos]),
        end=int(index.end[pos]),
        name=index.names[int(index.name[pos])],
    ), []
