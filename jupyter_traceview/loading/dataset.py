"""Runs as Parquet datasets: ``tv.export(trace, dest)`` writes one, ``tv.load(dest)`` reads it.

A dataset is a folder (local, or any fsspec URL: ``s3://bucket/run``) of Parquet files, one
per (table, rank), Hive-partitioned by rank, and a metadata document::

    dest/traceview.json                      format, schema version, ranks' RankMeta, window
    dest/events/rank=0/part-0.parquet        trace.events(0), ``gpu_class`` included
    dest/gpu_args/rank=0/part-0.parquet      trace.gpu_args(0)
    dest/comms/rank=0/part-0.parquet         trace.comms(0)  (the collectives)
    dest/op_args/rank=0/part-0.parquet       trace.op_args(0)
    dest/memory/rank=0/part-0.parquet        trace.memory(0)
    dest/counters/rank=0/part-0.parquet      trace.counters(0)  (PM sampling's counter samples)

The columns are the schema's (docs/schema.md), text columns dictionary-encoded strings, so
that DuckDB, polars or Spark read the dataset as it is (``read_parquet('dest/events/*/*.parquet',
hive_partitioning=true)`` gives a ``rank`` column). Each file's Arrow metadata keeps the
full category lists of its categorical columns, so that reading back gives the very frames
that were written: every analysis gives the same result on the dataset as on the trace.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import TraceFormatError
from ..model.classify import Classifier
from ..model.frames import category_dtype
from ..model.rank_data import RankData, RankMeta
from ..model.trace import Trace
from ..model.versions import SCHEMA_VERSION
from . import storage
from .cache_arrow import TABLES, to_arrow

__all__ = ["DATASET_FORMAT", "METADATA_FILE", "dataset_ranks", "export", "is_dataset", "read_dataset", "read_rank"]

#: The metadata document at a dataset's root (its presence makes a folder a dataset).
METADATA_FILE = storage.DATASET_METADATA
is_dataset = storage.is_dataset
#: The dataset layout's version (``format`` in the metadata document).
DATASET_FORMAT = 1
#: Where a Parquet file's Arrow metadata keeps its categorical columns' category lists.
_CATEGORIES_KEY = b"traceview:categories"


def export(trace: Trace, dest: str, *, overwrite: bool = False, storage_options: dict[str, Any] | None = None) -> str:
    """Write ``trace`` as a Parquet dataset in ``dest``: one file per (table, rank).

    Parameters
    ----------
    trace:
        The trace to write (a trace narrowed with ``select`` writes what it holds; a trace
        loaded with ``engine="dask"`` is written by the workers, rank by rank).
    dest:
        A folder path or an fsspec URL (``s3://bucket/run``); created if missing.
    overwrite:
        Replace a dataset already in ``dest``. Without it, a ``dest`` holding one is an error.
    storage_options:
        For a URL: the filesystem's options (credentials, ``endpoint_url``...), as fsspec
        takes them; by default the usual environment (``AWS_*`` variables, profiles).

    Returns
    -------
    str
        ``dest``, for ``tv.load(tv.export(trace, dest))``.

    Raises
    ------
    TraceFormatError
        ``dest`` already holds a dataset (without ``overwrite=True``) or a file.

    Examples
    --------
    >>> import tempfile, jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path(), ranks=[0, 1])
    >>> dest = tv.export(trace, tempfile.mkdtemp() + "/run")
    >>> tv.load(dest).ranks
    (0, 1)
    """
    fs, root = storage.filesystem(dest, storage_options)
    with storage.errors(dest):
        if fs.exists(root) and not fs.isdir(root):
            raise TraceFormatError(dest, "is a file", "Export to a folder (it is created if missing)")
        if fs.exists(posixpath.join(root, METADATA_FILE)):
            if not overwrite:
                raise TraceFormatError(
                    dest,
                    "already holds a dataset",
                    "Pass overwrite=True (traceview export --overwrite), or another folder",
                )
            for table in TABLES:
                if fs.exists(posixpath.join(root, table)):
                    fs.rm(posixpath.join(root, table), recursive=True)
        fs.makedirs(root, exist_ok=True)
        metas = trace.map_ranks(_write_rank, dest, storage_options)
        doc = {
            "format": DATASET_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "source": trace.source,
            "window": list(trace.window) if trace.window is not None else None,
            "origin_ns": getattr(trace, "_origin", None),
            "tables": list(TABLES),
            "ranks": [metas[r] for r in sorted(metas)],
        }
        # Written last: a dataset whose writing stopped half way is not one.
        with fs.open(posixpath.join(root, METADATA_FILE), "w") as fh:
            json.dump(doc, fh, indent=1, default=str)
    return dest


def _write_rank(one: Trace, dest: str, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    """Write the one rank of ``one`` (run where the rank lives: see ``Trace.map_ranks``);
    its metadata as JSON."""
    fs, root = storage.filesystem(dest, storage_options)
    (rank,) = one.ranks
    d = one.rank_data(rank)
    for table in TABLES:
        frame = getattr(d, table)
        batch = to_arrow(frame)
        categories = {
            c: list(frame[c].cat.categories) for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)
        }
        schema = batch.schema.with_metadata({_CATEGORIES_KEY: json.dumps(categories).encode()})
        folder = posixpath.join(root, table, f"rank={rank}")
        fs.makedirs(folder, exist_ok=True)
        with fs.open(posixpath.join(folder, "part-0.parquet"), "wb") as fh:
            pq.write_table(pa.Table.from_batches([batch], schema=schema), fh, compression="zstd")
    meta: dict[str, Any] = json.loads(json.dumps(d.meta.to_json(), default=str))
    return meta


def _metadata(dest: str, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    fs, root = storage.filesystem(dest, storage_options)
    with storage.errors(dest), fs.open(posixpath.join(root, METADATA_FILE), "rb") as fh:
        try:
            doc: dict[str, Any] = json.load(fh)
        except ValueError as exc:
            raise TraceFormatError(dest, f"its {METADATA_FILE} is not JSON ({exc})", "Export the trace again") from None
    if doc.get("format") != DATASET_FORMAT or doc.get("schema_version") != SCHEMA_VERSION:
        raise TraceFormatError(
            dest,
            f"is a dataset of format {doc.get('format')}, schema {doc.get('schema_version')}; this version reads "
            f"format {DATASET_FORMAT}, schema {SCHEMA_VERSION}",
            "Export the trace again with this version",
        )
    return doc


def read_rank(dest: str, meta: dict[str, Any], storage_options: dict[str, Any] | None = None) -> RankData:
    """One rank's tables from the dataset in ``dest`` (``meta``: its entry in the metadata)."""
    fs, root = storage.filesystem(dest, storage_options)
    rank = int(meta["rank"])
    tables: dict[str, pd.DataFrame] = {}
    with storage.errors(dest):
        for table in TABLES:
            path = posixpath.join(root, table, f"rank={rank}", "part-0.parquet")
            with fs.open(path, "rb") as fh:
                try:
                    arrow = pq.read_table(fh)
                except (pa.ArrowException, OSError) as exc:
                    raise TraceFormatError(
                        f"{dest}/{table}/rank={rank}", f"unreadable ({exc})", "Export again"
                    ) from None
            tables[table] = _frame(arrow)
    return RankData(meta=RankMeta.from_json(meta), **tables)


