"""The events tables of several small one-rank Kineto files, built together (issue 17).

A small rank's events table costs mostly per numpy call, not per event: sorting, launch
links, nesting, name codes and classification are a few dozen calls each, whatever the
rank's size (the 8-rank sample's ranks hold ~2,500 events). A serial load therefore reads
each small file of one rank into its columns (:class:`Pending`, from
``pieces.parse_in_pieces(..., defer=True)``), and :func:`tables` sorts, links, nests and
classifies the rows of all of them in one pass each, every file's rows keyed apart from
the others', then cuts each file's rows (contiguous once sorted) into its own tables.

The keys that keep files apart:

* sorting: each file's start times are shifted so that the files follow one another in
  time (a file's rows keep their order among themselves, ties included);
* launch links: correlation ids are offset per file, so a GPU activity only finds a launch
  of its own file;
* nesting: the file is part of each lane (lanes never span files).

The tables are the per-file path's exactly (:func:`.tables.rank_tables` then
``model.trace.classified``; ``tests/loading/test_batch.py`` compares every table of real
traces both ways). A batch that cannot be keyed apart (times or ids near the int64 range)
raises :class:`Unfit`; the loader then reads its files one by one, as before.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ....model.classify import COPY_KINDS, Classifier, by_context
from ....model.frames import frame
from ....model.rank_data import Deferred, RankData, RankMeta
from ....model.schema import (
    GPU_ARGS_COLUMNS,
    GPU_CLASS_CATEGORIES,
    KIND_CATEGORIES,
    KIND_CODE,
    EventKind,
    categorical,
)
from .. import derive
from .columns import FileColumns
from .events import ACTIVITY_CODES, DEVICE_CODES, LAUNCH_CODES
from .tables import EVENT_COLUMNS, GONE, comms_table, copy_flags, gpu_args_table, step_number

__all__ = ["BATCH_ROWS", "MAX_ROWS", "Pending", "Unfit", "full", "tables"]

#: Files of one rank with at most this many events are deferred (a ~2 MB file's).
MAX_ROWS = 1 << 14
#: A batch holds at most this many events (the most ``derive.nesting`` nests in one pass;
#: also what bounds the columns held before their tables exist).
BATCH_ROWS = derive.ONE_PASS_ROWS
_KEY_LIMIT = 1 << 62
_CPU_STEP_KINDS = np.array([KIND_CODE[EventKind.USER_ANNOTATION], KIND_CODE[EventKind.CPU_OP]])


@dataclass
class Pending:
    """A one-rank file's columns, its tables not built yet (:func:`.tables.split_ranks`' output)."""

    raw: FileColumns
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    meta: RankMeta


class Unfit(Exception):
    """These files' rows cannot be keyed apart in int64 (read them one by one)."""


def full(rows: int) -> bool:
    """Whether a batch holding ``rows`` events could go past :data:`BATCH_ROWS` with one more
    deferred file (of at most :data:`MAX_ROWS` events): then it is built first."""
    return rows > BATCH_ROWS - MAX_ROWS


def _time_shifts(pending: Sequence[Pending]) -> list[int]:
    """Per file, what to add to its start times so that the files follow one another in time."""
    shifts, at = [], 0
    for p in pending:
        if len(p.ts_ns) == 0:
            shifts.append(0)
            continue
        lo, hi = int(p.ts_ns.min()), int(p.ts_ns.max()) + int(p.dur_ns.max())  # hi: past every end
        shifts.append(at - lo)
        at += hi - lo + 1
        if at >= _KEY_LIMIT or abs(at - lo) >= _KEY_LIMIT:
            raise Unfit("times too far apart")
    return shifts


