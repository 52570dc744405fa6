"""Small one-rank Kineto files' tables built together (``readers.kineto.batch``, issue 17): exactly
the tables of the per-file path, on real traces, on sets mixing small and larger files, with a
bad file among good ones, where the rows cannot be keyed apart, and without the C scanner."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import TraceFormatError, TraceviewWarning
from jupyter_traceview.loading.readers import kineto
from jupyter_traceview.loading.readers.kineto import batch, native
from tests import kineto_builder as kb

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = Path(tv.sample_path())
#: Real traces of one rank each, of different kinds (CUDA, ROCm, Triton, CPU only, memory
#: records, recorded shapes): their names, kinds and arguments differ from file to file.
MIXED = [
    *sorted(SAMPLE.glob("*.json.gz"))[:2],
    *sorted((DATA / "hta_dlrm_2of128_ranks").glob("*.json.gz")),
    *sorted((DATA / "hta_mi250_rocm").glob("*.json*")),
    *sorted((DATA / "hta_triton").glob("*.json*")),
    *sorted((DATA / "hta_cpu_only").glob("*.json*")),
    *sorted((DATA / "cpu_memory" / "leak").glob("*.json*")),
    *sorted((DATA / "torch_cpu" / "shapes").glob("*.json*")),
    *sorted((DATA / "h100_bert_small").glob("*.json*")),
]
MIXED = [p for p in MIXED if "key_averages" not in p.name]
FOLDERS = [
    SAMPLE,
    *(
        DATA / name
        for name in (
            "h100_bert_small",
            "hta_alexnet",
            "hta_cpu_only",
            "hta_dlrm_2of128_ranks",
            "hta_mi250_rocm",
            "hta_triton",
            "torch_cpu/plain",
            "torch_cpu/shapes",
            "torch_cpu/stack",
            "cpu_memory/leak",
            "cpu_memory/mlp_train",
        )
    ),
]

needs_scanner = pytest.mark.skipif(not native.AVAILABLE, reason="the batched path reads what the C scanner read")


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of files in each batch whose tables kineto.batch_tables built (a batch that raised,
    whose files were then read alone, is not counted)."""
    sizes: list[int] = []
    real = kineto.batch_tables

    def spy(pending: Any, classifier: Any) -> Any:
        out = real(pending, classifier)
        sizes.append(len(pending))
        return out

    monkeypatch.setattr(kineto, "batch_tables", spy)
    return sizes


def _per_file(path: Any, **kw: Any) -> tv.Trace:
    """The load with no file deferred (every file's tables built alone, as before batching)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "MAX_ROWS", -1)
        return tv.load(path, cache=False, progress=False, **kw)


def _same(a: tv.Trace, b: tv.Trace) -> None:
    assert a.ranks == b.ranks
    for r in a.ranks:
        x, y = a.rank_data(r), b.rank_data(r)
        assert dataclasses.asdict(x.meta) == dataclasses.asdict(y.meta)
        for name in ("events", "gpu_args", "comms", "memory", "op_args"):
            fx, fy = getattr(x, name), getattr(y, name)
            # (categories compared in order too: assert_frame_equal's default)
            pd.testing.assert_frame_equal(fx, fy, check_exact=True, obj=f"rank {r} {name}")
            assert list(fx.columns) == list(fy.columns)


def _with_rank(src: Path, dst: Path, rank: int) -> Path:
    """``src`` written to ``dst`` with ``distributedInfo.rank`` set to ``rank``."""
    raw = src.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 64}
    return kb.write(dst, doc, gz=True)


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A folder of the real traces of MIXED, one rank each."""
    for i, src in enumerate(MIXED):
        _with_rank(src, tmp_path / "mixed" / f"r{i:02d}.json.gz", i)
    return tmp_path / "mixed"


@needs_scanner
def test_the_sample_is_read_in_one_batch_with_the_per_file_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _spy(monkeypatch)
    got = tv.load(SAMPLE, cache=False, progress=False)
    assert sizes == [8]
    before = _per_file(SAMPLE)
    assert sizes == [8]  # (the reference built no batch)
    _same(got, before)
    # The ranks' rows must be kept apart: their times overlap and they share correlation ids.
    e0, e1 = got.rank_data(0).events, got.rank_data(1).events
    assert e0["ts_ns"].min() < e1["ts_ns"].max() and e1["ts_ns"].min() < e0["ts_ns"].max()
    shared = np.intersect1d(e0["correlation"][e0["launch_eid"] >= 0], e1["correlation"][e1["launch_eid"] >= 0])
    assert len(shared) >= 10
    assert (e0["parent_eid"] >= 0).sum() > 100 and (e0["step"] >= 0).sum() > 100


