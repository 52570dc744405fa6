"""The native path (``readers/kineto/native.py`` over the C scanner ``_kscan.c``) gives exactly the
msgspec path's tables and errors, piece by piece, and gives up on what it does not handle.

Every comparison reads the same bytes twice: with the scanner (pieces it gives up on are read
by msgspec and merged) and with msgspec only (the scanner switched off); tables, dtypes,
categories and metadata must be identical, or both reads must fail with the same error.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.files import read_bytes, trace_format
from jupyter_traceview.loading.readers.kineto import events as kineto_events
from jupyter_traceview.loading.readers.kineto import native, parts, pieces
from jupyter_traceview.model.rank_data import RankData
from tests import kineto_builder as kb

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
#: The shared collection of real traces: next to the clone in CI, or this machine's copy.
SHARED = next((p for p in (ROOT.parent / "shared" / "traces", Path("/work/shared/traces")) if p.is_dir()), None)
OFF = os.environ.get("TRACEVIEW_NATIVE") == "0"
needs_native = pytest.mark.skipif(OFF, reason="TRACEVIEW_NATIVE=0: the msgspec path only")


def _traces(root: Path) -> list[Path]:
    found = (p for p in root.rglob("*.json*") if p.name.endswith((".json", ".json.gz")))
    return sorted(p for p in found if trace_format(p) == "kineto")  # (JAX profiles: tests/loading/readers/test_jax.py)


LOCAL = _traces(DATA) + sorted(Path(tv.sample_path()).glob("*.json.gz"))
#: Traces of the common kind (CUDA or CPU, no ROCm string streams, no B/E pairs): the
#: scanner must read most of their pieces itself.
COMMON = {
    "train.pt.trace.json.gz",
    "gaunernst_bert-small-uncased__1016001.json.gz",
    "rank-0.json.gz",
    "rank-1.json.gz",
    "alexnet_trace.json.gz",
    "worker0_step_12.1694128201545.pt.trace.json.gz",
}


@contextmanager
def _msgspec_only() -> Iterator[None]:
    saved = native.SCANNER
    native.SCANNER = None
    try:
        yield
    finally:
        native.SCANNER = saved


@contextmanager
def _counting() -> Iterator[list[int]]:
    """[parts read by the scanner, all parts] while the block runs (a piece is one part, or
    several where the scanner gave up on some events and msgspec read them)."""
    counts = [0, 0]
    original_native, original_decoded = native.part, pieces.decoded_columns

    def by_native(*args: Any, **kwargs: Any) -> Any:
        got = original_native(*args, **kwargs)
        counts[0] += got is not None
        counts[1] += got is not None
        return got

    def by_msgspec(*args: Any, **kwargs: Any) -> Any:
        counts[1] += 1
        return original_decoded(*args, **kwargs)

    native.part = by_native  # type: ignore[assignment]
    pieces.decoded_columns = by_msgspec  # type: ignore[assignment]
    try:
        yield counts
    finally:
        native.part = original_native  # type: ignore[assignment]
        pieces.decoded_columns = original_decoded  # type: ignore[assignment]


def _outcome(read: Callable[[], list[RankData]]) -> tuple[Any, ...]:
    try:
        return ("tables", read())
    except Exception as exc:  # noqa: BLE001 (the outcome compared is the error itself)
        return ("error", type(exc).__name__, str(exc))


def _assert_same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    if a[0] == "error" or b[0] == "error":
        assert a == b
        return
    x_ranks, y_ranks = a[1], b[1]
    assert len(x_ranks) == len(y_ranks)
    for x, y in zip(x_ranks, y_ranks, strict=True):
        assert dataclasses.asdict(x.meta) == dataclasses.asdict(y.meta)
        for name in ("events", "gpu_args", "comms", "memory", "op_args"):
            fx, fy = getattr(x, name), getattr(y, name)
            pd.testing.assert_frame_equal(fx, fy, check_exact=True, obj=name)
            for column in fx.columns:
                if isinstance(fx[column].dtype, pd.CategoricalDtype):
                    assert list(fx[column].cat.categories) == list(fy[column].cat.categories), (name, column)


def _in_pieces(path: Path, data: bytes, piece_bytes: int) -> list[RankData]:
    read_at = kineto.bytes_source(data)
    return pieces.parse_in_pieces(path, read_at, kineto.plan(read_at, len(data), piece_bytes))


def _load(path: Path, data: bytes, piece_bytes: int) -> list[RankData]:
    """What the reader gives for the bytes (ingest's order: in pieces, else whole)."""
    try:
        return _in_pieces(path, data, piece_bytes)
    except kineto.SplitFailed:
        return kineto.parse_kineto(path, data)


def _both(path: Path, data: bytes, piece_bytes: int, read: Callable[..., list[RankData]] = _load) -> list[int]:
    """Read both ways, assert the same outcome; return the scanner's piece counts."""
    with _counting() as counts:
        got = _outcome(lambda: read(path, data, piece_bytes))
    with _msgspec_only():
        want = _outcome(lambda: read(path, data, piece_bytes))
    _assert_same(got, want)
    return counts


# --------------------------------------------------------------------------------------
# The build and the scanner's contract
# --------------------------------------------------------------------------------------
def test_the_native_path_is_on_unless_turned_off() -> None:
    """CI must not skip the native path silently: the module is built wherever tests run."""
    if OFF:
        assert not native.AVAILABLE
    else:
        assert native.AVAILABLE, (
            "jupyter_traceview.loading.readers._kscan is not built: `pip install -e .` or "
            "`python hatch_build.py` compiles it (TRACEVIEW_NATIVE=0 runs the tests without it)"
        )


@needs_native
def test_the_scanner_reads_the_keys_the_reader_decodes() -> None:
    """A field added to the reader's structs must be added to the scanner (else it would skip it)."""
    assert native.SCANNER is not None
    assert set(native.SCANNER.EVENT_KEYS) == set(kineto_events.Event.__struct_encode_fields__)
    assert set(native.SCANNER.ARG_KEYS) == set(kineto_events.Args.__struct_encode_fields__)


@needs_native
def test_the_scanner_refuses_buffers_too_small_or_read_only() -> None:
    k = native.SCANNER
    s = native.Scratch()
    s.ensure(8)
    with pytest.raises(ValueError, match="spans"):
        k.scan(b"[]", s.ph, s.spans[:1], s.pidtid, s.ints, s.floats, s.ev_span, s.slow, s.codes, s.firsts)
    with pytest.raises(ValueError, match="firsts"):
        k.scan(b"[]", s.ph, s.spans, s.pidtid, s.ints, s.floats, s.ev_span, s.slow, s.codes, s.firsts[:1])
    with pytest.raises(ValueError, match="aligned"):
        k.scan(
            b"[]",
            s.ph,
            s.spans,
            np.zeros(8 * 16 + 1, np.uint8)[1:],
            s.ints,
            s.floats,
            s.ev_span,
            s.slow,
            s.codes,
            s.firsts,
        )
    with pytest.raises((TypeError, BufferError)):
        k.scan(b"[]", s.ph, b"x" * 10_000, s.pidtid, s.ints, s.floats, s.ev_span, s.slow, s.codes, s.firsts)


@needs_native
def test_the_names_hash_is_keyed_once_per_process() -> None:
    """The scanner's names' hash (SipHash-1-3) took a random key from os.urandom when the
    module was found (issue 37): a second key is refused, and a key is 16 bytes."""
    with pytest.raises(RuntimeError, match="once per process"):
        native.SCANNER.seed(b"k" * 16)
    with pytest.raises(ValueError, match="16 bytes"):
        native.SCANNER.seed(b"short")


@needs_native
@pytest.mark.parametrize("digits", [19, 4096, 4097, 100_000])
@pytest.mark.parametrize("field", ["ts", "dur", "pid", "External id"])
def test_very_long_numbers_read_as_msgspec_reads_them(digits: int, field: str) -> None:
    """Numbers with more digits than the scanner reads (``MAX_NUMBER_DIGITS``; its counters are
    64-bit, so a 2**31-digit one cannot wrap them): the scanner gives up on them and the outcome
    (tables or the same error) is msgspec's, whole and in pieces (issue 37)."""
    long = "1" + "0" * (digits - 1)
    events = [kb.step(1, 0, 1000), *[kb.cpu_op("aten::mm", 10 + i, 5) for i in range(50)]]
    text = json.dumps(kb.doc(events))
    target = '"External id": 1' if field == "External id" else f'"{field}": 10'
    assert target in text
    data = text.replace(target, target.replace("1" if field == "External id" else "10", long), 1).encode()
    for piece_bytes in (1 << 10, 1 << 22):
        _both(Path("long.json"), data, piece_bytes)


# --------------------------------------------------------------------------------------
# (a) Every real trace, at several piece sizes: identical tables
# --------------------------------------------------------------------------------------
@needs_native
@pytest.mark.parametrize("path", LOCAL, ids=lambda p: p.parent.name + "/" + p.name[:32])
@pytest.mark.parametrize("piece_bytes", [1 << 14, 1 << 16, 1 << 22])
def test_real_traces_read_identically(path: Path, piece_bytes: int) -> None:
    data = read_bytes(path)
    counts = _both(path, data, piece_bytes, read=_in_pieces if _splits(path, data) else _load)
    if path.name in COMMON and piece_bytes < len(data) // 4:
        assert counts[1] > 1
        assert counts[0] >= 0.8 * counts[1], f"the scanner read only {counts[0]} of {counts[1]} pieces"


def _splits(path: Path, data: bytes) -> bool:
    try:
        with _msgspec_only():
            _in_pieces(path, data, 1 << 16)
    except kineto.SplitFailed:
        return False
    return True


@needs_native
@pytest.mark.skipif(SHARED is None, reason="the shared trace collection (../shared/traces) is not here")
def test_the_shared_traces_read_identically() -> None:
    assert SHARED is not None
    total = [0, 0]
    for path in _traces(SHARED):
        data = read_bytes(path)
        for piece_bytes in (1 << 14, 1 << 20):
            counts = _both(path, data, piece_bytes)
            total = [total[0] + counts[0], total[1] + counts[1]]
    assert total[0] >= 0.8 * total[1], f"the scanner read only {total[0]} of {total[1]} pieces"


# --------------------------------------------------------------------------------------
# (b) Mutated real traces: the same tables, or the same error
# --------------------------------------------------------------------------------------
def _seed(path: Path, n_bytes: int) -> bytes:
    """The first events of a real trace (whole events, a valid document)."""
    data = read_bytes(path)
    read_at = kineto.bytes_source(data)
    the_plan = kineto.plan(read_at, len(data), n_bytes)
    lo, hi = the_plan.ranges[0]
    return data[:lo] + data[lo:hi] + data[the_plan.ranges[-1][1] :]


SEEDS = [
    _seed(DATA / "h200_cuda" / "train" / "train.pt.trace.json.gz", 24_000),
    _seed(DATA / "hta_dlrm_2of128_ranks" / "rank-0.json.gz", 24_000),
    _seed(DATA / "cpu_memory" / "mlp_train" / "rank-0.pt.trace.json.gz", 24_000),
]
TOKENS = [
    b"0",
    b"-",
    b"-0",
    b"01",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"1.",
    b".5",
    b"9223372036854775808",
    b"12345678901234567890",
    b"0.30000000000000004",
    b"1E5",
    b"NaN",
    b"Infinity",
    b"null",
    b"nul",
    b"true",
    b"tru",
    b"false",
    b'"',
    b"\\",
    b'"\\ud800"',
    b'"\\u00e9"',
    b'"\\x"',
    b"\\n",
    b"\x00",
    b"\x1f",
    b"\x7f",
    b"\xc3\xa9",
    b"\xff",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b" ",
    b"\t",
    b"\x0c",
    b'"ph": "B"',
    b'"ph": "E"',
    b'"pid": "Spans"',
    b'"rank": 3',
    b'"ts": 1',
    b'"dur": -1',
    b"[" * 80,
]


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(["replace", "insert", "delete", "truncate", "byte"]))
        token = draw(st.sampled_from(TOKENS))
        if how == "replace":
            data[at : at + len(token)] = token
        elif how == "insert":
            data[at:at] = token
        elif how == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif how == "truncate":
            del data[at:]
        else:
            data[at] = draw(st.integers(0, 255))
        if not data:
            data = bytearray(b"{}")
    return bytes(data)


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=_mutated(), piece_bytes=st.sampled_from([1 << 11, 1 << 13]))
def test_mutated_traces_read_identically(data: bytes, piece_bytes: int) -> None:
    _both(Path("mutated.json"), data, piece_bytes)


