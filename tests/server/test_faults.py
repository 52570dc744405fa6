"""A worker or the progress Manager dying mid-task: the Analyzer recovers, retries once, never needs a restart.

Real spawned worker processes (the task function is tests/server/faults.py's ``blocking``),
killed with SIGKILL as the kernel's out-of-memory killer or a user would.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from jupyter_traceview.server import worker
from jupyter_traceview.server.runs import RunEntry
from jupyter_traceview.server.worker import CRASHED, Analyzer
from tests.server import faults

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "killpg"), reason="POSIX processes")


def entry(path: str) -> RunEntry:
    return RunEntry(path=path, kind="folder", files=(f"{path}/r.json",), mtime=0.0, size=1, signature=((path, 1, 0),))


def gone(pid: int) -> bool:
    """The process has exited (absent, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.fixture
def analyzer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setattr(worker, "_FUNCTIONS", {"headline": faults.blocking, "run": faults.blocking})
    a = Analyzer(tmp_path, workers=1, cache=False)
    yield a
    (tmp_path / "release").write_text("")
    a.close()


async def until(a: Analyzer, what: str, e: RunEntry, done: Any, tries: int = 1500) -> dict[str, Any]:
    """Poll the task's status (as the sidebar does) until ``done(state)``; a hang guard, not a timing."""
    state: dict[str, Any] = {}
    for _ in range(tries):
        state = a.status(what, e)
        if done(state):
            return state
        await asyncio.sleep(0.02)
    raise AssertionError(f"stuck: {state}")


async def started(a: Analyzer, root: Path, what: str, e: RunEntry, exclude: set[int]) -> tuple[int, int]:
    """The (worker, forked child) process ids of the task once it runs in a worker not in ``exclude``."""
    for _ in range(1500):
        assert a.status(what, e)["status"] in ("queued", "running")
        for f in root.glob("started-*"):
            pid = int(f.name.split("-")[1])
            if pid not in exclude:
                return pid, int(f.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError("the task never started")


async def test_a_killed_worker_is_replaced_and_its_task_retried(analyzer: Analyzer, tmp_path: Path) -> None:
    a, e = analyzer, entry("big")
    pid, child = await started(a, tmp_path, "run", e, set())
    os.kill(pid, signal.SIGKILL)  # mid-task; its forked child keeps the pipes open
    # The retry runs in a fresh worker (the dead one's child is killed with its group).
    pid2, _ = await started(a, tmp_path, "run", e, {pid})
    assert pid2 != pid and a.restarts >= 1
    for _ in range(500):
        if gone(child):
            break
        await asyncio.sleep(0.02)
    assert gone(child), "the dead worker's process group was killed"
    (tmp_path / "release").write_text("")
    state = await until(a, "run", e, lambda s: s["status"] in ("ready", "error"))
    assert state == {"status": "ready", "result": {"pid": pid2, "path": "big"}}, "recovered: no 'process stopped'"
    # Other runs keep working, without a server restart.
    other = await until(a, "headline", entry("other"), lambda s: s["status"] in ("ready", "error"))
    assert other["status"] == "ready" and other["result"]["path"] == "other"


async def test_a_task_whose_worker_dies_twice_fails_once_then_runs_again(analyzer: Analyzer, tmp_path: Path) -> None:
    a, e = analyzer, entry("oom")
    pid, _ = await started(a, tmp_path, "run", e, set())
    os.kill(pid, signal.SIGKILL)
    pid2, _ = await started(a, tmp_path, "run", e, {pid})
    os.kill(pid2, signal.SIGKILL)
    state = await until(a, "run", e, lambda s: s["status"] == "error")
    assert state == {"status": "error", "message": CRASHED}
    # Reported once: asking again tries again, in a fresh worker, and succeeds.
    (tmp_path / "release").write_text("")
    state = await until(a, "run", e, lambda s: s["status"] in ("ready", "error"))
    assert state["status"] == "ready" and state["result"]["pid"] not in (pid, pid2)


async def test_a_killed_progress_manager_is_replaced(analyzer: Analyzer, tmp_path: Path) -> None:
    a, e = analyzer, entry("run")
    pid, _ = await started(a, tmp_path, "run", e, set())
    manager_pid = a._manager._process.pid
    os.kill(manager_pid, signal.SIGKILL)
    # No BrokenPipeError reaches the caller; the task keeps running and a new Manager serves progress.
    for _ in range(500):
        state = a.status("run", e)
        assert state["status"] == "running"
        if a._manager is not None and a._manager._process.pid != manager_pid:
            break
        await asyncio.sleep(0.02)
    assert a._manager is not None and a._manager._process.pid != manager_pid and a._manager._process.is_alive()
    (tmp_path / "release").write_text("")
    state = await until(a, "run", e, lambda s: s["status"] in ("ready", "error"))
    assert state == {"status": "ready", "result": {"pid": pid, "path": "run"}}, "the same worker finished it"