@needs_scanner
@pytest.mark.filterwarnings("ignore::jupyter_traceview.errors.TraceviewWarning")  # (key_averages files)
@pytest.mark.parametrize("path", FOLDERS, ids=lambda p: p.name)
def test_real_traces_batched_equal_per_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _spy(monkeypatch)
    _same(tv.load(path, cache=False, progress=False), _per_file(path))
    assert sum(sizes) >= 1


@needs_scanner
def test_files_of_different_traces_in_one_batch(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _spy(monkeypatch)
    got = tv.load(mixed, cache=False, progress=False)
    assert sizes == [len(MIXED)]
    _same(got, _per_file(mixed))


@needs_scanner
def test_small_and_larger_files_and_several_batches(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {r: len(got.rank_data(r).events) for got in [_per_file(mixed)] for r in got.ranks}
    reference = _per_file(mixed)
    # Only the files of at most the median size are deferred; a batch is built as soon as
    # it holds more than one event (SmallFiles.full).
    cut = int(np.median(list(rows.values())))
    monkeypatch.setattr(batch, "MAX_ROWS", cut)
    monkeypatch.setattr(batch, "BATCH_ROWS", cut + 1)
    sizes = _spy(monkeypatch)
    got = tv.load(mixed, cache=False, progress=False)
    small = sum(1 for n in rows.values() if n <= cut)
    assert sum(sizes) == small < len(rows)
    assert len(sizes) >= 2
    _same(got, reference)


@needs_scanner
def test_a_bad_file_among_good_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    for src in sorted(SAMPLE.glob("*.json.gz")):
        shutil.copy(src, folder / src.name)
    bad = kb.write(folder / "worker3_step_12.zz.pt.trace.json", b'{"traceEvents": [{"ph": "X", "ts": 1,')
    sizes = _spy(monkeypatch)
    with pytest.raises(TraceFormatError) as raised:
        tv.load(folder, cache=False, progress=False)
    assert str(bad) in str(raised.value)
    with pytest.raises(TraceFormatError) as before:
        _per_file(folder)
    assert str(raised.value) == str(before.value)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tv.load(folder, cache=False, progress=False, on_error="skip")
    assert any(bad.name in str(w.message) and issubclass(w.category, TraceviewWarning) for w in caught)
    assert sizes[-1] == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(got, _per_file(folder, on_error="skip"))


@needs_scanner
def test_a_batch_that_fails_reads_its_files_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pending: Any, classifier: Any) -> Any:
        raise ValueError("a bug in the batched path")

    monkeypatch.setattr(kineto, "batch_tables", broken)
    _same(tv.load(SAMPLE, cache=False, progress=False), _per_file(SAMPLE))


@needs_scanner
def test_ids_that_cannot_be_keyed_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Correlation ids near 2**62: offsetting them per file would overflow int64.
    for r in (0, 1):
        big = 2**62 - 10 + r
        events = [
            kb.step(1, 0, 1000),
            *kb.launch("gemm", 10, 20, 300, corr=big),
            *kb.launch("gemm", 40, 320, 5, corr=3),
        ]
        kb.write(tmp_path / "run" / f"rank-{r}.json", kb.doc(events, rank=r, world_size=2))
    real = kineto.batch_tables
    unfit: list[bool] = []

    def spy(pending: Any, classifier: Any) -> Any:
        try:
            return real(pending, classifier)
        except batch.Unfit:
            unfit.append(True)
            raise

    monkeypatch.setattr(kineto, "batch_tables", spy)
    got = tv.load(tmp_path / "run", cache=False, progress=False)
    assert unfit == [True]
    _same(got, _per_file(tmp_path / "run"))
    assert got.rank_data(0).events["launch_eid"].max() >= 0


def test_without_the_scanner_files_are_read_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # TRACEVIEW_NATIVE=0: msgspec reads every file; nothing is deferred; the same tables.
    with_scanner = tv.load(SAMPLE, cache=False, progress=False)
    monkeypatch.setattr(kineto, "NATIVE_AVAILABLE", False)
    sizes = _spy(monkeypatch)
    _same(tv.load(SAMPLE, cache=False, progress=False), with_scanner)
    assert sizes == []


@needs_scanner
def test_batched_files_go_to_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = _spy(monkeypatch)
    cold = tv.load(SAMPLE, cache=tmp_path / "cache", progress=False)
    assert sizes == [8]
    cached = tv.load(SAMPLE, cache=tmp_path / "cache", progress=False)
    assert sizes == [8]  # (read from the cache: nothing parsed)
    _same(cached, cold)


@needs_scanner
def test_steps_nesting_and_launches_stay_within_their_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two ranks over the same times, one batch. Rank 0: steps 1 [0, 100) and 2 [100, 200) us;
    # a kernel launched at 150 runs at 250 (after every span): step 2, its launch's; a kernel
    # whose launch is not in the file, at 50: step 1 by its time. Rank 1: step 7 [1000, 1100);
    # a kernel at 50 without a launch (inside rank 0's step 1, not in any of rank 1's spans):
    # -1; a kernel launched at 1010 (correlation 1, as rank 0's) runs at 1200: step 7.
    kb.write(
        tmp_path / "run" / "rank-0.json",
        kb.doc(
            [
                kb.step(1, 0, 100),
                kb.step(2, 100, 100),
                kb.cpu_op("aten::mm", 140, 20),
                *kb.launch("gemm_a", 150, 250, 10, corr=1),
                kb.kernel("gemm_b", 50, 10, corr=99),
            ],
            rank=0,
            world_size=2,
        ),
    )
    kb.write(
        tmp_path / "run" / "rank-1.json",
        kb.doc(
            [
                kb.step(7, 1000, 100),
                kb.kernel("gemm_c", 50, 10, corr=98),
                *kb.launch("gemm_d", 1010, 1200, 10, corr=1),
            ],
            rank=1,
            world_size=2,
        ),
    )
    sizes = _spy(monkeypatch)
    got = tv.load(tmp_path / "run", cache=False, progress=False)
    assert sizes == [2]
    _same(got, _per_file(tmp_path / "run"))
    e0, e1 = got.rank_data(0).events, got.rank_data(1).events

    def row(e: pd.DataFrame, name: str) -> pd.Series:
        return e.loc[e["name"] == name].iloc[0]

    assert row(e0, "gemm_a")["step"] == 2 and row(e0, "gemm_b")["step"] == 1
    assert row(e1, "gemm_c")["step"] == -1 and row(e1, "gemm_d")["step"] == 7
    assert row(e0, "gemm_a")["launch_eid"] == row(e0, "cudaLaunchKernel")["eid"]
    assert row(e1, "gemm_d")["launch_eid"] == row(e1, "cudaLaunchKernel")["eid"]
    assert row(e0, "cudaLaunchKernel")["parent_eid"] == row(e0, "aten::mm")["eid"]
    assert row(e1, "cudaLaunchKernel")["parent_eid"] == row(e1, "ProfilerStep#7")["eid"]


@needs_scanner
def test_the_batch_builds_the_other_tables_when_first_read() -> None:
    """The events are built at load; the GPU arguments, collectives, memory records and
    operator arguments when first read, from threads at once and in any order, each rank its
    own file's (equal to the per-file path's, which builds them at load)."""
    from concurrent.futures import ThreadPoolExecutor

    from jupyter_traceview.model import rank_data

    got = tv.load(SAMPLE, cache=False, progress=False)
    datas = [got.rank_data(r) for r in got.ranks]
    later = ("gpu_args", "comms", "memory", "op_args")
    assert all(rank_data.built(d, "events") for d in datas)
    assert not any(rank_data.built(d, name) for d in datas for name in later)
    with ThreadPoolExecutor(8) as pool:
        tables = list(pool.map(lambda d: d.gpu_args, datas[::-1]))
    assert all(rank_data.built(d, "gpu_args") for d in datas)
    assert not any(rank_data.built(d, name) for d in datas for name in later[1:])
    assert [t is d.gpu_args for t, d in zip(tables, datas[::-1], strict=True)] == [True] * len(datas)
    _same(got, _per_file(SAMPLE))
