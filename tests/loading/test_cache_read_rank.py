"""``cache.read_rank``: one rank of an entry, for a process other than the loader's (the
findings' worker processes, analysis/_workers.py).

It gives exactly the tables the loader gave that rank (from the entry, with the metadata
handed in, classified by the classifier handed in), and None, leaving the entry alone, for a
missing, damaged or foreign entry.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading.cache import ENTRY_FILE, read_rank
from jupyter_traceview.model import facts
from tests.loading.entries import read_entry, write_entry
from tests.loading.test_cache_exact import TABLES, assert_identical


@pytest.fixture
def cached(tmp_path: Path) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(tv.sample_path(), cache=tmp_path, progress=False)


def _where(trace: tv.Trace, rank: int) -> tuple[str, int]:
    store = facts.store_of(trace.rank_data(rank).events)
    assert store is not None and store.tables is not None
    return store.tables


def test_the_loaders_tables(cached: tv.Trace) -> None:
    for r in cached.ranks:
        entry, index = _where(cached, r)
        d = read_rank(entry, index, cached.meta(r), classifier=cached.classifier)
        assert d is not None and d.meta is cached.meta(r)
        for name in TABLES:
            assert_identical(getattr(d, name), getattr(cached.rank_data(r), name), f"rank {r} {name}")


def test_another_classifier_classifies_again(cached: tv.Trace) -> None:
    entry, index = _where(cached, 0)
    other = tv.Classifier(communication=(r"^volta_",))  # every volta GEMM is now communication
    d = read_rank(entry, index, cached.meta(0), classifier=other)
    assert d is not None
    want = tv.load(tv.sample_path(), cache=False, progress=False, ranks=[0], classifier=other)
    assert_identical(d.events, want.rank_data(0).events, "events")


def test_missing_damaged_or_foreign_entries_are_none_and_left_alone(cached: tv.Trace, tmp_path: Path) -> None:
    entry, index = _where(cached, 1)
    meta = cached.meta(1)
    assert read_rank(str(tmp_path / "no such entry"), index, meta, classifier=cached.classifier) is None
    path = Path(entry, ENTRY_FILE)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # truncated: its CRC no longer matches
    assert read_rank(entry, index, meta, classifier=cached.classifier) is None
    assert path.exists()  # left as it is (the loader's read deletes a damaged entry)
    path.write_bytes(good)
    doc, batches = read_entry(path)
    write_entry(path, doc, batches)  # not sealed: not this module's
    assert read_rank(entry, index, meta, classifier=cached.classifier) is None
    with pytest.MonkeyPatch.context() as m:  # a valid entry of another format
        m.setattr(tv_cache, "ENTRY_FORMAT", 999)
        write_entry(path, doc, batches, sealed=True)
    assert read_rank(entry, index, meta, classifier=cached.classifier) is None
    path.write_bytes(b"not an entry")
    assert read_rank(entry, index, meta, classifier=cached.classifier) is None
    assert read_rank(entry, index + 1, meta, classifier=cached.classifier) is None  # no such rank
    path.write_bytes(good)
    renumbered = dataclasses.replace(meta, rank=99)
    d = read_rank(entry, index, renumbered, classifier=cached.classifier)
    assert d is not None and d.meta.rank == 99  # the metadata handed in, as the loader renumbered it
