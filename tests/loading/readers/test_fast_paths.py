"""The Kineto reader's fast column building gives exactly what the plain per-event code gives.

The reader turns decoded events into columns with C-level passes (``map`` + ``attrgetter``,
``np.fromiter``, one decode per distinct argument text) where every value has the common
type, and falls back to per-value Python code otherwise. These tests pin both sides: the
helpers against straightforward per-value references on mixed inputs, and whole files read
in one piece against the same files read in many small chunks (every chunk then takes its
own path, and odd values land in some chunks and not others) on every real trace we have.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.loading.readers import derive, kineto, op_args
from jupyter_traceview.loading.readers.files import read_bytes, trace_format
from jupyter_traceview.loading.readers.kineto import decode, parts

DATA = Path(__file__).resolve().parents[2] / "data"
REAL_TRACES = (
    sorted(p for p in DATA.glob("**/*.json.gz") if "key_averages" not in p.name and trace_format(p) == "kineto")
    + sorted(Path(tv.sample_path()).glob("*.json.gz"))[:2]
)


def _xyz_reference(values: list[object]) -> np.ndarray:
    """Per-value: three ints per value, -1 where absent or not an int, clipped to int32."""
    rows = []
    for v in values:
        row = [x if isinstance(x, int) else -1 for x in v[:3]] if isinstance(v, list) else []
        rows.append(row + [-1] * (3 - len(row)))
    xyz = np.array(rows, dtype=np.int64).reshape(len(values), 3)
    return np.clip(xyz, -1, np.iinfo(np.int32).max).astype(np.int32)


@pytest.mark.parametrize(
    "values",
    [
        [],
        [[1, 2, 3]],
        [[128, 1, 1], [2**40, 4, 1], [-5, 0, 7]],
        [[1, 2, 3], None, "grid", [4], [5, 6, 7, 8], []],
        [None, None],
        ["[1, 2, 3]", [1, 2, 3]],
    ],
)
def test_xyz_fast_path_matches_per_value_reference(values: list[object]) -> None:
    np.testing.assert_array_equal(parts.xyz(values), _xyz_reference(values))
    assert parts.xyz(values).dtype == np.int32


def test_op_args_texts_match_per_value_reference() -> None:
    raws = [msgspec.Raw(b"[[2, 3], []]"), msgspec.Raw(b""), msgspec.Raw(b"[[2, 3], []]"), msgspec.Raw(b'["\xc3\xa9"]')]
    assert op_args._texts(raws) == ["[[2, 3], []]", None, "[[2, 3], []]", '["\u00e9"]']
    assert op_args._texts([None, msgspec.Raw(b"1")]) == [None, "1"]
    assert op_args._texts([]) == []


def test_op_args_codes_match_per_value_reference() -> None:
    raws = [msgspec.Raw(b"[1]"), msgspec.Raw(b""), msgspec.Raw(b"[2]"), msgspec.Raw(b"[1]")]
    codes, values = op_args._coded(raws)
    assert codes.tolist() == [0, -1, 1, 0] and values == ["[1]", "[2]"]
    # Nothing recorded (traces without strides): no split at all.
    codes, values = op_args._coded([msgspec.Raw(b"")] * 3)
    assert codes.tolist() == [-1, -1, -1] and values == []
    assert op_args._coded([])[0].tolist() == []
    # A value holding the separator (not JSON a decoder hands out): the per-value path.
    codes, values = op_args._coded([b"a\x00b", b"", b"c"])
    assert codes.tolist() == [0, -1, 1] and values == ["a\x00b", "c"]


@pytest.mark.parametrize(
    "values",
    [[], ["b", "a", "b", "c", "a"], [3, "3", 3, -1, "x"], ["only"]],
)
def test_first_seen_codes_match_a_dict(values: list[object]) -> None:
    codes, uniques = parts.first_seen_codes(iter(values), len(values))
    index: dict[object, int] = {}
    assert codes.tolist() == [index.setdefault(v, len(index)) for v in values]
    assert uniques == list(index)


@pytest.mark.parametrize(
    ("values", "rows"),
    [
        (["dropped", "a", "b", "dropped", "c"], [1, 2, 3, 4]),  # a dropped row's name is used later
        (["pseudo", "a", "b", "a", "c"], [1, 2, 3, 4]),  # names only dropped rows carry: go
        (["a", "pseudo", "b", "a"], [0, 2, 3]),
        (["a", "b", "a"], [0, 1, 2]),  # nothing dropped
        (["x", "y"], []),
    ],
)
def test_renumbering_the_kept_rows_keeps_first_seen_order(values: list[str], rows: list[int]) -> None:
    codes, uniques = parts.first_seen_codes(iter(values), len(values))
    kept_codes, kept_values = parts.renumber_first_seen(codes, uniques, np.array(rows, dtype=np.int64))
    expected = list(dict.fromkeys(values[i] for i in rows))
    assert kept_values == expected
    assert [kept_values[c] for c in kept_codes.tolist()] == [values[i] for i in rows]


def _tables(path: Path) -> list[tuple[dict[str, object], list[pd.DataFrame]]]:
    ranks = kineto.parse_kineto(path, read_bytes(path), bad_events="drop")
    return [
        (dataclasses.asdict(r.meta), [r.events, r.gpu_args, r.comms, r.memory, r.op_args])
        for r in sorted(ranks, key=lambda r: r.meta.rank)
    ]


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_whole_file_matches_small_chunks_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _tables(path)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1)
    monkeypatch.setattr(decode, "CHUNK_EVENTS", 61)
    chunked = _tables(path)
    assert len(whole) == len(chunked) > 0
    for (meta_a, frames_a), (meta_b, frames_b) in zip(whole, chunked, strict=True):
        assert meta_a == meta_b
        for a, b in zip(frames_a, frames_b, strict=True):
            pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_real_traces_cover_the_odd_inputs() -> None:
    # ROCm (string stream ids), Triton, CPU-only, H100 and the sample's V100 files are all here.
    names = {p.parent.name for p in REAL_TRACES}
    assert {"hta_mi250_rocm", "hta_triton", "hta_cpu_only", "h100_bert_small", "dlrm_8rank_v100"} <= names


@pytest.mark.parametrize("seed", range(6))
def test_start_order_is_lexsort_by_start_then_longer_first(seed: int) -> None:
    from jupyter_traceview.loading.readers import derive

    rng = np.random.default_rng(seed)
    n = [0, 1, 2, 50, 500, 5000][seed]
    ts = rng.integers(0, max(n // 3, 1), n).astype(np.int64)  # many shared starts
    dur = rng.integers(0, 4, n).astype(np.int64)  # many equal durations too (stability counts)
    if seed == 5:
        ts = np.sort(ts)  # nearly sorted, as traces are
    np.testing.assert_array_equal(derive.start_order(ts, dur), np.lexsort((-dur, ts)))


def _compact_reference(text: str) -> str:
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))
    except ValueError:
        return text


ODD_JSON_TEXTS = [
    "[[4096, 4096], [4096]]",
    "[]",
    " [ ] ",
    "[[], [1], [-0], [007]]",
    "[99999999999999999999999, -9223372036854775809]",
    "[1.5, 2]",
    "[1e5]",
    "[1E5, -0.0]",
    "[NaN, Infinity]",
    '["c10::BFloat16", "", "Scalar"]',
    '["a\\nb", "\\u00e9", "\\/", "\\b\\f"]',
    '["\u00e9\u4e2d"]',
    '{"a": [1], "a": 2, "b": {"c": null}}',
    "[true, false, null]",
    "not json",
    "[1, 2",
    "[1] [2]",
    '["tab\there"]',
    "",
]


@pytest.mark.parametrize("text", ODD_JSON_TEXTS)
def test_compact_text_is_what_json_dumps_gives(text: str) -> None:
    assert op_args._compact_text(text) == _compact_reference(text)


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_compact_text_on_every_recorded_argument_of_the_real_traces(path: Path) -> None:
    texts: set[str] = set()
    events = msgspec.json.decode(read_bytes(path)).get("traceEvents", [])
    for e in events:
        args = e.get("args") if isinstance(e, dict) else None
        if isinstance(args, dict):
            for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
                if key in args:
                    texts.add(msgspec.json.encode(args[key]).decode())
                    texts.add(json.dumps(args[key], ensure_ascii=False))  # as Kineto writes them
    for text in texts:
        assert op_args._compact_text(text) == _compact_reference(text), text


@given(
    st.lists(st.integers(-3, 300), max_size=60),
    st.lists(st.integers(-3, 300), max_size=8),
    st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.float64]),
)
def test_in_codes_is_isin(values: list[int], codes: list[int], dtype: type) -> None:
    array = np.array([v for v in values if np.can_cast(np.min_scalar_type(v), dtype)], dtype=dtype)
    got = derive.in_codes(array, codes)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, np.isin(array, codes))
    np.testing.assert_array_equal(derive.in_codes(array, np.array(codes, dtype=np.int64)), np.isin(array, codes))


def _nesting_lane_by_lane(
    ts: np.ndarray, dur: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """derive.nesting's reference: each lane alone (its rows in time order)."""
    depth = np.zeros(len(ts), dtype=np.int64)
    parent = np.full(len(ts), -1, dtype=np.int64)
    for key in set(zip(a.tolist(), b.tolist(), c.tolist(), strict=True)):
        rows = np.flatnonzero((a == key[0]) & (b == key[1]) & (c == key[2]))
        d, p = derive._lane_nesting(ts[rows], dur[rows])
        depth[rows] = d
        parent[rows[p >= 0]] = rows[p[p >= 0]]
    return np.minimum(depth, np.iinfo(np.int16).max).astype(np.int16), parent


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(0, 2), st.integers(0, 2), st.booleans()),
        max_size=60,
    ),
    st.sampled_from([0, 1_700_000_000_000_000_000]),
    st.sampled_from([0, -(2**63), 2**62]),
    st.booleans(),
)
def test_nesting_of_all_lanes_at_once_is_lane_by_lane(
    events: list[tuple[int, int, int, int, bool]], base: int, lane_base: int, in_c: bool
) -> None:
    """Both ways: the C walk (``_kscan.nest``: lanes by a hash table, a heap of open ends) and
    numpy's (every lane at once, or one by one)."""
    if in_c and derive._kscan is None:
        pytest.skip("the C scanner is not built or turned off")
    ts = np.array([e[0] for e in events], dtype=np.int64) + base
    dur = np.array([e[1] for e in events], dtype=np.int64)
    order = derive.start_order(ts, dur)
    ts, dur = ts[order], dur[order]
    a, b = np.array([e[2] for e in events], np.int64)[order], np.array([e[3] for e in events], np.int64)[order]
    a += lane_base
    c = np.array([e[4] for e in events], bool)[order]
    with pytest.MonkeyPatch.context() as mp:
        if not in_c:
            mp.setattr(derive, "_kscan", None)
        depth, parent = derive.nesting(ts, dur, a, b, c)
    want_depth, want_parent = _nesting_lane_by_lane(ts, dur, a, b, c)
    np.testing.assert_array_equal(depth, want_depth)
    np.testing.assert_array_equal(parent, want_parent)
    assert depth.dtype == np.int16


