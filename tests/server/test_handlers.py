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
    r, body = await poll(
        jp_fetch, "traceview", "api", "run", params={"path": "small"}, until=lambda r, b: r.code == 200
    )
    tables = body["data"]["tables"]
    summary = tables["summary"]
    row = dict(zip(summary["columns"], summary["data"][0], strict=True))
    assert row["kernels"] == 1 and body["data"]["ranks"] == [0]
    assert body["data"]["headline"]["kernels"] == 1
    meta = tables["metadata"]
    assert [r[meta["columns"].index("path")] for r in meta["data"]] == ["small/rank-0.json"]
    assert str(root) not in r.body.decode(), "no server paths"


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


async def test_listing_figures_match_the_summary(jp_fetch: Any, root: Path) -> None:
    def all_done(r: Any, body: dict) -> bool:
        return all(run["status"] in ("ready", "error") for run in body["runs"])

    shutil.copytree(DATA / "hta_cpu_only", root / "cpu")
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=all_done)
    runs = {run["path"]: run for run in body["runs"]}
    assert body["truncated"] is False
    assert [r["mtime"] for r in body["runs"]] == sorted((r["mtime"] for r in body["runs"]), reverse=True)

    # The figures are tv.headline's (without the trace's absolute source path), absolute ns as
    # strings (exact in JavaScript) as in every protocol.
    trace = tv.load(root / "dlrm")
    expected = {k: v for k, v in tv.headline(trace).items() if k != "source"}
    expected["t0_ns"] = str(expected["t0_ns"])
    expected["window"] = None if expected["window"] is None else [str(t) for t in expected["window"]]
    fig = runs["dlrm"]["figures"]
    assert fig == json.loads(json.dumps(expected))
    s = tv.summary(trace)
    assert fig["gpu"] is True and fig["span_ns"] == int(s["gpu_span_ns"].max())
    assert fig["iterations"] == int(s["iterations"].max()) and fig["kernels"] == int(s["kernels"].sum())
    for col in ("gpu_busy_pct", "idle_pct", "exposed_comm_pct"):
        assert fig[col] == pytest.approx(float(s[col].mean()))
    assert fig["gpu_busy_pct"] + fig["idle_pct"] == pytest.approx(100)

    # CPU only: the span is the trace's, and there are no GPU percentages.
    cpu = tv.summary(tv.load(root / "cpu"))
    fig = runs["cpu"]["figures"]
    assert fig["gpu"] is False and fig["span_ns"] == 0 and fig["trace_span_ns"] == int(cpu["trace_span_ns"].max()) > 0
    assert fig["gpu_busy_pct"] is None and fig["idle_pct"] is None and fig["exposed_comm_pct"] is None


async def test_listing_roots(jp_fetch: Any, root: Path) -> None:
    r = await jp_fetch("traceview", "api", "runs", params={"roots": "alexnet, small"})
    assert {run["path"] for run in json.loads(r.body)["runs"]} == {"alexnet", "small"}
    for bad, code in (("../", 403), ("dlrm,/etc", 403), ("missing", 404), (",".join(["dlrm"] * 65), 400)):
        with pytest.raises(HTTPClientError) as exc:
            await jp_fetch("traceview", "api", "runs", params={"roots": bad})
        assert exc.value.code == code, bad
        assert "message" in json.loads(exc.value.response.body)


async def test_a_new_run_appears_in_the_listing(jp_fetch: Any, root: Path) -> None:
    before = json.loads((await jp_fetch("traceview", "api", "runs")).body)["runs"]
    run = root / "traceview-runs" / "cell" / "20260101-120000"
    kb.write(run / "rank-0.pt.trace.json.gz", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)]))
    (run / ".traceview-run.json").write_text('{"format": "jupyter_traceview.run/1"}')
    after = json.loads((await jp_fetch("traceview", "api", "runs")).body)["runs"]
    assert len(after) == len(before) + 1
    assert after[0]["path"] == "traceview-runs/cell/20260101-120000" and after[0]["kind"] == "traceprofile"
    assert after[0]["status"] in ("queued", "running", "ready")


