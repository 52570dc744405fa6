"""``tv.sql(trace, "select ...")``: DuckDB over a trace's Arrow tables, without copying them.

Each rank's tables are handed to DuckDB as Arrow record batches built over the pandas
frames' buffers (:func:`~.cache_arrow.to_arrow`: numeric columns not copied, categorical
columns as dictionaries of their categories); a view per table puts the ranks together
under a leading ``rank`` column (``UNION ALL``), as ``trace.events()`` does. DuckDB reads
what the query needs, where it lies.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import OptionError, TraceviewError
from ..model.trace import Trace
from .cache_arrow import TABLES, to_arrow

__all__ = ["SQL_TABLES", "sql"]

#: The tables a query names (docs/schema.md, "SQL and Parquet"): the schema's six tables, all
#: ranks under a leading ``rank`` column, and ``ranks``: one row per rank of its metadata.
SQL_TABLES = (*TABLES, "ranks")


def sql(trace: Trace, query: str) -> pd.DataFrame:
    """Run a DuckDB SQL query over the trace's tables; the result as a DataFrame.

    The tables are ``events``, ``gpu_args``, ``comms``, ``op_args``, ``memory`` and ``counters`` (the
    columns of docs/schema.md, with a leading ``rank`` column), and ``ranks`` (``rank``,
    ``path``, ``world_size``, ``backend``, ``source_format``). DuckDB reads the trace's own
    buffers (Arrow, not copied); needs the extra ``jupyter_traceview[sql]`` (duckdb). On a
    trace loaded with ``engine="dask"`` each rank's tables are brought into this process.

    Parameters
    ----------
    trace:
        The trace (``tv.load``).
    query:
        A DuckDB ``SELECT`` (or any statement returning rows) over the tables above.

    Returns
    -------
    pandas.DataFrame
        The query's rows, its columns as it names them.

    Raises
    ------
    OptionError
        The query is not a string, or DuckDB refuses it (the message says why).

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path(), ranks=[0, 1])
    >>> top = tv.sql(trace, "select rank, count(*) as kernels from events "
    ...                     "where kind = 'kernel' group by rank order by rank")
    >>> list(top.columns)
    ['rank', 'kernels']
    """
    if not isinstance(query, str):
        raise OptionError(f"query must be a string of SQL, got {type(query).__name__}")
    try:
        import duckdb
    except ImportError:
        raise TraceviewError(
            "tv.sql needs DuckDB: pip install 'jupyter_traceview[sql]' (then restart the kernel)"
        ) from None
    con = duckdb.connect(":memory:")
    try:
        keep: list[Any] = []  # the Arrow tables registered (alive until the query is done)
        for table in TABLES:
            parts = []
            for rank in trace.ranks:
                arrow = pa.Table.from_batches([to_arrow(getattr(trace.rank_data(rank), table))])
                name = f"_{table}_{rank}"
                con.register(name, arrow)
                keep.append(arrow)
                parts.append(f'select {int(rank)} as "rank", * from "{name}"')
            if parts:
                con.execute(f'create view "{table}" as ' + " union all ".join(parts))
        con.register("ranks", _ranks(trace))
        try:
            result: pd.DataFrame = con.execute(query).df()
        except duckdb.Error as exc:
            raise OptionError(f"the SQL query failed: {exc}") from None
        return result
    finally:
        con.close()


def _ranks(trace: Trace) -> pd.DataFrame:
    rows = []
    for r in trace.ranks:
        m = trace.meta(r)
        rows.append(
            {
                "rank": int(r),
                "path": m.path,
                "world_size": m.world_size,
                "backend": m.backend,
                "source_format": m.source_format,
            }
        )
    return pd.DataFrame(rows, columns=["rank", "path", "world_size", "backend", "source_format"])
