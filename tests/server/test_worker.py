"""The Analyzer's scheduling (interactive tasks first, one result per signature, errors), with threads."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from jupyter_traceview.server import worker
from jupyter_traceview.server.runs import RunEntry
from jupyter_traceview.server.worker import Analyzer


def entry(path: str, version: int = 0) -> RunEntry:
    return RunEntry(
        path=path, kind="folder", files=(f"{path}/r.json",), mtime=0.0, size=1, signature=((path, 1, version),)
    )


class Recorder:
    """Stand-ins for the compute functions: record the order, block until released."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.release = threading.Event()

    def fn(self, what: str) -> Any:
        def compute(root: str, *args: Any) -> dict[str, Any]:
            entries = args[:-3]
            label = f"{what}:" + "|".join(e.path for e in entries)
            self.order.append(label)
            if not self.release.wait(10):
                raise TimeoutError("not released")
            if any(e.path == "bad" for e in entries):
                raise ValueError(f"{root}/bad/r.json: cannot read")
            return {"label": label}

        return compute


@pytest.fixture
def analyzer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    rec = Recorder()
    monkeypatch.setattr(worker, "_FUNCTIONS", {w: rec.fn(w) for w in ("headline", "run", "diff")})
    a = Analyzer(tmp_path, workers=1)
    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(a, "_ensure_pool", lambda: pool)
    yield a, rec
    rec.release.set()
    pool.shutdown(wait=True)


async def settle(a: Analyzer, *calls: tuple[Any, ...]) -> list[dict[str, Any]]:
    for _ in range(200):
        states = [a.status(*c) for c in calls]
        if all(s["status"] in ("ready", "error") for s in states):
            return states
        await asyncio.sleep(0.01)
    raise AssertionError(states)


async def test_interactive_tasks_go_first(analyzer: Any) -> None:
    a, rec = analyzer
    heads = [entry(f"h{i}") for i in range(4)]
    states = [a.status("headline", e) for e in heads]
    assert states[0]["status"] == "running"
    assert [s["status"] for s in states[1:]] == ["queued"] * 3
    assert [s["position"] for s in states[1:]] == [1, 2, 3]
    run = a.status("run", entry("r"))
    diff = a.status("diff", entry("x"), entry("y"))
    assert (run["status"], run["position"]) == (diff["status"], diff["position"] - 1) == ("queued", 1)
    assert a.status("headline", heads[1])["position"] == 3
    rec.release.set()
    await settle(a, *[("headline", e) for e in heads], ("run", entry("r")), ("diff", entry("x"), entry("y")))
    assert rec.order == ["headline:h0", "run:r", "diff:x|y", "headline:h1", "headline:h2", "headline:h3"]


async def test_results_by_signature(analyzer: Any) -> None:
    a, rec = analyzer
    rec.release.set()
    (state,) = await settle(a, ("run", entry("r")))
    assert state == {"status": "ready", "result": {"label": "run:r"}}
    assert a.status("run", entry("r")) == state and rec.order == ["run:r"], "computed once"
    await settle(a, ("run", entry("r", version=1)))
    assert rec.order == ["run:r", "run:r"], "a changed run is analysed again"


async def test_errors_are_one_line_messages_without_server_paths(analyzer: Any, tmp_path: Path) -> None:
    a, rec = analyzer
    rec.release.set()
    (state,) = await settle(a, ("diff", entry("ok"), entry("bad")))
    assert state == {"status": "error", "message": "ValueError: bad/r.json: cannot read"}
    assert str(tmp_path) not in state["message"]


async def test_dashboard_commands_are_answered_once_and_awaited(analyzer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, rec = analyzer
    calls: list[tuple[str, str, str]] = []

    def command(root: str, entries: Any, cache: Any, progress: Any, label: str, name: str, msg: str) -> Any:
        calls.append((entries[0].path, name, msg))
        if not rec.release.wait(10):
            raise TimeoutError("not released")
        if entries[0].path == "bad":
            raise ValueError(f"{root}/bad/r.json: cannot read")
        return {"msg": {"name": name, "msg": msg}, "buffers": [b"\x01\x02"]}

    monkeypatch.setattr(worker, "compute_command", command)
    tab = ("_tab", '{"tab":"kernels"}')
    first = a.status("command", entry("r"), args=tab)
    assert first["status"] == "running"
    other = a.status("command", entry("r"), args=("_tab", '{"tab":"overview"}'))
    assert other["status"] == "queued", "another message is another task"

    # wait() returns when the job is done, or after its timeout.
    await a.wait("command", entry("r"), args=tab, timeout=0.05)
    assert a.status("command", entry("r"), args=tab)["status"] == "running"
    rec.release.set()
    await a.wait("command", entry("r"), args=tab, timeout=10)
    ready = a.status("command", entry("r"), args=tab)
    assert ready == {
        "status": "ready",
        "result": {"msg": {"name": "_tab", "msg": '{"tab":"kernels"}'}, "buffers": [b"\x01\x02"]},
    }
    # Handed out once: asking again computes again (the worker keeps the analyses).
    assert a.status("command", entry("r"), args=tab)["status"] in ("queued", "running")
    await a.wait("command", entry("r"), args=tab, timeout=10)
    assert a.status("command", entry("r"), args=tab)["status"] == "ready"
    assert calls.count(("r", "_tab", '{"tab":"kernels"}')) == 2

    # An error too is handed out once (a retry tries again).
    a.status("command", entry("bad"), args=tab)
    await a.wait("command", entry("bad"), args=tab, timeout=10)
    assert a.status("command", entry("bad"), args=tab) == {
        "status": "error",
        "message": "ValueError: bad/r.json: cannot read",
    }
    assert a.status("command", entry("bad"), args=tab)["status"] in ("queued", "running")
