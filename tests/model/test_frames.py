"""Frame building helpers (model/frames.py) and the vectorised kernel classification."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.model import frames
from jupyter_traceview.model.classify import Classifier
from jupyter_traceview.model.schema import KIND_CATEGORIES, categorical
from tests.loading.test_cache_exact import assert_identical


def _plain_categorical(codes: list[int], categories: list[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype="str"))


def test_category_dtype_is_shared_and_equal_to_the_plain_one() -> None:
    a = frames.category_dtype(["b", "a"])
    assert frames.category_dtype(["b", "a"]) is a
    assert a == pd.CategoricalDtype(pd.Index(["b", "a"], dtype="str"), ordered=False)
    assert a.categories.tolist() == ["b", "a"]  # order kept, not sorted
    assert a.categories.dtype == pd.Index([], dtype="str").dtype
    assert frames.category_dtype(["a", "b"]) is not a


def test_category_dtype_keeps_non_str_lists_apart() -> None:
    # 1 == True == 1.0 as dict keys: such lists are never shared.
    assert frames.category_dtype([1]).categories.tolist() == ["1"]
    assert frames.category_dtype([True]).categories.tolist() == ["True"]
    assert frames.category_dtype([1.0]).categories.tolist() == ["1.0"]


@pytest.mark.parametrize("bad", [["a", "a"], ["a", None]])
def test_category_dtype_refuses_what_pandas_refuses(bad: list[object]) -> None:
    with pytest.raises(ValueError):
        frames.category_dtype(bad)


@pytest.mark.parametrize("fastpath", [True, False])
def test_checked_dtypes_equal_the_plain_ones(fastpath: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dtype whose categories the caller checked (pandas' private constructor, or the plain
    one where it is missing) equals pandas' and looks categories up by value."""
    if not fastpath:
        monkeypatch.setattr(frames, "_from_fastpath", None)
    monkeypatch.setattr(frames, "_dtypes", {})
    cats = ["b", "a", "é", "\u4e2d", ""]
    for dtype in (frames.category_dtype(cats), frames.checked_dtype(pd.Index(cats, dtype="str"), True)):
        want = pd.CategoricalDtype(pd.Index(cats, dtype="str"), ordered=False)
        assert dtype == want and hash(dtype) == hash(want)
        assert dtype.categories.dtype == want.categories.dtype and dtype.ordered is False
        assert dtype.categories.is_unique and dtype.categories.get_loc("é") == 2
        assert dtype.categories.get_indexer(["a", "x", "é"]).tolist() == [1, -1, 2]
        assert pd.Categorical(["a", "é", "a"], dtype=dtype).codes.tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match="unique"):
        frames.checked_dtype(pd.Index(["a", "a"], dtype="str"), False)


def test_the_shared_dtypes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "_dtypes", {})
    monkeypatch.setattr(frames, "_held", 0)
    monkeypatch.setattr(frames, "_MAX_HELD", 5)
    frames.category_dtype(["a", "b", "c"])
    frames.category_dtype(["d", "e"])
    assert frames._held == 5 and len(frames._dtypes) == 2
    frames.category_dtype(["f"])  # over the bound: the store starts again
    assert frames._held == 1 and list(frames._dtypes) == [("f",)]
    big = frames.category_dtype(list("ghijklm"))  # bigger than the bound: built, not kept
    assert big.categories.tolist() == list("ghijklm") and ("g", "h", "i", "j", "k", "l", "m") not in frames._dtypes


