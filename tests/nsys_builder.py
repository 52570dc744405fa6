"""Tiny Nsight Systems SQLite exports built in code, with answers known by construction.

Times are ns since the session start, as Nsight writes them. ``Export.write`` writes the
tables with the columns of a recent export (Nsight 2026.x, schema 3.25) by default, or
with the column names of other schema generations (``schema="old"``: inline text names,
``gridDim``/``blockDim`` text, raw ``processId``/``threadId``, no enum tables;
``schema="minimal"``: the fewest columns a reader can be given).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PID = 4242
TID = 4242
SESSION_UTC_NS = 1_700_000_000_000_000_000
_VM = 1 << 48  # Nsight's serialised ids carry a VM id above the pid


def gpid(pid: int) -> int:
    """Nsight's serialised globalPid for an OS pid."""
    return _VM | (pid << 24)


def gtid(pid: int, tid: int) -> int:
    """Nsight's serialised globalTid for an OS pid and tid."""
    return gpid(pid) | tid


# Enum values as Nsight exports them.
MEMCPY_HTOD, MEMCPY_DTOH, MEMCPY_DTOD, MEMCPY_PTOP = 1, 2, 8, 10
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE = 0, 1, 2
SYNC_EVENT, SYNC_STREAM_WAIT, SYNC_STREAM, SYNC_CONTEXT = 1, 2, 3, 4
NVTX_MARK, NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN_CREATE = 34, 59, 60, 75


