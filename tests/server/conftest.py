from __future__ import annotations

import pytest


@pytest.fixture
def jp_server_config(jp_server_config: dict) -> dict:
    config = dict(jp_server_config)
    config["ServerApp"] = {**config.get("ServerApp", {}), "jpserver_extensions": {"jupyter_traceview": True}}
    return config
