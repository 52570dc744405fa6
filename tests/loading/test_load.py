"""Loading real traces: counts against the JSON itself, engines, cache, rank selection."""

from __future__ import annotations

import gzip
import json
import os
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import ingest
from jupyter_traceview.loading.readers import kineto
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS

KINETO_KIND = {
    "cpu_op": "cpu_op",
    "user_annotation": "user_annotation",
    "kernel": "kernel",
    "gpu_memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset",
    "cuda_runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver",
    "python_function": "python_function",
    "cuda_sync": "cuda_sync",
    "gpu_user_annotation": "gpu_user_annotation",
    "cpu_instant_event": "cpu_instant_event",
}


def raw_counts(path: Path) -> Counter[str]:
    """Events per category straight from the JSON, Kineto's pseudo-events excluded."""
    d = json.loads(gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes())
    events = d["traceEvents"] if isinstance(d, dict) else d
    out: Counter[str] = Counter()
    for e in events:
        if e.get("ph") not in ("X", "i") or e.get("cat") == "Trace" or e.get("pid") in ("Spans", "Traces"):
            continue
        out[KINETO_KIND.get(e.get("cat", ""), "other")] += 1
    return out


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_every_event_of_every_real_trace_is_read(name: str) -> None:
    folder = KINETO_FOLDERS[name]
    trace = tv.load(folder, cache=False)
    files = sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".gz")))
    assert len(trace.ranks) == len(files)
    for r in trace.ranks:
        ev = trace.events(r)
        expected = raw_counts(Path(trace.meta(r).path))
        got = Counter(ev["kind"].astype(str).tolist())
        assert got == expected
        assert ev["ts_ns"].is_monotonic_increasing
        assert (ev["dur_ns"] >= 0).all()
        # Every GPU activity with a correlation id found its launch call, where the call is in the trace.
        acts = ev[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"]) & (ev["correlation"] >= 0)]
        launch_corr = set(ev.loc[ev["kind"].isin(["cuda_runtime", "cuda_driver"]), "correlation"])
        linkable = acts["correlation"].isin(launch_corr)
        assert (acts.loc[linkable, "launch_eid"] >= 0).all()
        assert (acts.loc[~linkable, "launch_eid"] == -1).all()
        linked = acts[acts["launch_eid"] >= 0]
        assert (ev.loc[linked["launch_eid"], "correlation"].to_numpy() == linked["correlation"].to_numpy()).all()


def test_dlrm_sample(dlrm: tv.Trace) -> None:
    assert dlrm.ranks == tuple(range(8))
    for r in dlrm.ranks:
        meta = dlrm.meta(r)
        assert (meta.rank_source, meta.world_size, meta.backend) == ("distributedInfo", 8, "nccl")
    ev = dlrm.events(0)
    kernels = ev[ev["kind"] == "kernel"]
    comm = kernels[kernels["gpu_class"] == "communication"]
    assert len(comm) > 0 and comm["name"].astype(str).str.startswith("ncclKernel").all()
    assert sorted(kernels["stream"].unique().tolist()) == [7, 24, 84]
    acts = ev[ev["kind"].isin(["kernel", "gpu_memcpy", "gpu_memset"])]
    assert sorted(acts["stream"].unique().tolist()) == [7, 22, 24, 84]
    assert (acts["step"] == 10).all()
    assert dlrm.iterations["step"].tolist() == [10] * 8
    assert len(dlrm.comms(0)) > 0
    everything = dlrm.events()
    assert len(everything) == len(dlrm) and everything["rank"].nunique() == 8
    assert isinstance(everything["name"].dtype, pd.CategoricalDtype)


def test_h100_bert_ns_precision_and_defaults() -> None:
    trace = tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False)
    meta = trace.meta(0)
    assert meta.rank_source == "default" and meta.ts_precision == "ns"
    assert meta.base_time_ns == 1751410836000000000
    assert meta.extra["cupti_version"] is not None
    ev = trace.events(0)
    assert ev["ts_ns"].iloc[0] > 1_751_410_836 * 10**9  # absolute: base time added
    k = ev[ev["kind"] == "kernel"]
    assert (k["launch_eid"] >= 0).all()  # cudaLaunchKernel, cuLaunchKernel and cudaLaunchKernelExC all link


