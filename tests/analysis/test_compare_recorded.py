"""tv.compare on pairs recorded with CPU torch, each with one known change (tests/data/compare/).

``scripts/record_compare_pairs.py`` recorded them and wrote down, before any was compared,
the cause each change should show and its size (``labels.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.compare import Comparison, markdown
from jupyter_traceview.analysis.compare.markdown import MAX_LINES

PAIRS = Path(__file__).resolve().parents[1] / "data" / "compare"
LABELS: dict[str, dict[str, Any]] = json.loads((PAIRS / "labels.json").read_text())["labels"]


def _parts_sum(c: Comparison) -> float:
    return float(c.causes["delta_ns"].sum())


@pytest.fixture(scope="module")
def base() -> tv.Trace:
    return tv.load(PAIRS / "base")


def _pair(base: tv.Trace, name: str) -> Comparison:
    return tv.compare(base, tv.load(PAIRS / name))


@pytest.mark.parametrize("name", ["sleep", "matmul", "dataloader", "allreduce"])
def test_recorded_pairs_name_the_injected_cause(base: tv.Trace, name: str) -> None:
    label = LABELS[name]
    c = _pair(tv.load(PAIRS / label["base"]) if "base" in label else base, name)
    assert c.verdict == label["verdict"]
    assert _parts_sum(c) == pytest.approx(c.delta_ns, rel=0.01)
    top = c.causes.iloc[0]
    assert top["cause"] == label["cause"] and not top["within_noise"]
    if "status" in label:
        assert top["status"] == label["status"]
    # The size: what the injected change took on the wall clock while recorded, within the
    # label's tolerance and inside the cause's own bootstrap interval.
    measured = label["measured_ns"]
    assert abs(top["delta_ns"] - measured) <= label["tolerance_pct"] / 100 * measured, (top["delta_ns"], measured)
    assert top["ci_low_ns"] <= measured <= top["ci_high_ns"]


@pytest.mark.parametrize("name", [n for n in LABELS if n.startswith("rerun_")])
def test_reruns_are_the_same(base: tv.Trace, name: str) -> None:
    c = _pair(base, name)
    assert c.verdict == "same", c.headline()
    assert _parts_sum(c) == pytest.approx(c.delta_ns, rel=0.01, abs=1.0)
    assert np.isfinite(c.ci_low_ns) and c.ci_low_ns <= 0 <= c.ci_high_ns


def test_markdown_is_short(base: tv.Trace) -> None:
    c = _pair(base, "sleep")
    text = markdown(c, base="main", new="pr")
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES
    assert lines[0].startswith("### traceview compare: **slower**")
    assert "| host: Python / other | slower |" in text
    assert json.loads(json.dumps(c.to_dict()))["verdict"] == "slower"
