"""The native path of the Kineto reader: a piece's columns written by a C scanner (issue 17).

``_kscan.scan`` (``_kscan.c``, compiled by ``pip install``) reads one piece of a file's
event array (``b"[" + events + b"]"``, the byte ranges of :mod:`.cutting`) once and writes
numbers and byte ranges, without making a Python object per event or field;
:func:`piece_part` builds from them the reader's per-piece columns (:class:`.parts.Part`),
exactly as :func:`.parts.decoded_part` builds them from msgspec's decoded events (the tests
compare the tables of every real trace both ways, piece by piece).

The scanner handles the common subset (complete, instant, flow and metadata events with
ASCII text, integer pids and tids, the usual ``args`` and memory records) and validates the
JSON it reads as strictly as msgspec: where a piece holds anything else (B/E pairs, Kineto's
``Spans`` pseudo-events, string pids, escapes in names, non-ASCII text,
malformed events, ...) or is not valid JSON, the scanner gives up there and the caller
(:func:`.pieces.piece_columns`) has msgspec read from that event on (the next 64 KB, after
which the scanner resumes), which gives the same columns or the error it always gave.
``TRACEVIEW_NATIVE=0`` in the environment turns the native path off; without the compiled
module it is off too, silently.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from ....model.collectives import normalize_collective
from ....model.schema import EventKind
from .. import build, derive, memory, op_args
from ..build import describe as describe
from .events import (
    ARGS_CODES,
    CAT_TO_KIND,
    CODE,
    DEVICE_CODES,
    FLOAT_EXACT_US,
    KEPT_LUT,
    KINETO_PSEUDO_PIDS,
    LIST_DECODER,
    MAX_NS,
    PH,
    PHASE_CODE,
    PHASES,
    ts_written_with_fraction,
)
from .parts import (
    COMM_FIELDS,
    FileState,
    Part,
    as_int,
    first_dims,
    gpu_columns,
    int_column,
    int_lut,
    raw_str,
    renumber_first_seen,
)

__all__ = [
    "AVAILABLE",
    "SCANNER",
    "SHARED_MAX_ROWS",
    "Scratch",
    "first_seen_order",
    "names_starting",
    "part",
    "piece_part",
    "scan",
    "scratch",
    "shared_scratch",
]

#: The compiled scanner, or None (see :mod:`..build`, which ``traceview --version`` asks too).
SCANNER: Any = build.SCANNER

#: Whether pieces are read by the C scanner (the module is built and not turned off).
AVAILABLE = build.AVAILABLE

# Columns of the scanner's ints, floats and spans (see the enums in _kscan.c).
(
    _EXTERNAL_ID,
    _CORRELATION,
    _DEVICE,
    _STREAM,
    _REGISTERS,
    _SHARED_MEMORY,
    _BYTES,
    _IN_NELEMS,
    _OUT_NELEMS,
    _GROUP_SIZE,
    _SEQ,
    _WAIT_STREAM,
    _WAIT_CORR,
) = range(13)
_GRID, _BLOCK = 13, 16
_MEM_COLUMNS = {
    "mem_total_reserved": 19,
    "mem_total_allocated": 20,
    "mem_bytes": 21,
    "mem_addr": 22,
    "mem_device_id": 23,
}
_MEM_DEVICE_TYPE = 24
_N_INTS = build.N_INTS
_TS, _DUR, _BLOCKS_PER_SM, _WARPS_PER_SM, _OCCUPANCY, _BANDWIDTH = range(6)
_N_FLOATS = build.N_FLOATS
_CAT, _NAME, _COLLECTIVE, _DTYPE, _PG_NAME, _PG_DESC, _DIMS = range(7)
# A string pid or tid (pidtid is then 0): after the four operator arguments' spans; then a
# string stream (ROCm's runtime events write "0x0": ints' _STREAM is then -1).
_PID_SPAN, _TID_SPAN, _STREAM_SPAN = _DIMS + 4, _DIMS + 5, _DIMS + 6
_N_SPANS = build.N_SPANS
_OP_SPANS = {f: _DIMS + j for j, f in enumerate(op_args.FIELDS)}
# Columns the scanner numbers (first-seen among the kept events): cat, name, the op arguments.
_CAT_CODES, _NAME_CODES = 0, 1
_OP_CODES = {f: 2 + j for j, f in enumerate(op_args.FIELDS)}
_N_CODED = build.N_CODED
#: A Kineto event is longer than this many bytes in any profiler's output; a piece with
#: more events than its size allows at this length is left to the msgspec path.
_MIN_EVENT_BYTES = 16
_TYPICAL_EVENT_BYTES = 128
#: The most events one scan writes (a piece far bigger than the 4 MB the reader cuts, with no
#: cut found in it, is read this many events at a time: the scanner stops there and resumes).
MAX_SCAN_ROWS = 1 << 20

_PH_LUT = np.full(256, -1, np.int8)
for _p, _c in PHASE_CODE.items():
    _PH_LUT[ord(_p) if _p else 0] = _c
_I32_MAX = np.iinfo(np.int32).max
#: The most rows of scanner buffers kept from one file to the next (a ~2 MB file's: ~9 MB of
#: buffers, of which a file touches the rows it writes, ~0.5 KB an event).
SHARED_MAX_ROWS = 1 << 14


class _GiveUp(Exception):
    """The piece needs the msgspec path (raised before the file's state is touched)."""


class Scratch:
    """The scanner's output buffers, reused from piece to piece of a file."""

    def __init__(self) -> None:
        self.cap = 0

    def ensure(self, cap: int) -> None:
        if cap <= self.cap:
            return
        self.cap = cap
        self.ph = np.empty(cap, np.uint8)
        self.spans = np.empty((cap, 2 * _N_SPANS), np.int64)
        self.pidtid = np.empty((cap, 2), np.int64)
        self.ints = np.empty((cap, _N_INTS), np.int64)
        self.floats = np.empty((cap, _N_FLOATS), np.float64)
        self.ev_span = np.empty((cap, 2), np.int64)
        self.slow = np.empty((cap, 4), np.int64)
        self.codes = np.empty((cap, _N_CODED), np.int32)
        self.firsts = np.empty((_N_CODED, cap), np.int64)
        self.counts: tuple[int, ...] = (0,) * _N_CODED

    def done_with_file(self) -> None:
        """The file these buffers scanned is read (its tables are built next): buffers for
        more than ``SHARED_MAX_ROWS`` events are let go now, as a file's own buffers always
        were, so that a shared scratch (:func:`shared_scratch`) never adds a big file's
        buffers to the memory its tables take; smaller ones are kept for the next file."""
        if self.cap > SHARED_MAX_ROWS:
            self.__dict__.clear()
            self.cap = 0


def scratch() -> Scratch | None:
    """Buffers for :func:`scan`, or None where the native path is off (msgspec reads everything):
    this thread's shared ones inside :func:`shared_scratch`, else new ones."""
    if SCANNER is None:
        return None
    shared = getattr(_shared, "scratch", None)
    return shared if shared is not None else Scratch()


_shared = threading.local()


@contextlib.contextmanager
def shared_scratch() -> Iterator[None]:
    """Within it, :func:`scratch` gives this thread one set of buffers, reused by every file
    read one after the other (a load's serial loop), not new ones per file: the pages the
    first file's scan touched are not faulted in again for each later file (~2,300 page
    faults of the 8-rank sample's ~3,900 a load, issue 17). Nothing is kept after it. Safe
    because a reader uses its scratch for one piece at a time and keeps nothing of it (every
    column it returns is a copy), which is also what reusing it across a file's pieces needs."""
    before = getattr(_shared, "scratch", None)
    _shared.scratch = before if before is not None else Scratch()
    try:
        yield
    finally:
        _shared.scratch = before


def scan(data: bytes, s: Scratch, start: int = 0, end: int | None = None) -> tuple[bool, int, int]:
    """Scan a piece (``b"[" + events + b"]"``: ``data[start:end]``, all of it by default) into
    ``s``: ``(ok, n, at)``. ``ok``: every event was read; else ``at`` is the byte where the
    scanner gave up. ``n``: the events read whole (all of them, or those before the one it gave
    up on), whose columns :func:`part` can use. Byte offsets (``at``, the spans) count from
    ``data``'s start: :func:`part` is given ``data`` itself."""
    assert SCANNER is not None
    size = (len(data) if end is None else end) - start
    # Rows for events of a typical size (a few hundred bytes) first: the buffers' touched
    # pages are the memory this costs. Out of rows (ok == 2), four times more, scanned again.
    s.ensure(min(size // _TYPICAL_EVENT_BYTES + 1024, MAX_SCAN_ROWS))
    while True:
        ok, n, at, n_slow, s.counts = SCANNER.scan(
            data, s.ph, s.spans, s.pidtid, s.ints, s.floats, s.ev_span, s.slow, s.codes, s.firsts, start, start + size
        )
        if ok != 2 or s.cap >= min(size // _MIN_EVENT_BYTES + 16, MAX_SCAN_ROWS):
            break
        s.ensure(min(4 * s.cap, size // _MIN_EVENT_BYTES + 16, MAX_SCAN_ROWS))
    for row, col, lo, hi in s.slow[:n_slow].tolist():
        if row >= n:
            break  # the event it gave up on
        value = float(data[lo:hi])
        if value in (np.inf, -np.inf):  # msgspec refuses a number out of a double's range
            return False, row, int(s.ev_span[row, 0])
        s.floats[row, col] = value
    return ok == 1, n, at


def part(data: bytes, n: int, s: Scratch, state: FileState, offset: int) -> Any:
    """``Part`` of the first ``n`` scanned events of ``data``, or None where the msgspec
    path must read them (``state`` is then untouched). ``offset``: the index in the file of
    the first event."""
    try:
        return _part(data, n, s, state, offset)
    except _GiveUp:
        return None


def piece_part(data: bytes, state: FileState, offset: int, scratch: Scratch | None = None) -> tuple[Any, int] | None:
    """``(Part, number of events)`` of one whole piece (``b"[" + events + b"]"``), or
    None where the msgspec path must read it (``state`` is then untouched)."""
    if SCANNER is None:
        return None
    s = scratch if scratch is not None else Scratch()
    ok, n, _at = scan(data, s)
    if not ok:
        return None
    got = part(data, n, s, state, offset)
    return None if got is None else (got, n)


def _first_texts(data: bytes, s: Scratch, coded: int, span: int, order: np.ndarray | None = None) -> list[str]:
    """The distinct texts of a numbered column, by number (or in ``order``): each from the
    span (column ``span``) of the first row the scanner met it in (one str each, made in C)."""
    rows = s.firsts[coded, : s.counts[coded]]
    if order is not None:
        rows = rows[order]
    texts: list[str] = SCANNER.texts(data, s.spans, np.ascontiguousarray(rows, dtype=np.int64), span)
    return texts


def _raw(data: bytes, lo: int, hi: int) -> msgspec.Raw:
    return msgspec.Raw(data[lo:hi])


def _strings(data: bytes, s: Scratch, k: np.ndarray, col: int) -> tuple[np.ndarray, list[str]] | None:
    """The kept rows (indices into ``k``) whose pid or tid (span column ``col``) is a string,
    and their texts; None if none is."""
    rows = np.flatnonzero(s.spans[k, 2 * col + 1] > 0)
    if not len(rows):
        return None
    texts: list[str] = SCANNER.texts(data, s.spans, k[rows], col)
    return rows, texts


def _pseudo(
    cat_codes: np.ndarray, cat_values: list[str], pids: tuple[np.ndarray, list[str]] | None, nk: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Kineto's own pseudo-events among the kept rows, as :func:`.parts.decoded_part` finds them: the
    ``Trace`` category (the profiler span, iteration markers) or a ``Spans``/``Traces`` pid;
    ``(pseudo, trace)`` masks, or None if there are none."""
    trace_cat = [i for i, c in enumerate(cat_values) if c == "Trace"]
    trace = derive.in_codes(cat_codes, trace_cat) if trace_cat else np.zeros(nk, dtype=bool)
    pseudo = trace.copy()
    if pids is not None:
        rows, texts = pids
        pseudo[rows[[t in KINETO_PSEUDO_PIDS for t in texts]]] = True
    return (pseudo, trace) if pseudo.any() else None


def _numbered(texts: tuple[np.ndarray, list[str]], nk: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Where the kept rows ``rows`` (all if None) have a string (``texts``: kept rows, texts),
    as (positions among ``rows``, the texts' indices)."""
    at = np.full(nk, -1, dtype=np.int64)
    at[texts[0]] = np.arange(len(texts[0]))
    picked = at if rows is None else at[rows]
    where = np.flatnonzero(picked >= 0)
    return where, picked[where]


def _int_texts(texts: list[str], labels: dict[str, int]) -> np.ndarray | list[int]:
    """What the msgspec path (:func:`.parts.decoded_part`) gives the strings ``texts`` (in row
    order) of a column whose other values are ints: numpy's conversion where it converts every
    string (it converts each value alone, and ints as themselves), else :func:`.parts.as_int`
    of each distinct string in order of first appearance (the ints among them, in ``pd.factorize``'s order,
    take no label and convert to themselves)."""
    try:
        return np.array(np.array(texts, dtype=object), dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        lut = {t: as_int(t, labels) for t in dict.fromkeys(texts)}
        return [lut[t] for t in texts]


def _part(data: bytes, n: int, s: Scratch, state: FileState, offset: int) -> Any:
    """The :class:`.parts.Part` of the scanned piece, as :func:`.parts.decoded_part` makes it from decoded events."""
    phc = _PH_LUT[s.ph[:n]]
    if (phc < 0).any():
        raise _GiveUp
    counts = np.bincount(phc, minlength=len(PHASES))
    if counts[PH["B"]] + counts[PH["E"]]:
        raise _GiveUp  # B/E pairs are matched across the file from decoded events
    n_meta = int(counts[PH["M"]])
    k = np.flatnonzero(KEPT_LUT[phc])
    nk_all = nk = len(k)
    n_flow = int(counts[PH["s"]] + counts[PH["f"]] + counts[PH["t"]])
    is_instant = phc[k] != PH["X"]
    # The kept rows' values are gathered column by column where needed (s.ints[k, col]), not
    # whole rows of every column (~110 us and ~1.3 MB a sample file).
    ck = s.codes[k]
    cat_codes = ck[:, _CAT_CODES]
    cat_values = _first_texts(data, s, _CAT_CODES, _CAT)
    name_codes = ck[:, _NAME_CODES]
    names = _first_texts(data, s, _NAME_CODES, _NAME)
    ts = s.floats[k, _TS]
    dur = s.floats[k, _DUR]
    dur[is_instant & np.isnan(dur)] = 0.0
    state.bound_ts(ts)
    # String pids and tids (Kineto's pseudo-events at a file's end, ...), numbered below as
    # parts.decoded_part numbers them (labels), and the pseudo-events, left out as it leaves them.
    pids = _strings(data, s, k, _PID_SPAN)
    tids = _strings(data, s, k, _TID_SPAN)
    pseudo = _pseudo(cat_codes, cat_values, pids, nk)
    kept_rows: np.ndarray | None = None
    every_row = ts, dur, is_instant  # (the pseudo-events' span is taken from these, below)
    if pseudo is not None:
        kept_rows = np.flatnonzero(~pseudo[0])
        k, ts, dur, is_instant, ck = k[kept_rows], ts[kept_rows], dur[kept_rows], is_instant[kept_rows], ck[kept_rows]
        cat_codes = ck[:, _CAT_CODES]
        name_codes, names = renumber_first_seen(name_codes, names, kept_rows)
        nk = len(k)
    if np.isnan(dur).any() or (dur < 0).any() or not np.isfinite(ts).all() or np.isinf(dur).any():
        raise _GiveUp  # malformed events: the msgspec path reports them by index
    with np.errstate(invalid="ignore", over="ignore"):
        if (~(np.abs(ts * 1000.0 + state.base_time_ns) < MAX_NS)).any() or (dur * 1000.0 >= MAX_NS).any():
            raise _GiveUp
    big = np.abs(ts) >= FLOAT_EXACT_US
    if big.any() and (
        not np.array_equal(ts[big], np.floor(ts[big]))
        or ts_written_with_fraction(data, int(s.ev_span[0, 0]), int(s.ev_span[n - 1, 1]))
    ):
        raise _GiveUp  # nanoseconds read from the text (ns_of_text): events.ts_written_with_fraction
    meta_events: list[Any] = []
    if n_meta:  # a few per file: decoded by msgspec, as the reader keeps them
        spans = s.ev_span[np.flatnonzero(phc == PH["M"])].tolist()
        try:
            meta_events = LIST_DECODER.decode(b"[" + b",".join(data[a:b] for a, b in spans) + b"]")
        except msgspec.DecodeError:
            raise _GiveUp from None
    # No _GiveUp after this point: the file's state takes this piece.
    state.meta_events += meta_events
    state.count("flow events", n_flow)
    state.count("other phases", n - nk_all - n_meta - n_flow)
    if pseudo is not None:
        is_pseudo, is_trace = pseudo
        state.take_pseudo(*every_row, is_trace, is_pseudo)
    if nk and not state.ts_ns_precision and not np.array_equal(ts, np.floor(ts)):
        state.ts_ns_precision = True
    pid = s.pidtid[k, 0]
    tid = s.pidtid[k, 1]
    if pids is not None:  # numbered in order of first appearance among all kept rows
        distinct = list(dict.fromkeys(pids[1]))
        numbers = int_lut(distinct, state.labels).tolist()
        for text, number in zip(distinct, numbers, strict=True):
            state.pid_text.setdefault(number, text)
        lut = dict(zip(distinct, numbers, strict=True))
        where, which = _numbered(pids, nk_all, kept_rows)
        pid[where] = [lut[pids[1][j]] for j in which.tolist()]
    if tids is not None:
        where, which = _numbered(tids, nk_all, kept_rows)
        tid[where] = _int_texts([tids[1][j] for j in which.tolist()], state.labels)
    cat_to_code = np.array([CODE[CAT_TO_KIND.get(c.lower(), EventKind.OTHER)] for c in cat_values], dtype=np.int8)
    kind = cat_to_code[cat_codes] if nk else np.empty(0, np.int8)
    device = np.full(nk, -1, dtype=np.int16)
    stream = np.full(nk, -1, dtype=np.int64)
    dev_rows = np.flatnonzero(derive.in_codes(kind, DEVICE_CODES))
    if len(dev_rows):
        d = s.ints[k[dev_rows], _DEVICE]
        st = s.ints[k[dev_rows], _STREAM]
        texts = _strings(data, s, k[dev_rows], _STREAM_SPAN)
        if texts is not None:  # string streams: converted as parts.decoded_part converts them
            values: list[object] = st.tolist()
            for i, text in zip(texts[0].tolist(), texts[1], strict=True):
                values[i] = text
            st = int_column(np.array(values, dtype=object), {})
        device[dev_rows] = np.where(d >= 0, d, pid[dev_rows]).astype(np.int16)
        stream[dev_rows] = np.where(st >= 0, st, tid[dev_rows])
    has_gpu_args = derive.in_codes(kind, ARGS_CODES)
    sync_rows = np.flatnonzero(kind == CODE[EventKind.CUDA_SYNC])
    if len(sync_rows):
        waits = (s.ints[k[sync_rows], _WAIT_STREAM] >= 0) | (s.ints[k[sync_rows], _WAIT_CORR] >= 0)
        has_gpu_args[sync_rows[waits]] = True
    gpu_rows = np.flatnonzero(has_gpu_args)
    g = s.ints[k[gpu_rows]]
    gf = s.floats[k[gpu_rows]]
    grid = np.clip(g[:, _GRID : _GRID + 3], -1, _I32_MAX).astype(np.int32)
    block = np.clip(g[:, _BLOCK : _BLOCK + 3], -1, _I32_MAX).astype(np.int32)
    gpu = gpu_columns(
        grid,
        block,
        g[:, _REGISTERS],
        g[:, _SHARED_MEMORY],
        gf[:, _BLOCKS_PER_SM],
        gf[:, _WARPS_PER_SM],
        gf[:, _OCCUPANCY],
        g[:, _BYTES],
        gf[:, _BANDWIDTH],
        g[:, _WAIT_STREAM],
        g[:, _WAIT_CORR],
    )
    comm_rows, comm = _comm(data, s, k, kind, name_codes, names)
    return Part(
        ts_us=ts,
        ts_ns=None,
        dur_us=dur,
        instant=is_instant,
        arg_rank=np.full(nk, -1, dtype=np.int64),
        name_codes=name_codes.astype(np.int32),
        names=names,
        kind=kind,
        pid=pid,
        tid=tid,
        device=device,
        stream=stream,
        correlation=s.ints[k, _CORRELATION],
        external_id=s.ints[k, _EXTERNAL_ID],
        gpu_rows=gpu_rows,
        gpu=gpu,
        comm_rows=comm_rows,
        comm=comm,
        mem=_memory(s.ints, k, name_codes, names),
        op=_op_args(data, s, ck, kind),
    )


def names_starting(names: list[str], prefix: str) -> list[int]:
    """The indices of the names that start with ``prefix`` (no NUL in it), in order: found in
    one string of all of them (C-level searches), not by a Python test per name."""
    if not names:
        return []
    joined = "\x00" + "\x00".join(names)
    key = "\x00" + prefix
    out: list[int] = []
    index, counted = 0, 0  # (the names before byte ``counted``: ``index``)
    at = joined.find(key)
    while at >= 0:
        index += joined.count("\x00", counted, at)
        counted = at
        out.append(index)
        at = joined.find(key, at + 1)
    return out


def _comm(
    data: bytes, s: Scratch, k: np.ndarray, kind: np.ndarray, name_codes: np.ndarray, names: list[str]
) -> tuple[np.ndarray, dict[str, list[Any]]]:
    """Rows (among the kept rows ``k`` of the scan) carrying collective metadata, as
    :func:`.parts.decoded_part` reads them."""
    comm: dict[str, list[Any]] = {f: [] for f in COMM_FIELDS}
    with_meta = np.flatnonzero(s.spans[k, 2 * _COLLECTIVE + 1] > 0)
    annot_codes = names_starting(names, "nccl:")
    annotated = (
        np.flatnonzero((kind == CODE[EventKind.USER_ANNOTATION]) & derive.in_codes(name_codes, annot_codes))
        if annot_codes
        else np.empty(0, np.int64)
    )
    if len(annotated):
        either = np.zeros(len(k), dtype=bool)
        either[with_meta] = True
        either[annotated] = True
        comm_rows = np.flatnonzero(either)
    else:
        comm_rows = with_meta
    kernel = CODE[EventKind.KERNEL]
    for i in comm_rows.tolist():
        row = s.spans[k[i]].tolist()
        ints = s.ints[k[i]].tolist()
        if row[2 * _COLLECTIVE + 1] > 0:
            values = (
                normalize_collective(data[row[2 * _COLLECTIVE] : row[2 * _COLLECTIVE + 1]].decode()),
                data[row[2 * _DTYPE] : row[2 * _DTYPE + 1]].decode() if row[2 * _DTYPE + 1] > 0 else None,
                ints[_IN_NELEMS],
                ints[_OUT_NELEMS],
                ints[_GROUP_SIZE],
                raw_str(_raw(data, row[2 * _PG_NAME], row[2 * _PG_NAME + 1])),
                raw_str(_raw(data, row[2 * _PG_DESC], row[2 * _PG_DESC + 1])),
                ints[_SEQ],
                "kernel" if kind[i] == kernel else "record_param_comms",
            )
        else:
            dims, types = _OP_SPANS["input_dims"], _OP_SPANS["input_type"]
            nelems, dtype = first_dims(
                _raw(data, row[2 * dims], row[2 * dims + 1]), _raw(data, row[2 * types], row[2 * types + 1])
            )
            label = names[int(name_codes[i])].split(":", 1)[1]
            values = (normalize_collective(label), dtype, nelems, -1, -1, None, None, -1, "annotation")
        for f, v in zip(COMM_FIELDS, values, strict=True):
            comm[f].append(v)
    return comm_rows, comm


def first_seen_order(c: np.ndarray, count: int) -> np.ndarray:
    """The distinct numbers of ``c`` (each below ``count``) in order of first appearance.

    The scanner numbered them in that order among more rows, so among these they usually come
    in increasing order: then each number's first appearance is where it exceeds all before
    it, and the distinct numbers, sorted, are that order (checked: as many new maxima as
    distinct numbers). Else by ``np.unique``'s first indices."""
    high = np.maximum.accumulate(c)
    n_new = 1 + int(np.count_nonzero(high[1:] > high[:-1]))
    used = np.flatnonzero(np.bincount(c, minlength=count))
    if n_new == len(used):
        return used
    first_at = np.full(count, len(c), dtype=np.int64)
    np.minimum.at(first_at, c, np.arange(len(c)))
    return used[np.argsort(first_at[used], kind="stable")]


def _op_args(data: bytes, s: Scratch, ck: np.ndarray, kind: np.ndarray) -> op_args.OpArgs:
    """CPU operators with Input Dims and their four argument texts, as op_args.collect reads them."""
    cpu = np.flatnonzero(kind == CODE[EventKind.CPU_OP])
    rows = cpu[ck[cpu, _OP_CODES["input_dims"]] >= 0]
    codes: dict[str, np.ndarray] = {}
    values: dict[str, list[str]] = {}
    for f in op_args.FIELDS:
        # The scanner numbered the texts among all kept events: renumber them in order of
        # first appearance among these rows (op_args._coded's numbers; -1: not recorded).
        c = ck[rows, _OP_CODES[f]]
        present = c >= 0
        if not present.any():
            codes[f], values[f] = np.full(len(rows), -1, np.int32), []
            continue
        order = first_seen_order(c[present], s.counts[_OP_CODES[f]])
        used = order  # (the largest number used is its maximum)
        lut = np.full(int(used.max()) + 1, -1, np.int32)
        lut[order] = np.arange(len(order), dtype=np.int32)
        codes[f] = np.where(present, lut[np.maximum(c, 0)], -1).astype(np.int32)
        values[f] = _first_texts(data, s, _OP_CODES[f], _OP_SPANS[f], order)
    return op_args.OpArgs(rows=rows.astype(np.int64), codes=codes, values=values)


def _memory(ints: np.ndarray, k: np.ndarray, name_codes: np.ndarray, names: list[str]) -> memory.MemoryRows:
    """Memory records (among the kept rows ``k`` of the scan's ``ints``), as memory.memory_rows reads them."""
    codes = sorted(names.index(nm) for nm in memory.MEMORY_EVENT_NAMES if nm in names)  # (names are distinct)
    if not codes:
        return memory.empty_memory_rows()
    rows = np.flatnonzero(derive.in_codes(name_codes, codes))
    oom_codes = [i for i in codes if names[i] == "[OutOfMemory]"]
    picked = ints[k[rows]]
    # Device Type: a c10 number per record (the scanner gives up on strings), named once per value.
    types, codes_of_type = np.unique(picked[:, _MEM_DEVICE_TYPE], return_inverse=True)
    type_names = [memory.device_type_name(v) for v in types.tolist()]
    return memory.MemoryRows(
        rows=rows.astype(np.int64),
        oom=derive.in_codes(name_codes[rows], oom_codes),
        ints={f: picked[:, col].copy() for f, col in _MEM_COLUMNS.items()},
        device_type=[type_names[c] for c in codes_of_type.tolist()],
    )
