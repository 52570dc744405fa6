"""What a Kineto event is, as the reader decodes it: msgspec structs, phases, kind codes, limits.

Decoding is typed (msgspec): only the fields the tables need are materialised, straight from
the bytes; everything else in ``args`` (input shapes, strides, ...) is skipped by the
decoder. Both ways of reading a piece (msgspec's decoding, :mod:`.parts`; the C scanner,
:mod:`.native`) number phases and kinds with the tables here.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

import msgspec
import numpy as np

from ....model.schema import (
    DEVICE_KINDS,
    GPU_ACTIVITY_KINDS,
    KIND_CODE,
    LAUNCH_KINDS,
    EventKind,
)
from .. import memory

__all__ = [
    "ACTIVITY_CODES",
    "ARGS_CODES",
    "CAT_TO_KIND",
    "CODE",
    "DEVICE_CODES",
    "EXTRA_FIELDS",
    "FLOAT_EXACT_US",
    "I64_RANGE",
    "KEPT_LUT",
    "KINETO_PSEUDO_PIDS",
    "LAUNCH_CODES",
    "LIST_DECODER",
    "MAX_NS",
    "NAN",
    "NO_RAW",
    "PH",
    "PHASES",
    "PHASE_CODE",
    "Args",
    "Doc",
    "Event",
    "to_ns",
    "ts_written_with_fraction",
]


NAN = float("nan")
NO_RAW = msgspec.Raw()  # an absent raw field (zero bytes)

# Integers the tables hold as int64 (int16 for devices): a value beyond the range fails the
# typed decode, and the tolerant path then keeps the event without its args (for args) or
# reports it as malformed (pid, tid), instead of wrapping it around.
_I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_DEVICE = Annotated[int, msgspec.Meta(ge=-1, le=2**15 - 1)]
I64_RANGE = (-(2**63), 2**63 - 1)
#: |ts| (with baseTimeNanoseconds) and dur above this many ns are out of range: the sum of
#: the two then still fits int64.
MAX_NS = float(2**62)


class Args(memory.MemoryArgs, frozen=True, gc=False):
    external_id: _I64 = msgspec.field(default=-1, name="External id")
    correlation: _I64 = -1
    stream: _I64 | str = -1
    device: _DEVICE = -1
    # CPU ops of Triton launches carry a string "grid"; only kernels' lists are read.
    grid: list[_I64] | str | None = None
    block: list[_I64] | str | None = None
    registers: _I64 = msgspec.field(default=-1, name="registers per thread")
    shared_memory: _I64 = msgspec.field(default=-1, name="shared memory")
    blocks_per_sm: float = msgspec.field(default=NAN, name="blocks per SM")
    warps_per_sm: float = msgspec.field(default=NAN, name="warps per SM")
    occupancy: float = msgspec.field(default=NAN, name="est. achieved occupancy %")
    nbytes: _I64 = msgspec.field(default=-1, name="bytes")
    bandwidth: float = msgspec.field(default=NAN, name="memory bandwidth (GB/s)")
    # Collective metadata (record_param_comms ops; NCCL kernels of recent PyTorch).
    collective: str | None = msgspec.field(default=None, name="Collective name")
    dtype: str | None = None
    in_nelems: _I64 = msgspec.field(default=-1, name="In msg nelems")
    out_nelems: _I64 = msgspec.field(default=-1, name="Out msg nelems")
    group_size: _I64 = msgspec.field(default=-1, name="Group size")
    pg_name: msgspec.Raw = msgspec.field(default=NO_RAW, name="Process Group Name")
    pg_desc: msgspec.Raw = msgspec.field(default=NO_RAW, name="Process Group Description")
    seq: _I64 = msgspec.field(default=-1, name="Seq")
    # Stream Wait Event / Event Sync records: the CUDA event waited on.
    wait_on_stream: _I64 = -1
    wait_on_record_correlation: _I64 = msgspec.field(default=-1, name="wait_on_cuda_event_record_corr_id")
    # Shapes are kept raw (not parsed) and read only for communication annotations.
    input_dims: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input type")
    # Kept raw for the op_args table (see op_args.py).
    input_strides: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=NO_RAW, name="Concrete Inputs")
    # The rank of a global instant event in a file merged from several ranks.
    rank: msgspec.Raw = NO_RAW
    # Counter ("C") events of PM sampling's "GPU N Counters" tracks: one unnamed series.
    counter_value: float = msgspec.field(default=NAN, name="")
    # Metadata ("M") events.
    name: str | None = None
    labels: str | None = None


_NO_ARGS = Args()


#: Chrome trace event phases (a Literal decodes to interned strings: no allocation per event).
_Phase = Literal[
    "X",
    "B",
    "E",
    "i",
    "I",
    "C",
    "b",
    "n",
    "e",
    "s",
    "t",
    "f",
    "P",
    "O",
    "N",
    "D",
    "M",
    "V",
    "v",
    "R",
    "c",
    "(",
    ")",
    "",
]


class Event(msgspec.Struct, gc=False):
    ph: _Phase = ""
    cat: str = ""
    name: str = ""
    pid: _I64 | str = 0
    tid: _I64 | str = 0
    ts: float = NAN
    dur: float = NAN
    args: Args = _NO_ARGS


class Doc(msgspec.Struct, gc=False):
    """The top-level object: header fields (the events are decoded separately, see decode)."""

    schemaVersion: int | None = None
    deviceProperties: msgspec.Raw = NO_RAW
    distributedInfo: msgspec.Raw = NO_RAW
    baseTimeNanoseconds: int = 0
    traceName: str | None = None
    displayTimeUnit: str | None = None
    # Other fields worth keeping, small and optional.
    cuda_runtime_version: msgspec.Raw = NO_RAW
    cuda_driver_version: msgspec.Raw = NO_RAW
    cupti_version: msgspec.Raw = NO_RAW
    hip_version: msgspec.Raw = NO_RAW
    record_shapes: msgspec.Raw = NO_RAW
    with_stack: msgspec.Raw = NO_RAW
    profile_memory: msgspec.Raw = NO_RAW
    with_flops: msgspec.Raw = NO_RAW
    with_modules: msgspec.Raw = NO_RAW
    trace_id: msgspec.Raw = NO_RAW


EXTRA_FIELDS = (
    "cuda_runtime_version",
    "cuda_driver_version",
    "cupti_version",
    "hip_version",
    "record_shapes",
    "with_stack",
    "profile_memory",
    "with_flops",
    "with_modules",
    "trace_id",
)
LIST_DECODER = msgspec.json.Decoder(list[Event], strict=False)

CAT_TO_KIND: dict[str, EventKind] = {
    "cpu_op": EventKind.CPU_OP,
    "operator": EventKind.CPU_OP,
    "user_annotation": EventKind.USER_ANNOTATION,
    "user annotation": EventKind.USER_ANNOTATION,
    "gpu_user_annotation": EventKind.GPU_USER_ANNOTATION,
    "python_function": EventKind.PYTHON_FUNCTION,
    "python": EventKind.PYTHON_FUNCTION,
    "cuda_runtime": EventKind.CUDA_RUNTIME,
    "runtime": EventKind.CUDA_RUNTIME,
    "mtia_runtime": EventKind.CUDA_RUNTIME,
    "privateuse1_runtime": EventKind.CUDA_RUNTIME,
    "cuda_driver": EventKind.CUDA_DRIVER,
    "driver": EventKind.CUDA_DRIVER,
    "privateuse1_driver": EventKind.CUDA_DRIVER,
    "kernel": EventKind.KERNEL,
    "mtia_ccp_events": EventKind.KERNEL,
    "gpu_memcpy": EventKind.GPU_MEMCPY,
    "memcpy": EventKind.GPU_MEMCPY,
    "gpu_memset": EventKind.GPU_MEMSET,
    "memset": EventKind.GPU_MEMSET,
    "cuda_sync": EventKind.CUDA_SYNC,
    "cpu_instant_event": EventKind.CPU_INSTANT_EVENT,
}
_KEPT_PHASES = frozenset({"X", "i", "I"})
PHASES: tuple[str, ...] = get_args(_Phase)
PHASE_CODE = {p: i for i, p in enumerate(PHASES)}
PH = PHASE_CODE
KEPT_LUT = np.array([p in _KEPT_PHASES for p in PHASES], dtype=bool)
KINETO_PSEUDO_PIDS = frozenset({"Spans", "Traces"})

CODE = {k: np.int8(KIND_CODE[k]) for k in EventKind}
DEVICE_CODES = np.array(sorted(KIND_CODE[k] for k in DEVICE_KINDS), dtype=np.int8)
ACTIVITY_CODES = np.array(sorted(KIND_CODE[k] for k in GPU_ACTIVITY_KINDS), dtype=np.int8)
LAUNCH_CODES = np.array(sorted(KIND_CODE[k] for k in LAUNCH_KINDS), dtype=np.int8)
ARGS_CODES = np.array(
    sorted(KIND_CODE[k] for k in (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)), dtype=np.int8
)


#: Above this many microseconds a float64 no longer holds every nanosecond (2**53 ns).
FLOAT_EXACT_US = 2.0**53 / 1000.0

#: A ``ts`` written with a fraction or an exponent (a JSON number's text).
_TS_FRACTION = re.compile(rb'"ts"\s*:\s*-?[0-9]+[.eE]')


def ts_written_with_fraction(data: bytes, lo: int = 0, hi: int | None = None) -> bool:
    """Whether ``data[lo:hi]`` holds a ``"ts"`` number written with a fraction (or an exponent).

    The timestamp route (one rule for every reader and every way a file is cut in parts): an
    event's ``ts`` of :data:`FLOAT_EXACT_US` or more, written with a fraction, takes its
    nanoseconds from the text (:func:`.decode.ns_of_text`); every other ``ts`` is exact as a
    float (:func:`to_ns`). A float cannot tell ``1700000000000000.012`` from its integer part,
    so a part whose floats are all whole asks this of its bytes (a ``"ts"`` key elsewhere, in
    ``args``, only makes the reader read the texts, which are exact either way)."""
    return _TS_FRACTION.search(data, lo, len(data) if hi is None else hi) is not None


def to_ns(us: np.ndarray) -> np.ndarray:
    """Microseconds (float) to int64 ns without losing the integer part to float rounding."""
    whole = np.floor(us)
    out: np.ndarray = whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000.0).astype(np.int64)
    return out
