"""On-disk cache of parsed traces (Arrow IPC files), so that a second load is near-instant.

An entry is keyed by the trace file's real path, size and modification time, a content
fingerprint (a hash of its first and last 64 KiB: a file replaced by another of the same size
and modification time, as restored backups, ``touch -r`` or ``rsync -t`` leave it, misses), the
reader and schema versions and the reader options; a changed file or a new reader version
simply misses. An entry also keeps each rank's ``gpu_class`` column with the key of the
classifier that made it (:func:`~..model.classify.rules_key`): a load with an equal
classifier takes the column as stored, another one classifies again. Entries live outside the trace folder, in the user cache directory by default
(``~/.cache/jupyter_traceview`` on Linux).

Integrity: ``meta.json`` records a CRC-32 of every Arrow file of the entry and of the ranks'
metadata; any mismatch (flipped bytes, a truncated file, an edited or emptied ``meta.json``)
is a miss, and the entry is deleted and written again by the parse that follows: a damaged
cache heals itself instead of giving wrong figures. CRC-32 (ISA-L's, several GB/s) is there
to catch damage, not tampering by someone who can write to the cache folder.

Reading is in two steps. When the entry is read (``tv.load``), every file is read, its CRC
compared and its structure checked (:func:`_check_batch`: what the frame will be built from
is valid, so that a bad file is a miss there and then, parsed again); the pandas frames are
built only when a rank's table is first read (:class:`~..model.rank_data.Deferred`: once,
thread-safe, and built before a rank is pickled to another process). A cached load of the
bundled 8-rank sample builds none of its 40 frames; an analysis builds those it reads.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
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

__all__ = ["attach_facts", "clear_cache", "default_cache_dir", "prune"]

#: The cache is pruned back under this size (least recently used entries go first).
MAX_BYTES = 20 * 2**30

_TABLES = ("events", "gpu_args", "comms", "op_args", "memory")
#: Format of meta.json; entries of other formats are misses. (4: the classes kept, with the
#: classifier's key; 5: the ranks' CRC over msgspec's encoding.)
ENTRY_FORMAT = 5

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


def _from_arrow(batch: pa.RecordBatch) -> pd.DataFrame:
    """A frame over the (memory-mapped) Arrow buffers: numeric columns are not copied.

    ``batch`` passed :func:`_check_batch`. Categories are not turned into Python strings: a
    list met before (same bytes) reuses its dtype, a new one is wrapped as it lies in the
    file (:func:`_dictionary_dtype`).
    """
    columns: list[object] = []
    with paused_gc():
        for array in batch.columns:
            if pa.types.is_dictionary(array.type):
                # (from_codes checks the codes against the categories again: two reductions.)
                codes = _codes(array.indices)
                columns.append(pd.Categorical.from_codes(codes, dtype=_dictionary_dtype(array.dictionary)))
            else:
                columns.append(array.to_numpy(zero_copy_only=False))
        return frame_of(columns, columns_index(tuple(batch.schema.names)), batch.num_rows)


def _check_batch(batch: pa.RecordBatch, file_name: str) -> None:
    """Raise :class:`_Damaged` unless :func:`_from_arrow` can build a frame of ``batch``.

    Done when the entry is read (the frame is built later, when first used), so that a file
    that passed its CRC but is not what this module writes is a miss, parsed again, not an
    error in an analysis: Arrow's full validation (buffers, offsets, UTF-8, every
    dictionary index within its dictionary) and, for categoricals, categories that are
    strings, none missing, none repeated (:func:`_unique`).
    """
    try:
        batch.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise _Damaged(f"{file_name}: {exc}") from None
    for i, column in enumerate(batch.schema):
        if not pa.types.is_dictionary(column.type):
            continue
        dictionary = batch.column(i).dictionary
        if not (pa.types.is_large_string(dictionary.type) or pa.types.is_string(dictionary.type)):
            raise _Damaged(f"{file_name}: categories of type {dictionary.type}")
        if dictionary.null_count:
            raise _Damaged(f"{file_name}: a missing category")
        if len(dictionary) >= 2 and not _unique(dictionary):
            raise _Damaged(f"{file_name}: a repeated category")


#: Lists of categories found free of repeats in this process (their texts: offsets and data),
#: with the bytes they hold; a list met again (ranks share most of theirs) is not checked again.
_UNIQUE: set[tuple[bytes, bytes]] = set()
_unique_bytes = 0
#: At most this many bytes of categories are remembered (past it the set starts again).
_MAX_UNIQUE_BYTES = 1 << 24


def _unique(dictionary: pa.Array) -> bool:
    """Whether a dictionary of strings (no nulls) repeats no text: a Python set for small
    ones, Arrow's hash for many; remembered by content (:data:`_UNIQUE`)."""
    global _unique_bytes
    key = _texts_key(dictionary) if pa.types.is_large_string(dictionary.type) else None
    if key is not None and key in _UNIQUE:
        return True
    if len(dictionary) <= _SET_CHECKED:
        unique = len(set(dictionary.to_pylist())) == len(dictionary)
    else:
        unique = pc.count_distinct(dictionary).as_py() == len(dictionary)
    if unique and key is not None:
        size = len(key[0]) + len(key[1])
        if _unique_bytes + size > _MAX_UNIQUE_BYTES:
            _UNIQUE.clear()
            _unique_bytes = 0
        _UNIQUE.add(key)
        _unique_bytes += size
    return unique


