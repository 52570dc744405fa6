"""Reading one Kineto JSON file in byte ranges ("pieces"): in one process, or across a pool.

A Kineto file is one JSON object whose ``traceEvents`` array holds the events. The array is
cut between two elements (``}``, a comma, ``{``; preferably where a newline follows the
comma, as profilers write one element per line: a raw newline in valid JSON is always
whitespace between tokens, never inside a string) into pieces that each decode as an array
of whole events. A wrong cut cannot give wrong tables: the first piece starts right after
the array's ``[`` (checked: the rest of the document, with ``[]`` in the array's place,
decodes as the header), so a cut inside a string leaves that piece with an unterminated
string and a cut inside an element leaves its brackets unbalanced: it fails to decode, and
by induction every piece that decodes starts and ends between two elements. Every failure,
and every file whose reading needs the whole file at once (malformed events whose messages
quote their index, B/E pairs, odd value types, ...), raises :class:`SplitFailed`: the caller
then reads the file whole with :func:`~.readers.kineto.parse_kineto`, which gives the same
tables and the same errors it always did.

Three uses:

* :func:`parse_in_pieces`: one process reads a big file piece by piece, sharing one reader
  state, as the reader's own chunked path does; only one piece's Python objects exist at a
  time, and a plain file is never held whole in memory (each piece is read with ``pread``).
* :func:`parse_piece` + :func:`finish`: the pieces of one file read by different worker
  processes (each returns its columns), then merged and turned into rank tables here.
* :func:`parse_streamed`: a document that can only be read forward (a gzip-compressed file,
  inflated as it is read) cut into pieces as it comes, each read at once as in
  :func:`parse_in_pieces`: only about one piece of it is in memory at a time.

Either way a piece's columns come from the C scanner (``readers/native.py``) where it is
built and reads the events, and from msgspec's decoding (``kineto._part``) for the events
it gives up on (``_piece_columns``); ``TRACEVIEW_NATIVE=0`` turns the scanner off.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ..errors import TraceFormatError
from ..model.frames import paused_gc
from ..model.rank_data import RankData
from .readers import batch, kineto, native

__all__ = [
    "Cutter",
    "Plan",
    "SplitFailed",
    "base_agrees",
    "finish",
    "open_source",
    "parse_in_pieces",
    "parse_piece",
    "parse_streamed",
    "plan",
]

#: ``read_at(offset, size)``: bytes of the JSON document (a plain file, or inflated bytes).
ReadAt = Callable[[int, int], bytes]

#: The header fields before ``traceEvents`` must lie within this many bytes of the start,
#: and those after the array within this many bytes of the end (Kineto writes a few KB).
_HEAD_BYTES = 1 << 20
#: The array's start is looked for in this many bytes first (a small file is not copied whole).
_FIRST_HEAD_BYTES = 1 << 16
_TAIL_BYTES = 1 << 16
#: How far past its target a cut is looked for (an element longer than this: no cut there).
_CUT_WINDOW = 1 << 20
#: A document read forward (:func:`parse_streamed`) is cut at the first element boundary
#: within this many bytes of a piece's target size, else within the next as many, and so on.
_STREAM_WINDOW = 1 << 16
#: At most this many candidate closing brackets are tried at the end of the file.
_END_CANDIDATES = 256

_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# A separator between two elements: "}", a comma (group 1), a newline, the next "{"; and
# the same without the newline, for files written on one line.
_CUT = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r]*\n[ \t\r\n]*\{")
_CUT_ONE_LINE = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")
_WHITESPACE = b" \t\r\n"
_SPACES = re.compile(rb"[ \t\r\n]*")


class SplitFailed(Exception):
    """The file cannot be read in pieces exactly as it is read whole: read it whole."""


class _DocSpan(kineto._Doc, gc=False):
    """The header with the event array left as raw text (here always the ``[]`` put in its place)."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"null")


_HEADER_DECODER = msgspec.json.Decoder(_DocSpan, strict=False)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError, TraceFormatError)


