"""Trace.iterations on a tiny trace: CPU spans per step, GPU spans by launch, -1 without GPU work."""

from __future__ import annotations

from pathlib import Path

import jupyter_traceview as tv
from tests import kineto_builder as kb


def test_iterations_by_construction(tmp_path: Path) -> None:
    events = [
        kb.step(5, 0, 100),
        *kb.launch("k1", 10, 50, 30, corr=1),  # [50, 80) us, launched in step 5
        *kb.launch("k2", 90, 120, 40, corr=2),  # [120, 160): runs in step 6's time, belongs to 5
        kb.step(6, 100, 50),  # launches nothing
        kb.step(7, 150, 60),
        *kb.launch("k3", 160, 170, 10, corr=3),  # [170, 180)
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events)), cache=False)
    its = trace.iterations
    assert its.columns.tolist() == ["rank", "step", "start_ns", "end_ns", "dur_ns", "gpu_start_ns", "gpu_end_ns"]
    assert (its.dtypes == "int64").all()
    assert its.values.tolist() == [
        [0, 5, 0, 100_000, 100_000, 50_000, 160_000],
        [0, 6, 100_000, 150_000, 50_000, -1, -1],
        [0, 7, 150_000, 210_000, 60_000, 170_000, 180_000],
    ]
