"""The one trace schema. Every reader produces these tables and nothing else.

A :class:`~jupyter_traceview.Trace` holds, per rank, these tables:

``events``
    One row per trace event (complete and instant events), sorted by ``ts_ns``.
``gpu_args``
    Launch and copy arguments of GPU activities (kernels, memcpy, memset), one row
    per activity that carries them, and the awaited event of synchronisation records
    (Stream Wait Event), keyed by ``eid``.
``comms``
    Collective-communication metadata (NCCL/RCCL/gloo), one row per event that
    carries it, keyed by ``eid``.
``memory``
    Allocator records (``profile_memory=True``): one row per ``[memory]`` or
    ``[OutOfMemory]`` instant event, keyed by ``eid``.
``op_args``
    Recorded arguments of CPU operators (shapes, dtypes, strides, scalar values of
    traces recorded with ``record_shapes=True``), one row per operator that carries
    them, keyed by ``eid``.
``counters``
    Hardware counter samples (CUPTI PM sampling: Kineto's ``"GPU N Counters"`` tracks),
    one row per sample of one metric on one device, sorted by ``ts_ns``.

All times are int64 nanoseconds on the trace's clock (for PyTorch profiler traces:
nanoseconds since the Unix epoch). Column names carry their unit. ``docs/schema.md``
describes every column; a test keeps the two in step.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .frames import category_dtype
from .versions import READER_VERSION, SCHEMA_VERSION  # (in versions.py: the cache's keys import them alone)

__all__ = [
    "COMMS_COLUMNS",
    "COUNTER_COLUMNS",
    "EVENT_COLUMNS",
    "GPU_ARGS_COLUMNS",
    "MEMORY_ACTIONS",
    "MEMORY_COLUMNS",
    "OP_ARGS_COLUMNS",
    "READER_VERSION",
    "SCHEMA_VERSION",
    "Column",
    "EventKind",
    "GpuClass",
]


if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 (the lowest supported): what enum.StrEnum does for our members

    class StrEnum(str, enum.Enum):
        """A str whose ``str()`` and ``format()`` are its value (``enum.StrEnum`` from 3.11)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class EventKind(StrEnum):
    """What an event is. Values are Kineto's category names (lower case).

    Older traces (2021 era) use capitalised categories; the reader maps them:
    ``Operator`` -> ``cpu_op``, ``Runtime`` -> ``cuda_runtime``, ``Kernel`` -> ``kernel``,
    ``Memcpy`` -> ``gpu_memcpy``, ``Memset`` -> ``gpu_memset``, ``Python`` ->
    ``python_function``. HIP runtime calls of ROCm traces are ``cuda_runtime`` events, as
    Kineto writes them. MTIA device and runtime events map to ``kernel`` and ``cuda_runtime``.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> tv.EventKind.KERNEL.value
    'kernel'
    >>> trace = tv.load(tv.sample_path())
    >>> int((trace.events(0)["kind"] == tv.EventKind.KERNEL).sum()) > 0
    True
    """

    CPU_OP = "cpu_op"
    USER_ANNOTATION = "user_annotation"
    PYTHON_FUNCTION = "python_function"
    CUDA_RUNTIME = "cuda_runtime"
    CUDA_DRIVER = "cuda_driver"
    CPU_INSTANT_EVENT = "cpu_instant_event"
    KERNEL = "kernel"
    GPU_MEMCPY = "gpu_memcpy"
    GPU_MEMSET = "gpu_memset"
    CUDA_SYNC = "cuda_sync"
    GPU_USER_ANNOTATION = "gpu_user_annotation"
    OTHER = "other"


#: Kinds that are work or waits on a GPU stream: the GPU timeline.
GPU_ACTIVITY_KINDS = frozenset({EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET, EventKind.CUDA_SYNC})
#: Kinds recorded on a device (GPU activities and GPU-side annotations).
DEVICE_KINDS = GPU_ACTIVITY_KINDS | {EventKind.GPU_USER_ANNOTATION}
#: Kinds of CPU-side calls that launch GPU activities (linked by correlation id).
LAUNCH_KINDS = frozenset({EventKind.CUDA_RUNTIME, EventKind.CUDA_DRIVER})

