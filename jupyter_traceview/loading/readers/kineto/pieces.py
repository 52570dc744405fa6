"""Reading one Kineto file piece by piece (the byte ranges of :mod:`.cutting`).

Every file whose reading needs the whole file at once (malformed events whose messages quote
their index, B/E pairs, odd value types, ...) raises :class:`~.cutting.SplitFailed`: the
caller then reads it whole with :func:`~.whole.parse_kineto`, which gives the same tables
and the same errors it always did. Three uses:

* :func:`parse_in_pieces`: one process reads a big file piece by piece, sharing one reader
  state, as the whole-file read's chunked path does; only one piece's Python objects exist
  at a time, and a plain file is never held whole in memory (each piece is read with ``pread``).
* :func:`parse_piece` + :func:`finish`: the pieces of one file read by different worker
  processes (each returns its columns), then merged and turned into rank tables here.
* :func:`parse_streamed`: a document that can only be read forward (a gzip-compressed file,
  inflated as it is read) cut into pieces as it comes, each read at once as in
  :func:`parse_in_pieces`: only about one piece of it is in memory at a time.

Either way a piece's columns come from the C scanner (:mod:`.native`) where it is built and
reads the events, and from msgspec's decoding (:func:`.parts.decoded_part`) for the events
it gives up on (:func:`piece_columns`); ``TRACEVIEW_NATIVE=0`` turns the scanner off.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....errors import TraceFormatError
from ....model.frames import paused_gc
from ....model.rank_data import RankData
from . import batch, native
from .columns import merge_parts
from .cutting import (
    CUT,
    DECODE_ERRORS,
    SPACES,
    BytesSource,
    Cutter,
    Plan,
    ReadAt,
    SplitFailed,
    base_agrees,
)
from .decode import Chunk, check_surrogates, ts_list_texts
from .events import LIST_DECODER, Event, ts_written_with_fraction
from .header import read_header
from .parts import FileState, Part, decoded_part, pair_begin_end
from .tables import rank_tables, split_and_finish, split_ranks

__all__ = [
    "Piece",
    "decoded_columns",
    "finish",
    "parse_in_pieces",
    "parse_piece",
    "parse_streamed",
    "piece_columns",
    "piece_events",
]


def piece_events(buf: bytes, lo: int, hi: int) -> list[Event]:
    """The events of one piece (``buf``: ``b"[" + bytes lo:hi + b"]"``), decoded by msgspec."""
    try:
        check_surrogates(Path(), buf)
        return LIST_DECODER.decode(buf)
    except DECODE_ERRORS as exc:
        raise SplitFailed(f"the piece at bytes {lo:,}-{hi:,} does not decode alone: {exc}") from None


#: Where the C scanner gives up on an event, msgspec reads from that event to the first
#: element boundary this many bytes further on, and the scanner resumes there; unless it read
#: less than this (or a quarter of a smaller piece) before giving up, when msgspec reads the
#: rest of the piece (events it gives up on are rare, e.g. Kineto's pseudo-events at the end
#: of a file; where they are not, as in ROCm traces, this bounds the work thrown away).
_GIVE_UP_BYTES = 1 << 16


def piece_columns(
    read_at: ReadAt,
    lo: int,
    hi: int,
    state: FileState,
    offset: int,
    scratch: native.Scratch | None,
    piece: bytes | None = None,
) -> list[tuple[Part, int]]:
    """The columns of one piece, as (columns, number of events) in file order: by the C scanner
    where it can (``native``: identical columns), else from msgspec's decoded events.
    ``piece``: ``b"[" + bytes lo:hi + b"]"`` where the caller has it, else read with ``read_at``."""
    # The piece is data[start:end] (b"[" + bytes lo:hi + b"]"); offsets count from data's start.
    in_place = False
    if piece is not None:
        data = piece
    elif lo > 0 and read_at(lo - 1, 1) == b"[" and read_at(hi, 1) == b"]":
        if scratch is not None and isinstance(read_at, BytesSource):
            data, in_place = read_at.data, True  # the whole array, scanned where it lies: no copy
        else:
            data = read_at(lo - 1, hi - lo + 2)  # the whole array (one piece): one copy, not two
    else:
        data = b"[" + read_at(lo, hi - lo) + b"]"
    del piece
    start, end = (lo - 1, hi + 1) if in_place else (0, len(data))
    if scratch is None:
        return [decoded_columns(data, lo, hi, state, offset)]
    out: list[tuple[Part, int]] = []
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
            out.append(decoded_columns(data[start:end] if in_place else data, lo, hi, state, offset))
            return out
        out.append((part, n))
        offset += n
        # The events the scanner read are done: msgspec reads from the next event (after the
        # comma) to the first element boundary _GIVE_UP_BYTES further, the scanner the rest.
        done = int(scratch.ev_span[n - 1, 1])
        comma = SPACES.match(data, done).end()  # type: ignore[union-attr]
        m = CUT.search(data, max(at, comma) + _GIVE_UP_BYTES, end - 1)
        if data[comma : comma + 1] != b"," or m is None:
            # (No comma: not valid JSON, and msgspec says where.)
            rest = data[comma + 1 : end] if data[comma : comma + 1] == b"," else data[done:end]
            out.append(decoded_columns(b"[" + rest, lo, hi, state, offset))
            return out
        cut = m.start(1)
        middle = decoded_columns(b"[" + data[comma + 1 : cut] + b"]", lo, hi, state, offset)
        out.append(middle)
        offset += middle[1]
        data = b"[" + data[cut + 1 : end]
        start, end, in_place = 0, len(data), False


def decoded_columns(buf: bytes, lo: int, hi: int, state: FileState, offset: int) -> tuple[Part, int]:
    """The columns of the events in ``buf`` (``b"[" + events + b"]"``) from msgspec's decoding."""
    events = piece_events(buf, lo, hi)
    chunk = Chunk(
        offset,
        events,
        [],
        ts_text=functools.partial(ts_list_texts, buf),
        ts_fraction=functools.partial(ts_written_with_fraction, buf),
    )
    return decoded_part(chunk, state), len(events)


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
            header = read_header(path, the_plan.doc, name_rank, bad_events)
            state = FileState(base_time_ns=header.base_time_ns)
            parts = []
            offset = 0
            scratch = native.scratch()
            for lo, hi in the_plan.ranges:
                for part, n in piece_columns(read_at, lo, hi, state, offset, scratch):
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
    state: FileState,
    parts: list[Part],
    bad_events: str,
    pid_map: Mapping[int | str, int] | None,
) -> list[RankData]:
    """The rank tables from every piece's columns (``parts``, emptied), read with one ``state``."""
    return split_and_finish(path, _merged(path, state, parts, bad_events), header, pid_map)