def _texts_key(dictionary: pa.Array) -> tuple[bytes, bytes]:
    """A large_string array's texts exactly (their order included): this slice's offsets into
    its data buffer, and that buffer."""
    offsets, data = dictionary.buffers()[1:3]
    ends = np.frombuffer(offsets, np.int64, len(dictionary) + 1, 8 * dictionary.offset)
    return ends.tobytes(), b"" if data is None else data.to_pybytes()


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
    """The categorical dtype of an Arrow dictionary of strings (checked by :func:`_check_batch`:
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
        # (no nulls, no duplicates: checked by _check_batch).
        categories = pd.Index(ArrowStringArray(dictionary, dtype=STR_DTYPE), copy=False)
        return checked_dtype(categories, True)
    return category_dtype(dictionary.to_pylist())


class _Damaged(ValueError):
    """An entry whose checksums or structure do not match: a miss."""


#: What reading a damaged or unreadable entry raises (meta.json's decode errors are
#: ValueErrors: :func:`_decode_meta` ends with json's).
_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, pa.ArrowException)


def _ranks_crc(metas: Any) -> int:
    """CRC-32 of the ranks' metadata as meta.json's decoder gives it back (keys sorted).

    msgspec's encoder (~10x json's); json's for what it cannot encode (lone surrogates).
    Only ever compared with itself: the writer and the reader both call it.
    """
    try:
        text = msgspec.json.encode(metas, order="sorted")
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
        text = json.dumps(metas, sort_keys=True, separators=(",", ":")).encode()
    return _crc32(text)


def _decode_meta(text: bytes) -> Any:
    """meta.json's document: msgspec's decoder, or json's for what only it reads (NaN, lone surrogates)."""
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
    meta_path = os.path.join(entry, "meta.json")
    try:
        with open(meta_path, "rb") as fh:
            text = fh.read()
    except OSError:
        return None  # no entry (or no readable one: the parse that follows rewrites it)
    try:
        with paused_gc():
            return _read_entry(entry, meta_path, text, classifier)
    except _UNREADABLE:
        # A damaged entry is a miss; it is rewritten after parsing.
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _read_entry(entry: str, meta_path: str, text: bytes, classifier: Classifier) -> list[RankData]:
    doc = _decode_meta(text)
    if not isinstance(doc, dict) or doc.get("format") != ENTRY_FORMAT:
        raise _Damaged("not an entry of this format")
    metas, crcs = doc["ranks"], doc["crc32"]
    if not isinstance(metas, list) or not metas or not isinstance(crcs, dict):
        raise _Damaged("no ranks")
    if doc["ranks_crc32"] != _ranks_crc(metas):
        raise _Damaged("meta.json was changed")
    stored = doc["classes"]
    kept = stored is not None and stored == rules_key(classifier)
    out = [
        _read_rank(entry, i, RankMeta.from_json(meta), crcs, stored, kept, classifier) for i, meta in enumerate(metas)
    ]
    os.utime(meta_path)  # last use, for pruning
    return out


