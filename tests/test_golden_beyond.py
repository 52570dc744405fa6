"""Our time-resolved analyses on every real trace folder, against tests/golden/ours.

The files are written by ``scripts/make_golden_beyond.py``; regenerate them with it when a
change of numbers is intended, and review the diff.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from scripts.make_golden_beyond import FOLDERS, compute

GOLDEN = Path(__file__).parent / "golden" / "ours"


@pytest.fixture(scope="module", params=sorted(FOLDERS))
def folder_frames(request: pytest.FixtureRequest) -> tuple[str, dict[str, pd.DataFrame]]:
    folder = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(FOLDERS[folder], cache=False)
    return folder, compute(trace)


def test_matches_golden_files(folder_frames: tuple[str, dict[str, pd.DataFrame]]) -> None:
    folder, frames = folder_frames
    # The folder also holds other analyses' golden files (scripts/make_golden*.py).
    written = {p.stem for p in (GOLDEN / folder).glob("*.csv")}
    missing = set(frames) - written
    assert not missing, f"no golden file for {sorted(missing)}: run scripts/make_golden_beyond.py"
    for stem, ours in frames.items():
        golden = pd.read_csv(GOLDEN / folder / f"{stem}.csv")
        assert list(golden.columns) == list(ours.columns), stem
        if ours.empty:
            assert golden.empty, stem
            continue
        # Through CSV and back, as the golden file went.
        again = pd.read_csv(io.StringIO(ours.to_csv(index=False)))
        pd.testing.assert_frame_equal(again, golden, check_dtype=False, rtol=1e-9, obj=f"{folder}/{stem}")


def test_dlrm_golden_has_the_expected_shape() -> None:
    hm = pd.read_csv(GOLDEN / "dlrm_8rank_v100" / "utilization_heatmap.csv")
    assert len(hm) == 8 * 100 and sorted(hm["rank"].unique()) == list(range(8))
    eff = pd.read_csv(GOLDEN / "dlrm_8rank_v100" / "efficiency.csv").iloc[0]
    assert eff["ranks"] == 8 and 0 < eff["parallel_efficiency_pct"] < eff["load_balance_pct"] <= 100