async def test_the_cache_folder_is_server_configuration(jp_fetch: Any, root: Path) -> None:
    # No request parameter chooses it (a GET has no side effects): cache= is ignored.
    _, body = await poll(
        jp_fetch,
        "traceview",
        "api",
        "run",
        params={"path": "small", "cache": ".tv-cache/here"},
        until=lambda r, b: r.code == 200,
    )
    assert body["status"] == "ready"
    assert not (root / ".tv-cache").exists()


def _two_runs(root: Path) -> None:
    kb.write(
        root / "before" / "rank-0.json",
        kb.doc([kb.step(1, 0, 1000), *kb.launch("gemm", 10, 20, 100, corr=1), *kb.launch("old", 30, 40, 50, corr=2)]),
    )
    kb.write(
        root / "after" / "rank-0.json",
        kb.doc([kb.step(1, 0, 1000), *kb.launch("gemm", 10, 20, 300, corr=1), *kb.launch("new", 30, 40, 50, corr=2)]),
    )


async def test_diff(jp_fetch: Any, root: Path) -> None:
    _two_runs(root)
    _, body = await poll(
        jp_fetch, "traceview", "api", "diff", params={"a": "before", "b": "after"}, until=lambda r, b: r.code == 200
    )
    data = body["data"]
    assert body["a"] == "before" and body["b"] == "after"
    assert data["a"]["path"] == "before" and data["b"]["headline"]["kernels"] == 2
    # tv.compare's answer: the gemm ran 200 us longer in the one step (no noise estimate).
    cmp = tv.compare(tv.load(root / "before"), tv.load(root / "after"))
    assert data["verdict"] == cmp.verdict and data["summary"] == cmp.headline()
    causes = [dict(zip(data["causes"]["columns"], row, strict=True)) for row in data["causes"]["data"]]
    assert [c["cause"] for c in causes] == cmp.causes["cause"].tolist()
    assert sum(c["delta_ns"] for c in causes) == pytest.approx(cmp.delta_ns)
    assert data["delta_ns"] == pytest.approx(cmp.delta_ns) and data["warnings"] == list(cmp.warnings)
    per_rank = data["per_rank"]
    assert [r[per_rank["columns"].index("rank")] for r in per_rank["data"]] == cmp.per_rank["rank"].tolist()
    # The one diff function: the by-name table of trace_diff is gone.
    assert "table" not in data and "status_counts" not in data


async def test_diff_of_a_corrupt_run_is_a_json_error(jp_fetch: Any, root: Path) -> None:
    for _ in range(600):
        try:
            r = await jp_fetch("traceview", "api", "diff", params={"a": "small", "b": "broken"})
        except HTTPClientError as exc:
            assert exc.code == 422
            assert "truncated" in json.loads(exc.response.body)["message"]
            assert str(root) not in exc.response.body.decode(), "no server paths in messages"
            return
        assert r.code == 202 and json.loads(r.body)["status"] in ("queued", "running")
        await asyncio.sleep(0.1)
    raise AssertionError("no error reported")


@pytest.mark.parametrize(
    "params",
    [
        {"a": "../etc", "b": "small"},
        {"a": "small", "b": "/etc/passwd"},
        {"a": "small", "b": "%2e%2e/%2e%2e/etc"},
        {"a": "small", "b": "x" * 5000},
        {"a": "small"},
    ],
)
async def test_diff_refuses_bad_paths(jp_fetch: Any, root: Path, params: dict[str, str]) -> None:
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "diff", params=params)
    assert exc.value.code in (400, 403)
    assert "message" in json.loads(exc.value.response.body)
    assert "Traceback" not in exc.value.response.body.decode()


async def test_new_endpoints_require_authentication(jp_fetch: Any, root: Path) -> None:
    for endpoint, params in (("diff", {"a": "small", "b": "dlrm"}), ("runs", {"cache": "c"})):
        with pytest.raises(HTTPClientError) as exc:
            await jp_fetch("traceview", "api", endpoint, params=params, headers={"Authorization": ""})
        assert exc.value.code in (401, 403)
    assert not (root / "c").exists()


# ---------------------------------------------------------------------------------------
# The dashboard's commands (POST /traceview/api/dashboard): what tv.Dashboard answers in a kernel


