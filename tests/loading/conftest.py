"""Fixtures shared by the loading tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A two-rank run folder (one step, one kernel per rank) for the cache tests."""
    for r in (0, 1):
        kb.write(
            tmp_path / "run" / f"rank-{r}.json",
            kb.doc([kb.step(1, 0, 1000), *kb.launch(f"gemm_{r}", 10, 20, 300 + r, corr=1)], rank=r, world_size=2),
        )
    return tmp_path / "run"


@pytest.fixture
def filled(folder: Path, tmp_path: Path) -> tuple[Path, tv.Trace]:
    """A cache folder that ``folder`` was loaded into, and the tables loaded without a cache."""
    cache = tmp_path / "cache"
    cold = tv.load(folder, cache=False)
    tv.load(folder, cache=cache)
    return cache, cold