@dataclass(frozen=True)
class Plan:
    """Where a file's events are, and how they are cut into pieces."""

    #: The top-level fields other than the events.
    doc: kineto._Doc
    #: Byte ranges ``[start, end)`` of the pieces: whole elements of ``traceEvents``, in order.
    ranges: tuple[tuple[int, int], ...]


def open_source(path: Path) -> tuple[ReadAt, int, Callable[[], None]]:
    """``(read_at, size, close)`` over a plain (not compressed) file, read with ``pread``."""
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size

    def read_at(offset: int, n: int) -> bytes:
        out = os.pread(fd, n, offset)
        if len(out) != n:  # the file changed under us: the whole-file read reports it
            raise SplitFailed(f"short read at {offset}")
        return out

    return read_at, size, functools.partial(os.close, fd)


class _BytesSource:
    """``read_at`` over bytes in memory; ``data``: the bytes themselves (a whole piece is then
    scanned where it lies, not copied: see :func:`_piece_columns`)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._view = memoryview(data)

    def __call__(self, offset: int, n: int) -> bytes:
        return bytes(self._view[offset : offset + n])


def bytes_source(data: bytes) -> ReadAt:
    return _BytesSource(data)


def plan(read_at: ReadAt, size: int, piece_bytes: int) -> Plan:
    """Find the event array and cut it into pieces of about ``piece_bytes``; or raise SplitFailed."""
    head = read_at(0, min(size, _FIRST_HEAD_BYTES))
    if size > len(head) and _KEY.search(head) is None:  # (a bigger header: Kineto's are a few KB)
        head = read_at(0, min(size, _HEAD_BYTES))
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
        m = _CUT.search(window) or _CUT_ONE_LINE.search(window)
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
    first = kineto._first_byte(head)
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


def _find_end(read_at: ReadAt, size: int, start: int, prefix: bytes, *, is_object: bool) -> tuple[kineto._Doc, int]:
    """The header and the offset of the array's closing ``]``: the last ``]`` after which the rest decodes.

    A wrong choice cannot give wrong tables: the pieces would then not decode (a ``]`` past
    the array's leaves the array's own ``]`` inside the last piece; one inside it leaves
    the last piece's brackets unbalanced), and the file is read whole.
    """
    tail_at = max(start, size - _TAIL_BYTES)
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
) -> tuple[kineto._Doc, int] | None:
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
            except _DECODE_ERRORS:
                continue
        if not is_object:
            if suffix.strip(_WHITESPACE):
                continue
            return kineto._Doc(), tail_at + pos
        header = prefix + b"[]" + suffix
        try:
            kineto._check_surrogates(Path(), header)
            span = _HEADER_DECODER.decode(header)
        except _DECODE_ERRORS:
            continue
        if bytes(span.traceEvents) != b"[]":
            continue
        doc = kineto._Doc(**{f: getattr(span, f) for f in kineto._Doc.__struct_fields__})
        return doc, tail_at + pos
    return None


def _piece_events(buf: bytes, lo: int, hi: int) -> list[kineto._Event]:
    """The events of one piece (``buf``: ``b"[" + bytes lo:hi + b"]"``), decoded by msgspec."""
    try:
        kineto._check_surrogates(Path(), buf)
        return kineto._LIST_DECODER.decode(buf)
    except _DECODE_ERRORS as exc:
        raise SplitFailed(f"the piece at bytes {lo:,}-{hi:,} does not decode alone: {exc}") from None


#: Where the C scanner gives up on an event, msgspec reads from that event to the first
#: element boundary this many bytes further on, and the scanner resumes there; unless it read
#: less than this (or a quarter of a smaller piece) before giving up, when msgspec reads the
#: rest of the piece (events it gives up on are rare, e.g. Kineto's pseudo-events at the end
#: of a file; where they are not, as in ROCm traces, this bounds the work thrown away).
_GIVE_UP_BYTES = 1 << 16


def _piece_columns(
    read_at: ReadAt,
    lo: int,
    hi: int,
    state: kineto._FileState,
    offset: int,
    scratch: native.Scratch | None,
    piece: bytes | None = None,
) -> list[tuple[kineto._Part, int]]:
    """The columns of one piece, as (columns, number of events) in file order: by the C scanner
    where it can (``native``: identical columns), else from msgspec's decoded events.
    ``piece``: ``b"[" + bytes lo:hi + b"]"`` where the caller has it, else read with ``read_at``."""
    # The piece is data[start:end] (b"[" + bytes lo:hi + b"]"); offsets count from data's start.
    in_place = False
    if piece is not None:
        data = piece
    elif lo > 0 and read_at(lo - 1, 1) == b"[" and read_at(hi, 1) == b"]":
        if scratch is not None and isinstance(read_at, _BytesSource):
            data, in_place = read_at.data, True  # the whole array, scanned where it lies: no copy
        else:
            data = read_at(lo - 1, hi - lo + 2)  # the whole array (one piece): one copy, not two
    else:
        data = b"[" + read_at(lo, hi - lo) + b"]"
    del piece
    start, end = (lo - 1, hi + 1) if in_place else (0, len(data))
    if scratch is None:
        return [_decoded_columns(data, lo, hi, state, offset)]
    out: list[tuple[kineto._Part, int]] = []
    while True:
        ok, n, at = native.scan(data, scratch, start, end)
        # (native.part takes the events into ``state`` when it returns columns: decide first.)
        if ok or (n and scratch.ev_span[n - 1, 1] - start >= min(_GIVE_UP_BYTES, (end - start) // 4)):
            part = native.part(data, n, scratch, state, offset)
        else:
            part = None  # nothing, or too little, read by the scanner
        if ok and part is not None:
            out.append((part, n))
            return out
        if part is None:  # msgspec reads the rest of the piece
            out.append(_decoded_columns(data[start:end] if in_place else data, lo, hi, state, offset))
            return out
        out.append((part, n))
        offset += n
        # The events the scanner read are done: msgspec reads from the next event (after the
        # comma) to the first element boundary _GIVE_UP_BYTES further, the scanner the rest.
        done = int(scratch.ev_span[n - 1, 1])
        comma = _SPACES.match(data, done).end()  # type: ignore[union-attr]
        m = _CUT.search(data, max(at, comma) + _GIVE_UP_BYTES, end - 1)
        if data[comma : comma + 1] != b"," or m is None:
            # (No comma: not valid JSON, and msgspec says where.)
            rest = data[comma + 1 : end] if data[comma : comma + 1] == b"," else data[done:end]
            out.append(_decoded_columns(b"[" + rest, lo, hi, state, offset))
            return out
        cut = m.start(1)
        middle = _decoded_columns(b"[" + data[comma + 1 : cut] + b"]", lo, hi, state, offset)
        out.append(middle)
        offset += middle[1]
        data = b"[" + data[cut + 1 : end]
        start, end, in_place = 0, len(data), False


def _decoded_columns(buf: bytes, lo: int, hi: int, state: kineto._FileState, offset: int) -> tuple[kineto._Part, int]:
    """The columns of the events in ``buf`` (``b"[" + events + b"]"``) from msgspec's decoding."""
    events = _piece_events(buf, lo, hi)
    chunk = kineto._Chunk(offset, events, [], ts_text=functools.partial(kineto._ts_list_texts, buf))
    return kineto._part(chunk, state), len(events)


