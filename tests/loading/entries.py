"""Reading and rewriting cache entry files in tests (``loading/cache.py``'s format): what a
damaged or forged entry looks like, with a valid CRC where a test wants only the cache's
structural checks to stand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc

from jupyter_traceview.loading import cache as tv_cache

TABLES = ("events", "gpu_args", "comms", "op_args", "memory")


def entry_files(cache: Path) -> list[Path]:
    """Every entry file of a cache folder, in entry order."""
    return sorted(p / tv_cache.ENTRY_FILE for p in cache.iterdir() if p.is_dir())


def read_entry(path: Path) -> tuple[dict[str, Any], list[pa.RecordBatch]]:
    """An entry file's metadata (CRC checked) and its ranks' record batches."""
    buffer = pa.py_buffer(path.read_bytes())
    doc = tv_cache._entry_doc(buffer)
    batches = [pa.ipc.open_stream(buffer.slice(start, length)).read_next_batch() for start, length in doc["streams"]]
    return doc, batches


def write_entry(path: Path, doc: dict[str, Any], batches: list[pa.RecordBatch]) -> None:
    """Write an entry file of these metadata and batches, with a valid CRC (replacing it)."""
    path.unlink()
    tv_cache._write_entry(str(path), batches, {k: v for k, v in doc.items() if k != "streams"})


def table_of(batch: pa.RecordBatch, table: str) -> pa.RecordBatch:
    """One table of a rank batch, as a record batch of its columns."""
    rows = batch.column(TABLES.index(table)).values
    return pa.RecordBatch.from_struct_array(rows)


def with_table(batch: pa.RecordBatch, table: str, new: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with ``table`` replaced by the columns of ``new`` (any types: a forgery)."""
    columns = list(batch.columns)
    rows = pa.StructArray.from_arrays(new.columns, names=new.schema.names)
    columns[TABLES.index(table)] = pa.LargeListArray.from_arrays(pa.array([0, len(rows)], pa.int64()), rows)
    return pa.RecordBatch.from_arrays(columns, names=list(TABLES))


def rewrite_table(
    cache: Path, table: str, change: Callable[[pa.RecordBatch], pa.RecordBatch], *, rank: int = 0
) -> None:
    """Replace rank ``rank``'s ``table`` in every entry by ``change(table)``, the CRC made to
    match (so only the cache's own checks stand)."""
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        batches[rank] = with_table(batches[rank], table, change(table_of(batches[rank], table)))
        write_entry(path, doc, batches)


def rewrite_column(
    cache: Path, table: str, column: str, change: Callable[[pa.Array], pa.Array], *, rank: int = 0
) -> None:
    """Replace ``column`` of rank ``rank``'s ``table`` in every entry by ``change(column)``, the CRC made to match."""

    def changed(t: pa.RecordBatch) -> pa.RecordBatch:
        i = t.schema.get_field_index(column)
        return t.set_column(i, column, change(t.column(i)))

    rewrite_table(cache, table, changed, rank=rank)
