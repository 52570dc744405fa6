"""On-disk cache of parsed traces (Arrow IPC files), so that a second load is near-instant.

An entry is keyed by the trace file's real path, size and modification time, the reader
and schema versions and the reader options; a changed file or a new reader version simply
misses. Entries live outside the trace folder, in the user cache directory by default
(``~/.cache/jupyter_traceview`` on Linux).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc

from ..model.rank_data import RankData, RankMeta
from ..model.schema import READER_VERSION, SCHEMA_VERSION, categorical
from .readers.files import TraceFile

__all__ = ["clear_cache", "default_cache_dir", "prune"]

#: The cache is pruned back under this size (least recently used entries go first).
MAX_BYTES = 20 * 2**30

_TABLES = ("events", "gpu_args", "comms", "op_args", "memory")


def default_cache_dir() -> Path:
    """The cache folder used by ``tv.load(..., cache=True)``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("jupyter_traceview", appauthor=False))


def resolve_dir(cache: bool | str | os.PathLike[str]) -> Path | None:
    if cache is False or cache is None:
        return None
    if cache is True:
        return default_cache_dir()
    return Path(cache).expanduser()


def entry_key(tf: TraceFile, options: dict[str, Any]) -> str:
    ident = [
        os.path.realpath(tf.path),
        tf.size,
        tf.mtime_ns,
        READER_VERSION,
        SCHEMA_VERSION,
        sorted(options.items()),
    ]
    return hashlib.sha256(json.dumps(ident, default=str).encode()).hexdigest()[:32]


def _to_arrow(df: pd.DataFrame) -> pa.RecordBatch:
    """Columns as Arrow arrays without copies; categoricals keep every category."""
    arrays, names = [], []
    for col in df.columns:
        values = df[col]
        if isinstance(values.dtype, pd.CategoricalDtype):
            cat = values.array
            codes = np.asarray(cat.codes)
            indices = pa.array(codes, mask=codes < 0)
            dictionary = pa.array(np.asarray(cat.categories, dtype=object), type=pa.string())
            arrays.append(pa.DictionaryArray.from_arrays(indices, dictionary))
        else:
            arrays.append(pa.array(values.to_numpy()))
        names.append(col)
    # A record batch (not a table): an empty one is still written, dictionaries included.
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _from_arrow(table: pa.Table) -> pd.DataFrame:
    """A frame over the (memory-mapped) Arrow buffers: numeric columns are not copied."""
    columns: dict[str, object] = {}
    for name, chunked in zip(table.column_names, table.columns, strict=True):
        array = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
        if pa.types.is_dictionary(array.type):
            codes = array.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            columns[name] = categorical(codes=codes, categories=array.dictionary.to_pylist())
        else:
            columns[name] = array.to_numpy(zero_copy_only=False)
    return pd.DataFrame(columns, copy=False)


def read(cache_dir: Path, key: str) -> list[RankData] | None:
    """The cached ranks of an entry, or None if it is missing or unreadable."""
    entry = cache_dir / key
    meta_path = entry / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        metas = json.loads(meta_path.read_text())
        os.utime(meta_path)  # last use, for pruning
        out = []
        for i, meta in enumerate(metas):
            tables = {}
            for name in _TABLES:
                with pa.memory_map(str(entry / f"r{i}.{name}.arrow"), "r") as source:
                    tables[name] = _from_arrow(pa.ipc.open_file(source).read_all())
            out.append(RankData(meta=RankMeta.from_json(meta), **tables))
        return out
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        # A damaged entry is a miss; it is rewritten after parsing.
        shutil.rmtree(entry, ignore_errors=True)
        return None


def write(cache_dir: Path, key: str, ranks: Sequence[RankData]) -> None:
    """Store an entry atomically (written aside, then renamed). Failures are silent misses."""
    entry = cache_dir / key
    tmp = cache_dir / f".{key}.{uuid.uuid4().hex}.tmp"
    try:
        tmp.mkdir(parents=True, exist_ok=False)
        for i, d in enumerate(ranks):
            for name in _TABLES:
                batch = _to_arrow(getattr(d, name))
                with (
                    pa.OSFile(str(tmp / f"r{i}.{name}.arrow"), "wb") as sink,
                    pa.ipc.new_file(sink, batch.schema) as writer,
                ):
                    writer.write_batch(batch)
        (tmp / "meta.json").write_text(json.dumps([d.meta.to_json() for d in ranks]))
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except OSError:
        pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if not root.is_dir():
        return 0
    freed = 0
    for entry in root.iterdir():
        if entry.is_dir():
            freed += sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
            shutil.rmtree(entry, ignore_errors=True)
    return freed
