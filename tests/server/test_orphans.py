"""Worker processes never outlive the Jupyter server, even one killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.server.test_faults import gone

REPO = Path(__file__).resolve().parents[2]

SERVER = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from jupyter_traceview.server import worker
from jupyter_traceview.server.worker import Analyzer
from tests.server import faults
from tests.server.test_faults import entry

worker._FUNCTIONS = {{"run": faults.blocking}}

async def main():
    a = Analyzer(Path({root!r}), workers=1, cache=False)
    a.status("run", entry("x"))
    (Path({root!r}) / "manager").write_text(str(a._manager._process.pid))
    for _ in range(6000):
        a.status("run", entry("x"))
        await asyncio.sleep(0.1)

if __name__ == "__main__":
    asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_workers_do_not_outlive_a_killed_server(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER.format(repo=str(REPO), root=str(tmp_path)))
    server = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    try:
        for _ in range(1500):  # a hang guard, not a timing
            started = list(tmp_path.glob("started-*"))
            if started:
                break
            assert server.poll() is None, "the stand-in server stopped"
            time.sleep(0.05)
        else:
            raise AssertionError("the task never started")
        worker_pid = int(started[0].name.split("-")[1])
        manager_pid = int((tmp_path / "manager").read_text())
        child_pid = int(started[0].read_text())
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        for _ in range(600):
            if gone(worker_pid) and gone(child_pid) and gone(manager_pid):
                break
            time.sleep(0.05)
        assert gone(worker_pid), "the worker outlived the server"
        assert gone(child_pid), "the worker's parse-pool child outlived the server"
        assert gone(manager_pid), "the progress Manager outlived the server"
    finally:
        if server.poll() is None:
            server.kill()
        (tmp_path / "release").write_text("")
