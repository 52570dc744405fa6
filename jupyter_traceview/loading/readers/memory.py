"""Memory records of Kineto traces: ``[memory]`` and ``[OutOfMemory]`` instant events.

Traces recorded with ``profile_memory=True`` carry one ``[memory]`` instant event per
allocator call (an allocation with positive ``Bytes``, a free with negative ``Bytes``), on
the thread that made it, and one ``[OutOfMemory]`` event per failed request. Their
arguments become the rank's ``memory`` table (``docs/schema.md``), one row per event, keyed
by the event's ``eid``; the events themselves stay in the events table (kind
``cpu_instant_event``), so that their time, thread, step and enclosing operator
(``parent_eid``) come from there.

The Kineto reader's hot path touches this module in three places only: its argument struct
inherits :class:`MemoryArgs` (the extra fields to decode), each chunk calls
:func:`memory_rows`, and each rank's table comes from :meth:`MemoryRows.table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import numpy as np
import pandas as pd

from ...model.frames import frame
from ...model.schema import MEMORY_ACTIONS, MEMORY_COLUMNS, categorical
from .derive import in_codes

__all__ = ["MEMORY_EVENT_NAMES", "MemoryArgs", "MemoryRows", "device_type_name", "empty_memory_rows", "memory_rows"]

#: Names of the instant events that carry memory records.
MEMORY_EVENT_NAMES = ("[memory]", "[OutOfMemory]")

#: c10::DeviceType numbers as Kineto writes them in ``Device Type``.
_DEVICE_TYPES = (
    "CPU",
    "CUDA",
    "MKLDNN",
    "OPENGL",
    "OPENCL",
    "IDEEP",
    "HIP",
    "FPGA",
    "MAIA",
    "XLA",
    "Vulkan",
    "Metal",
    "XPU",
    "MPS",
    "Meta",
    "HPU",
    "VE",
    "Lazy",
    "IPU",
    "MTIA",
    "PrivateUse1",
)


def device_type_name(value: object) -> str:
    """``CPU``, ``CUDA``, ... for a recorded ``Device Type`` (a c10 number or already a name)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(_DEVICE_TYPES):
        return _DEVICE_TYPES[value]
    return str(value)


# Out-of-range values fail the typed decode (the event then keeps its timing without its
# args, counted), as for the reader's other integer arguments: never wrapped around.
_I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_DEVICE = Annotated[int, msgspec.Meta(ge=-1, le=2**15 - 1)]


class MemoryArgs(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` fields of memory records (the reader's argument struct inherits them)."""

    mem_total_reserved: _I64 = msgspec.field(default=-1, name="Total Reserved")
    mem_total_allocated: _I64 = msgspec.field(default=-1, name="Total Allocated")
    mem_bytes: _I64 = msgspec.field(default=0, name="Bytes")
    mem_addr: _I64 = msgspec.field(default=-1, name="Addr")
    mem_device_id: _DEVICE = msgspec.field(default=-1, name="Device Id")
    mem_device_type: int | str = msgspec.field(default=-1, name="Device Type")


_INT_FIELDS = ("mem_bytes", "mem_addr", "mem_total_allocated", "mem_total_reserved", "mem_device_id")


@dataclass
class MemoryRows:
    """Memory records of (part of) a file: their rows among the kept events, and their fields."""

    #: Positions of the records among the kept events (file order).
    rows: np.ndarray
    #: True for ``[OutOfMemory]`` records.
    oom: np.ndarray
    #: One int64 array per field of :data:`_INT_FIELDS`.
    ints: dict[str, np.ndarray]
    #: ``Device Type`` names.
    device_type: list[str]

    @staticmethod
    def concat(parts: Sequence[MemoryRows], offsets: Sequence[int]) -> MemoryRows:
        """One file's records from its chunks (``offsets``: the first row of each chunk)."""
        if not parts:
            return empty_memory_rows()
        return MemoryRows(
            rows=np.concatenate([p.rows + off for p, off in zip(parts, offsets, strict=True)]),
            oom=np.concatenate([p.oom for p in parts]),
            ints={f: np.concatenate([p.ints[f] for p in parts]) for f in _INT_FIELDS},
            device_type=[t for p in parts for t in p.device_type],
        )

    def table(self, eid_of_row: np.ndarray) -> pd.DataFrame:
        """The rank's memory table: the records whose row has an eid in this rank, by eid."""
        eids = eid_of_row[self.rows] if len(self.rows) else np.empty(0, np.int64)
        mine = np.flatnonzero(eids >= 0)
        mine = mine[np.argsort(eids[mine], kind="stable")]
        nbytes = self.ints["mem_bytes"][mine]
        oom = self.oom[mine]
        action = np.where(oom, 2, np.where(nbytes < 0, 1, 0)).astype(np.int8)
        device_types = [self.device_type[i] for i in mine.tolist()]
        table: dict[str, Any] = {
            "eid": eids[mine].astype(np.int64),
            "action": categorical(codes=action, categories=MEMORY_ACTIONS),
            "device_type": categorical(device_types),
            "device": self.ints["mem_device_id"][mine].clip(-1, np.iinfo(np.int16).max).astype(np.int16),
            "addr": self.ints["mem_addr"][mine],
            "bytes": nbytes,
            "total_allocated_bytes": self.ints["mem_total_allocated"][mine],
            "total_reserved_bytes": self.ints["mem_total_reserved"][mine],
        }
        return frame(table, [c.name for c in MEMORY_COLUMNS])


def empty_memory_rows() -> MemoryRows:
    return MemoryRows(
        rows=np.empty(0, np.int64),
        oom=np.empty(0, bool),
        ints={f: np.empty(0, np.int64) for f in _INT_FIELDS},
        device_type=[],
    )


def _int64(values: Sequence[object]) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        # An address beyond int64 (never seen): kept as absent rather than failing the file.
        return np.array([v if isinstance(v, int) and -(2**63) <= v < 2**63 else -1 for v in values], dtype=np.int64)


def memory_rows(args: Sequence[MemoryArgs], name_codes: np.ndarray, names: Sequence[str]) -> MemoryRows:
    """The memory records among one chunk's kept events (``names[name_codes[i]]`` is event i's name)."""
    codes = [i for i, nm in enumerate(names) if nm in MEMORY_EVENT_NAMES]
    if not codes:
        return empty_memory_rows()
    rows = np.flatnonzero(in_codes(name_codes, codes))
    oom_codes = [i for i in codes if names[i] == "[OutOfMemory]"]
    picked = [args[i] for i in rows.tolist()]
    return MemoryRows(
        rows=rows.astype(np.int64),
        oom=in_codes(name_codes[rows], oom_codes),
        ints={f: _int64([getattr(a, f) for a in picked]) for f in _INT_FIELDS},
        device_type=[device_type_name(a.mem_device_type) for a in picked],
    )
