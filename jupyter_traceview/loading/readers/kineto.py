"""Reader for PyTorch profiler (Kineto) JSON traces.

Decoding is typed (msgspec): only the fields the schema needs are materialised, straight
from the bytes; everything else in ``args`` (input shapes, strides, ...) is skipped by the
decoder. The decoded events become numpy columns, are split by rank (for files that hold
several ranks), sorted, and get their derived columns (links, nesting, iterations).

Handled shapes: ``{"traceEvents": [...], ...}`` objects and bare top-level event arrays;
float-microsecond (ns-resolution) and integer-microsecond timestamps; ``baseTimeNanoseconds``;
2021-era capitalised categories; ROCm/HIP traces (string stream ids on runtime events);
MTIA device events; ``B``/``E`` begin/end pairs; traces with no GPU events.

Big files are read in byte ranges (``loading/pieces.py``), and there a C scanner
(``native.py``, ``_kscan.c``) writes most pieces' columns (``_Part``) without decoding
events into Python objects; what it does not read comes through ``_part`` below, and the
tables are identical either way.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ...errors import TraceFormatError
from ...model.classify import COPY_KINDS, copy_kind_of
from ...model.collectives import normalize_collective
from ...model.frames import frame, paused_gc
from ...model.rank_data import RankData, RankMeta
from ...model.schema import (
    COMMS_COLUMNS,
    COMMS_SOURCES,
    DEVICE_KINDS,
    DTYPE_BYTES,
    GPU_ACTIVITY_KINDS,
    GPU_ARGS_COLUMNS,
    KIND_CATEGORIES,
    KIND_CODE,
    LAUNCH_KINDS,
    EventKind,
    categorical,
)
from . import derive, memory, op_args
from .common import ARGS_DROPPED, DROPPED, WARNINGS_KEY, NotATraceError

__all__ = ["ARGS_DROPPED", "DROPPED", "NotATraceError", "copy_flags", "parse_kineto", "split_ranks"]

#: Keys of RankMeta.skipped that the loader reports in a warning.


# --------------------------------------------------------------------------------------
# Typed decoding
# --------------------------------------------------------------------------------------
_NAN = float("nan")
_NO_RAW = msgspec.Raw()  # an absent raw field (zero bytes)

# Integers the tables hold as int64 (int16 for devices): a value beyond the range fails the
# typed decode, and the tolerant path then keeps the event without its args (for args) or
# reports it as malformed (pid, tid), instead of wrapping it around.
_I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_DEVICE = Annotated[int, msgspec.Meta(ge=-1, le=2**15 - 1)]
_I64_RANGE = (-(2**63), 2**63 - 1)
#: |ts| (with baseTimeNanoseconds) and dur above this many ns are out of range: the sum of
#: the two then still fits int64.
_MAX_NS = float(2**62)


class _Args(memory.MemoryArgs, frozen=True, gc=False):
    external_id: _I64 = msgspec.field(default=-1, name="External id")
    correlation: _I64 = -1
    stream: _I64 | str = -1
    device: _DEVICE = -1
    # CPU ops of Triton launches carry a string "grid"; only kernels' lists are read.
    grid: list[_I64] | str | None = None
    block: list[_I64] | str | None = None
    registers: _I64 = msgspec.field(default=-1, name="registers per thread")
    shared_memory: _I64 = msgspec.field(default=-1, name="shared memory")
    blocks_per_sm: float = msgspec.field(default=_NAN, name="blocks per SM")
    warps_per_sm: float = msgspec.field(default=_NAN, name="warps per SM")
    occupancy: float = msgspec.field(default=_NAN, name="est. achieved occupancy %")
    nbytes: _I64 = msgspec.field(default=-1, name="bytes")
    bandwidth: float = msgspec.field(default=_NAN, name="memory bandwidth (GB/s)")
    # Collective metadata (record_param_comms ops; NCCL kernels of recent PyTorch).
    collective: str | None = msgspec.field(default=None, name="Collective name")
    dtype: str | None = None
    in_nelems: _I64 = msgspec.field(default=-1, name="In msg nelems")
    out_nelems: _I64 = msgspec.field(default=-1, name="Out msg nelems")
    group_size: _I64 = msgspec.field(default=-1, name="Group size")
    pg_name: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Process Group Name")
    pg_desc: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Process Group Description")
    seq: _I64 = msgspec.field(default=-1, name="Seq")
    # Stream Wait Event / Event Sync records: the CUDA event waited on.
    wait_on_stream: _I64 = -1
    wait_on_record_correlation: _I64 = msgspec.field(default=-1, name="wait_on_cuda_event_record_corr_id")
    # Shapes are kept raw (not parsed) and read only for communication annotations.
    input_dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    # Kept raw for the op_args table (see op_args.py).
    input_strides: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")
    # The rank of a global instant event in a file merged from several ranks.
    rank: msgspec.Raw = _NO_RAW
    # Metadata ("M") events.
    name: str | None = None
    labels: str | None = None


_NO_ARGS = _Args()


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


class _Event(msgspec.Struct, gc=False):
    ph: _Phase = ""
    cat: str = ""
    name: str = ""
    pid: _I64 | str = 0
    tid: _I64 | str = 0
    ts: float = _NAN
    dur: float = _NAN
    args: _Args = _NO_ARGS


class _Doc(msgspec.Struct, gc=False):
    """The top-level object: header fields (the events are decoded separately, see _decode)."""

    schemaVersion: int | None = None
    deviceProperties: msgspec.Raw = _NO_RAW
    distributedInfo: msgspec.Raw = _NO_RAW
    baseTimeNanoseconds: int = 0
    traceName: str | None = None
    displayTimeUnit: str | None = None
    # Other fields worth keeping, small and optional.
    cuda_runtime_version: msgspec.Raw = _NO_RAW
    cuda_driver_version: msgspec.Raw = _NO_RAW
    cupti_version: msgspec.Raw = _NO_RAW
    hip_version: msgspec.Raw = _NO_RAW
    record_shapes: msgspec.Raw = _NO_RAW
    with_stack: msgspec.Raw = _NO_RAW
    profile_memory: msgspec.Raw = _NO_RAW
    with_flops: msgspec.Raw = _NO_RAW
    with_modules: msgspec.Raw = _NO_RAW
    trace_id: msgspec.Raw = _NO_RAW


_EXTRA_FIELDS = (
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


class _DocEvents(_Doc, gc=False):
    traceEvents: list[_Event] | None = None


class _DocRawEvents(_Doc, gc=False):
    traceEvents: list[msgspec.Raw] | None = None


_DOC_DECODER = msgspec.json.Decoder(_DocEvents, strict=False)
_LIST_DECODER = msgspec.json.Decoder(list[_Event], strict=False)
_RAW_DOC_DECODER = msgspec.json.Decoder(_DocRawEvents, strict=False)
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw], strict=False)

#: Files larger than this are decoded in chunks of _CHUNK_EVENTS events, so that the
#: Python objects of only one chunk exist at a time (memory stays ~1.5x the file).
_CHUNK_BYTES = 48 * 2**20
_CHUNK_EVENTS = 1 << 15

_CAT_TO_KIND: dict[str, EventKind] = {
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
_PHASES: tuple[str, ...] = get_args(_Phase)
_PHASE_CODE = {p: i for i, p in enumerate(_PHASES)}
_PH = _PHASE_CODE
_KEPT_LUT = np.array([p in _KEPT_PHASES for p in _PHASES], dtype=bool)
_KINETO_PSEUDO_PIDS = frozenset({"Spans", "Traces"})
_RANK_IN_PROCESS = re.compile(r"\brank\s*[:#_-]?\s*(\d+)", re.IGNORECASE)

_CODE = {k: np.int8(KIND_CODE[k]) for k in EventKind}
_DEVICE_CODES = np.array(sorted(KIND_CODE[k] for k in DEVICE_KINDS), dtype=np.int8)
_ACTIVITY_CODES = np.array(sorted(KIND_CODE[k] for k in GPU_ACTIVITY_KINDS), dtype=np.int8)
_LAUNCH_CODES = np.array(sorted(KIND_CODE[k] for k in LAUNCH_KINDS), dtype=np.int8)
_ARGS_CODES = np.array(
    sorted(KIND_CODE[k] for k in (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)), dtype=np.int8
)


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------
def parse_kineto(
    path: Path,
    data: bytes,
    *,
    name_rank: int | None = None,
    bad_events: str = "raise",
    pid_map: Mapping[int | str, int] | None = None,
) -> list[RankData]:
    """Parse one Kineto JSON document into one RankData per rank it holds.

    Raises :class:`NotATraceError` for JSON that is not a trace and
    :class:`TraceFormatError` for a broken one.
    """
    # Decoding creates millions of small objects that are freed together at the end:
    # the cyclic GC's repeated scans would only slow this down (2x measured).
    with paused_gc():
        doc, chunks = _decode(path, data)
        header = _header(path, doc, name_rank, bad_events)
        state = _FileState(base_time_ns=header.base_time_ns)
        try:
            parts = [_part(chunk, state) for chunk in chunks]
        except UnicodeDecodeError:  # raw text in args (the decoder leaves it unchecked)
            raise _not_utf8(path, data) from None
        if state.begin_end:
            parts.append(_part(_Chunk(-1, _pair_begin_end(state.begin_end, state.skipped), []), state))
        del data, chunks
        state.raise_or_count(path, bad_events)
        columns = _merge(parts, state)
        del parts
        return _split_and_finish(path, columns, header, pid_map)


@dataclass
class _Header:
    rank: int
    rank_source: str
    base_time_ns: int
    fields: dict[str, Any]


def _first_byte(data: bytes) -> int:
    for i in range(min(len(data), 4096)):
        b = data[i]
        if b not in b" \t\r\n\xef\xbb\xbf":
            return b
    return -1


@dataclass
class _Chunk:
    """Decoded events of (part of) a file."""

    #: Index in traceEvents of the first event (-1 for events made by the reader).
    offset: int
    events: list[_Event]
    #: Events that could not be read at all: (index in traceEvents, problem).
    bad: list[tuple[int, str]]
    #: Events kept without their ``args``, which could not be read.
    args_dropped: int = 0
    #: The events' ``ts`` as written (JSON number text), decoded only when a float
    #: cannot hold them to the nanosecond; None where the text is not at hand.
    ts_text: Callable[[], list[msgspec.Raw]] | None = None


def _not_a_trace(path: Path, why: str) -> NotATraceError:
    return NotATraceError(
        path,
        f"is JSON but not a trace ({why})",
        "Pass a PyTorch profiler trace written by torch.profiler (export_chrome_trace or tensorboard_trace_handler)",
    )


def _decode(path: Path, data: bytes) -> tuple[_Doc, Iterator[_Chunk]]:
    """The header and the events, in one chunk or, for big files, in many."""
    first = _first_byte(data)
    if first not in (ord("{"), ord("[")):
        what = "is not JSON" if first != -1 else "holds only whitespace"
        raise NotATraceError(
            path, f"{what} (it does not start with '{{' or '[')", "Pass a PyTorch profiler trace (*.json or *.json.gz)"
        )
    is_object = first == ord("{")
    _check_surrogates(path, data)
    try:
        return _decode_typed(path, data, is_object)
    except UnicodeDecodeError:
        raise _not_utf8(path, data) from None
    except RecursionError:
        raise TraceFormatError(
            path,
            "nests JSON arrays or objects too deep to read (thousands of levels)",
            "The file is damaged or was not written by a profiler; record or export the trace again",
        ) from None


def _not_utf8(path: Path, data: bytes) -> TraceFormatError:
    where = ""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        where = f" at line {line} (byte {exc.start:,})"
    return TraceFormatError(
        path,
        f"is not valid UTF-8 text{where}",
        "JSON traces are UTF-8; the file is damaged or was re-encoded: record or export the trace again",
    )


# A \uD800-\uDFFF escape: half of a UTF-16 surrogate pair, valid only as a high-low pair.
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_HINT = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _check_surrogates(path: Path, data: bytes) -> None:
    """Refuse lone UTF-16 surrogate escapes (``"\\ud800"``): no UTF-8 string can hold them."""
    if b"\\" not in data or _SURROGATE_HINT.search(data) is None:
        # The common case: no backslash at all (one memchr scan, GB/s; a two-byte needle
        # would take the slower generic search), else one regex scan.
        return
    paired = _SURROGATE_PAIR.sub(b"", data)
    m = _SURROGATE_ESCAPE.search(paired)
    if m is None:
        return
    raise TraceFormatError(
        path,
        "holds a string with a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), "
        "which is not valid Unicode text",
        "The file is damaged or was written by a faulty exporter; record or export the trace again",
    )


def _decode_typed(path: Path, data: bytes, is_object: bool) -> tuple[_Doc, Iterator[_Chunk]]:
    try:
        if len(data) > _CHUNK_BYTES:
            # Split the event array into raw slices first (cheap: no objects per field).
            if is_object:
                raw_doc = _RAW_DOC_DECODER.decode(data)
                raws, doc = raw_doc.traceEvents, _Doc(**{f: getattr(raw_doc, f) for f in _Doc.__struct_fields__})
            else:
                raws, doc = _RAW_LIST_DECODER.decode(data), _Doc()
            if raws is None:
                raise _not_a_trace(path, "it has no 'traceEvents'")
            return doc, _raw_chunks(raws)
        if is_object:
            full = _DOC_DECODER.decode(data)
            events, doc = full.traceEvents, full
        else:
            events, doc = _LIST_DECODER.decode(data), _Doc()
        if events is None:
            raise _not_a_trace(path, "it has no 'traceEvents'")
        text_decoder = _TS_DOC_DECODER if is_object else _TS_LIST_DECODER
        return doc, iter([_Chunk(0, events, [], ts_text=lambda: _ts_texts(text_decoder.decode(data)))])
    except msgspec.ValidationError:
        # Unexpected value types somewhere (or bad JSON after them): the tolerant path.
        try:
            obj = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            obj = _json_loads(path, data, exc)
        return _decode_tolerant(path, obj)
    except msgspec.DecodeError as exc:
        return _decode_tolerant(path, _json_loads(path, data, exc))


def _json_loads(path: Path, data: bytes, exc: msgspec.DecodeError) -> Any:
    """Python's json module reads non-standard tokens (NaN, Infinity) that msgspec refuses."""
    try:
        return json.loads(data)
    except UnicodeDecodeError:
        raise _not_utf8(path, data) from None
    except ValueError:
        raise _malformed(path, data, exc) from None


