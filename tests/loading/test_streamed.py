"""A gzip-compressed file is inflated as it is read, piece by piece (``pieces.parse_streamed``):
the same tables as the whole-file read, the same errors for broken gzip, never the whole
document in memory."""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import TraceFormatError
from jupyter_traceview.loading import ingest, plan, split
from jupyter_traceview.loading.readers import files, kineto
from jupyter_traceview.loading.readers.files import inflate_chunks, read_bytes
from jupyter_traceview.loading.readers.kineto import cutting, pieces

from .test_pieces import REAL_TRACES, _events, _ranks, _same, _trace_text, _whole_load


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte ranges' lengths of the pieces read (``pieces.piece_columns`` calls), as they are read."""
    seen: list[int] = []
    real = pieces.piece_columns

    def spy(read_at: Any, lo: int, hi: int, *args: Any) -> Any:
        seen.append(hi - lo)
        return real(read_at, lo, hi, *args)

    monkeypatch.setattr(pieces, "piece_columns", spy)
    return seen


def _small_pieces(monkeypatch: pytest.MonkeyPatch, piece_bytes: int = 2000) -> None:
    """tv.load streams compressed files over ``piece_bytes`` in pieces of that size, cut within 512 bytes."""
    monkeypatch.setattr(ingest, "PIECE_BYTES", piece_bytes)
    monkeypatch.setattr(cutting, "STREAM_WINDOW", 512)
    monkeypatch.setattr(cutting, "TAIL_BYTES", 1024)
    monkeypatch.setattr(cutting, "HEAD_BYTES", 4096)
    monkeypatch.setattr(files, "_READ_BLOCK", 97)  # blocks that end anywhere: inside a gzip header too
    monkeypatch.setattr(files, "INFLATE_CHUNK_BYTES", 301)