def test_cpu_only_trace() -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    assert trace.ranks == (34,)
    assert trace.meta(34).world_size == 300
    assert trace.events(34)["gpu_class"].isna().all()


def test_process_engine_matches_serial(tmp_path: Path) -> None:
    serial = tv.load(tv.sample_path(), cache=False, engine="serial")
    pooled = tv.load(tv.sample_path(), cache=False, engine="process")
    assert serial.ranks == pooled.ranks
    for r in serial.ranks:
        pd.testing.assert_frame_equal(serial.events(r), pooled.events(r))
        pd.testing.assert_frame_equal(serial.gpu_args(r), pooled.gpu_args(r))
        pd.testing.assert_frame_equal(serial.comms(r), pooled.comms(r))
        assert serial.meta(r) == pooled.meta(r)


def test_cache_round_trip_and_invalidation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "run"
    for r in range(2):
        kb.write(
            folder / f"rank-{r}.json.gz", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=r)
        )
    cache = tmp_path / "cache"
    first = tv.load(folder, cache=cache)
    assert len(entry_dirs(cache)) == 2

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(ingest, "parse_kineto", fail)
    second = tv.load(folder, cache=cache)
    for r in first.ranks:
        pd.testing.assert_frame_equal(first.events(r), second.events(r))
        pd.testing.assert_frame_equal(first.gpu_args(r), second.gpu_args(r))
        pd.testing.assert_frame_equal(first.comms(r), second.comms(r))
        assert first.meta(r) == second.meta(r)
    # A changed file misses the cache and is parsed again.
    monkeypatch.setattr(ingest, "parse_kineto", kineto.parse_kineto)
    target = folder / "rank-1.json.gz"
    kb.write(target, kb.doc([kb.step(2, 0, 100)], rank=1))
    os.utime(target, ns=(1, 1))
    third = tv.load(folder, cache=cache)
    assert third.iterations.set_index("rank").loc[1, "step"] == 2


def test_damaged_cache_entry_is_a_miss(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tv.load(tv.sample_path(), cache=cache)
    for f in cache.rglob("entry.tvc"):  # (cache.ENTRY_FILE)
        f.write_bytes(b"garbage")
    trace = tv.load(tv.sample_path(), cache=cache)
    assert len(trace.ranks) == 8


def entry_dirs(cache: Path) -> list[Path]:
    """The cache folder's entries (its folders: beside them, its sealing key)."""
    return sorted(p for p in cache.iterdir() if p.is_dir())


def test_clear_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tv.load(tv.sample_path(), cache=cache)
    assert tv.clear_cache(cache) > 0
    assert list(cache.iterdir()) == []


def test_rank_selection_parses_only_those_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = ingest._read_kineto  # (whole or in pieces, by the C scanner or msgspec)

    def spy(tf: ingest.TraceFile, *a: object, **k: object):
        parsed.append(tf.path.name)
        return real(tf, *a, **k)

    monkeypatch.setattr(ingest, "_read_kineto", spy)
    trace = tv.load(tv.sample_path(), ranks=[2, 5], cache=False)
    assert trace.ranks == (2, 5)
    assert sorted(parsed) == sorted(p for p in parsed if p.startswith(("worker2", "worker5")))
    assert len(parsed) == 2


def test_unknown_rank_selection(tmp_path: Path) -> None:
    with pytest.raises(tv.TraceFormatError, match="no rank among"):
        tv.load(tv.sample_path(), ranks=[42], cache=False)


def test_list_of_files_and_gzip_equivalence(tmp_path: Path) -> None:
    d = kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=0)
    plain = kb.write(tmp_path / "a" / "rank-0.json", d)
    gz = kb.write(tmp_path / "b" / "rank-1.json.gz", kb.doc(d["traceEvents"], rank=1))
    trace = tv.load([plain, gz], cache=False)
    assert trace.ranks == (0, 1)
    a, b = trace.events(0), trace.events(1)
    pd.testing.assert_frame_equal(a, b)


def test_display(dlrm: tv.Trace) -> None:
    text = repr(dlrm)
    assert "8 ranks [0-7]" in text and "kernels: 2,104" in text
    assert "iterations: 1  (step #10)" in text  # a count, and the step id labelled as such
    html = dlrm._repr_html_()
    assert "<table>" in html and "Tesla V100-SXM2-32GB" in html


