"""Per-rank results computed by worker processes (analysis._workers, through _memo.per_rank).

Pinned here: with the workers forced on (no event threshold), findings and the analyses it
reads give exactly what one process computes, and what they keep reads back the same; a
worker that dies, a function that raises there, an entry a worker cannot read all fall
back to this process (a dead worker with a warning, never a hang); a worker's warnings
are emitted here; below the threshold no process starts.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _workers
from jupyter_traceview.analysis._memo import per_rank, shared_rank_facts
from jupyter_traceview.analysis._workers import RankWorkers
from jupyter_traceview.analysis.summary import _summary_row
from jupyter_traceview.loading.cache import ENTRY_FILE
from jupyter_traceview.model import facts
from jupyter_traceview.model.trace import Trace
from tests.conftest import KINETO_FOLDERS


def _in_worker() -> bool:
    """Whether this runs in a worker process (forked from here, or from a forkserver, which
    imports this module anew: a pid kept at import would be the worker's own)."""
    return multiprocessing.parent_process() is not None


def _dies_in_worker(trace: Trace) -> dict[str, object]:
    if _in_worker():
        os._exit(3)
    return _summary_row(trace)


def _raises(trace: Trace) -> None:
    raise ValueError(f"no result for rank {trace.ranks[0]}")


def _raises_in_worker(trace: Trace) -> dict[str, object]:
    if _in_worker():
        raise ValueError("only in a worker")
    return _summary_row(trace)


def _warns(trace: Trace) -> int:
    where = "worker" if _in_worker() else "here"
    warnings.warn(f"rank {trace.ranks[0]} in process {where}", UserWarning, stacklevel=2)
    return int(trace.ranks[0])


def _where(trace: Trace) -> bool:
    return not _in_worker()


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any size of trace (the tests' traces are small), however busy the machine."""
    monkeypatch.setattr(_workers, "MIN_EVENTS", 0)
    monkeypatch.setattr(_workers, "idle_cores", lambda: 1)


@pytest.fixture
def cached(tmp_path: Path) -> Iterator[tv.Trace]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        yield tv.load(tv.sample_path(), cache=tmp_path, progress=False)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks"])
def test_findings_with_workers_are_the_one_process_findings(folder: str, tmp_path: Path, forced: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        want = tv.findings(tv.load(KINETO_FOLDERS[folder], cache=False, progress=False))
        first = tv.load(KINETO_FOLDERS[folder], cache=tmp_path, progress=False)
        calls: list[tuple[str, list[int]]] = []
        original = RankWorkers.submit

        def recording(self: RankWorkers, trace: Trace, fn: Any, args: Any, far: Any) -> Any:
            calls.append((fn.__name__, sorted(far)))
            return original(self, trace, fn, args, far)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(RankWorkers, "submit", recording)
            _same(tv.findings(first), want)  # computed, half of the ranks in a worker
        odd = [r for r in first.ranks if r % 2]
        assert ("rank_facts", odd) in calls and ("_summary_row", odd) in calls
        second = tv.load(KINETO_FOLDERS[folder], cache=tmp_path, progress=False)
        _same(tv.findings(second), want)  # read back from what the workers and this process kept


@pytest.mark.parametrize("workers", [1, 2])
def test_analyses_with_workers_are_the_one_process_ones(cached: tv.Trace, forced: None, workers: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        alone = {
            "summary": tv.summary(cached),
            "overlap": tv.kernel_overlap_stats(cached, per="rank"),
            "steps": tv.iteration_stats(cached),
            "launch": tv.kernel_launch_stats(cached, per="rank"),
        }
        pool = RankWorkers(workers)
        try:
            with shared_rank_facts(workers=pool):
                _same(tv.summary(cached), alone["summary"])
                _same(tv.kernel_overlap_stats(cached, per="rank"), alone["overlap"])
                _same(tv.iteration_stats(cached), alone["steps"])
                _same(tv.kernel_launch_stats(cached, per="rank"), alone["launch"])
                here = per_rank(cached, _where)
        finally:
            pool.close()
    # Rank r was computed by process r % (workers + 1), 0 being this one.
    assert here == {r: r % (workers + 1) == 0 for r in cached.ranks}


def test_a_worker_that_dies_leaves_the_work_here_with_a_warning(cached: tv.Trace, forced: None) -> None:
    want = cached.map_ranks(_summary_row)
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool), pytest.warns(tv.TraceviewWarning, match="worker process .* died"):
            got = per_rank(cached, _dies_in_worker)
        assert repr(got) == repr(want)
        # Later calls stay here (no new worker), and give the same values.
        with shared_rank_facts(workers=pool), warnings.catch_warnings():
            warnings.simplefilter("error")
            assert per_rank(cached, _where) == dict.fromkeys(cached.ranks, True)
    finally:
        pool.close()


def test_what_fails_in_a_worker_is_computed_here(cached: tv.Trace, forced: None, tmp_path: Path) -> None:
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool):
            # Raised here, as without workers.
            with pytest.raises(ValueError, match="no result for rank 0"):
                per_rank(cached, _raises)
            assert repr(per_rank(cached, _raises_in_worker)) == repr(cached.map_ranks(_summary_row))
    finally:
        pool.close()


def test_an_entry_a_worker_cannot_read_is_computed_here(tmp_path: Path, forced: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(tv.sample_path(), cache=tmp_path, progress=False)
    store = facts.store_of(trace.rank_data(1).events)
    assert store is not None and store.tables is not None
    entry, _ = store.tables
    # Damaged (a new file in its place: this process keeps the tables it mapped from the old one).
    damaged = Path(entry, "damaged")
    damaged.write_bytes(b"damaged")
    damaged.replace(Path(entry, ENTRY_FILE))
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool), warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning: a miss, not a dead worker
            here = per_rank(trace, _where)
    finally:
        pool.close()
    assert here[1] is True  # the damaged rank, computed here
    assert here[3] is False  # another odd rank, in the worker


def test_a_workers_warnings_are_emitted_here(cached: tv.Trace, forced: None) -> None:
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert per_rank(cached, _warns) == {r: r for r in cached.ranks}
    finally:
        pool.close()
    assert sorted(str(w.message) for w in caught if w.category is UserWarning) == sorted(
        f"rank {r} in process {'worker' if r % 2 else 'here'}" for r in cached.ranks
    )


def test_no_worker_below_the_threshold_or_without_a_cache(cached: tv.Trace, tmp_path: Path) -> None:
    pool = RankWorkers(1)  # MIN_EVENTS: far more than the sample's events
    with shared_rank_facts(workers=pool):
        assert per_rank(cached, _where) == dict.fromkeys(cached.ranks, True)
    assert pool._procs == []  # none started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        plain = tv.load(tv.sample_path(), cache=False, progress=False)
    pool = RankWorkers(1, min_events=0)
    with shared_rank_facts(workers=pool):
        assert per_rank(plain, _where) == dict.fromkeys(plain.ranks, True)  # no tables to read elsewhere
    assert pool._procs == []  # none started


def test_a_threaded_process_gets_its_workers_from_a_forkserver(cached: tv.Trace, forced: None) -> None:
    # A thread of ours running (as in a Jupyter kernel): no fork from here (see the loader's pool).
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool):
            here = per_rank(cached, _where)
            summary = tv.summary(cached)
        assert pool._procs[0].proc._popen.method == "forkserver"  # type: ignore[attr-defined]
    finally:
        pool.close()
        stop.set()
    assert here == {r: r % 2 == 0 for r in cached.ranks}
    _same(summary, tv.summary(cached))


def _slow(trace: Trace) -> int:
    if _in_worker():
        time.sleep(600)
    return int(trace.ranks[0])


def test_closing_while_a_worker_computes_does_not_wait_for_it(cached: tv.Trace, forced: None) -> None:
    # As when findings is interrupted (a KeyboardInterrupt while it waits): the answer is
    # not wanted any more, the worker is stopped at once.
    pool = RankWorkers(1)
    far = [r for r in cached.ranks if r % 2]
    tables = {r: _tables(cached, r) for r in far}
    pool.submit(cached, _slow, (), tables)
    procs = list(pool._procs)
    pool.close()
    # Killed, not asked to finish (which would wait for the 600 s task).
    assert [p.proc.exitcode for p in procs] == [-signal.SIGKILL]


def _tables(trace: tv.Trace, rank: int) -> tuple[str, int]:
    store = facts.store_of(trace.rank_data(rank).events)
    assert store is not None and store.tables is not None
    return store.tables


def _fails_here(trace: Trace) -> int:
    if not _in_worker() and trace.ranks[0] == 0:
        raise KeyboardInterrupt  # as if the user interrupted while this process computed its share
    return int(trace.ranks[0])


def test_a_call_that_fails_here_leaves_no_answer_for_the_next(cached: tv.Trace, forced: None) -> None:
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool):
            with pytest.raises(KeyboardInterrupt):
                per_rank(cached, _fails_here)
            # The workers' answers to the failed call are gone: this call gets its own.
            assert per_rank(cached, _where) == {r: r % 2 == 0 for r in cached.ranks}
    finally:
        pool.close()