def _raw_chunks(raws: list[msgspec.Raw]) -> Iterator[_Chunk]:
    for start in range(0, len(raws), _CHUNK_EVENTS):
        buf = b"[" + b",".join(raws[start : start + _CHUNK_EVENTS]) + b"]"
        try:
            events = _LIST_DECODER.decode(buf)
        except msgspec.ValidationError:
            events, bad, dropped = _tolerant_events(msgspec.json.decode(buf), start)
            yield _Chunk(start, events, bad, dropped)
            continue
        yield _Chunk(start, events, [], ts_text=functools.partial(_ts_list_texts, buf))


class _TsText(msgspec.Struct, gc=False):
    ts: msgspec.Raw = _NO_RAW


class _DocTsText(msgspec.Struct, gc=False):
    traceEvents: list[_TsText] | None = None


_TS_DOC_DECODER = msgspec.json.Decoder(_DocTsText | list[_TsText])
_TS_LIST_DECODER = msgspec.json.Decoder(list[_TsText])


def _ts_list_texts(buf: bytes) -> list[msgspec.Raw]:
    return _ts_texts(_TS_LIST_DECODER.decode(buf))


def _ts_texts(decoded: _DocTsText | list[_TsText]) -> list[msgspec.Raw]:
    events = decoded.traceEvents if isinstance(decoded, _DocTsText) else decoded
    return [e.ts for e in events or ()]


#: Above this many microseconds a float64 no longer holds every nanosecond (2**53 ns).
_FLOAT_EXACT_US = 2.0**53 / 1000.0