def _frame(arrow: pa.Table) -> pd.DataFrame:
    """The frame written: categorical columns with their full category lists, in their order."""
    raw = (arrow.schema.metadata or {}).get(_CATEGORIES_KEY)
    categories: dict[str, list[str]] = json.loads(raw) if raw else {}
    columns: dict[str, Any] = {}
    for name, column in zip(arrow.column_names, arrow.columns, strict=True):
        if name in categories:
            dtype = category_dtype(categories[name])
            columns[name] = pd.Series(column.to_pandas(), copy=False).astype(dtype)
        else:
            columns[name] = column.to_numpy()
    return pd.DataFrame(columns, columns=arrow.column_names)


def dataset_ranks(
    dest: str, ranks: Iterable[int] | None, storage_options: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metadata document of the dataset in ``dest`` and the entries of the ranks wanted
    (``ranks``: None for all); an error naming ``dest`` when it holds none of them."""
    doc = _metadata(dest, storage_options)
    wanted = None if ranks is None else {int(r) for r in ranks}
    metas = [m for m in doc["ranks"] if wanted is None or int(m["rank"]) in wanted]
    if not metas:
        raise TraceFormatError(dest, f"holds no rank of {sorted(wanted or ())}", "Check ranks=")
    return doc, metas


def read_dataset(
    dest: str,
    *,
    ranks: Iterable[int] | None = None,
    classifier: Classifier | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Trace:
    """The trace :func:`export` wrote in ``dest`` (``tv.load`` calls it for a dataset; with
    ``engine="dask"``, :func:`~.dask_engine.load_dataset_dask` reads it on the workers).

    The ``gpu_class`` written is kept unless ``classifier`` is given (then the kernels are
    classified again by it).
    """
    doc, metas = dataset_ranks(dest, ranks, storage_options)
    data = [read_rank(dest, m, storage_options) for m in metas]
    return _trace(doc, data, classifier, dest)


def _trace(doc: dict[str, Any], data: list[RankData], classifier: Classifier | None, dest: str) -> Trace:
    window = doc.get("window")
    trace = Trace(
        data,
        classifier=classifier,
        source=doc.get("source") or dest,
        window=None if window is None else (int(window[0]), int(window[1])),
        _classified=classifier is None,
    )
    if doc.get("origin_ns") is not None:
        trace._origin = int(doc["origin_ns"])
    return trace