@pytest.mark.filterwarnings("ignore:Constructing a Categorical with a dtype and values containing")
def test_categorical_matches_the_plain_constructors() -> None:
    for codes, cats in (([0, 1, -1, 1], ["x", "y"]), ([], []), ([2, 0], ["é", "\u4e2d", "a b"])):
        got = categorical(codes=np.array(codes, dtype=np.int32), categories=cats)
        want = _plain_categorical(codes, cats)
        assert got.dtype == want.dtype and got.codes.dtype == want.codes.dtype
        np.testing.assert_array_equal(got.codes, want.codes)
    cases: list[tuple[list[object], list[object] | None]] = [
        (["b", None, "a", "b", ""], None),
        (["b", None, "zz", "a"], ["b", "a"]),  # a value not among the categories is missing
        ([], None),
        ([], ["x"]),
        ([1, None, 2, 1], None),  # not strings: pandas codes them
        (["1", 2, None], ["1", "2"]),
        ([float("nan"), "a"], None),
        (["é", "\u4e2d", "é"], None),
    ]
    for values, cats in cases:
        got = categorical(values, categories=cats)
        plain = sorted({str(v) for v in values if v is not None}) if cats is None else cats
        want = pd.Categorical(values, categories=pd.Index(plain, dtype="str"))
        assert got.dtype == want.dtype, values
        assert got.codes.dtype == want.codes.dtype, values
        np.testing.assert_array_equal(got.codes, want.codes, err_msg=str(values))
    with pytest.raises(ValueError):
        categorical(codes=np.array([0, 2]), categories=["x", "y"])  # codes are still checked


def test_frame_equals_the_plain_constructor() -> None:
    n = 5
    cols = {
        "eid": np.arange(n, dtype=np.int64),
        "f": np.linspace(0, 1, n, dtype=np.float32),
        "flag": np.array([True, False, True, True, False]),
        "name": categorical(codes=np.array([0, 1, 0, -1, 1], dtype=np.int8), categories=["p", "q"]),
        "depth": np.arange(n, dtype=np.int16),
    }
    got = frames.frame(cols)
    assert_identical(got, pd.DataFrame(cols), "frame")
    assert got["eid"].to_numpy().base is not None or np.shares_memory(got["eid"].to_numpy(), cols["eid"])
    empty = {k: v[:0] for k, v in cols.items()}
    assert_identical(frames.frame(empty), pd.DataFrame(empty), "empty frame")
    # The column index is built once per list of names, shared, and immutable.
    again = frames.frame({k: v.copy() for k, v in cols.items()})
    assert (
        again.columns is got.columns
        and frames.frame(cols, ["depth", "eid", "f", "flag", "name"]).columns is not got.columns
    )
    again["extra"] = 1
    assert "extra" not in got.columns and list(frames.frame(cols).columns) == list(cols)
    # Anything else takes pandas' constructor.
    odd = {"a": [1, 2], "b": np.array(["x", "y"], dtype=object)}
    assert_identical(frames.frame(odd), pd.DataFrame(odd), "lists")
    with pytest.raises(ValueError):
        frames.frame_of([np.arange(3), np.arange(4)], pd.Index(["a", "b"]), 3)


