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
from jupyter_traceview.loading import cache_arrow, ingest, loader
from tests.loading.entries import entry_files, key_of, read_entry, rewrite_column, table_of, write_entry
from tests.loading.readers.test_reader_golden import _odd_trace, _real_traces
from tests.loading.test_cache_integrity import parses

DATA = Path(__file__).resolve().parents[1] / "data"
TABLES = ("events", "gpu_args", "comms", "op_args", "memory", "counters")


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
    """The hand-made file of odd inputs, its entry written streamed (as big ones are)."""
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
    """Replace rank 0's name column in every cache entry by ``change(column)``, with the entry's
    CRC made to match (so only the cache's own checks of the codes and categories stand)."""
    rewrite_column(cache, "events", "name", change)


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
        monkeypatch.setattr(cache_arrow, "_SET_CHECKED", 0)

    def doubled(column: pa.DictionaryArray) -> pa.DictionaryArray:
        names = column.dictionary.to_pylist()
        return pa.DictionaryArray.from_arrays(column.indices, pa.array([*names, names[0]], type=pa.large_string()))

    _rewrite_names(cache, doubled)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "repeated category")
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]


@pytest.mark.parametrize("table", TABLES)
def test_a_truncated_entry_is_a_miss_that_heals(
    table: str, folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """An entry file cut inside each table's stretch of its rank's stream."""
    cache, cold = filled
    for path in entry_files(cache):
        doc, _ = read_entry(path)
        start, length = doc["streams"][0]
        data = path.read_bytes()
        path.write_bytes(data[: start + length * (TABLES.index(table) + 1) // (len(TABLES) + 1)])
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), f"truncated {table}")
    assert len(seen) == 2


def test_an_entry_of_the_previous_format_is_rebuilt(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """An entry folder as the previous format left it (five Arrow files a rank and meta.json,
    no entry file) misses and is rewritten in this format; so does an entry file whose
    trailer names another format (its CRC valid)."""
    cache, cold = filled
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        path.unlink()
        for t in TABLES:
            with pa.OSFile(str(path.parent / f"r0.{t}.arrow"), "wb") as sink:
                table = table_of(batches[0], t)
                with pa.ipc.new_file(sink, table.schema) as writer:
                    writer.write_batch(table)
        (path.parent / "meta.json").write_text(json.dumps({"format": 5, "ranks": doc["ranks"]}))
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "old format")
    assert len(seen) == 2
    for path in entry_files(cache):
        assert sorted(p.name for p in path.parent.iterdir()) == [tv_cache.ENTRY_FILE]  # rewritten, old files gone
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=cache), "rewritten")
    assert seen == []
    entries = {path: read_entry(path) for path in entry_files(cache)}
    monkeypatch.setattr(tv_cache, "ENTRY_FORMAT", tv_cache.ENTRY_FORMAT - 1)
    for path, (doc, batches) in entries.items():
        write_entry(path, doc, batches, sealed=True)
    monkeypatch.setattr(tv_cache, "ENTRY_FORMAT", tv_cache.ENTRY_FORMAT + 1)
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=cache), "previous format number")
    assert len(seen) == 2


@pytest.mark.parametrize("type_", [pa.int8(), pa.int16(), pa.int32()])
def test_dictionary_indices_become_codes_with_nulls_as_minus_one(type_: pa.DataType) -> None:
    values = [5, None, 7, 8, None, 9, 1, 2, None, 4, 0, 3]
    for array in (pa.array(values, type_), pa.array(values, type_).slice(3), pa.array([None] * 3, type_)):
        got = cache_arrow._codes(array)
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