def _read_rank(
    entry: str, i: int, meta: RankMeta, crcs: dict[str, int], stored: Any, kept: bool, classifier: Classifier
) -> RankData:
    """Rank ``i`` of an entry (its files checked against ``crcs``), with ``meta``, classified by
    ``classifier`` (unless ``kept``: the stored ``gpu_class`` column is that classifier's)."""
    tables = {}
    for name in _TABLES:
        file_name = f"r{i}.{name}.arrow"
        buffer = _file_buffer(os.path.join(entry, file_name))
        if _crc32(memoryview(buffer)) != crcs[file_name]:
            raise _Damaged(f"{file_name} was changed")
        reader = pa.ipc.RecordBatchFileReader(buffer)
        if reader.num_record_batches != 1:
            raise _Damaged(f"{file_name} holds {reader.num_record_batches} record batches")
        batch = reader.get_batch(0)
        _check_batch(batch, file_name)
        if name == "events" and (stored is not None) != ("gpu_class" in batch.schema.names):
            raise _Damaged(f"{file_name}: the gpu_class column does not match meta.json")
        # Checked: the frame is built when first used (see model.rank_data.Deferred).
        tables[name] = Deferred(functools.partial(_from_arrow, batch))
    d = RankData(meta=meta, **tables)
    if kept:
        return d
    return replaced(d, events=Deferred(functools.partial(_classified_events, d, classifier)))


def _classified_events(d: RankData, classifier: Classifier) -> pd.DataFrame:
    return classified(d, classifier).events


def read_rank(entry: str, i: int, meta: RankMeta, *, classifier: Classifier) -> RankData | None:
    """Rank ``i`` of the entry in folder ``entry`` as :func:`read` gives it, with ``meta`` (the
    loader may have renumbered the rank), or None if the entry is missing, unreadable or
    damaged (left as it is: unlike :func:`read`, for a process other than the loader's, e.g.
    a worker computing per-rank results, which then get computed elsewhere)."""
    try:
        with open(os.path.join(entry, "meta.json"), "rb") as fh:
            doc = _decode_meta(fh.read())
        with paused_gc():
            if not isinstance(doc, dict) or doc.get("format") != ENTRY_FORMAT:
                return None
            stored = doc["classes"]
            kept = stored is not None and stored == rules_key(classifier)
            return _read_rank(entry, i, meta, doc["crc32"], stored, kept, classifier)
    except _UNREADABLE:
        return None


#: Arrow files up to this size are read into memory; bigger ones are memory-mapped (their
#: numeric columns then stay in the page cache, never copied).
_MAP_BYTES = 1 << 20


def _file_buffer(path: str) -> pa.Buffer:
    # A small file costs less read (one read, no mapping to set up and tear down): 0.2 ms
    # against 0.3 ms for a rank's five files, measured on the 1,024-rank set. os.read, not
    # a file object: half the cost for these small files (no buffered reader to set up).
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size <= _MAP_BYTES:
            data = os.read(fd, size)
            if len(data) != size:
                raise _Damaged(f"{os.path.basename(path)} changed while it was read")
            return pa.py_buffer(data)
    finally:
        os.close(fd)
    with pa.memory_map(path, "r") as source:
        return source.read_buffer()


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
        crcs: dict[str, int] = {}
        for i, d in enumerate(ranks):
            for name in _TABLES:
                file_name = f"r{i}.{name}.arrow"
                crcs[file_name] = _write_batch(str(tmp / file_name), _to_arrow(getattr(d, name)))
        # The metadata as it will be read back (JSON round trip), so that its CRC matches.
        metas = json.loads(json.dumps([d.meta.to_json() for d in ranks]))
        doc = {
            "format": ENTRY_FORMAT,
            "ranks": metas,
            "ranks_crc32": _ranks_crc(metas),
            "crc32": crcs,
            "classes": None if classifier is None else rules_key(classifier),
        }
        (tmp / "meta.json").write_text(json.dumps(doc))
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except OSError:
        pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_batch(path: str, batch: pa.RecordBatch) -> int:
    """Write ``batch`` as an Arrow IPC file at ``path``; its CRC-32.

    A small one is written in memory and saved by one write (a quarter of the cost of a file
    stream and a mapping to read it back, for the sample's tables); a big one is streamed
    to the file and read back mapped, so that it is never held twice in memory.
    """
    if batch.nbytes <= _MAP_BYTES:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        data = sink.getvalue()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return _crc32(memoryview(data))
    with pa.OSFile(path, "wb") as stream, pa.ipc.new_file(stream, batch.schema) as writer:
        writer.write_batch(batch)
    with pa.memory_map(path, "r") as written:
        return _crc32(memoryview(written.read_buffer()))


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
        meta = entry / "meta.json"
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
    """Delete every cached entry; returns the bytes freed."""
    root = Path(cache_dir) if cache_dir is not None else _keys.default_cache_dir()
    if not root.is_dir():
        return 0
    freed = 0
    for entry in root.iterdir():
        if entry.is_dir():
            freed += sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
            shutil.rmtree(entry, ignore_errors=True)
    return freed
