"""Reader for the trace JSON that ``jax.profiler`` writes (``docs/jax.md``).

``jax.profiler.trace(dir)`` writes ``dir/plugins/profile/<run>/<host>.trace.json.gz`` (and,
with ``create_perfetto_trace=True``, ``perfetto_trace.json.gz``, the same events): Chrome
trace events, one process per host (``/host:CPU``) and one per device (``/device:GPU:0``,
``/device:TPU:0``), named by metadata events, threads named by what they hold. Each event
is rewritten as the Kineto event it corresponds to, and the Kineto reader
(:func:`.kineto.parse_kineto`) builds the tables, so a JAX profile gives the tables a
PyTorch trace gives. The mapping:

* each device process is a rank, numbered in the order of the devices (``rank_source``
  ``"order"``: the loader numbers the files of a folder one after the other); the host's
  events go to the first device's rank (a process drives all its devices from one set of
  threads, which cannot be split by device); a profile without devices (JAX on CPU) is one
  rank of host events only, like a CPU-only PyTorch trace;
* device events on a ``Stream #`` thread are kernels, or copies / memsets where their
  name says so (``memcpy``, ``MemcpyH2D``/``D2H``/``D2D``, ``memset``);
* device events on the lines xprof derives from the kernels (``XLA Ops``, ``XLA Modules``,
  ``Steps``, ``Framework Ops``, ... and ``XLA Ops - from #13`` where a device has several
  groups of streams) are device-side annotations (Kineto's ``gpu_user_annotation``);
* host events are operators (``cpu_op``), but CUDA driver/runtime calls (``cu*``/
  ``cuda*``), which are the runtime calls that launch the device work; a
  ``StepTraceAnnotation`` span (an event with a ``step_num`` argument) is the iteration
  ``ProfilerStep#<step_num>`` of every rank (all the devices run the step); host events
  named ``$...`` (JAX's Python tracer: ``$file.py:12 function``) are Python functions
  (``python_function``, named without the ``$``);
* device events whose XLA op (``hlo_op`` argument, else the name) is a collective
  (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
  ``collective-permute``) carry it as their ``Collective name``: they are communication.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import msgspec

from ...errors import TraceFormatError
from ...model.rank_data import RankData, replaced
from .files import DEFAULT_MAX_JSON_BYTES, read_bytes
from .kineto import parse_kineto

__all__ = ["COLLECTIVE_OPS", "kineto_documents", "parse_jax", "ranks_of"]

#: XLA's collective ops (HLO op names, with their ``-start``/``-done`` and ``.N`` forms),
#: by the ``Collective name`` they are given.
COLLECTIVE_OPS: dict[str, str] = {
    "all-reduce": "all_reduce",
    "all-gather": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-to-all": "all_to_all",
    "collective-permute": "send_recv",
}
_COLLECTIVE = re.compile(r"(?:^|[^a-z])(" + "|".join(re.escape(k) for k in COLLECTIVE_OPS) + r")(?![a-z])")
_DEVICE_PROCESS = re.compile(r"^/device:([A-Za-z_]+):(\d+)")
#: The lines xprof derives on a device from its kernels (``XLA Ops``, ``XLA Modules``, ``Steps``, the
#: framework's ops and name scopes, ...), named ``<line> - from #<stream>`` where a device has
#: several groups of streams: device-side annotations, not device work.
_DERIVED_LINE = re.compile(
    r"^(?:Steps|XLA Modules|XLA Ops|Async XLA Ops|TensorFlow Name Scope|TensorFlow Ops|Framework Name Scope"
    r"|Framework Ops|Source code|Launch Stats|Host Offload Ops)(?: - from #\d+)?$"
)
_RUNTIME = re.compile(r"^cu(?:da)?[A-Z]")


def _device_kind(name: str) -> str:
    lower = name.lower()
    if "memcpy" in lower:  # Memcpy, MemcpyH2D, MemcpyD2H, MemcpyD2D, MemcpyP2P
        return "gpu_memcpy"
    if "memset" in lower:
        return "gpu_memset"
    return "kernel"


def _pid(pid: Any, devices: list[tuple[str, int, Any]], rank_of: dict[Any, int]) -> Any:
    """A device's process id in the Kineto document: its ordinal, as Kineto's device events have."""
    return devices[rank_of[pid]][1] if pid in rank_of else pid


def kineto_documents(path: Path, doc: Any) -> list[tuple[int, dict[str, Any]]]:
    """``doc`` (a decoded ``jax.profiler`` trace) as one Kineto document per rank, with its rank."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceFormatError(path, "has no traceEvents list", "Load the jax.profiler output folder as written")
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M":
            name = (e.get("args") or {}).get("name")
            if e.get("name") == "process_name" and isinstance(name, str):
                processes[e.get("pid")] = name
            elif e.get("name") == "thread_name" and isinstance(name, str):
                threads[(e.get("pid"), e.get("tid"))] = name
    devices = sorted(
        ((m.group(1), int(m.group(2)), pid) for pid, n in processes.items() if (m := _DEVICE_PROCESS.match(n))),
        key=lambda t: (t[0], t[1]),
    )
    rank_of: dict[Any, int] = {pid: r for r, (_, _, pid) in enumerate(devices)}
    n_ranks = max(len(devices), 1)
    out: list[list[dict[str, Any]]] = [[] for _ in range(n_ranks)]
    for pid, name in processes.items():
        out[rank_of.get(pid, 0)].append(
            {"ph": "M", "pid": _pid(pid, devices, rank_of), "name": "process_name", "args": {"name": name}}
        )
    for (pid, tid), name in threads.items():
        meta = {
            "ph": "M",
            "pid": _pid(pid, devices, rank_of),
            "tid": tid,
            "name": "thread_name",
            "args": {"name": name},
        }
        out[rank_of.get(pid, 0)].append(meta)
    for e in events:
        if not isinstance(e, dict) or e.get("ph") not in ("X", "i", "I"):
            continue
        pid, tid, name = e.get("pid"), e.get("tid"), e.get("name")
        if not isinstance(name, str):
            continue
        args = dict(e.get("args") or {})
        thread = threads.get((pid, tid), "")
        ev = {k: v for k, v in e.items() if k != "args"}
        if pid in rank_of:
            args["device"] = devices[rank_of[pid]][1]
            if _DERIVED_LINE.match(thread):
                cat = "gpu_user_annotation"
            else:
                cat = _device_kind(name)
                args["stream"] = tid if isinstance(tid, int) else -1
            hlo_op = args.get("hlo_op")
            op = hlo_op if isinstance(hlo_op, str) else name
            m = _COLLECTIVE.search(op)
            if m and cat != "gpu_user_annotation":
                args["Collective name"] = COLLECTIVE_OPS[m.group(1)]
            ev["pid"] = _pid(pid, devices, rank_of)
        elif "step_num" in args:
            cat = "user_annotation"
            ev["name"] = f"ProfilerStep#{args['step_num']}"
        elif ev.get("ph") != "X":
            cat = "cpu_instant_event"
        elif name.startswith("$"):  # JAX's Python tracer: "$file.py:12 function", "$builtins isinstance"
            cat = "python_function"
            ev["name"] = name[1:]
        elif _RUNTIME.match(name):
            cat = "cuda_runtime"
        else:
            cat = "cpu_op"
        if "correlation_id" in args:
            args["correlation"] = args["correlation_id"]
        ev["cat"] = cat
        ev["args"] = args
        if cat == "user_annotation":  # a step: every device's iteration
            for evs in out:
                evs.append(ev)
        else:
            out[rank_of.get(pid, 0)].append(ev)
    docs = []
    for r, evs in enumerate(out):
        info = {"rank": r, "world_size": n_ranks}
        docs.append((r, {"schemaVersion": 1, "distributedInfo": info, "traceEvents": evs}))
    return docs


def parse_jax(path: Path, *, bad_events: str = "raise", max_json_bytes: int = DEFAULT_MAX_JSON_BYTES) -> list[RankData]:
    """Read one ``jax.profiler`` trace JSON into one RankData per device (see the module's mapping).

    Ranks carry ``rank_source="order"`` (the loader numbers them across the files of a load).
    """
    data = read_bytes(path, max_json_bytes=max_json_bytes)
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(
            path, f"is not valid JSON ({exc})", "The profile was cut short; record it again"
        ) from None
    return ranks_of(path, doc, bad_events=bad_events)


def ranks_of(path: Path, doc: Any, *, bad_events: str = "raise") -> list[RankData]:
    """The ranks of ``doc``, a decoded trace JSON of ``jax.profiler`` or of xprof's trace viewer
    (:mod:`.xplane`), read from ``path`` (see the module's mapping)."""
    ranks: list[RankData] = []
    for r, kdoc in kineto_documents(path, doc):
        for d in parse_kineto(path, msgspec.json.encode(kdoc), bad_events=bad_events):
            meta = dataclasses.replace(d.meta, rank=r, rank_source="order", source_format="jax", distributed_info={})
            ranks.append(replaced(d, meta=meta))
    return ranks
