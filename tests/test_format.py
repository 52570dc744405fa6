"""jupyter_traceview.format, on the cases its TypeScript twin (js/format.ts) passes too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_traceview import format as fmt

CASES = json.loads((Path(__file__).parents[1] / "js" / "tests" / "format_cases.json").read_text(encoding="utf-8"))
FUNCTIONS = {
    "duration": fmt.duration,
    "time": fmt.time,
    "size": fmt.size,
    "rate": fmt.rate,
    "percent": fmt.percent,
    "count": fmt.count,
}


@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_same_text_as_the_typescript_formatter(kind: str) -> None:
    for value, text in CASES[kind]:
        assert (value, FUNCTIONS[kind](value)) == (value, text)


def test_words_and_ranges() -> None:
    assert fmt.plural(1, "rank") == "1 rank"
    assert fmt.plural(2104, "kernel") == "2,104 kernels"
    assert fmt.ranges([5, 0, 1, 2, 3, 7]) == "0-3, 5, 7"
    assert fmt.duration(float("nan")) == fmt.MISSING


def test_saving_says_what_fixing_a_finding_buys() -> None:
    """The findings' ``saving_ns``/``saving_pct``/``change`` in words (dashboard, CLI, report)."""
    assert fmt.saving(4_560_000, 12.34, "host syncs no longer wait") == (
        "fix this: ~4.56 ms/step (12.3%), assuming host syncs no longer wait"
    )
    assert fmt.saving(850, 0.04) == "fix this: ~850 ns/step (0.0%)"  # a saving with no change named
    assert (
        fmt.saving(0, 0.0, "the data is ready at once")
        == "fix this: ~0 ns/step (0.0%), assuming the data is ready at once"
    )
    assert fmt.saving(0, 0.0, "") == "" and fmt.saving(None, float("nan")) == ""  # unknown: nothing to say
