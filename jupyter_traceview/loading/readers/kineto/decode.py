"""Bytes to decoded events (the tokenizer): a whole document, typed, chunked or tolerant.

Handled shapes: ``{"traceEvents": [...], ...}`` objects and bare top-level event arrays;
float-microsecond (ns-resolution) and integer-microsecond timestamps. Text that is not UTF-8,
lone surrogate escapes, truncated or malformed JSON and JSON that is not a trace are refused
here with an error naming the problem; values of unexpected types send the document through
the tolerant path, which reads event by event.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ....errors import TraceFormatError
from ..common import NotATraceError
from .events import EXTRA_FIELDS, LIST_DECODER, NAN, NO_RAW, Doc, Event, to_ns, ts_written_with_fraction

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_EVENTS",
    "Chunk",
    "check_surrogates",
    "decode",
    "decode_typed",
    "first_byte",
    "load_raw",
    "not_utf8",
    "ns_of_text",
    "ts_list_texts",
]


class _DocEvents(Doc, gc=False):
    traceEvents: list[Event] | None = None


class _DocRawEvents(Doc, gc=False):
    traceEvents: list[msgspec.Raw] | None = None


_DOC_DECODER = msgspec.json.Decoder(_DocEvents, strict=False)
_RAW_DOC_DECODER = msgspec.json.Decoder(_DocRawEvents, strict=False)
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw], strict=False)

#: Files larger than this are decoded in chunks of CHUNK_EVENTS events, so that the
#: Python objects of only one chunk exist at a time (memory stays ~1.5x the file).
CHUNK_BYTES = 48 * 2**20
CHUNK_EVENTS = 1 << 15


def first_byte(data: bytes) -> int:
    for i in range(min(len(data), 4096)):
        b = data[i]
        if b not in b" \t\r\n\xef\xbb\xbf":
            return b
    return -1


@dataclass
class Chunk:
    """Decoded events of (part of) a file."""

    #: Index in traceEvents of the first event (-1 for events made by the reader).
    offset: int
    events: list[Event]
    #: Events that could not be read at all: (index in traceEvents, problem).
    bad: list[tuple[int, str]]
    #: Events kept without their ``args``, which could not be read.
    args_dropped: int = 0
    #: The events' ``ts`` as written (JSON number text), decoded only when a float
    #: cannot hold them to the nanosecond; None where the text is not at hand.
    ts_text: Callable[[], list[msgspec.Raw]] | None = None
    #: Whether a ``ts`` of the events is written with a fraction (None: not known, assume so).
    ts_fraction: Callable[[], bool] | None = None


def _not_a_trace(path: Path, why: str) -> NotATraceError:
    return NotATraceError(
        path,
        f"is JSON but not a trace ({why})",
        "Pass a PyTorch profiler trace written by torch.profiler (export_chrome_trace or tensorboard_trace_handler)",
    )


def decode(path: Path, data: bytes) -> tuple[Doc, Iterator[Chunk]]:
    """The header and the events, in one chunk or, for big files, in many."""
    first = first_byte(data)
    if first not in (ord("{"), ord("[")):
        what = "is not JSON" if first != -1 else "holds only whitespace"
        raise NotATraceError(
            path, f"{what} (it does not start with '{{' or '[')", "Pass a PyTorch profiler trace (*.json or *.json.gz)"
        )
    is_object = first == ord("{")
    check_surrogates(path, data)
    try:
        return decode_typed(path, data, is_object)
    except UnicodeDecodeError:
        raise not_utf8(path, data) from None
    except RecursionError:
        raise TraceFormatError(
            path,
            "nests JSON arrays or objects too deep to read (thousands of levels)",
            "The file is damaged or was not written by a profiler; record or export the trace again",
        ) from None


def not_utf8(path: Path, data: bytes) -> TraceFormatError:
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
# A UTF-16 surrogate encoded as UTF-8 (ED A0-BF ..): not UTF-8, yet a string decoder may pass it.
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")


def check_surrogates(path: Path, data: bytes) -> None:
    """Refuse lone UTF-16 surrogate escapes (``"\\ud800"``), and surrogates encoded as UTF-8
    bytes (``ED A0 80``, which is not UTF-8): no UTF-8 string can hold them."""
    if b"\xed" in data and (bad := _ENCODED_SURROGATE.search(data)) is not None:  # (one memchr scan)
        line = data.count(b"\n", 0, bad.start()) + 1
        raise TraceFormatError(
            path,
            f"is not valid UTF-8 text at line {line} (byte {bad.start():,}: a UTF-16 surrogate encoded as UTF-8)",
            "JSON traces are UTF-8; the file is damaged or was written by a faulty exporter: record or export "
            "the trace again",
        )
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


def decode_typed(path: Path, data: bytes, is_object: bool) -> tuple[Doc, Iterator[Chunk]]:
    try:
        if len(data) > CHUNK_BYTES:
            # Split the event array into raw slices first (cheap: no objects per field).
            if is_object:
                raw_doc = _RAW_DOC_DECODER.decode(data)
                raws, doc = raw_doc.traceEvents, Doc(**{f: getattr(raw_doc, f) for f in Doc.__struct_fields__})
            else:
                raws, doc = _RAW_LIST_DECODER.decode(data), Doc()
            if raws is None:
                raise _not_a_trace(path, "it has no 'traceEvents'")
            return doc, _raw_chunks(raws)
        if is_object:
            full = _DOC_DECODER.decode(data)
            events, doc = full.traceEvents, full
        else:
            events, doc = LIST_DECODER.decode(data), Doc()
        if events is None:
            raise _not_a_trace(path, "it has no 'traceEvents'")
        text_decoder = _TS_DOC_DECODER if is_object else _TS_LIST_DECODER
        return doc, iter(
            [
                Chunk(
                    0,
                    events,
                    [],
                    ts_text=lambda: _ts_texts(text_decoder.decode(data)),
                    ts_fraction=lambda: ts_written_with_fraction(data),
                )
            ]
        )
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
        raise not_utf8(path, data) from None
    except ValueError:
        raise _malformed(path, data, exc) from None


def _raw_chunks(raws: list[msgspec.Raw]) -> Iterator[Chunk]:
    for start in range(0, len(raws), CHUNK_EVENTS):
        buf = b"[" + b",".join(raws[start : start + CHUNK_EVENTS]) + b"]"
        try:
            events = LIST_DECODER.decode(buf)
        except msgspec.ValidationError:
            events, bad, dropped = _tolerant_events(msgspec.json.decode(buf), start)
            yield Chunk(start, events, bad, dropped)
            continue
        yield Chunk(
            start,
            events,
            [],
            ts_text=functools.partial(ts_list_texts, buf),
            ts_fraction=functools.partial(ts_written_with_fraction, buf),
        )


class _TsText(msgspec.Struct, gc=False):
    ts: msgspec.Raw = NO_RAW


class _DocTsText(msgspec.Struct, gc=False):
    traceEvents: list[_TsText] | None = None


_TS_DOC_DECODER = msgspec.json.Decoder(_DocTsText | list[_TsText])
_TS_LIST_DECODER = msgspec.json.Decoder(list[_TsText])


def ts_list_texts(buf: bytes) -> list[msgspec.Raw]:
    return _ts_texts(_TS_LIST_DECODER.decode(buf))


def _ts_texts(decoded: _DocTsText | list[_TsText]) -> list[msgspec.Raw]:
    events = decoded.traceEvents if isinstance(decoded, _DocTsText) else decoded
    return [e.ts for e in events or ()]


def ns_of_text(text: bytes, fallback: float) -> int:
    """A JSON number of microseconds, as written, to int64 nanoseconds (rounded half up)."""
    neg = text.startswith(b"-")
    body = text[1:] if neg else text
    whole, _, frac = body.partition(b".")
    if not whole.isdigit() or (frac and not frac.isdigit()):
        return int(to_ns(np.array([fallback]))[0])  # exponent forms: as the float says
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


def _decode_tolerant(path: Path, obj: Any) -> tuple[Doc, Iterator[Chunk]]:
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
    known = set(Doc.__struct_fields__)
    try:
        doc = msgspec.convert(
            {
                k: msgspec.Raw(msgspec.json.encode(v)) if k in _RAW_DOC_FIELDS else v
                for k, v in header.items()
                if k in known
            },
            Doc,
            strict=False,
        )
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, f"has a malformed header field ({exc})", "Fix or re-export the trace") from None
    events, bad, dropped = _tolerant_events(raw_events, 0)
    return doc, iter([Chunk(0, events, bad, dropped)])


def _tolerant_events(raw_events: list[Any], offset: int) -> tuple[list[Event], list[tuple[int, str]], int]:
    """Events converted one by one; odd args are dropped, unreadable events reported."""
    events: list[Event] = []
    bad: list[tuple[int, str]] = []
    odd_args = 0
    for i, ev in enumerate(raw_events, start=offset):
        if not isinstance(ev, dict):
            bad.append((i, f"is a {type(ev).__name__}, not an object"))
            continue
        cleaned = {k: (NAN if v is None and k in ("ts", "dur") else v) for k, v in ev.items()}
        args = cleaned.get("args")
        if isinstance(args, dict):
            cleaned["args"] = {
                k: msgspec.Raw(msgspec.json.encode(v)) if k in _RAW_ARG_KEYS else v for k, v in args.items()
            }
        try:
            events.append(msgspec.convert(cleaned, Event, strict=False))
            continue
        except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as exc:
            problem = f"has a bad field ({exc})"
        if "args" in cleaned:
            # Keep the event's timing when only its arguments are odd.
            cleaned.pop("args")
            try:
                events.append(msgspec.convert(cleaned, Event, strict=False))
                odd_args += 1
                continue
            except (msgspec.ValidationError, TypeError, ValueError, OverflowError):
                pass
        bad.append((i, problem))
    return events, bad, odd_args


_RAW_DOC_FIELDS = frozenset({"deviceProperties", "distributedInfo"} | set(EXTRA_FIELDS))
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


def load_raw(raw: msgspec.Raw) -> Any:
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return json.loads(bytes(raw))