#: Fixed category order of the ``kind`` column (codes are stable across ranks and caches).
KIND_CATEGORIES: tuple[str, ...] = tuple(k.value for k in EventKind)
KIND_CODE: dict[EventKind, int] = {k: i for i, k in enumerate(EventKind)}


class GpuClass(StrEnum):
    """What a GPU activity does (column ``gpu_class``); empty for CPU-side events.

    ``compute``
        Kernels that compute.
    ``communication``
        Collective and point-to-point communication kernels (NCCL, RCCL, DeepEP, ...).
    ``memory``
        Memory copies and sets (``gpu_memcpy``, ``gpu_memset`` and copy kernels).
    ``other``
        Synchronisation records (``cuda_sync``) and device events that are not work:
        the SYNC/OTHER class. They never count as GPU busy time.

    The patterns that decide it live in :class:`jupyter_traceview.Classifier`.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> [c.value for c in tv.GpuClass]
    ['compute', 'communication', 'memory', 'other']
    """

    COMPUTE = "compute"
    COMMUNICATION = "communication"
    MEMORY = "memory"
    OTHER = "other"


GPU_CLASS_CATEGORIES: tuple[str, ...] = tuple(c.value for c in GpuClass)


@dataclass(frozen=True)
class Column:
    """One column of a schema table: its name, numpy dtype (or ``category``) and meaning."""

    name: str
    dtype: str
    doc: str
    #: Value that means "absent" (integer columns use a sentinel instead of NaN).
    missing: object = None


EVENT_COLUMNS: tuple[Column, ...] = (
    Column("eid", "int64", "Event id: the row's position in the rank's full table (stable under filtering)."),
    Column("ts_ns", "int64", "Start time, ns on the trace's clock (Unix epoch for PyTorch traces)."),
    Column("dur_ns", "int64", "Duration in ns (0 for instant events)."),
    Column("name", "category", "Event name: operator, kernel, runtime call, annotation."),
    Column("kind", "category", "Event kind, one of EventKind (Kineto's category, normalised)."),
    Column("gpu_class", "category", "GpuClass of GPU activities (compute/communication/memory/other); NaN elsewhere."),
    Column("pid", "int64", "Process id (CPU events) or the trace's device process id (device events)."),
    Column("tid", "int64", "Thread id (CPU events) or the trace's lane id (device events)."),
    Column("device", "int16", "Device index of device events; -1 for CPU events.", -1),
    Column("stream", "int64", "GPU stream of device events; -1 for CPU events.", -1),
    Column("correlation", "int64", "Correlation id linking a launch call to its GPU activities; -1 if none.", -1),
    Column("external_id", "int64", "Kineto 'External id' (links ops, launches and activities); -1 if none.", -1),
    Column(
        "launch_eid", "int64", "For GPU activities: eid of the runtime/driver call that launched it; -1 if none.", -1
    ),
    Column(
        "parent_eid", "int64", "For CPU events: eid of the enclosing event on the same thread; -1 at top level.", -1
    ),
    Column("depth", "int16", "Nesting depth on the event's thread (CPU) or lane (device); 0 at top level.", 0),
    Column(
        "step", "int32", "ProfilerStep number the event belongs to (GPU activities: by their launch); -1 if none.", -1
    ),
)

