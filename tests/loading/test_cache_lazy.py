"""A cached load checks a rank's files and builds its pandas frames only when first read (issue 17, wave 9).

What a wrong lazy cache would get wrong: building at load anyway; building a table twice when
threads ask at once; a worker receiving a half-built rank; a damaged file noticed only when an
analysis reads it (too late to parse the trace again); the per-rank facts store lost on a
table built later; a classifier other than the stored one not applied.
"""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading import cache_arrow
from jupyter_traceview.model import facts
from jupyter_traceview.model.rank_data import Deferred, built
from tests.loading.entries import entry_files, read_entry
from tests.loading.test_cache_exact import TABLES, _rewrite_names, assert_identical, assert_same_trace
from tests.loading.test_cache_integrity import parses


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the column names of every frame the cache builds from now on."""
    calls: list[list[str]] = []
    real = cache_arrow.from_arrow

    def counting(names, rows):  # type: ignore[no-untyped-def]
        calls.append(list(names))
        return real(names, rows)

    monkeypatch.setattr(tv_cache, "from_arrow", counting)
    return calls


def test_a_cached_load_builds_no_frame_until_a_table_is_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    calls = _count_builds(monkeypatch)
    hot = tv.load(folder, cache=cache)
    assert calls == []
    assert not any(built(hot.rank_data(r), t) for r in hot.ranks for t in TABLES)
    events = hot.rank_data(1).events
    assert len(calls) == 1 and "ts_ns" in calls[0]
    assert built(hot.rank_data(1), "events") and not built(hot.rank_data(0), "events")
    assert not any(built(hot.rank_data(1), t) for t in TABLES if t != "events")
    assert hot.rank_data(1).events is events, "kept: built once"
    assert len(calls) == 1
    assert_same_trace(cold, hot, "lazy")
    assert len(calls) == len(hot.ranks) * len(TABLES)


def test_threads_reading_one_table_at_once_build_it_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, _ = filled
    started = threading.Barrier(8)
    real = cache_arrow.from_arrow
    calls: list[int] = []

    def slow(names, rows):  # type: ignore[no-untyped-def]
        calls.append(1)
        threading.Event().wait(0.05)  # every thread is asking meanwhile
        return real(names, rows)

    monkeypatch.setattr(tv_cache, "from_arrow", slow)
    hot = tv.load(folder, cache=cache)
    assert calls == []
    seen: list[object] = []

    def read() -> None:
        started.wait()
        seen.append(hot.rank_data(0).events)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(seen) == 8 and all(s is seen[0] for s in seen)


def test_a_deferred_table_is_built_once_under_contention() -> None:
    """The same, without the cache: a slow build asked for by many threads at once."""
    builds: list[int] = []
    gate = threading.Event()

    def build():  # type: ignore[no-untyped-def]
        builds.append(1)
        gate.wait(5)
        return tv.load(tv.sample_path(), ranks=[0], cache=False).events(0)

    table = Deferred(build)
    out: list[object] = []
    threads = [threading.Thread(target=lambda: out.append(table.get())) for _ in range(6)]
    for t in threads:
        t.start()
    threading.Event().wait(0.05)
    gate.set()
    for t in threads:
        t.join()
    assert builds == [1] and len(out) == 6 and all(o is out[0] for o in out)


def test_a_rank_not_built_yet_pickles_with_its_tables(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """What a worker process receives: every table built, equal to the parse's; no Deferred."""
    cache, cold = filled
    hot = tv.load(folder, cache=cache)
    d = hot.rank_data(0)
    assert not built(d, "events")
    back = pickle.loads(pickle.dumps(d))
    assert not any(isinstance(v, Deferred) for v in vars(back).values())
    for t in TABLES:
        assert_identical(getattr(cold.rank_data(0), t), getattr(back, t), f"unpickled {t}")


@pytest.mark.parametrize("damage", ["flipped bytes", "bad codes behind a valid CRC"])
def test_a_damaged_file_is_a_miss_at_load_before_any_table_is_read(
    damage: str, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    if damage == "flipped bytes":
        for target in entry_files(cache):
            # A byte of a table an analysis may never read (gpu_args, the second of the rank's stream).
            doc, _ = read_entry(target)
            start, length = doc["streams"][0]
            data = bytearray(target.read_bytes())
            data[start + length // 2] ^= 0xFF
            target.write_bytes(bytes(data))
    else:
        import numpy as np
        import pyarrow as pa

        _rewrite_names(
            cache,
            lambda column: pa.DictionaryArray.from_arrays(
                pa.array(np.full(len(column), len(column.dictionary), dtype=np.int8)), column.dictionary, safe=False
            ),
        )
    seen = parses(monkeypatch)
    hot = tv.load(folder, cache=cache)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"], "the damage was found by the load, not by a later read"
    assert_same_trace(cold, hot, damage)


def test_the_facts_store_is_attached_to_an_events_table_built_later(
    folder: Path, filled: tuple[Path, tv.Trace]
) -> None:
    cache, _ = filled
    hot = tv.load(folder, cache=cache)
    assert not built(hot.rank_data(0), "events")
    store = facts.store_of(hot.rank_data(0).events)
    assert store is not None and store.path.endswith("r0.facts")
    assert facts.store_of(hot.select(ranks=[1]).rank_data(1).events) is not None, "a rank renumbered or narrowed to"


def test_another_classifier_classifies_the_cached_events_when_they_are_built(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, _ = filled
    clf = tv.Classifier().extend(communication=["gemm_1"])
    cold = tv.load(folder, cache=False, classifier=clf)
    calls = _count_builds(monkeypatch)
    hot = tv.load(folder, cache=cache, classifier=clf)
    assert calls == []
    assert_same_trace(cold, hot, "other classifier")
    assert set(hot.events(1).query("name == 'gemm_1'")["gpu_class"]) == {"communication"}
