"""Every table the Kineto reader builds, pinned column by column on every trace we have.

``reader_digests.json`` holds, per trace, a digest of each column of each table (values,
dtype and, for categoricals, codes and categories in order) and of the rank's metadata,
written by the reader as it was before the issue-17 speed-ups (main at 6a0e4b1). A reader
change that alters any value, order, dtype or category of any column fails here, naming
the trace, the table and the column.

The traces: every real trace in ``tests/data`` (ROCm with string stream ids, Triton,
CPU-only, H100 with shapes and memory records, 2 of 128 DLRM ranks, CPU traces with
shapes, strides and stacks), the 8-rank sample, a small synthetic set from
``benchmarks/synth.py``, and a hand-made file of odd inputs (string pids and tids,
Kineto's pseudo events, missing fields, ns timestamps, non-ASCII names, B/E pairs,
flows, metadata). Regenerate (only for an intended change of the tables, said in the
commit): ``python tests/loading/readers/test_reader_golden.py --write``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script (--write): PYTHONPATH may name another checkout
    sys.path.append(str(ROOT))

import jupyter_traceview as tv  # noqa: E402
from jupyter_traceview.loading.readers import kineto  # noqa: E402
from jupyter_traceview.loading.readers.files import read_bytes, trace_format  # noqa: E402
from tests import kineto_builder as kb  # noqa: E402

DIGESTS = Path(__file__).with_name("reader_digests.json")
DATA = ROOT / "tests" / "data"
TABLES = ("events", "gpu_args", "comms", "memory", "op_args", "counters")


def _real_traces() -> dict[str, Path]:
    files = sorted(
        p
        for p in DATA.glob("**/*.json*")
        if "key_averages" not in p.name and p.name not in ("facts.json", "labels.json") and trace_format(p) == "kineto"
    )
    files += sorted(Path(tv.sample_path()).glob("*.json*"))
    return {f"{p.parent.name}/{p.name}": p for p in files}


def _odd_events() -> list[dict[str, Any]]:
    """A file that takes the reader's per-value paths: every odd input it accepts."""
    events: list[dict[str, Any]] = [
        *kb.metadata(100, name="python3", labels="CPU"),
        *kb.metadata(0, name="gpu", labels="GPU 0"),
        {"name": "thread_name", "ph": "M", "pid": 100, "tid": "worker", "args": {"name": "t"}},
        # Kineto's pseudo events: the profiler span and iteration markers.
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 1_700_000_000_000_000.125,
            "dur": 5000.5,
        },
        {
            "ph": "i",
            "cat": "Trace",
            "name": "Iteration Start: PyTorch Profiler",
            "pid": "Traces",
            "tid": "x",
            "ts": 1_700_000_000_000_001.0,
            "s": "g",
        },
        # Malformed (no dur: dropped, counted) and named before the names of the kept events.
        kb.cpu_op("aten::zero_", 1_700_000_000_000_005.0, 1.0),
        kb.step(1, 1_700_000_000_000_010.001, 900.0007),
        kb.cpu_op(
            "aten::mm \u00e9\u4e2d",
            1_700_000_000_000_020.5004,
            40.25,
            **{
                "Input Dims": [[8, 32], [32, 64]],
                "Input type": ["float", "float"],
                "Input Strides": [[32, 1], [64, 1]],
                "Concrete Inputs": ["", ""],
            },
        ),
        kb.cpu_op(
            "aten::mm \u00e9\u4e2d",
            1_700_000_000_000_070.5,
            40.0,
            **{"Input Dims": [[8, 32], [32, 64]], "Input type": ["float", "float"]},
        ),
        kb.cpu_op("aten::add", 1_700_000_000_000_120.0, 4.0, tid="pt_autograd_0"),
        kb.cpu_op("aten::add", 1_700_000_000_000_125.0, 4.0, tid="17", pid="100"),
        kb.cpu_op("aten::zero_", 1_700_000_000_000_130.0, 1.0),
        *kb.launch("gemm \u00fc", 1_700_000_000_000_140.0, 1_700_000_000_000_160.0, 20.0, corr=11),
        kb.memset(1_700_000_000_000_200.0, 3.0, corr=12),
        {"ph": "s", "id": 11, "pid": 100, "tid": 100, "ts": 1_700_000_000_000_140.0, "cat": "ac2g", "name": "ac2g"},
        {
            "ph": "f",
            "id": 11,
            "pid": 0,
            "tid": 7,
            "ts": 1_700_000_000_000_160.0,
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        },
        {"ph": "B", "cat": "user_annotation", "name": "region", "pid": 100, "tid": 100, "ts": 1_700_000_000_000_300.0},
        {"ph": "E", "pid": 100, "tid": 100, "ts": 1_700_000_000_000_310.0},
        {"ph": "C", "name": "counter", "pid": 100, "tid": 100, "ts": 1_700_000_000_000_311.0, "args": {"v": 1}},
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 100,
            "tid": 100,
            "ts": 1_700_000_000_000_320.0,
            "args": {
                "Total Reserved": 2048,
                "Total Allocated": 1024,
                "Bytes": 512,
                "Addr": 4096,
                "Device Id": 0,
                "Device Type": 1,
            },
        },
        kb.annotation(
            "nccl:all_reduce",
            1_700_000_000_000_400.0,
            10.0,
            **{"Input Dims": [[1024]], "Input type": ["c10::BFloat16"]},
        ),
        kb.cpu_op(
            "record_param_comms",
            1_700_000_000_000_402.0,
            5.0,
            **{
                "Collective name": "allreduce",
                "dtype": "Float",
                "In msg nelems": 1024,
                "Out msg nelems": 1024,
                "Group size": 2,
                "Process Group Name": "0",
                "Process Group Description": "default_pg",
                "Seq": 3,
            },
        ),
        {
            "ph": "X",
            "cat": "python_function",
            "name": "train.py(10): step",
            "pid": 100,
            "tid": 100,
            "ts": 1_700_000_000_000_500.0,
            "dur": 2.0,
        },
        {"ph": "X", "name": "no cat", "pid": 100, "tid": 100, "ts": 1_700_000_000_000_510.0, "dur": 1.0},
    ]
    no_dur = next(e for e in events if e.get("name") == "aten::zero_")
    del no_dur["dur"]  # a malformed complete event (dropped, counted); a later one is kept
    return events