def tables(pending: Sequence[Pending], classifier: Classifier) -> list[RankData]:
    """Each file's rank, classified by ``classifier``: what ``classified(rank_tables(...))`` gives."""
    m = len(pending)
    sizes = [len(p.ts_ns) for p in pending]
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(starts[-1])
    per_row = np.repeat(np.arange(m, dtype=np.int64), sizes)  # each row's file (also once sorted)
    first = starts[:-1][per_row]  # each row's file's first row
    raws = [p.raw for p in pending]

    ts = np.concatenate([p.ts_ns for p in pending])
    dur = np.concatenate([p.dur_ns for p in pending])
    shifts = np.array(_time_shifts(pending), dtype=np.int64)
    key = ts + shifts[per_row]
    order = derive.start_order(key, dur)  # file by file, each in its start order
    ts_s, dur_s, key = ts[order], dur[order], key[order]
    del ts, dur
    kind_of_row = np.concatenate([r.kind for r in raws])
    kind = kind_of_row[order]
    cols = {c: np.concatenate([getattr(r, c) for r in raws])[order] for c in EVENT_COLUMNS}
    for r in raws:  # (as rank_tables drops a one-rank file's columns once gathered)
        for c in EVENT_COLUMNS:
            setattr(r, c, GONE)
    eid = np.arange(n, dtype=np.int64) - first

    # Launch links: correlation ids offset per file.
    corr = cols["correlation"]
    span = int(corr.max()) + 1 if n else 1
    if span * m >= _KEY_LIMIT:
        raise Unfit("correlation ids too large")
    keyed = np.where(corr >= 0, corr + per_row * span, -1)
    launch = derive.launch_links(keyed, derive.in_codes(kind, LAUNCH_CODES), derive.in_codes(kind, ACTIVITY_CODES))
    launch_eid = np.where(launch >= 0, launch - first, -1)
    del keyed

    # Nesting: CPU events per (file, pid, tid); device events per (file, device, stream).
    device_side = derive.in_codes(kind, DEVICE_CODES)
    lane_a = np.where(device_side, cols["device"].astype(np.int64), cols["pid"])
    lane_b = np.where(device_side, cols["stream"], cols["tid"])
    depth, parent = derive.nesting(ts_s, dur_s, lane_a, lane_b, per_row * 2 + device_side)
    del lane_a, lane_b
    parent_eid = np.where(parent >= 0, parent - first, -1)
    parent_eid[device_side] = -1

    # Names: each file's names one after the other; a rank's categories are the names it
    # uses, in its file's order.
    name_starts = np.concatenate(([0], np.cumsum([len(r.names) for r in raws]))).astype(np.int64)
    all_names = [nm for r in raws for nm in r.names]
    name_of_row = np.concatenate([r.name_codes for r in raws]) + name_starts[:-1][per_row]
    codes = name_of_row[order]
    used = np.flatnonzero(np.bincount(codes, minlength=len(all_names)))
    lut = np.zeros(len(all_names), dtype=np.int64)
    lut[used] = np.arange(len(used))
    remap = lut[codes]
    used_at = np.searchsorted(used, name_starts).tolist()
    classes = classifier.class_codes(codes, all_names, kind, list(KIND_CATEGORIES))
    classes = by_context(
        classifier,
        classes,
        kind_codes=kind,
        kind_values=list(KIND_CATEGORIES),
        name_codes=codes,
        names=all_names,
        launch=launch,
        parent=np.where(device_side, -1, parent),
        lanes=(per_row, cols["device"], cols["stream"]),
    )
    del parent
    step = _steps(key, dur_s, codes, kind, all_names, per_row, device_side, launch)
    del codes, lut, key, launch

    eid_of_row = np.empty(n, dtype=np.int64)
    eid_of_row[order] = eid  # (each file's rows are contiguous before and after the sort)
    gpu_args = _Shared(
        functools.partial(_gpu_args_tables, raws, starts, eid_of_row, name_of_row, kind_of_row, all_names)
    )
    out = []
    for f, (p, r) in enumerate(zip(pending, raws, strict=True)):
        a, b = int(starts[f]), int(starts[f + 1])
        names = r.names
        ua, ub = used_at[f], used_at[f + 1]
        events = frame(
            {
                "eid": eid[a:b],
                "ts_ns": ts_s[a:b],
                "dur_ns": dur_s[a:b],
                "name": categorical(
                    codes=(remap[a:b] - ua).astype(np.int32),
                    categories=[all_names[i] for i in used[ua:ub].tolist()],
                ),
                "kind": categorical(codes=kind[a:b], categories=KIND_CATEGORIES),
                "gpu_class": categorical(codes=classes[a:b], categories=GPU_CLASS_CATEGORIES),
                **{c: cols[c][a:b] for c in EVENT_COLUMNS},
                "launch_eid": launch_eid[a:b],
                "parent_eid": parent_eid[a:b],
                "depth": depth[a:b],
                "step": step[a:b],
            }
        )
        mine = eid_of_row[a:b]
        out.append(
            RankData(
                meta=p.meta,
                events=events,
                # Built when first read: every file's GPU arguments together (or this
                # file's alone, where the files hold different argument columns), the rest
                # from the file's columns, as the per-file path builds them.
                gpu_args=Deferred(functools.partial(gpu_args.table, f, r, mine, names)),
                comms=Deferred(functools.partial(comms_table, r, mine)),
                memory=Deferred(functools.partial(r.mem.table, mine)),
                op_args=Deferred(functools.partial(r.op.table, mine)),
                counters=Deferred(functools.partial(r.counters.table, p.meta.base_time_ns)),
            )
        )
    return out