def parse_in_pieces(
    path: Path,
    read_at: ReadAt,
    the_plan: Plan,
    *,
    name_rank: int | None = None,
    bad_events: str = "raise",
    pid_map: Mapping[int | str, int] | None = None,
    defer: bool = False,
) -> list[RankData] | batch.Pending:
    """What ``parse_kineto`` gives for the file, read piece by piece in this process.
    ``defer``: a small file of one rank comes back as its columns (:class:`.readers.batch.Pending`),
    its tables to be built with other files' (:func:`.readers.batch.tables`).

    Raises SplitFailed where the whole-file read must decide (it then also gives the error).
    """
    with paused_gc():  # as the reader: millions of small objects freed together
        try:
            header = kineto._header(path, the_plan.doc, name_rank, bad_events)
            state = kineto._FileState(base_time_ns=header.base_time_ns)
            parts = []
            offset = 0
            scratch = native.scratch()
            for lo, hi in the_plan.ranges:
                for part, n in _piece_columns(read_at, lo, hi, state, offset, scratch):
                    parts.append(part)
                    offset += n
            if scratch is not None:
                scratch.done_with_file()
            del scratch
            if defer:
                return _finish_or_defer(path, header, _merged(path, state, parts, bad_events), pid_map)
            return _finish_file(path, header, state, parts, bad_events, pid_map)
        except (TraceFormatError, ValueError, RecursionError) as exc:
            # The whole-file read reports errors (in its order: decoding before the header),
            # also those of argument texts that are not UTF-8 (UnicodeDecodeError).
            raise SplitFailed(str(exc)) from None


