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
