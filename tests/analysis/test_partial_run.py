"""Findings on a run that raised: the last step is partial, left out and said so (rule ``partial_run``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading.run_notes import RUN_RECORD
from tests import kineto_builder as kb


def _run(tmp_path: Path, status: str | None) -> tv.Trace:
    """Three steps of GEMMs; the third with a long host stretch and no GPU work after it
    (what a raise leaves); a run record with ``status`` if given."""
    events: list[dict[str, Any]] = []
    corr = 0
    for n, t0 in ((1, 0), (2, 1000), (3, 2000)):
        events.append(kb.step(n, t0, 900 if n < 3 else 5000))
        for k in range(4):
            corr += 1
            events += kb.launch("gemm", t0 + 10 + 50 * k, t0 + 20 + 50 * k, 40, corr=corr)
        if n == 3:
            events.append(kb.cpu_op("aten::to", t0 + 300, 10))
    folder = tmp_path / str(status)
    folder.mkdir(exist_ok=True)
    kb.write(folder / "rank-0.json", kb.doc(events))
    if status is not None:
        (folder / RUN_RECORD).write_text(json.dumps({"format": "jupyter_traceview.run/1", "status": status}))
    return tv.load(folder, cache=False)


def _findings(trace: tv.Trace, **kw: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(trace, **kw)


@pytest.mark.parametrize("status", ["error", "interrupted"])
def test_the_partial_step_is_left_out_and_said(tmp_path: Path, status: str) -> None:
    failed = _run(tmp_path, status)
    assert failed.run_status == status
    got = _findings(failed)
    row = got.set_index("id").loc["partial_run"]
    assert row["severity"] == "info" and row["time_at_stake_ns"] == 0
    ev = row["evidence"]
    assert (ev["run_status"], ev["partial_step"], ev["left_out"]) == (status, 3, True)
    assert "step #3 is partial and left out" in row["title"]
    # The other findings are those of steps 1 and 2 alone.
    others = got.loc[got["id"] != "partial_run"].reset_index(drop=True)
    first_two = _findings(_run(tmp_path, None), iterations=[1, 2])
    pd.testing.assert_frame_equal(others[["id", "time_at_stake_ns"]], first_two[["id", "time_at_stake_ns"]])
    # Asked for, the partial step is read (and the finding says it is partial).
    asked = _findings(failed, iterations=[3]).set_index("id").loc["partial_run"]
    assert asked["evidence"]["left_out"] is False


def test_a_run_that_ended_well_is_read_whole(tmp_path: Path) -> None:
    whole = _findings(_run(tmp_path, None))
    assert "partial_run" not in set(whole["id"])
    pd.testing.assert_frame_equal(_findings(_run(tmp_path, "ok")), whole)
    why = _findings(_run(tmp_path, "ok"), explain=True).set_index("rule").loc["partial_run"]
    assert not why["fired"] and "ended normally" in why["reason"]


def test_a_single_partial_step_is_kept(tmp_path: Path) -> None:
    trace = _run(tmp_path, "error").select(iterations=[3])
    row = _findings(trace).set_index("id").loc["partial_run"]
    assert row["evidence"]["left_out"] is False and "only step in scope" in row["detail"]
