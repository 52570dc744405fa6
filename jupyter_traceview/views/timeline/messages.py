"""The timeline's messages, typed: its synced state, the command requests and their answers.

Mirrored by the TypeScript interfaces of ``js/timeline/messages.ts`` (same names, same snake_case
keys; ``tests/views/test_timeline_messages.py`` compares the keys) and documented in
``docs/frontend.md`` ("The timeline's protocol"). :mod:`.protocol` builds them; ``tv.Timeline``
(its traits), ``tv.Dashboard`` and the Jupyter server send them. Times are float ns relative
to the trace's origin (``_t0_ns``). Absolute ns travel as strings (exact in JavaScript) in
every protocol: here, the dashboard's (``DashboardPayload.t0_ns``) and the server's
(``RunFigures.t0_ns``).

A key that TypeScript marks optional (``key?:``) is a key of the ``total=False`` class here;
the required ones sit in a private base class (``_Name``), as in
:mod:`jupyter_traceview.dashboard.protocol`.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, TypeVar, cast, get_type_hints

from ..colors import NamePalette, Palette, PaletteKind, ThemeColor
from .ranks import RankPresets, SlowRank, StragglerRank

__all__ = [
    "BusyTotal",
    "CollectiveArrival",
    "CollectiveInfo",
    "CollectiveInstance",
    "CollectiveRank",
    "CollectiveRequest",
    "CommandError",
    "DetailsRequest",
    "EventDetails",
    "FindRequest",
    "FindResult",
    "FoldName",
    "FoldRequest",
    "FoldSummary",
    "KindBusy",
    "LaneMeta",
    "LaunchInfo",
    "MemoryMeta",
    "MemorySlice",
    "NamePalette",
    "OperatorRef",
    "Palette",
    "PaletteKind",
    "RangeSummary",
    "RankPresets",
    "RowMeta",
    "RowSlice",
    "SelectedEvent",
    "SlowRank",
    "StepMark",
    "StragglerRank",
    "SummaryRequest",
    "SummarySlice",
    "ThemeColor",
    "TimelineModel",
    "TopName",
    "WindowError",
    "WindowRequest",
    "WindowResponseMeta",
    "message_of",
]

_T = TypeVar("_T")

RowType = Literal["gpu", "cpu"]
#: ``[byte offset, length, dtype]`` of each section of a window's buffer (dtype f8, f4, u4 or u1).
Layout = dict[str, tuple[int, int, str]]


_KEYS: dict[object, tuple[str, ...]] = {}


def _keys(message: object) -> tuple[str, ...]:
    keys = _KEYS.get(message)
    if keys is None:
        keys = _KEYS[message] = tuple(get_type_hints(message))
    return keys


def message_of(obj: object, message: type[_T]) -> _T:
    """``message`` (a TypedDict) filled from the attributes of the same names of ``obj``.

    The index's dataclasses (``layout.RowInfo``, ``layout.LaneInfo``) name the fields of
    their message (``RowMeta``, ``LaneMeta``) once: this copies them (tuples as lists, as
    JSON has them); tests/views/test_timeline_messages.py checks that the names agree.
    """
    out: dict[str, Any] = {}
    for key in _keys(message):
        value = getattr(obj, key)
        out[key] = list(value) if isinstance(value, tuple) else value
    return cast(_T, out)


# ---------------------------------------------------------------------------------------
# The synced state (tv.Timeline's traits; a LocalModel's values in the Traces sidebar)


class RowMeta(TypedDict):
    """A row: one lane (GPU stream or CPU thread) at one nesting depth."""

    id: int
    rank: int
    lane: int
    depth: int
    type: RowType
    events: int


class LaneMeta(TypedDict):
    """A GPU stream or CPU thread of a rank, and its rows."""

    id: int
    rank: int
    type: RowType
    label: str
    device: int
    stream: int
    pid: int
    tid: int
    rows: list[int]


class StepMark(TypedDict):
    """A ProfilerStep span (earliest start and latest end over the ranks)."""

    step: int
    start: float
    end: float


class MemoryMeta(TypedDict):
    """A memory lane: one device of one rank, or a hardware counter lane: one metric of one
    GPU (built by :class:`.memory.RankMemory`; times relative ns)."""

    id: int
    rank: int
    device_type: str
    device: int
    #: ``memory · CUDA:0`` (``GPU 0 · SM Active (%)`` for a counter): the lane's label.
    label: str
    #: ``memory`` (allocator records) or ``counter`` (PM sampling's samples of one metric).
    kind: Literal["memory", "counter"]
    #: The values' unit: ``bytes`` for memory; ``%`` or ``""`` (none) for a counter.
    unit: str
    #: Records (allocations and frees; a counter's samples) in the series.
    records: int
    #: The largest allocated value (a counter's largest value) and when it was first reached.
    peak_allocated: float
    peak_ts: int
    #: The largest reserved value (0 for the CPU allocator) and when it was first reached.
    peak_reserved: int
    peak_reserved_ts: int
    #: First and last record.
    start: int
    end: int


class SelectedEvent(TypedDict, total=False):
    """The selected event as the front end writes it (``{}`` when none)."""

    rank: int
    eid: int


class TimelineModel(TypedDict):
    """The timeline's synced state (:func:`.protocol.timeline_state`; ``tv.Timeline``'s traits)."""

    _palette: Palette
    _rows: list[RowMeta]
    _lanes: list[LaneMeta]
    _memory: list[MemoryMeta]
    _all_ranks: list[int]
    _steps: list[StepMark]
    _span: list[float]
    _kinds: list[str]
    _t0_ns: str
    _search_count: int
    x_range: list[float]
    ranks: list[int]
    collapsed: list[int]
    cpu_collapsed: list[int]
    pinned: list[int]
    focus_rank: int | None
    show_cpu: bool
    color_by: Literal["kind", "name"]
    search: str
    selected_event: SelectedEvent
    selected_range: list[float]
    height: int
    _height_key: str


# ---------------------------------------------------------------------------------------
# Commands: requests


class _WindowRequest(TypedDict):
    seq: int
    lo: float
    hi: float
    width: float
    rows: list[int]
    summaries: list[int]
    pattern: str
    name_colors: bool


class WindowRequest(_WindowRequest, total=False):
    """``_window`` request: the rows and summaries of ``[lo, hi)`` at ``width`` pixel columns;
    ``memory``: the memory lanes wanted (ids of ``_memory``); ``folds``: the ranks
    whose folded CPU row is wanted (views/timeline/fold.py)."""

    memory: list[int]
    folds: list[int]


class DetailsRequest(TypedDict):
    """``_details`` request: one event."""

    rank: int
    eid: int


class FindRequest(TypedDict):
    """``_find`` request: the next (``direction`` 1) or previous (-1) match of ``pattern`` after ``t``."""

    pattern: str
    t: float
    direction: int
    rows: list[int]


class FoldRequest(TypedDict):
    """``_fold`` request: what ``rank``'s CPU threads do in ``[lo, hi)`` (the folded row's tooltip)."""

    rank: int
    lo: float
    hi: float


class SummaryRequest(TypedDict):
    """``_summary`` request: what happened in ``[lo, hi)`` on ``ranks``."""

    lo: float
    hi: float
    ranks: list[int]


# ---------------------------------------------------------------------------------------
# Commands: answers


class CommandError(TypedDict):
    """The answer to a malformed ``_details``, ``_find`` or ``_summary`` request."""

    error: str


class WindowError(TypedDict):
    """The answer to a malformed ``_window`` request (``seq``: the request's)."""

    seq: int
    error: str


class RowSlice(TypedDict):
    """Where a row's data sits in a window's sections."""

    row: int
    mode: Literal["raw", "bins"]
    offset: int
    count: int


class MemorySlice(TypedDict):
    """Where a memory lane's columns sit in the ``mem_*`` sections."""

    memory: int
    offset: int
    count: int


class SummarySlice(TypedDict):
    """Where a rank's summary row sits in a window's bin sections."""

    rank: int
    offset: int
    count: int


class _WindowResponseMeta(TypedDict):
    seq: int
    lo: int
    hi: int
    width: int
    rows: list[RowSlice]
    summaries: list[SummarySlice]
    names: list[str]
    name_colors: list[int]
    layout: Layout
    kernel_ms: float


class WindowResponseMeta(_WindowResponseMeta, total=False):
    """``_window`` answer: the buffer's layout and what each row holds (:func:`.protocol.encode_window`).

    ``name_match`` (per name: does it match the request's pattern) only with a pattern;
    ``memory`` where the memory lanes asked for sit, ``folds`` where the folded CPU rows
    asked for sit (in the bin sections, after the summaries). ``kernel_cpu_ms`` (the answering
    process's CPU time for it) and ``kernel_at_ms`` (wall clock, ms since the epoch, when the
    owner started answering) let the front end tell queueing from work (the frame benchmark).
    """

    memory: list[MemorySlice]
    folds: list[SummarySlice]
    name_match: list[bool]
    kernel_cpu_ms: float
    kernel_at_ms: float


class CollectiveRequest(TypedDict):
    """``_collective`` request: a communication kernel."""

    rank: int
    eid: int


class CollectiveRank(TypedDict):
    """One rank's part of a collective instance (ns relative to the trace's origin)."""

    rank: int
    start: int
    end: int
    eid: int
    kernels: int
    row: int | None


class CollectiveArrival(TypedDict):
    """The first or the last rank to arrive at a collective instance."""

    rank: int
    start: int


class _CollectiveInstance(TypedDict):
    found: bool


class CollectiveInstance(_CollectiveInstance, total=False):
    """``_collective`` answer (:func:`.collective.collective_instance`): ``found`` always; with
    ``found`` False a ``reason`` (and maybe the ``key``), else every other key."""

    reason: str
    key: str
    collective: str
    matched_by: Literal["seq", "order"]
    ranks: list[CollectiveRank]
    first: CollectiveArrival
    last: CollectiveArrival
    wait_ns: int
    consistent: bool


class CollectiveInfo(TypedDict):
    """The collective of a communication kernel."""

    collective: str
    dtype: str | None
    in_nelems: int
    out_nelems: int
    group_size: int


class LaunchInfo(TypedDict):
    """The CPU call that launched a GPU activity (``row``: None if not drawn)."""

    eid: int
    name: str
    start: int
    dur_ns: int
    row: int | None


class OperatorRef(TypedDict):
    """The operator around a launch, or the parent of a CPU event."""

    eid: int
    name: str


class _EventDetails(TypedDict):
    rank: int
    eid: int
    name: str
    kind: str
    event_kind: str
    start: int
    #: The event's start, absolute ns as a string (exact in JavaScript), as ``_t0_ns``.
    start_ns: str
    dur_ns: int
    device: int
    stream: int
    pid: int
    tid: int
    step: int
    row: int | None


class EventDetails(_EventDetails, total=False):
    """``_details`` answer: what the tooltip and the selection show (:meth:`TimelineIndex.details`)."""

    grid: list[int]
    block: list[int]
    registers_per_thread: int
    shared_memory_bytes: int
    occupancy_pct: float
    bytes: int
    bandwidth_gbps: float
    copy_kind: str
    collective: CollectiveInfo
    launch: LaunchInfo
    operator: OperatorRef


class _FindResult(TypedDict):
    found: bool


class FindResult(_FindResult, total=False):
    """``_find`` answer: the match (every key) or ``{"found": false}``."""

    rank: int
    eid: int
    row: int
    start: int
    end: int
    name: str


class BusyTotal(TypedDict):
    """Time covered by any kind in a range (overlaps counted once), and events overlapping it."""

    busy_ns: int
    pct: float
    events: int


class KindBusy(TypedDict):
    """One colour kind's share of a range."""

    kind: str
    busy_ns: int
    pct: float
    events: int


class TopName(TypedDict):
    """A name taking much (clipped) time in a range; ``short``: shortened as in the charts."""

    name: str
    short: str
    time_ns: int


class FoldName(TypedDict):
    """A name taking much (clipped) time on a rank's folded CPU threads; ``events``: how many."""

    name: str
    short: str
    time_ns: int
    events: int


class FoldSummary(TypedDict):
    """``_fold`` answer: a rank's CPU threads in a range (:meth:`TimelineIndex.fold_summary`).

    ``threads``: the rank's CPU threads; ``active``: those working in the range; ``busy_ns``:
    time any works; ``thread_ns``: work time summed over threads; ``events``: work events
    overlapping the range; ``top``: the names taking most time.
    """

    rank: int
    lo: int
    hi: int
    threads: int
    active: int
    busy_ns: int
    thread_ns: int
    events: int
    top: list[FoldName]


class RangeSummary(TypedDict):
    """``_summary`` answer: what happened in a range, per kind (:meth:`TimelineIndex.range_summary`)."""

    lo: int
    hi: int
    ranks: list[int]
    source: Literal["gpu", "cpu", "mixed"]
    all: BusyTotal
    kinds: list[KindBusy]
    top: list[TopName]


#: Any answer of a timeline command.
Answer = (
    WindowResponseMeta
    | WindowError
    | EventDetails
    | FindResult
    | RangeSummary
    | FoldSummary
    | RankPresets
    | CollectiveInstance
    | CommandError
)