def _ns_of_text(text: bytes, fallback: float) -> int:
    """A JSON number of microseconds, as written, to int64 nanoseconds (rounded half up)."""
    neg = text.startswith(b"-")
    body = text[1:] if neg else text
    whole, _, frac = body.partition(b".")
    if not whole.isdigit() or (frac and not frac.isdigit()):
        return int(_to_ns(np.array([fallback]))[0])  # exponent forms: as the float says
    ns = int(whole) * 1000 + int((frac[:3] or b"0").ljust(3, b"0"))
    if len(frac) > 3 and frac[3:4] >= b"5":
        ns += 1
    return -ns if neg else ns


def _malformed(path: Path, data: bytes, exc: Exception) -> TraceFormatError:
    msg = str(exc)
    if "truncated" in msg:
        return TraceFormatError(
            path,
            f"the JSON is truncated (it ends after {len(data):,} bytes, in the middle of the document)",
            "The profiler or a copy was interrupted while writing it; record or copy the trace again",
        )
    m = re.search(r"byte (\d+)", msg)
    where = ""
    if m:
        pos = int(m.group(1))
        line = data.count(b"\n", 0, pos) + 1
        where = f" at line {line} (byte {pos:,})"
    return TraceFormatError(
        path,
        f"is not valid JSON{where}: {msg.removeprefix('JSON is malformed: ')}",
        "The file is damaged or was edited by hand; record or export the trace again",
    )


def _decode_tolerant(path: Path, obj: Any) -> tuple[_Doc, Iterator[_Chunk]]:
    """Decode event by event, so that one odd event does not sink the whole file."""
    if isinstance(obj, dict):
        raw_events = obj.get("traceEvents")
        header = {k: v for k, v in obj.items() if k != "traceEvents"}
    elif isinstance(obj, list):
        raw_events, header = obj, {}
    else:
        raise _not_a_trace(path, "neither an object nor an array")
    if not isinstance(raw_events, list):
        raise _not_a_trace(path, "it has no 'traceEvents' list")
    known = set(_Doc.__struct_fields__)
    try:
        doc = msgspec.convert(
            {
                k: msgspec.Raw(msgspec.json.encode(v)) if k in _RAW_DOC_FIELDS else v
                for k, v in header.items()
                if k in known
            },
            _Doc,
            strict=False,
        )
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, f"has a malformed header field ({exc})", "Fix or re-export the trace") from None
    events, bad, dropped = _tolerant_events(raw_events, 0)
    return doc, iter([_Chunk(0, events, bad, dropped)])


def _tolerant_events(raw_events: list[Any], offset: int) -> tuple[list[_Event], list[tuple[int, str]], int]:
    """Events converted one by one; odd args are dropped, unreadable events reported."""
    events: list[_Event] = []
    bad: list[tuple[int, str]] = []
    odd_args = 0
    for i, ev in enumerate(raw_events, start=offset):
        if not isinstance(ev, dict):
            bad.append((i, f"is a {type(ev).__name__}, not an object"))
            continue
        cleaned = {k: (_NAN if v is None and k in ("ts", "dur") else v) for k, v in ev.items()}
        args = cleaned.get("args")
        if isinstance(args, dict):
            cleaned["args"] = {
                k: msgspec.Raw(msgspec.json.encode(v)) if k in _RAW_ARG_KEYS else v for k, v in args.items()
            }
        try:
            events.append(msgspec.convert(cleaned, _Event, strict=False))
            continue
        except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as exc:
            problem = f"has a bad field ({exc})"
        if "args" in cleaned:
            # Keep the event's timing when only its arguments are odd.
            cleaned.pop("args")
            try:
                events.append(msgspec.convert(cleaned, _Event, strict=False))
                odd_args += 1
                continue
            except (msgspec.ValidationError, TypeError, ValueError, OverflowError):
                pass
        bad.append((i, problem))
    return events, bad, odd_args


_RAW_DOC_FIELDS = frozenset({"deviceProperties", "distributedInfo"} | set(_EXTRA_FIELDS))
_RAW_ARG_KEYS = frozenset(
    {
        "Process Group Name",
        "Process Group Description",
        "Input Dims",
        "Input type",
        "Input Strides",
        "Concrete Inputs",
        "rank",
    }
)


def _load_raw(raw: msgspec.Raw) -> Any:
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return json.loads(bytes(raw))


def _rank_problem(value: object) -> str | None:
    """Why a ``distributedInfo.rank`` value is not a rank number (None if it is one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is a {type(value).__name__}, not a number"
    if isinstance(value, float) and not value.is_integer():
        return "is not a whole number"
    if value < 0:
        return "is negative"
    if value > _MAX_RANK:
        return f"is larger than {_MAX_RANK:,}"
    return None


#: The largest rank number read from a file (ranks are int32 in every table).
_MAX_RANK = 2**31 - 1


def _header_field(path: Path, doc: _Doc, name: str) -> Any:
    """A raw header field's value (the decoder leaves raw text unchecked: checked here)."""
    try:
        return _load_raw(getattr(doc, name))
    except UnicodeDecodeError:
        raise TraceFormatError(
            path,
            f"is not valid UTF-8 text (in its {name} field)",
            "JSON traces are UTF-8; the file is damaged or was re-encoded: record or export the trace again",
        ) from None


def _header(path: Path, doc: _Doc, name_rank: int | None, bad_events: str = "raise") -> _Header:
    dist = _header_field(path, doc, "distributedInfo")
    if not isinstance(dist, dict):
        dist = {}
    props = _header_field(path, doc, "deviceProperties")
    if not isinstance(props, list):
        props = []
    rank_value = dist.get("rank")
    warnings: list[str] = []
    why = None if rank_value is None else _rank_problem(rank_value)
    if why is not None:
        if bad_events == "raise":
            raise TraceFormatError(
                path,
                f"its distributedInfo.rank {why} (a rank is a whole number from 0 to {_MAX_RANK:,})",
                "Fix the file's distributedInfo, or pass bad_events='drop' to ignore it "
                "(the rank then comes from the file name)",
            )
        warnings.append(f"{path.name}: distributedInfo.rank {why}; ignored")
        rank_value = None
    if rank_value is not None:
        rank, source = int(rank_value), "distributedInfo"
    elif name_rank is not None:
        rank, source = name_rank, "file name"
    else:
        rank, source = 0, "default"
    world = dist.get("world_size")
    extra = {}
    for f in _EXTRA_FIELDS:
        value = _header_field(path, doc, f)
        if value is not None:
            extra[f] = value
    fields = {
        "world_size": world if isinstance(world, int) else None,
        "backend": dist.get("backend") if isinstance(dist.get("backend"), str) else None,
        "distributed_info": dist,
        "device_properties": tuple(p for p in props if isinstance(p, dict)),
        "schema_version": doc.schemaVersion,
        "trace_name": doc.traceName,
        "extra": extra,
    }
    if warnings:
        extra[WARNINGS_KEY] = warnings
    base = int(doc.baseTimeNanoseconds or 0)
    if not abs(base) < _MAX_NS:
        raise TraceFormatError(
            path,
            "its baseTimeNanoseconds is out of range (beyond 2**62 ns)",
            "The file is damaged or was edited; record or export the trace again",
        )
    return _Header(rank=rank, rank_source=source, base_time_ns=base, fields=fields)