def test_classes_that_the_metadata_does_not_account_for_are_a_miss(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """The entry's metadata says it holds no classes while its events hold a gpu_class column
    (CRC made to match): a miss, parsed and rewritten."""
    cache, cold = filled
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        assert doc["classes"] is not None
        write_entry(path, {**doc, "classes": None}, batches)
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
    """cache._write_entry writes a small entry from memory, a big one streamed to its file
    (then read back mapped for its CRC): both give the same tables back, and the trailer's CRC
    is the CRC of the bytes before it."""
    if big:
        monkeypatch.setattr(tv_cache, "_MAP_BYTES", 0)
    written: list[str] = []
    real = tv_cache._write_entry

    def spy(path: str, batches: list[pa.RecordBatch], doc: dict[str, object], key: bytes) -> None:
        real(path, batches, doc, key)
        data = Path(path).read_bytes()
        crc = int.from_bytes(data[-16:-12], "little")
        assert crc == tv_cache._crc32(data[:-16])
        written.append(path)

    monkeypatch.setattr(tv_cache, "_write_entry", spy)
    cache = tmp_path / "cache"
    cold = tv.load(tv.sample_path(), cache=False)
    tv.load(tv.sample_path(), cache=cache)
    assert len(written) == len(cold.ranks)
    _no_parse(monkeypatch)
    assert_same_trace(cold, tv.load(tv.sample_path(), cache=cache), "streamed" if big else "in memory")


def test_categories_found_unique_are_remembered_by_their_texts_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """cache_arrow._unique remembers lists found free of repeats by their exact texts: a list met
    again is not checked again, one that differs by a repeat (or a slice of another) is."""
    monkeypatch.setattr(cache_arrow, "_UNIQUE", {})
    checked: list[int] = []
    real_set = set

    def counting_set(items: object) -> set[object]:
        checked.append(1)
        return real_set(items)  # type: ignore[call-overload]

    good = pa.array(["a", "b", "c"], type=pa.large_string())
    repeated = pa.array(["a", "b", "a"], type=pa.large_string())
    monkeypatch.setattr(cache_arrow, "set", counting_set, raising=False)
    assert cache_arrow._unique(good)
    assert cache_arrow._unique(pa.array(["a", "b", "c"], type=pa.large_string()))  # remembered: no set
    assert len(checked) == 1
    assert not cache_arrow._unique(repeated)
    assert not cache_arrow._unique(repeated)  # never remembered
    assert len(checked) == 3
    # Slices: checked as what they hold.
    assert cache_arrow._unique(pa.array(["x", "a", "b", "c"], type=pa.large_string()).slice(1))
    assert not cache_arrow._unique(pa.array(["a", "b", "a", "b"], type=pa.large_string()).slice(1))
    # Big lists (Arrow's hash): the same.
    monkeypatch.setattr(cache_arrow, "_SET_CHECKED", 0)
    assert not cache_arrow._unique(pa.array(["q", "r", "q"], type=pa.large_string()))
    assert cache_arrow._unique(pa.array(["q", "r", "s"], type=pa.large_string()))


def _as_int32(column: pa.Array) -> pa.Array:
    return column.cast(pa.int32())


def _as_floats(column: pa.Array) -> pa.Array:
    return column.cast(pa.float64())


def _plain_strings(column: pa.Array) -> pa.Array:
    return column.cast(pa.large_string())


def _missing_category(column: pa.DictionaryArray) -> pa.DictionaryArray:
    categories = column.dictionary.to_pylist()
    return pa.DictionaryArray.from_arrays(column.indices, pa.array([None, *categories[1:]], type=pa.large_string()))


def _int_categories(column: pa.DictionaryArray) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(column.indices, pa.array(range(len(column.dictionary)), pa.int64()))


@pytest.mark.parametrize(
    ("table", "column", "change"),
    [
        ("events", "ts_ns", _as_int32),  # another integer width
        ("events", "depth", _as_floats),  # another kind
        ("gpu_args", "pageable", _as_int32),
        ("events", "name", _plain_strings),  # strings, not categories
        ("comms", "collective", _missing_category),  # a category that is missing
        ("op_args", "input_type", _int_categories),  # categories that are not strings
    ],
)
def test_a_column_of_another_type_behind_a_valid_crc_is_a_miss(
    table: str,
    column: str,
    change: Callable[[pa.Array], pa.Array],
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    filled: tuple[Path, tv.Trace],
) -> None:
    """A column the schema types otherwise (the entry's CRC made to match): a miss at load,
    parsed and rewritten, not a frame of other dtypes for an analysis to trip on."""
    cache, cold = filled
    rewrite_column(cache, table, column, change)
    seen = parses(monkeypatch)
    hot = tv.load(folder, cache=cache)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]
    assert_same_trace(cold, hot, f"{table}.{column}")


def _drop(name: str) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    return lambda t: t.drop_columns([name])


def _renamed(t: pa.RecordBatch) -> pa.RecordBatch:
    return t.rename_columns([*t.schema.names[:-1], "other"])


def _reordered(t: pa.RecordBatch) -> pa.RecordBatch:
    return t.select([1, 0, *range(2, t.num_columns)])