def _odd_trace(tmp: Path) -> Path:
    return kb.write(tmp / "odd" / "rank-3.json", kb.doc(_odd_events(), rank=3, world_size=4))


def _synth_traces(tmp: Path) -> dict[str, Path]:
    out = tmp / "synth"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "synth.py"), str(out), "--ranks", "2", "--events", "3000"],
        check=True,
        capture_output=True,
    )
    return {f"synth/{p.name}": p for p in sorted(out.glob("*.json"))}


def _column_digest(col: pd.Series) -> str:
    h = hashlib.sha256(str(col.dtype).encode())
    if isinstance(col.dtype, pd.CategoricalDtype):
        h.update(np.asarray(col.cat.codes, dtype=np.int64).tobytes())
        h.update("\x00".join(map(str, col.cat.categories)).encode("utf-8"))
    else:
        h.update(np.ascontiguousarray(col.to_numpy()).tobytes())
    h.update(str(len(col)).encode())
    return h.hexdigest()[:16]


def _meta_digest(meta: Any) -> str:
    d = dataclasses.asdict(meta)
    d["path"] = Path(d["path"]).name
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=repr).encode()).hexdigest()[:16]


def digests(path: Path) -> dict[str, Any]:
    """Digests of every rank's metadata and of every column of its tables."""
    ranks = kineto.parse_kineto(path, read_bytes(path), bad_events="drop")
    out: dict[str, Any] = {}
    for r in sorted(ranks, key=lambda r: r.meta.rank):
        entry: dict[str, Any] = {"meta": _meta_digest(r.meta)}
        for t in TABLES:
            frame = getattr(r, t)
            entry[t] = {"columns": list(frame.columns), **{c: _column_digest(frame[c]) for c in frame.columns}}
        out[str(r.meta.rank)] = entry
    return out


def _all_traces(tmp: Path) -> dict[str, Path]:
    return {**_real_traces(), **_synth_traces(tmp), "odd/rank-3.json": _odd_trace(tmp)}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _all_traces(tmp_path_factory.mktemp("golden"))


def test_the_golden_set_covers_every_kind_of_trace(traces: dict[str, Path]) -> None:
    expected = _expected()
    assert set(traces) == set(expected), "a trace was added or removed: regenerate the digests (see the docstring)"
    parents = {k.split("/")[0] for k in traces}
    assert {"hta_mi250_rocm", "hta_triton", "hta_cpu_only", "h100_bert_small", "synth", "odd"} <= parents


def _expected() -> dict[str, Any]:
    return json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}


@pytest.mark.parametrize("key", sorted(_expected()))
def test_tables_match_the_golden_digests(key: str, traces: dict[str, Path]) -> None:
    expected = _expected()[key]
    got = digests(traces[key])
    assert sorted(got) == sorted(expected), f"{key}: ranks differ"
    for rank, tables in expected.items():
        assert got[rank]["meta"] == tables["meta"], f"{key} rank {rank}: metadata differs"
        for t in TABLES:
            assert got[rank][t]["columns"] == tables[t]["columns"], f"{key} rank {rank}: {t} columns differ"
            wrong = [c for c in tables[t]["columns"] if got[rank][t][c] != tables[t][c]]
            assert wrong == [], f"{key} rank {rank}: {t} columns {wrong} differ from the golden tables"


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        all_digests = {k: digests(p) for k, p in sorted(_all_traces(Path(tmp)).items())}
    DIGESTS.write_text(json.dumps(all_digests, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS} ({len(all_digests)} traces)")
