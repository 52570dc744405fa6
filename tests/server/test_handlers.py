"""The REST endpoints through a real Jupyter server (pytest-jupyter)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

import jupyter_traceview as tv
from tests import kineto_builder as kb
from tests.conftest import DATA


@pytest.fixture
def root(jp_root_dir: Path) -> Path:
    shutil.copytree(tv.sample_path(), jp_root_dir / "dlrm")
    shutil.copytree(DATA / "hta_alexnet", jp_root_dir / "alexnet")
    bad = jp_root_dir / "broken"
    bad.mkdir()
    (bad / "rank-0.json").write_text('{"traceEvents": [{"ph": "X", "name": "a"')
    kb.write(
        jp_root_dir / "small" / "rank-0.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=0)
    )
    return jp_root_dir


async def poll(fetch: Any, *parts: str, params: dict[str, str] | None = None, until: Any = None) -> Any:
    for _ in range(600):
        r = await fetch(*parts, params=params or {})
        body = json.loads(r.body)
        if until(r, body):
            return r, body
        await asyncio.sleep(0.1)
    raise AssertionError(f"no result: {body}")


async def test_runs_listing_with_figures_and_error_rows(jp_fetch: Any, root: Path) -> None:
    def all_done(r: Any, body: dict) -> bool:
        return all(run["status"] in ("ready", "error") for run in body["runs"])

    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=all_done)
    runs = {run["path"]: run for run in body["runs"]}
    assert set(runs) == {"dlrm", "alexnet", "broken", "small"}
    assert runs["dlrm"]["status"] == "ready" and runs["dlrm"]["files"] == 8
    figures = runs["dlrm"]["figures"]
    assert figures["ranks"] == 8 and 0 < figures["gpu_busy_pct"] < 100
    assert runs["broken"]["status"] == "error" and "truncated" in runs["broken"]["message"]
    assert "Traceback" not in runs["broken"]["message"]


async def test_run_data(jp_fetch: Any, root: Path) -> None:
    _, body = await poll(
        jp_fetch, "traceview", "api", "run", params={"path": "small"}, until=lambda r, b: r.code == 200
    )
    tables = body["data"]["tables"]
    summary = tables["summary"]
    row = dict(zip(summary["columns"], summary["data"][0], strict=True))
    assert row["kernels"] == 1 and body["data"]["ranks"] == [0]


async def test_corrupt_run_data_is_a_json_error(jp_fetch: Any, root: Path) -> None:
    async def fetch_once() -> Any:
        return await jp_fetch("traceview", "api", "run", params={"path": "broken"})

    for _ in range(600):
        try:
            r = await fetch_once()
        except HTTPClientError as exc:
            assert exc.code == 422
            body = json.loads(exc.response.body)
            assert "truncated" in body["message"] and "Traceback" not in exc.response.body.decode()
            return
        assert r.code == 202
        await asyncio.sleep(0.1)
    raise AssertionError("no error reported")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../etc", 403),
        ("/etc/passwd", 403),
        ("..%2F..%2Fetc", 403),
        ("dlrm/../../x", 403),
        ("nope", 404),
        ("", 400),
    ],
)
async def test_traversal_refused(jp_fetch: Any, root: Path, path: str, code: int) -> None:
    from urllib.parse import unquote

    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "run", params={"path": unquote(path)})
    assert exc.value.code == code
    body = json.loads(exc.value.response.body)
    assert "message" in body and "Traceback" not in exc.value.response.body.decode()


async def test_symlink_leaving_the_root_is_refused(jp_fetch: Any, root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("outside")
    shutil.copytree(DATA / "hta_triton", outside / "t")
    (root / "link").symlink_to(outside / "t", target_is_directory=True)
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "run", params={"path": "link"})
    assert exc.value.code == 403


async def test_unauthenticated_requests_are_refused(jp_fetch: Any, root: Path) -> None:
    for endpoint, params in (("runs", {}), ("run", {"path": "dlrm"})):
        with pytest.raises(HTTPClientError) as exc:
            await jp_fetch("traceview", "api", endpoint, params=params, headers={"Authorization": ""})
        assert exc.value.code in (401, 403)
