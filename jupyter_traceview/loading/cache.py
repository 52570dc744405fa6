"""On-disk cache of parsed traces (Arrow IPC files), so that a second load is near-instant.

An entry is keyed by the trace file's real path, size and modification time, a content
fingerprint (a hash of its first and last 64 KiB: a file replaced by another of the same size
and modification time, as restored backups, ``touch -r`` or ``rsync -t`` leave it, misses), the
reader and schema versions and the reader options; a changed file or a new reader version
simply misses. An entry also keeps each rank's ``gpu_class`` column with the key of the
classifier that made it (:func:`~..model.classify.rules_key`): a load with an equal
classifier takes the column as stored, another one classifies again. Entries live outside the trace folder, in the user cache directory by default
(``~/.cache/jupyter_traceview`` on Linux).

Integrity: an entry is one file (:data:`ENTRY_FILE`: the ranks' tables as Arrow IPC streams,
their metadata, a trailer) whose trailer holds a CRC-32 of the rest and a seal; any mismatch
(flipped bytes, a truncated or emptied file, edited metadata) is a miss, and the entry is
deleted and written again by the parse that follows: a damaged cache heals itself instead of
giving wrong figures. CRC-32 (ISA-L's, several GB/s) is there to catch damage, not tampering
by someone who can write to the cache folder. An entry of an older format (five Arrow files
a rank and a ``meta.json``, or an unsealed file) is a miss, rewritten in this one.

The writer checks each rank's tables (:func:`_check_rank`: what the frames will be built
from is what the schema defines: columns, types, Arrow's full validation, categories none
missing, none repeated) and seals the entry (:mod:`.cache_seal`: a BLAKE2b of the CRC-32,
keyed by the cache folder's key). A load (``tv.load``) maps the file and compares its CRC
and seal: an entry this cache folder's writer did not seal (a hand-made file with a valid
CRC, one copied from another folder) is a miss. It reads a rank's stream when the first of
its tables is built (:class:`_Stream`, checked again then: a sealed entry that fails, which
only someone who read the key makes, raises a :class:`~..errors.TraceviewError` naming the
file), and the pandas frames are built when a rank's table is first read
(:class:`~..model.rank_data.Deferred`: once, thread-safe, and built before a rank is pickled
to another process). A cached load of the bundled 8-rank sample reads none of its 8 streams
and builds none of its 40 frames; an analysis builds those it reads.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import mmap
import os
import shutil
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc

from ..errors import TraceviewError
from ..model.classify import Classifier, rules_key
from ..model.facts import RankFacts, attach
from ..model.frames import STR_DTYPE, category_dtype, checked_dtype, columns_index, frame_of, paused_gc, shared_dtype
from ..model.rank_data import Deferred, RankData, RankMeta, replaced, when_built
from ..model.trace import classified

# The keys live in cache_key (light: found without pandas or Arrow); their names stay here too.
from . import cache_key as _keys
from .cache_key import FINGERPRINT_BYTES as FINGERPRINT_BYTES
from .cache_key import default_cache_dir as default_cache_dir
from .cache_key import entry_key as entry_key
from .cache_key import fingerprint as fingerprint
from .cache_key import resolve_dir as resolve_dir
from .cache_seal import SEAL_FILE as SEAL_FILE
from .cache_seal import seal as _seal
from .cache_seal import seal_key as _seal_key

__all__ = ["attach_facts", "clear_cache", "default_cache_dir", "prune"]

#: The cache is pruned back under this size (least recently used entries go first).
MAX_BYTES = 20 * 2**30

_TABLES = ("events", "gpu_args", "comms", "op_args", "memory")
#: Format of the entry file; entries of other formats are misses. (4: the classes kept, with
#: the classifier's key; 5: the ranks' CRC over msgspec's encoding; 6: one file an entry;
#: 7: sealed, see loading/cache_seal.py.)
ENTRY_FORMAT = 7
#: An entry's one file: the magic, then each rank's tables as one Arrow IPC stream (at a
#: multiple of 64 bytes; one record batch of one row, a list of structs per table), the
#: metadata (JSON: the ranks' RankMeta, the classifier's key, each stream's start and
#: length), and the trailer: the metadata's start and length, the seal (:func:`_seal`), the
#: CRC-32 of everything before the trailer's last 16 bytes, the format and the magic again.
ENTRY_FILE = "entry.tvc"
_MAGIC = b"TVCACHE\x00"
_TRAILER = struct.Struct("<QQ16sII8s")
#: The trailer's bytes that the CRC-32 does not cover (the CRC, the format, the magic).
_CHECKED_TAIL = 16
_ALIGN = 64

try:  # ISA-L's CRC-32 is about 4x faster than zlib's (isal is a dependency)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - odd installs
    _crc32 = zlib.crc32


def _to_arrow(df: pd.DataFrame) -> pa.RecordBatch:
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


def _from_arrow(names: tuple[str, ...], rows: pa.StructArray) -> pd.DataFrame:
    """A frame over the Arrow buffers of a table (``rows``: one struct a row, of the columns
    ``names``): numeric columns are not copied.

    ``rows`` passed :func:`_check_rank`. Categories are not turned into Python strings: a
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
    }
    return {
        table: {c.name: None if c.dtype == "category" else pa.from_numpy_dtype(np.dtype(c.dtype)) for c in columns}
        for table, columns in specs.items()
    }