# --------------------------------------------------------------------------------------
# (c) Hand-written malformed and edge-case inputs
# --------------------------------------------------------------------------------------
def _doc(events: list[bytes], n_plain: int = 40) -> bytes:
    """A trace whose event array holds plain kernels and CPU ops, then ``events``."""
    plain = []
    for i in range(n_plain):
        plain.append(
            b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": %d.5, "dur": 3.25, '
            b'"args": {"External id": %d, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}}'
            % (100 + i * 10, i)
        )
    return b'{"schemaVersion": 1, "traceEvents": [\n' + b",\n".join(plain + events) + b'\n], "traceName": "t"}'


def _event(**fields: bytes) -> bytes:
    base = {
        b"ph": b'"X"',
        b"cat": b'"kernel"',
        b"name": b'"k"',
        b"pid": b"0",
        b"tid": b"7",
        b"ts": b"900.0",
        b"dur": b"2",
    }
    base.update({k.encode(): v for k, v in fields.items()})
    return b"{" + b", ".join(b'"%s": %s' % kv for kv in base.items() if kv[1] != b"") + b"}"


EDGE_VALUES = {
    "ts": [
        b"-0",
        b"-0.0",
        b"1e-400",
        b"1e400",
        b"-1e400",
        b"1E2",
        b"123456789012345678901",
        b"01",
        b"1.",
        b"NaN",
        b'"12"',
        b"null",
        b"true",
        b"0.1e1",
        b"2.5e-3",
        b"9007199254740993",
        b"0.30000000000000004",
        b"4.9e-324",
    ],
    "dur": [b"-1", b"-0", b"0", b"1e308", b"1.7976931348623159e308", b"null", b'"3"', b"[]"],
    "pid": [
        b"1.0",
        b"-5",
        b'"Spans"',
        b'"7"',
        b"9223372036854775807",
        b"9223372036854775808",
        b"123456789012345678",
        b"true",
        b"null",
        b"{}",
    ],
    "ph": [b'"B"', b'"E"', b'""', b'"XX"', b'"Z"', b'"\\u0058"', b"1", b'"i"', b'"M"'],
    "cat": [b'"Trace"', b'"gpu_memcpy"', b'"a\\"b"', b'"\\u00e9"', b'"\xc3\xa9"', b'"\x01"', b"5", b"null", b'""'],
    "name": [b'"\\ud800"', b'"\\ud83d\\ude00"', b'"nccl:all_reduce"', b'"[memory]"', b'"a\tb"', b'"a\\tb"'],
    "args": [
        b'{"correlation": 1, "correlation": 2}',
        b'{"device": 40000}',
        b'{"device": -2}',
        b'{"stream": "7"}',
        b'{"stream": "0x0"}',  # (ROCm's runtime events; here on a kernel, whose stream it is)
        b'{"stream": "stream 12"}',
        b'{"stream": "default"}',
        b'{"stream": ""}',
        b'{"stream": "a\\"b"}',
        b'{"stream": null}',
        b'{"stream": 3, "stream": "0x1"}',
        b'{"grid": [1, 2]}',
        b'{"grid": [1, 2, 3, 4]}',
        b'{"grid": [1, 2, 3000000000]}',
        b'{"grid": [-7, 2, 3]}',
        b'{"grid": "(1,1,1)"}',
        b'{"grid": [1.5, 2, 3]}',
        b'{"External id": 9223372036854775808}',
        b'{"External id": "5"}',
        b'{"rank": 3}',
        b'{"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 10, "Group size": 2}',
        b'{"Collective name": null}',
        b'{"Process Group Name": {"a": [1, {"b": null}]}}',
        b'{"Input Dims": [[1,]]}',
        b'{"Input Dims": [[1]] ]}',
        b'{"deep": ' + b"[" * 70 + b"]" * 70 + b"}",
        b'{"deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"x": tru}',
        b'{"x": nul}',
        b'{"x": "\\q"}',
        b'{"x": "\\u12G4"}',
        b'{"name": 5}',
        b'{"Bytes": 1024, "Addr": 140000000000, "Device Id": 0, "Device Type": 1, "Total Allocated": 5}',
        b'{"Device Type": "cuda"}',
        b'{"blocks per SM": 1e400}',
        b'{"est. achieved occupancy %": 100}',
        b"null",
        b"[]",
        b"{}",
        b"{,}",
        b'{"a" 1}',
        b'{"a": 1,}',
    ],
}
CASES = [(field, value) for field, values in EDGE_VALUES.items() for value in values]