# --------------------------------------------------------------------------------------
# Columns, chunk by chunk
# --------------------------------------------------------------------------------------
@dataclass
class _FileState:
    """What the chunks of one file accumulate besides their columns."""

    skipped: dict[str, int] = field(default_factory=dict)
    meta_events: list[_Event] = field(default_factory=list)
    begin_end: list[_Event] = field(default_factory=list)
    profiler_span: tuple[float, float] | None = None
    labels: dict[str, int] = field(default_factory=dict)
    ts_ns_precision: bool = False
    #: Malformed events by problem: (count, first example).
    problems: dict[str, list[Any]] = field(default_factory=dict)
    unreadable: list[tuple[int, str]] = field(default_factory=list)
    args_dropped: int = 0
    #: String pids as written in the file, by the id they were given.
    pid_text: dict[int, str] = field(default_factory=dict)
    #: The file's baseTimeNanoseconds (timestamps that would overflow with it are malformed).
    base_time_ns: int = 0
    #: The largest ``|ts|`` (us) checked against ``base_time_ns`` (NaN if any was NaN): where
    #: ``ts_bound * 1000 + |base|`` stays far below ``_MAX_NS`` for two bases, every check
    #: gave what it gives with either (``pieces.parse_streamed`` reads with a guessed base).
    ts_bound: float = 0.0

    def bound_ts(self, ts: np.ndarray) -> None:
        if len(ts):
            self.ts_bound = max(self.ts_bound, float(np.abs(ts).max()))
            if np.isnan(ts).any():
                self.ts_bound = float("nan")

    def count(self, key: str, n: int) -> None:
        if n:
            self.skipped[key] = self.skipped.get(key, 0) + n

    def take_pseudo(
        self, ts: np.ndarray, dur: np.ndarray, is_instant: np.ndarray, is_trace: np.ndarray, pseudo: np.ndarray
    ) -> None:
        """Kineto's own pseudo-events among a part's rows (``pseudo``; ``is_trace``: those of
        the ``Trace`` category): the profiler span their complete events with times that fit
        give, widened into :attr:`profiler_span`, and their count ("profiler markers").
        Both readers (this module's and the C scanner's) leave them out of the tables."""
        with np.errstate(invalid="ignore", over="ignore"):
            span_rows = is_trace & ~is_instant & (np.abs(ts) * 1000.0 + self.base_time_ns < _MAX_NS)
            span_rows &= (dur >= 0) & (dur * 1000.0 < _MAX_NS)
        if span_rows.any():
            lo, hi = float(ts[span_rows].min()), float((ts[span_rows] + dur[span_rows]).max())
            old = self.profiler_span
            self.profiler_span = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
        self.count("profiler markers", int(pseudo.sum()))

    def problem(self, label: str, n: int, example: str) -> None:
        if n:
            entry = self.problems.setdefault(label, [0, example])
            entry[0] += n

    def raise_or_count(self, path: Path, bad_events: str) -> None:
        n_bad = sum(c for c, _ in self.problems.values()) + len(self.unreadable)
        if self.args_dropped:
            self.skipped[ARGS_DROPPED] = self.args_dropped
        if not n_bad:
            return
        reasons = [f"{c:,} {label} (first: {example})" for label, (c, example) in self.problems.items()]
        if self.unreadable:
            i, why = self.unreadable[0]
            reasons.append(f"{len(self.unreadable):,} unreadable (first: event #{i} {why})")
        if bad_events == "raise":
            raise TraceFormatError(
                path,
                f"{n_bad:,} malformed event{'s' if n_bad != 1 else ''}: " + "; ".join(reasons),
                "Pass bad_events='drop' to tv.load() to drop them and read the rest",
            )
        self.skipped[DROPPED] = n_bad


@dataclass
class _Part:
    """Columns of the kept events of one chunk (or of a whole file once merged), in file order."""

    ts_us: np.ndarray
    #: ``ts`` in exact int64 ns (read from the text), where a float would lose digits.
    ts_ns: np.ndarray | None
    dur_us: np.ndarray
    #: Instant (``i``/``I``) events, and the ``args.rank`` of instant events (-1 if none).
    instant: np.ndarray
    arg_rank: np.ndarray
    name_codes: np.ndarray  # int32 into names
    names: list[str]
    kind: np.ndarray  # int8 codes of EventKind
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    #: Rows of kernels, memcpy and memset, and their arguments (one array per field).
    gpu_rows: np.ndarray
    gpu: dict[str, np.ndarray]
    #: Rows carrying collective metadata, and the metadata (one list per field).
    comm_rows: np.ndarray
    comm: dict[str, list[Any]]
    #: Memory records ([memory], [OutOfMemory]) and their fields.
    mem: memory.MemoryRows
    #: Rows of CPU operators with recorded arguments, and the arguments (see op_args.py).
    op: op_args.OpArgs = field(default_factory=op_args.empty)


def _as_int(v: object, labels: dict[str, int]) -> int:
    """An id from an int, a numeric string ("7", "0x0", "stream 7") or a label."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    text = str(v).strip()
    try:
        number = int(text, 0)
        if _I64_RANGE[0] <= number <= _I64_RANGE[1]:
            return number
    except ValueError:
        pass
    m = re.search(r"-?\d+", text)
    if m is not None and len(m.group(0)) < 18:
        return int(m.group(0))
    # Names with no number get stable negative ids (-2, -3, ...), shared within a file.
    return labels.setdefault(text, -2 - len(labels))


def _int_lut(uniques: Iterable[object], labels: dict[str, int]) -> np.ndarray:
    return np.array([_as_int(u, labels) for u in uniques], dtype=np.int64)


def _int_column(values: np.ndarray, labels: dict[str, int]) -> np.ndarray:
    """int64 column from an object array of ints, numeric strings or labels."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        out: np.ndarray = _int_lut(uniques, labels)[codes]
        return out


def _pair_begin_end(events: list[_Event], skipped: dict[str, int]) -> list[_Event]:
    """Complete events made from B/E pairs (matched per thread, innermost first)."""
    stacks: dict[tuple[Any, Any], list[_Event]] = {}
    out: list[_Event] = []
    for ev in events:
        key = (ev.pid, ev.tid)
        if ev.ph == "B":
            stacks.setdefault(key, []).append(ev)
        elif stacks.get(key):
            begin = stacks[key].pop()
            out.append(
                _Event(
                    ph="X",
                    cat=begin.cat,
                    name=begin.name,
                    pid=begin.pid,
                    tid=begin.tid,
                    ts=begin.ts,
                    dur=ev.ts - begin.ts,
                    args=begin.args,
                )
            )
        else:
            skipped["unmatched E events"] = skipped.get("unmatched E events", 0) + 1
    unmatched = sum(len(s) for s in stacks.values())
    if unmatched:
        skipped["unmatched B events"] = unmatched
    return out


_GET_PH = operator.attrgetter("ph")
_GET_CAT = operator.attrgetter("cat")
_GET_NAME = operator.attrgetter("name")
_GET_PID = operator.attrgetter("pid")
_GET_TID = operator.attrgetter("tid")
_GET_ARGS = operator.attrgetter("args")
_GET_TS = operator.attrgetter("ts")
_GET_DUR = operator.attrgetter("dur")
_GET_CORRELATION = operator.attrgetter("correlation")
_GET_EXTERNAL_ID = operator.attrgetter("external_id")
_GET_DEVICE = operator.attrgetter("device")
_GET_COLLECTIVE = operator.attrgetter("collective")
_GET_STREAM = operator.attrgetter("stream")
_GET_GPU_ARGS = tuple(
    operator.attrgetter(f)
    for f in (
        "grid",
        "block",
        "registers",
        "shared_memory",
        "blocks_per_sm",
        "warps_per_sm",
        "occupancy",
        "nbytes",
        "bandwidth",
        "wait_on_stream",
        "wait_on_record_correlation",
    )
)


def _first_seen_codes(values: Iterable[Any], n: int) -> tuple[np.ndarray, list[Any]]:
    """Dictionary-encode values: (codes, distinct values in first-seen order).

    In C: a dict numbers each value as it first meets it (``map`` over its ``__getitem__``).
    """
    number: defaultdict[Any, int] = defaultdict(itertools.count().__next__)
    codes = np.fromiter(map(number.__getitem__, values), dtype=np.int64, count=n)
    return codes, list(number)