GPU_ARGS_COLUMNS: tuple[Column, ...] = (
    Column("eid", "int64", "Event id of the GPU activity (joins with events.eid)."),
    Column("grid_x", "int32", "Grid size, x (kernels); -1 if absent.", -1),
    Column("grid_y", "int32", "Grid size, y; -1 if absent.", -1),
    Column("grid_z", "int32", "Grid size, z; -1 if absent.", -1),
    Column("block_x", "int32", "Block size, x (kernels); -1 if absent.", -1),
    Column("block_y", "int32", "Block size, y; -1 if absent.", -1),
    Column("block_z", "int32", "Block size, z; -1 if absent.", -1),
    Column("registers_per_thread", "int32", "Registers per thread; -1 if absent.", -1),
    Column("shared_memory_bytes", "int64", "Static + dynamic shared memory per block, bytes; -1 if absent.", -1),
    Column("blocks_per_sm", "float32", "Blocks per SM as recorded by CUPTI; NaN if absent."),
    Column("warps_per_sm", "float32", "Warps per SM as recorded by CUPTI; NaN if absent."),
    Column("occupancy_pct", "float32", "Estimated achieved occupancy, %; NaN if absent."),
    Column("bytes", "int64", "Bytes copied or set (memcpy/memset); -1 if absent.", -1),
    Column("bandwidth_gbps", "float32", "Bandwidth recorded by the profiler, GB/s (memcpy/memset); NaN if absent."),
    Column("copy_kind", "category", "HtoD, DtoH, DtoD, PtoP, HtoH or memset for memory activities; NaN for kernels."),
    Column("pageable", "bool", "True for copies from or to pageable host memory (synchronous copies)."),
    Column(
        "wait_on_stream",
        "int64",
        "cuda_sync records (Stream Wait Event, Event Sync): stream the awaited CUDA event was recorded on; -1 if absent.",
        -1,
    ),
    Column(
        "wait_on_record_correlation",
        "int64",
        "cuda_sync records: correlation id of the cudaEventRecord call that recorded the awaited event; -1 if absent.",
        -1,
    ),
)

#: Where a comms row's metadata came from (categories of comms.source).
COMMS_SOURCES = ("record_param_comms", "kernel", "annotation")

COMMS_COLUMNS: tuple[Column, ...] = (
    Column("eid", "int64", "Event id of the event that carries the metadata."),
    Column(
        "collective",
        "category",
        "Collective kind, normalised: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, barrier, ...",
    ),
    Column("dtype", "category", "Element type as recorded (e.g. Float, BFloat16, float)."),
    Column("in_nelems", "int64", "Elements in the input message; -1 if absent.", -1),
    Column("out_nelems", "int64", "Elements in the output message; -1 if absent.", -1),
    Column("elem_bytes", "int16", "Bytes per element for dtype; -1 if unknown.", -1),
    Column("group_size", "int32", "Ranks in the process group; -1 if absent.", -1),
    Column("pg_name", "category", "Process group name; NaN if absent."),
    Column("pg_desc", "category", "Process group description; NaN if absent."),
    Column("seq", "int64", "Collective sequence number within the process group; -1 if absent.", -1),
    Column("source", "category", "Where the metadata came from: 'record_param_comms', 'kernel' or 'annotation'."),
)

#: What a memory row records (categories of memory.action).
MEMORY_ACTIONS = ("alloc", "free", "oom")

MEMORY_COLUMNS: tuple[Column, ...] = (
    Column("eid", "int64", "Event id of the [memory] / [OutOfMemory] instant event (joins with events.eid)."),
    Column("action", "category", "'alloc' (bytes >= 0), 'free' (bytes < 0) or 'oom' (a failed request)."),
    Column("device_type", "category", "Allocator's device type: CPU, CUDA, HIP, XPU, MTIA, ... (c10::DeviceType)."),
    Column("device", "int16", "Device index (Device Id); -1 for CPU memory.", -1),
    Column("addr", "int64", "Address of the block; -1 if absent ([OutOfMemory] records).", -1),
    Column("bytes", "int64", "Bytes allocated (> 0) or freed (< 0); for 'oom', the size requested."),
    Column(
        "total_allocated_bytes", "int64", "Allocator's allocated total on the device after the call; -1 if absent.", -1
    ),
    Column(
        "total_reserved_bytes",
        "int64",
        "Allocator's reserved (cached) total on the device after the call; -1 if absent.",
        -1,
    ),
)

