"""Decoded events to columns (the parser): one chunk's or piece's columns, a :class:`Part`.

A file is read in parts (one per chunk of decoded events, or per byte range, see
:mod:`.pieces`) that share a :class:`FileState`: what the parts accumulate besides their
columns (metadata events, B/E pairs, counts of what was skipped, malformed events).
:func:`decoded_part` builds a part from msgspec's decoded events; :mod:`.native` builds the
same part from the C scanner's output (the tests compare them).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ....errors import TraceFormatError
from ....model.collectives import normalize_collective
from ....model.schema import (
    EventKind,
)
from .. import counters, derive, memory, op_args
from ..common import ARGS_DROPPED, DROPPED
from .decode import Chunk, load_raw, ns_of_text
from .events import (
    ARGS_CODES,
    CAT_TO_KIND,
    CODE,
    DEVICE_CODES,
    FLOAT_EXACT_US,
    I64_RANGE,
    KEPT_LUT,
    KINETO_PSEUDO_PIDS,
    MAX_NS,
    PH,
    PHASE_CODE,
    PHASES,
    Args,
    Event,
    to_ns,
)
from .header import rank_problem

__all__ = [
    "COMM_FIELDS",
    "FileState",
    "Part",
    "as_int",
    "decoded_part",
    "first_dims",
    "first_seen_codes",
    "gpu_arrays",
    "gpu_columns",
    "int_lut",
    "pair_begin_end",
    "raw_str",
    "renumber_first_seen",
    "xyz",
]


@dataclass
class FileState:
    """What the chunks of one file accumulate besides their columns."""

    skipped: dict[str, int] = field(default_factory=dict)
    meta_events: list[Event] = field(default_factory=list)
    begin_end: list[Event] = field(default_factory=list)
    profiler_span: tuple[float, float] | None = None
    labels: dict[str, int] = field(default_factory=dict)
    ts_ns_precision: bool = False
    #: Malformed events by problem: (count, first example).
    problems: dict[str, list[Any]] = field(default_factory=dict)
    unreadable: list[tuple[int, str]] = field(default_factory=list)
    args_dropped: int = 0
    #: PM sampling's counter samples ("GPU N Counters" tracks), in file order.
    counters: counters.CounterSamples = field(default_factory=lambda: counters.CounterSamples())
    #: String pids as written in the file, by the id they were given.
    pid_text: dict[int, str] = field(default_factory=dict)
    #: The file's baseTimeNanoseconds (timestamps that would overflow with it are malformed).
    base_time_ns: int = 0
    #: The largest ``|ts|`` (us) checked against ``base_time_ns`` (NaN if any was NaN): where
    #: ``ts_bound * 1000 + |base|`` stays far below ``MAX_NS`` for two bases, every check
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
            span_rows = is_trace & ~is_instant & (np.abs(ts) * 1000.0 + self.base_time_ns < MAX_NS)
            span_rows &= (dur >= 0) & (dur * 1000.0 < MAX_NS)
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
class Part:
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


def as_int(v: object, labels: dict[str, int]) -> int:
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
        if I64_RANGE[0] <= number <= I64_RANGE[1]:
            return number
    except ValueError:
        pass
    # (A label without a digit, Kineto's "Spans" say, needs no pattern: none compiled for it.)
    m = re.search(r"-?\d+", text) if any(map(str.isdecimal, text)) else None
    if m is not None and len(m.group(0)) < 18:
        return int(m.group(0))
    # Names with no number get stable negative ids (-2, -3, ...), shared within a file.
    return labels.setdefault(text, -2 - len(labels))


def int_lut(uniques: Iterable[object], labels: dict[str, int]) -> np.ndarray:
    return np.array([as_int(u, labels) for u in uniques], dtype=np.int64)


def int_column(values: np.ndarray, labels: dict[str, int]) -> np.ndarray:
    """int64 column from an object array of ints, numeric strings or labels."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        out: np.ndarray = int_lut(uniques, labels)[codes]
        return out