def _renumber_first_seen(codes: np.ndarray, values: list[Any], rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """The codes of the rows kept (``rows``, sorted), renumbered to the values they use, in
    first-seen order among those rows."""
    if len(rows) == len(codes):
        return codes, values
    kept = codes[rows]
    used = np.bincount(kept, minlength=len(values)) > 0
    dropped = np.ones(len(codes), dtype=bool)
    dropped[rows] = False
    if not used[codes[dropped]].any():
        # The common case (Kineto's pseudo events, named like no kept event): the values
        # keep their relative order; only the unused ones go.
        lut = np.cumsum(used) - 1
        return lut[kept], list(itertools.compress(values, used.tolist()))
    order = list(dict.fromkeys(kept.tolist()))
    remap = np.zeros(len(values), dtype=np.int64)
    remap[order] = np.arange(len(order))
    return remap[kept], [values[i] for i in order]


def _part(chunk: _Chunk, state: _FileState) -> _Part:
    """Columns of one chunk's complete and instant events; the rest goes to ``state``."""
    events = chunk.events
    state.unreadable += chunk.bad
    state.args_dropped += chunk.args_dropped
    # Phases as small codes (the decoder hands out one interned string per phase): the
    # counts, the kept rows and the instant flags then never touch the events again.
    ph = np.fromiter(map(_PHASE_CODE.__getitem__, map(_GET_PH, events)), dtype=np.int8, count=len(events))
    counts = np.bincount(ph, minlength=len(_PHASES))
    n_begin_end = int(counts[_PH["B"]] + counts[_PH["E"]])
    if n_begin_end:
        # Matched across the whole file at the end (pairs may straddle chunks).
        state.begin_end += itertools.compress(events, ((ph == _PH["B"]) | (ph == _PH["E"])).tolist())
    n_meta = int(counts[_PH["M"]])
    if n_meta:
        state.meta_events += itertools.compress(events, (ph == _PH["M"]).tolist())
    is_kept = _KEPT_LUT[ph]
    n_kept = int(counts[_KEPT_LUT].sum())
    kept_at: np.ndarray | None = None  # index in events of each kept event, when some are not
    if n_kept == len(events):
        kept = events
        is_instant = ph != _PH["X"]
    else:
        kept_at = np.flatnonzero(is_kept)
        kept = list(itertools.compress(events, is_kept.tolist()))
        is_instant = ph[kept_at] != _PH["X"]
    n_flow = int(counts[_PH["s"]] + counts[_PH["f"]] + counts[_PH["t"]])
    state.count("flow events", n_flow)
    state.count("other phases", len(events) - n_kept - n_meta - n_flow - n_begin_end)

    # One C-level pass per field (map + attrgetter): ~3x faster than zip(*map(...)) of tuples;
    # names, categories and pids are numbered as they are met (a dict, in C), no list kept.
    n_all = len(kept)
    cat_codes, cat_values = _first_seen_codes(map(_GET_CAT, kept), n_all)
    all_name_codes, all_names = _first_seen_codes(map(_GET_NAME, kept), n_all)
    pid_codes, pid_values = _first_seen_codes(map(_GET_PID, kept), n_all)
    tid_codes, tid_values = _first_seen_codes(map(_GET_TID, kept), n_all)
    args_t = list(map(_GET_ARGS, kept))
    ts = np.fromiter(map(_GET_TS, kept), dtype=np.float64, count=n_all)
    dur = np.fromiter(map(_GET_DUR, kept), dtype=np.float64, count=n_all)
    state.bound_ts(ts)

    # Kineto's own pseudo-events (pids "Spans"/"Traces"): the profiler span, iteration markers.
    trace_cat = [i for i, c in enumerate(cat_values) if c == "Trace"]
    pseudo_pid = [i for i, p in enumerate(pid_values) if isinstance(p, str) and p in _KINETO_PSEUDO_PIDS]
    keep = np.ones(len(kept), dtype=bool)
    if trace_cat or pseudo_pid:
        is_trace = derive.in_codes(cat_codes, trace_cat)
        pseudo = is_trace | derive.in_codes(pid_codes, pseudo_pid)
        state.take_pseudo(ts, dur, is_instant, is_trace, pseudo)
        keep &= ~pseudo

    # Malformed events: no dur on a complete event, negative dur, non-finite times, times
    # that do not fit int64 nanoseconds (never wrapped around).
    no_dur = np.isnan(dur) & ~is_instant & keep
    dur[is_instant & np.isnan(dur)] = 0.0
    neg_dur = (dur < 0) & keep
    bad_ts = ~np.isfinite(ts) & keep
    inf_dur = np.isinf(dur) & keep & ~bad_ts
    with np.errstate(invalid="ignore", over="ignore"):
        far_ts = np.isfinite(ts) & ~(np.abs(ts * 1000.0 + state.base_time_ns) < _MAX_NS) & keep
        far_dur = np.isfinite(dur) & (dur * 1000.0 >= _MAX_NS) & keep & ~bad_ts
    for label, mask in (
        ("without 'dur'", no_dur),
        ("with a negative 'dur'", neg_dur),
        ("with a NaN or infinite 'ts'", bad_ts),
        ("with an infinite 'dur'", inf_dur),
        ("with a 'ts' out of range (beyond 2**62 ns)", far_ts),
        ("with a 'dur' out of range (beyond 2**62 ns)", far_dur),
    ):
        mask &= keep
        c = int(mask.sum())
        if c:
            at = int(np.flatnonzero(mask)[0])
            index = chunk.offset + (at if kept_at is None else int(kept_at[at]))
            # The event's position, not its content: messages never quote the file.
            state.problem(label, c, f"event #{index}" if chunk.offset >= 0 else "a B/E pair")
            keep &= ~mask
    rows = np.flatnonzero(keep)
    if len(rows) != len(kept):
        ts, dur = ts[rows], dur[rows]
        cat_codes, pid_codes = cat_codes[rows], pid_codes[rows]
        tid_codes = tid_codes[rows]
        args_t = [args_t[i] for i in rows.tolist()]
    n = len(rows)
    ts_ns = None
    if (
        n
        and chunk.ts_text is not None
        and float(np.abs(ts).max()) >= _FLOAT_EXACT_US
        and not np.array_equal(ts, np.floor(ts))
    ):
        # Microseconds since the epoch with a fractional part: a float keeps only ~0.25 us
        # of it, so the nanoseconds are read from the number's text.
        texts = chunk.ts_text()
        positions = rows if kept_at is None else kept_at[rows]
        ts_ns = np.array(
            [_ns_of_text(bytes(texts[i]), t) for i, t in zip(positions.tolist(), ts.tolist(), strict=True)],
            dtype=np.int64,
        )
    instant = is_instant[rows]
    arg_rank = np.full(n, -1, dtype=np.int64)
    for i in np.flatnonzero(instant).tolist():
        if args_t[i].rank:
            value = _load_raw(args_t[i].rank)
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if _rank_problem(value) is None:
                arg_rank[i] = int(value)
    if n and not state.ts_ns_precision and not np.array_equal(ts, np.floor(ts)):
        state.ts_ns_precision = True

    cat_to_code = np.array(
        [_CODE[_CAT_TO_KIND.get(str(c).lower(), EventKind.OTHER)] for c in cat_values], dtype=np.int8
    )
    kind = cat_to_code[cat_codes] if n else np.empty(0, dtype=np.int8)
    name_codes, names = _renumber_first_seen(all_name_codes, all_names, rows)
    pid_lut = _int_lut(pid_values, state.labels)
    for value, number in zip(pid_values, pid_lut.tolist(), strict=True):
        if isinstance(value, str):
            state.pid_text.setdefault(number, value)
    pid = pid_lut[pid_codes] if n else np.empty(0, dtype=np.int64)
    if set(map(type, tid_values)) <= {int}:  # the common case, converted in C
        tid = np.array(tid_values, dtype=np.int64)[tid_codes] if n else np.empty(0, dtype=np.int64)
    else:
        tid = _int_column(np.array(tid_values, dtype=object)[tid_codes], state.labels)
    correlation = np.fromiter(map(_GET_CORRELATION, args_t), dtype=np.int64, count=n)
    external_id = np.fromiter(map(_GET_EXTERNAL_ID, args_t), dtype=np.int64, count=n)

    device = np.full(n, -1, dtype=np.int16)
    stream = np.full(n, -1, dtype=np.int64)
    dev_rows = np.flatnonzero(derive.in_codes(kind, _DEVICE_CODES))
    if len(dev_rows):
        dev_args = [args_t[i] for i in dev_rows.tolist()]
        d = np.fromiter(map(_GET_DEVICE, dev_args), dtype=np.int64, count=len(dev_args))
        s_vals = list(map(_GET_STREAM, dev_args))
        device[dev_rows] = np.where(d >= 0, d, pid[dev_rows]).astype(np.int16)
        if set(map(type, s_vals)) <= {int}:
            s = np.fromiter(s_vals, dtype=np.int64, count=len(s_vals))
        else:  # ROCm: string stream ids on runtime events
            s = _int_column(np.array(s_vals, dtype=object), {})
        stream[dev_rows] = np.where(s >= 0, s, tid[dev_rows])

    has_gpu_args = derive.in_codes(kind, _ARGS_CODES)
    sync_rows = np.flatnonzero(kind == _CODE[EventKind.CUDA_SYNC])
    if len(sync_rows):
        # cuda_sync records that name the CUDA event they wait on get a gpu_args row too.
        waits = [args_t[i].wait_on_stream >= 0 or args_t[i].wait_on_record_correlation >= 0 for i in sync_rows.tolist()]
        has_gpu_args[sync_rows[np.array(waits, dtype=bool)]] = True
    gpu_rows = np.flatnonzero(has_gpu_args)
    comm_rows, comm = _comm_rows(args_t, kind, name_codes, [str(x) for x in names])
    op = op_args.collect(args_t, np.flatnonzero(kind == _CODE[EventKind.CPU_OP]))
    return _Part(
        ts_us=ts,
        ts_ns=ts_ns,
        dur_us=dur,
        instant=instant,
        arg_rank=arg_rank,
        name_codes=name_codes.astype(np.int32),
        names=[str(x) for x in names],
        kind=kind,
        pid=pid,
        tid=tid,
        device=device,
        stream=stream,
        correlation=correlation,
        external_id=external_id,
        gpu_rows=gpu_rows,
        gpu=_gpu_arrays([args_t[i] for i in gpu_rows.tolist()]),
        comm_rows=comm_rows,
        comm=comm,
        mem=memory.memory_rows(args_t, name_codes, [str(x) for x in names]),
        op=op,
    )


_NO_TRIPLE = (-1, -1, -1)
_I32_MAX = int(np.iinfo(np.int32).max)


def _pad3(v: object) -> tuple[int, ...] | list[int]:
    """A grid/block value as three ints (-1 where absent or not an int)."""
    if not isinstance(v, list):
        return _NO_TRIPLE
    out = [x if isinstance(x, int) else -1 for x in v[:3]]
    return out + [-1] * (3 - len(out))


def _xyz(values: list[object]) -> np.ndarray:
    """Grid or block values as int32 triples: -1 where absent or not an int, clipped to int32."""
    if not values:
        return np.empty((0, 3), dtype=np.int32)
    # The common case, in C: lists of three ints (typed by the decoder) and absent values
    # (memcpy and memset rows carry no grid); anything else takes the per-value path.
    is_list = np.fromiter(map(operator.is_, map(type, values), itertools.repeat(list)), dtype=bool, count=len(values))
    lists: list[list[object]] = list(itertools.compress(values, is_list.tolist()))  # type: ignore[arg-type]
    xyz = np.full((len(values), 3), -1, dtype=np.int64)
    if set(map(type, itertools.compress(values, (~is_list).tolist()))) <= {type(None)} and set(map(len, lists)) <= {3}:
        flat = list(itertools.chain.from_iterable(lists))
        if set(map(type, flat)) <= {int}:
            xyz[is_list] = np.array(flat, dtype=np.int64).reshape(len(lists), 3)
            return np.clip(xyz, -1, _I32_MAX).astype(np.int32)
    rows = [v if type(v) is list and len(v) == 3 else _pad3(v) for v in values]
    return np.clip(np.array(rows, dtype=np.int64).reshape(len(values), 3), -1, _I32_MAX).astype(np.int32)


def _gpu_arrays(args: list[_Args]) -> dict[str, np.ndarray]:
    """Launch and copy arguments of GPU activities as arrays (one entry per activity)."""
    grid, block, regs, smem, bps, wps, occ, nbytes, bw, w_stream, w_corr = (
        list(map(get, args)) for get in _GET_GPU_ARGS
    )
    return gpu_columns(_xyz(grid), _xyz(block), regs, smem, bps, wps, occ, nbytes, bw, w_stream, w_corr)


def gpu_columns(
    grid: np.ndarray,
    block: np.ndarray,
    regs: ArrayLike,
    smem: ArrayLike,
    bps: ArrayLike,
    wps: ArrayLike,
    occ: ArrayLike,
    nbytes: ArrayLike,
    bw: ArrayLike,
    w_stream: ArrayLike,
    w_corr: ArrayLike,
) -> dict[str, np.ndarray]:
    """The launch and copy argument columns of a piece, in their dtypes: the one list of them
    for the msgspec path (values as lists) and the C scanner's (``native.py``: array slices).

    ``grid`` and ``block``: int32 triples (-1 where absent); the other values: one per row.
    """
    return {
        "grid_x": grid[:, 0].copy(),
        "grid_y": grid[:, 1].copy(),
        "grid_z": grid[:, 2].copy(),
        "block_x": block[:, 0].copy(),
        "block_y": block[:, 1].copy(),
        "block_z": block[:, 2].copy(),
        "registers_per_thread": np.array(regs, dtype=np.int64).clip(-1, 2**31 - 1).astype(np.int32),
        "shared_memory_bytes": np.array(smem, dtype=np.int64),
        "blocks_per_sm": np.array(bps, dtype=np.float32),
        "warps_per_sm": np.array(wps, dtype=np.float32),
        "occupancy_pct": np.array(occ, dtype=np.float32),
        "bytes": np.array(nbytes, dtype=np.int64),
        "bandwidth_gbps": np.array(bw, dtype=np.float32),
        "wait_on_stream": np.array(w_stream, dtype=np.int64),
        "wait_on_record_correlation": np.array(w_corr, dtype=np.int64),
    }


_COMM_FIELDS = ("collective", "dtype", "in_nelems", "out_nelems", "group_size", "pg_name", "pg_desc", "seq", "source")


def _comm_rows(
    args: Sequence[_Args], kind: np.ndarray, name_codes: np.ndarray, names: list[str]
) -> tuple[np.ndarray, dict[str, list[Any]]]:
    """Rows carrying collective metadata: recorded args, or old-style ``nccl:*`` annotations."""
    out: dict[str, list[Any]] = {f: [] for f in _COMM_FIELDS}
    with_meta = np.flatnonzero(
        np.fromiter(
            map(operator.is_not, map(_GET_COLLECTIVE, args), itertools.repeat(None)), dtype=bool, count=len(args)
        )
    ).tolist()
    annot_codes = [i for i, nm in enumerate(names) if nm.startswith("nccl:")]
    annotated = (
        np.flatnonzero((kind == _CODE[EventKind.USER_ANNOTATION]) & derive.in_codes(name_codes, annot_codes)).tolist()
        if annot_codes
        else []
    )
    rows = sorted(set(with_meta) | set(annotated))
    for i in rows:
        a = args[i]
        if a.collective is not None:
            values = (
                normalize_collective(a.collective),
                a.dtype,
                a.in_nelems,
                a.out_nelems,
                a.group_size,
                _raw_str(a.pg_name),
                _raw_str(a.pg_desc),
                a.seq,
                "kernel" if kind[i] == _CODE[EventKind.KERNEL] else "record_param_comms",
            )
        else:
            nelems, dtype = _first_dims(a.input_dims, a.input_type)
            label = names[int(name_codes[i])].split(":", 1)[1]
            values = (normalize_collective(label), dtype, nelems, -1, -1, None, None, -1, "annotation")
        for f, v in zip(_COMM_FIELDS, values, strict=True):
            out[f].append(v)
    return np.array(rows, dtype=np.int64), out


def _merge(parts: list[_Part], state: _FileState) -> _FileColumns:
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

    columns: dict[str, Any] = {attr: cat(attr).astype(dtype) for attr, dtype in _PART_DTYPES.items()}
    return _FileColumns(
        **columns,
        ts_ns=(
            np.concatenate([p.ts_ns if p.ts_ns is not None else _to_ns(p.ts_us) for p in parts]).astype(np.int64)
            if any(p.ts_ns is not None for p in parts)
            else None
        ),
        name_codes=np.concatenate(name_codes).astype(np.int32) if parts else np.empty(0, np.int32),
        names=list(index),
        gpu_rows=np.concatenate(gpu_rows) if parts else np.empty(0, np.int64),
        gpu={k: np.concatenate([p.gpu[k] for p in parts]) for k in parts[0].gpu} if parts else _gpu_arrays([]),
        comm_rows=np.concatenate(comm_rows) if parts else np.empty(0, np.int64),
        comm={f: [v for p in parts for v in p.comm[f]] for f in _COMM_FIELDS},
        mem=memory.MemoryRows.concat([p.mem for p in parts], offsets),
        op=op_args.OpArgs.concat([p.op for p in parts], offsets),
        **_file_fields(state),
    )


def _one_part(part: _Part, state: _FileState) -> _FileColumns:
    """:func:`_merge` of a single part whose names are distinct: the same columns, not copied
    (the part is dropped after it), its own numbering of names and argument texts."""
    columns: dict[str, Any] = {
        attr: getattr(part, attr).astype(dtype, copy=False) for attr, dtype in _PART_DTYPES.items()
    }
    return _FileColumns(
        **columns,
        ts_ns=None if part.ts_ns is None else part.ts_ns.astype(np.int64, copy=False),
        name_codes=part.name_codes.astype(np.int32, copy=False),
        names=list(part.names),
        gpu_rows=part.gpu_rows,
        gpu=part.gpu,
        comm_rows=part.comm_rows,
        comm={f: list(part.comm[f]) for f in _COMM_FIELDS},
        mem=part.mem,
        op=op_args.OpArgs.concat([part.op], [0]),
        **_file_fields(state),
    )


#: The per-event columns a file's parts hold, and their dtypes in :class:`_FileColumns`
#: (:func:`_merge` and :func:`_one_part`; ``ts_ns`` and ``name_codes`` are built apart).
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


def _file_fields(state: _FileState) -> dict[str, Any]:
    """The :class:`_FileColumns` fields that come from the file as a whole (its state), not its parts."""
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
    }