@needs_native
@pytest.mark.parametrize(("field", "value"), CASES, ids=[f"{f}={v[:24]!r}" for f, v in CASES])
def test_edge_values_read_identically(field: str, value: bytes) -> None:
    name = b'"[memory]"' if b"Bytes" in value or b"Device Type" in value else b'"k"'
    data = _doc([_event(**{field: value, **({"name": name} if field == "args" else {})})])
    _both(Path("edge.json"), data, 1 << 10)


@needs_native
@pytest.mark.parametrize(
    "text",
    [
        b"[{}]]",
        b"[{}] x",
        b"[{},]",
        b"[,{}]",
        b"[{}{}]",
        b'[{"a":1}',
        b'[{"a":"',
        b"[",
        b"",
        b'[{"ts": 1e',
        b'[{"ts": -}]',
        b'[{"x": ' + b'{"a":' * 100 + b"1" + b"}" * 100 + b"}]",
    ],
)
def test_the_scanner_gives_up_on_invalid_json(text: bytes) -> None:
    assert native.piece_part(text, parts.FileState(), 0) is None


@needs_native
def test_the_scanner_reads_valid_edge_cases_itself() -> None:
    """Not only giving up: these pieces are read by the scanner, with msgspec's values."""
    ok = [
        _event(ts=b"-0"),
        _event(ts=b"1e-400", cat=b'"cpu_op"'),
        _event(ts=b"0.30000000000000004"),
        _event(ts=b"12345.678e-2"),
        _event(dur=b"90071992547409.93"),
        _event(
            args=b'{"est. achieved occupancy %": 9007199254740993, "memory bandwidth (GB/s)": 12345678901.2345678901e-3}'
        ),
        _event(args=b'{"x": "a\\"b\\u00e9\\n", "y": [true, false, null, -0, 1.5e+3, {}], "grid": [1, 2, 3000000000]}'),
        _event(args=b'{"name": null, "labels": "x"}'),
    ]
    data = _doc(ok, n_plain=2)
    counts = _both(Path("edge.json"), data, 1 << 20, read=_in_pieces)
    assert counts == [1, 1]


