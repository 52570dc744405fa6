"""Building the schema's frames cheaply: shared categorical dtypes, frames without copies.

A rank's six tables hold about fifteen categorical columns. Built the plain way, each costs
a ``pd.Index`` of its categories, a ``CategoricalDtype`` that checks them for NaNs and
duplicates (a hash table per column), and each frame a ``pd.DataFrame`` whose constructor
inspects every column: about 5 ms of fixed cost per rank, whatever its size, which dominated
a cached load of small ranks. Here a dtype is built and checked once per distinct list of
categories (ranks share their kinds, copy kinds, classes, and often their operator names),
and a frame is assembled from its columns as they are, one block per column.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "STR_DTYPE",
    "category_dtype",
    "checked_dtype",
    "columns_index",
    "frame",
    "frame_of",
    "paused_gc",
    "shared_dtype",
]

try:  # pandas >= 3.0
    from pandas.api.internals import create_dataframe_from_blocks as _from_blocks
except ImportError:  # pragma: no cover - pandas 2.x builds frames the plain way
    _from_blocks = None
#: pandas' constructor of a dtype whose categories are known good (private: checked by the
#: tests on the pandas in use, and replaced by the checking constructor where it is missing).
_from_fastpath: Callable[..., pd.CategoricalDtype] | None = getattr(pd.CategoricalDtype, "_from_fastpath", None)

#: The categories' dtype throughout: pandas' ``str`` (Arrow-backed strings on pandas 3).
STR_DTYPE = pd.Index([], dtype="str").dtype
_ARROW_STR = isinstance(STR_DTYPE, pd.StringDtype) and STR_DTYPE.storage == "pyarrow"

#: At most this many categories are held by the shared dtypes, over all of them: past it the
#: store starts again (a long session loading many traces does not grow it without bound).
_MAX_HELD = 1 << 17

_dtypes: dict[Hashable, pd.CategoricalDtype] = {}
_held = 0


def shared_dtype(key: Hashable, build: Callable[[], pd.CategoricalDtype]) -> pd.CategoricalDtype:
    """The dtype stored under ``key``, else ``build()`` (stored): one validation per distinct key.

    ``key`` must determine the categories exactly (their texts and order).
    """
    global _held
    dtype = _dtypes.get(key)
    if dtype is None:
        dtype = build()
        n = len(dtype.categories)
        if _held + n > _MAX_HELD:
            _dtypes.clear()
            _held = 0
        if n <= _MAX_HELD:
            _dtypes[key] = dtype
            _held += n
    return dtype


def category_dtype(categories: Sequence[object]) -> pd.CategoricalDtype:
    """The unordered categorical dtype with these categories (as ``str``), shared by equal lists.

    Raises ValueError for duplicate or missing (None, NaN) categories, as pandas does.
    """
    key = tuple(categories)
    if not set(map(type, key)) <= {str}:  # 1 == True == 1.0 as keys: only exact str lists are shared
        return pd.CategoricalDtype(pd.Index(list(key), dtype="str"), ordered=False)
    # Strings only: a set finds duplicates (their hashes are cached) without pandas' check,
    # which hashes the categories again in a table built for each new dtype.
    return shared_dtype(key, lambda: checked_dtype(str_index(key), len(set(key)) == len(key)))


def str_index(texts: Sequence[object]) -> pd.Index:
    """``pd.Index(texts, dtype="str")``: on pandas' Arrow-backed strings, converted by Arrow
    directly (pandas' own conversion checks each value first: ~2x slower warm, and several
    times slower on a process's first calls), else pandas' way.

    The strings are allocated by the C library's ``malloc`` (Arrow's system memory pool), not
    by Arrow's default pool: that pool (mimalloc) reserves and touches ~2 MB on its first use
    in a process, which was most of the peak memory of loading a 0.1 MB trace; for a few
    texts, or one array per table, either allocator is as fast."""
    if _ARROW_STR:
        import pyarrow as pa
        from pandas.arrays import ArrowStringArray

        try:
            array = pa.array(texts, type=pa.large_string(), memory_pool=pa.system_memory_pool())
        except (pa.ArrowException, UnicodeEncodeError, TypeError):
            pass  # (a lone surrogate, say: pandas' way says what is wrong)
        else:
            return pd.Index(ArrowStringArray(array, dtype=STR_DTYPE), copy=False)
    return pd.Index(list(texts), dtype="str")


def checked_dtype(categories: pd.Index, unique: bool) -> pd.CategoricalDtype:
    """The unordered categorical dtype of ``categories`` (no missing values: the caller checked),
    ``unique`` as the caller found (pandas' own check raises ValueError where it is False).

    pandas checks a new dtype's categories by building their hash table (for Arrow-backed
    strings, from a Python object per category): the most a dtype costs. Where the caller
    has checked them more cheaply, the dtype is built without it; the table is then built
    on first use, where one needs it (a lookup by value).
    """
    if unique and _from_fastpath is not None:
        dtype: pd.CategoricalDtype = _from_fastpath(categories, ordered=False)
        return dtype
    return pd.CategoricalDtype(categories, ordered=False)


def frame(columns: Mapping[str, Any], order: Sequence[str] | None = None) -> pd.DataFrame:
    """A frame of these columns (1-D numpy arrays or Categoricals of one length), not copied.

    What ``pd.DataFrame(columns, columns=order)`` gives, without the constructor's
    inference and copies: one block per column, a RangeIndex, the columns in ``order``
    (default: as given). Anything else (lists, Series, object arrays, 2-D arrays, unequal
    lengths, ``order`` naming other columns, one array given twice) goes through
    ``pd.DataFrame``. The arrays become the frame's: the caller must not write to them after.
    """
    if order is not None:
        if len(order) != len(columns) or not all(c in columns for c in order):
            return pd.DataFrame(dict(columns), columns=list(order))
        columns = {c: columns[c] for c in order}
    values = list(columns.values())
    n = len(values[0]) if values else 0
    plain = _from_blocks is not None and values and all(_plain(v, n) for v in values)
    # Two columns over one buffer would let a write through one change the other.
    if not plain or len({id(v if getattr(v, "base", None) is None else v.base) for v in values}) < len(values):
        return pd.DataFrame(dict(columns))
    return frame_of(values, columns_index(tuple(columns)), n)


@functools.lru_cache(maxsize=256)
def columns_index(names: tuple[str, ...]) -> pd.Index:
    """The column index of these names, built once (a frame's column index is immutable; on
    pandas 3 building one converts the names to an Arrow string array: ~30 us a frame; by
    :func:`str_index`, in the C library's memory, as pandas would infer it)."""
    return str_index(names) if _ARROW_STR else pd.Index(list(names))


def frame_of(values: Sequence[Any], columns: pd.Index, n: int) -> pd.DataFrame:
    """:func:`frame` for callers that know their columns are plain: 1-D numeric numpy arrays or
    Categoricals, all ``n`` long (a wrong length raises ValueError), named by ``columns``.
    """
    if _from_blocks is None:  # pragma: no cover - pandas 2.x
        return pd.DataFrame(dict(zip(columns, values, strict=True)), copy=False)
    # Each column its own block, placed by a slice (an array placement is copied by pandas).
    # (Columns of one dtype stacked into one block, as pd.DataFrame copies them, measured no
    # cheaper to build, even for small tables.)
    blocks = [(v.reshape(1, -1) if isinstance(v, np.ndarray) else v, slice(i, i + 1)) for i, v in enumerate(values)]
    return _from_blocks(blocks, index=pd.RangeIndex(n), columns=columns)


def _plain(v: object, n: int) -> bool:
    if isinstance(v, np.ndarray):
        return v.ndim == 1 and len(v) == n and v.dtype.kind in "biufcmM"
    return isinstance(v, pd.Categorical) and len(v) == n


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside (restored after, as it was).

    Building frames allocates thousands of small container objects (blocks, indexes,
    dtypes) that never form cycles; each allocation burst otherwise triggers collections
    that scan every frame of every rank already loaded: measured 25-30% of a cached load
    of 1,024 small ranks. The reader pauses it for the same reason.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
