"""Per-rank data as readers produce it: metadata and the schema tables."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .schema import OP_ARGS_COLUMNS, categorical, empty_memory_table

__all__ = ["RankData", "RankMeta", "empty_op_args"]


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
    #: The reader that produced it ("kineto" or "nsys").
    source_format: str = "kineto"

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (for the cache)."""
        d = dataclasses.asdict(self)
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


@dataclass(frozen=True, eq=False)
class RankData:
    """One rank's tables, in the schema of :mod:`jupyter_traceview.model.schema`.

    Derive a changed copy with :func:`dataclasses.replace`, so that no table is dropped.
    """

    meta: RankMeta
    #: One row per event (columns: schema.EVENT_COLUMNS; ``gpu_class`` is added by Trace).
    events: pd.DataFrame
    #: GPU activity arguments (columns: schema.GPU_ARGS_COLUMNS).
    gpu_args: pd.DataFrame
    #: Collective metadata (columns: schema.COMMS_COLUMNS).
    comms: pd.DataFrame
    #: Allocator records (columns: schema.MEMORY_COLUMNS); empty without ``profile_memory``.
    memory: pd.DataFrame = field(default_factory=empty_memory_table)
    #: Recorded operator arguments (columns: schema.OP_ARGS_COLUMNS); empty if none were recorded.
    op_args: pd.DataFrame = field(default_factory=lambda: empty_op_args())


def empty_op_args() -> pd.DataFrame:
    """An ``op_args`` table without rows (for readers and traces that record no operator arguments)."""
    frame = {
        c.name: (categorical([]) if c.dtype == "category" else pd.Series([], dtype=c.dtype)) for c in OP_ARGS_COLUMNS
    }
    return pd.DataFrame(frame, columns=[c.name for c in OP_ARGS_COLUMNS])