def pair_begin_end(events: list[Event], skipped: dict[str, int]) -> list[Event]:
    """Complete events made from B/E pairs (matched per thread, innermost first)."""
    stacks: dict[tuple[Any, Any], list[Event]] = {}
    out: list[Event] = []
    for ev in events:
        key = (ev.pid, ev.tid)
        if ev.ph == "B":
            stacks.setdefault(key, []).append(ev)
        elif stacks.get(key):
            begin = stacks[key].pop()
            out.append(
                Event(
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


def first_seen_codes(values: Iterable[Any], n: int) -> tuple[np.ndarray, list[Any]]:
    """Dictionary-encode values: (codes, distinct values in first-seen order).

    In C: a dict numbers each value as it first meets it (``map`` over its ``__getitem__``).
    """
    number: defaultdict[Any, int] = defaultdict(itertools.count().__next__)
    codes = np.fromiter(map(number.__getitem__, values), dtype=np.int64, count=n)
    return codes, list(number)


def renumber_first_seen(codes: np.ndarray, values: list[Any], rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
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


def decoded_part(chunk: Chunk, state: FileState) -> Part:
    """Columns of one chunk's complete and instant events; the rest goes to ``state``."""
    events = chunk.events
    state.unreadable += chunk.bad
    state.args_dropped += chunk.args_dropped
    # Phases as small codes (the decoder hands out one interned string per phase): the
    # counts, the kept rows and the instant flags then never touch the events again.
    ph = np.fromiter(map(PHASE_CODE.__getitem__, map(_GET_PH, events)), dtype=np.int8, count=len(events))
    counts = np.bincount(ph, minlength=len(PHASES))
    n_begin_end = int(counts[PH["B"]] + counts[PH["E"]])
    if n_begin_end:
        # Matched across the whole file at the end (pairs may straddle chunks).
        state.begin_end += itertools.compress(events, ((ph == PH["B"]) | (ph == PH["E"])).tolist())
    n_meta = int(counts[PH["M"]])
    if n_meta:
        state.meta_events += itertools.compress(events, (ph == PH["M"]).tolist())
    n_counter = int(counts[PH["C"]])
    if n_counter:
        samples, n_counter = counters.samples_of(
            list(itertools.compress(events, (ph == PH["C"]).tolist())), state.skipped
        )
        state.counters.extend(samples)
    is_kept = KEPT_LUT[ph]
    n_kept = int(counts[KEPT_LUT].sum())
    kept_at: np.ndarray | None = None  # index in events of each kept event, when some are not
    if n_kept == len(events):
        kept = events
        is_instant = ph != PH["X"]
    else:
        kept_at = np.flatnonzero(is_kept)
        kept = list(itertools.compress(events, is_kept.tolist()))
        is_instant = ph[kept_at] != PH["X"]
    n_flow = int(counts[PH["s"]] + counts[PH["f"]] + counts[PH["t"]])
    state.count("flow events", n_flow)
    state.count("other phases", len(events) - n_kept - n_meta - n_flow - n_begin_end - n_counter)

    # One C-level pass per field (map + attrgetter): ~3x faster than zip(*map(...)) of tuples;
    # names, categories and pids are numbered as they are met (a dict, in C), no list kept.
    n_all = len(kept)
    cat_codes, cat_values = first_seen_codes(map(_GET_CAT, kept), n_all)
    all_name_codes, all_names = first_seen_codes(map(_GET_NAME, kept), n_all)
    pid_codes, pid_values = first_seen_codes(map(_GET_PID, kept), n_all)
    tid_codes, tid_values = first_seen_codes(map(_GET_TID, kept), n_all)
    args_t = list(map(_GET_ARGS, kept))
    ts = np.fromiter(map(_GET_TS, kept), dtype=np.float64, count=n_all)
    dur = np.fromiter(map(_GET_DUR, kept), dtype=np.float64, count=n_all)
    state.bound_ts(ts)

    # Kineto's own pseudo-events (pids "Spans"/"Traces"): the profiler span, iteration markers.
    trace_cat = [i for i, c in enumerate(cat_values) if c == "Trace"]
    pseudo_pid = [i for i, p in enumerate(pid_values) if isinstance(p, str) and p in KINETO_PSEUDO_PIDS]
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
        far_ts = np.isfinite(ts) & ~(np.abs(ts * 1000.0 + state.base_time_ns) < MAX_NS) & keep
        far_dur = np.isfinite(dur) & (dur * 1000.0 >= MAX_NS) & keep & ~bad_ts
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
    big = np.flatnonzero(np.abs(ts) >= FLOAT_EXACT_US)
    if (
        len(big)
        and chunk.ts_text is not None
        and (not np.array_equal(ts[big], np.floor(ts[big])) or chunk.ts_fraction is None or chunk.ts_fraction())
    ):
        # Microseconds since the epoch with a fractional part: a float keeps only ~0.25 us
        # of it, so those events' nanoseconds are read from the number's text, event by event
        # (events.ts_written_with_fraction: the same route whichever part holds the event).
        texts = chunk.ts_text()
        positions = (rows if kept_at is None else kept_at[rows])[big]
        ts_ns = to_ns(ts)
        ts_ns[big] = [ns_of_text(bytes(texts[i]), t) for i, t in zip(positions.tolist(), ts[big].tolist(), strict=True)]
    instant = is_instant[rows]
    arg_rank = np.full(n, -1, dtype=np.int64)
    for i in np.flatnonzero(instant).tolist():
        if args_t[i].rank:
            value = load_raw(args_t[i].rank)
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if rank_problem(value) is None:
                arg_rank[i] = int(value)
    if n and not state.ts_ns_precision and not np.array_equal(ts, np.floor(ts)):
        state.ts_ns_precision = True

    cat_to_code = np.array([CODE[CAT_TO_KIND.get(str(c).lower(), EventKind.OTHER)] for c in cat_values], dtype=np.int8)
    kind = cat_to_code[cat_codes] if n else np.empty(0, dtype=np.int8)
    name_codes, names = renumber_first_seen(all_name_codes, all_names, rows)
    pid_lut = int_lut(pid_values, state.labels)
    for value, number in zip(pid_values, pid_lut.tolist(), strict=True):
        if isinstance(value, str):
            state.pid_text.setdefault(number, value)
    pid = pid_lut[pid_codes] if n else np.empty(0, dtype=np.int64)
    if set(map(type, tid_values)) <= {int}:  # the common case, converted in C
        tid = np.array(tid_values, dtype=np.int64)[tid_codes] if n else np.empty(0, dtype=np.int64)
    else:
        tid = int_column(np.array(tid_values, dtype=object)[tid_codes], state.labels)
    correlation = np.fromiter(map(_GET_CORRELATION, args_t), dtype=np.int64, count=n)
    external_id = np.fromiter(map(_GET_EXTERNAL_ID, args_t), dtype=np.int64, count=n)

    device = np.full(n, -1, dtype=np.int16)
    stream = np.full(n, -1, dtype=np.int64)
    dev_rows = np.flatnonzero(derive.in_codes(kind, DEVICE_CODES))
    if len(dev_rows):
        dev_args = [args_t[i] for i in dev_rows.tolist()]
        d = np.fromiter(map(_GET_DEVICE, dev_args), dtype=np.int64, count=len(dev_args))
        s_vals = list(map(_GET_STREAM, dev_args))
        device[dev_rows] = np.where(d >= 0, d, pid[dev_rows]).astype(np.int16)
        if set(map(type, s_vals)) <= {int}:
            s = np.fromiter(s_vals, dtype=np.int64, count=len(s_vals))
        else:  # ROCm: string stream ids on runtime events
            s = int_column(np.array(s_vals, dtype=object), {})
        stream[dev_rows] = np.where(s >= 0, s, tid[dev_rows])

    has_gpu_args = derive.in_codes(kind, ARGS_CODES)
    sync_rows = np.flatnonzero(kind == CODE[EventKind.CUDA_SYNC])
    if len(sync_rows):
        # cuda_sync records that name the CUDA event they wait on get a gpu_args row too.
        waits = [args_t[i].wait_on_stream >= 0 or args_t[i].wait_on_record_correlation >= 0 for i in sync_rows.tolist()]
        has_gpu_args[sync_rows[np.array(waits, dtype=bool)]] = True
    gpu_rows = np.flatnonzero(has_gpu_args)
    comm_rows, comm = _comm_rows(args_t, kind, name_codes, [str(x) for x in names])
    op = op_args.collect(args_t, np.flatnonzero(kind == CODE[EventKind.CPU_OP]))
    return Part(
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
        gpu=gpu_arrays([args_t[i] for i in gpu_rows.tolist()]),
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


def xyz(values: list[object]) -> np.ndarray:
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


def gpu_arrays(args: list[Args]) -> dict[str, np.ndarray]:
    """Launch and copy arguments of GPU activities as arrays (one entry per activity)."""
    grid, block, regs, smem, bps, wps, occ, nbytes, bw, w_stream, w_corr = (
        list(map(get, args)) for get in _GET_GPU_ARGS
    )
    return gpu_columns(xyz(grid), xyz(block), regs, smem, bps, wps, occ, nbytes, bw, w_stream, w_corr)


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
    for the msgspec path (values as lists) and the C scanner's (:mod:`.native`: array slices).

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


COMM_FIELDS = ("collective", "dtype", "in_nelems", "out_nelems", "group_size", "pg_name", "pg_desc", "seq", "source")


def _comm_rows(
    args: Sequence[Args], kind: np.ndarray, name_codes: np.ndarray, names: list[str]
) -> tuple[np.ndarray, dict[str, list[Any]]]:
    """Rows carrying collective metadata: recorded args, or old-style ``nccl:*`` annotations."""
    out: dict[str, list[Any]] = {f: [] for f in COMM_FIELDS}
    with_meta = np.flatnonzero(
        np.fromiter(
            map(operator.is_not, map(_GET_COLLECTIVE, args), itertools.repeat(None)), dtype=bool, count=len(args)
        )
    ).tolist()
    annot_codes = [i for i, nm in enumerate(names) if nm.startswith("nccl:")]
    annotated = (
        np.flatnonzero((kind == CODE[EventKind.USER_ANNOTATION]) & derive.in_codes(name_codes, annot_codes)).tolist()
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
                raw_str(a.pg_name),
                raw_str(a.pg_desc),
                a.seq,
                "kernel" if kind[i] == CODE[EventKind.KERNEL] else "record_param_comms",
            )
        else:
            nelems, dtype = first_dims(a.input_dims, a.input_type)
            label = names[int(name_codes[i])].split(":", 1)[1]
            values = (normalize_collective(label), dtype, nelems, -1, -1, None, None, -1, "annotation")
        for f, v in zip(COMM_FIELDS, values, strict=True):
            out[f].append(v)
    return np.array(rows, dtype=np.int64), out


def first_dims(raw_dims: msgspec.Raw, raw_types: msgspec.Raw) -> tuple[int, str | None]:
    dims = load_raw(raw_dims)
    types = load_raw(raw_types)
    nelems = -1
    first = dims[0] if isinstance(dims, list) and dims else None
    if isinstance(first, list) and first and all(isinstance(x, int) for x in first):
        nelems = int(np.prod(first, dtype=np.int64))
    dtype = types[0] if isinstance(types, list) and types and isinstance(types[0], str) and types[0] else None
    return nelems, dtype


def raw_str(raw: msgspec.Raw) -> str | None:
    value = load_raw(raw)
    return None if value is None else str(value)
