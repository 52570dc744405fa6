"""GPU remedies are never advised to a rank without GPU work (docs/semantics.md, "workload"):
CUDA graphs, pinned memory and the CUDA allocator's settings apply to GPU work only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import host_findings as hf
from jupyter_traceview.analysis.findings.advice import gpu_memory
from tests import kineto_builder as kb

pytestmark = pytest.mark.filterwarnings("ignore:findings. rank.s. .* have no GPU work")

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _load(tmp_path: Path, name: str, events: list[dict[str, Any]]) -> tv.Trace:
    return tv.load(kb.write(tmp_path / name / "r.json", kb.doc(events)), cache=False)


def _steps(loader_us: float, op_us: float, gpu: bool = False) -> list[dict[str, Any]]:
    """Three 100 us steps, each: DataLoader [0, loader_us), one operator [loader_us, loader_us + op_us),
    the rest of the step outside operators; with ``gpu`` the operator launches a 5 us kernel."""
    ev: list[dict[str, Any]] = []
    for i in range(3):
        t0 = 100.0 * i
        ev += [
            kb.step(i + 1, t0, 100),
            kb.annotation(LOADER, t0, loader_us),
            kb.cpu_op("aten::mm", t0 + loader_us, op_us),
        ]
        if gpu:
            ev += kb.launch("volta_sgemm_128x64_nn", t0 + loader_us + 1, t0 + loader_us + 3, 5, corr=i + 1)
    return ev


def _finding(frame: Any, rule: str) -> dict[str, Any]:
    rows = frame[frame["id"] == rule]
    assert len(rows) == 1, list(frame["id"])
    return dict(rows.iloc[0])


def test_cpu_only_python_overhead_advises_no_cuda_graphs(tmp_path: Path) -> None:
    # Per step: loader 20 us (20 % >= 10 %: dataloader_stall), operator 10 us, outside operators
    # 100 - 20 - 10 = 70 us (70 % >= 30 %: python_overhead). No GPU work: workload cpu_only.
    t = _load(tmp_path, "cpu", _steps(20, 10))
    assert tv.workload(t)["workload"].tolist() == ["cpu_only"]
    f = tv.findings(t)
    py = _finding(f, "python_overhead")
    assert py["time_at_stake_ns"] == 3 * 70_000
    assert "CUDA graphs" not in py["detail"] and "torch.compile" in py["detail"]
    dl = _finding(f, "dataloader_stall")
    assert "pin_memory" not in dl["detail"] and "num_workers=N" in dl["detail"]


def test_cpu_rank_bound_by_data_loading_gets_no_pinned_memory(tmp_path: Path) -> None:
    # Loader 60 us of each 100 us step (60 % >= 50 %): the verdict is data_loading_bound, not
    # cpu_only, yet the rank has no GPU work, so pinned memory (for host-to-GPU copies) is not advised.
    t = _load(tmp_path, "cpu_dl", _steps(60, 10))
    assert tv.workload(t)["workload"].tolist() == ["data_loading_bound"]
    dl = _finding(tv.findings(t), "dataloader_stall")
    assert dl["time_at_stake_ns"] == 3 * 60_000
    assert "pin_memory" not in dl["detail"]


def test_gpu_rank_bound_by_data_loading_keeps_pinned_memory(tmp_path: Path) -> None:
    # The same steps, each operator launching a kernel: the batch goes to the GPU, pin_memory applies.
    t = _load(tmp_path, "gpu_dl", _steps(60, 10, gpu=True))
    assert tv.workload(t)["workload"].tolist() == ["data_loading_bound"]
    dl = _finding(tv.findings(t), "dataloader_stall")
    assert "pin_memory=True" in dl["detail"]


def test_host_texts_depend_on_the_cpu_only_ranks() -> None:
    f = {
        "thread": "main",
        "wall_ns": 100,
        "op_ns": 10,
        "dataloader_ns": 20,
        "outside_ops_ns": 70,
        "python_ns": 0,
        "has_python": False,
        "top_frames": [],
    }
    (gpu,) = hf.python_overhead({0: f}, 30.0)
    (cpu,) = hf.python_overhead({0: f}, 30.0, cpu_only=[0])
    assert "CUDA graphs" in gpu["detail"] and "CUDA graphs" not in cpu["detail"]
    (gpu,) = hf.dataloader_stall({0: f}, 10.0)
    (cpu,) = hf.dataloader_stall({0: f}, 10.0, cpu_only=[0])
    assert "pin_memory" in gpu["detail"] and "pin_memory" not in cpu["detail"]


def test_allocator_settings_only_for_gpu_memory() -> None:
    assert gpu_memory("CUDA") and gpu_memory("HIP")
    assert not gpu_memory("CPU") and not gpu_memory("cpu")


def test_out_of_memory_on_host_memory_gets_no_cuda_allocator_setting(tmp_path: Path) -> None:
    # A CPU-only step whose host allocator fails a 1 MiB request ([OutOfMemory], device type 0 =
    # CPU): the advice is the batch and activations, never PYTORCH_CUDA_ALLOC_CONF.
    ev = [
        kb.step(1, 0, 100),
        kb.cpu_op("aten::mm", 10, 50),
        kb.mem(20, 4096, 1, total_allocated=4096, total_reserved=4096, device=-1, device_type=0),
        kb.oom(30, 1 << 20, total_allocated=4096, total_reserved=4096, device=-1, device_type=0),
    ]
    oom = _finding(tv.findings(_load(tmp_path, "cpu_oom", ev)), "out_of_memory")
    assert "CPU" in oom["title"] or "CPU" in oom["detail"]
    assert "PYTORCH_CUDA_ALLOC_CONF" not in oom["detail"] and "reduce the batch" in oom["detail"]
