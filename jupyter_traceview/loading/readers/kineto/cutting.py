"""Finding a Kineto file's event array and cutting it into byte ranges ("pieces").

A Kineto file is one JSON object whose ``traceEvents`` array holds the events. The array is
cut between two elements (``}``, a comma, ``{``; preferably where a newline follows the
comma, as profilers write one element per line: a raw newline in valid JSON is always
whitespace between tokens, never inside a string) into pieces that each decode as an array
of whole events. A wrong cut cannot give wrong tables: the first piece starts right after
the array's ``[`` (checked: the rest of the document, with ``[]`` in the array's place,
decodes as the header), so a cut inside a string leaves that piece with an unterminated
string and a cut inside an element leaves its brackets unbalanced: it fails to decode, and
by induction every piece that decodes starts and ends between two elements. Every failure
raises :class:`SplitFailed`: the caller then reads the file whole
(:func:`~.whole.parse_kineto`), which gives the same tables and the same errors.

:func:`plan` cuts a file that can be read at any offset (``pread``, or bytes in memory);
:class:`Cutter` cuts a document that can only be read forward (a gzip file, inflated as it
is read) as it comes.
"""

from __future__ import annotations

import bisect
import collections
import functools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ....errors import TraceFormatError
from ...storage import RemotePath
from .decode import check_surrogates, first_byte
from .events import MAX_NS, Doc

__all__ = [
    "CUT",
    "DECODE_ERRORS",
    "HEAD_BYTES",
    "SPACES",
    "STREAM_WINDOW",
    "TAIL_BYTES",
    "BytesSource",
    "Cutter",
    "Plan",
    "ReadAt",
    "SplitFailed",
    "base_agrees",
    "bytes_source",
    "open_source",
    "plan",
]


#: ``read_at(offset, size)``: bytes of the JSON document (a plain file, or inflated bytes).
ReadAt = Callable[[int, int], bytes]

#: The header fields before ``traceEvents`` must lie within this many bytes of the start,
#: and those after the array within this many bytes of the end (Kineto writes a few KB).
HEAD_BYTES = 1 << 20
#: The array's start is looked for in this many bytes first (a small file is not copied whole).
_FIRST_HEAD_BYTES = 1 << 16
TAIL_BYTES = 1 << 16
#: How far past its target a cut is looked for (an element longer than this: no cut there).
_CUT_WINDOW = 1 << 20
#: A document read forward (:func:`parse_streamed`) is cut at the first element boundary
#: within this many bytes of a piece's target size, else within the next as many, and so on.
STREAM_WINDOW = 1 << 16
#: At most this many candidate closing brackets are tried at the end of the file.
_END_CANDIDATES = 256

