"""Every pinned analysis gives identical results on the serial, process-pool and dask engines, and from the cache."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv

ROOT = Path(__file__).resolve().parents[1]
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
