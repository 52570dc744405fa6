"""A decoder writing columns, measured end to end with numba (issue 17, wave 5; not part of the reader).

The question this answers: how fast would the Kineto reader be if the events never became
Python objects? A numba function scans each piece of a file (the byte ranges ``tv.load``
reads, ``pieces.plan``) once and writes columns straight from the bytes: phase, pid, tid,
ts, dur, the ``args`` the reader keeps (ids, device, stream, kernel launch and copy
arguments, collective metadata) as numbers, and categories, names and the raw texts of the
recorded operator arguments as byte ranges. Python then builds the reader's per-piece
columns (``kineto._Part``) from those arrays, numbering names, categories and argument texts
with a hash table written in numba (equal bytes checked, so exact), and the reader's own
``_merge`` and ``_split_and_finish`` make the rank tables. The script checks that every table
(values, dtypes, categories) and the metadata equal what the msgspec path gives, then times
both paths interleaved, and the stages of the numba one.

A prototype: it handles the common subset (ASCII text without escapes, integer pids and
tids, complete, instant and flow events, the usual ``args``); a piece with anything else
(B/E pairs, memory records, Kineto's "Spans" pseudo-events, string streams, ``args.rank``,
escapes, ...) is read by the msgspec path, as a real reader would, and the pieces of both
kinds are merged. Floats are exact: a mantissa under 2**53 divided by an exact power of
ten (one correctly rounded division), anything else (17-digit doubles, exponents) left to
Python's ``float()``. Its skipping of unread values does not validate JSON as strictly as
msgspec does (a real one must, or fall back).

``--check BYTES PATH...`` reads every trace under the paths in pieces of about BYTES both
ways and compares the tables (no timing): the mixed scanner/msgspec read must be identical.

numba is not a dependency of the project; run this in a scratch environment:

    python -m venv /tmp/nb && /tmp/nb/bin/pip install numba && /tmp/nb/bin/pip install -e . --no-deps
    /tmp/nb/bin/pip install msgspec numpy pandas pyarrow isal
    python benchmarks/synth.py /tmp/synth1 --ranks 1 --events 100000
    /tmp/nb/bin/python benchmarks/numba_reader.py /tmp/synth1/rank-0.pt.trace.json --fresh   # times the JIT compile
    /tmp/nb/bin/python benchmarks/numba_reader.py /tmp/synth1/rank-0.pt.trace.json           # compiled code from the cache
    /tmp/nb/bin/python benchmarks/numba_reader.py tests/data /work/shared/traces --check 65536
"""

# ruff: noqa: E402  (numba is imported after its cache folder is set)
from __future__ import annotations

import collections
import functools
import os
import shutil
import sys
import time
from typing import Any

CACHE_DIR = "/tmp/traceview-numba-cache"
if "--fresh" in sys.argv:
    shutil.rmtree(CACHE_DIR, ignore_errors=True)
os.environ.setdefault("NUMBA_CACHE_DIR", CACHE_DIR)
_C0, _W0 = time.process_time(), time.perf_counter()
import numba as nb
import numpy as np

IMPORT_CPU, IMPORT_WALL = time.process_time() - _C0, time.perf_counter() - _W0

_jit = nb.njit(cache=True, nogil=True)

FNV0 = np.uint64(14695981039346656037)
FNVP = np.uint64(1099511628211)

EV_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]
# args keys: (json key, kind, column); kinds: 0 int, 1 float, 2 grid-like triple, 3 str span, 4 raw span,
# 5 fail, 6 skip-if-M (name/labels), 7 device (int, range), 8 stream (int)
ARG_KEYS = [
    ("External id", 0, 0),
    ("correlation", 0, 1),
    ("device", 7, 2),
    ("stream", 8, 3),
    ("registers per thread", 0, 4),
    ("shared memory", 0, 5),
    ("bytes", 0, 6),
    ("In msg nelems", 0, 7),
    ("Out msg nelems", 0, 8),
    ("Group size", 0, 9),
    ("Seq", 0, 10),
    ("wait_on_stream", 0, 11),
    ("wait_on_cuda_event_record_corr_id", 0, 12),
    ("grid", 2, 13),  # ints 13..15
    ("block", 2, 16),  # ints 16..18
    ("blocks per SM", 1, 2),  # floats 2..
    ("warps per SM", 1, 3),
    ("est. achieved occupancy %", 1, 4),
    ("memory bandwidth (GB/s)", 1, 5),
    ("Collective name", 3, 2),  # spans 2.. (pairs)
    ("dtype", 3, 3),
    ("Process Group Name", 4, 4),
    ("Process Group Description", 4, 5),
    ("Input Dims", 4, 6),
    ("Input type", 4, 7),
    ("Input Strides", 4, 8),
    ("Concrete Inputs", 4, 9),
    ("Total Reserved", 5, 0),
    ("Total Allocated", 5, 0),
    ("Bytes", 5, 0),
    ("Addr", 5, 0),
    ("Device Id", 5, 0),
    ("Device Type", 5, 0),
    ("rank", 5, 0),
    ("name", 6, 0),
    ("labels", 6, 0),
]
N_INTS = 19  # 0..12 scalars, 13..15 grid, 16..18 block (+ pid, tid separately)
N_FLOATS = 6  # ts, dur, bps, wps, occ, bw
N_SPANS = 10  # cat, name, coll, dtype, pgn, pgd, dims, type, strides, concrete
TABLE = 512