def _extra(t: pa.RecordBatch) -> pa.RecordBatch:
    return t.append_column("extra", pa.array(np.zeros(t.num_rows, np.int64)))


@pytest.mark.parametrize(
    ("table", "change"),
    [
        ("events", _drop("ts_ns")),
        ("events", _drop("gpu_class")),  # (the metadata says the entry holds classes)
        ("memory", _drop("addr")),
        ("comms", _renamed),
        ("gpu_args", _reordered),
        ("op_args", _extra),
    ],
)
def test_columns_other_than_the_schemas_behind_a_valid_crc_are_a_miss(
    table: str,
    change: Callable[[pa.RecordBatch], pa.RecordBatch],
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    filled: tuple[Path, tv.Trace],
) -> None:
    cache, cold = filled
    from tests.loading.entries import rewrite_table

    rewrite_table(cache, table, change)
    seen = parses(monkeypatch)
    hot = tv.load(folder, cache=cache)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"]
    assert_same_trace(cold, hot, table)


def test_a_rank_batch_not_as_written_behind_a_valid_crc_is_a_miss(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """A rank batch of two rows, of a table too many, or with a table that is not a list of
    structs (each entry's CRC made to match): misses."""
    cache, cold = filled
    paths = entry_files(cache)
    for path, forge in zip(paths, ("two rows", "a table too many"), strict=True):
        doc, batches = read_entry(path)
        b = batches[0]
        if forge == "two rows":
            batches[0] = pa.concat_batches([b, b])
        else:
            batches[0] = b.append_column("more", b.column(0))
        write_entry(path, doc, batches)
    seen = parses(monkeypatch)
    assert_same_trace(cold, tv.load(folder, cache=cache), "forged batches")
    assert len(seen) == 2
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        b = batches[0]
        batches[0] = b.set_column(1, "gpu_args", table_of(b, "gpu_args").column(0))
        write_entry(path, doc, batches)
    seen.clear()
    assert_same_trace(cold, tv.load(folder, cache=cache), "a table not a list")
    assert len(seen) == 2


@pytest.mark.parametrize(
    ("table", "column"), [("events", "dur_ns"), ("gpu_args", "pageable"), ("gpu_args", "warps_per_sm")]
)
def test_missing_values_in_a_numeric_column_keep_its_dtype(
    table: str, column: str, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    """This module writes no missing numbers; in a forged entry (CRC made to match) they read
    as zeros, the column keeping the schema's dtype (not floats, not objects: nothing for an
    analysis to trip on)."""
    cache, cold = filled
    rewrite_column(cache, table, column, lambda c: pa.array([*c.to_pylist()[:-1], None], type=c.type), sealed=True)
    _no_parse(monkeypatch)
    hot = tv.load(filled[0].parent / "run", cache=cache)
    for r in cold.ranks:  # (each rank its own entry: all of them forged)
        want, got = getattr(cold.rank_data(r), table), getattr(hot.rank_data(r), table)
        assert len(want) and got[column].dtype == want[column].dtype
        assert got[column].iloc[-1] == 0
        assert_identical(want.iloc[:-1], got.iloc[:-1], f"{table} but its last row")


def test_layouts_are_remembered_by_the_schema_message_arrow_reads(filled: tuple[Path, tv.Trace]) -> None:
    """cache_arrow.schema_message gives exactly the bytes of a stream's schema message (Arrow reads
    them back as the batch's schema), None for what is not a stream of that form; a layout
    is remembered under those bytes only."""
    cache, _ = filled
    for path in entry_files(cache):
        buffer = pa.py_buffer(path.read_bytes())
        doc = tv_cache._entry_doc(buffer, key_of(path))
        start, length = doc["streams"][0]
        stream = buffer.slice(start, length)
        key = cache_arrow.schema_message(stream)
        assert key is not None
        batch = pa.ipc.open_stream(stream).read_next_batch()
        assert pa.ipc.read_schema(pa.py_buffer(key)).equals(batch.schema)
        assert cache_arrow._layout(batch, key) is cache_arrow._LAYOUTS[key]
        assert cache_arrow.schema_message(pa.py_buffer(b"\x00" * 16 + key)) is None
        assert cache_arrow.schema_message(pa.py_buffer(key[:-1])) is None
        assert cache_arrow.schema_message(pa.py_buffer(key[:4] + (-8).to_bytes(4, "little", signed=True))) is None
