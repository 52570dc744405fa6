"""Our numbers on the real traces, pinned: recompute every file scripts/make_golden.py wrote.

A failure means a number changed. If the change is intended, run
``python scripts/make_golden.py`` and say why in the commit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "ours"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_golden", ROOT / "scripts" / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_golden", module)
    spec.loader.exec_module(module)
    return module


MG = _script()
CASES = MG.cases()


def assert_same(got: pd.DataFrame, want: pd.DataFrame, where: str) -> None:
    """Same columns and rows: integers and text exactly, floats to 1e-9 relative."""
    assert list(got.columns) == list(want.columns), f"{where}: columns changed"
    assert len(got) == len(want), f"{where}: {len(got)} rows, golden has {len(want)}"
    for col in got.columns:
        g, w = got[col], want[col]
        if pd.api.types.is_bool_dtype(g.dtype):
            assert g.tolist() == w.astype(str).map({"True": True, "False": False}).tolist(), f"{where}: {col}"
        elif pd.api.types.is_integer_dtype(g.dtype):
            assert np.array_equal(g.to_numpy(), w.to_numpy(dtype=np.int64)), f"{where}: {col}"
        elif pd.api.types.is_float_dtype(g.dtype):
            want_f = pd.to_numeric(w.replace("", np.nan)).to_numpy(dtype=np.float64)
            np.testing.assert_allclose(
                g.to_numpy(), want_f, rtol=1e-9, atol=0, equal_nan=True, err_msg=f"{where}: {col}"
            )
        else:
            assert g.astype(str).replace("nan", "").tolist() == w.astype(str).tolist(), f"{where}: {col}"


def test_every_golden_file_is_known() -> None:
    on_disk = {(p.parent.name, p.stem) for p in GOLDEN.glob("*/*.csv")}
    assert on_disk == set(CASES), "tests/golden/ours is out of step with scripts/make_golden.py: run it"


@pytest.mark.parametrize(("folder", "analysis"), CASES)
def test_golden(folder: str, analysis: str) -> None:
    want = pd.read_csv(MG.path(GOLDEN, folder, analysis), keep_default_na=False, dtype=str)
    got = MG.compute(analysis, folder)
    assert_same(got, want, f"{folder}/{analysis}")
