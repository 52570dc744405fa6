"""The process pool: workers hand their tables back through shared memory (loading/handoff.py),
keep their heap between same-sized tasks (loading/heap.py), take the biggest files first."""

from __future__ import annotations

import dataclasses
import mmap
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import handoff, heap, plan, pool
from jupyter_traceview.loading.ingest import ReadOptions, read_file
from jupyter_traceview.loading.readers import files as files_mod
from jupyter_traceview.loading.readers.files import discover
from jupyter_traceview.model.rank_data import RankData

needs_shm = pytest.mark.skipif(handoff._shm() is None, reason="no writable /dev/shm here")


def _sample_ranks() -> list[RankData]:
    files, _ = discover(tv.sample_path())
    return read_file(files[0], ReadOptions(bad_events="raise", pid_map=None), None)


def _same(a: list[RankData], b: list[RankData]) -> None:
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert dataclasses.asdict(x.meta) == dataclasses.asdict(y.meta)
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            if isinstance(v, pd.DataFrame):
                pd.testing.assert_frame_equal(getattr(y, f.name), v, check_exact=True)


def _ours() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob(f"{handoff._PREFIX}{os.getpid()}-*")}


@needs_shm
def test_tables_handed_back_through_shared_memory_are_the_same_writable_tables() -> None:
    ranks = _sample_ranks()
    with handoff.scratch_folder() as folder:
        assert folder is not None and Path(folder).is_dir()
        handed = handoff.dump(ranks, folder)
        assert isinstance(handed, handoff.Handed)
        assert len(handed.head) < 100_000  # the arrays are in the file, not in the pickle
        assert Path(handed.path).stat().st_size >= sum(n for _, n in handed.spans)
        got = handoff.load(handed)
        assert not Path(handed.path).exists()  # unlinked once mapped
        assert os.listdir(folder) == []
    _same(got, ranks)
    # The arrays live in the mapping (not copies) and are writable, as unpickled ones are.
    ts = got[0].events["ts_ns"].to_numpy(copy=False)
    base = ts
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
    writable = np.frombuffer(base, dtype=np.uint8)
    writable[0] ^= 1
    writable[0] ^= 1
    assert not _ours()  # the folder is gone after the load


def test_without_shared_memory_the_object_itself_goes_back() -> None:
    ranks = _sample_ranks()
    assert handoff.dump(ranks, None) is ranks
    assert handoff.load(ranks) is ranks
    # Nothing to put out of band (no arrays): the object itself.
    assert handoff.dump({"a": 1}, "/nonexistent") == {"a": 1}


@needs_shm
def test_a_folder_removed_under_a_worker_sends_the_object_through_the_pipe() -> None:
    ranks = _sample_ranks()
    with handoff.scratch_folder() as folder:
        assert folder is not None
        os.rmdir(folder)  # a cancelled load removed it
        assert handoff.dump(ranks, folder) is ranks


@needs_shm
def test_non_contiguous_buffers_go_through_the_pipe() -> None:
    strided = np.arange(100, dtype=np.int64)[::2]
    with handoff.scratch_folder() as folder:
        out = handoff.dump(strided, folder)
        np.testing.assert_array_equal(handoff.load(out), strided)
        assert os.listdir(str(folder)) == []


@needs_shm
def test_what_a_load_leaves_unread_is_removed_with_its_folder() -> None:
    with handoff.scratch_folder() as folder:
        handed = handoff.dump(np.arange(1000), folder)
        assert Path(handed.path).exists()
    assert not Path(handed.path).exists() and not Path(str(folder)).exists()
    handoff.discard(handed)  # gone already: no error


