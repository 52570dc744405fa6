"""A file read in byte ranges (one process piece by piece, or across worker processes) gives
exactly the tables of the whole-file read; a split that cannot be exact falls back to it."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import pickle
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import TraceFormatError, TraceviewError
from jupyter_traceview.loading import ingest, plan, pool, split
from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.files import read_bytes
from jupyter_traceview.loading.readers.kineto import pieces
from jupyter_traceview.model.rank_data import RankData

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path("/work/shared/traces")
REAL_TRACES = (
    sorted(p for p in DATA.glob("**/*.json.gz") if "key_averages" not in p.name)
    + sorted(Path(tv.sample_path()).glob("*.json.gz"))[:2]
)
if SHARED.is_dir():  # the shared collection, where this checkout has it
    REAL_TRACES += sorted(
        p for p in SHARED.glob("**/*.json.gz") if p.parent.name not in {q.parent.name for q in REAL_TRACES}
    )


def _same(a: list[RankData], b: list[RankData]) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(sorted(a, key=lambda r: r.meta.rank), sorted(b, key=lambda r: r.meta.rank), strict=True):
        assert dataclasses.asdict(x.meta) == dataclasses.asdict(y.meta)
        for name in ("events", "gpu_args", "comms", "memory", "op_args"):
            pd.testing.assert_frame_equal(getattr(x, name), getattr(y, name), check_exact=True, obj=name)


def _span(data: bytes) -> int:
    """Bytes of the event array."""
    ((lo, hi),) = kineto.plan(kineto.bytes_source(data), len(data), 1 << 40).ranges
    return hi - lo


def _across(path: Path, data: bytes, piece_bytes: int, **kw: Any) -> list[RankData]:
    """The pool's way, in this process: each piece parsed alone, pickled as a worker returns it."""
    read_at = kineto.bytes_source(data)
    the_plan = kineto.plan(read_at, len(data), piece_bytes)
    assert len(the_plan.ranges) > 1
    base = kineto.read_header(path, the_plan.doc, None, kw.get("bad_events", "raise")).base_time_ns
    parts = [pickle.loads(pickle.dumps(pieces.parse_piece(path, read_at, lo, hi, base))) for lo, hi in the_plan.ranges]
    return pieces.finish(path, the_plan, parts, **kw)


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_pieces_give_the_whole_file_tables_on_real_traces(path: Path) -> None:
    data = read_bytes(path)
    whole = kineto.parse_kineto(path, data, bad_events="drop")
    read_at = kineto.bytes_source(data)
    the_plan = kineto.plan(read_at, len(data), max(1024, _span(data) // 7))
    assert len(the_plan.ranges) > 1
    # Consecutive ranges, separated by exactly one comma.
    for (_, hi), (lo, _) in zip(the_plan.ranges, the_plan.ranges[1:], strict=False):
        assert lo == hi + 1 and data[hi : hi + 1] == b","
    _same(whole, pieces.parse_in_pieces(path, read_at, the_plan, bad_events="drop"))
    try:
        across = _across(path, data, max(1024, _span(data) // 3), bad_events="drop")
    except kineto.SplitFailed:
        # Only for what a piece alone cannot number exactly (names without numbers, B/E pairs, ...).
        return
    _same(whole, across)


def test_most_real_traces_split_across_processes() -> None:
    split = 0
    for path in REAL_TRACES:
        data = read_bytes(path)
        try:
            _across(path, data, max(1024, _span(data) // 3), bad_events="drop")
            split += 1
        except kineto.SplitFailed:
            pass
    assert split >= len(REAL_TRACES) - 2


def _trace_text(events: list[dict[str, Any]], *, pretty_args: bool = False, **header: Any) -> bytes:
    lines = []
    for e in events:
        text = json.dumps(e)
        if pretty_args:  # an element written over several lines, with nested arrays of objects
            text = json.dumps(e, indent=2)
        lines.append("  " + text)
    head = "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in header.items())
    return (
        "{\n" + head + '  "traceEvents": [\n' + ",\n".join(lines) + "\n  ],\n" + '  "traceName": "x]"\n}\n'
    ).encode()


def _events(n: int, **extra: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        e = {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
        e.update(extra)
        out.append(e)
    return out


def test_the_plan_finds_the_array_between_header_fields_with_brackets() -> None:
    data = _trace_text(_events(200), distributedInfo={"rank": 3, "x": "[]"}, deviceProperties=[{"id": 0}])
    the_plan = kineto.plan(kineto.bytes_source(data), len(data), 1000)
    assert len(the_plan.ranges) > 3
    events = json.loads(b"[" + b",".join(data[lo:hi] for lo, hi in the_plan.ranges) + b"]")
    assert events == json.loads(data)["traceEvents"]
    assert the_plan.doc.traceName == "x]"
    _same(kineto.parse_kineto(Path("t.json"), data), _across(Path("t.json"), data, 1000))


def test_a_cut_inside_an_element_fails_and_the_load_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nested arrays of objects, one per line: a cut can land inside an element.
    events = _events(300, args={"nested": [{"a": i} for i in range(20)]})
    data = _trace_text(events, pretty_args=True)
    read_at = kineto.bytes_source(data)
    the_plan = kineto.plan(read_at, len(data), 997)
    with pytest.raises(kineto.SplitFailed):
        pieces.parse_in_pieces(Path("t.json"), read_at, the_plan)
    f = tmp_path / "rank-0.json"
    f.write_bytes(data)
    monkeypatch.setattr(ingest, "PIECE_BYTES", 997)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(split, "PIECE_BYTES", 997)
    whole = kineto.parse_kineto(f, data, name_rank=0)
    _same(whole, ingest.read_file(ingest.TraceFile(f, len(data), 0, 0), ingest.ReadOptions("raise", None), None))
    _same(_whole_load(f), _ranks(tv.load(f, cache=False, engine="process")))
    _same(_whole_load(f), _ranks(tv.load(f, cache=False)))


def _ranks(trace: tv.Trace) -> list[RankData]:
    return [trace.rank_data(r) for r in trace.ranks]


def _whole_load(path: Path, **kw: Any) -> list[RankData]:
    """tv.load reading every file whole, in this process (the reference)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest, "PIECE_BYTES", 1 << 62)
        mp.setattr(ingest.kineto, "NATIVE_AVAILABLE", False)  # small files too: read whole by msgspec
        mp.setattr(plan, "SPLIT_BYTES", 1 << 62)
        return _ranks(tv.load(path, cache=False, engine="serial", **kw))


def test_malformed_events_fall_back_to_the_whole_file_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events(400)
    events[333]["dur"] = -1.0
    data = _trace_text(events)
    f = tmp_path / "rank-0.json"
    f.write_bytes(data)
    with pytest.raises(kineto.SplitFailed):
        _across(f, data, 2000, bad_events="drop")
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(split, "PIECE_BYTES", 2000)
    monkeypatch.setattr(ingest, "PIECE_BYTES", 2000)
    with pytest.raises(TraceFormatError) as whole_error:
        kineto.parse_kineto(f, data)
    with pytest.raises(TraceFormatError) as split_error:
        tv.load(f, cache=False, engine="process")
    assert str(split_error.value) == str(whole_error.value)
    assert "event #333" in str(split_error.value)
    with pytest.warns(tv.TraceviewWarning, match="1 malformed events were dropped"):
        dropped = _ranks(tv.load(f, cache=False, engine="process", bad_events="drop"))
    with pytest.warns(tv.TraceviewWarning, match="1 malformed events were dropped"):
        _same(_whole_load(f, bad_events="drop"), dropped)


def test_one_big_file_is_read_by_a_pool_with_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = DATA / "h100_bert_small" / "gaunernst_bert-small-uncased__1016001.json.gz"
    data = read_bytes(src)
    plain = tmp_path / "plain.json"
    plain.write_bytes(data)
    packed = tmp_path / "packed.json.gz"
    packed.write_bytes(gzip.compress(data, 1))
    calls: list[Any] = []
    real = split.read_split

    def spy(*args: Any) -> Any:
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(split, "read_split", spy)
    monkeypatch.setattr(pool, "starts_cheaply", lambda: True)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 2**16)
    monkeypatch.setattr(split, "PIECE_BYTES", len(data) // 5)
    before = _scratch_in_shm()
    for f in (plain, packed):
        _same(_whole_load(f), _ranks(tv.load(f, cache=False)))
    assert calls == [True, True]
    assert _scratch_in_shm() <= before  # no scratch file is left behind


def _scratch_in_shm() -> set[Path]:
    """This process's scratch files in /dev/shm (other processes' pools, as test runs of other
    checkouts on the machine, come and go meanwhile)."""
    others = re.compile(r"traceview-pool-(\d+)-")
    return {
        p
        for p in Path("/dev/shm").glob("traceview-*")
        if (m := others.match(p.name)) is None or int(m.group(1)) == os.getpid()
    }


def _die(*args: Any, **kwargs: Any) -> Any:
    os._exit(3)


def _split_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 400-event file, and the loader made to split files over 1000 bytes in 2000-byte pieces."""
    f = tmp_path / "rank-0.json"
    f.write_bytes(_trace_text(_events(400)))
    monkeypatch.setattr(plan, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(split, "PIECE_BYTES", 2000)
    return f


def test_a_worker_dying_on_a_piece_fails_the_load_with_the_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _split_small(tmp_path, monkeypatch)
    monkeypatch.setattr(split, "read_piece_task", _die)
    monkeypatch.setattr(pool, "pool_context", lambda **_: __import__("multiprocessing").get_context("fork"))
    with pytest.raises(TraceviewError, match=r"rank-0\.json"):
        tv.load(f, cache=False)


def test_a_worker_dying_on_a_file_fails_the_load_with_the_file_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "read_file_task", _die)
    monkeypatch.setattr(pool, "pool_context", lambda **_: __import__("multiprocessing").get_context("fork"))
    with pytest.raises(TraceviewError, match=r"a worker process died while reading .*worker\d_step"):
        tv.load(tv.sample_path(), cache=False, engine="process")


def test_auto_reads_one_big_file_alone_in_process_while_no_pool_starts_cheaply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _split_small(tmp_path, monkeypatch)
    calls: list[Path] = []
    monkeypatch.setattr(split, "read_split", lambda tf, *a: calls.append(tf.path))
    monkeypatch.setattr(pool, "starts_cheaply", lambda: False)
    tv.load(f, cache=False)
    assert calls == []
    monkeypatch.setattr(pool, "starts_cheaply", lambda: True)
    tv.load(f, cache=False)
    assert calls == [f]
    # engine="process" always reads one file in byte ranges.
    monkeypatch.setattr(pool, "starts_cheaply", lambda: False)
    tv.load(f, cache=False, engine="process")
    assert calls == [f, f]


@pytest.mark.parametrize("engine", ["serial", "process"])
def test_a_big_plain_file_with_a_gz_name_is_refused_as_a_small_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """Read in pieces (or split across a pool), a .gz name on plain JSON gets the whole-file read's error."""
    f = tmp_path / "rank-0.json.gz"
    f.write_bytes(_trace_text(_events(300)))
    monkeypatch.setattr(ingest, "PIECE_BYTES", 2000)
    monkeypatch.setattr(plan, "SPLIT_BYTES", 2000)
    monkeypatch.setattr(split, "PIECE_BYTES", 2000)
    with pytest.raises(tv.TraceFormatError, match=r"has a \.gz name but is not gzip-compressed") as exc:
        tv.load(f, cache=False, engine=engine)
    assert str(f) in str(exc.value)
