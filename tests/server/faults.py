"""Task functions for the fault tests: they run in the Analyzer's spawned worker processes.

Module-level (a spawned worker imports them by name). Each writes its process id and the
id of a child it forks (standing in for tv.load's parse pool: the child inherits the
worker's pipes) into the server root, then waits for a ``release`` file there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from jupyter_traceview.server.tasks import report


def blocking(root: str, entry: Any, cache: Any, progress: Any = None, label: str = "") -> dict[str, Any]:
    base = Path(root)
    child = os.fork()
    if child == 0:  # the "parse pool" child: holds the pipes, outlives a killed worker
        time.sleep(600)
        os._exit(0)
    report(progress, label, {"stage": "loading", "done": 0, "total": 1})
    tmp = base / f".started-{os.getpid()}"
    tmp.write_text(str(child))
    tmp.rename(base / f"started-{os.getpid()}")  # whole or absent: the test reads it at once
    while not (base / "release").exists():
        time.sleep(0.02)
    os.kill(child, 9)
    os.waitpid(child, 0)
    report(progress, label, {"stage": "analysing", "done": 1, "total": 1})  # the Manager may be dead
    return {"pid": os.getpid(), "path": entry.path}
