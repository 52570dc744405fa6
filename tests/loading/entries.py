"""Reading and rewriting cache entry files in tests (``loading/cache.py``'s format): what a
damaged or forged entry looks like: with a valid CRC but not sealed (what this module did
not write: a miss), or sealed with the folder's key (what only its writer, which checks what
it seals, does: where a test wants the checks made after the seal to stand)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc

from jupyter_traceview.loading import cache as tv_cache

TABLES = ("events", "gpu_args", "comms", "op_args", "memory", "counters")


def entry_files(cache: Path) -> list[Path]:
    """Every entry file of a cache folder, in entry order."""
    return sorted(p / tv_cache.ENTRY_FILE for p in cache.iterdir() if p.is_dir())


def key_of(path: Path) -> bytes:
    """The sealing key of the cache folder an entry file is in."""
    key = tv_cache._seal_key(str(path.parent.parent))
    assert key is not None
    return key


def read_entry(path: Path) -> tuple[dict[str, Any], list[pa.RecordBatch]]:
    """An entry file's metadata (CRC and seal checked) and its ranks' record batches."""
    buffer = pa.py_buffer(path.read_bytes())
    doc = tv_cache._entry_doc(buffer, key_of(path))
    batches = [pa.ipc.open_stream(buffer.slice(start, length)).read_next_batch() for start, length in doc["streams"]]
    return doc, batches


def write_entry(path: Path, doc: dict[str, Any], batches: list[pa.RecordBatch], *, sealed: bool = False) -> None:
    """Write an entry file of these metadata and batches, not checked, with a valid CRC
    (replacing it): sealed with its cache folder's key if ``sealed`` (as only this module's
    writer, which checks what it seals, does), else with another key (what this module did
    not write)."""
    path.unlink()
    key = key_of(path) if sealed else bytes(32)
    tv_cache._write_entry(str(path), batches, {k: v for k, v in doc.items() if k != "streams"}, key)


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
    cache: Path,
    table: str,
    change: Callable[[pa.RecordBatch], pa.RecordBatch],
    *,
    rank: int = 0,
    sealed: bool = False,
) -> None:
    """Replace rank ``rank``'s ``table`` in every entry by ``change(table)``, the CRC made to
    match (sealed as :func:`write_entry` says)."""
    for path in entry_files(cache):
        doc, batches = read_entry(path)
        batches[rank] = with_table(batches[rank], table, change(table_of(batches[rank], table)))
        write_entry(path, doc, batches, sealed=sealed)


def column_change(column: str, change: Callable[[pa.Array], pa.Array]) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """A change of a table: its ``column`` replaced by ``change(column)``."""

    def changed(t: pa.RecordBatch) -> pa.RecordBatch:
        i = t.schema.get_field_index(column)
        return t.set_column(i, column, change(t.column(i)))

    return changed


def rewrite_column(
    cache: Path,
    table: str,
    column: str,
    change: Callable[[pa.Array], pa.Array],
    *,
    rank: int = 0,
    sealed: bool = False,
) -> None:
    """Replace ``column`` of rank ``rank``'s ``table`` in every entry by ``change(column)``, the CRC made to match."""
    rewrite_table(cache, table, column_change(column, change), rank=rank, sealed=sealed)
