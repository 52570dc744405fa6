"""Small Kineto files (under ``ingest.PIECE_BYTES``) are read as one piece by the C scanner
where it is built (issue 17: the 8-rank sample's fixed costs), with exactly the tables and
errors of the whole-file read (``kineto.parse_kineto``)."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import TraceFormatError
from jupyter_traceview.loading import ingest, plan, split
from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.files import TraceFile, read_bytes, trace_format
from jupyter_traceview.loading.readers.kineto import native
from jupyter_traceview.model.rank_data import RankData

DATA = Path(__file__).resolve().parents[1] / "data"
SMALL = (
    sorted(p for p in DATA.glob("**/*.json.gz") if "key_averages" not in p.name and trace_format(p) == "kineto")
    + sorted(Path(tv.sample_path()).glob("*.json.gz"))[:2]
)
OPTIONS = ingest.ReadOptions("raise", None)


def _same(a: list[RankData], b: list[RankData]) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert dataclasses.asdict(x.meta) == dataclasses.asdict(y.meta)
        for name in ("events", "gpu_args", "comms", "memory", "op_args"):
            pd.testing.assert_frame_equal(getattr(x, name), getattr(y, name), check_exact=True, obj=name)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the files read in pieces (the scanner's path) by ingest."""
    calls: list[int] = []
    real = kineto.parse_in_pieces

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(kineto, "parse_in_pieces", spy)
    return calls


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_a_small_file_read_by_the_scanner_gives_the_whole_file_tables(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = read_bytes(path)
    calls = _spy(monkeypatch)
    got = ingest.read_file(TraceFile(path, path.stat().st_size, 0, None), OPTIONS, None)
    if len(data) <= ingest.PIECE_BYTES:  # (a few are bigger: inflated and read piece by piece)
        assert calls == ([1] if native.AVAILABLE else [])
    _same(kineto.parse_kineto(path, data), got)


def test_without_the_scanner_a_small_file_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    path = sorted(Path(tv.sample_path()).glob("*.json.gz"))[0]
    monkeypatch.setattr(kineto, "NATIVE_AVAILABLE", False)
    calls = _spy(monkeypatch)
    got = ingest.read_file(TraceFile(path, path.stat().st_size, 0, None), OPTIONS, None)
    assert calls == []
    _same(kineto.parse_kineto(path, read_bytes(path)), got)


def _fails_alike(path: Path, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tv.load(path)`` fails with ``message`` (the whole-file read's) whether the file is
    read as one piece, in pieces in this process or in pieces across a pool."""
    with pytest.raises(TraceFormatError) as small:
        tv.load(path, cache=False)
    assert str(small.value) == message
    monkeypatch.setattr(ingest, "PIECE_BYTES", 2000)
    with pytest.raises(TraceFormatError) as big:
        tv.load(path, cache=False, engine="serial")
    assert str(big.value) == message
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(split, "PIECE_BYTES", 2000)
    with pytest.raises(TraceFormatError) as in_ranges:
        tv.load(path, cache=False, engine="process")
    assert str(in_ranges.value) == message


def _with_bad_header(tmp_path: Path, n_events: int) -> tuple[Path, bytes]:
    """A trace whose deviceProperties hold a byte that is not UTF-8 (a damaged header)."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
        for i in range(n_events)
    ]
    text = (
        b'{"deviceProperties": [{"name": "GPU \xf0("}],\n"traceEvents": [\n'
        + b",\n".join(json.dumps(e).encode() for e in events)
        + b'\n],\n"traceName": "t"\n}\n'
    )
    path = tmp_path / "rank-0.json"
    path.write_bytes(text)
    return path, text


def test_a_header_field_that_is_not_utf8_fails_alike_whole_or_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (The header's raw fields were decoded outside the reader's error handling: a
    # UnicodeDecodeError escaped tv.load.)
    path, text = _with_bad_header(tmp_path, 400)
    with pytest.raises(TraceFormatError) as whole:
        kineto.parse_kineto(path, text)
    assert "not valid UTF-8 text (in its deviceProperties field)" in str(whole.value)
    _fails_alike(path, str(whole.value), monkeypatch)
    gz = tmp_path / "rank-1.json.gz"
    gz.write_bytes(gzip.compress(text))
    with pytest.raises(TraceFormatError, match="not valid UTF-8"):
        tv.load(gz, cache=False, engine="serial")


def test_an_argument_that_is_not_utf8_fails_alike_whole_or_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Raw argument texts (process group names, shapes, args.rank) are left unchecked by the
    # decoder; decoding them later raised a UnicodeDecodeError out of tv.load.
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
        for i in range(400)
    ]
    events[300]["args"] = {"Collective name": "allreduce", "Process Group Name": "PG"}
    text = json.dumps({"traceEvents": events}).replace('"PG"', '"P\\u0047"').encode()
    text = text.replace(b"P\\u0047", b"P\xf0(")
    path = tmp_path / "rank-0.json"
    path.write_bytes(text)
    with pytest.raises(TraceFormatError) as whole:
        kineto.parse_kineto(path, text)
    assert "is not valid UTF-8 text at line 1" in str(whole.value)
    _fails_alike(path, str(whole.value), monkeypatch)


@pytest.mark.skipif(not native.AVAILABLE, reason="the C scanner is not built")
def test_files_read_one_after_another_with_shared_scanner_buffers_give_each_file_its_own_tables() -> None:
    # The biggest file first: later, smaller files are scanned into buffers that still hold
    # the rows of bigger ones (stale rows past a file's own must never be read).
    paths = sorted(SMALL, key=lambda p: -len(read_bytes(p)))
    assert native.scratch() is not native.scratch()  # outside: new buffers each time
    with native.shared_scratch():
        shared = native.scratch()
        assert shared is not None and native.scratch() is shared
        with native.shared_scratch():  # nested: the same buffers
            assert native.scratch() is shared
        got = [ingest.read_file(TraceFile(p, p.stat().st_size, 0, None), OPTIONS, None) for p in paths + paths[::-1]]
        assert native.scratch() is shared
    assert native.scratch() is not shared
    for path, ranks in zip(paths + paths[::-1], got, strict=True):
        _same(kineto.parse_kineto(path, read_bytes(path)), ranks)


@pytest.mark.skipif(not native.AVAILABLE, reason="the C scanner is not built")
def test_a_serial_load_scans_every_file_into_one_set_of_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[native.Scratch] = []  # (the buffers kept alive: ids of freed ones are reused)
    real = native.scan

    def spy(data: bytes, s: native.Scratch, *args: Any) -> Any:
        seen.append(s)
        return real(data, s, *args)

    monkeypatch.setattr(native, "scan", spy)
    trace = tv.load(tv.sample_path(), cache=False, progress=False, engine="serial")
    assert len(trace.ranks) == 8 and len(seen) >= 8 and len({id(s) for s in seen}) == 1
    monkeypatch.undo()
    # The same load with new buffers for each file (as before shared_scratch) is identical.
    monkeypatch.setattr(kineto, "shared_scratch", contextlib.nullcontext)
    expected = tv.load(tv.sample_path(), cache=False, progress=False, engine="serial")
    assert expected.ranks == trace.ranks
    for r in expected.ranks:
        _same([expected.rank_data(r)], [trace.rank_data(r)])


@pytest.mark.skipif(not native.AVAILABLE, reason="the C scanner is not built")
def test_a_shared_scratch_lets_a_big_files_buffers_go_before_its_tables_are_built(tmp_path: Path) -> None:
    # ~30,000 events in ~2.6 MB (one piece): more rows than a shared scratch keeps.
    events = ",\n".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "op{i % 7}", "pid": 1, "tid": 2, "ts": {10 * i}, "dur": 1}}'
        for i in range(30_000)
    )
    big = tmp_path / "big.json"
    big.write_text('{"schemaVersion": 1, "traceEvents": [\n' + events + '\n], "traceName": "t"}')
    small = sorted(Path(tv.sample_path()).glob("*.json.gz"))[0]
    with native.shared_scratch():
        shared = native.scratch()
        assert shared is not None
        got_small = ingest.read_file(TraceFile(small, small.stat().st_size, 0, None), OPTIONS, None)
        assert 0 < shared.cap <= native.SHARED_MAX_ROWS  # kept for the next file
        got_big = ingest.read_file(TraceFile(big, big.stat().st_size, 0, None), OPTIONS, None)
        assert shared.cap == 0  # let go once scanned
        again = ingest.read_file(TraceFile(small, small.stat().st_size, 0, None), OPTIONS, None)
    _same(kineto.parse_kineto(big, read_bytes(big)), got_big)
    _same(kineto.parse_kineto(small, read_bytes(small)), got_small)
    _same(got_small, again)