def _finish_file(
    path: Path,
    header: Any,
    state: kineto._FileState,
    parts: list[kineto._Part],
    bad_events: str,
    pid_map: Mapping[int | str, int] | None,
) -> list[RankData]:
    """The rank tables from every piece's columns (``parts``, emptied), read with one ``state``."""
    return kineto._split_and_finish(path, _merged(path, state, parts, bad_events), header, pid_map)


def _merged(path: Path, state: kineto._FileState, parts: list[kineto._Part], bad_events: str) -> Any:
    """The file's columns from every piece's (``parts``, emptied), read with one ``state``."""
    if state.begin_end:
        pairs = kineto._pair_begin_end(state.begin_end, state.skipped)
        parts.append(kineto._part(kineto._Chunk(-1, pairs, []), state))
    state.raise_or_count(path, bad_events)
    columns = kineto._merge(parts, state)
    parts.clear()
    return columns


def _finish_or_defer(
    path: Path, header: Any, columns: Any, pid_map: Mapping[int | str, int] | None
) -> list[RankData] | batch.Pending:
    """:func:`_finish_file`'s tables, or for a file of one rank and at most ``batch.MAX_ROWS``
    events its columns, its tables to be built with other files' (:func:`.readers.batch.tables`)."""
    ts_ns, dur_ns, groups, one_rank = kineto.split_ranks(path, columns, header, pid_map)
    if one_rank and len(ts_ns) <= batch.MAX_ROWS:
        return batch.Pending(columns, ts_ns, dur_ns, groups[0][0])
    return [kineto._rank_tables(columns, ts_ns, dur_ns, rows, meta, last_use=one_rank) for meta, rows in groups]


class _Rebase(Exception):
    """The pieces were read with a guessed ``base_time_ns`` that the header contradicts."""

    def __init__(self, base_time_ns: int) -> None:
        super().__init__(base_time_ns)
        self.base_time_ns = base_time_ns