def _fnv(b: bytes) -> int:
    h = 14695981039346656037
    for c in b:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def _table(keys: list[tuple[str, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    th = np.zeros(TABLE, np.uint64)
    tk = np.full(TABLE, -1, np.int64)
    tc = np.zeros(TABLE, np.int64)
    tl = np.zeros(TABLE, np.int64)
    for i, (k, kind, col) in enumerate(keys):
        h = _fnv(k.encode())
        s = h & (TABLE - 1)
        while tk[s] >= 0:
            s = (s + 1) & (TABLE - 1)
        th[s], tk[s], tc[s], tl[s] = h, kind * 100 + i, col, len(k.encode())
    return th, tk, tc, tl


EV_TABLE = _table([(k, 0, i) for i, k in enumerate(EV_KEYS)])
ARG_TABLE = _table(ARG_KEYS)
POW10 = np.array([10.0**k for k in range(23)])
PHASES = np.frombuffer(b"XBEiICbnestfPONDMVvRc()", dtype=np.uint8).copy()


@_jit
def _ws(b, i):
    while b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9:
        i += 1
    return i


@_jit
def _str(b, i):
    """(end after the closing quote, fnv hash of the content); end -1 at an escape or a control char."""
    i += 1
    h = FNV0
    while True:
        c = b[i]
        if c == 34:
            return i + 1, h
        if c == 92 or c < 32:
            return -1, h
        h = (h ^ np.uint64(c)) * FNVP
        i += 1


@_jit
def _skip(b, i):
    c = b[i]
    if c == 34:
        e, _ = _str(b, i)
        return e
    if c == 123 or c == 91:
        depth = 0
        while True:
            c = b[i]
            if c == 34:
                i, _ = _str(b, i)
                if i < 0:
                    return -1
                continue
            if c == 123 or c == 91:
                depth += 1
            elif c == 125 or c == 93:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while not (c == 44 or c == 125 or c == 93 or c == 32 or c == 10 or c == 13 or c == 9):
        i += 1
        c = b[i]
    return i


@_jit
def _num(b, i, pow10):
    """(end, is_int, int value, float value, ok) of the JSON number at i; not ok where this fast
    path cannot give the exact value (exponents, over 18 digits, a mantissa over 2**53) or the
    text is not a JSON number."""
    neg = b[i] == 45
    if neg:
        i += 1
    if b[i] == 48 and 48 <= b[i + 1] <= 57:
        return i, False, 0, 0.0, False  # a leading zero: not JSON
    m = 0
    nd = 0
    while 48 <= b[i] <= 57:
        m = m * 10 + (b[i] - 48)
        nd += 1
        i += 1
    frac = 0
    if b[i] == 46:
        i += 1
        if not 48 <= b[i] <= 57:
            return i, False, 0, 0.0, False
        while 48 <= b[i] <= 57:
            m = m * 10 + (b[i] - 48)
            nd += 1
            frac += 1
            i += 1
    if b[i] == 101 or b[i] == 69 or nd == 0 or nd > 18:
        return i, False, 0, 0.0, False
    if frac == 0:
        return i, True, -m if neg else m, 0.0, True
    if m > 9007199254740992:  # 2**53: the division below would not be exact
        return i, False, 0, 0.0, False
    f = m / pow10[frac]
    return i, False, 0, -f if neg else f, True


@_jit
def _num_end(b, i):
    """End of the JSON number at i (the full grammar), or -1."""
    if b[i] == 45:
        i += 1
    if b[i] == 48:
        i += 1
    elif 49 <= b[i] <= 57:
        while 48 <= b[i] <= 57:
            i += 1
    else:
        return -1
    if b[i] == 46:
        i += 1
        if not 48 <= b[i] <= 57:
            return -1
        while 48 <= b[i] <= 57:
            i += 1
    if b[i] == 101 or b[i] == 69:
        i += 1
        if b[i] == 43 or b[i] == 45:
            i += 1
        if not 48 <= b[i] <= 57:
            return -1
        while 48 <= b[i] <= 57:
            i += 1
    return i


@_jit
def _lookup(th, tk, tc, tl, h, n):
    s = np.int64(h & np.uint64(TABLE - 1))
    while tk[s] >= 0:
        if th[s] == h and tl[s] == n:
            return tk[s], tc[s]
        s = (s + 1) & (TABLE - 1)
    return -1, 0


@_jit
def scan(b, i, ph, hashes, spans, pidtid, ints, floats, ev_span, et, ek, ec, el, at, ak, ac, al, pow10, slow):
    """Events of the array at i: (count, 0, floats left to Python), or (-1, the byte where it gave up, 0).

    Floats the fast path cannot make exact are left as (row, column, start, end) in ``slow``
    for Python's ``float()`` (correctly rounded, as msgspec is)."""
    n = 0
    n_slow = 0
    cap = len(ph)
    while True:
        i = _ws(b, i)
        if b[i] == 93:
            return n, 0, n_slow
        if b[i] != 123 or n >= cap:
            return -1, i, 0
        ev_span[n, 0] = i
        i += 1
        ph[n] = 0
        hashes[n, 0] = FNV0  # the hash of "" (an absent cat or name reads as "", as msgspec's default)
        hashes[n, 1] = FNV0
        spans[n, :] = 0
        pidtid[n, 0] = 0
        pidtid[n, 1] = 0
        ints[n, :] = -1
        floats[n, :] = np.nan
        seen = 0
        meta_args = False
        while True:
            i = _ws(b, i)
            if b[i] == 125:
                i += 1
                break
            if b[i] != 34:
                return -1, i, 0
            ks = i + 1
            i, h = _str(b, i)
            if i < 0:
                return -1, ks, 0
            kid, col = _lookup(et, ek, ec, el, h, i - 1 - ks)
            i = _ws(b, i)
            if b[i] != 58:
                return -1, i, 0
            i = _ws(b, i + 1)
            if kid >= 0:
                bit = 1 << col
                if seen & bit:
                    return -1, i, 0  # duplicate key
                seen |= bit
            if col == 0 and kid >= 0:  # ph
                if b[i] != 34:
                    return -1, i, 0
                if b[i + 1] == 34:
                    ph[n] = 0
                    i += 2
                else:
                    if b[i + 2] != 34:
                        return -1, i, 0
                    c = b[i + 1]
                    ok = False
                    for p in PHASES:
                        if p == c:
                            ok = True
                    if not ok:
                        return -1, i, 0
                    ph[n] = c
                    i += 3
            elif (col == 1 or col == 2) and kid >= 0:  # cat, name
                if b[i] != 34:
                    return -1, i, 0
                e, hh = _str(b, i)
                if e < 0:
                    return -1, i, 0
                spans[n, 2 * (col - 1)] = i + 1
                spans[n, 2 * (col - 1) + 1] = e - 1
                hashes[n, col - 1] = hh
                i = e
            elif (col == 3 or col == 4) and kid >= 0:  # pid, tid
                if b[i] == 34:
                    return -1, i, 0
                i, isint, iv, fv, ok = _num(b, i, pow10)
                if not (ok and isint):
                    return -1, i, 0
                pidtid[n, col - 3] = iv
            elif (col == 5 or col == 6) and kid >= 0:  # ts, dur
                i0 = i
                i, isint, iv, fv, ok = _num(b, i, pow10)
                if ok:
                    floats[n, col - 5] = float(iv) if isint else fv
                else:
                    i = _num_end(b, i0)
                    if i < 0 or n_slow >= len(slow):
                        return -1, i0, 0
                    slow[n_slow, 0], slow[n_slow, 1], slow[n_slow, 2], slow[n_slow, 3] = n, col - 5, i0, i
                    n_slow += 1
            elif col == 7 and kid >= 0:  # args
                if b[i] != 123:
                    return -1, i, 0
                i += 1
                aseen = np.uint64(0)
                while True:
                    i = _ws(b, i)
                    if b[i] == 125:
                        i += 1
                        break
                    if b[i] != 34:
                        return -1, i, 0
                    ks = i + 1
                    i, h = _str(b, i)
                    if i < 0:
                        return -1, ks, 0
                    akid, acol = _lookup(at, ak, ac, al, h, i - 1 - ks)
                    i = _ws(b, i)
                    if b[i] != 58:
                        return -1, i, 0
                    i = _ws(b, i + 1)
                    if akid < 0:
                        i = _skip(b, i)
                        if i < 0:
                            return -1, ks, 0
                    else:
                        kind = akid // 100
                        abit = np.uint64(1) << np.uint64(akid % 100)
                        if aseen & abit:
                            return -1, i, 0
                        aseen |= abit
                        if kind == 0 or kind == 7 or kind == 8:
                            if b[i] == 34:
                                return -1, i, 0
                            i, isint, iv, fv, ok = _num(b, i, pow10)
                            if not (ok and isint):
                                return -1, i, 0
                            if kind == 7 and (iv < -1 or iv > 32767):
                                return -1, i, 0
                            ints[n, acol] = iv
                        elif kind == 1:
                            if b[i] == 34 or b[i] == 110:
                                return -1, i, 0
                            i0 = i
                            i, isint, iv, fv, ok = _num(b, i, pow10)
                            if ok:
                                floats[n, acol] = float(iv) if isint else fv
                            else:
                                i = _num_end(b, i0)
                                if i < 0 or n_slow >= len(slow):
                                    return -1, i0, 0
                                slow[n_slow, 0], slow[n_slow, 1], slow[n_slow, 2], slow[n_slow, 3] = n, acol, i0, i
                                n_slow += 1
                        elif kind == 2:
                            if b[i] == 91:
                                i += 1
                                for k in range(3):
                                    i = _ws(b, i)
                                    i, isint, iv, fv, ok = _num(b, i, pow10)
                                    if not (ok and isint):
                                        return -1, i, 0
                                    ints[n, acol + k] = min(iv, 2147483647)
                                    i = _ws(b, i)
                                    if k < 2:
                                        if b[i] != 44:
                                            return -1, i, 0
                                        i += 1
                                if b[i] != 93:
                                    return -1, i, 0
                                i += 1
                            elif b[i] == 34:  # a string grid (Triton launches on CPU ops): -1s
                                e, _ = _str(b, i)
                                if e < 0:
                                    return -1, i, 0
                                i = e
                            elif b[i] == 110:  # null
                                i += 4
                            else:
                                return -1, i, 0
                        elif kind == 3:
                            if b[i] == 110:
                                i += 4
                            elif b[i] == 34:
                                e, _ = _str(b, i)
                                if e < 0:
                                    return -1, i, 0
                                spans[n, 2 * acol] = i + 1
                                spans[n, 2 * acol + 1] = e - 1
                                i = e
                            else:
                                return -1, i, 0
                        elif kind == 4:
                            e = _skip(b, i)
                            if e < 0:
                                return -1, i, 0
                            spans[n, 2 * acol] = i
                            spans[n, 2 * acol + 1] = e
                            i = e
                        elif kind == 6:
                            meta_args = True
                            i = _skip(b, i)
                            if i < 0:
                                return -1, ks, 0
                        else:
                            return -1, i, 0
                    i = _ws(b, i)
                    if b[i] == 44:  # a comma, then a key (no trailing comma)
                        i = _ws(b, i + 1)
                        if b[i] != 34:
                            return -1, i, 0
                    elif b[i] != 125:
                        return -1, i, 0
            else:
                i = _skip(b, i)
                if i < 0:
                    return -1, i, 0
            i = _ws(b, i)
            if b[i] == 44:
                i = _ws(b, i + 1)
                if b[i] != 34:
                    return -1, i, 0
            elif b[i] != 125:
                return -1, i, 0
        if meta_args and ph[n] != 77:
            return -1, i, 0
        ev_span[n, 1] = i
        n += 1
        i = _ws(b, i)
        if b[i] == 44:
            i = _ws(b, i + 1)
            if b[i] != 123:
                return -1, i, 0
        elif b[i] != 93:
            return -1, i, 0


@_jit
def code_spans(b, lo, hi):
    """First-seen codes of the byte strings b[lo[i]:hi[i]] (a hash table; equal bytes checked, so
    exact), and the row of each distinct string's first occurrence."""
    n = len(lo)
    hashes = np.empty(n, np.uint64)
    for i in range(n):
        h = FNV0
        for j in range(lo[i], hi[i]):
            h = (h ^ np.uint64(b[j])) * FNVP
        hashes[i] = h
    return code_hashed(b, lo, hi, hashes)


@_jit
def code_hashed(b, lo, hi, hashes):
    """code_spans with the strings' hashes given (the scanner's)."""
    n = len(lo)
    size = 1
    while size < 2 * n + 2:
        size *= 2
    slot_row = np.full(size, -1, np.int64)
    slot_code = np.empty(size, np.int64)
    codes = np.empty(n, np.int64)
    firsts = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        h = hashes[i]
        s = np.int64(h & np.uint64(size - 1))
        while True:
            r = slot_row[s]
            if r < 0:
                slot_row[s] = i
                slot_code[s] = m
                firsts[m] = i
                codes[i] = m
                m += 1
                break
            if hi[r] - lo[r] == hi[i] - lo[i]:
                same = True
                for j in range(hi[i] - lo[i]):
                    if b[lo[r] + j] != b[lo[i] + j]:
                        same = False
                        break
                if same:
                    codes[i] = slot_code[s]
                    break
            s = (s + 1) & (size - 1)
    return codes, firsts[:m]


# ----------------------------------------------------------------------------------------
# Python: a kineto._Part from the columns (the reader's semantics, for what the scanner reads)
# ----------------------------------------------------------------------------------------
import msgspec

from jupyter_traceview.loading.readers import kineto as K
from jupyter_traceview.loading.readers import memory, op_args
from jupyter_traceview.model.collectives import normalize_collective
from jupyter_traceview.model.schema import EventKind


class Fallback(Exception):
    pass


_PH_LUT = np.full(256, -1, np.int8)
for _p, _c in K._PHASE_CODE.items():
    _PH_LUT[ord(_p) if _p else 0] = _c


def _texts(data: bytes, spans: np.ndarray, rows: np.ndarray, col: int) -> list[str]:
    return [data[s:e].decode() for s, e in spans[rows][:, 2 * col : 2 * col + 2].tolist()]


def part_from_columns(data, n, ph, hashes, spans, pidtid, ints, floats, ev_span, state, offset):
    """kineto._Part of one piece from the scanner's columns; Fallback (state untouched) where the
    piece needs what this prototype does not do."""
    phc = _PH_LUT[ph[:n]]
    if (phc < 0).any():
        raise Fallback("phase")
    counts = np.bincount(phc, minlength=len(K._PHASES))
    if counts[K._PH["B"]] + counts[K._PH["E"]]:
        raise Fallback("B/E")
    n_meta = int(counts[K._PH["M"]])
    is_kept = K._KEPT_LUT[phc]
    k = np.flatnonzero(is_kept)
    n_flow = int(counts[K._PH["s"]] + counts[K._PH["f"]] + counts[K._PH["t"]])
    is_instant = phc[k] != K._PH["X"]
    arr = np.frombuffer(data, np.uint8)
    sk = spans[k]
    hk = hashes[k]
    cat_codes, cat_first = code_hashed(arr, sk[:, 0], sk[:, 1], hk[:, 0])
    cat_values = _texts(data, sk, cat_first, 0)
    name_codes, name_first = code_hashed(arr, sk[:, 2], sk[:, 3], hk[:, 1])
    names = _texts(data, sk, name_first, 1)
    if "Trace" in cat_values:
        raise Fallback("profiler markers")
    if any(nm in memory.MEMORY_EVENT_NAMES for nm in names):
        raise Fallback("memory records")
    ts = floats[k, 0]
    dur = floats[k, 1]
    dur[is_instant & np.isnan(dur)] = 0.0
    if np.isnan(dur).any() or (dur < 0).any() or not np.isfinite(ts).all() or np.isinf(dur).any():
        raise Fallback("malformed")
    with np.errstate(invalid="ignore", over="ignore"):
        if (~(np.abs(ts * 1000.0 + state.base_time_ns) < K._MAX_NS)).any() or (dur * 1000.0 >= K._MAX_NS).any():
            raise Fallback("out of range")
    nk = len(k)
    if nk and float(np.abs(ts).max()) >= K._FLOAT_EXACT_US and not np.array_equal(ts, np.floor(ts)):
        raise Fallback("ns timestamps")
    meta_events = []
    if n_meta:  # metadata events (a few per file), by msgspec
        m_rows = np.flatnonzero(phc == K._PH["M"])
        buf = b"[" + b",".join(data[s:e] for s, e in ev_span[m_rows].tolist()) + b"]"
        try:
            meta_events = K._LIST_DECODER.decode(buf)
        except msgspec.DecodeError:
            raise Fallback("metadata events") from None
    # No Fallback after this point: the file's state takes this piece.
    state.meta_events += meta_events
    state.count("flow events", n_flow)
    state.count("other phases", n - len(k) - n_meta - n_flow)
    if nk and not state.ts_ns_precision and not np.array_equal(ts, np.floor(ts)):
        state.ts_ns_precision = True
    cat_to_code = np.array(
        [K._CODE[K._CAT_TO_KIND.get(str(c).lower(), EventKind.OTHER)] for c in cat_values], dtype=np.int8
    )
    kind = cat_to_code[cat_codes] if nk else np.empty(0, np.int8)
    pid = pidtid[k, 0].copy()
    tid = pidtid[k, 1].copy()
    ik = ints[k]
    fk = floats[k]
    correlation = ik[:, 1].copy()
    external_id = ik[:, 0].copy()
    device = np.full(nk, -1, dtype=np.int16)
    stream = np.full(nk, -1, dtype=np.int64)
    dev_rows = np.flatnonzero(np.isin(kind, K._DEVICE_CODES))
    if len(dev_rows):
        d = ik[dev_rows, 2]
        s = ik[dev_rows, 3]
        device[dev_rows] = np.where(d >= 0, d, pid[dev_rows]).astype(np.int16)
        stream[dev_rows] = np.where(s >= 0, s, tid[dev_rows])
    has_gpu_args = np.isin(kind, K._ARGS_CODES)
    sync_rows = np.flatnonzero(kind == K._CODE[EventKind.CUDA_SYNC])
    if len(sync_rows):
        waits = (ik[sync_rows, 11] >= 0) | (ik[sync_rows, 12] >= 0)
        has_gpu_args[sync_rows[waits]] = True
    gpu_rows = np.flatnonzero(has_gpu_args)
    g = ik[gpu_rows]
    gf = fk[gpu_rows]
    i32 = np.iinfo(np.int32).max
    gpu = {
        "grid_x": np.clip(g[:, 13], -1, i32).astype(np.int32),
        "grid_y": np.clip(g[:, 14], -1, i32).astype(np.int32),
        "grid_z": np.clip(g[:, 15], -1, i32).astype(np.int32),
        "block_x": np.clip(g[:, 16], -1, i32).astype(np.int32),
        "block_y": np.clip(g[:, 17], -1, i32).astype(np.int32),
        "block_z": np.clip(g[:, 18], -1, i32).astype(np.int32),
        "registers_per_thread": g[:, 4].clip(-1, 2**31 - 1).astype(np.int32),
        "shared_memory_bytes": g[:, 5].copy(),
        "blocks_per_sm": gf[:, 2].astype(np.float32),
        "warps_per_sm": gf[:, 3].astype(np.float32),
        "occupancy_pct": gf[:, 4].astype(np.float32),
        "bytes": g[:, 6].copy(),
        "bandwidth_gbps": gf[:, 5].astype(np.float32),
        "wait_on_stream": g[:, 11].copy(),
        "wait_on_record_correlation": g[:, 12].copy(),
    }
    # Collectives: rows with a "Collective name", and nccl:* user annotations.
    with_meta = np.flatnonzero(sk[:, 5] > 0)
    annot_codes = [i for i, nm in enumerate(names) if nm.startswith("nccl:")]
    annotated = (
        np.flatnonzero((kind == K._CODE[EventKind.USER_ANNOTATION]) & np.isin(name_codes, annot_codes))
        if annot_codes
        else np.empty(0, np.int64)
    )
    comm_rows = np.union1d(with_meta, annotated).astype(np.int64)
    comm: dict[str, list] = {f: [] for f in K._COMM_FIELDS}
    for i in comm_rows.tolist():
        row = sk[i]
        if row[5] > 0:
            coll = data[row[4] : row[5]].decode()
            dtype = data[row[6] : row[7]].decode() if row[7] > 0 else None
            values = (
                normalize_collective(coll),
                dtype,
                int(ik[i, 7]),
                int(ik[i, 8]),
                int(ik[i, 9]),
                K._raw_str(msgspec.Raw(data[row[8] : row[9]])),
                K._raw_str(msgspec.Raw(data[row[10] : row[11]])),
                int(ik[i, 10]),
                "kernel" if kind[i] == K._CODE[EventKind.KERNEL] else "record_param_comms",
            )
        else:
            nelems, dtype = K._first_dims(msgspec.Raw(data[row[12] : row[13]]), msgspec.Raw(data[row[14] : row[15]]))
            label = names[int(name_codes[i])].split(":", 1)[1]
            values = (normalize_collective(label), dtype, nelems, -1, -1, None, None, -1, "annotation")
        for f, v in zip(K._COMM_FIELDS, values, strict=True):
            comm[f].append(v)
    # op_args: CPU operators with Input Dims; each field's raw texts numbered first-seen.
    cpu = np.flatnonzero(kind == K._CODE[EventKind.CPU_OP])
    cs = sk[cpu]
    has_dims = cs[:, 13] > 0
    rows = cpu[has_dims]
    cs = cs[has_dims]
    codes, values = {}, {}
    for j, f in enumerate(op_args.FIELDS):
        lo, hi = cs[:, 12 + 2 * j].copy(), cs[:, 13 + 2 * j].copy()
        # code 0: not recorded (an empty span), as op_args._coded numbers b"" first
        c, firsts = code_spans(arr, np.concatenate([[0], lo]), np.concatenate([[0], hi]))
        codes[f] = (c[1:] - 1).astype(np.int32)
        values[f] = [data[lo[i - 1] : hi[i - 1]].decode("utf-8", "replace") for i in firsts[1:].tolist()]
    op = op_args.OpArgs(rows=rows.astype(np.int64), codes=codes, values=values)
    return K._Part(
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
        correlation=correlation,
        external_id=external_id,
        gpu_rows=gpu_rows,
        gpu=gpu,
        comm_rows=comm_rows,
        comm=comm,
        mem=memory.empty_memory_rows(),
        op=op,
    )


def parse_fast(path: Any, piece_bytes: int = 4 * 2**20, read: Any = None) -> Any:
    """The rank tables of a Kineto file read in pieces (``pieces.plan``): each piece by the
    scanner, or by the msgspec path where the scanner gives up. ``read``: (read_at, size) of
    the file's bytes (default: the plain file at ``path``). Sets ``STATS`` (pieces: scanner, all)."""
    from jupyter_traceview.loading import pieces

    if read is None:
        read_at, size, close = pieces.open_source(path)
    else:
        (read_at, size), close = read, (lambda: None)
    try:
        the_plan = pieces.plan(read_at, size, piece_bytes)
        header = K._header(path, the_plan.doc, None, "raise")
        state = K._FileState(base_time_ns=header.base_time_ns)
        parts = []
        offset = 0
        cap = 0
        fast = 0
        for lo, hi in the_plan.ranges:
            data = b"[" + read_at(lo, hi - lo) + b"]" + b"\0" * 64
            n = -1
            if data.isascii():
                arr = np.frombuffer(data, np.uint8)
                want = len(data) // 16 + 16  # an event is longer than 16 bytes in any profiler's output
                if want > cap:
                    cap = want
                    ph = np.empty(cap, np.uint8)
                    hashes = np.empty((cap, 2), np.uint64)
                    spans = np.empty((cap, 2 * N_SPANS), np.int64)
                    pidtid = np.empty((cap, 2), np.int64)
                    ints = np.empty((cap, N_INTS), np.int64)
                    floats = np.empty((cap, N_FLOATS), np.float64)
                    ev_span = np.empty((cap, 2), np.int64)
                    slow = np.empty((cap, 4), np.int64)
                n, at, n_slow = scan(
                    arr, 1, ph, hashes, spans, pidtid, ints, floats, ev_span, *EV_TABLE, *ARG_TABLE, POW10, slow
                )
                for row, col, lo_, hi_ in slow[:n_slow].tolist():
                    floats[row, col] = float(data[lo_:hi_])
                if n < 0:
                    WHY[f"scanner: {data[max(at - 30, 0) : at + 20]!r}"] += 1
            else:
                WHY["not ASCII"] += 1
            if n >= 0:
                try:
                    part = part_from_columns(data, n, ph, hashes, spans, pidtid, ints, floats, ev_span, state, offset)
                except Fallback as exc:
                    WHY[str(exc)] += 1
                    n = -1
            if n >= 0:
                fast += 1
            else:  # the msgspec path, as pieces.parse_in_pieces reads a piece
                buf, events = pieces._piece_events(read_at, lo, hi)
                n = len(events)
                chunk = K._Chunk(offset, events, [], ts_text=functools.partial(K._ts_list_texts, buf))
                part = K._part(chunk, state)
                del buf, events, chunk
            parts.append(part)
            offset += n
        if state.begin_end:
            pairs = K._pair_begin_end(state.begin_end, state.skipped)
            parts.append(K._part(K._Chunk(-1, pairs, []), state))
        state.raise_or_count(path, "raise")
        columns = K._merge(parts, state)
        STATS[:] = [fast, len(the_plan.ranges)]
        return K._split_and_finish(path, columns, header, None)
    finally:
        close()


STATS = [0, 0]
#: Why pieces went to the msgspec path, with counts.
WHY: collections.Counter[str] = collections.Counter()


def _same(a, b) -> list[str]:
    out = []
    if a.meta != b.meta:
        out.append("meta")
    for t in ("events", "gpu_args", "comms", "memory", "op_args"):
        x, y = getattr(a, t), getattr(b, t)
        if list(x.columns) != list(y.columns) or list(x.dtypes) != list(y.dtypes) or not x.equals(y):
            out.append(t)
        else:
            for c in x.columns:
                if hasattr(x[c], "cat") and list(x[c].cat.categories) != list(y[c].cat.categories):
                    out.append(f"{t}.{c} categories")
    return out


def _check(paths: list[Any], piece_bytes: int) -> None:
    from jupyter_traceview.loading import pieces
    from jupyter_traceview.loading.readers.files import read_bytes

    files = sorted(
        f for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.name.endswith((".json", ".json.gz"))
    )
    same = differ = skipped = fast = total = 0
    for f in files:
        try:
            data = read_bytes(f)
            read_at = pieces.bytes_source(data)
            ref = pieces.parse_in_pieces(f, read_at, pieces.plan(read_at, len(data), piece_bytes))
        except Exception as exc:  # noqa: BLE001 (a file the piece path leaves to the whole-file read)
            print(f"  skipped (the msgspec piece path refuses it: {type(exc).__name__}) {f}")
            skipped += 1
            continue
        got = parse_fast(f, piece_bytes, read=(read_at, len(data)))
        diffs = [_same(x, y) for x, y in zip(got, ref, strict=True)] if len(got) == len(ref) else [["ranks"]]
        fast, total = fast + STATS[0], total + STATS[1]
        ok = not any(diffs)
        same, differ = same + ok, differ + (not ok)
        print(f"  {'identical' if ok else 'DIFFERENT ' + str(diffs)}: {STATS[0]}/{STATS[1]} pieces by the scanner, {f}")
    print(f"{same} identical, {differ} different, {skipped} skipped; {fast}/{total} pieces by the scanner")
    for why, count in WHY.most_common(12):
        print(f"  {count:5d} pieces to the msgspec path: {why}")


def main() -> None:
    import argparse
    import functools
    import gc
    import statistics
    from pathlib import Path

    from jupyter_traceview.loading import ingest, pieces

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path, nargs="+")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument(
        "--check",
        type=int,
        metavar="BYTES",
        help="no timing: compare the tables with the msgspec path's for every trace under the paths, "
        "cut into pieces of about BYTES (small, so that small files are cut too)",
    )
    p.add_argument(
        "--fresh", action="store_true", help=f"empty numba's cache ({CACHE_DIR}) first: time the JIT compile"
    )
    a = p.parse_args()
    if a.check:
        _check(a.path, a.check)
        return
    a.path = a.path[0]
    size = a.path.stat().st_size
    print(f"import numba: {IMPORT_CPU:.3f} s CPU ({IMPORT_WALL:.3f} s wall)")
    c, w = time.process_time(), time.perf_counter()
    parse_fast(a.path)
    what = "JIT compile" if a.fresh else "compiled code from the cache"
    print(f"first call ({what}): {time.process_time() - c:.3f} s CPU ({time.perf_counter() - w:.3f} s wall)")
    # A worker forked from a process that has loaded the code (a forkserver, a fork pool's
    # parent) inherits it: its first read costs what a warm read costs, plus copy-on-write.
    child = os.fork()
    if child == 0:
        c = time.process_time()
        parse_fast(a.path)
        print(f"a forked child's first call: {time.process_time() - c:.3f} s CPU", flush=True)
        os._exit(0)
    os.waitpid(child, 0)
    gc.disable()

    def msgspec_path() -> Any:
        read_at, n, close = pieces.open_source(a.path)
        try:
            return pieces.parse_in_pieces(a.path, read_at, pieces.plan(read_at, n, ingest.PIECE_BYTES))
        finally:
            close()

    diffs = [_same(x, y) for x, y in zip(parse_fast(a.path), msgspec_path(), strict=True)]
    print("tables identical to the msgspec path:", not any(diffs), diffs if any(diffs) else "")
    spent: dict[str, list[float]] = collections.defaultdict(list)
    stage: dict[str, float] = collections.defaultdict(float)

    def timed(f: Any, label: str) -> Any:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                stage[label] += time.process_time() - t

        return run

    plain = (scan, part_from_columns, K._merge, K._split_and_finish)
    for _ in range(a.runs):
        globals()["scan"], globals()["part_from_columns"] = timed(plain[0], "scan"), timed(plain[1], "columns")
        K._merge, K._split_and_finish = timed(plain[2], "merge"), timed(plain[3], "per-rank tables")
        stage.clear()
        t = time.process_time()
        del_me = parse_fast(a.path)
        total = time.process_time() - t
        del del_me
        globals()["scan"], globals()["part_from_columns"], K._merge, K._split_and_finish = plain
        for k, v in stage.items():
            spent[k].append(v)
        spent["read, plan, free"].append(total - sum(stage.values()))
        spent["numba total"].append(total)
        t = time.process_time()
        del_me = msgspec_path()
        spent["msgspec path"].append(time.process_time() - t)
        del del_me
    print(f"CPU time, median of {a.runs} (the two paths interleaved):")
    for k in ("scan", "columns", "merge", "per-rank tables", "read, plan, free", "numba total", "msgspec path"):
        m = statistics.median(spent[k])
        print(f"  {k:18s} {m * 1e3:7.1f} ms" + (f"  {size / 1e6 / m:5.0f} MB/s" if "total" in k or "path" in k else ""))


if __name__ == "__main__":
    main()