@dataclass
class _FileColumns:
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


def _metadata(meta_events: list[_Event]) -> tuple[dict[int, str], dict[int, str], list[tuple[int, int, str]]]:
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


def _to_ns(us: np.ndarray) -> np.ndarray:
    """Microseconds (float) to int64 ns without losing the integer part to float rounding."""
    whole = np.floor(us)
    out: np.ndarray = whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000.0).astype(np.int64)
    return out


# --------------------------------------------------------------------------------------
# Ranks, sorting and the per-rank tables
# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------
# Ranks, sorting and the per-rank tables
# --------------------------------------------------------------------------------------
def _rank_of_rows(
    path: Path, raw: _FileColumns, header: _Header, pid_map: Mapping[int | str, int] | None, state: dict[str, int]
) -> tuple[np.ndarray | None, str]:
    """Per-row ranks for files holding several ranks (-1: no rank), or None for a one-rank file.

    Instant events whose ``pid`` names no process (an empty or non-numeric string, as the
    global instant events of files merged from several ranks have) never block the split:
    they go to the rank in their ``args.rank``, or are left out and counted.
    """
    mapping: dict[int, int] = {}
    source = ""
    if pid_map:
        labels = dict(raw.labels)  # a copy: keys not in the file must not add labels
        for k, v in pid_map.items():
            mapping[_as_int(k, labels)] = int(v)
        source = "pid map"
    else:
        for table in (raw.process_names, raw.process_labels):
            for pid, label in table.items():
                m = _RANK_IN_PROCESS.search(label)
                if m:
                    mapping.setdefault(pid, int(m.group(1)))
        if len(set(mapping.values())) < 2:
            return None, ""
        source = "process name"
    label_ids = np.array(sorted(raw.labels.values()), dtype=np.int64)
    no_process = raw.instant & np.isin(raw.pid, label_ids) & ~np.isin(raw.pid, list(mapping))
    pids = np.unique(raw.pid[~no_process])
    missing = [int(p) for p in pids if int(p) not in mapping]
    if missing:
        shown = [repr(raw.pid_text[p][:40]) if p in raw.pid_text else str(p) for p in missing[:10]]
        raise TraceFormatError(
            path,
            f"holds several ranks, but processes [{', '.join(shown)}] have no rank "
            f"(known: {dict(sorted(mapping.items())[:10])})",
            "Pass pid_map={pid: rank, ...} to tv.load() covering every process id of the file "
            "(string pids as written in the file)",
        )
    lut_pids = np.array(sorted(mapping), dtype=np.int64)
    lut_ranks = np.array([mapping[p] for p in sorted(mapping)], dtype=np.int64)
    pos = np.minimum(np.searchsorted(lut_pids, raw.pid), max(len(lut_pids) - 1, 0))
    row_ranks = lut_ranks[pos] if len(lut_pids) else np.full(len(raw.pid), -1, np.int64)
    if no_process.any():
        ranks = np.unique(lut_ranks)
        by_arg = np.where(np.isin(raw.arg_rank, ranks), raw.arg_rank, -1)
        row_ranks = np.where(no_process, by_arg, row_ranks)
        left_out = int((no_process & (by_arg < 0)).sum())
        if left_out:
            state[_NO_PROCESS] = left_out
    return row_ranks, source