def test_the_compact_text_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(op_args, "_memo", {})
    monkeypatch.setattr(op_args, "_MEMO_SIZE", 8)
    texts = [f"[[{i}, {i + 1}], []]" for i in range(20)]
    for _ in range(2):  # computed, then (some) from the memo: the same either way
        assert [op_args._compact_text(t) for t in texts] == [_compact_reference(t) for t in texts]
    assert 0 < len(op_args._memo) <= 8
    long = "[" + ", ".join(["1"] * 1000) + "]"
    assert op_args._compact_text(long) == _compact_reference(long)
    assert long not in op_args._memo


@pytest.mark.skipif(derive._kscan is None, reason="the C scanner is not built or turned off")
def test_nesting_in_c_of_many_lanes_and_deep_stacks() -> None:
    """Thousands of lanes, a stack thousands deep, intervals sharing starts and ends: equal to
    numpy's lane by lane; buffers of different lengths are refused."""
    rng = np.random.default_rng(7)
    n = 6000
    ts = np.concatenate([np.arange(3000, dtype=np.int64), rng.integers(0, 5000, n - 3000)])
    dur = np.concatenate([np.arange(3000, 0, -1, dtype=np.int64) * 2, rng.integers(0, 50, n - 3000)])
    order = derive.start_order(ts, dur)
    ts, dur = ts[order], dur[order]
    a = np.where(np.arange(n) % 2 == 0, 0, rng.integers(0, 2000, n)).astype(np.int64)
    b, c = np.zeros(n, np.int64), np.zeros(n, bool)
    got = derive.nesting(ts, dur, a, b, c)
    want = _nesting_lane_by_lane(ts, dur, a, b, c)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert int(got[0].max()) > 1000
    with pytest.raises(ValueError, match="seven int64 buffers"):
        derive._kscan.nest(ts, dur, a, b, c[:1].astype(np.int64), np.empty(n, np.int64), np.empty(n, np.int64))


@given(st.text(alphabet="ProfilerStep#0123456789\u0663\u00b2x- ", max_size=20))
def test_step_numbers_and_ids_without_a_pattern_are_the_patterns(text: str) -> None:
    """``step_number`` and ``as_int`` look for digits with string methods (no pattern compiled
    on a process's first load) and find what ``ProfilerStep#(\\d+)`` and ``-?\\d+`` find
    (``\\d``: Unicode decimal digits, as ``isdecimal``; a superscript two is not one)."""
    import re

    from jupyter_traceview.loading.readers.kineto.tables import step_number

    for name in (text, "ProfilerStep#" + text):
        m = re.match(r"ProfilerStep#(\d+)", name)
        assert step_number(name) == (int(m.group(1)) if m else -1), name
    labels: dict[str, int] = {}
    m = re.search(r"-?\d+", text.strip())
    got = parts.as_int(text, labels)
    try:
        number = int(text.strip(), 0)
    except ValueError:
        number = None
    if number is None and m is not None and len(m.group(0)) < 18:
        assert got == int(m.group(0))
    elif number is None:
        assert got == labels[text.strip()] <= -2
