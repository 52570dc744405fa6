"""``c.TraceviewServer.cache_dir``: where the server's loads keep tv.load's cache."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests import kineto_builder as kb


@pytest.fixture
def cache_dir(tmp_path_factory: Any) -> Path:
    return tmp_path_factory.mktemp("server-cache")


@pytest.fixture
def jp_server_config(jp_server_config: dict, cache_dir: Path) -> dict:
    return {**jp_server_config, "TraceviewServer": {"cache_dir": str(cache_dir)}}


async def test_loads_use_the_configured_cache(jp_fetch: Any, jp_root_dir: Path, cache_dir: Path) -> None:
    kb.write(jp_root_dir / "small" / "rank-0.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)]))
    for _ in range(600):
        r = await jp_fetch("traceview", "api", "run", params={"path": "small"})
        if r.code == 200:
            break
        await asyncio.sleep(0.1)
    assert json.loads(r.body)["status"] == "ready"
    assert any(cache_dir.iterdir()), "tv.load wrote its cache into the configured folder"
