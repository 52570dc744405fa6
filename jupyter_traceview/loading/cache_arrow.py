"""A rank's tables as Arrow and back, checked against the schema: the cache's columns.

The cache (:mod:`.cache`) stores each rank's six tables as one Arrow record batch of one
row (:func:`rank_batch`: per table a list of structs, categorical columns as dictionaries
of strings) and builds pandas frames over the Arrow buffers when a table is first read
(:func:`from_arrow`: numeric columns not copied, categories shared between ranks). Before
a frame is built from a batch, :func:`check_rank` makes sure it is what :func:`rank_batch`
writes (columns, types, Arrow's full validation, categories none missing, none repeated):
an entry that is not is :class:`Damaged`, a miss.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..model.frames import STR_DTYPE, category_dtype, checked_dtype, columns_index, frame_of, paused_gc, shared_dtype
from ..model.rank_data import RankData

__all__ = ["TABLES", "Damaged", "check_rank", "from_arrow", "rank_batch", "schema_message", "to_arrow"]

#: A rank's tables, in the order of a rank batch's columns.
TABLES = ("events", "gpu_args", "comms", "op_args", "memory", "counters")


def to_arrow(df: pd.DataFrame) -> pa.RecordBatch:
    """Columns as Arrow arrays without copies; categoricals keep every category."""
    arrays = []
    # The columns' arrays without a Series each (pandas' own iterator; ~0.1 ms a column less).
    columns = df._iter_column_arrays() if hasattr(df, "_iter_column_arrays") else (df[c].array for c in df.columns)
    for col, values in zip(df.columns, columns, strict=True):
        if isinstance(values, pd.Categorical):
            codes = np.asarray(values.codes)
            indices = pa.array(codes, mask=codes < 0)
            arrays.append(pa.DictionaryArray.from_arrays(indices, _categories_to_arrow(values.categories)))
        elif isinstance(values, np.ndarray):
            arrays.append(pa.array(values))
        else:
            arrays.append(pa.array(df[col].to_numpy()))
    # A record batch (not a table): an empty one is still written, dictionaries included.
    return pa.RecordBatch.from_arrays(arrays, names=list(df.columns))


def _categories_to_arrow(categories: pd.Index) -> pa.Array:
    """The categories as an Arrow large_string array (what pandas holds str categories in, so
    that reading does not convert them): Arrow-backed ones as they are, others converted."""
    if categories.dtype == STR_DTYPE and isinstance(STR_DTYPE, pd.StringDtype) and STR_DTYPE.storage == "pyarrow":
        array = pa.array(categories.array)
        if array.null_count == 0:
            return array if pa.types.is_large_string(array.type) else array.cast(pa.large_string())
    return pa.array(np.asarray(categories, dtype=object), type=pa.large_string())


def from_arrow(names: tuple[str, ...], rows: pa.StructArray) -> pd.DataFrame:
    """A frame over the Arrow buffers of a table (``rows``: one struct a row, of the columns
    ``names``): numeric columns are not copied.

    ``rows`` passed :func:`check_rank`. Categories are not turned into Python strings: a
    list met before (same bytes) reuses its dtype, a new one is wrapped as it lies in the
    file (:func:`_dictionary_dtype`).
    """
    columns: list[object] = []
    with paused_gc():
        # (field, not flatten: the rows' own validity is not read, as the list's offsets are not)
        for array in (rows.field(i) for i in range(len(names))):
            if isinstance(array, pa.DictionaryArray):
                # (from_codes checks the codes against the categories again: two reductions.)
                codes = _codes(array.indices)
                columns.append(pd.Categorical.from_codes(codes, dtype=_dictionary_dtype(array.dictionary)))
            else:
                if array.null_count:  # (never written: a forged entry) zeros there, the schema's dtype kept
                    zero = False if pa.types.is_boolean(array.type) else 0
                    array = array.fill_null(pa.scalar(zero, array.type))
                columns.append(array.to_numpy(zero_copy_only=False))
        return frame_of(columns, columns_index(names), len(rows))


def _expected_types() -> dict[str, dict[str, pa.DataType | None]]:
    """Each table's columns as the schema defines them: name -> Arrow type (None: categorical)."""
    from ..model import schema

    specs = {
        "events": schema.EVENT_COLUMNS,
        "gpu_args": schema.GPU_ARGS_COLUMNS,
        "comms": schema.COMMS_COLUMNS,
        "op_args": schema.OP_ARGS_COLUMNS,
        "memory": schema.MEMORY_COLUMNS,
        "counters": schema.COUNTER_COLUMNS,
    }
    return {
        table: {c.name: None if c.dtype == "category" else pa.from_numpy_dtype(np.dtype(c.dtype)) for c in columns}
        for table, columns in specs.items()
    }


_EXPECTED = _expected_types()

