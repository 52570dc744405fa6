"""The real Kineto trace folders that reference and golden files are written for.

Shared by ``scripts/make_golden.py`` (our numbers) and ``scripts/hta_reference.py`` (HTA's,
run in HTA's own environment): plain paths only, no import of jupyter_traceview.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Folder name -> path (the same folders as tests/conftest.py's KINETO_FOLDERS).
FOLDERS = {
    "dlrm_8rank_v100": ROOT / "jupyter_traceview" / "samples" / "dlrm_8rank_v100",
    "hta_dlrm_2of128_ranks": ROOT / "tests" / "data" / "hta_dlrm_2of128_ranks",
    "h100_bert_small": ROOT / "tests" / "data" / "h100_bert_small",
    "hta_alexnet": ROOT / "tests" / "data" / "hta_alexnet",
    "hta_cpu_only": ROOT / "tests" / "data" / "hta_cpu_only",
    "hta_mi250_rocm": ROOT / "tests" / "data" / "hta_mi250_rocm",
    "hta_triton": ROOT / "tests" / "data" / "hta_triton",
    "h200_train": ROOT / "tests" / "data" / "h200_cuda" / "train",
}
#: Operators for the frequent-kernel-sequence analysis, per folder.
SEQUENCE_OPERATORS = {
    "dlrm_8rank_v100": "aten::linear",
    "hta_dlrm_2of128_ranks": "aten::linear",
    "h100_bert_small": "aten::linear",
    "hta_alexnet": "aten::conv2d",
    "hta_mi250_rocm": "aten::linear",
    "h200_train": "aten::linear",
}