def test_without_the_pandas_3_block_api_loads_are_identical(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pandas 2.x has no ``create_dataframe_from_blocks``: the plain constructor builds the same
    frames, cold and from the cache (the path pandas 2.2 users take, run here on pandas 3)."""
    sample = tv.sample_path()
    fast_cold = tv.load(sample, cache=False)
    monkeypatch.setattr(frames, "_from_blocks", None)
    n = 4
    cols = {"eid": np.arange(n, dtype=np.int64), "name": categorical(codes=np.zeros(n, np.int8), categories=["p"])}
    assert_identical(frames.frame(cols), pd.DataFrame(cols), "fallback frame")
    assert_identical(frames.frame_of(list(cols.values()), pd.Index(list(cols)), n), pd.DataFrame(cols), "frame_of")
    plain_cold = tv.load(sample, cache=False)
    cached = (tv.load(sample, cache=tmp_path), tv.load(sample, cache=tmp_path))  # written, then read
    assert any(tmp_path.rglob("entry.tvc"))
    for trace in (plain_cold, *cached):
        for r in fast_cold.ranks:
            assert_identical(trace.rank_data(r).events, fast_cold.rank_data(r).events, f"rank {r} events")
            assert_identical(trace.rank_data(r).op_args, fast_cold.rank_data(r).op_args, f"rank {r} op_args")


def test_paused_gc_restores_the_state() -> None:
    assert gc.isenabled()
    with frames.paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with frames.paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _brute_force(clf: Classifier, name: pd.Categorical, kind: pd.Categorical) -> list[str | None]:
    """``classify`` row by row; a row without a name or a kind has no class."""
    out: list[str | None] = []
    for n, k in zip(np.asarray(name, dtype=object), np.asarray(kind, dtype=object), strict=True):
        cls = None if pd.isna(n) or pd.isna(k) else clf.classify(n, k)
        out.append(None if cls is None else cls.value)
    return out


def _as_list(column: pd.Categorical) -> list[str | None]:
    return [None if pd.isna(v) else str(v) for v in np.asarray(column, dtype=object)]


@pytest.mark.parametrize(
    "clf", [Classifier(), Classifier().extend(communication=[r"^gemm", r"elementwise"], other=[r"Memset"])]
)
def test_classify_column_matches_classify_row_by_row_on_real_traces(clf: Classifier) -> None:
    from tests.loading.test_cache_exact import _traces

    for name, path in sorted(_traces().items()):
        trace = tv.load(path, cache=False, classifier=clf)
        for r in trace.ranks:
            ev = trace.events(r)
            got = _as_list(clf.classify_column(ev["name"].array, ev["kind"].array))
            assert got == _brute_force(clf, ev["name"].array, ev["kind"].array), f"{name} rank {r}"
            assert got == _as_list(ev["gpu_class"].array), f"{name} rank {r}: the trace's column"


def test_classify_column_on_missing_names_and_kinds() -> None:
    kinds = list(KIND_CATEGORIES)
    k = kinds.index
    name = categorical(
        codes=np.array([0, -1, 1, 0, 1, 2], dtype=np.int8), categories=["ncclKernel_x", "gemm", "Memset"]
    )
    kind = categorical(
        codes=np.array([k("kernel"), k("kernel"), -1, k("gpu_memset"), k("cpu_op"), k("cuda_sync")], dtype=np.int8),
        categories=kinds,
    )
    got = _as_list(Classifier().classify_column(name, kind))
    # An event without a name or without a kind has no class.
    assert got == ["communication", None, None, "memory", None, "other"]
    assert _as_list(Classifier().classify_column(name[[1, 1]], kind[[3, 5]])) == [None, None]
    empty = Classifier().classify_column(name[:0], kind[:0])
    assert len(empty) == 0 and empty.categories.tolist() == ["compute", "communication", "memory", "other"]


@given(st.lists(st.text(), max_size=30))
def test_str_index_is_the_plain_index(texts: list[str]) -> None:
    try:
        want = pd.Index(texts, dtype="str")
    except UnicodeEncodeError:  # lone surrogates: refused both ways
        with pytest.raises(UnicodeEncodeError):
            frames.str_index(texts)
        return
    got = frames.str_index(texts)
    pd.testing.assert_index_equal(got, want, exact=True)
    assert type(got.array) is type(want.array) and got.dtype == want.dtype
    if hasattr(want.array, "_pa_array"):
        assert got.array._pa_array.type == want.array._pa_array.type


@pytest.mark.skipif(not frames._ARROW_STR, reason="pandas without Arrow-backed strings")
def test_category_strings_are_not_in_arrows_default_pool() -> None:
    """The categories and column names the reader builds live in malloc'd memory (Arrow's
    system pool): the default pool's (mimalloc's) first use in a process touched a 2 MiB page,
    most of the peak of loading a small trace. Same values and dtype as pandas' own."""
    import pyarrow as pa

    texts = [f"kernel_{i}" for i in range(1000)]
    pool = pa.default_memory_pool()
    before = pool.bytes_allocated()
    index = frames.str_index(texts)
    columns = frames.columns_index(tuple(f"col_{i}" for i in range(40)))
    assert pool.bytes_allocated() == before
    assert index.equals(pd.Index(texts, dtype="str")) and index.dtype == pd.Index(texts, dtype="str").dtype
    plain = pd.Index([f"col_{i}" for i in range(40)])
    assert columns.equals(plain) and columns.dtype == plain.dtype
