"""engine="dask": same results as the in-process engines, errors reported the same way."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import summary
from tests import kineto_builder as kb

distributed = pytest.importorskip("distributed")


@pytest.fixture
def client(dask_client: object) -> object:
    return dask_client


def test_every_result_matches_the_serial_engine(client: object, dlrm: tv.Trace) -> None:
    trace = tv.load(tv.sample_path(), engine="dask", client=client, cache=False)
    assert type(trace).__name__ == "DaskTrace"
    assert trace.ranks == dlrm.ranks
    pd.testing.assert_frame_equal(summary(trace), summary(dlrm))
    pd.testing.assert_frame_equal(trace.iterations, dlrm.iterations)
    pd.testing.assert_frame_equal(trace.events(3), dlrm.events(3))
    pd.testing.assert_frame_equal(trace.comms(), dlrm.comms())
    assert len(trace) == len(dlrm)
    assert trace.meta(5) == dlrm.meta(5)
    t0 = dlrm.t0_ns
    assert trace.t0_ns == t0
    window = (t0 + 2_000_000, t0 + 9_000_000)
    pd.testing.assert_frame_equal(
        summary(trace, ranks=[1, 2], time_range=window), summary(dlrm, ranks=[1, 2], time_range=window)
    )
    custom = tv.Classifier().extend(communication=[r"gemm"])
    pd.testing.assert_frame_equal(summary(trace.with_classifier(custom)), summary(dlrm.with_classifier(custom)))
    assert "on dask: 2 worker(s)" in repr(trace)
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 9"):
        trace.meta(9)


def test_workers_use_the_cache(client: object, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = tv.load(tv.sample_path(), engine="dask", client=client, cache=cache)
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 8  # (entries: beside them, the sealing key)
    second = tv.load(tv.sample_path(), engine="dask", client=client, cache=cache)
    pd.testing.assert_frame_equal(summary(first), summary(second))


def test_errors_are_reported_as_in_process(client: object, tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", kb.doc([kb.step(1, 0, 100)], rank=0))
    (tmp_path / "rank-1.json").write_text('{"traceEvents": [')
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1}))
    with pytest.raises(tv.TraceFormatError, match=r"rank-1\.json.*truncated"):
        tv.load(tmp_path, engine="dask", client=client, cache=False)
    with pytest.warns(tv.TraceviewWarning) as record:
        trace = tv.load(tmp_path, engine="dask", client=client, cache=False, on_error="skip")
    messages = " | ".join(str(w.message) for w in record)
    assert "rank-1.json" in messages and "config.json" in messages
    assert trace.ranks == (0,)


def test_owned_local_cluster_closes_with_the_trace(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=0))
    trace = tv.load(tmp_path, engine="dask", cache=False)
    assert summary(trace)["kernels"].tolist() == [1]
    client = trace.client
    sub = trace.select(ranks=[0])
    del trace
    gc.collect()
    assert client.status == "running", "a derived trace still needs the cluster"
    sub.close()
    assert client.status in ("closed", "closing")


def test_client_is_only_for_dask() -> None:
    with pytest.raises(ValueError, match="client= is for engine='dask'"):
        tv.load(tv.sample_path(), client=object())


def test_a_worker_keeps_its_heap_between_files_as_a_pool_worker_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # (A nanny's MALLOC_TRIM_THRESHOLD_ would otherwise have glibc unmap every big block.)
    from jupyter_traceview.loading import dask_engine, heap
    from jupyter_traceview.loading.cache_key import ReadOptions
    from jupyter_traceview.loading.readers.files import TraceFile

    sizes: list[int] = []
    monkeypatch.setattr(heap, "before_task", sizes.append)
    path = tmp_path / "rank-0.json"
    kb.write(path, kb.doc([kb.step(1, 0, 100)], rank=0))
    tf = TraceFile(path, path.stat().st_size, path.stat().st_mtime_ns, 0)
    ranks = dask_engine._read_on_worker(tf, ReadOptions("raise", None), None, tv.Classifier())
    assert isinstance(ranks, list) and len(ranks) == 1
    assert sizes == [tf.size]