def test_select(dlrm: tv.Trace) -> None:
    sub = dlrm.select(ranks=[1, 3])
    assert sub.ranks == (1, 3)
    with pytest.raises(tv.TraceSelectionError, match=r"unknown rank 9; the trace has: 0, 1"):
        dlrm.select(ranks=[9])
    with pytest.raises(tv.TraceSelectionError, match="unknown iteration 11; the trace has: 10"):
        dlrm.select(iterations=[11])
    t0 = dlrm.t0_ns
    win = dlrm.select(time_range=(t0 + 5_000_000, t0 + 6_000_000))
    assert win.window == (t0 + 5_000_000, t0 + 6_000_000)
    ev = win.events(0)
    assert ((ev["ts_ns"] < t0 + 6_000_000) & (ev["ts_ns"] + ev["dur_ns"] > t0 + 5_000_000)).all()
    assert len(ev) < len(dlrm.events(0))
    # eids stay those of the full table
    full = dlrm.events(0).set_index("eid")
    assert (full.loc[ev["eid"], "name"].to_numpy() == ev["name"].to_numpy()).all()


def test_returned_frames_do_not_alias_the_trace(dlrm: tv.Trace) -> None:
    ev = dlrm.events(0)
    ev.loc[0, "dur_ns"] = -1
    ev["extra"] = 1
    assert dlrm.events(0).loc[0, "dur_ns"] >= 0
    assert "extra" not in dlrm.events(0).columns


def test_a_cached_read_records_an_old_entrys_use_for_pruning(tmp_path: Path) -> None:
    """Reading an entry records its use (its file's modification time, which pruning orders
    by) when the last one recorded is older than cache._USE_RESOLUTION."""
    from jupyter_traceview.loading import cache as tv_cache

    cache = tmp_path / "cache"
    tv.load(tv.sample_path(), cache=cache)
    files = sorted(cache.rglob(tv_cache.ENTRY_FILE))
    old = time.time() - 2 * tv_cache._USE_RESOLUTION
    os.utime(files[0], (old, old))
    recent = time.time() - tv_cache._USE_RESOLUTION / 2
    os.utime(files[1], (recent, recent))
    tv.load(tv.sample_path(), cache=cache)
    assert files[0].stat().st_mtime > time.time() - 60, "used: recorded"
    assert files[1].stat().st_mtime == recent, "used within the resolution: left"


def test_cache_is_pruned_least_recently_used_first(tmp_path: Path) -> None:
    from jupyter_traceview.loading import cache as tv_cache

    cache = tmp_path / "cache"
    folder = tmp_path / "run"
    for r in range(3):
        kb.write(folder / f"rank-{r}.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=r))
    tv.load(folder, cache=cache)
    entries = entry_dirs(cache)
    assert len(entries) == 3
    sizes = {e: sum(f.stat().st_size for f in e.iterdir()) for e in entries}
    for age, e in enumerate(entries):  # entries[0] least recently used
        os.utime(e / tv_cache.ENTRY_FILE, (1000 + age, 1000 + age))
    freed = tv_cache.prune(cache, max_bytes=sum(sizes.values()) - 1)
    assert freed == sizes[entries[0]]
    assert entry_dirs(cache) == entries[1:]


def test_progress_is_the_one_protocol(tmp_path: Path) -> None:
    """``progress=`` takes a Progress, ``(done, total, label)``, the callable the dashboard's
    tabs and the report take: called before the first file and after each one, with no bar.
    Files read from the cache count as done from the start."""
    from jupyter_traceview.progress import Progress

    for r in range(3):
        kb.write(tmp_path / f"rank-{r}.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=r))
    seen: list[tuple[int, int, str]] = []
    report: Progress = lambda done, total, label: seen.append((done, total, label))  # noqa: E731
    cache = tmp_path / "cache"
    tv.load(tmp_path, cache=cache, progress=report, engine="serial")
    assert seen == [
        (0, 3, "loading traces"),
        (1, 3, "loading traces"),
        (2, 3, "loading traces"),
        (3, 3, "loading traces"),
    ]
    seen.clear()
    tv.load(tmp_path, cache=cache, progress=report)
    assert seen == [(3, 3, "loading traces")]  # every file came from the cache
    with pytest.raises(tv.OptionError, match=r"on_progress= was removed; pass the callable as progress="):
        tv.load(tmp_path, on_progress=lambda done, total: None)  # type: ignore[call-arg]
