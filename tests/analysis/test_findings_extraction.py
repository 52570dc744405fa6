"""findings.extraction helpers against their plain definitions (random inputs, exact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview.analysis.findings.extraction import _codes_in, _top_names


def _top_names_by_definition(codes: np.ndarray, categories: pd.Index, rows: np.ndarray, k: int) -> list[list[object]]:
    """Every named row counted, sorted by count (descending) then name, the first k."""
    counts: dict[str, int] = {}
    for r in rows.tolist():
        if r >= 0 and codes[r] >= 0:
            name = str(categories[codes[r]])
            counts[name] = counts.get(name, 0) + 1
    return [[n, m] for n, m in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@pytest.mark.parametrize("seed", range(40))
def test_top_names_as_defined(seed: int) -> None:
    rng = np.random.default_rng(seed)
    categories = pd.Index([f"op{i:03d}" for i in rng.permutation(300)])
    m = int(rng.integers(1, 300))
    codes = rng.integers(-1, m, size=500).astype(np.int16)  # stored codes, -1: no name
    rows = rng.integers(-1, 500, size=int(rng.integers(0, 120)))
    for k in (1, 2, 3, 7):
        assert _top_names(codes, categories, rows, k) == _top_names_by_definition(codes, categories, rows, k)


def test_codes_in_as_isin() -> None:
    rng = np.random.default_rng(1)
    categories = pd.Index(["a", "b", "c", "d", "e"])
    codes = rng.integers(-1, 5, size=1000).astype(np.int8)
    for values in (["b", "e"], ["x"], [], ["a", "x", "d"]):
        want = np.isin(codes, categories.get_indexer(values)[categories.get_indexer(values) >= 0])
        assert np.array_equal(_codes_in(codes, categories, values), want)