_EXPECTED = _expected_types()

#: A rank's layout: per table (in :data:`_TABLES` order), its column names and the positions
#: of its categorical columns.
_Layout = tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]
#: Layouts of rank batches found to be what this module writes, by the bytes of their
#: schema's IPC message (ranks mostly share one: the schema's columns, categorical codes of
#: one or two widths). The bytes, not the schema: a new Schema object costs ~13 us and
#: comparing it ~40 us (Arrow computes its fingerprint), per rank.
_LAYOUTS: dict[bytes, _Layout] = {}


def _schema_message(stream: pa.Buffer) -> bytes | None:
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
    :class:`_Damaged` unless it is what :func:`_rank_batch` writes: per table a list of
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
    if schema.names != list(_TABLES):
        raise _Damaged(f"tables {schema.names}")
    out = []
    for table, field in zip(_TABLES, schema, strict=True):
        if not pa.types.is_large_list(field.type) or not pa.types.is_struct(field.type.value_type):
            raise _Damaged(f"{table}: {field.type}")
        struct = field.type.value_type
        columns = [struct.field(i) for i in range(struct.num_fields)]
        names = tuple(c.name for c in columns)
        expected = _EXPECTED[table]
        optional = table == "events" and "gpu_class" not in names  # (an entry without classes)
        if list(names) != [n for n in expected if not (optional and n == "gpu_class")]:
            raise _Damaged(f"{table}: columns {list(names)}")
        categorical = []
        for i, column in enumerate(columns):
            kind = expected[column.name]
            if kind is None:
                if not pa.types.is_dictionary(column.type) or column.type.value_type not in _STRINGS:
                    raise _Damaged(f"{table}.{column.name}: {column.type}, not categories of strings")
                categorical.append(i)
            elif column.type != kind:
                raise _Damaged(f"{table}.{column.name}: {column.type}, not {kind}")
        out.append((names, tuple(categorical)))
    return tuple(out)


_STRINGS = (pa.large_string(), pa.string())


