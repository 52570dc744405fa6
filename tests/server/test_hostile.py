"""The server extension under hostile input: links, FIFOs, quoted content, nested bodies, GET side effects."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_traceview.server.runs import PathRefused, find_runs, resolve_run
from tests import kineto_builder as kb

SECRET = "TOP-SECRET-CONTENT-1234"


def small(path: Path, rank: int = 0, kernel: str = "k") -> Path:
    return kb.write(path, kb.doc([kb.step(1, 0, 100), *kb.launch(kernel, 10, 20, 30, corr=1)], rank=rank))


@pytest.fixture
def root(jp_root_dir: Path, tmp_path_factory: Any) -> Path:
    outside = tmp_path_factory.mktemp("outside")
    small(outside / "rank-1.json", rank=1, kernel="outside_kernel")
    (outside / "secret.json").write_text('{"traceEvents": [], "x": "' + SECRET + '"')
    run = jp_root_dir / "run"
    small(run / "rank-0.json")
    (run / "rank-1.json").symlink_to(outside / "rank-1.json")
    (run / "secret.json").symlink_to(outside / "secret.json")
    return jp_root_dir


def in_thread(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a thread; fails (instead of hanging the suite) if it does not return."""
    out: list[Any] = []

    def call() -> None:
        try:
            out.append(fn(*args))
        except Exception as exc:  # noqa: BLE001 - raised again in the test's thread
            out.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(60)  # a hang guard: a FIFO open blocks forever
    assert not t.is_alive(), f"{fn.__name__} hangs"
    if isinstance(out[0], Exception):
        raise out[0]
    return out[0]


async def poll(fetch: Any, *parts: str, params: dict[str, str], until: Any) -> Any:
    body: Any = None
    for _ in range(600):
        try:
            r = await fetch(*parts, params=params)
        except HTTPClientError as exc:
            r = exc.response
        body = json.loads(r.body)
        if until(r, body):
            return r, body
        await asyncio.sleep(0.1)
    raise AssertionError(f"no result: {body}")


def test_links_inside_a_run_folder_are_not_part_of_the_run(root: Path) -> None:
    entry = resolve_run(root, "run")
    assert entry.files == ("run/rank-0.json",)
    (listed,) = [r for r in find_runs(root) if r.path == "run"]
    assert listed.files == ("run/rank-0.json",)


async def test_the_worker_reads_only_the_checked_files(jp_fetch: Any, root: Path) -> None:
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "run"}, until=lambda r, b: r.code != 202)
    assert r.code == 200, body
    assert body["data"]["ranks"] == [0], "the linked rank-1 file outside the root was not read"
    text = r.body.decode()
    assert "outside_kernel" not in text and SECRET not in text


def test_a_file_swapped_for_a_link_after_the_check_is_refused(root: Path, tmp_path: Path) -> None:
    from jupyter_traceview.errors import TraceFormatError
    from jupyter_traceview.server.tasks import checked_files

    entry = resolve_run(root, "run")
    os.replace(root / "run" / "rank-1.json", root / "run" / "rank-0.json")  # now a link
    with pytest.raises(TraceFormatError, match="no longer a regular file"):
        checked_files(str(root), entry)


async def test_errors_never_quote_file_content(jp_fetch: Any, root: Path) -> None:
    bad = root / "bad"
    bad.mkdir()
    (bad / "rank-0.json").write_text('{"traceEvents": [{"ph": "X", "name": "' + SECRET + '", }]}')
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "bad"}, until=lambda r, b: r.code != 202)
    assert r.code == 422 and "not valid JSON" in body["message"]
    assert SECRET not in r.body.decode() and "near" not in body["message"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
async def test_a_fifo_named_json_is_never_opened(jp_fetch: Any, root: Path) -> None:
    os.mkfifo(root / "run" / "pipe.json")
    lone = root / "fifo"
    lone.mkdir()
    os.mkfifo(lone / "rank-0.json")
    runs = {r.path: r for r in in_thread(find_runs, root)}
    assert runs["run"].files == ("run/rank-0.json",) and "fifo" not in runs
    with pytest.raises(PathRefused) as exc:
        in_thread(resolve_run, root, "fifo/rank-0.json")
    assert exc.value.status == 400
    r = await jp_fetch("traceview", "api", "runs")
    assert "fifo" not in {run["path"] for run in json.loads(r.body)["runs"]}
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "run"}, until=lambda r, b: r.code != 202)
    assert r.code == 200 and body["data"]["ranks"] == [0]