_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# A separator between two elements: "}", a comma (group 1), a newline, the next "{"; and
# the same without the newline, for files written on one line.
CUT = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r]*\n[ \t\r\n]*\{")
_CUT_ONE_LINE = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")
_WHITESPACE = b" \t\r\n"
SPACES = re.compile(rb"[ \t\r\n]*")


class SplitFailed(Exception):
    """The file cannot be read in pieces exactly as it is read whole: read it whole."""


class _DocSpan(Doc, gc=False):
    """The header with the event array left as raw text (here always the ``[]`` put in its place)."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"null")


_HEADER_DECODER = msgspec.json.Decoder(_DocSpan, strict=False)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError, TraceFormatError)


@dataclass(frozen=True)
class Plan:
    """Where a file's events are, and how they are cut into pieces."""

    #: The top-level fields other than the events.
    doc: Doc
    #: Byte ranges ``[start, end)`` of the pieces: whole elements of ``traceEvents``, in order.
    ranges: tuple[tuple[int, int], ...]


def open_source(path: Path) -> tuple[ReadAt, int, Callable[[], None]]:
    """``(read_at, size, close)`` over a plain (not compressed) file, read with ``pread``; an
    object in storage (:class:`~...storage.RemotePath`) through its file object, in blocks."""
    if isinstance(path, RemotePath):
        return _remote_source(path)
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size

    def read_at(offset: int, n: int) -> bytes:
        out = os.pread(fd, n, offset)
        if len(out) != n:  # the file changed under us: the whole-file read reports it
            raise SplitFailed(f"short read at {offset}")
        return out

    return read_at, size, functools.partial(os.close, fd)


def _remote_source(path: RemotePath) -> tuple[ReadAt, int, Callable[[], None]]:
    try:
        fh = path.open()
    except TraceFormatError as exc:
        raise OSError(str(exc)) from None  # (the whole-file read reports it, as for a local file)

    def read_at(offset: int, n: int) -> bytes:
        fh.seek(offset)
        out = fh.read(n)
        if len(out) != n:
            raise SplitFailed(f"short read at {offset}")
        return out

    return read_at, path.size, fh.close


class BytesSource:
    """``read_at`` over bytes in memory; ``data``: the bytes themselves (a whole piece is then
    scanned where it lies, not copied: see :func:`piece_columns`)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._view = memoryview(data)

    def __call__(self, offset: int, n: int) -> bytes:
        return bytes(self._view[offset : offset + n])


def bytes_source(data: bytes) -> ReadAt:
    return BytesSource(data)


def plan(read_at: ReadAt, size: int, piece_bytes: int) -> Plan:
    """Find the event array and cut it into pieces of about ``piece_bytes``; or raise SplitFailed."""
    head = read_at(0, min(size, _FIRST_HEAD_BYTES))
    if size > len(head) and _KEY.search(head) is None:  # (a bigger header: Kineto's are a few KB)
        head = read_at(0, min(size, HEAD_BYTES))
    start, prefix, is_object = _array_start(head)
    doc, end = _find_end(read_at, size, start, prefix, is_object=is_object)
    if end - start < 2:
        raise SplitFailed("no events")
    ranges = []
    lo = start
    n = max(1, round((end - start) / max(1, piece_bytes)))
    for k in range(1, n):
        target = start + (end - start) * k // n
        if target <= lo:
            continue
        window = read_at(target, min(_CUT_WINDOW, end - target))
        m = CUT.search(window) or _CUT_ONE_LINE.search(window)
        if m is None:
            continue
        cut = target + m.start(1)  # the comma
        ranges.append((lo, cut))
        lo = cut + 1
    ranges.append((lo, end))
    return Plan(doc=doc, ranges=tuple(ranges))


def _array_start(head: bytes) -> tuple[int, bytes, bool]:
    """Where the event array's elements start in a file beginning with ``head`` (right after its
    ``[``), what precedes its ``[``, and whether the document is an object (else a bare array)."""
    first = first_byte(head)
    if first == ord("{"):
        m = _KEY.search(head)
        # A match right after a backslash is inside a string (or not JSON): no cut.
        if m is None or (m.start() > 0 and head[m.start() - 1] == ord("\\")):
            raise SplitFailed("no traceEvents array near the start")
        start = m.end()
    elif first == ord("["):
        start = head.index(b"[") + 1
    else:
        raise SplitFailed("not a JSON object or array")
    prefix = head[: start - 1]
    if prefix.count(b'"traceEvents"') > (1 if first == ord("{") else 0):
        raise SplitFailed("traceEvents appears more than once")
    return start, prefix, first == ord("{")


def _find_end(read_at: ReadAt, size: int, start: int, prefix: bytes, *, is_object: bool) -> tuple[Doc, int]:
    """The header and the offset of the array's closing ``]``: the last ``]`` after which the rest decodes.

    A wrong choice cannot give wrong tables: the pieces would then not decode (a ``]`` past
    the array's leaves the array's own ``]`` inside the last piece; one inside it leaves
    the last piece's brackets unbalanced), and the file is read whole.
    """
    tail_at = max(start, size - TAIL_BYTES)
    tail = read_at(tail_at, size - tail_at)
    cuts = [m.start(1) for m in _CUT_ONE_LINE.finditer(tail)]
    # First the brackets that follow one whole element, then (elements holding arrays of
    # objects fool that check) any bracket after which the header decodes.
    for one_element in (True, False):
        found = _end_candidate(tail, tail_at, cuts, prefix, is_object=is_object, one_element=one_element)
        if found is not None:
            return found
    raise SplitFailed("no end of the traceEvents array near the end")


def _end_candidate(
    tail: bytes, tail_at: int, cuts: list[int], prefix: bytes, *, is_object: bool, one_element: bool
) -> tuple[Doc, int] | None:
    pos = len(tail)
    for _ in range(_END_CANDIDATES):
        pos = tail.rfind(b"]", 0, pos)
        if pos < 0:
            break
        suffix = tail[pos + 1 :]
        if b'"traceEvents"' in suffix:
            break
        # Arrays after the events (deviceProperties, as recent PyTorch writes it) end in "}]"
        # too: what lies between the last separator and the bracket must be one element.
        k = bisect.bisect_left(cuts, pos)
        if one_element and k:
            try:
                _RAW_LIST.decode(b"[" + tail[cuts[k - 1] + 1 : pos] + b"]")
            except DECODE_ERRORS:
                continue
        if not is_object:
            if suffix.strip(_WHITESPACE):
                continue
            return Doc(), tail_at + pos
        header = prefix + b"[]" + suffix
        try:
            check_surrogates(Path(), header)
            span = _HEADER_DECODER.decode(header)
        except DECODE_ERRORS:
            continue
        if bytes(span.traceEvents) != b"[]":
            continue
        doc = Doc(**{f: getattr(span, f) for f in Doc.__struct_fields__})
        return doc, tail_at + pos
    return None


class _Stream:
    """The part of a document read forward that is still needed: its chunks as they came
    (never copied into one growing buffer: only the bytes asked for are joined)."""

    def __init__(self, source: Iterator[bytes]) -> None:
        self.source = source
        self.chunks: collections.deque[bytes] = collections.deque()
        self.at = 0  # offset of the first byte of chunks[0]
        self.end = 0  # offset after the last byte read

    def fill(self, upto: int) -> bool:
        """Read until offset ``upto``; False if the document ends before it."""
        while self.end < upto:
            chunk = next(self.source, None)
            if chunk is None:
                return False
            self.chunks.append(chunk)
            self.end += len(chunk)
        return True

    def read_at(self, offset: int, n: int, brackets: tuple[bytes, bytes] = (b"", b"")) -> bytes:
        """Bytes ``[offset, offset + n)`` between ``brackets``: one copy."""
        if offset < self.at or offset + n > self.end:
            raise SplitFailed(f"bytes {offset:,}-{offset + n:,} are no longer in memory")
        out: list[bytes | memoryview] = [brackets[0]]
        lo, hi = offset - self.at, offset + n - self.at
        pos = 0
        for chunk in self.chunks:
            if pos >= hi:
                break
            k = len(chunk)
            if pos + k > lo:
                out.append(memoryview(chunk)[max(lo - pos, 0) : min(hi - pos, k)])
            pos += k
        out.append(brackets[1])
        return b"".join(out)

    def drop_before(self, offset: int) -> None:
        """Forget the chunks that end at or before ``offset``."""
        while self.chunks and self.at + len(self.chunks[0]) <= offset:
            self.at += len(self.chunks.popleft())


class Cutter:
    """A document read forward (``source``: its chunks, in order), cut into pieces as it comes.

    ``whole``: the document, where it is not longer than ``piece_bytes`` (not cut); else
    :meth:`pieces` gives the pieces, each as soon as enough follows it to know that it lies
    before the array's end (the last ``TAIL_BYTES``, where :func:`plan` looks for the end),
    then sets ``doc``. ``base_time_ns``: the time base to read the pieces with (given, else
    that of the fields before the array, see :func:`base_agrees`). Raises SplitFailed where
    the document must be read whole, and the errors of ``source``.
    """

    def __init__(self, path: Path, source: Iterator[bytes], piece_bytes: int, base_time_ns: int | None = None) -> None:
        self.stream = _Stream(source)
        self.read_at = self.stream.read_at
        self.piece_bytes = piece_bytes
        self.whole: bytes | None = None
        self.doc: Doc | None = None
        self.base_time_ns = 0
        if not self.stream.fill(max(piece_bytes, HEAD_BYTES) + 1) and self.stream.end <= piece_bytes:
            self.whole = self.read_at(0, self.stream.end)
            return
        self.start, self.prefix, self.is_object = _array_start(self.read_at(0, min(HEAD_BYTES, self.stream.end)))
        if base_time_ns is None:
            base_time_ns = _base_before(path, self.prefix, self.is_object)
        self.base_time_ns = base_time_ns

    def pieces(self) -> Iterator[tuple[int, int, bytes]]:
        """``(lo, hi, b"[" + bytes lo:hi + b"]")`` of each piece, in order."""
        stream, read_at = self.stream, self.read_at
        lo = target = self.start
        while True:
            target = max(target, lo + self.piece_bytes)
            window_end = target + STREAM_WINDOW
            # The cut must lie before the array's end, which lies in the last TAIL_BYTES.
            if not stream.fill(window_end + TAIL_BYTES):
                break
            window = read_at(target, STREAM_WINDOW)
            m = CUT.search(window) or _CUT_ONE_LINE.search(window)
            if m is None:  # an element longer than the window: look further
                target = window_end
                continue
            cut = target + m.start(1)  # the comma
            yield lo, cut, read_at(lo, cut - lo, (b"[", b"]"))
            lo = cut + 1
            stream.drop_before(lo)
        size = stream.end
        doc, end = _find_end(read_at, size, self.start, self.prefix, is_object=self.is_object)
        if end - self.start < 2:
            raise SplitFailed("no events")
        piece = read_at(lo, end - lo, (b"[", b"]"))
        stream.drop_before(size)
        yield lo, end, piece
        self.doc = doc


def base_agrees(read_with: int, header_base: int, ts_bound: float) -> bool:
    """Whether pieces read with the time base ``read_with`` are those of ``header_base`` (the
    file's): the same unless one of their timestamps (at most ``ts_bound`` us, see
    ``FileState.ts_bound``) comes near the range where the base decides whether it
    is valid (real traces: far from it)."""
    return read_with == header_base or max(abs(read_with), abs(header_base)) + ts_bound * 1000.0 < MAX_NS / 2


def _base_before(path: Path, prefix: bytes, is_object: bool) -> int:
    """``baseTimeNanoseconds`` as the fields before the event array give it (0 where they do not decode)."""
    if not is_object:
        return 0
    try:
        header = prefix + b"[]}"
        check_surrogates(path, header)
        return int(_HEADER_DECODER.decode(header).baseTimeNanoseconds or 0)
    except (*DECODE_ERRORS, TypeError, ValueError, OverflowError):
        return 0