def _check_rank(batch: pa.RecordBatch, schema_key: bytes | None) -> list[tuple[str, tuple[str, ...], pa.StructArray]]:
    """A rank's tables (name, column names, rows), or :class:`_Damaged` unless
    :func:`_from_arrow` builds of each the table the schema defines.

    Done when the entry is read (the frames are built later, when first used), so that an
    entry that passed its CRC but is not what this module writes is a miss, parsed again,
    not an error in an analysis: its layout (:func:`_layout`: columns and types; its schema's
    IPC message ``schema_key``, for memory), Arrow's
    full validation (buffers, offsets, UTF-8, every dictionary index within its
    dictionary), and categories none missing, none repeated (:func:`_unique`).
    """
    if batch.num_rows != 1:
        raise _Damaged(f"rank tables in {batch.num_rows} rows")
    layout = _layout(batch, schema_key)
    try:
        batch.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise _Damaged(str(exc)) from None
    out = []
    for table, (names, categorical), column in zip(_TABLES, layout, batch.columns, strict=True):
        # The list's one row: its values are the table's rows (its offsets are not read).
        rows = column.values
        for i in categorical:
            dictionary = rows.field(i).dictionary
            if dictionary.null_count:
                raise _Damaged(f"{table}.{names[i]}: a missing category")
            if len(dictionary) >= 2 and not _unique(dictionary):
                raise _Damaged(f"{table}.{names[i]}: a repeated category")
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
    """The categorical dtype of an Arrow dictionary of strings (checked by :func:`_check_rank`:
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
        # (no nulls, no duplicates: checked by _check_rank).
        categories = pd.Index(ArrowStringArray(dictionary, dtype=STR_DTYPE), copy=False)
        return checked_dtype(categories, True)
    return category_dtype(dictionary.to_pylist())


class _Damaged(ValueError):
    """An entry whose checksums or structure do not match: a miss."""


#: What reading a damaged or unreadable entry raises (the metadata's decode errors are
#: ValueErrors: :func:`_decode_meta` ends with json's; StopIteration: a stream of no batch).
_UNREADABLE = (
    OSError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    RecursionError,
    StopIteration,
    pa.ArrowException,
)


def _decode_meta(text: bytes) -> Any:
    """The entry's metadata document: msgspec's decoder, or json's for what only it reads (NaN, lone surrogates)."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def read(cache_dir: Path, key: str, *, classifier: Classifier) -> list[RankData] | None:
    """The cached ranks of an entry, classified by ``classifier`` (:func:`~..model.trace.classified`),
    or None if it is missing, unreadable or damaged (then deleted).

    The ``gpu_class`` columns are the stored ones when the entry was written by an equal
    classifier, else computed here.
    """
    entry = os.path.join(cache_dir, key)
    path = os.path.join(entry, ENTRY_FILE)
    try:
        buffer, mtime = _mapped(path)
    except OSError:
        return None  # no entry (or no readable one, or one of an older format: the parse that follows rewrites it)
    except _Damaged:  # (an empty file)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    seal_key = _seal_key(str(cache_dir))
    if seal_key is None:
        return None  # no key this process can read: a miss, the entry left to those who can
    try:
        with paused_gc():
            out = _read_entry(path, buffer, seal_key, classifier)
        if time.time() - mtime > _USE_RESOLUTION:
            os.utime(path)  # last use, for pruning
        return out
    except _UNREADABLE:
        # A damaged entry is a miss; it is rewritten after parsing.
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _entry_doc(buffer: pa.Buffer, key: bytes | None) -> dict[str, Any]:
    """The metadata of an entry file (see :data:`ENTRY_FILE`), its magic, format, CRC-32 and
    seal (with the cache folder's ``key``) checked."""
    size = buffer.size
    if size < len(_MAGIC) + _TRAILER.size:
        raise _Damaged("too short")
    view = memoryview(buffer)
    meta_at, meta_len, seal, crc, fmt, magic = _TRAILER.unpack_from(view, size - _TRAILER.size)
    if magic != _MAGIC or fmt != ENTRY_FORMAT or view[: len(_MAGIC)].tobytes() != _MAGIC:
        raise _Damaged("not an entry of this format")
    body = size - _TRAILER.size
    body_crc = _crc32(view[:body])
    if _crc32(view[body : size - _CHECKED_TAIL], body_crc) != crc:
        raise _Damaged("the entry was changed")
    if key is None or not hmac.compare_digest(seal, _seal(key, body_crc, body, ENTRY_FORMAT)):
        raise _Damaged("not sealed by this cache's writer")
    if meta_at + meta_len != body or meta_at < len(_MAGIC):
        raise _Damaged("no metadata")
    doc = _decode_meta(bytes(view[meta_at:body]))
    if not isinstance(doc, dict):
        raise _Damaged("no metadata")
    metas, spans = doc["ranks"], doc["streams"]
    if not isinstance(metas, list) or not metas or not isinstance(spans, list) or len(spans) != len(metas):
        raise _Damaged("no ranks")
    for span in spans:
        start, length = span
        if type(start) is not int or type(length) is not int or start < len(_MAGIC) or length < 0:
            raise _Damaged("a rank outside the file")
        if start + length > meta_at:
            raise _Damaged("a rank outside the file")
    return doc