OP_ARGS_COLUMNS: tuple[Column, ...] = (
    Column("eid", "int64", "Event id of the CPU operator (joins with events.eid)."),
    Column("input_dims", "category", "'Input Dims' as recorded: JSON text of one shape list per input; NaN if absent."),
    Column("input_type", "category", "'Input type' as recorded: JSON text of one dtype name per input; NaN if absent."),
    Column(
        "input_strides",
        "category",
        "'Input Strides' as recorded: JSON text of one stride list per input; NaN if absent.",
    ),
    Column(
        "concrete_inputs",
        "category",
        "'Concrete Inputs' as recorded: JSON text of scalar argument values; NaN if absent.",
    ),
)


COUNTER_COLUMNS: tuple[Column, ...] = (
    Column("ts_ns", "int64", "Start of the sample, ns; the value holds until the metric's next sample."),
    Column("device", "int16", 'GPU index (the N of the "GPU N Counters" track).'),
    Column("name", "category", 'The metric as recorded: Kineto\'s label ("SM Active (%)") or the raw metric name.'),
    Column("value", "float64", "The sampled value, in the metric's own unit (the label's, e.g. %)."),
)


def categorical(
    values: Iterable[object] | None = None,
    *,
    codes: np.ndarray | None = None,
    categories: Iterable[object] | None = None,
) -> pd.Categorical:
    """A categorical with string categories of the one dtype used throughout (pandas' ``str``).

    Either ``values`` (None entries become NaN), or ``codes`` into ``categories``. Equal lists
    of categories share one dtype (:func:`frames.category_dtype`).
    """
    if codes is not None:
        dtype = category_dtype(list(categories) if categories is not None else [])
        return pd.Categorical.from_codes(codes, dtype=dtype)
    vals = list(values) if values is not None else []
    cats = sorted({str(v) for v in vals if v is not None}) if categories is None else list(categories)
    dtype = category_dtype(cats)
    if set(map(type, cats)) <= {str} and set(map(type, vals)) <= {str, type(None)}:
        # Strings (or None) into string categories: coded by a dict, as pandas would code
        # them (a value not among the categories, or None, is -1), without its hash table.
        where = {c: i for i, c in enumerate(cats)}
        return pd.Categorical.from_codes(
            np.fromiter((-1 if v is None else where.get(v, -1) for v in vals), dtype=np.int64, count=len(vals)),
            dtype=dtype,
        )
    return pd.Categorical(vals, dtype=dtype)


def empty_memory_table() -> pd.DataFrame:
    """A memory table with no rows (traces recorded without ``profile_memory``, Nsight exports)."""
    cols: dict[str, Any] = {}
    for c in MEMORY_COLUMNS:
        if c.dtype == "category":
            cats = MEMORY_ACTIONS if c.name == "action" else ()
            cols[c.name] = categorical(codes=np.empty(0, np.int8), categories=cats)
        else:
            cols[c.name] = np.empty(0, dtype=c.dtype)
    return pd.DataFrame(cols)


def empty_counters_table() -> pd.DataFrame:
    """A counters table with no rows (traces recorded without PM sampling, other readers)."""
    return pd.DataFrame(
        {
            c.name: (
                categorical(codes=np.empty(0, np.int8), categories=())
                if c.dtype == "category"
                else np.empty(0, c.dtype)
            )
            for c in COUNTER_COLUMNS
        }
    )


#: Bytes per element for dtype names found in traces (c10 names and C names).
DTYPE_BYTES: dict[str, int] = {
    "float": 4,
    "Float": 4,
    "float32": 4,
    "c10::Float": 4,
    "double": 8,
    "Double": 8,
    "float64": 8,
    "c10::Half": 2,
    "Half": 2,
    "float16": 2,
    "half": 2,
    "c10::BFloat16": 2,
    "BFloat16": 2,
    "bfloat16": 2,
    "int": 4,
    "Int": 4,
    "int32": 4,
    "long int": 8,
    "long": 8,
    "Long": 8,
    "int64": 8,
    "short int": 2,
    "Short": 2,
    "int16": 2,
    "signed char": 1,
    "Char": 1,
    "int8": 1,
    "unsigned char": 1,
    "Byte": 1,
    "uint8": 1,
    "bool": 1,
    "Bool": 1,
    "c10::Float8_e4m3fn": 1,
    "Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "Float8_e5m2": 1,
}