class _Shared:
    """The ``gpu_args`` tables of a batch's files, built together when the first is read
    (once, under a lock; the columns they are built from are let go then)."""

    def __init__(self, build: Callable[[], list[pd.DataFrame] | None]) -> None:
        self._build: Callable[[], list[pd.DataFrame] | None] | None = build
        self._tables: list[pd.DataFrame] | None = None
        self._lock = threading.Lock()

    def table(self, f: int, raw: FileColumns, eid_of_row: np.ndarray, names: list[str]) -> pd.DataFrame:
        with self._lock:
            if self._build is not None:
                self._tables, self._build = self._build(), None
            tables = self._tables
        if tables is None:  # the files hold different argument columns: this file's alone
            return gpu_args_table(raw, eid_of_row, names)
        return tables[f]


def _gpu_args_tables(
    raws: Sequence[FileColumns],
    starts: np.ndarray,
    eid_of_row: np.ndarray,
    name_of_row: np.ndarray,
    kind_of_row: np.ndarray,
    all_names: list[str],
) -> list[pd.DataFrame] | None:
    """Each file's ``gpu_args`` table, as ``gpu_args_table`` builds it, from one pass
    over all the files' rows (``*_of_row``: by row of the files one after the other); None
    where the files do not hold the same argument columns."""
    keys = [list(r.gpu) for r in raws]
    if any(k != keys[0] for k in keys):
        return None
    sizes = [len(r.gpu_rows) for r in raws]
    rows = np.concatenate([r.gpu_rows + a for r, a in zip(raws, starts[:-1].tolist(), strict=True)])
    eids = eid_of_row[rows]
    # By file, then eid (a file's eids are below its row count: its first row + eid orders both).
    per = np.argsort(np.repeat(starts[:-1], sizes) + eids, kind="stable")
    rows, eids = rows[per], eids[per]
    ck, pageable = copy_flags(name_of_row[rows], all_names, kind_of_row[rows])
    names = [c.name for c in GPU_ARGS_COLUMNS]
    columns = {c: np.concatenate([r.gpu[c] for r in raws])[per] for c in names[1:] if c in keys[0]}
    bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
    out = []
    for a, b in itertools.pairwise(bounds):
        table: dict[str, object] = {"eid": eids[a:b]}
        for c, values in columns.items():
            table[c] = values[a:b]
        table["copy_kind"] = categorical(codes=ck[a:b], categories=COPY_KINDS)
        table["pageable"] = pageable[a:b]
        out.append(frame(table, names))
    return out


def _steps(
    key: np.ndarray,
    dur: np.ndarray,
    codes: np.ndarray,
    kind: np.ndarray,
    all_names: list[str],
    per_row: np.ndarray,
    device_side: np.ndarray,
    launch: np.ndarray,
) -> np.ndarray:
    """``derive.steps`` of every file at once: rows sorted, ``key`` their shifted starts (the
    files one after the other in time), ``codes`` into ``all_names``, ``launch`` the row of
    each GPU activity's launch (-1: none). One span per (file, step number)."""
    n = len(key)
    out = np.full(n, -1, dtype=np.int32)
    step_codes = [i for i, nm in enumerate(all_names) if nm.startswith("ProfilerStep#")]
    if n == 0 or not step_codes:
        return out
    rows = np.flatnonzero(derive.in_codes(codes, step_codes) & derive.in_codes(kind, _CPU_STEP_KINDS))
    if len(rows) == 0:
        return out
    lut = np.zeros(len(all_names), dtype=np.int64)
    lut[step_codes] = [step_number(all_names[c]) for c in step_codes]
    numbers, files = lut[codes[rows]], per_row[rows]
    by = np.lexsort((numbers, files))
    numbers, files, rows = numbers[by], files[by], rows[by]
    bounds = np.flatnonzero(np.concatenate(([True], (numbers[1:] != numbers[:-1]) | (files[1:] != files[:-1]))))
    uniq = numbers[bounds]
    starts = np.minimum.reduceat(key[rows], bounds)
    ends = np.maximum.reduceat(key[rows] + dur[rows], bounds)
    order = np.argsort(starts, kind="stable")  # (a file's spans after the previous file's)
    starts, ends, uniq = starts[order], ends[order], uniq[order]
    k = np.searchsorted(starts, key, side="right") - 1
    ok = k >= 0
    kk = np.where(ok, k, 0)
    inside = ok & ((key < ends[kk]) | (key == starts[kk]))
    out[:] = np.where(inside, uniq[kk], -1)
    launched = device_side & (launch >= 0)
    out[launched] = out[launch[launched]]
    return out