@needs_native
@pytest.mark.parametrize(
    "odd",
    [
        _event(pid=b'"a\\"b"'),  # an escape in a string pid (read by the scanner without one)
        _event(cat=b'"a\\"b"'),  # an escape in a category
        _event(args=b'{"rank": 1}'),
        _event(ph=b'"B"'),  # read by the scanner, but not its part: msgspec reads the piece
        _event(ts=b"1e400"),  # refused by msgspec: the whole-file read reports it
    ],
)
def test_the_scanner_resumes_after_events_it_gives_up_on(odd: bytes) -> None:
    """In a big piece, msgspec reads from the odd event to the next boundary 64 KB on, the
    scanner the events before and after: identical tables."""
    events = [_event(ts=b"%d" % (1000 + i), name=b'"k%d"' % (i % 7)) for i in range(4000)]
    # Events are about 94 bytes: the scanner reads over 64 KB before each odd event, and
    # msgspec the 64 KB after it.
    events.insert(1000, odd)
    events.insert(2500, odd)
    data = _doc(events)
    counts = _both(Path("resume.json"), data, 1 << 22)
    if odd.count(b'"B"') == 0 and b"1e400" not in odd:
        assert counts == [3, 5]  # scanner, msgspec, scanner, msgspec, scanner


@needs_native
@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    mantissa=st.integers(0, 10**25),
    frac=st.integers(0, 25),
    exp=st.one_of(st.none(), st.integers(-340, 320)),
    neg=st.booleans(),
)
def test_numbers_convert_as_msgspec_converts_them(mantissa: int, frac: int, exp: int | None, neg: bool) -> None:
    digits = str(mantissa).rjust(frac + 1, "0")
    text = ("-" if neg else "") + (digits[: len(digits) - frac] + ("." + digits[len(digits) - frac :] if frac else ""))
    if exp is not None:
        text += f"e{exp}"
    events = [
        _event(ts=b"100", dur=text.encode(), cat=b'"cpu_op"'),
        _event(ts=text.encode(), cat=b'"cpu_op"', dur=b"1"),
    ]
    _both(Path("numbers.json"), _doc(events, n_plain=1), 1 << 20, read=_load)