def _read_entry(path: str, buffer: pa.Buffer, key: bytes | None, classifier: Classifier) -> list[RankData]:
    doc = _entry_doc(buffer, key)
    stored = doc["classes"]
    kept = stored is not None and stored == rules_key(classifier)
    return [
        _read_rank(path, buffer, span, RankMeta.from_json(meta), stored, kept, classifier)
        for meta, span in zip(doc["ranks"], doc["streams"], strict=True)
    ]


def _read_rank(
    path: str, buffer: pa.Buffer, span: list[int], meta: RankMeta, stored: Any, kept: bool, classifier: Classifier
) -> RankData:
    """The rank whose tables lie at ``span`` (start, length) of the entry file ``buffer``
    (sealed: read when first used, :class:`_Stream`), with ``meta``, classified by
    ``classifier`` (unless ``kept``: the stored ``gpu_class`` column is that classifier's)."""
    start, length = span
    stream = _Stream(path, buffer.slice(start, length), stored is not None)
    tables = {name: Deferred(functools.partial(stream.frame, name)) for name in _TABLES}
    d = RankData(meta=meta, **tables)
    if kept:
        return d
    return replaced(d, events=Deferred(functools.partial(_classified_events, d, classifier)))


class _Stream:
    """A rank's tables in a sealed entry: read (and checked again, cheaply next to building the
    frames) when the first of them is built; each frame built from them by :func:`_from_arrow`."""

    def __init__(self, path: str, stream: pa.Buffer, classes: bool) -> None:
        self._path, self._stream, self._classes = path, stream, classes
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[tuple[str, ...], pa.StructArray]] | None = None

    def frame(self, name: str) -> pd.DataFrame:
        with self._lock:
            if self._tables is None:
                self._tables = self._read()
        names, rows = self._tables[name]
        return _from_arrow(names, rows)

    def _read(self) -> dict[str, tuple[tuple[str, ...], pa.StructArray]]:
        try:
            batch = pa.ipc.open_stream(self._stream).read_next_batch()
            tables = {name: (names, rows) for name, names, rows in _check_rank(batch, _schema_message(self._stream))}
            if self._classes != ("gpu_class" in tables["events"][0]):
                raise _Damaged("the gpu_class column does not match the metadata")
        except _UNREADABLE as exc:  # (what this module sealed passed these checks when written)
            raise TraceviewError(
                f"{self._path}: a sealed cache entry whose tables cannot be read ({exc}): "
                "clear the cache (tv.clear_cache()) and load again"
            ) from None
        return tables


def _classified_events(d: RankData, classifier: Classifier) -> pd.DataFrame:
    return classified(d, classifier).events


def read_rank(entry: str, i: int, meta: RankMeta, *, classifier: Classifier) -> RankData | None:
    """Rank ``i`` of the entry in folder ``entry`` as :func:`read` gives it, with ``meta`` (the
    loader may have renumbered the rank), or None if the entry is missing, unreadable or
    damaged (left as it is: unlike :func:`read`, for a process other than the loader's, e.g.
    a worker computing per-rank results, which then get computed elsewhere)."""
    try:
        path = os.path.join(entry, ENTRY_FILE)
        buffer = _file_buffer(path)
        with paused_gc():
            doc = _entry_doc(buffer, _seal_key(os.path.dirname(os.path.abspath(entry))))
            stored = doc["classes"]
            kept = stored is not None and stored == rules_key(classifier)
            return _read_rank(path, buffer, doc["streams"][i], meta, stored, kept, classifier)
    except _UNREADABLE:
        return None