def test_no_worker_without_an_idle_core(cached: tv.Trace, forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def busy() -> int:
        asked.append(1)
        return 0

    monkeypatch.setattr(_workers, "idle_cores", busy)
    pool = RankWorkers(1)
    with shared_rank_facts(workers=pool):
        assert per_rank(cached, _where) == dict.fromkeys(cached.ranks, True)
        assert per_rank(cached, _summary_row) == cached.map_ranks(_summary_row)
    assert pool._procs == [] and asked == [1]  # asked once, at the first call


def test_idle_cores_counts_this_process() -> None:
    assert _workers.idle_cores() <= (os.cpu_count() or 1) - 1


def _slow_in_worker(trace: Trace, started: str) -> tuple[int, bool]:
    """(rank, computed here); in a worker, it marks that it started, then takes its time."""
    if _in_worker():
        Path(started).touch()
        time.sleep(2)
    else:
        deadline = time.monotonic() + 120
        while not Path(started).exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # this process's share lasts until the worker computes its first rank
    return int(trace.ranks[0]), not _in_worker()


def test_ranks_a_worker_has_not_started_are_taken_over_here(
    cached: tv.Trace, forced: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker starts its first rank and is slow; this process, done with its share, takes
    # the worker's other ranks (from the end of its list) instead of waiting for them.
    monkeypatch.setattr(_workers, "STEAL_MIN_EVENTS", 0)
    started = str(tmp_path / "started")
    pool = RankWorkers(1)
    try:
        with shared_rank_facts(workers=pool), warnings.catch_warnings():
            warnings.simplefilter("error")
            got = per_rank(cached, _slow_in_worker, started)
            # The next call (nothing taken over) gets its own answers: none left over from this one.
            monkeypatch.setattr(_workers, "STEAL_MIN_EVENTS", 10**12)
            assert per_rank(cached, _where) == {r: r % 2 == 0 for r in cached.ranks}
    finally:
        pool.close()
    first_far = min(r for r in cached.ranks if r % 2)
    assert got == {r: (r, r != first_far) for r in cached.ranks}


def test_findings_with_ranks_taken_over_are_the_one_process_findings(
    tmp_path: Path, forced: None, monkeypatch: pytest.MonkeyPatch, dlrm_findings: pd.DataFrame
) -> None:
    monkeypatch.setattr(_workers, "STEAL_MIN_EVENTS", 0)
    want = dlrm_findings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        _same(tv.findings(tv.load(tv.sample_path(), cache=tmp_path, progress=False)), want)
        _same(tv.findings(tv.load(tv.sample_path(), cache=tmp_path, progress=False)), want)  # read back
