"""Per-rank data as readers produce it: metadata and the schema tables.

A table of a :class:`RankData` is a frame, or a :class:`Deferred` that builds it on first
use: the cache (``loading/cache.py``) checks a rank's files when it loads them and builds
the pandas frames only when an analysis first reads them. To everything that reads
``rank_data.events`` the two are the same: the attribute is always the frame (built once,
whichever thread asks first), and a rank pickles with its frames built.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, overload

import pandas as pd

from .schema import OP_ARGS_COLUMNS, categorical, empty_counters_table, empty_memory_table

__all__ = ["Deferred", "RankData", "RankMeta", "built", "empty_op_args", "replaced", "when_built"]


@dataclass(frozen=True)
class RankMeta:
    """What a rank's trace file says about itself (besides its events)."""

    #: The rank (``distributedInfo.rank``, else from the file name, else 0).
    rank: int
    #: The file it was read from.
    path: str
    #: Where the rank number came from: ``distributedInfo``, ``file name``, ``process name``,
    #: ``pid map``, ``default``, or ``order`` (Nsight exports, numbered in file order).
    rank_source: str = "default"
    #: ``distributedInfo.world_size``, if recorded.
    world_size: int | None = None
    #: ``distributedInfo.backend`` (nccl, gloo, ...), if recorded.
    backend: str | None = None
    #: The whole ``distributedInfo`` object (process-group configuration included).
    distributed_info: dict[str, Any] = field(default_factory=dict)
    #: ``deviceProperties``: one dict per visible device, as recorded.
    device_properties: tuple[dict[str, Any], ...] = ()
    #: Kineto's ``schemaVersion``.
    schema_version: int | None = None
    #: ``baseTimeNanoseconds``: added to every timestamp (0 for traces with absolute times).
    base_time_ns: int = 0
    #: ``traceName`` as recorded.
    trace_name: str | None = None
    #: "us" when every timestamp is a whole microsecond, "ns" for ns-resolution traces.
    ts_precision: str = "us"
    #: Start and end of the profiler's window (Kineto's "Trace" span), ns; None if absent.
    profiler_start_ns: int | None = None
    profiler_end_ns: int | None = None
    #: Process names and labels from metadata events, by pid.
    process_names: dict[int, str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    #: Thread names from metadata events: (pid, tid, name) triples.
    thread_names: tuple[tuple[int, int, str], ...] = ()
    #: Events not kept: counts by reason (flow events, counters, malformed events dropped, ...).
    skipped: dict[str, int] = field(default_factory=dict)
    #: Other top-level fields of the file (versions, profiler options).
    extra: dict[str, Any] = field(default_factory=dict)
    #: The reader that produced it ("kineto", "nsys" or "jax").
    source_format: str = "kineto"

    def device_props(self, device: int) -> dict[str, Any] | None:
        """The ``deviceProperties`` entry of device ``device``; where no entry has its id
        (a trace whose kernels run on a device id the list does not hold, as ROCm traces
        of a remapped ``HIP_VISIBLE_DEVICES`` record), the trace's only device: the one entry,
        or the first of entries that all name the same model. None if neither."""
        props = self.device_properties
        for p in props:
            if p.get("id") == device:
                return p
        if props and len({str(p.get("name", "")) for p in props}) == 1:
            return props[0]
        return None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (for the cache; it shares this object's dicts: dump it, do not change it)."""
        # Not dataclasses.asdict: its deep copy of every thread name was most of a cache write's metadata.
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["process_names"] = [[k, v] for k, v in self.process_names.items()]
        d["process_labels"] = [[k, v] for k, v in self.process_labels.items()]
        d["thread_names"] = [list(t) for t in self.thread_names]
        d["device_properties"] = list(self.device_properties)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RankMeta:
        d = dict(d)
        d["process_names"] = {int(k): v for k, v in d.get("process_names", [])}
        d["process_labels"] = {int(k): v for k, v in d.get("process_labels", [])}
        d["thread_names"] = tuple((int(p), int(t), str(n)) for p, t, n in d.get("thread_names", []))
        d["device_properties"] = tuple(d.get("device_properties", ()))
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


class Deferred:
    """A table built on first use, once (the first thread to ask builds it, the others wait),
    then kept. It pickles and copies as its table: a worker never gets a half-built one.

    ``build`` must not read the table it builds.
    """

    __slots__ = ("_build", "_lock", "_table", "_then")

    def __init__(self, build: Callable[[], pd.DataFrame]) -> None:
        self._build: Callable[[], pd.DataFrame] | None = build
        self._table: pd.DataFrame | None = None
        self._lock = threading.Lock()
        self._then: list[Callable[[pd.DataFrame], None]] = []

    @property
    def built(self) -> bool:
        """Whether the table has been built."""
        return self._table is not None

    def get(self) -> pd.DataFrame:
        """The table (built now if it was not)."""
        table = self._table
        if table is None:
            with self._lock:
                table = self._table
                if table is None:
                    assert self._build is not None  # set until the table is
                    table = self._build()
                    for fn in self._then:  # before the table is seen by other threads
                        fn(table)
                    self._table, self._build, self._then = table, None, []
        return table

    def then(self, fn: Callable[[pd.DataFrame], None]) -> None:
        """Call ``fn(table)`` when the table is built (now, if it is)."""
        with self._lock:
            if self._table is None:
                self._then.append(fn)
                return
        fn(self._table)

    def __reduce__(self) -> tuple[Callable[[pd.DataFrame], pd.DataFrame], tuple[pd.DataFrame]]:
        return (_same, (self.get(),))


def _same(table: pd.DataFrame) -> pd.DataFrame:
    return table


#: The default of a table field (its descriptor then builds the table): an empty table.
_EMPTY: Any = type("_EmptyTable", (), {"__repr__": lambda self: "<empty table>"})()


class _Table:
    """A table field of :class:`RankData`: set to a frame or a :class:`Deferred`, read as the frame."""

    def __init__(self, empty: Callable[[], pd.DataFrame] | None = None) -> None:
        self._empty = empty
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Any: ...
    @overload
    def __get__(self, obj: RankData, owner: type | None = None) -> pd.DataFrame: ...
    def __get__(self, obj: RankData | None, owner: type | None = None) -> Any:
        if obj is None:  # on the class: the field's default, for dataclasses
            if self._empty is None:
                raise AttributeError(self._name)
            return _EMPTY
        value = obj.__dict__[self._name]
        return value.get() if isinstance(value, Deferred) else value

    def __set__(self, obj: RankData, value: pd.DataFrame | Deferred) -> None:
        if value is _EMPTY and self._empty is not None:
            value = self._empty()
        obj.__dict__[self._name] = value


@dataclass(frozen=True, eq=False)
class RankData:
    """One rank's tables, in the schema of :mod:`jupyter_traceview.model.schema`.

    A table may be given as a :class:`Deferred`: it is built when first read.
    Derive a changed copy with :func:`replaced` (or :func:`dataclasses.replace`, which
    builds every table), so that no table is dropped.
    """

    meta: RankMeta
    #: One row per event (columns: schema.EVENT_COLUMNS; ``gpu_class`` is added by Trace).
    events: _Table = _Table()
    #: GPU activity arguments (columns: schema.GPU_ARGS_COLUMNS).
    gpu_args: _Table = _Table()
    #: Collective metadata (columns: schema.COMMS_COLUMNS).
    comms: _Table = _Table()
    #: Allocator records (columns: schema.MEMORY_COLUMNS); empty without ``profile_memory``.
    memory: _Table = _Table(empty_memory_table)
    #: Recorded operator arguments (columns: schema.OP_ARGS_COLUMNS); empty if none were recorded.
    op_args: _Table = _Table(lambda: empty_op_args())
    #: Hardware counter samples (columns: schema.COUNTER_COLUMNS); empty without PM sampling.
    counters: _Table = _Table(empty_counters_table)


def replaced(d: RankData, **changes: Any) -> RankData:
    """``dataclasses.replace(d, **changes)``, with the tables not built yet left so (shared)."""
    given = {f.name: d.__dict__[f.name] for f in dataclasses.fields(d) if f.init}
    given.update(changes)
    return type(d)(**given)


def when_built(d: RankData, name: str, fn: Callable[[pd.DataFrame], None]) -> None:
    """Call ``fn(table)`` with ``d``'s table ``name`` once it is built (now, if it is)."""
    value = d.__dict__[name]
    if isinstance(value, Deferred):
        value.then(fn)
    else:
        fn(value)


def built(d: RankData, name: str) -> bool:
    """Whether ``d``'s table ``name`` is built (it is, unless it was given as a :class:`Deferred`)."""
    value = d.__dict__[name]
    return not isinstance(value, Deferred) or value.built


def empty_op_args() -> pd.DataFrame:
    """An ``op_args`` table without rows (for readers and traces that record no operator arguments)."""
    frame = {
        c.name: (categorical([]) if c.dtype == "category" else pd.Series([], dtype=c.dtype)) for c in OP_ARGS_COLUMNS
    }
    return pd.DataFrame(frame, columns=[c.name for c in OP_ARGS_COLUMNS])