def _write_gz(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data, 6))
    return path


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_streamed_pieces_give_the_whole_file_tables_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = read_bytes(path)
    whole = kineto.parse_kineto(path, data, bad_events="drop")
    monkeypatch.setattr(cutting, "STREAM_WINDOW", 4096)
    seen = _counted(monkeypatch)
    chunks = functools.partial(inflate_chunks, path, chunk_bytes=65536)
    streamed = pieces.parse_streamed(path, chunks, max(1024, len(data) // 9), bad_events="drop")
    assert not isinstance(streamed, bytes)
    _same(whole, streamed)
    if len(data) > 200_000:
        assert len(seen) > 2, seen
    assert sum(seen) < len(data)  # one pass


def _peak_streaming(path: Path, n_events: int) -> tuple[int, int]:
    """(JSON bytes, traced peak bytes) of streaming a document of ``n_events`` 4 KB events in 512 KiB pieces."""
    events = _events(n_events)
    for i, e in enumerate(events):
        e["args"] = {"note": f"{i}-" + "x" * 4000}  # bytes that make no column: the tables stay small
    data = _trace_text(events, baseTimeNanoseconds=10**18)
    path.write_bytes(gzip.compress(data, 1))
    whole = kineto.parse_kineto(path, data)
    size = len(data)
    del data
    tracemalloc.start()
    try:
        streamed = pieces.parse_streamed(path, functools.partial(inflate_chunks, path), 2**19)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not isinstance(streamed, bytes)
    _same(whole, streamed)
    return size, peak


def test_streaming_memory_does_not_grow_with_the_document(tmp_path: Path) -> None:
    small, small_peak = _peak_streaming(tmp_path / "rank-0.json.gz", 1500)
    big, big_peak = _peak_streaming(tmp_path / "rank-1.json.gz", 4500)
    assert big > 18e6 and big > 2.9 * small
    # About one piece, its scanner's buffers, the tail and an inflated chunk; never the document.
    assert big_peak < small_peak + 2**20, (small_peak, big_peak)
    assert big_peak < big / 2, big_peak


def test_a_small_compressed_document_comes_back_whole(tmp_path: Path) -> None:
    data = _trace_text(_events(10))
    f = _write_gz(tmp_path / "rank-0.json.gz", data)
    assert pieces.parse_streamed(f, functools.partial(inflate_chunks, f), len(data)) == data
    assert not isinstance(pieces.parse_streamed(f, functools.partial(inflate_chunks, f), len(data) - 1), bytes)


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_metadata_after_the_events_gives_the_same_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """Fields after traceEvents (as older profilers write them) decide the rank and the time base."""
    events = json.dumps(_events(400))
    data = (
        '{"schemaVersion": 1, "traceEvents": '
        + events.replace("}, {", "},\n{")
        + ', "distributedInfo": {"rank": 5, "world_size": 8}, "deviceProperties": [{"id": 0, "name": "X"}],'
        + ' "baseTimeNanoseconds": 1700000000000000000}'
    ).encode()
    f = _write_gz(tmp_path / "trace.json.gz", data)
    reference = _whole_load(f)
    assert reference[0].meta.rank == 5 and reference[0].meta.base_time_ns == 17 * 10**17
    _small_pieces(monkeypatch)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(split, "PIECE_BYTES", 3000)
    passes: list[int] = []
    real = files.inflate_chunks

    def counted(*args: Any, **kw: Any) -> Iterator[bytes]:
        passes.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(ingest, "inflate_chunks", counted)
    seen = _counted(monkeypatch)
    _same(reference, _ranks(tv.load(f, cache=False, engine=engine)))
    if engine == "serial":
        # Read with the time base of the fields before the array (none: 0), which decides nothing here.
        assert len(passes) == 1 and len(seen) > 10


def _late_base(events: list[dict[str, Any]], base: int) -> bytes:
    text = json.dumps(events).replace("}, {", "},\n{")
    return ('{"traceEvents": ' + text + f', "baseTimeNanoseconds": {base}}}').encode()


def _passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    passes: list[int] = []
    real = files.inflate_chunks
    monkeypatch.setattr(ingest, "inflate_chunks", lambda *a, **kw: passes.append(1) or real(*a, **kw))
    return passes


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_a_late_time_base_that_decides_validity_reads_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    # Timestamps of 1e17 ns: valid with either base, but near enough to 2**62 ns that the base could decide.
    events = _events(400)
    for e in events:
        e["ts"] += 1e14
    f = _write_gz(tmp_path / "rank-0.json.gz", _late_base(events, 3 * 10**18))
    reference = _whole_load(f)
    _small_pieces(monkeypatch)
    monkeypatch.setattr(split, "PIECE_BYTES", 3000)
    passes = _passes(monkeypatch)
    streamed: list[bool] = []
    real_split = split.split_streamed
    monkeypatch.setattr(split, "split_streamed", lambda *a: streamed.append(True) or real_split(*a))
    _same(reference, _ranks(tv.load(f, cache=False, engine=engine)))
    # In this process: read again with the file's time base. Through the pool: the pieces the
    # workers read are dropped, and this process reads the file (twice) instead.
    assert len(passes) == 2 and streamed == ([True] if engine == "process" else [])
    # Beyond 2**62 ns with the late base only: the whole-file read's error, not a table.
    for e in events:
        e["ts"] += 2e15
    f = _write_gz(tmp_path / "rank-1.json.gz", _late_base(events, 3 * 10**18))
    with pytest.raises(TraceFormatError) as whole_error:
        _whole_load(f)
    with pytest.raises(TraceFormatError) as streamed_error:
        tv.load(f, cache=False, engine=engine)
    assert str(streamed_error.value) == str(whole_error.value)
    assert "out of range" in str(streamed_error.value)


def test_the_time_base_before_the_events_is_read_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trace_text(_events(400), baseTimeNanoseconds=1700000000000000000, distributedInfo={"rank": 2})
    f = _write_gz(tmp_path / "trace.json.gz", data)
    reference = _whole_load(f)
    _small_pieces(monkeypatch)
    passes = _passes(monkeypatch)
    seen = _counted(monkeypatch)
    _same(reference, _ranks(tv.load(f, cache=False, engine="serial")))
    assert len(passes) == 1 and len(seen) > 10


def test_empty_trace_events_are_read_as_the_whole_file_read_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = ('{"traceEvents": [], "deviceProperties": [' + ", ".join(['{"id": 0}'] * 500) + "]}").encode()
    f = _write_gz(tmp_path / "rank-0.json.gz", data)
    reference = _whole_load(f)
    _small_pieces(monkeypatch)
    assert len(data) > 2000
    loaded = _ranks(tv.load(f, cache=False))
    _same(reference, loaded)
    assert len(loaded[0].events) == 0


def _check(exc: pytest.ExceptionInfo[TraceFormatError], path: Path, *words: str) -> None:
    msg = str(exc.value)
    assert str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    assert exc.value.hint


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_gzip_truncated_mid_piece_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    packed = gzip.compress(_trace_text(_events(2000)))
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(packed[: len(packed) * 2 // 3])
    _small_pieces(monkeypatch)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    seen = _counted(monkeypatch)
    before = set(Path("/dev/shm").glob("traceview-*"))
    with pytest.raises(TraceFormatError) as exc:
        tv.load(f, cache=False, engine=engine)
    _check(exc, f, "gzip data is truncated", f"{len(packed) * 2 // 3:,} compressed bytes")
    assert "copy or record it again" in exc.value.hint
    if engine == "serial":
        assert len(seen) > 10  # pieces were read before the end was found missing
    assert set(Path("/dev/shm").glob("traceview-*")) <= before  # no scratch file left behind


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_corrupt_data_mid_stream_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    packed = bytearray(gzip.compress(_trace_text(_events(2000))))
    for k in range(len(packed) // 2, len(packed) // 2 + 64):
        packed[k] ^= 0xA5
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(bytes(packed))
    _small_pieces(monkeypatch)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    with pytest.raises(TraceFormatError) as exc:
        tv.load(f, cache=False, engine=engine)
    # (The CRC check, or the inflater itself, finds it.)
    assert "not valid gzip" in str(exc.value) or "truncated" in str(exc.value)
    _check(exc, f)


def test_garbage_after_the_gzip_member_is_ignored_as_gzip_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trace_text(_events(500))
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(gzip.compress(data) + b"\x00" * 700 + b"not gzip")
    reference = _whole_load(f)
    _small_pieces(monkeypatch)
    seen = _counted(monkeypatch)
    _same(reference, _ranks(tv.load(f, cache=False, engine="serial")))
    assert len(seen) > 10


def test_a_bad_second_member_is_invalid_gzip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(gzip.compress(_trace_text(_events(500))) + b"\x1f\x8b" + b"\x00" * 40)
    _small_pieces(monkeypatch)
    with pytest.raises(TraceFormatError) as exc:
        tv.load(f, cache=False)
    _check(exc, f)
    assert "not valid gzip" in str(exc.value) or "truncated" in str(exc.value)


def test_multi_member_gzip_split_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _trace_text(_events(500))
    cuts = [0, 1, 2, 777, 778, 5000, 5001, 9999, len(data)]
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(b"".join(gzip.compress(data[a:b]) for a, b in itertools.pairwise(cuts)))
    reference = _whole_load(f)
    _small_pieces(monkeypatch)
    assert b"".join(inflate_chunks(f)) == data
    assert max(len(c) for c in inflate_chunks(f)) <= files.INFLATE_CHUNK_BYTES
    seen = _counted(monkeypatch)
    _same(reference, _ranks(tv.load(f, cache=False, engine="serial")))
    assert len(seen) > 10


def test_a_gzip_bomb_stops_at_the_limit_while_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _write_gz(tmp_path / "rank-0.json.gz", _trace_text(_events(3000)))
    _small_pieces(monkeypatch)
    with pytest.raises(TraceFormatError) as exc:
        tv.load(f, cache=False, max_json_bytes=50_000)
    _check(exc, f, "inflates to more than", "gzip bomb", "max_json_bytes")


def test_an_abandoned_stream_closes_its_file(tmp_path: Path) -> None:
    f = _write_gz(tmp_path / "rank-0.json.gz", _trace_text(_events(3000)))
    chunks = inflate_chunks(f, chunk_bytes=1000)
    next(chunks)
    frame = chunks.gi_frame
    assert frame is not None
    fh = frame.f_locals["fh"]
    chunks.close()
    assert fh.closed


def test_a_read_error_while_streaming_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _write_gz(tmp_path / "rank-0.json.gz", _trace_text(_events(3000)))
    _small_pieces(monkeypatch)
    real_open = files._open

    class Failing:
        def __init__(self, fh: Any) -> None:
            self.fh, self.reads = fh, 0

        def __enter__(self) -> Failing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def fileno(self) -> int:
            return int(self.fh.fileno())

        def read(self, n: int) -> bytes:
            self.reads += 1
            if self.reads > 20:
                raise OSError(5, "Input/output error")
            return bytes(self.fh.read(n))

    monkeypatch.setattr(files, "_open", lambda path: Failing(real_open(path)))
    with pytest.raises(TraceFormatError) as exc:
        b"".join(inflate_chunks(f))
    _check(exc, f, "cannot be read (Input/output error)")


def test_a_small_gzip_file_is_inflated_in_one_buffer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``files.inflate_whole``: the content as one buffer where it is at most ``most`` bytes;
    None (the file then streamed, and its errors said there) where it is longer, holds a second
    member, or does not inflate. A small file of the load goes that way, with the same tables."""
    data = _trace_text(_events(300))
    f = _write_gz(tmp_path / "rank-0.json.gz", data)
    packed = f.read_bytes()
    whole = files.inflate_whole(f, packed, max_json_bytes=1 << 30, most=len(data))
    assert whole == data and isinstance(whole, bytes)
    assert files.inflate_whole(f, packed, max_json_bytes=1 << 30, most=len(data) - 1) is None
    assert files.inflate_whole(f, packed, max_json_bytes=len(data) - 1, most=len(data)) is None  # (a bomb)
    assert files.inflate_whole(f, packed[:-20], max_json_bytes=1 << 30, most=len(data)) is None  # truncated
    assert files.inflate_whole(f, packed + packed, max_json_bytes=1 << 30, most=2 * len(data)) is None
    corrupt = bytearray(packed)
    corrupt[len(corrupt) // 2] ^= 0xFF
    assert files.inflate_whole(f, bytes(corrupt), max_json_bytes=1 << 30, most=len(data)) is None
    reference = _whole_load(f)
    streamed = []
    monkeypatch.setattr(kineto, "parse_streamed", lambda *a, **k: streamed.append(a) or pytest.fail("streamed"))
    _same(reference, _ranks(tv.load(f, cache=False, engine="serial")))
    assert streamed == []