def parse_streamed(
    path: Path,
    chunks: Callable[[], Iterator[bytes]],
    piece_bytes: int,
    *,
    name_rank: int | None = None,
    bad_events: str = "raise",
    pid_map: Mapping[int | str, int] | None = None,
) -> list[RankData] | bytes:
    """What ``parse_kineto`` gives for a document read forward once, in ``chunks`` (e.g. as it
    is inflated: :func:`~.readers.files.inflate_chunks`), piece by piece; or the whole document
    (``bytes``) where it is not longer than ``piece_bytes``.

    Only about one piece of the document is in memory at a time: a piece is cut (by
    :func:`plan`'s rule) and read as soon as enough follows it to know that it lies before the
    array's end (the last ``_TAIL_BYTES``, where :func:`plan` looks for the end). The pieces
    are read with the ``base_time_ns`` of the fields before the array (recent Kineto writes
    it there; older versions after the array); where the fields after it decide another, that
    changes nothing unless a timestamp comes near the range where the base decides whether it
    is valid (``_FileState.ts_bound``): then the document is read a second time (``chunks()``
    again). Raises SplitFailed where the whole-file read must decide (an error of ``chunks``
    too, once the pieces are being read: the whole-file read gives it again), else the errors
    of ``chunks``.
    """
    try:
        return _parse_streamed(path, chunks, piece_bytes, None, name_rank, bad_events, pid_map)
    except _Rebase as exc:
        return _parse_streamed(path, chunks, piece_bytes, exc.base_time_ns, name_rank, bad_events, pid_map)


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
    before the array's end (the last ``_TAIL_BYTES``, where :func:`plan` looks for the end),
    then sets ``doc``. ``base_time_ns``: the time base to read the pieces with (given, else
    that of the fields before the array, see :func:`base_agrees`). Raises SplitFailed where
    the document must be read whole, and the errors of ``source``.
    """

    def __init__(self, path: Path, source: Iterator[bytes], piece_bytes: int, base_time_ns: int | None = None) -> None:
        self.stream = _Stream(source)
        self.read_at = self.stream.read_at
        self.piece_bytes = piece_bytes
        self.whole: bytes | None = None
        self.doc: kineto._Doc | None = None
        self.base_time_ns = 0
        if not self.stream.fill(max(piece_bytes, _HEAD_BYTES) + 1) and self.stream.end <= piece_bytes:
            self.whole = self.read_at(0, self.stream.end)
            return
        self.start, self.prefix, self.is_object = _array_start(self.read_at(0, min(_HEAD_BYTES, self.stream.end)))
        if base_time_ns is None:
            base_time_ns = _base_before(path, self.prefix, self.is_object)
        self.base_time_ns = base_time_ns

    def pieces(self) -> Iterator[tuple[int, int, bytes]]:
        """``(lo, hi, b"[" + bytes lo:hi + b"]")`` of each piece, in order."""
        stream, read_at = self.stream, self.read_at
        lo = target = self.start
        while True:
            target = max(target, lo + self.piece_bytes)
            window_end = target + _STREAM_WINDOW
            # The cut must lie before the array's end, which lies in the last _TAIL_BYTES.
            if not stream.fill(window_end + _TAIL_BYTES):
                break
            window = read_at(target, _STREAM_WINDOW)
            m = _CUT.search(window) or _CUT_ONE_LINE.search(window)
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
    ``kineto._FileState.ts_bound``) comes near the range where the base decides whether it
    is valid (real traces: far from it)."""
    return read_with == header_base or max(abs(read_with), abs(header_base)) + ts_bound * 1000.0 < kineto._MAX_NS / 2


def _parse_streamed(
    path: Path,
    chunks: Callable[[], Iterator[bytes]],
    piece_bytes: int,
    base_time_ns: int | None,
    name_rank: int | None,
    bad_events: str,
    pid_map: Mapping[int | str, int] | None,
) -> list[RankData] | bytes:
    source = chunks()
    with _closing(source), paused_gc():  # (see parse_in_pieces)
        cutter = Cutter(path, source, piece_bytes, base_time_ns)
        if cutter.whole is not None:
            return cutter.whole
        state = kineto._FileState(base_time_ns=cutter.base_time_ns)
        parts: list[kineto._Part] = []
        offset = 0
        scratch = native.scratch()
        try:
            for lo, hi, piece in cutter.pieces():
                for part, n in _piece_columns(cutter.read_at, lo, hi, state, offset, scratch, piece):
                    parts.append(part)
                    offset += n
                del piece
            if scratch is not None:
                scratch.done_with_file()
            del scratch
            assert cutter.doc is not None
            header = kineto._header(path, cutter.doc, name_rank, bad_events)
            if not base_agrees(cutter.base_time_ns, header.base_time_ns, state.ts_bound):
                raise _Rebase(header.base_time_ns)
            state.base_time_ns = header.base_time_ns  # (for B/E pairs, read at the end)
            return _finish_file(path, header, state, parts, bad_events, pid_map)
        except (TraceFormatError, ValueError, RecursionError) as exc:  # (ValueError: see parse_in_pieces)
            raise SplitFailed(str(exc)) from None