def _decode(body: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """A ready answer: 4-byte big-endian JSON length, the JSON, then the buffers."""
    n = int.from_bytes(body[:4], "big")
    head = json.loads(body[4 : 4 + n])
    assert head["status"] == "ready"
    buffers, at = [], 4 + n
    for size in head["buffers"]:
        buffers.append(body[at : at + size])
        at += size
    assert at == len(body)
    return head["msg"], buffers


async def command(
    fetch: Any, path: str, name: str, msg: dict[str, Any] | None = None, **params: str
) -> tuple[dict[str, Any], list[bytes]]:
    """Ask the dashboard endpoint until it answers (202: computing, ask again)."""
    body = json.dumps({"command": name, "msg": msg or {}})
    for _ in range(600):
        r = await fetch("traceview", "api", "dashboard", method="POST", body=body, params={"path": path, **params})
        if r.code == 200:
            assert r.headers["Content-Type"] == "application/octet-stream"
            return _decode(r.body)
        assert r.code == 202
        state = json.loads(r.body)
        assert state["status"] in ("queued", "running") and state["command"] == name
    raise AssertionError(f"no answer to {name}")


async def test_dashboard_commands_answer_as_the_widget_does(jp_fetch: Any, root: Path) -> None:
    from jupyter_traceview.dashboard.commands import answer
    from jupyter_traceview.dashboard.data import DashboardData
    from jupyter_traceview.views.timeline import protocol as timeline_protocol

    local = DashboardData(tv.load(root / "small"))
    payload, _ = await command(jp_fetch, "small", "_payload")
    expected = local.payload()
    assert payload["source"] == "small", "paths relative to the server root"
    assert {k: v for k, v in payload.items() if k != "source"} == {k: v for k, v in expected.items() if k != "source"}
    assert str(root) not in json.dumps(payload)

    tab, _ = await command(jp_fetch, "small", "_tab", {"tab": "kernels", "theme": "dark", "seq": 3})
    want, _ = answer(local, "_tab", {"tab": "kernels", "theme": "dark", "seq": 3})
    assert tab["seq"] == 3 and tab["tab"] == "kernels" and tab["theme"] == "dark"
    assert tab["tables"] == json.loads(json.dumps(want["tables"]))
    assert [c["id"] for c in tab["charts"]] == [c["id"] for c in want["charts"]]

    state, _ = await command(jp_fetch, "small", "_timeline")
    assert state["state"]["ranks"] == [0]
    rows = list(range(len(local.index.rows)))
    window = {"lo": 0, "hi": float(payload["span_ns"]), "width": 800, "rows": rows, "seq": 1}
    got, buffers = await command(jp_fetch, "small", "_window", window)
    want_msg, want_buffers = timeline_protocol.answer(local.index, "_window", window, lod=local.lod)
    assert buffers == [bytes(b) for b in want_buffers] and len(buffers) >= 1
    timing = ("kernel_ms", "kernel_cpu_ms", "kernel_at_ms")
    assert {k: v for k, v in got.items() if k not in timing} == json.loads(
        json.dumps({k: v for k, v in want_msg.items() if k not in timing})
    )

    # A click on a chart: where the timeline goes, as DashboardData.link says.
    link, _ = await command(jp_fetch, "small", "_link", {"target": "rank", "rank": 0})
    assert link == json.loads(json.dumps(local.link({"target": "rank", "rank": 0})))
    assert link["ranks"] == [0] and link["x_range"][1] > link["x_range"][0]

    # Malformed requests are answered as the widget answers them: {"error": ...}.
    bad, _ = await command(jp_fetch, "small", "_tab", {"tab": "nope"})
    assert "nope" in bad["error"] and "overview" in bad["error"]


async def test_dashboard_bokehjs_and_baseline(jp_fetch: Any, root: Path) -> None:
    import bokeh

    msg, buffers = await command(jp_fetch, "small", "_bokehjs")
    assert msg["version"] == bokeh.__version__ and msg["bytes"] == len(buffers[0]) > 100_000
    assert b"Bokeh" in buffers[0][:100_000]

    _two_runs(root)
    payload, _ = await command(jp_fetch, "after", "_payload", baseline="before")
    assert [t["id"] for t in payload["tabs"]][-1] == "diff"
    tab, _ = await command(jp_fetch, "after", "_tab", {"tab": "diff"}, baseline="before")
    assert tab["tab"] == "diff" and tab["tables"], tab.get("notes")
    assert str(root) not in json.dumps(tab) and str(root) not in json.dumps(payload), "no server paths"
    assert {"label": "baseline", "value": "before"}.items() <= tab["figures"][0].items()
    cells = json.dumps(tab["tables"])
    assert "gemm" in cells and "new" in cells and "old" in cells


async def test_dashboard_of_a_corrupt_run_is_a_json_error(jp_fetch: Any, root: Path) -> None:
    body = json.dumps({"command": "_payload", "msg": {}})
    for _ in range(600):
        try:
            r = await jp_fetch("traceview", "api", "dashboard", method="POST", body=body, params={"path": "broken"})
        except HTTPClientError as exc:
            assert exc.code == 422
            assert "truncated" in json.loads(exc.response.body)["message"]
            assert "Traceback" not in exc.response.body.decode() and str(root) not in exc.response.body.decode()
            return
        assert r.code == 202
    raise AssertionError("no error reported")


@pytest.mark.parametrize(
    ("params", "body", "code"),
    [
        ({"path": "../etc"}, {"command": "_payload"}, 403),
        ({"path": "/etc"}, {"command": "_payload"}, 403),
        ({"path": "small", "baseline": "../../etc"}, {"command": "_payload"}, 403),
        ({"path": "small", "baseline": "%2e%2e/x"}, {"command": "_payload"}, 403),
        ({"path": "small"}, {"command": "_shell", "msg": {}}, 400),
        ({"path": "small"}, {"command": "_tab", "msg": [1]}, 400),
        ({"path": "small"}, "not json", 400),
        ({"path": "small"}, {"command": "_find", "msg": {"pattern": "x" * 70_000}}, 413),
        ({}, {"command": "_payload"}, 400),
    ],
)
async def test_dashboard_refuses_bad_requests(
    jp_fetch: Any, root: Path, params: dict[str, str], body: Any, code: int
) -> None:
    from urllib.parse import unquote

    params = {k: unquote(v) for k, v in params.items()}
    text = body if isinstance(body, str) else json.dumps(body)
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "dashboard", method="POST", body=text, params=params)
    assert exc.value.code == code
    assert "message" in json.loads(exc.value.response.body)
    assert "Traceback" not in exc.value.response.body.decode()