@needs_shm
def test_folders_of_killed_loads_are_removed_by_the_next_load() -> None:
    # A process that made a scratch folder, then was killed (no cleanup ran).
    code = (
        "import os\n"
        "from jupyter_traceview.loading import handoff\n"
        "cm = handoff.scratch_folder(); folder = cm.__enter__()\n"
        "open(os.path.join(folder, 'x.bin'), 'wb').write(b'1' * 1000)\n"
        "print(folder, flush=True); os._exit(9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    left = Path(proc.stdout.strip())
    assert left.name.startswith(handoff._PREFIX) and left.is_dir()
    with handoff.scratch_folder():
        assert not left.exists()


@needs_shm
def test_this_processs_folders_left_by_a_late_write_are_removed_by_the_next_load() -> None:
    # A worker of a failed load wrote a file while the load removed its folder: the folder
    # stays, named with this (living) process's id. The next load removes it, but never the
    # folder of a load still running in another thread.
    with handoff.scratch_folder() as running:
        assert running is not None
        left = Path(handoff.tempfile.mkdtemp(prefix=f"{handoff._PREFIX}{os.getpid()}-", dir="/dev/shm"))
        (left / "late.bin").write_bytes(b"1" * 1000)
        with handoff.scratch_folder() as folder:
            assert folder is not None and Path(folder).is_dir()
            assert not left.exists()
            assert Path(running).is_dir()  # in use: kept
        assert not Path(folder).exists()
    assert not Path(running).exists() and not _ours()


@needs_shm
def test_a_pooled_load_hands_back_through_shared_memory_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[type] = []
    real = handoff.load

    def spy(result: Any) -> Any:
        handed.append(type(result))
        return real(result)

    monkeypatch.setattr(handoff, "load", spy)
    monkeypatch.setattr(pool, "pool_context", lambda **_: multiprocessing.get_context("fork"))
    pooled = tv.load(tv.sample_path(), cache=False, engine="process")
    serial = tv.load(tv.sample_path(), cache=False, engine="serial")
    assert handed and set(handed) == {handoff.Handed}
    for r in serial.ranks:
        _same([pooled.rank_data(r)], [serial.rank_data(r)])
    assert not _ours()


class _Libc:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def mallopt(self, *args: int) -> int:
        self.calls.append(("mallopt", *args))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


def test_a_worker_keeps_its_heap_between_like_tasks_and_gives_it_back_before_a_much_smaller_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _Libc()
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    monkeypatch.setattr(heap, "_held_for", 0)
    heap.before_task(100)  # the first task: keep freed memory from now on
    assert libc.calls == [("mallopt", heap._M_MMAP_THRESHOLD, heap._MMAP_THRESHOLD), ("mallopt", -1, 2**31 - 1)]
    libc.calls.clear()
    for size in (100, 60, 400, 250):  # like sizes (or bigger): kept
        heap.before_task(size)
    assert libc.calls == []
    heap.before_task(150)  # under half of the biggest since the last trim (400): given back
    assert libc.calls == [("malloc_trim", 0)]
    libc.calls.clear()
    heap.before_task(100)  # like the last one: kept
    assert libc.calls == []


def test_the_pool_takes_the_biggest_files_first(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = {f.name: f.stat().st_size for f in Path(tv.sample_path()).glob("*.json.gz")}
    assert len(set(sizes.values())) == len(sizes) == 8  # the sample's files differ in size
    submitted: list[str] = []
    real = pool.ProcessPoolExecutor

    class Recording(real):  # type: ignore[misc, valid-type]
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(args[0].path.name)
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(pool, "pool_context", lambda **_: multiprocessing.get_context("fork"))
    tv.load(tv.sample_path(), cache=False, engine="process")
    assert submitted == sorted(sizes, key=lambda name: -sizes[name])


def test_workers_get_the_classifier_s_patterns_not_its_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_traceview.model.classify import Classifier

    clf = Classifier().extend(communication=("my_allreduce",))
    clf._kernel_codes.update({f"kernel_{k}": 0 for k in range(5000)})  # a classifier used before
    sent: list[Classifier] = []
    real = pool.ProcessPoolExecutor

    class Recording(real):  # type: ignore[misc, valid-type]
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            sent.extend(a for a in args if isinstance(a, Classifier))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(pool, "pool_context", lambda **_: multiprocessing.get_context("fork"))
    pooled = tv.load(tv.sample_path(), cache=False, engine="process", classifier=clf)
    assert len(sent) == 8 and all(c == clf and "_kernel_codes" not in vars(c) for c in sent)
    serial = tv.load(tv.sample_path(), cache=False, engine="serial", classifier=clf)
    for r in serial.ranks:
        pd.testing.assert_series_equal(pooled.events(r)["gpu_class"], serial.events(r)["gpu_class"])


def test_prefetch_asks_the_os_in_the_background_and_ignores_what_it_cannot_read(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_bytes(b"{}" * 1000)
    for path in (f, tmp_path / "missing.json", tmp_path):
        thread = files_mod.prefetch(path)
        if thread is not None:  # (None: no posix_fadvise here)
            thread.join(timeout=60)
            assert not thread.is_alive()


def test_each_pool_task_first_asks_for_the_file_a_later_task_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "asked.txt"

    def record(path: Path) -> None:  # in the (forked) worker: appended to a file
        with open(log, "a") as fh:
            fh.write(f"{Path(path).name}\n")

    monkeypatch.setattr(pool, "prefetch", record)
    monkeypatch.setattr(pool, "pool_context", lambda **_: multiprocessing.get_context("fork"))
    found, _ = discover(tv.sample_path())
    workers = min(len(found), os.cpu_count() or 1)
    order = sorted(found, key=lambda tf: -plan.estimated_json_bytes([tf]))
    later = [tf.path.name for tf in order[workers:]]
    t = tv.load(tv.sample_path(), cache=False, engine="process")
    assert len(t.ranks) == len(found)
    asked = log.read_text().split() if log.exists() else []
    if workers == len(found):
        assert asked == []  # every file starts at once: nothing to ask ahead
        return
    # The first task (the biggest file) runs in the pool and asks for the file `workers` later;
    # no task asks for a file twice, or for one that starts at once.
    assert later[0] in asked
    assert len(asked) == len(set(asked)) and set(asked) <= set(later)
