"""A file's columns (:class:`FileColumns`) from the columns of its parts, merged in file order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import counters as counters_
from .. import memory, op_args
from .events import Event, to_ns
from .parts import COMM_FIELDS, FileState, Part, gpu_arrays

__all__ = ["FileColumns", "merge_parts"]


def merge_parts(parts: list[Part], state: FileState) -> FileColumns:
    """One file's columns from its chunks (names re-coded into one dictionary). A file read
    in one part (a small file the C scanner read whole) keeps that part's arrays as they are."""
    if len(parts) == 1 and len(set(parts[0].names)) == len(parts[0].names):
        return _one_part(parts[0], state)
    index: dict[str, int] = {}
    name_codes = []
    offset = 0
    gpu_rows, comm_rows, offsets = [], [], []
    for part in parts:
        offsets.append(offset)
        lut = np.array([index.setdefault(nm, len(index)) for nm in part.names], dtype=np.int32)
        name_codes.append(lut[part.name_codes] if len(part.name_codes) else part.name_codes)
        gpu_rows.append(part.gpu_rows + offset)
        comm_rows.append(part.comm_rows + offset)
        offset += len(part.ts_us)

    def cat(attr: str) -> np.ndarray:
        return np.concatenate([getattr(p, attr) for p in parts]) if parts else np.empty(0)

    # (copy=False: a concatenation is a new array already; astype would copy it again)
    columns: dict[str, Any] = {attr: cat(attr).astype(dtype, copy=False) for attr, dtype in _PART_DTYPES.items()}
    return FileColumns(
        **columns,
        ts_ns=(
            np.concatenate([p.ts_ns if p.ts_ns is not None else to_ns(p.ts_us) for p in parts]).astype(np.int64)
            if any(p.ts_ns is not None for p in parts)
            else None
        ),
        name_codes=np.concatenate(name_codes).astype(np.int32, copy=False) if parts else np.empty(0, np.int32),
        names=list(index),
        gpu_rows=np.concatenate(gpu_rows) if parts else np.empty(0, np.int64),
        gpu={k: np.concatenate([p.gpu[k] for p in parts]) for k in parts[0].gpu} if parts else gpu_arrays([]),
        comm_rows=np.concatenate(comm_rows) if parts else np.empty(0, np.int64),
        comm={f: [v for p in parts for v in p.comm[f]] for f in COMM_FIELDS},
        mem=memory.MemoryRows.concat([p.mem for p in parts], offsets),
        op=op_args.OpArgs.concat([p.op for p in parts], offsets),
        **_file_fields(state),
    )


def _one_part(part: Part, state: FileState) -> FileColumns:
    """:func:`merge_parts` of a single part whose names are distinct: the same columns, not copied
    (the part is dropped after it), its own numbering of names and argument texts."""
    columns: dict[str, Any] = {
        attr: getattr(part, attr).astype(dtype, copy=False) for attr, dtype in _PART_DTYPES.items()
    }
    return FileColumns(
        **columns,
        ts_ns=None if part.ts_ns is None else part.ts_ns.astype(np.int64, copy=False),
        name_codes=part.name_codes.astype(np.int32, copy=False),
        names=list(part.names),
        gpu_rows=part.gpu_rows,
        gpu=part.gpu,
        comm_rows=part.comm_rows,
        comm={f: list(part.comm[f]) for f in COMM_FIELDS},
        mem=part.mem,
        op=op_args.OpArgs.concat([part.op], [0]),
        **_file_fields(state),
    )


#: The per-event columns a file's parts hold, and their dtypes in :class:`FileColumns`
#: (:func:`merge_parts` and :func:`_one_part`; ``ts_ns`` and ``name_codes`` are built apart).
_PART_DTYPES: dict[str, Any] = {
    "ts_us": np.float64,
    "dur_us": np.float64,
    "instant": bool,
    "arg_rank": np.int64,
    "kind": np.int8,
    "pid": np.int64,
    "tid": np.int64,
    "device": np.int16,
    "stream": np.int64,
    "correlation": np.int64,
    "external_id": np.int64,
}


def _file_fields(state: FileState) -> dict[str, Any]:
    """The :class:`FileColumns` fields that come from the file as a whole (its state), not its parts."""
    process_names, process_labels, thread_names = _metadata(state.meta_events)
    return {
        "labels": dict(state.labels),
        "pid_text": dict(state.pid_text),
        "process_names": process_names,
        "process_labels": process_labels,
        "thread_names": thread_names,
        "skipped": state.skipped,
        "ts_precision": "ns" if state.ts_ns_precision else "us",
        "profiler_span": state.profiler_span,
        "counters": state.counters,
    }


@dataclass
class FileColumns:
    """Unsorted columns of the kept events of a whole file (all ranks)."""

    ts_us: np.ndarray
    ts_ns: np.ndarray | None
    dur_us: np.ndarray
    instant: np.ndarray
    arg_rank: np.ndarray
    #: Ids given to string pids and tids without a number in them (text -> negative id).
    labels: dict[str, int]
    pid_text: dict[int, str]
    name_codes: np.ndarray
    names: list[str]
    kind: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    gpu_rows: np.ndarray
    gpu: dict[str, np.ndarray]
    comm_rows: np.ndarray
    comm: dict[str, list[Any]]
    mem: memory.MemoryRows
    process_names: dict[int, str]
    process_labels: dict[int, str]
    thread_names: list[tuple[int, int, str]]
    skipped: dict[str, int]
    ts_precision: str
    profiler_span: tuple[float, float] | None
    op: op_args.OpArgs = field(default_factory=op_args.empty)
    #: PM sampling's counter samples (all devices of the file).
    counters: counters_.CounterSamples = field(default_factory=lambda: counters_.CounterSamples())


def _metadata(meta_events: list[Event]) -> tuple[dict[int, str], dict[int, str], list[tuple[int, int, str]]]:
    process_names: dict[int, str] = {}
    process_labels: dict[int, str] = {}
    thread_names: list[tuple[int, int, str]] = []
    for e in meta_events:
        pid = e.pid if isinstance(e.pid, int) else None
        if pid is None:
            continue
        if e.name == "process_name" and e.args.name is not None:
            process_names[pid] = e.args.name
        elif e.name == "process_labels" and e.args.labels is not None:
            process_labels[pid] = e.args.labels
        elif e.name == "thread_name" and e.args.name is not None and isinstance(e.tid, int):
            thread_names.append((pid, e.tid, e.args.name))
    return process_names, process_labels, thread_names