#: meta.skipped key: instant events of a multi-rank file with neither a process nor a rank.
_NO_PROCESS = "instant events without a process or rank"


def _split_and_finish(
    path: Path, raw: _FileColumns, header: _Header, pid_map: Mapping[int | str, int] | None
) -> list[RankData]:
    ts_ns, dur_ns, groups, one_rank = split_ranks(path, raw, header, pid_map)
    return [_rank_tables(raw, ts_ns, dur_ns, rows, meta, last_use=one_rank) for meta, rows in groups]


def split_ranks(
    path: Path, raw: _FileColumns, header: _Header, pid_map: Mapping[int | str, int] | None
) -> tuple[np.ndarray, np.ndarray, list[tuple[RankMeta, np.ndarray | None]], bool]:
    """What the rank tables of a file are built from: the events' start and duration in ns,
    each rank's metadata and rows (None: all of them), and whether the file holds one rank
    (its event columns are then read once more, by :func:`_rank_tables` or readers.batch)."""
    ts_ns = (raw.ts_ns if raw.ts_ns is not None else _to_ns(raw.ts_us)) + header.base_time_ns
    dur_ns = np.rint(raw.dur_us * 1000.0).astype(np.int64)
    row_ranks, source = _rank_of_rows(path, raw, header, pid_map, raw.skipped)
    profiler_span = None
    if raw.profiler_span is not None:
        lo, hi = raw.profiler_span
        profiler_span = (
            int(_to_ns(np.array([lo]))[0]) + header.base_time_ns,
            int(_to_ns(np.array([hi]))[0]) + header.base_time_ns,
        )
    groups: list[tuple[int, str, np.ndarray | None]]
    if row_ranks is None:
        groups = [(header.rank, header.rank_source, None)]
        # One rank: each of the file's columns is gathered once (in _rank_tables), then
        # dropped: the file's and the rank's columns are not all in memory at once.
        raw.ts_us = raw.dur_us = raw.arg_rank = raw.instant = _GONE
        raw.ts_ns = None
    else:
        groups = [(int(r), source, np.flatnonzero(row_ranks == r)) for r in np.unique(row_ranks) if r >= 0]
    out: list[tuple[RankMeta, np.ndarray | None]] = []
    for rank, rank_source, rows in groups:
        meta_fields = dict(header.fields)
        pids = raw.process_names.keys() | raw.process_labels.keys()
        if rows is not None:
            mine = set(np.unique(raw.pid[rows]).tolist())
            pids = pids & mine
        meta = RankMeta(
            rank=rank,
            path=str(path),
            rank_source=rank_source,
            base_time_ns=header.base_time_ns,
            ts_precision=raw.ts_precision,
            profiler_start_ns=profiler_span[0] if profiler_span else None,
            profiler_end_ns=profiler_span[1] if profiler_span else None,
            process_names={p: raw.process_names[p] for p in pids if p in raw.process_names},
            process_labels={p: raw.process_labels[p] for p in pids if p in raw.process_labels},
            thread_names=tuple(t for t in raw.thread_names if t[0] in pids),
            skipped=dict(raw.skipped),
            **meta_fields,
        )
        out.append((meta, rows))
    return ts_ns, dur_ns, out, row_ranks is None


#: The events table's columns taken from the file's as they are (in the table's order).
_EVENT_COLUMNS = ("pid", "tid", "device", "stream", "correlation", "external_id")
#: What replaces a file column that :func:`_split_and_finish` no longer needs.
_GONE = np.empty(0)


