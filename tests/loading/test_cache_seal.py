"""The seal of the cache's entries (``loading/cache_seal.py``): the writer checks a rank's
tables once and seals the entry; a load trusts a sealed entry's tables (its CRC still
compared) and reads them only when first used; anything not sealed by this cache folder's
key is a miss; a sealed entry whose tables would not pass the checks (only a forger with the
key makes one) fails with a clear error when first read, never a crash inside pandas."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading import cache_arrow, cache_seal
from tests.loading.entries import column_change, entry_files, read_entry, rewrite_table, with_table, write_entry
from tests.loading.test_cache_exact import TABLES, assert_same_trace
from tests.loading.test_cache_integrity import parses


def _bad_codes(t: pa.RecordBatch) -> pa.RecordBatch:
    c = t.column(t.schema.get_field_index("name"))
    codes = pa.array(np.full(len(c), len(c.dictionary) + 3, dtype=np.int8))
    return column_change("name", lambda _: pa.DictionaryArray.from_arrays(codes, c.dictionary, safe=False))(t)


def _repeated(t: pa.RecordBatch) -> pa.RecordBatch:
    c = t.column(t.schema.get_field_index("name"))
    names = c.dictionary.to_pylist()
    doubled = pa.array([*names, names[0]], type=pa.large_string())
    return column_change("name", lambda _: pa.DictionaryArray.from_arrays(c.indices, doubled))(t)


FORGERIES: dict[str, tuple[str, Callable[[pa.RecordBatch], pa.RecordBatch]]] = {
    "codes past the categories": ("events", _bad_codes),
    "a repeated category": ("events", _repeated),
    "another type": ("events", column_change("ts_ns", lambda c: c.cast(pa.int32()))),
    "strings, not categories": ("events", column_change("name", lambda c: c.cast(pa.large_string()))),
    "a column dropped": ("memory", lambda t: t.drop_columns(["addr"])),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_tables_not_sealed_are_a_miss(
    forgery: str, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """Tables this module would not write, with a valid CRC-32 but not sealed: a miss at load."""
    cache, cold = filled
    table, change = FORGERIES[forgery]
    rewrite_table(cache, table, change)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), forgery)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_tables_sealed_with_the_key_fail_clearly_when_first_read(
    forgery: str, folder: Path, filled: tuple[Path, tv.Trace]
) -> None:
    """The same tables sealed with the folder's key (a forger who read it): a hit, whose
    tables fail the checks when first read, with an error that names the entry and what to do."""
    cache, _ = filled
    table, change = FORGERIES[forgery]
    rewrite_table(cache, table, change, sealed=True)
    hot = tv.load(folder, cache=cache)
    with pytest.raises(tv.TraceviewError, match=r"entry\.tvc: a sealed cache entry .*tv\.clear_cache\(\)"):
        getattr(hot.rank_data(0), table)


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_the_writer_seals_no_tables_that_fail_its_checks(
    forgery: str, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the writer would seal passes the checks first: tables that do not are not written."""
    table, change = FORGERIES[forgery]
    real = cache_arrow.rank_batch

    def forged(d: object) -> pa.RecordBatch:
        batch = real(d)  # type: ignore[arg-type]
        rows = batch.column(TABLES.index(table)).values
        return with_table(batch, table, change(pa.RecordBatch.from_struct_array(rows)))

    monkeypatch.setattr(tv_cache, "rank_batch", forged)
    cache = tmp_path / "cache"
    tv.load(folder, cache=cache)
    assert entry_files(cache) == []


def test_an_entry_from_another_cache_folder_is_a_miss(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """Entries copied into another cache folder (another key) miss there, and are rewritten."""
    cache, cold = filled
    other = tmp_path / "other"
    tv.load(folder, cache=other)
    assert (other / cache_seal.SEAL_FILE).read_bytes() != (cache / cache_seal.SEAL_FILE).read_bytes()
    for path in entry_files(cache):
        shutil.copy(path, other / path.parent.name / path.name)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=other), "copied")
    assert len(seen) == 2
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=other), "rewritten")
    assert_same_trace(cold, tv.load(folder, cache=cache), "the original")
    assert seen == []


@pytest.mark.parametrize("key", ["removed", b"", b"short", bytes(40)])
def test_a_missing_or_bad_key_makes_misses_then_a_new_key(
    key: object, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    seal = cache / cache_seal.SEAL_FILE
    old = seal.read_bytes()
    seal.unlink()
    if isinstance(key, bytes):
        seal.write_bytes(key)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "no key")
    assert len(seen) == 2
    assert len(seal.read_bytes()) == 32 and seal.read_bytes() != old
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=cache), "new key")
    assert seen == []


def test_a_changed_seal_is_a_miss(folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]) -> None:
    """The seal (16 bytes of the trailer) of a valid entry replaced, the CRC made to match."""
    cache, cold = filled
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        write_entry(path, doc, batches)  # (sealed with another key)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "other seal")
    assert len(seen) == 2


def test_a_cached_load_reads_no_rank_until_a_table_is_used(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """A sealed entry's streams are read (and checked) when a rank's first table is built, once
    for its five tables."""
    cache, cold = filled
    reads: list[str] = []
    real = tv_cache._Stream._read

    def counting(self: tv_cache._Stream) -> object:
        reads.append(self._path)
        return real(self)

    monkeypatch.setattr(tv_cache._Stream, "_read", counting)
    hot = tv.load(folder, cache=cache)
    assert reads == []
    assert len(hot.rank_data(1).gpu_args) == len(cold.rank_data(1).gpu_args)
    assert len(reads) == 1
    assert_same_trace(cold, hot, "lazy")
    assert len(reads) == len(hot.ranks)


def test_writers_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    """Threads (as processes would) making a new folder's key at the same time all get the one
    that was linked in first; no file is left aside."""
    import threading

    folder = tmp_path / "new"
    folder.mkdir()
    start = threading.Barrier(8)
    keys: list[bytes | None] = []

    def make() -> None:
        start.wait()
        keys.append(cache_seal.seal_key(str(folder), create=True))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and keys[0] is not None and len(keys[0]) == 32
    assert keys[0] == (folder / cache_seal.SEAL_FILE).read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == [cache_seal.SEAL_FILE]


def test_without_a_readable_key_entries_miss_and_are_left_alone(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """A process that cannot read the folder's key (another user's, say) misses and deletes
    nothing; the writers who can read it still hit."""
    cache, cold = filled
    before = sorted(p.name for p in cache.iterdir())
    with monkeypatch.context() as m:
        m.setattr(tv_cache, "_seal_key", lambda cache_dir, create=False: None)
        seen = parses(m)
        assert_same_trace(cold, tv.load(folder, cache=cache), "no key")
        assert len(seen) == 2
    assert sorted(p.name for p in cache.iterdir()) == before
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "with the key")
    assert seen == []