async def test_dashboard_requires_authentication(jp_fetch: Any, root: Path) -> None:
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch(
            "traceview",
            "api",
            "dashboard",
            method="POST",
            body=json.dumps({"command": "_payload"}),
            params={"path": "small"},
            headers={"Authorization": ""},
        )
    assert exc.value.code in (401, 403)


def test_the_server_checks_commands_against_the_one_list() -> None:
    """The server refuses what ``dashboard.commands.ALL_COMMANDS`` does not list, and that list is
    what ``answer`` answers: a name added to one is known to the other. Checking a request's
    command imports neither numpy nor pandas (the server process stays light)."""
    import subprocess
    import sys

    from jupyter_traceview.dashboard import commands
    from jupyter_traceview.server import handlers
    from jupyter_traceview.views.timeline import protocol as timeline_protocol

    assert frozenset(commands.ALL_COMMANDS) == handlers.DASHBOARD_COMMANDS
    assert set(commands.ALL_COMMANDS) == {*commands.COMMANDS, *timeline_protocol.COMMANDS}
    assert len(commands.ALL_COMMANDS) == len(set(commands.ALL_COMMANDS))
    # Every other name is unknown to ``answer`` (it says so before touching the data).
    out, _ = commands.answer(None, "_shell", {})  # type: ignore[arg-type]
    assert "unknown command '_shell'" in out["error"]
    assert all(name in out["error"] for name in commands.ALL_COMMANDS)
    code = (
        "import sys, jupyter_traceview.dashboard.commands; "
        "print(','.join(m for m in ('numpy', 'pandas', 'bokeh') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""