@needs_native
def test_random_bytes_never_crash_the_scanner() -> None:
    rng = np.random.default_rng(17)
    alphabet = np.frombuffer(b'{}[]",:0123456789-.eE \ntrufalsn\\u"phcatsidur', np.uint8)
    s = native.Scratch()
    for _ in range(3000):
        n = int(rng.integers(0, 200))
        body = alphabet[rng.integers(0, len(alphabet), n)].tobytes()
        text = b"[" + body + b"]" if rng.random() < 0.7 else body
        s.ensure(len(text) // 16 + 16)
        ok, n_events, at = native.scan(text, s)
        assert 0 <= n_events <= len(text) and 0 <= at <= len(text)
        if ok:
            assert n_events == len(kineto_events.LIST_DECODER.decode(text))  # valid JSON, as msgspec says


@needs_native
def test_a_built_trace_with_every_field_reads_identically(tmp_path: Path) -> None:
    """The test-suite's trace builder's events (steps, launches, collectives) both ways."""
    doc = kb.doc([kb.step(1, 0, 1000), *kb.launch("gemm", 10, 20, 300, corr=1)], rank=0, world_size=2)
    path = tmp_path / "rank-0.json"
    kb.write(path, doc)
    data = path.read_bytes() if not path.name.endswith(".gz") else gzip.decompress(path.read_bytes())
    _both(path, data, 1 << 20)


@needs_native
def test_many_distinct_names_and_arguments_in_one_piece() -> None:
    """The scanner's tables grow (thousands of distinct names, categories, argument texts)."""
    events = [
        _event(
            name=b'"n%d"' % (i % 3001),
            cat=b'"cpu_op"' if i % 2 else b'"c%d"' % (i % 1500),
            args=b'{"Input Dims": [[%d]], "Input type": ["t%d"], "Concrete Inputs": ["%d"]}' % (i % 2500, i % 7, i),
        )
        for i in range(6000)
    ]
    counts = _both(Path("many.json"), _doc(events), 1 << 22, read=_in_pieces)
    assert counts == [1, 1]


@needs_native
def test_a_piece_with_more_events_than_one_scan_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner stops at its row limit; msgspec reads the next 64 KB and the scanner resumes."""
    monkeypatch.setattr(native, "MAX_SCAN_ROWS", 1000)
    events = [_event(ts=b"%d" % (1000 + i), name=b'"k%d"' % (i % 11)) for i in range(5000)]
    counts = _both(Path("rows.json"), _doc(events), 1 << 22, read=_in_pieces)
    assert counts[0] >= 2 and counts[1] > counts[0]


@needs_native
def test_small_events_make_the_scanner_take_more_rows() -> None:
    """Rows are sized for events of a few hundred bytes; a piece of small ones is scanned again
    with more rows, still by the scanner alone."""
    events = [b'{"ph": "i", "s": "t", "name": "m", "pid": 1, "tid": 2, "ts": %d}' % i for i in range(40_000)]
    counts = _both(Path("small.json"), _doc(events, n_plain=0), 1 << 22, read=_in_pieces)
    assert counts == [1, 1]


# --------------------------------------------------------------------------------------
# (d) A one-piece file scanned where it lies in memory (start and end, no copy)
# --------------------------------------------------------------------------------------
@needs_native
def test_the_scanner_reads_a_range_of_a_buffer_as_it_reads_a_copy_of_it() -> None:
    events = b'[{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 2}, {"ph": "i", "name": "m", "pid": 1, "tid": 1, "ts": 9}]'
    head, tail = b'{"traceEvents": ', b', "traceName": "x"}'
    whole = head + events + tail
    a, b = native.Scratch(), native.Scratch()
    ok, n, _ = native.scan(events, a)
    ok2, n2, _ = native.scan(whole, b, len(head), len(head) + len(events))
    assert (ok, n) == (ok2, n2) == (True, 2)
    # Offsets count from the buffer's start: the copy's, shifted by where the range starts.
    assert (b.ev_span[:2] - len(head)).tolist() == a.ev_span[:2].tolist()
    assert (b.spans[:2] - np.where(b.spans[:2] > 0, len(head), 0)).tolist() == a.spans[:2].tolist()
    assert a.ints[:2].tolist() == b.ints[:2].tolist() and a.codes[:2].tolist() == b.codes[:2].tolist()
    # Whatever follows the range is not read; a range that is not "[" events "]" is refused.
    assert not native.scan(whole, b, len(head), len(head) + len(events) - 1)[0]
    assert not native.scan(whole, b, len(head) - 2, len(head) + len(events))[0]  # (from the colon)
    k = native.SCANNER
    for start, end in ((-1, 5), (6, 5), (0, len(whole) + 1)):
        with pytest.raises(ValueError, match="not a range"):
            k.scan(whole, b.ph, b.spans, b.pidtid, b.ints, b.floats, b.ev_span, b.slow, b.codes, b.firsts, start, end)


@needs_native
@pytest.mark.parametrize("at", [0, 30, 1500, 2999])
@pytest.mark.parametrize(("field", "odd"), [("name", b'"n\\u00e9"'), ("args", b'{"rank": 1}')])
def test_a_one_piece_file_scanned_in_place_reads_as_msgspec_reads_it(at: int, field: str, odd: bytes) -> None:
    """An event the scanner gives up on near the start, in the middle (msgspec reads the next
    64 KB, the scanner the rest) or at the end of a one-piece file read from memory."""
    data = _doc([_event(ts=b"%d" % (900 + i)) for i in range(at)] + [_event(**{field: odd})], n_plain=3000 - at)
    assert len(data) < 4 << 20
    # Read in pieces only (no fallback to the whole-file read that could hide a wrong piece).
    counts = _both(Path("one_piece.json"), data, 8 << 20, read=_in_pieces)
    assert counts[1] >= 2 and counts[0] >= (1 if at else 0)


@needs_native
@pytest.mark.parametrize("at", [0, 1500, 2999])
def test_a_bare_array_file_scanned_in_place_reads_as_msgspec_reads_it(at: int) -> None:
    """A document that is the event array itself (it starts at byte 0), whitespace after it."""
    events = [_event(ts=b"%d" % (900 + i)) for i in range(3000)]
    events[at] = _event(args=b'{"rank": 1}')
    data = b"[" + b",\n".join(events) + b"]\n\n"
    counts = _both(Path("bare.json"), data, 8 << 20, read=_in_pieces)
    # (Given up on at the first event: msgspec reads the whole piece, one part.)
    assert counts[1] >= (2 if at else 1) and counts[0] >= (1 if at else 0)


# --------------------------------------------------------------------------------------
# (e) String pids and tids, Kineto's pseudo-events: read by the scanner, labelled as msgspec
# --------------------------------------------------------------------------------------
#: The last events of a Kineto file (the bundled sample's): the profiler span, its process's
#: sort index, an iteration marker (pseudo-events, left out) and a global instant event with
#: empty string pid and tid (kept: numbered by the file's labels).
KINETO_TAIL = [
    b'{"ph": "X", "cat": "Trace", "ts": 90, "dur": 14628, "pid": "Spans", "tid": "PyTorch Profiler",'
    b' "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}',
    b'{"name": "process_sort_index", "ph": "M", "ts": 90, "pid": "Spans", "tid": 0, "args": {"sort_index": 536870912}}',
    b'{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",'
    b' "tid": "Trace PyTorch Profiler", "ts": 90}',
    b'{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 16000}',
]
ODD_STRINGS = [
    # (events, whether the scanner reads the piece alone)
    ([], True),
    ([_event(pid=b'"7"', cat=b'"cpu_op"')], True),  # a number in a string
    ([_event(pid=b'"0x1f"', tid=b'"stream 3"')], True),  # a kernel: device from its pid's number
    ([_event(pid=b'"worker"', tid=b'"main"', cat=b'"cpu_op"'), _event(pid=b'"worker"', tid=b'"1"')], True),
    ([_event(pid=b'"Spans"', cat=b'"cpu_op"', dur=b"-1")], True),  # malformed, but a pseudo-event
    ([_event(cat=b'"Trace"', pid=b"3", ts=b"50", dur=b"")], True),  # no dur: a marker, no span
    ([_event(cat=b'"Trace"', ph=b'"i"', name=b'"n2"')], True),
    ([_event(tid=b'"Traces"', cat=b'"cpu_op"'), _event(pid=b'"Traces"', tid=b'"x"')], True),
    ([_event(pid=b'""', tid=b'""', ph=b'"i"', name=b'""')], True),
    # tids that numpy converts (no labels), and ones it does not (each then by parts.as_int)
    ([_event(tid=b'"12"', cat=b'"cpu_op"'), _event(tid=b'" 3"', cat=b'"cpu_op"'), _event(tid=b'"07"')], True),
    ([_event(tid=b'"12"', cat=b'"cpu_op"'), _event(tid=b'"0x10"'), _event(tid=b'"t"'), _event(tid=b'"07"')], True),
    ([_event(pid=b'"t"', tid=b'"u"'), _event(pid=b'"u"', tid=b'"t"'), _event(pid=b'"9999999999999999999999"')], True),
    (
        [
            _event(pid=b'"a"', ph=b'"s"'),
            _event(pid=b'"b"', ph=b'"M"', name=b'"process_name"', args=b'{"name": "rank 1"}'),
        ],
        True,
    ),
    ([_event(pid=b'"Spans"', name=b'"caf\xc3\xa9"')], False),  # non-ASCII: msgspec reads it
    ([_event(pid=b'"\\u00e9"')], False),  # an escape in a pid: msgspec reads it
    ([_event(cat=b'"Trace"', dur=b"-5"), _event(pid=b'"p"', dur=b"-5")], False),  # a malformed kept event
]


@needs_native
@pytest.mark.parametrize(("odd", "alone"), ODD_STRINGS, ids=[str(i) for i in range(len(ODD_STRINGS))])
@pytest.mark.parametrize("tail", [True, False], ids=["tail", "no-tail"])
def test_string_pids_and_pseudo_events_read_as_msgspec_reads_them(odd: list[bytes], alone: bool, tail: bool) -> None:
    """Tables, labels (the ids of string pids and tids), skipped counts and the profiler span
    as msgspec gives them, in a file the scanner reads in one part where it can."""
    events = [
        *odd[:1],
        *(_event(ts=b"%d" % (900 + i), name=b'"k%d"' % (i % 5)) for i in range(30)),
        *odd[1:],
        *(KINETO_TAIL if tail else []),
    ]
    data = _doc(events)
    counts = _both(Path("strings.json"), data, 1 << 22, read=_in_pieces)
    if alone:
        assert counts == [1, 1]
    else:
        assert counts[1] > counts[0]


@needs_native
def test_the_kineto_tail_is_left_out_and_labelled() -> None:
    """The values themselves (not only the same both ways): the profiler span from the
    ``Trace`` event, two markers skipped, the global instant event kept with the id that
    ``""`` gets after ``"Spans"`` and ``"Traces"`` (-2, -3: -4)."""
    data = _doc(KINETO_TAIL, n_plain=3)
    with _counting() as counts:
        (rank,) = _in_pieces(Path("tail.json"), data, 1 << 22)
    assert counts == [1, 1]
    ev = rank.events
    assert list(ev["name"]) == ["aten::mm"] * 3 + ["Record Window End"]
    last = ev.iloc[-1]
    assert (last["pid"], last["tid"]) == (-4, -4)
    assert rank.meta.skipped["profiler markers"] == 2  # (the sort index is a metadata event)
    assert (rank.meta.profiler_start_ns, rank.meta.profiler_end_ns) == (90_000, (90 + 14628) * 1000)


@needs_native
@pytest.mark.parametrize("path", sorted(Path(tv.sample_path()).glob("*.json.gz")), ids=lambda p: p.name[:8])
def test_the_sample_files_are_read_by_the_scanner_alone(path: Path) -> None:
    """No msgspec part and no merge for the bundled sample (its files end with pseudo-events)."""
    counts = _both(path, read_bytes(path), 1 << 22, read=_in_pieces)
    assert counts == [1, 1]


@needs_native
def test_rocm_string_streams_are_read_by_the_scanner() -> None:
    """ROCm writes ``"stream": "0x0"`` on its runtime events: the scanner reads the file alone
    (it gave up there, and msgspec read the rest), converting a device event's string stream
    as the msgspec path does."""
    (path,) = sorted((DATA / "hta_mi250_rocm").glob("*.json.gz"))
    assert _both(path, read_bytes(path), 1 << 22, read=_in_pieces) == [1, 1]
    runtime = _event(cat=b'"cuda_runtime"', name=b'"hipLaunchKernel"', args=b'{"stream": "0x0", "correlation": 5}')
    kernel = _event(args=b'{"stream": "0x2", "correlation": 5, "device": 1}')
    labelled = _event(args=b'{"stream": "default", "device": 1}', ts=b"950")
    assert _both(Path("rocm.json"), _doc([runtime, kernel, labelled]), 1 << 20, read=_in_pieces) == [1, 1]


@given(st.lists(st.text(alphabet="nc:l ab\u00e9", max_size=8), max_size=30), st.sampled_from(["nccl:", "n", "", "c:"]))
def test_names_starting_with_a_prefix(names: list[str], prefix: str) -> None:
    assert native.names_starting(names, prefix) == [i for i, nm in enumerate(names) if nm.startswith(prefix)]


@given(st.lists(st.integers(0, 40), min_size=1, max_size=80))
def test_numbers_in_order_of_first_appearance(values: list[int]) -> None:
    """``_first_seen_order``, by new maxima where the numbers come in increasing order, else by
    first indices: each distinct number once, where it first appears."""
    c = np.array(values, dtype=np.int32)
    assert native.first_seen_order(c, 41).tolist() == list(dict.fromkeys(values))


# --------------------------------------------------------------------------------------
# One timestamp route per file: the whole-file read (msgspec) and the read in pieces (the
# scanner) give the same tables bit for bit (issue 37)
# --------------------------------------------------------------------------------------
def _whole_vs_pieces(path: Path, data: bytes, piece_bytes: int) -> None:
    with _msgspec_only():
        whole = _outcome(lambda: kineto.parse_kineto(path, data))
    try:
        pieces_read = _in_pieces(path, data, piece_bytes)
    except kineto.SplitFailed:
        return  # (read whole: nothing to compare)
    except Exception as exc:  # noqa: BLE001 (the outcome compared is the error itself)
        _assert_same(("error", type(exc).__name__, str(exc)), whole)
        return
    _assert_same(("tables", pieces_read), whole)


@needs_native
@pytest.mark.parametrize("path", LOCAL, ids=lambda p: p.parent.name + "/" + p.name[:32])
def test_whole_file_and_pieces_read_identically(path: Path) -> None:
    data = read_bytes(path)
    for piece_bytes in (1 << 14, 1 << 16):
        _whole_vs_pieces(path, data, piece_bytes)


@needs_native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=_mutated(), piece_bytes=st.sampled_from([1 << 11, 1 << 13]))
def test_mutated_traces_read_identically_whole_and_in_pieces(data: bytes, piece_bytes: int) -> None:
    _whole_vs_pieces(Path("mutated.json"), data, piece_bytes)


def test_one_timestamp_route_whatever_the_pieces() -> None:
    """Microseconds since the epoch (beyond a float's nanoseconds): an event's ``ts_ns`` is
    its text's whichever piece holds it and whichever reader reads it. The first half's
    floats have fractions (that piece reads its texts); the second half's fractions are below
    a float's resolution (1700000000000000.012 is a whole float): that piece once took the
    float route, 12 ns off the text route of a whole-file read. Small times with four
    decimals take the float route everywhere."""
    base = 1_700_000_000_000_000
    events, want = [], []
    for i in range(60):
        frac = b"500" if i < 30 else b"012"  # .5 us: a float's fraction; .012 us: below it
        events.append(_event(ts=b"%d.%s" % (base + i, frac), dur=b"1"))
        want.append((base + i) * 1000 + int(frac))
    data = b'{"traceEvents": [\n' + b",\n".join(events) + b"\n]}"
    small = _doc([], n_plain=20)  # "ts": 100.5 ... and four-decimal durations: float route
    got = []
    for reader in (_load, lambda p, d, b: kineto.parse_kineto(p, d)):
        for piece_bytes in (1 << 10, 1 << 22):
            for native_on in (True, False):
                with nullcontext() if native_on else _msgspec_only():
                    ranks = reader(Path("epoch.json"), data, piece_bytes)
                    ev = ranks[0].events
                    got.append(sorted(ev["ts_ns"].tolist()))
                    plain = reader(Path("small.json"), small, piece_bytes)[0].events["ts_ns"].tolist()
                    assert plain == [(100 + i * 10) * 1000 + 500 for i in range(20)]
    assert all(g == sorted(want) for g in got), [g[-1] - want[-1] for g in got]