@dataclass
class Export:
    """The rows of an export; ``write`` turns them into a database."""

    kernels: list[dict[str, Any]] = field(default_factory=list)
    memcpys: list[dict[str, Any]] = field(default_factory=list)
    memsets: list[dict[str, Any]] = field(default_factory=list)
    syncs: list[dict[str, Any]] = field(default_factory=list)
    runtime: list[dict[str, Any]] = field(default_factory=list)
    nvtx: list[dict[str, Any]] = field(default_factory=list)
    processes: dict[int, str] = field(default_factory=lambda: {PID: "python3"})
    threads: dict[tuple[int, int], str] = field(default_factory=lambda: {(PID, TID): "python3"})
    gpus: list[dict[str, Any]] = field(
        default_factory=lambda: [{"id": 0, "name": "Test GPU", "smCount": 108, "cuDevice": 0}]
    )

    # ------------------------------------------------------------------ rows
    def kernel(
        self,
        name: str,
        start: int,
        end: int,
        *,
        corr: int,
        device: int = 0,
        stream: int = 7,
        context: int = 1,
        pid: int = PID,
        grid: tuple[int, int, int] = (8, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        regs: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
    ) -> Export:
        self.kernels.append(dict(locals()))
        return self

    def memcpy(
        self,
        start: int,
        end: int,
        *,
        corr: int,
        kind: int = MEMCPY_HTOD,
        src: int = MEM_PINNED,
        dst: int = MEM_DEVICE,
        nbytes: int = 1024,
        device: int = 0,
        stream: int = 7,
        context: int = 1,
        pid: int = PID,
    ) -> Export:
        self.memcpys.append(dict(locals()))
        return self

    def memset(
        self,
        start: int,
        end: int,
        *,
        corr: int,
        nbytes: int = 512,
        mem: int = MEM_DEVICE,
        device: int = 0,
        stream: int = 7,
        context: int = 1,
        pid: int = PID,
    ) -> Export:
        self.memsets.append(dict(locals()))
        return self

    def sync(
        self,
        start: int,
        end: int,
        *,
        corr: int,
        sync_type: int = SYNC_STREAM,
        device: int = 0,
        stream: int = 7,
        context: int = 1,
        pid: int = PID,
    ) -> Export:
        self.syncs.append(dict(locals()))
        return self

    def call(
        self, name: str, start: int, end: int, *, corr: int, pid: int = PID, tid: int = TID, driver: bool = False
    ) -> Export:
        self.runtime.append(dict(locals()))
        return self

    def launch(
        self, name: str, cpu_start: int, gpu_start: int, dur: int, *, corr: int, cpu_dur: int = 5, **kw: Any
    ) -> Export:
        """A ``cudaLaunchKernel`` call and the kernel it launched."""
        pid = kw.get("pid", PID)
        tid = kw.pop("tid", TID)
        self.call("cudaLaunchKernel_v7000", cpu_start, cpu_start + cpu_dur, corr=corr, pid=pid, tid=tid)
        return self.kernel(name, gpu_start, gpu_start + dur, corr=corr, **kw)

    def range(
        self,
        text: str | None,
        start: int,
        end: int | None,
        *,
        pid: int = PID,
        tid: int = TID,
        event_type: int = NVTX_PUSHPOP,
        domain: int = 0,
    ) -> Export:
        self.nvtx.append(dict(locals()))
        return self

    def domain(self, domain: int, name: str, *, pid: int = PID, tid: int = TID) -> Export:
        return self.range(name, 0, None, pid=pid, tid=tid, event_type=NVTX_DOMAIN_CREATE, domain=domain)

    # ------------------------------------------------------------------ writing
    def write(
        self,
        path: Path,
        *,
        schema: str = "new",
        omit: tuple[str, ...] = (),
        session: bool = True,
    ) -> Path:
        """Write the export; ``omit`` names tables to leave out (e.g. ``"TARGET_INFO_GPU"``)."""
        if schema not in ("new", "old", "minimal"):
            raise ValueError(schema)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        con = sqlite3.connect(path)
        strings: dict[str, int] = {}

        def sid(s: str) -> int:
            return strings.setdefault(s, len(strings) + 1)

        new, old = schema == "new", schema == "old"

        def table(name: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
            if name in omit:
                return
            con.execute(f'CREATE TABLE "{name}" ({", ".join(columns)})')
            if rows:
                marks = ", ".join("?" for _ in columns)
                con.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)

        def gpu_ids(r: dict[str, Any]) -> list[Any]:
            if new:
                return [r["device"], r["context"], 0, r["stream"], r["corr"], gpid(r["pid"])]
            if old:
                return [r["device"], r["context"], r["stream"], r["corr"], r["pid"]]
            return [r["device"], r["stream"], r["corr"], gpid(r["pid"])]

        if new:
            gpu_cols = ["deviceId INTEGER", "contextId INTEGER", "greenContextId INTEGER", "streamId INTEGER"]
            gpu_cols += ["correlationId INTEGER", "globalPid INTEGER"]
        elif old:
            gpu_cols = ["deviceId INTEGER", "contextId INTEGER", "streamId INTEGER", "correlationId INTEGER"]
            gpu_cols += ["processId INTEGER"]
        else:
            gpu_cols = ["deviceId INTEGER", "streamId INTEGER", "correlationId INTEGER", "globalPid INTEGER"]
        base = ["start INTEGER", "end INTEGER"]

        # Kernels.
        if new:
            cols = [*base, *gpu_cols, "demangledName INTEGER", "shortName INTEGER", "registersPerThread INTEGER"]
            cols += ["gridX INTEGER", "gridY INTEGER", "gridZ INTEGER", "blockX INTEGER", "blockY INTEGER"]
            cols += ["blockZ INTEGER", "staticSharedMemory INTEGER", "dynamicSharedMemory INTEGER"]
            rows = [
                (
                    k["start"],
                    k["end"],
                    *gpu_ids(k),
                    sid(k["name"]),
                    sid(k["name"].split("(")[0]),
                    k["regs"],
                    *k["grid"],
                    *k["block"],
                    k["static_smem"],
                    k["dynamic_smem"],
                )
                for k in self.kernels
            ]
        elif old:
            cols = [*base, *gpu_cols, "name TEXT", "registersPerThread INTEGER", "gridDim TEXT", "blockDim TEXT"]
            cols += ["sharedMemory INTEGER"]
            rows = [
                (
                    k["start"],
                    k["end"],
                    *gpu_ids(k),
                    k["name"],
                    k["regs"],
                    "({}, {}, {})".format(*k["grid"]),
                    "{},{},{}".format(*k["block"]),
                    k["static_smem"] + k["dynamic_smem"],
                )
                for k in self.kernels
            ]
        else:
            cols = [*base, *gpu_cols, "shortName INTEGER"]
            rows = [(k["start"], k["end"], *gpu_ids(k), sid(k["name"])) for k in self.kernels]
        table("CUPTI_ACTIVITY_KIND_KERNEL", cols, rows)

        # Copies and sets.
        if self.memcpys or schema != "minimal":
            if schema == "minimal":
                cols = [*base, *gpu_cols, "bytes INTEGER", "copyKind INTEGER"]
                rows = [(m["start"], m["end"], *gpu_ids(m), m["nbytes"], m["kind"]) for m in self.memcpys]
            else:
                cols = [*base, *gpu_cols, "bytes INTEGER", "copyKind INTEGER", "srcKind INTEGER", "dstKind INTEGER"]
                rows = [
                    (m["start"], m["end"], *gpu_ids(m), m["nbytes"], m["kind"], m["src"], m["dst"])
                    for m in self.memcpys
                ]
            table("CUPTI_ACTIVITY_KIND_MEMCPY", cols, rows)
        if self.memsets or schema != "minimal":
            cols = [*base, *gpu_cols, "bytes INTEGER", "memKind INTEGER"]
            rows = [(m["start"], m["end"], *gpu_ids(m), m["nbytes"], m["mem"]) for m in self.memsets]
            table("CUPTI_ACTIVITY_KIND_MEMSET", cols, rows)
        if self.syncs or schema != "minimal":
            # CUPTI's sync record has no device: Nsight writes 0 (the reader takes the context's device).
            sync_cols = ["deprecatedSyncType INTEGER", "syncType INTEGER"] if new else ["syncType INTEGER"]
            rows = []
            for s in self.syncs:
                ids = gpu_ids({**s, "device": 0})
                rows.append((s["start"], s["end"], *ids, *([None] if new else []), s["sync_type"]))
            table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", [*base, *gpu_cols, *sync_cols], rows)

        # CUDA API calls.
        if self.runtime or schema != "minimal":
            if new:
                cols = [*base, "eventClass INTEGER", "globalTid INTEGER", "correlationId INTEGER", "nameId INTEGER"]
                rows = [
                    (c["start"], c["end"], 1 if c["driver"] else 0, gtid(c["pid"], c["tid"]), c["corr"], sid(c["name"]))
                    for c in self.runtime
                ]
            elif old:
                cols = [*base, "processId INTEGER", "threadId INTEGER", "correlationId INTEGER", "name TEXT"]
                rows = [(c["start"], c["end"], c["pid"], c["tid"], c["corr"], c["name"]) for c in self.runtime]
            else:
                cols = [*base, "globalTid INTEGER", "correlationId INTEGER", "nameId INTEGER"]
                rows = [
                    (c["start"], c["end"], gtid(c["pid"], c["tid"]), c["corr"], sid(c["name"])) for c in self.runtime
                ]
            table("CUPTI_ACTIVITY_KIND_RUNTIME", cols, rows)

        # NVTX.
        if self.nvtx or schema != "minimal":
            if new:
                cols = [*base, "eventType INTEGER", "text TEXT", "globalTid INTEGER", "endGlobalTid INTEGER"]
                cols += ["textId INTEGER", "domainId INTEGER"]
                rows = []
                for i, n in enumerate(self.nvtx):
                    # Half the texts inline, half through StringIds, as Nsight mixes them.
                    inline = i % 2 == 0 or n["text"] is None
                    rows.append(
                        (
                            n["start"],
                            n["end"],
                            n["event_type"],
                            n["text"] if inline else None,
                            gtid(n["pid"], n["tid"]),
                            None,
                            None if inline else sid(n["text"]),
                            n["domain"],
                        )
                    )
            elif old:
                cols = [*base, "eventType INTEGER", "text TEXT", "processId INTEGER", "threadId INTEGER"]
                cols += ["domainId INTEGER"]
                rows = [
                    (n["start"], n["end"], n["event_type"], n["text"], n["pid"], n["tid"], n["domain"])
                    for n in self.nvtx
                ]
            else:
                cols = [*base, "text TEXT", "globalTid INTEGER"]
                rows = [
                    (n["start"], n["end"], n["text"], gtid(n["pid"], n["tid"]))
                    for n in self.nvtx
                    if n["event_type"] != NVTX_DOMAIN_CREATE
                ]
            table("NVTX_EVENTS", cols, rows)

        # Names, processes, threads, target information, enums.
        if schema != "old":
            table(
                "ThreadNames",
                ["nameId INTEGER", "priority INTEGER", "globalTid INTEGER"],
                [(sid(name), 20, gtid(p, t)) for (p, t), name in self.threads.items()],
            )
            table(
                "PROCESSES",
                ["globalPid INTEGER", "pid INTEGER", "name TEXT"],
                [(gpid(p), p, name) for p, name in self.processes.items()],
            )
        if new:
            table(
                "ENUM_CUDA_MEMCPY_OPER",
                ["id INTEGER", "name TEXT", "label TEXT"],
                [
                    (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
                    (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
                    (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
                    (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
                    (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
                ],
            )
            table(
                "ENUM_CUDA_MEM_KIND",
                ["id INTEGER", "name TEXT", "label TEXT"],
                [(0, "PAGEABLE", "Pageable"), (1, "PINNED", "Pinned"), (2, "DEVICE", "Device")],
            )
            table(
                "ENUM_CUPTI_SYNC_TYPE",
                ["id INTEGER", "name TEXT", "label TEXT"],
                [
                    (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
                    (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
                    (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
                    (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
                ],
            )
            gpu_columns = ["vmId INTEGER", "id INTEGER", "name TEXT", "smCount INTEGER", "cuDevice INTEGER"]
            gpu_rows = [(_VM, g["id"], g["name"], g["smCount"], g["cuDevice"]) for g in self.gpus]
            table("TARGET_INFO_GPU", gpu_columns, gpu_rows)
            table(
                "META_DATA_EXPORT",
                ["name TEXT", "value TEXT"],
                [("EXPORT_PRODUCT_VERSION", "2026.2.1.210"), ("EXPORT_SCHEMA_VERSION", "3.25.0")],
            )
        if session and schema != "minimal":
            table(
                "TARGET_INFO_SESSION_START_TIME",
                ["utcEpochNs INTEGER", "utcTime TEXT", "localTime TEXT", "systemClockNs INTEGER"],
                [(SESSION_UTC_NS, "2023-11-14T22:13:20", "2023-11-14T22:13:20", 123)],
            )
        if strings or schema != "old":
            table(
                "StringIds",
                ["id INTEGER PRIMARY KEY", "value TEXT NOT NULL"],
                [(i, s) for s, i in strings.items()],
            )
        con.commit()
        con.close()
        return path
