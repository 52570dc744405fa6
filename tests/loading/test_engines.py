"""Every pinned analysis gives identical results on the serial, process-pool and dask engines, and from the cache."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.views.timeline.index import TimelineIndex
from tests.views.test_timeline_scaleout import queries, same_structure

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_golden", ROOT / "scripts" / "make_golden.py")
assert _spec is not None and _spec.loader is not None
MG = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("make_golden", MG)
_spec.loader.exec_module(MG)

FOLDER = "dlrm_8rank_v100"


def run(analysis: str, trace: tv.Trace) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)  # some analyses warn on this trace, by design
        return MG.ANALYSES[analysis](FOLDER)(trace)


ANALYSES = [a for f, a in MG.cases() if f == FOLDER]


@pytest.fixture(scope="module")
def engines(dask_client: object, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tv.Trace]:
    cache = tmp_path_factory.mktemp("engines-cache")
    tv.load(tv.sample_path(), cache=cache)
    return {
        # From the cache the columns are read-only memory maps: analyses must never write into them.
        "cached": tv.load(tv.sample_path(), cache=cache),
        "process": tv.load(tv.sample_path(), engine="process", cache=False),
        "dask": tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False),
    }


@pytest.mark.parametrize("analysis", ANALYSES)
def test_engines_agree(engines: dict[str, tv.Trace], dlrm: tv.Trace, analysis: str) -> None:
    want = run(analysis, dlrm)
    for name, trace in engines.items():
        got = run(analysis, trace)
        pd.testing.assert_frame_equal(got, want, obj=f"{analysis} on engine={name}")


@pytest.mark.parametrize("analysis", ["summary", "temporal_breakdown", "kernel_launch_stats", "stragglers"])
def test_engines_agree_on_a_scoped_trace(engines: dict[str, tv.Trace], dlrm: tv.Trace, analysis: str) -> None:
    t0 = dlrm.t0_ns
    window = (t0 + 2_000_000, t0 + 9_000_000)
    want = run(analysis, dlrm.select(ranks=[1, 2, 6], time_range=window))
    for name, trace in engines.items():
        got = run(analysis, trace.select(ranks=[1, 2, 6], time_range=window))
        pd.testing.assert_frame_equal(got, want, obj=f"{analysis} on engine={name}")


def test_auto_engine_reads_small_inputs_in_process_and_many_ranks_in_a_pool(
    dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_traceview.loading import plan, pool

    calls: list[int] = []
    real = pool.read_in_pool

    def spy(files: Any, todo: list[int], *args: Any) -> None:
        calls.append(len(todo))
        real(files, todo, *args)

    monkeypatch.setattr(pool, "read_in_pool", spy)
    # The bundled sample (8 small gzip files, ~4 MB of JSON): read in this process.
    small = tv.load(tv.sample_path(), cache=False)
    assert calls == [] and small.ranks == dlrm.ranks
    # The same 8 ranks counted as a big job: read by a process pool, one task per file.
    monkeypatch.setattr(plan, "PARALLEL_BYTES", 2**20)
    big = tv.load(tv.sample_path(), cache=False)
    assert calls == [8]
    pd.testing.assert_frame_equal(tv.summary(big), tv.summary(dlrm))
    # One small file alone never starts a pool (a big one is read in byte ranges by one: test_pieces.py).
    calls.clear()
    tv.load(tv.sample_path(), ranks=[3], cache=False)
    assert calls == []


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
@pytest.mark.parametrize("engine", ["cached", "process", "dask"])
def test_engines_agree_on_the_timeline(engines: dict[str, tv.Trace], dlrm: tv.Trace, engine: str, data: Any) -> None:
    """The timeline index answers the same on every engine (a dask trace builds it on the workers)."""
    want, got = TimelineIndex.of(dlrm), TimelineIndex.of(engines[engine])
    same_structure(want, got)
    queries(want, got, data.draw, n_windows=3)


@pytest.mark.parametrize("kind", ["all", "communication", "overlap"])
def test_whole_job_views_leave_the_rank_tables_on_the_workers(
    engines: dict[str, tv.Trace], dlrm: tv.Trace, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tv.summary and the heatmaps on a dask trace: per-rank work on the workers, no rank's tables fetched."""
    from jupyter_traceview.loading.dask_engine import DaskTrace

    def fetch(self: DaskTrace, rank: int) -> None:
        raise AssertionError(f"rank {rank}'s tables were brought to the notebook")

    monkeypatch.setattr(DaskTrace, "rank_data", fetch)
    dask = engines["dask"]
    step = int(dlrm.iterations["step"].iloc[0])
    pd.testing.assert_frame_equal(tv.utilization_heatmap(dask, kind=kind), tv.utilization_heatmap(dlrm, kind=kind))
    pd.testing.assert_frame_equal(
        tv.utilization_heatmap(dask, kind=kind, align=step, bins=40),
        tv.utilization_heatmap(dlrm, kind=kind, align=step, bins=40),
    )
    pd.testing.assert_frame_equal(tv.summary(dask), tv.summary(dlrm))


def test_a_script_without_a_main_guard_loads_with_a_pool_and_a_progress_bar(tmp_path: Path) -> None:
    # The workers are forked before the progress bar starts tqdm's monitor thread: a
    # threaded process would get a forkserver pool, which runs the script's top level
    # again in its server (and there, tv.load again).
    script = tmp_path / "load_script.py"
    script.write_text(
        "import sys\n"
        "import jupyter_traceview as tv\n"
        "print('top level ran', flush=True)\n"
        "trace = tv.load(sys.argv[1], engine='process', progress=True, cache=False)\n"
        "print('ranks', len(trace.ranks), flush=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script), tv.sample_path()], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["top level ran", "ranks 8"], proc.stdout + proc.stderr
