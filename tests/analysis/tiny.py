"""Tiny traces for the analysis tests, with answers known by construction (times in us)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_traceview as tv
from tests import kineto_builder as kb

US = 1000  # ns per us

GEMM = "volta_sgemm_128x64_nn"
RELU = "void at::native::relu_kernel<float>"
ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def load(path: Path, events: list[dict[str, Any]], **doc: Any) -> tv.Trace:
    """Write ``events`` as one Kineto file at ``path`` and load it (no cache)."""
    return tv.load(kb.write(path, kb.doc(events, **doc)), cache=False)


def timeline_events() -> list[dict[str, Any]]:
    """One rank, three streams; the GPU timeline (us)::

        stream 7   gemm [100,150)            memcpy [210,220)
        stream 8      gemm [120,170)
        stream 9         allreduce [140,200)                       allreduce [300,310)
        stream 7                                  Stream Sync [220,320)  (not work)

    span 100..310 = 210; busy [100,200) + [210,220) + [300,310) = 120; idle 90;
    compute [100,170) = 70; non-compute 50; communication 60 + 10 = 70, of which 30
    ([140,170)) under compute, 40 exposed. By type: compute alone 40, compute overlapping
    communication 30, communication alone 40, memory 10.
    """
    return [
        kb.step(1, 0, 400),
        *kb.launch(GEMM, 10, 100, 50, corr=1, stream=7),
        *kb.launch(GEMM, 20, 120, 50, corr=2, stream=8),
        *kb.launch(ALLREDUCE, 30, 140, 60, corr=3, stream=9),
        kb.runtime("cudaMemcpyAsync", 40, 5, corr=4),
        kb.memcpy(210, 10, corr=4, stream=7),
        kb.runtime("cudaStreamSynchronize", 50, 300, corr=5),
        kb.sync("Stream Sync", 220, 100, corr=5, stream=7),
        *kb.launch(ALLREDUCE, 60, 300, 10, corr=6, stream=9),
    ]


def cpu_only_events() -> list[dict[str, Any]]:
    return [kb.step(1, 0, 100), kb.cpu_op("aten::add", 10, 20)]


def idle_events() -> list[dict[str, Any]]:
    """Idle gaps of every kind on stream 7 (and one on stream 8), times in us.

    stream 7: k1 [100,150); k2 launched at 160, after k1 ended -> [170,172): host_wait 20;
    k3 [175,185): kernel_wait 3; k4 [300,310): other 115; Stream Sync [320,390) (not
    work); k5 [400,500): other 90; k6 [420,440) and k7 [450,460) inside k5 (overlapping
    activities on one stream: no gap); k8 [510,520): kernel_wait 10 after k5's end;
    k9 [600,610), its launch not in the trace: other 80; memcpy [612,613): kernel_wait 2.
    stream 8: [100,110), then one launched at 150 -> [200,210): host_wait 90.

    Per stream: 7: host_wait 20 (1 gap), kernel_wait 15 (3), other 285 (3) = 320
    = span 513 - busy 193; 8: host_wait 90 (1).
    HTA (immediately preceding row): k6's gap is 420 - 500 = -80, k7's 10, k8's 50: its
    stream 7 kernel_wait is 3 - 80 + 10 + 2 = -65 us (4 gaps), other 115 + 90 + 50 + 80 = 335.
    """
    return [
        kb.step(1, 0, 1000),
        *kb.launch(GEMM, 0, 100, 50, corr=1),
        *kb.launch(GEMM, 160, 170, 2, corr=2, cpu_dur=2),
        *kb.launch(RELU, 20, 175, 10, corr=3),
        *kb.launch(RELU, 30, 300, 10, corr=4),
        kb.runtime("cudaStreamSynchronize", 35, 300, corr=5),
        kb.sync("Stream Sync", 320, 70, corr=5),
        *kb.launch(GEMM, 40, 400, 100, corr=6),
        *kb.launch(RELU, 41, 420, 20, corr=7, cpu_dur=0.5),
        *kb.launch(RELU, 42, 450, 10, corr=8, cpu_dur=0.5),
        *kb.launch(RELU, 43, 510, 10, corr=9, cpu_dur=0.5),
        kb.kernel(RELU, 600, 10, corr=10),
        kb.runtime("cudaMemcpyAsync", 44, 0.5, corr=11),
        kb.memcpy(612, 1, corr=11),
        *kb.launch(GEMM, 5, 100, 10, corr=12, stream=8, cpu_dur=0.5),
        *kb.launch(GEMM, 150, 200, 10, corr=13, stream=8, cpu_dur=0.5),
    ]
