"""Runs as Parquet datasets: tv.export writes one, tv.load reads it back identical; tv.sql."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading.cache_arrow import TABLES
from jupyter_traceview.model.versions import SCHEMA_VERSION
from tests.analysis.test_golden import MG

TABLE_ACCESSORS = ("events", "gpu_args", "comms", "op_args", "memory", "counters")


def _analyses(folder: str) -> list[str]:
    # (the diff against another folder loads that folder: the same on both sides, skipped)
    return [a for f, a in MG.cases() if f == folder and not a.startswith("trace_diff_vs")]


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small"])
def test_every_analysis_is_the_same_on_the_dataset(folder: str, tmp_path: Path) -> None:
    trace = MG.load(folder)
    dest = tv.export(trace, str(tmp_path / "run"))
    back = tv.load(dest)
    assert back.ranks == trace.ranks
    for rank in trace.ranks:
        assert back.meta(rank) == trace.meta(rank)
        for table in TABLE_ACCESSORS:
            pd.testing.assert_frame_equal(getattr(back, table)(rank), getattr(trace, table)(rank), check_exact=True)
    pd.testing.assert_frame_equal(back.iterations, trace.iterations)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        for analysis in _analyses(folder):
            fn = MG.ANALYSES[analysis](folder)
            pd.testing.assert_frame_equal(fn(back), fn(trace), obj=f"{folder}/{analysis}")


def test_the_layout_is_partitioned_by_rank(dlrm: tv.Trace, tmp_path: Path) -> None:
    dest = tv.export(dlrm.select(ranks=[2, 5]), str(tmp_path / "run"))
    for table in TABLES:
        assert sorted(p.name for p in (tmp_path / "run" / table).iterdir()) == ["rank=2", "rank=5"]
    doc = json.loads((tmp_path / "run" / "traceview.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert [m["rank"] for m in doc["ranks"]] == [2, 5]
    assert tv.load(dest, ranks=[5]).ranks == (5,)


def test_a_narrowed_trace_keeps_its_window_and_origin(dlrm: tv.Trace, tmp_path: Path) -> None:
    t0 = dlrm.t0_ns
    narrowed = dlrm.select(time_range=(t0 + 2_000_000, t0 + 9_000_000))
    back = tv.load(tv.export(narrowed, str(tmp_path / "run")))
    assert back.window == narrowed.window
    assert back.t0_ns == narrowed.t0_ns
    pd.testing.assert_frame_equal(tv.summary(back), tv.summary(narrowed))


def test_a_dataset_is_not_overwritten_unless_asked(dlrm: tv.Trace, tmp_path: Path) -> None:
    dest = tv.export(dlrm.select(ranks=[0, 1]), str(tmp_path / "run"))
    with pytest.raises(tv.TraceFormatError, match="already holds a dataset"):
        tv.export(dlrm, dest)
    tv.export(dlrm.select(ranks=[3]), dest, overwrite=True)
    assert tv.load(dest).ranks == (3,)
    assert sorted(p.name for p in (tmp_path / "run" / "events").iterdir()) == ["rank=3"]


def test_a_dataset_of_another_schema_is_refused(dlrm: tv.Trace, tmp_path: Path) -> None:
    dest = tv.export(dlrm.select(ranks=[0]), str(tmp_path / "run"))
    meta = tmp_path / "run" / "traceview.json"
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps({**doc, "schema_version": -1}))
    with pytest.raises(tv.TraceFormatError, match="schema -1"):
        tv.load(dest)


def test_other_tools_read_the_dataset(dlrm: tv.Trace, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    dest = tv.export(dlrm, str(tmp_path / "run"))
    busy = duckdb.sql(
        f"select rank, sum(dur_ns) as busy_ns from read_parquet('{dest}/events/*/*.parquet', hive_partitioning=true) "
        "where kind = 'kernel' group by rank order by rank"
    ).df()
    events = dlrm.events()
    want = events[events["kind"] == "kernel"].groupby("rank")["dur_ns"].sum()
    assert busy["busy_ns"].astype("int64").tolist() == want.tolist()
    assert busy["rank"].tolist() == list(dlrm.ranks)


def test_sql_reads_every_table(dlrm: tv.Trace) -> None:
    pytest.importorskip("duckdb")
    counts = tv.sql(dlrm, "select rank, count(*) as n from events group by rank order by rank")
    assert counts["n"].tolist() == [len(dlrm.events(r)) for r in dlrm.ranks]
    for table in TABLE_ACCESSORS:
        n = tv.sql(dlrm, f"select count(*) as n from {table}")["n"].iloc[0]
        assert n == len(getattr(dlrm, table)())
    top = tv.sql(
        dlrm,
        "select name, sum(dur_ns) as total_ns from events where kind = 'kernel' and rank = 3 "
        "group by name order by total_ns desc limit 1",
    )
    kernels = dlrm.events(3)[dlrm.events(3)["kind"] == "kernel"]
    want = kernels.groupby("name", observed=True)["dur_ns"].sum().sort_values(ascending=False)
    assert (top["name"].iloc[0], int(top["total_ns"].iloc[0])) == (want.index[0], want.iloc[0])
    ranks = tv.sql(dlrm, "select rank, path from ranks order by rank")
    assert ranks["path"].tolist() == [dlrm.meta(r).path for r in dlrm.ranks]


def test_sql_says_what_is_wrong(dlrm: tv.Trace) -> None:
    pytest.importorskip("duckdb")
    with pytest.raises(tv.OptionError, match=r"the SQL query failed.*no_such_table"):
        tv.sql(dlrm, "select * from no_such_table")
    with pytest.raises(tv.OptionError, match="must be a string"):
        tv.sql(dlrm, 3)  # type: ignore[arg-type]


def test_the_cli_exports_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_traceview.cli import main

    dest = str(tmp_path / "run")
    assert main(["export", "--sample", "--ranks", "0,1", dest]) == 0
    assert "2 rank(s) as a Parquet dataset" in capsys.readouterr().out
    assert tv.load(dest).ranks == (0, 1)
    assert main(["export", "--sample", dest]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds a dataset" in err[0]
    assert main(["export", "--sample", "--overwrite", "-q", dest]) == 0
    assert tv.load(dest).ranks == tuple(range(8))
