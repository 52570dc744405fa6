"""benchmarks/synth.py's ranks derived from rank 0 (``generate(from_one=True)``): each is the
file ``rank_json`` writes for that rank from rank 0's times, but for the correlation ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jupyter_traceview as tv
from tests.benchmarks import run_script

synth = run_script("benchmarks_synth", "benchmarks/synth.py")


def _without_correlations(doc: dict[str, Any]) -> dict[str, Any]:
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "ac2g":
            ev.pop("id")
        ev.get("args", {}).pop("correlation", None)
    return doc


def test_derived_rank_is_the_rank_written_from_rank_0s_times(tmp_path: Path) -> None:
    world = 3
    size = synth.generate(tmp_path, world, 3000, seed=5, from_one=True, workers=1)
    ops = synth.program(12)
    sch = synth.schedule(ops, round(3000 / synth.events_per_iteration(ops)), 1, 5)
    files = sorted(tmp_path.glob("rank-*.pt.trace.json"))
    assert [f.name for f in files] == [f"rank-{r}.pt.trace.json" for r in range(world)]
    assert size == sum(f.stat().st_size for f in files)
    for rank, f in enumerate(files):
        expected = synth.rank_json(rank, world, ops, sch, 100)
        if rank == 0:
            assert f.read_text() == expected
        got = json.loads(f.read_text())
        assert got["distributedInfo"]["rank"] == rank
        assert {ev["pid"] for ev in got["traceEvents"]} == {rank, 4000 + rank}
        assert _without_correlations(got) == _without_correlations(json.loads(expected))


def test_derived_ranks_load_as_distinct_ranks_with_equal_tables(tmp_path: Path) -> None:
    synth.generate(tmp_path, 2, 3000, from_one=True, gz=True, workers=1)
    trace = tv.load(tmp_path, cache=False, progress=False)
    assert trace.ranks == (0, 1)
    e0, e1 = trace.events(0), trace.events(1)
    assert len(e0) == len(e1) > 0
    assert (e0["ts_ns"].to_numpy() == e1["ts_ns"].to_numpy()).all()
    assert set(e0["pid"]) != set(e1["pid"])