#: A rank's layout: per table (in :data:`TABLES` order), its column names and the positions
#: of its categorical columns.
_Layout = tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]
#: Layouts of rank batches found to be what this module writes, by the bytes of their
#: schema's IPC message (ranks mostly share one: the schema's columns, categorical codes of
#: one or two widths). The bytes, not the schema: a new Schema object costs ~13 us and
#: comparing it ~40 us (Arrow computes its fingerprint), per rank.
_LAYOUTS: dict[bytes, _Layout] = {}


def schema_message(stream: pa.Buffer) -> bytes | None:
    """The bytes of an IPC stream's first message, its schema, as Arrow's reader decodes it
    (the continuation marker, the metadata's length, the metadata), or None for a stream of
    another form."""
    head = memoryview(stream)[:8].tobytes()  # (bytes: Arrow's buffers are signed chars)
    if len(head) < 8 or head[:4] != b"\xff\xff\xff\xff":
        return None
    size = int.from_bytes(head[4:], "little", signed=True)
    if size <= 0 or 8 + size > stream.size:
        return None
    return memoryview(stream)[: 8 + size].tobytes()


def _layout(batch: pa.RecordBatch, key: bytes | None) -> _Layout:
    """The layout of a rank batch whose schema's IPC message is ``key`` (None: unknown);
    :class:`Damaged` unless it is what :func:`rank_batch` writes: per table a list of
    structs of the schema's columns, in its order (``gpu_class`` may be absent), numeric ones
    of its types, categorical ones dictionaries of strings. Remembered by ``key``."""
    if key is not None:
        known = _LAYOUTS.get(key)
        if known is not None:
            return known
    layout = _checked_layout(batch.schema)
    if key is not None:
        if len(_LAYOUTS) >= 64:
            _LAYOUTS.clear()
        _LAYOUTS[key] = layout
    return layout


def _checked_layout(schema: pa.Schema) -> _Layout:
    if schema.names != list(TABLES):
        raise Damaged(f"tables {schema.names}")
    out = []
    for table, field in zip(TABLES, schema, strict=True):
        if not pa.types.is_large_list(field.type) or not pa.types.is_struct(field.type.value_type):
            raise Damaged(f"{table}: {field.type}")
        struct = field.type.value_type
        columns = [struct.field(i) for i in range(struct.num_fields)]
        names = tuple(c.name for c in columns)
        expected = _EXPECTED[table]
        optional = table == "events" and "gpu_class" not in names  # (an entry without classes)
        if list(names) != [n for n in expected if not (optional and n == "gpu_class")]:
            raise Damaged(f"{table}: columns {list(names)}")
        categorical = []
        for i, column in enumerate(columns):
            kind = expected[column.name]
            if kind is None:
                if not pa.types.is_dictionary(column.type) or column.type.value_type not in _STRINGS:
                    raise Damaged(f"{table}.{column.name}: {column.type}, not categories of strings")
                categorical.append(i)
            elif column.type != kind:
                raise Damaged(f"{table}.{column.name}: {column.type}, not {kind}")
        out.append((names, tuple(categorical)))
    return tuple(out)


_STRINGS = (pa.large_string(), pa.string())


def check_rank(batch: pa.RecordBatch, schema_key: bytes | None) -> list[tuple[str, tuple[str, ...], pa.StructArray]]:
    """A rank's tables (name, column names, rows), or :class:`Damaged` unless
    :func:`from_arrow` builds of each the table the schema defines.

    Done when the entry is read (the frames are built later, when first used), so that an
    entry that passed its CRC but is not what this module writes is a miss, parsed again,
    not an error in an analysis: its layout (:func:`_layout`: columns and types; its schema's
    IPC message ``schema_key``, for memory), Arrow's
    full validation (buffers, offsets, UTF-8, every dictionary index within its
    dictionary), and categories none missing, none repeated (:func:`_unique`).
    """
    if batch.num_rows != 1:
        raise Damaged(f"rank tables in {batch.num_rows} rows")
    layout = _layout(batch, schema_key)
    try:
        batch.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise Damaged(str(exc)) from None
    out = []
    for table, (names, categorical), column in zip(TABLES, layout, batch.columns, strict=True):
        # The list's one row: its values are the table's rows (its offsets are not read).
        rows = column.values
        for i in categorical:
            dictionary = rows.field(i).dictionary
            if dictionary.null_count:
                raise Damaged(f"{table}.{names[i]}: a missing category")
            if len(dictionary) >= 2 and not _unique(dictionary):
                raise Damaged(f"{table}.{names[i]}: a repeated category")
        out.append((table, names, rows))
    return out


