"""Our launch, queue-length and memory-bandwidth numbers on the real traces, pinned.

The files in tests/golden/ours are written by scripts/make_golden_b1.py; a difference here
means the numbers changed: if on purpose, rerun the script and review the diff.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "ours"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_golden_b1", ROOT / "scripts" / "make_golden_b1.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


@pytest.mark.parametrize("folder", sorted(SCRIPT.FOLDERS))
def test_golden(folder: str) -> None:
    for name, frame in SCRIPT.compute(folder).items():
        path = GOLDEN / folder / f"{name}.csv"
        assert path.exists(), f"{path} is missing: run python scripts/make_golden_b1.py"
        expected = pd.read_csv(path)
        got = pd.read_csv(io.StringIO(SCRIPT.to_csv(frame)))
        assert list(got.columns) == list(expected.columns), name
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-9, obj=f"{folder}/{name}")