def _rank_tables(
    raw: _FileColumns,
    ts_ns: np.ndarray,
    dur_ns: np.ndarray,
    rows: np.ndarray | None,
    meta: RankMeta,
    *,
    last_use: bool = False,
) -> RankData:
    """One rank's tables from the file's columns (its ``rows``; None: all). ``last_use``: the
    file's event columns are not read again (one rank): each is dropped once gathered."""
    if rows is None:
        rows = np.arange(len(ts_ns))
    # Sort by start, longer first at equal starts (parents before children), stably.
    order = rows[derive.start_order(ts_ns[rows], dur_ns[rows])]
    n = len(order)
    cols: dict[str, np.ndarray] = {
        "eid": np.arange(n, dtype=np.int64),
        "ts_ns": ts_ns[order],
        "dur_ns": dur_ns[order],
    }
    kind = raw.kind[order]
    name_codes = raw.name_codes[order]
    for col in _EVENT_COLUMNS:
        cols[col] = getattr(raw, col)[order]
        if last_use:
            setattr(raw, col, _GONE)

    launch_kind = derive.in_codes(kind, _LAUNCH_CODES)
    activity = derive.in_codes(kind, _ACTIVITY_CODES)
    cols["launch_eid"] = derive.launch_links(cols["correlation"], launch_kind, activity)
    device_side = derive.in_codes(kind, _DEVICE_CODES)
    # Nesting: CPU events per (pid, tid); device events per (device, stream).
    lane_a = np.where(device_side, cols["device"].astype(np.int64), cols["pid"])
    lane_b = np.where(device_side, cols["stream"], cols["tid"])
    depth, parent = derive.nesting(cols["ts_ns"], cols["dur_ns"], lane_a, lane_b, device_side)
    del lane_a, lane_b
    parent[device_side] = -1
    cols["parent_eid"] = parent
    cols["depth"] = depth

    names = raw.names
    step_name_codes = [i for i, nm in enumerate(names) if nm.startswith("ProfilerStep#")]
    step_numbers = {i: _step_number(names[i]) for i in step_name_codes}
    cols["step"] = derive.steps(
        cols["ts_ns"],
        cols["dur_ns"],
        name_codes,
        kind,
        step_numbers,
        cpu_step_kinds=np.array([KIND_CODE[EventKind.USER_ANNOTATION], KIND_CODE[EventKind.CPU_OP]]),
        device_side=device_side,
        launch_eid=cols["launch_eid"],
    )

    # The names used, in code order, and each row's index among them (np.unique without its sort).
    used = np.flatnonzero(np.bincount(name_codes, minlength=len(names)))
    lut = np.zeros(len(names), dtype=np.int64)
    lut[used] = np.arange(len(used))
    remap = lut[name_codes]
    name_cat = categorical(codes=remap.astype(np.int32), categories=[names[i] for i in used.tolist()])
    kind_cat = categorical(codes=kind.astype(np.int8), categories=KIND_CATEGORIES)

    events = frame(
        {
            "eid": cols["eid"],
            "ts_ns": cols["ts_ns"],
            "dur_ns": cols["dur_ns"],
            "name": name_cat,
            "kind": kind_cat,
            "pid": cols["pid"],
            "tid": cols["tid"],
            "device": cols["device"],
            "stream": cols["stream"],
            "correlation": cols["correlation"],
            "external_id": cols["external_id"],
            "launch_eid": cols["launch_eid"],
            "parent_eid": cols["parent_eid"],
            "depth": cols["depth"].astype(np.int16),
            "step": cols["step"].astype(np.int32),
        }
    )
    # eid of every file row in this rank (-1 for rows of other ranks).
    eid_of_row = np.full(len(ts_ns), -1, dtype=np.int64)
    eid_of_row[order] = cols["eid"]
    return RankData(
        meta=meta,
        events=events,
        gpu_args=_gpu_args_table(raw, eid_of_row, names),
        comms=_comms_table(raw, eid_of_row),
        memory=raw.mem.table(eid_of_row),
        op_args=raw.op.table(eid_of_row),
    )


def _step_number(name: str) -> int:
    m = re.match(r"ProfilerStep#(\d+)", name)
    return int(m.group(1)) if m else -1


def copy_flags(name_codes: np.ndarray, names: Sequence[str], kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GPU activity rows' copy direction (int8 codes into ``COPY_KINDS``, -1: not a copy) and
    pageable flag, from their names (``name_codes`` into ``names``; decided once per distinct
    name) and their kinds (kind codes). The ``gpu_args`` table's ``copy_kind`` and ``pageable``."""
    uniq, inverse = np.unique(name_codes, return_inverse=True)
    copy_code = {c: i for i, c in enumerate(COPY_KINDS)}
    per_name = [(copy_kind_of(names[c]), "Pageable" in names[c]) for c in uniq.tolist()]
    m = len(name_codes)
    ck = (
        np.array([copy_code[k] if k is not None else -1 for k, _ in per_name], dtype=np.int8)[inverse]
        if m
        else np.empty(0, np.int8)
    )
    pageable = np.array([p for _, p in per_name], dtype=bool)[inverse] if m else np.empty(0, bool)
    ck = np.where((ck < 0) & (kinds == KIND_CODE[EventKind.GPU_MEMSET]), copy_code["memset"], ck).astype(np.int8)
    pageable &= derive.in_codes(kinds, [KIND_CODE[EventKind.GPU_MEMCPY], KIND_CODE[EventKind.GPU_MEMSET]]) | (ck >= 0)
    return ck, pageable


def _gpu_args_table(raw: _FileColumns, eid_of_row: np.ndarray, names: list[str]) -> pd.DataFrame:
    eids = eid_of_row[raw.gpu_rows]
    mine = np.flatnonzero(eids >= 0)
    mine = mine[np.argsort(eids[mine], kind="stable")]
    rows = raw.gpu_rows[mine]
    ck, pageable = copy_flags(raw.name_codes[rows], names, raw.kind[rows])
    table: dict[str, Any] = {"eid": eids[mine].astype(np.int64)}
    for col in GPU_ARGS_COLUMNS[1:]:
        if col.name in raw.gpu:
            table[col.name] = raw.gpu[col.name][mine]
    table["copy_kind"] = categorical(codes=ck, categories=COPY_KINDS)
    table["pageable"] = pageable
    return frame(table, [c.name for c in GPU_ARGS_COLUMNS])


def _first_dims(raw_dims: msgspec.Raw, raw_types: msgspec.Raw) -> tuple[int, str | None]:
    dims = _load_raw(raw_dims)
    types = _load_raw(raw_types)
    nelems = -1
    first = dims[0] if isinstance(dims, list) and dims else None
    if isinstance(first, list) and first and all(isinstance(x, int) for x in first):
        nelems = int(np.prod(first, dtype=np.int64))
    dtype = types[0] if isinstance(types, list) and types and isinstance(types[0], str) and types[0] else None
    return nelems, dtype


def _raw_str(raw: msgspec.Raw) -> str | None:
    value = _load_raw(raw)
    return None if value is None else str(value)


def _comms_table(raw: _FileColumns, eid_of_row: np.ndarray) -> pd.DataFrame:
    eids = eid_of_row[raw.comm_rows]
    mine = np.flatnonzero(eids >= 0)
    mine = mine[np.argsort(eids[mine], kind="stable")]
    pick = mine.tolist()
    c = {f: [raw.comm[f][i] for i in pick] for f in _COMM_FIELDS}
    return frame(
        {
            "eid": eids[mine].astype(np.int64),
            "collective": categorical(c["collective"]),
            "dtype": categorical(c["dtype"]),
            "in_nelems": np.array(c["in_nelems"], dtype=np.int64),
            "out_nelems": np.array(c["out_nelems"], dtype=np.int64),
            "elem_bytes": np.array([DTYPE_BYTES.get(d, -1) if d else -1 for d in c["dtype"]], dtype=np.int16),
            "group_size": np.array(c["group_size"], dtype=np.int64).clip(-1, 2**31 - 1).astype(np.int32),
            "pg_name": categorical(c["pg_name"]),
            "pg_desc": categorical(c["pg_desc"]),
            "seq": np.array(c["seq"], dtype=np.int64),
            "source": categorical(c["source"], categories=COMMS_SOURCES),
        },
        [col.name for col in COMMS_COLUMNS],
    )
