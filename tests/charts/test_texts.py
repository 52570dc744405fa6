"""The charts' text columns: the one formatter of each value, each distinct value formatted once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from jupyter_traceview import format as fmt
from jupyter_traceview.charts import _style

COLUMNS: list[tuple[Callable[[Any], list[str]], Callable[[float], str]]] = [
    (_style.duration_text, fmt.duration),
    (_style.time_text, fmt.time),
    (_style.pct_text, fmt.percent),
    (_style.bytes_text, fmt.size),
    (_style.rate_text, fmt.rate),
]

_RNG = np.random.default_rng(7)
VALUES = [
    np.array([1.0, 2.5, -3.0]),  # short: formatted one by one
    np.tile(np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 12.5, -3.0, 1e9]), 20),
    _RNG.integers(0, 10**10, 500).astype(np.float64),
    np.round(_RNG.random(600) * 100, 1),
]


@pytest.mark.parametrize("values", VALUES, ids=["short", "special", "ints", "repeated"])
@pytest.mark.parametrize(("column", "one"), COLUMNS, ids=lambda f: getattr(f, "__name__", ""))
def test_a_column_is_the_formatter_of_each_value(
    column: Callable[[Any], list[str]], one: Callable[[float], str], values: np.ndarray
) -> None:
    assert column(values) == [one(v) for v in values.tolist()]


def test_each_distinct_value_is_formatted_once() -> None:
    seen: list[float] = []

    def one(v: float) -> str:
        seen.append(v)
        return fmt.duration(v)

    values = np.tile(np.array([5.0, 0.0, -0.0, 7.5]), 50)
    assert _style._texts(one, values) == [fmt.duration(v) for v in values.tolist()]
    assert len(seen) == 4
