"""_links.category_mask and launch.kind_mask against their definition (Index.isin per row)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview.analysis._links import category_mask, kind_any
from jupyter_traceview.analysis.launch import kind_mask


@pytest.mark.parametrize("n_categories", [1, 12, 256, 257, 2000])
def test_category_and_kind_masks_as_isin(n_categories: int) -> None:
    rng = np.random.default_rng(n_categories)
    categories = [f"k{i}" for i in rng.permutation(n_categories)]
    values = rng.choice([*categories, None], size=5000).tolist()  # None: a row without a value
    col = pd.Series(pd.Categorical(values, categories=categories))
    for wanted in ([], [categories[0]], [*categories[: n_categories // 2], "absent"], ["absent"], categories):
        want = np.asarray(col.isin(wanted), dtype=bool) & col.notna().to_numpy()
        assert np.array_equal(category_mask(col, wanted), want)
        assert np.array_equal(category_mask(col, iter(wanted)), want)
        assert np.array_equal(kind_mask(pd.DataFrame({"kind": col}), wanted), want)
        assert kind_any(pd.DataFrame({"kind": col}), wanted) is bool(want.any())
    # A wanted category no row has, and rows with no value only.
    assert kind_any(pd.DataFrame({"kind": col.iloc[:0]}), categories) is False
    nothing = pd.Series(pd.Categorical([None, None], categories=categories))
    assert kind_any(pd.DataFrame({"kind": nothing}), categories) is False
