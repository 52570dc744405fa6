"""CPU time of every process of a command's process tree, and the machine's load meanwhile.

    python benchmarks/tree_cpu.py [--every 0.5] -- COMMAND [ARG ...]

On a shared machine a benchmark's wall time says little; the CPU time each process used
says where the work went and what a quiet machine would take. Runs COMMAND, and every
``--every`` seconds reads ``/proc/PID/stat`` of it and of all its descendants (the pool's or
the cluster's workers, a server it started) and the 1-minute load average. A process's CPU
is its last reading (user + system, its own, not its reaped children's), so up to ``--every``
seconds of a process that exits between two readings are missed (a pool's workers are idle
by then). Prints COMMAND's output, then one JSON line: the wall time, each process (pid,
parent, command line shortened, CPU seconds, first and last time seen), the CPU summed, and
the load average's minimum, median and maximum over the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rindex(b")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            parts = fh.read().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(p.decode(errors="replace") for p in parts if p)
    return text if len(text) <= 160 else text[:157] + "..."


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                kids.setdefault(st[0], []).append(int(name))
    return kids


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--every", type=float, default=0.5)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    seen: dict[int, dict[str, Any]] = {}
    loads: list[float] = []
    while True:
        done = proc.poll() is not None
        kids = _children()
        todo, tree = [proc.pid], []
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(kids.get(pid, []))
        now = time.perf_counter() - t0
        for pid in tree:
            st = _stat(pid)
            if st is None:
                continue
            row = seen.get(pid)
            if row is None:
                row = seen[pid] = {"pid": pid, "parent": st[0], "command": _cmdline(pid), "first_s": round(now, 1)}
            row["cpu_s"] = st[1]
            row["last_s"] = round(now, 1)
        loads.append(os.getloadavg()[0])
        if done:
            break
        time.sleep(a.every)
    wall = time.perf_counter() - t0
    rows = sorted(seen.values(), key=lambda r: r["first_s"])
    # The command itself is reaped: its own CPU comes from the children's rusage totals
    # only together with everything it reaped; its last reading is kept instead.
    print(
        json.dumps(
            {
                "wall_s": round(wall, 2),
                "returncode": proc.returncode,
                "processes": [{**r, "cpu_s": round(r["cpu_s"], 2)} for r in rows],
                "cpu_total_s": round(sum(r["cpu_s"] for r in rows), 2),
                "load_average": {
                    "min": min(loads),
                    "median": statistics.median(loads),
                    "max": max(loads),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
