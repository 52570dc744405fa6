"""A cached load gives exactly the tables a parse gives, on every trace we have (issue 17, wave 5).

The cache reads tables through a faster path than pandas' constructors (shared categorical
dtypes, categories wrapped as Arrow holds them, frames assembled from blocks): every column,
dtype, categorical code width, category list and order, the categories' own dtype, the column
index and the metadata must come out as the parse built them. Damaged files stay misses.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading import ingest, loader
from tests.loading.readers.test_reader_golden import _odd_trace, _real_traces
from tests.loading.test_cache_integrity import entries, parses

DATA = Path(__file__).resolve().parents[1] / "data"
TABLES = ("events", "gpu_args", "comms", "op_args", "memory")


def _traces() -> dict[str, Path]:
    found = dict(_real_traces())
    found.update({f"nsys_sqlite/{p.name}": p for p in sorted((DATA / "nsys_sqlite").glob("*.sqlite"))})
    return found


def assert_identical(a: pd.DataFrame, b: pd.DataFrame, where: str) -> None:
    """Same columns (names, order, index dtype), same index, and per column the same dtype and values."""
    assert list(a.columns) == list(b.columns), where
    assert a.columns.dtype == b.columns.dtype, where
    pd.testing.assert_index_equal(a.index, b.index, exact=True, obj=where)
    for col in a.columns:
        x, y = a[col], b[col]
        at = f"{where}.{col}"
        assert x.dtype == y.dtype, at
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert x.cat.ordered == y.cat.ordered, at
            assert x.cat.codes.dtype == y.cat.codes.dtype, at
            np.testing.assert_array_equal(x.cat.codes.to_numpy(), y.cat.codes.to_numpy(), err_msg=at)
            assert x.cat.categories.dtype == y.cat.categories.dtype, at
            assert type(x.cat.categories.array) is type(y.cat.categories.array), at
            assert x.cat.categories.tolist() == y.cat.categories.tolist(), at
        else:
            np.testing.assert_array_equal(x.to_numpy(), y.to_numpy(), err_msg=at, strict=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)


def assert_same_trace(cold: tv.Trace, hot: tv.Trace, name: str) -> None:
    assert cold.ranks == hot.ranks, name
    for r in cold.ranks:
        c, h = cold.rank_data(r), hot.rank_data(r)
        assert dataclasses.asdict(c.meta) == dataclasses.asdict(h.meta), f"{name} rank {r}: metadata"
        for t in TABLES:
            assert_identical(getattr(c, t), getattr(h, t), f"{name} rank {r} {t}")


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed: the cache missed")

    monkeypatch.setattr(loader, "read_file", refuse)
    monkeypatch.setattr(ingest.SmallFiles, "read", refuse)  # (a serial load's files)


@pytest.mark.parametrize("name", sorted(_traces()))
def test_a_cached_load_gives_exactly_the_parsed_tables(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _traces()[name]
    cache = tmp_path / "cache"
    cold = tv.load(path, cache=False)
    tv.load(path, cache=cache)  # fills the cache
    _no_parse(monkeypatch)
    assert_same_trace(cold, tv.load(path, cache=cache), name)


@pytest.mark.filterwarnings("ignore:.*malformed events were dropped")
def test_odd_inputs_and_memory_mapped_files_read_back_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hand-made file of odd inputs, with every Arrow file memory-mapped (as big ones are)."""
    path = _odd_trace(tmp_path)
    cache = tmp_path / "cache"
    cold = tv.load(path, cache=False, bad_events="drop")
    tv.load(path, cache=cache, bad_events="drop")
    monkeypatch.setattr(tv_cache, "_MAP_BYTES", 0)
    _no_parse(monkeypatch)
    assert_same_trace(cold, tv.load(path, cache=cache, bad_events="drop"), "odd")


