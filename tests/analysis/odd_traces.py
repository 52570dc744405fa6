"""Odd but loadable traces, built in code: every analysis must return a frame on each of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import kineto_builder as kb

#: A kernel name longer than any real one (trace_diff, now tv.compare, once made a fixed-width string array of it).
HUGE = "k" * (1 << 20)


def _ops_and_kernels(ts: float, dur: float, n: int, name: str = "gemm") -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(n):
        events += kb.launch(f"{name}_{i % 2}", ts, ts, dur, corr=i + 1)
        events.append(kb.cpu_op("aten::mm", ts, dur))
    return events


def odd_docs() -> dict[str, list[dict[str, Any]]]:
    """name -> the rank documents of one odd trace (one document per rank)."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    return {
        "all_ts_equal": [kb.doc([kb.step(1, 100, 50), *_ops_and_kernels(100, 50, 6)], rank=0)],
        "all_ts_equal_zero_dur": [kb.doc([kb.step(1, 100, 0), *_ops_and_kernels(100, 0, 4)], rank=0)],
        "one_event": [kb.doc([kb.cpu_op("aten::add", 10, 5)])],
        "one_kernel": [kb.doc([kb.kernel("lonely", 10, 5, corr=1)])],
        "no_gpu": [kb.doc([kb.step(1, 0, 100), kb.cpu_op("aten::add", 10, 5), kb.cpu_op("aten::mul", 20, 5)])],
        "huge_names": [
            kb.doc([kb.step(1, 0, 1000), *kb.launch(HUGE, 10, 20, 30, corr=1), kb.cpu_op(HUGE, 10, 30)], rank=0)
        ],
        "zero_durations": [kb.doc([kb.step(1, 0, 0), *kb.launch("k", 10, 20, 0, corr=1), kb.cpu_op("a", 5, 0)])],
        "no_steps": [kb.doc([*_ops_and_kernels(10, 20, 3), *kb.launch(nccl, 100, 110, 40, corr=9, stream=9)])],
        "two_ranks_equal_ts": [
            kb.doc([kb.step(1, 0, 10), *kb.launch(nccl, 0, 0, 10, corr=1, stream=9)], rank=r, world_size=2)
            for r in (0, 1)
        ],
    }


def _real(name: str, edit: Any) -> list[dict[str, Any]]:
    """The real traces of tests/data/<name> with ``edit(event)`` applied to every complete event."""
    import gzip
    import json

    from tests.conftest import DATA

    docs = []
    for path in sorted((DATA / name).glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for ev in doc["traceEvents"]:
            if ev.get("ph") == "X":
                edit(ev)
        docs.append(doc)
    return docs


def _set(**values: Any) -> Any:
    return lambda ev: ev.update(values)


def odd_docs_real() -> dict[str, list[dict[str, Any]]]:
    """Real traces made odd: every timestamp equal, every duration zero (flows and threads kept)."""

    def same_ts() -> Any:
        base = None

        def edit(ev: dict[str, Any]) -> None:
            nonlocal base
            base = ev["ts"] if base is None else base
            ev["ts"] = base

        return edit

    return {
        "alexnet_all_ts_equal": _real("hta_alexnet", same_ts()),
        # Two ranks with NCCL kernels, every timestamp equal: critical_path raised KeyError.
        "dlrm_2_ranks_all_ts_equal": _real("hta_dlrm_2of128_ranks", same_ts()),
        "alexnet_zero_durations": _real("hta_alexnet", _set(dur=0)),
        "bert_all_ts_equal_zero_dur": _real("h100_bert_small", _set(ts=1000, dur=0)),
    }


def write_odd(root: Path) -> dict[str, Path]:
    """Each odd trace as a folder under ``root``; name -> folder."""
    out = {}
    for name, docs in {**odd_docs(), **odd_docs_real()}.items():
        for r, d in enumerate(docs):
            kb.write(root / name / f"rank-{r}.json", d)
        out[name] = root / name
    return out