#: Entries bigger than this are written streamed to their file (not assembled in memory first).
_MAP_BYTES = 1 << 20


def _file_buffer(path: str) -> pa.Buffer:
    """The file at ``path``, memory-mapped (see :func:`_mapped`)."""
    return _mapped(path)[0]


def _mapped(path: str) -> tuple[pa.Buffer, float]:
    """The file at ``path``, memory-mapped, and its modification time.

    Mapped: its numeric columns then stay in the page cache, never copied; even for the
    sample's small entries a mapping costs less than a read in a fresh process (no new pages
    to fault in and fill: 0.5 against 1.5 ms for its 8 entries, CRC included), and Python's
    mapping less than Arrow's (~25 us an entry). The cache never changes a file in place
    (entries are written aside and renamed; pruning and healing unlink them), so the mapping
    of a file read here stays what was checked.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size == 0:
            raise _Damaged(f"{os.path.basename(path)} is empty")
        return pa.py_buffer(mmap.mmap(fd, 0, access=mmap.ACCESS_READ)), st.st_mtime
    finally:
        os.close(fd)


#: An entry's last use (its file's modification time, for pruning) is recorded when it is
#: older than this (seconds): not at every read, a system call an entry.
_USE_RESOLUTION = 3600.0


def write(cache_dir: Path, key: str, ranks: Sequence[RankData], *, classifier: Classifier | None) -> None:
    """Store an entry atomically (written aside, then renamed). Failures are silent misses.

    ``classifier``: the one that made the ranks' ``gpu_class`` columns (kept with its key),
    or None for ranks without them.
    """
    if any(("gpu_class" in d.events.columns) != (classifier is not None) for d in ranks):
        raise ValueError("cache.write: ranks with gpu_class columns come with the classifier that made them")
    entry = cache_dir / key
    tmp = cache_dir / f".{key}.{uuid.uuid4().hex}.tmp"
    try:
        tmp.mkdir(parents=True, exist_ok=False)
        seal = _seal_key(str(cache_dir), create=True)
        if seal is None:
            return  # (no key to seal with: the folder is not ours to write)
        # The metadata as it will be read back (JSON round trip).
        metas = json.loads(json.dumps([d.meta.to_json() for d in ranks]))
        doc = {"ranks": metas, "classes": None if classifier is None else rules_key(classifier)}
        batches = [_rank_batch(d) for d in ranks]
        for batch in batches:
            # Checked before it is sealed (a load then trusts it): what _from_arrow builds of it
            # is the tables given. Never fails for frames the readers make.
            _check_rank(batch, batch.schema.serialize().to_pybytes())
        _write_entry(str(tmp / ENTRY_FILE), batches, doc, seal)
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except (OSError, _Damaged):
        pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _rank_batch(d: RankData) -> pa.RecordBatch:
    """A rank's five tables as one Arrow record batch of one row: per table a list of structs."""
    columns = []
    for name in _TABLES:
        table = _to_arrow(getattr(d, name))
        rows = pa.StructArray.from_arrays(table.columns, names=table.schema.names)
        columns.append(pa.LargeListArray.from_arrays(pa.array([0, len(rows)], pa.int64()), rows))
    return pa.RecordBatch.from_arrays(columns, names=list(_TABLES))