def test_the_sample_twice_from_one_cache_shares_dtypes_and_stays_exact(tmp_path: Path) -> None:
    """A second cached load reuses the dtypes of the first: still every table exactly."""
    cache = tmp_path / "cache"
    cold = tv.load(tv.sample_path(), cache=False)
    tv.load(tv.sample_path(), cache=cache)
    first = tv.load(tv.sample_path(), cache=cache)
    second = tv.load(tv.sample_path(), cache=cache)
    assert_same_trace(cold, second, "sample")
    assert first.events(0)["kind"].dtype is second.events(0)["kind"].dtype
    for r in cold.ranks:
        assert_identical(cold.events(r), second.events(r), f"sample rank {r} classified events")


def _rewrite_names(cache: Path, change: Callable[[pa.DictionaryArray], pa.DictionaryArray]) -> None:
    """Replace rank 0's name column in every cache entry by ``change(column)``, with meta.json's
    CRC made to match (so only the cache's own checks of the codes and categories stand)."""
    for entry in entries(cache):
        target = entry / "r0.events.arrow"
        batch = pa.ipc.open_file(pa.py_buffer(target.read_bytes())).get_batch(0)
        i = batch.schema.get_field_index("name")
        batch = batch.set_column(i, "name", change(batch.column(i)))
        with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        doc = json.loads((entry / "meta.json").read_text())
        doc["crc32"]["r0.events.arrow"] = tv_cache._crc32(target.read_bytes())
        (entry / "meta.json").write_text(json.dumps(doc))


def test_codes_out_of_range_behind_a_valid_crc_are_a_miss_not_a_crash(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """An Arrow file whose name codes point past its categories, with meta.json's CRC made to match."""
    cache, cold = filled
    _rewrite_names(
        cache,
        lambda column: pa.DictionaryArray.from_arrays(
            pa.array(np.full(len(column), len(column.dictionary) + 3, dtype=np.int8)), column.dictionary, safe=False
        ),
    )
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "bad codes")
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=cache), "rewritten")
    assert seen == []


@pytest.mark.parametrize("by_set", [True, False])
def test_a_repeated_category_behind_a_valid_crc_is_a_miss(
    by_set: bool, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """A names dictionary that repeats a category (meta.json's CRC made to match): a miss,
    parsed and rewritten, not a dtype with duplicate categories (found by a set, or by Arrow
    for big dictionaries)."""
    cache, cold = filled
    if not by_set:
        monkeypatch.setattr(tv_cache, "_SET_CHECKED", 0)

    def doubled(column: pa.DictionaryArray) -> pa.DictionaryArray:
        names = column.dictionary.to_pylist()
        return pa.DictionaryArray.from_arrays(column.indices, pa.array([*names, names[0]], type=pa.large_string()))

    _rewrite_names(cache, doubled)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "repeated category")
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]


@pytest.mark.parametrize("table", TABLES)
def test_a_truncated_arrow_file_is_a_miss_that_heals(
    table: str, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for entry in entries(cache):
        target = entry / f"r0.{table}.arrow"
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), f"truncated {table}")
    assert len(seen) == 2


def test_an_entry_of_the_previous_format_is_rebuilt(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for entry in entries(cache):
        doc = json.loads((entry / "meta.json").read_text())
        (entry / "meta.json").write_text(json.dumps({**doc, "format": tv_cache.ENTRY_FORMAT - 1}))
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "old format")
    assert len(seen) == 2


@pytest.mark.parametrize("type_", [pa.int8(), pa.int16(), pa.int32()])
def test_dictionary_indices_become_codes_with_nulls_as_minus_one(type_: pa.DataType) -> None:
    values = [5, None, 7, 8, None, 9, 1, 2, None, 4, 0, 3]
    for array in (pa.array(values, type_), pa.array(values, type_).slice(3), pa.array([None] * 3, type_)):
        got = tv_cache._codes(array)
        want = np.array([-1 if v is None else v for v in array.to_pylist()], dtype=type_.to_pandas_dtype())
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------ the classes kept (issue 17, wave 6)
def test_an_equal_classifier_takes_the_stored_classes(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """A cached load with the classifier that wrote the entry (or an equal one) classifies
    nothing: the gpu_class column is the stored one, exactly the parsed trace's."""
    cache, cold = filled

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("classified again")

    _no_parse(monkeypatch)
    monkeypatch.setattr(tv.Classifier, "classify_column", refuse)
    assert_same_trace(cold, tv.load(folder, cache=cache, classifier=tv.Classifier()), "equal classifier")


def test_another_classifier_classifies_again_from_the_same_entry(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """Other patterns: the entry is still a hit (not parsed), its classes are computed anew and
    equal a parse with those patterns; the entry keeps the first classifier's classes."""
    cache, cold_default = filled
    other = tv.Classifier().extend(communication=["gemm_1"])
    cold = tv.load(folder, cache=False, classifier=other)
    assert (cold.events(1)["gpu_class"] == "communication").sum() == 1  # the patterns matter here
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache, classifier=other), "other classifier")
    assert_same_trace(cold_default, tv.load(folder, cache=cache), "default again")
    assert seen == []