def _merged(path: Path, state: FileState, parts: list[Part], bad_events: str) -> Any:
    """The file's columns from every piece's (``parts``, emptied), read with one ``state``."""
    if state.begin_end:
        pairs = pair_begin_end(state.begin_end, state.skipped)
        parts.append(decoded_part(Chunk(-1, pairs, []), state))
    state.raise_or_count(path, bad_events)
    columns = merge_parts(parts, state)
    parts.clear()
    return columns


def _finish_or_defer(
    path: Path, header: Any, columns: Any, pid_map: Mapping[int | str, int] | None
) -> list[RankData] | batch.Pending:
    """:func:`_finish_file`'s tables, or for a file of one rank and at most ``batch.MAX_ROWS``
    events its columns, its tables to be built with other files' (:func:`.readers.batch.tables`)."""
    ts_ns, dur_ns, groups, one_rank = split_ranks(path, columns, header, pid_map)
    if one_rank and len(ts_ns) <= batch.MAX_ROWS:
        return batch.Pending(columns, ts_ns, dur_ns, groups[0][0])
    return [rank_tables(columns, ts_ns, dur_ns, rows, meta, last_use=one_rank) for meta, rows in groups]


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
    array's end (the last ``TAIL_BYTES``, where :func:`plan` looks for the end). The pieces
    are read with the ``base_time_ns`` of the fields before the array (recent Kineto writes
    it there; older versions after the array); where the fields after it decide another, that
    changes nothing unless a timestamp comes near the range where the base decides whether it
    is valid (``FileState.ts_bound``): then the document is read a second time (``chunks()``
    again). Raises SplitFailed where the whole-file read must decide (an error of ``chunks``
    too, once the pieces are being read: the whole-file read gives it again), else the errors
    of ``chunks``.
    """
    try:
        return _parse_streamed(path, chunks, piece_bytes, None, name_rank, bad_events, pid_map)
    except _Rebase as exc:
        return _parse_streamed(path, chunks, piece_bytes, exc.base_time_ns, name_rank, bad_events, pid_map)


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
        state = FileState(base_time_ns=cutter.base_time_ns)
        parts: list[Part] = []
        offset = 0
        scratch = native.scratch()
        try:
            for lo, hi, piece in cutter.pieces():
                for part, n in piece_columns(cutter.read_at, lo, hi, state, offset, scratch, piece):
                    parts.append(part)
                    offset += n
                del piece
            if scratch is not None:
                scratch.done_with_file()
            del scratch
            assert cutter.doc is not None
            header = read_header(path, cutter.doc, name_rank, bad_events)
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


@dataclass
class Piece:
    """One piece's columns and what its reader state gathered (see :func:`finish`)."""

    #: The piece's columns (Part), in file order: one, or several where the C scanner
    #: and msgspec each read part of it.
    parts: list[Any]
    state: Any  # FileState


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
        state = FileState(base_time_ns=base_time_ns)
        try:
            columns = piece_columns(read_at, lo, hi, state, 0, native.scratch(), piece)
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
            header = read_header(path, the_plan.doc, name_rank, bad_events)
        except (TraceFormatError, ValueError, RecursionError) as exc:
            raise SplitFailed(str(exc)) from None
        state = FileState(base_time_ns=header.base_time_ns)
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
            state.counters.extend(s.counters)
            if s.profiler_span is not None:
                old = state.profiler_span
                lo, hi = s.profiler_span
                state.profiler_span = (lo, hi) if old is None else (min(lo, old[0]), max(hi, old[1]))
            state.ts_ns_precision |= s.ts_ns_precision
            state.args_dropped += s.args_dropped
            for number, text in s.pid_text.items():
                state.pid_text.setdefault(number, text)
        state.raise_or_count(path, bad_events)
        columns = merge_parts([part for p in pieces for part in p.parts], state)
        return split_and_finish(path, columns, header, pid_map)