@contextlib.contextmanager
def _closing(it: Iterator[bytes]) -> Iterator[None]:
    """Close ``it`` (a generator reading a file) on the way out, read to its end or not."""
    try:
        yield
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def _base_before(path: Path, prefix: bytes, is_object: bool) -> int:
    """``baseTimeNanoseconds`` as the fields before the event array give it (0 where they do not decode)."""
    if not is_object:
        return 0
    try:
        header = prefix + b"[]}"
        kineto._check_surrogates(path, header)
        return int(_HEADER_DECODER.decode(header).baseTimeNanoseconds or 0)
    except (*_DECODE_ERRORS, TypeError, ValueError, OverflowError):
        return 0


@dataclass
class Piece:
    """One piece's columns and what its reader state gathered (see :func:`finish`)."""

    #: The piece's columns (kineto._Part), in file order: one, or several where the C scanner
    #: and msgspec each read part of it.
    parts: list[Any]
    state: Any  # kineto._FileState


def parse_piece(path: Path, read_at: ReadAt, lo: int, hi: int, base_time_ns: int, piece: bytes | None = None) -> Piece:
    """Columns of the events in bytes ``[lo, hi)``, for :func:`finish` (runs in a worker process).

    ``piece``: ``b"[" + bytes lo:hi + b"]"`` where the caller has it (else read with ``read_at``).
    Raises SplitFailed for what only a whole-file read reports exactly: malformed or
    unreadable events (their messages name the event's index in the file) and B/E pairs
    (matched across the file). Pids and tids named without a number (Kineto's ``"Spans"``,
    ``"Traces"``, ``""``) are numbered file-wide in order of appearance: :func:`finish`
    checks that each piece numbered them as the whole file does.
    """
    with paused_gc():  # as the reader: millions of small objects freed together
        state = kineto._FileState(base_time_ns=base_time_ns)
        try:
            columns = _piece_columns(read_at, lo, hi, state, 0, native.scratch(), piece)
        except UnicodeDecodeError as exc:  # raw text in args that is not UTF-8: the whole read says where
            raise SplitFailed(str(exc)) from None
    if state.problems or state.unreadable or state.begin_end:
        raise SplitFailed("the piece needs the whole-file read")
    return Piece(parts=[part for part, _ in columns], state=state)


def finish(
    path: Path,
    the_plan: Plan,
    pieces: Sequence[Piece],
    *,
    name_rank: int | None = None,
    bad_events: str = "raise",
    pid_map: Mapping[int | str, int] | None = None,
) -> list[RankData]:
    """The rank tables of a file from its pieces' columns (in file order), as ``parse_kineto`` gives them."""
    with paused_gc():  # as the reader: millions of small objects freed together
        try:
            header = kineto._header(path, the_plan.doc, name_rank, bad_events)
        except (TraceFormatError, ValueError, RecursionError) as exc:
            raise SplitFailed(str(exc)) from None
        state = kineto._FileState(base_time_ns=header.base_time_ns)
        for piece in pieces:
            s = piece.state
            for text, number in s.labels.items():
                # The whole-file read numbers names in order of first appearance: so did this
                # piece if each of its numbers is the file-wide one (else it must be read whole).
                if state.labels.setdefault(text, -2 - len(state.labels)) != number:
                    raise SplitFailed(f"a piece numbered {text!r} differently from the whole file")
            for key, n in s.skipped.items():
                state.count(key, n)
            state.meta_events += s.meta_events
            if s.profiler_span is not None:
                old = state.profiler_span
                lo, hi = s.profiler_span
                state.profiler_span = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
            state.ts_ns_precision |= s.ts_ns_precision
            state.args_dropped += s.args_dropped
            for number, text in s.pid_text.items():
                state.pid_text.setdefault(number, text)
        state.raise_or_count(path, bad_events)
        columns = kineto._merge([part for p in pieces for part in p.parts], state)
        return kineto._split_and_finish(path, columns, header, pid_map)