def test_classes_that_meta_json_does_not_account_for_are_a_miss(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """meta.json says the entry holds no classes while its events hold a gpu_class column (CRC
    made to match): a miss, parsed and rewritten."""
    cache, cold = filled
    for entry in entries(cache):
        doc = json.loads((entry / "meta.json").read_text())
        assert doc["classes"] is not None
        (entry / "meta.json").write_text(json.dumps({**doc, "classes": None}))
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "classes dropped")
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]


def test_write_wants_the_classifier_of_classified_ranks(tmp_path: Path) -> None:
    trace = tv.load(tv.sample_path(), cache=False, ranks=[0])
    with pytest.raises(ValueError, match="classifier"):
        tv_cache.write(tmp_path, "k", [trace.rank_data(0)], classifier=None)


@pytest.mark.parametrize("big", [False, True])
def test_tables_written_in_memory_or_streamed_read_back_exactly(
    big: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cache._write_batch writes a small table from memory, a big one streamed to its file
    (then read back mapped for its CRC): both give the same tables back."""
    if big:
        monkeypatch.setattr(tv_cache, "_MAP_BYTES", 0)
    written: list[int] = []
    real = tv_cache._write_batch

    def spy(path: str, batch: pa.RecordBatch) -> int:
        crc = real(path, batch)
        assert crc == tv_cache._crc32(Path(path).read_bytes())
        written.append(crc)
        return crc

    monkeypatch.setattr(tv_cache, "_write_batch", spy)
    cache = tmp_path / "cache"
    cold = tv.load(tv.sample_path(), cache=False)
    tv.load(tv.sample_path(), cache=cache)
    assert len(written) == len(cold.ranks) * len(TABLES)
    _no_parse(monkeypatch)
    assert_same_trace(cold, tv.load(tv.sample_path(), cache=cache), "streamed" if big else "in memory")


def test_categories_found_unique_are_remembered_by_their_texts_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """cache._unique remembers lists found free of repeats by their exact texts: a list met
    again is not checked again, one that differs by a repeat (or a slice of another) is."""
    monkeypatch.setattr(tv_cache, "_UNIQUE", set())
    checked: list[int] = []
    real_set = set

    def counting_set(items: object) -> set[object]:
        checked.append(1)
        return real_set(items)  # type: ignore[call-overload]

    good = pa.array(["a", "b", "c"], type=pa.large_string())
    repeated = pa.array(["a", "b", "a"], type=pa.large_string())
    monkeypatch.setattr(tv_cache, "set", counting_set, raising=False)
    assert tv_cache._unique(good)
    assert tv_cache._unique(pa.array(["a", "b", "c"], type=pa.large_string()))  # remembered: no set
    assert len(checked) == 1
    assert not tv_cache._unique(repeated)
    assert not tv_cache._unique(repeated)  # never remembered
    assert len(checked) == 3
    # Slices: checked as what they hold.
    assert tv_cache._unique(pa.array(["x", "a", "b", "c"], type=pa.large_string()).slice(1))
    assert not tv_cache._unique(pa.array(["a", "b", "a", "b"], type=pa.large_string()).slice(1))
    # Big lists (Arrow's hash): the same.
    monkeypatch.setattr(tv_cache, "_SET_CHECKED", 0)
    assert not tv_cache._unique(pa.array(["q", "r", "q"], type=pa.large_string()))
    assert tv_cache._unique(pa.array(["q", "r", "s"], type=pa.large_string()))