def _write_entry(path: str, batches: Sequence[pa.RecordBatch], doc: dict[str, Any], key: bytes) -> None:
    """Write an entry file (see :data:`ENTRY_FILE`) of these ranks' batches and metadata
    ``doc``, sealed with ``key`` (the batches checked: see :func:`write`).

    A small one is written in memory and saved by one write (a quarter of the cost of a file
    stream and a mapping to read it back, for the sample's tables); a big one is streamed
    to the file and read back mapped for its CRC, so that it is never held twice in memory.
    """
    big = sum(b.nbytes for b in batches) > _MAP_BYTES
    sink = pa.OSFile(path, "wb") if big else pa.BufferOutputStream()
    try:
        sink.write(_MAGIC)
        spans = []
        for batch in batches:
            if sink.tell() % _ALIGN:
                sink.write(bytes(_ALIGN - sink.tell() % _ALIGN))
            start = sink.tell()
            with pa.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            spans.append([start, sink.tell() - start])
        meta = json.dumps({**doc, "streams": spans}).encode()
        meta_at = sink.tell()
        sink.write(meta)
        if not big:
            data = sink.getvalue()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.write(fd, _trailer(key, _crc32(memoryview(data)), data.size, meta_at))
            finally:
                os.close(fd)
            return
    finally:
        sink.close()
    with pa.memory_map(path, "r") as written:
        body = written.read_buffer()
        trailer = _trailer(key, _crc32(memoryview(body)), body.size, meta_at)
    with open(path, "ab") as fh:
        fh.write(trailer)


def _trailer(key: bytes, body_crc: int, body_size: int, meta_at: int) -> bytes:
    """The trailer of an entry file whose bytes before it (``body_size`` of them, the metadata
    from ``meta_at``) have the CRC-32 ``body_crc``."""
    head = _TRAILER.pack(meta_at, body_size - meta_at, _seal(key, body_crc, body_size, ENTRY_FORMAT), 0, 0, b"")
    head = head[: _TRAILER.size - _CHECKED_TAIL]
    return head + struct.pack("<II8s", _crc32(head, body_crc), ENTRY_FORMAT, _MAGIC)


def attach_facts(cache_dir: Path, key: str, ranks: Sequence[RankData]) -> None:
    """Give each rank of the entry ``key`` its store of derived results (:mod:`..model.facts`):
    the file ``r<i>.facts`` in the entry, next to its tables (not in ``meta.json``: a missing or
    damaged one is only a miss, see :class:`~..model.facts.RankFacts`)."""
    entry = os.path.join(cache_dir, key)
    for i, d in enumerate(ranks):
        store = RankFacts(os.path.join(entry, f"r{i}.facts"), tables=(entry, i))
        # Keyed by the events frame: attached when it is built (see model.rank_data.Deferred).
        when_built(d, "events", functools.partial(attach, store=store))


def _entry_size(entry: Path) -> int:
    total = 0
    with os.scandir(entry) as it:
        for f in it:
            if f.is_file(follow_symlinks=False):
                total += f.stat(follow_symlinks=False).st_size
    return total


def prune(cache_dir: Path, max_bytes: int = MAX_BYTES) -> int:
    """Delete the least recently used entries until the cache holds at most ``max_bytes``.

    Returns the bytes freed. Called by ``tv.load`` after it wrote entries.
    """
    if not cache_dir.is_dir():
        return 0
    entries = []
    for entry in cache_dir.iterdir():
        # (meta.json: an entry of a format before 6, never read again but pruned alike)
        meta = entry / ENTRY_FILE if (entry / ENTRY_FILE).is_file() else entry / "meta.json"
        if entry.is_dir() and meta.is_file():
            try:
                entries.append((meta.stat().st_mtime, _entry_size(entry), entry))
            except OSError:
                continue
    total = sum(size for _, size, _ in entries)
    freed = 0
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total - freed <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        freed += size
    return freed


def clear_cache(cache_dir: str | os.PathLike[str] | None = None) -> int:
    """Delete every cached entry, and the folder's sealing key (the next write makes a new
    one); returns the bytes freed.

    Examples
    --------
    >>> import tempfile
    >>> import jupyter_traceview as tv
    >>> folder = tempfile.mkdtemp()
    >>> _ = tv.load(tv.sample_path(), cache=folder)  # parsed, and kept in ``folder``
    >>> tv.clear_cache(folder) > 0  # bytes freed
    True
    >>> tv.clear_cache(folder)
    0
    """
    root = Path(cache_dir) if cache_dir is not None else _keys.default_cache_dir()
    if not root.is_dir():
        return 0
    freed = 0
    for entry in root.iterdir():
        if entry.is_dir():
            freed += sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
            shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(OSError):
        (root / SEAL_FILE).unlink()
    return freed