#: Lists of categories found free of repeats in this process, by their offsets (this
#: slice's, into its data buffer) and the length of that buffer: the data buffers (copies)
#: with those offsets found free of repeats. A list met again (ranks share most of theirs)
#: is compared, not checked again: offsets hashed, data compared byte for byte (hashing
#: the data instead cost ~14 us for a rank's 34 KB of kernel names).
_UNIQUE: dict[tuple[bytes, int], list[pa.Buffer]] = {}
_unique_bytes = 0
#: At most this many bytes of categories are remembered (past it the store starts again).
_MAX_UNIQUE_BYTES = 1 << 24


def _unique(dictionary: pa.Array) -> bool:
    """Whether a dictionary of strings (no nulls) repeats no text: a Python set of its texts
    for small ones (converted by Arrow: twice as fast as sets of their bytes, sliced here,
    measured), Arrow's hash for many; remembered by content (:data:`_UNIQUE`)."""
    global _unique_bytes
    key = data = None
    if pa.types.is_large_string(dictionary.type):
        ends, data = _texts(dictionary)
        data = pa.py_buffer(b"") if data is None else data
        key = (ends, data.size)
        if any(data.equals(known) for known in _UNIQUE.get(key, ())):
            return True
    n = len(dictionary)
    if n <= _SET_CHECKED:
        unique = len(set(dictionary.to_pylist())) == n
    else:
        unique = pc.count_distinct(dictionary).as_py() == n
    if unique and key is not None and data is not None:
        size = len(key[0]) + data.size
        if _unique_bytes + size > _MAX_UNIQUE_BYTES:
            _UNIQUE.clear()
            _unique_bytes = 0
        _UNIQUE.setdefault(key, []).append(pa.py_buffer(data.to_pybytes()))  # (a copy: no mapping kept)
        _unique_bytes += size
    return unique


def _texts(dictionary: pa.Array) -> tuple[bytes, pa.Buffer | None]:
    """A large_string array's texts exactly (their order included): this slice's offsets into
    its data buffer, and that buffer (None: no data)."""
    offsets, data = dictionary.buffers()[1:3]
    start = 8 * dictionary.offset
    return memoryview(offsets)[start : start + 8 * (len(dictionary) + 1)].tobytes(), data


def _texts_key(dictionary: pa.Array) -> tuple[bytes, bytes]:
    """:func:`_texts` as bytes (a key of the dtype store)."""
    ends, data = _texts(dictionary)
    return ends, b"" if data is None else data.to_pybytes()


def _codes(indices: pa.Array) -> np.ndarray:
    """Dictionary indices as categorical codes, nulls as -1 (numpy over the buffers: no compute call)."""
    codes = indices.to_numpy(zero_copy_only=False) if not indices.null_count else None
    if codes is None:
        n, offset = len(indices), indices.offset
        dtype = np.dtype(indices.type.to_pandas_dtype())
        validity, values = indices.buffers()[:2]
        codes = np.frombuffer(values, dtype, n, offset * dtype.itemsize)
        valid = np.unpackbits(np.frombuffer(validity, np.uint8), count=offset + n, bitorder="little")[offset:]
        codes = np.where(valid.view(bool), codes, np.array(-1, dtype))
    return codes


def _dictionary_dtype(dictionary: pa.Array) -> pd.CategoricalDtype:
    """The categorical dtype of an Arrow dictionary of strings (checked by :func:`check_rank`:
    none missing, none repeated), shared with equal dictionaries."""
    if pa.types.is_string(dictionary.type):
        dictionary = dictionary.cast(pa.large_string())
    key: tuple[str, bytes, bytes] = ("arrow", b"", b"")
    if len(dictionary):
        key = ("arrow", *_texts_key(dictionary))
    return shared_dtype(key, lambda: _build_dtype(dictionary))


#: Dictionaries of up to this many categories are checked for duplicates by a Python set.
_SET_CHECKED = 4096


def _build_dtype(dictionary: pa.Array) -> pd.CategoricalDtype:
    if isinstance(STR_DTYPE, pd.StringDtype) and STR_DTYPE.storage == "pyarrow":
        from pandas.arrays import ArrowStringArray

        # The categories as pandas holds str values: an Arrow large_string array, not copied
        # (no nulls, no duplicates: checked by check_rank).
        categories = pd.Index(ArrowStringArray(dictionary, dtype=STR_DTYPE), copy=False)
        return checked_dtype(categories, True)
    return category_dtype(dictionary.to_pylist())


class Damaged(ValueError):
    """An entry whose checksums or structure do not match: a miss."""


def rank_batch(d: RankData) -> pa.RecordBatch:
    """A rank's six tables as one Arrow record batch of one row: per table a list of structs."""
    columns = []
    for name in TABLES:
        table = to_arrow(getattr(d, name))
        rows = pa.StructArray.from_arrays(table.columns, names=table.schema.names)
        columns.append(pa.LargeListArray.from_arrays(pa.array([0, len(rows)], pa.int64()), rows))
    return pa.RecordBatch.from_arrays(columns, names=list(TABLES))
