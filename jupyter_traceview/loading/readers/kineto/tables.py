"""A file's columns to rank tables: split by rank, sorted, with the derived columns.

Files that hold several ranks are split by process (a ``pid_map``, or ranks named in process
names); each rank's rows are sorted by start (longer first at equal starts) and get their
launch links, nesting and iterations (:mod:`..derive`), and the ``gpu_args``, ``comms``,
``memory`` and ``op_args`` tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....errors import TraceFormatError
from ....model.classify import COPY_KINDS, copy_kind_of
from ....model.frames import frame
from ....model.rank_data import RankData, RankMeta
from ....model.schema import (
    COMMS_COLUMNS,
    COMMS_SOURCES,
    DTYPE_BYTES,
    GPU_ARGS_COLUMNS,
    KIND_CATEGORIES,
    KIND_CODE,
    EventKind,
    categorical,
)
from .. import derive
from .columns import FileColumns
from .events import ACTIVITY_CODES, DEVICE_CODES, LAUNCH_CODES, to_ns
from .header import Header
from .parts import COMM_FIELDS, as_int

__all__ = [
    "EVENT_COLUMNS",
    "GONE",
    "comms_table",
    "copy_flags",
    "gpu_args_table",
    "rank_tables",
    "split_and_finish",
    "split_ranks",
    "step_number",
]


_RANK_IN_PROCESS = re.compile(r"\brank\s*[:#_-]?\s*(\d+)", re.IGNORECASE)


def _rank_of_rows(
    path: Path, raw: FileColumns, header: Header, pid_map: Mapping[int | str, int] | None, state: dict[str, int]
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
            mapping[as_int(k, labels)] = int(v)
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


def split_and_finish(
    path: Path, raw: FileColumns, header: Header, pid_map: Mapping[int | str, int] | None
) -> list[RankData]:
    ts_ns, dur_ns, groups, one_rank = split_ranks(path, raw, header, pid_map)
    return [rank_tables(raw, ts_ns, dur_ns, rows, meta, last_use=one_rank) for meta, rows in groups]


def split_ranks(
    path: Path, raw: FileColumns, header: Header, pid_map: Mapping[int | str, int] | None
) -> tuple[np.ndarray, np.ndarray, list[tuple[RankMeta, np.ndarray | None]], bool]:
    """What the rank tables of a file are built from: the events' start and duration in ns,
    each rank's metadata and rows (None: all of them), and whether the file holds one rank
    (its event columns are then read once more, by :func:`rank_tables` or readers.batch)."""
    ts_ns = (raw.ts_ns if raw.ts_ns is not None else to_ns(raw.ts_us)) + header.base_time_ns
    dur_ns = np.rint(raw.dur_us * 1000.0).astype(np.int64)
    row_ranks, source = _rank_of_rows(path, raw, header, pid_map, raw.skipped)
    profiler_span = None
    if raw.profiler_span is not None:
        lo, hi = raw.profiler_span
        profiler_span = (
            int(to_ns(np.array([lo]))[0]) + header.base_time_ns,
            int(to_ns(np.array([hi]))[0]) + header.base_time_ns,
        )
    groups: list[tuple[int, str, np.ndarray | None]]
    if row_ranks is None:
        groups = [(header.rank, header.rank_source, None)]
        # One rank: each of the file's columns is gathered once (in rank_tables), then
        # dropped: the file's and the rank's columns are not all in memory at once.
        raw.ts_us = raw.dur_us = raw.arg_rank = raw.instant = GONE
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
EVENT_COLUMNS = ("pid", "tid", "device", "stream", "correlation", "external_id")
#: What replaces a file column that :func:`split_and_finish` no longer needs.
GONE = np.empty(0)


def rank_tables(
    raw: FileColumns,
    ts_ns: np.ndarray,
    dur_ns: np.ndarray,
    rows: np.ndarray | None,
    meta: RankMeta,
    *,
    last_use: bool = False,
) -> RankData:
    """One rank's tables from the file's columns (its ``rows``; None: all). ``last_use``: the
    file's event columns are not read again (one rank): each is dropped once gathered."""
    one_file_rank = rows is None
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
    for col in EVENT_COLUMNS:
        cols[col] = getattr(raw, col)[order]
        if last_use:
            setattr(raw, col, GONE)

    launch_kind = derive.in_codes(kind, LAUNCH_CODES)
    activity = derive.in_codes(kind, ACTIVITY_CODES)
    cols["launch_eid"] = derive.launch_links(cols["correlation"], launch_kind, activity)
    device_side = derive.in_codes(kind, DEVICE_CODES)
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
    step_numbers = {i: step_number(names[i]) for i in step_name_codes}
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
        gpu_args=gpu_args_table(raw, eid_of_row, names),
        comms=comms_table(raw, eid_of_row),
        memory=raw.mem.table(eid_of_row),
        op_args=raw.op.table(eid_of_row),
        counters=raw.counters.table(meta.base_time_ns, None if one_file_rank else _gpu_devices(kind, cols["device"])),
    )


def _gpu_devices(kind: np.ndarray, device: np.ndarray) -> np.ndarray:
    """The devices a rank's GPU activities ran on (a multi-rank file's counter tracks go to their device's rank)."""
    return np.unique(device[derive.in_codes(kind, ACTIVITY_CODES)])


_STEP_PREFIX = "ProfilerStep#"


def step_number(name: str) -> int:
    """The N of ``ProfilerStep#N...`` (the digits after the prefix: ``re.match(r"ProfilerStep#(\\d+)")``
    with string methods, no pattern to compile on a process's first load), else -1."""
    if not name.startswith(_STEP_PREFIX):
        return -1
    digits = name[len(_STEP_PREFIX) :]
    if not digits.isdecimal():  # (\d is a Unicode decimal digit: what isdecimal() tests)
        end = next((i for i, c in enumerate(digits) if not c.isdecimal()), len(digits))
        digits = digits[:end]
    return int(digits) if digits else -1


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


def gpu_args_table(raw: FileColumns, eid_of_row: np.ndarray, names: list[str]) -> pd.DataFrame:
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


def comms_table(raw: FileColumns, eid_of_row: np.ndarray) -> pd.DataFrame:
    eids = eid_of_row[raw.comm_rows]
    mine = np.flatnonzero(eids >= 0)
    mine = mine[np.argsort(eids[mine], kind="stable")]
    pick = mine.tolist()
    c = {f: [raw.comm[f][i] for i in pick] for f in COMM_FIELDS}
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