@pytest.mark.parametrize("depth", [33, 100_000])
async def test_a_deeply_nested_body_is_a_400(jp_fetch: Any, root: Path, depth: int) -> None:
    msg = "[" * depth + "]" * depth
    body = '{"command": "_tab", "msg": {"tab": ' + msg + "}}"
    if len(body) > 64 * 1024:
        body = "[" * 30_000 + "]" * 30_000
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "dashboard", method="POST", body=body, params={"path": "run"})
    assert exc.value.code == 400
    assert "nested" in json.loads(exc.value.response.body)["message"]


async def test_get_requests_have_no_side_effects(jp_fetch: Any, root: Path) -> None:
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    for endpoint, params in (
        ("runs", {"cache": "made-by-get"}),
        ("run", {"path": "run", "cache": "made-by-get/x"}),
        ("diff", {"a": "run", "b": "run", "cache": "../escape"}),
    ):
        try:
            await jp_fetch("traceview", "api", endpoint, params=params)
        except HTTPClientError as exc:
            assert exc.code != 500
    await poll(jp_fetch, "traceview", "api", "run", params={"path": "run"}, until=lambda r, b: r.code != 202)
    after = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert after == before, "no folder or file created under the root by a GET"


@pytest.mark.parametrize(
    ("endpoint", "params"),
    [
        ("runs", {"roots": "x" * 5000}),
        ("runs", {"roots": ",".join(["run"] * 65)}),
        ("run", {"path": "r" * 5000}),
        ("diff", {"a": "run", "b": "b" * 5000}),
    ],
)
async def test_every_parameter_is_bounded(jp_fetch: Any, root: Path, endpoint: str, params: dict[str, str]) -> None:
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", endpoint, params=params)
    assert exc.value.code == 400


async def test_the_server_survives_a_killed_worker_and_manager(jp_fetch: Any, root: Path, jp_serverapp: Any) -> None:
    small(root / "one" / "rank-0.json")
    small(root / "two" / "rank-0.json", kernel="other")
    small(root / "three" / "rank-0.json", kernel="third")
    done = lambda r, b: r.code != 202  # noqa: E731
    r, _ = await poll(jp_fetch, "traceview", "api", "run", params={"path": "one"}, until=done)
    assert r.code == 200
    analyzer = jp_serverapp.web_app.settings["traceview_analyzer"]
    for process in list(analyzer._pool._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "two"}, until=done)
    assert r.code == 200 and body["data"]["headline"]["kernels"] == 1
    os.kill(analyzer._manager._process.pid, signal.SIGKILL)
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "three"}, until=done)
    assert r.code == 200, body
    assert analyzer.restarts >= 2


def test_load_options_file_is_validated(root: Path) -> None:
    run = root / "run"
    (run / ".traceview-load.json").write_text('{"on_error": "skip", "ranks": [0], "pid_map": {"12": 0, "a": 1}}')
    entry = resolve_run(root, "run")
    assert json.loads(entry.load_options) == {"on_error": "skip", "ranks": [0], "pid_map": {"12": 0, "a": 1}}
    assert "run/.traceview-load.json" in [s[0] for s in entry.signature], "a change of the options re-analyses"
    for bad, what in (
        ("[]", "JSON object"),
        ('{"cache": "/tmp"}', "unknown key"),
        ('{"on_error": "ignore"}', "on_error"),
        ('{"ranks": [-1]}', "ranks"),
        ('{"ranks": [1.5]}', "ranks"),
        ('{"ranks": [' + ",".join(["0"] * 70_000) + "]}", "ranks"),
        ('{"pid_map": {"1": 99999999999}}', "pid_map"),
        ("{" * 100_000, "JSON"),
        ("x" * (1 << 21), "larger than"),
    ):
        (run / ".traceview-load.json").write_text(bad)
        entry = resolve_run(root, "run")
        assert what in entry.options_error and entry.load_options == "", bad[:40]


async def test_load_options_file_is_honoured(jp_fetch: Any, root: Path) -> None:
    run = root / "ranks"
    small(run / "rank-0.json", rank=0)
    small(run / "rank-1.json", rank=1)
    (run / "rank-2.json").write_text('{"traceEvents": [')
    done = lambda r, b: r.code != 202  # noqa: E731
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "ranks"}, until=done)
    assert r.code == 422 and "truncated" in body["message"]
    (run / ".traceview-load.json").write_text('{"on_error": "skip"}')
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "ranks"}, until=done)
    assert r.code == 200 and body["data"]["ranks"] == [0, 1]
    (run / ".traceview-load.json").write_text('{"on_error": "skip", "ranks": [1]}')
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "ranks"}, until=done)
    assert r.code == 200 and body["data"]["ranks"] == [1]
    (run / ".traceview-load.json").write_text('{"ranks": "all"}')
    r, body = await poll(jp_fetch, "traceview", "api", "run", params={"path": "ranks"}, until=done)
    assert r.code == 422 and ".traceview-load.json" in body["message"] and "ranks" in body["message"]
