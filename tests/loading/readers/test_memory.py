"""The memory table: ``[memory]`` and ``[OutOfMemory]`` records of Kineto traces, kept as recorded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.model.schema import MEMORY_COLUMNS
from tests import kineto_builder as kb

MIB = 2**20


def small_events() -> list[dict]:
    return [
        kb.step(1, 1000, 100),
        kb.cpu_op("aten::empty", 1010, 10),
        kb.mem(1012, 512, 0x1000, total_allocated=512, total_reserved=2 * MIB),
        kb.cpu_op("aten::relu", 1030, 20),
        kb.mem(1035, 256, 0x2000, total_allocated=768, total_reserved=2 * MIB),
        kb.mem(1060, -512, 0x1000, total_allocated=256, total_reserved=2 * MIB),
        kb.oom(1070, 2**40, total_allocated=256, total_reserved=2 * MIB),
        kb.mem(1080, 64, 0x9000, total_allocated=64, total_reserved=0, device=-1, device_type=0),
    ]


def load(tmp_path: Path, events: list[dict], **kw: object) -> tv.Trace:
    return tv.load(kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0)), cache=False, **kw)


def test_records_become_the_memory_table(tmp_path: Path) -> None:
    trace = load(tmp_path, small_events())
    mem = trace.memory(0)
    assert list(mem.columns) == [c.name for c in MEMORY_COLUMNS]
    assert mem["action"].tolist() == ["alloc", "alloc", "free", "oom", "alloc"]
    assert mem["device_type"].tolist() == ["CUDA", "CUDA", "CUDA", "CUDA", "CPU"]
    assert mem["device"].tolist() == [0, 0, 0, 0, -1]
    assert mem["addr"].tolist() == [0x1000, 0x2000, 0x1000, -1, 0x9000]
    assert mem["bytes"].tolist() == [512, 256, -512, 2**40, 64]
    assert mem["total_allocated_bytes"].tolist() == [512, 768, 256, 256, 64]
    assert mem["total_reserved_bytes"].tolist() == [2 * MIB] * 4 + [0]
    # The records stay events: their time, step and enclosing operator come from there.
    ev = trace.events(0).set_index("eid").loc[mem["eid"]]
    assert ev["ts_ns"].tolist() == [1_012_000, 1_035_000, 1_060_000, 1_070_000, 1_080_000]
    assert ev["kind"].unique().tolist() == ["cpu_instant_event"]
    assert (ev["step"] == 1).all()
    parents = trace.events(0).set_index("eid").loc[ev["parent_eid"], "name"].tolist()
    assert parents == ["aten::empty", "aten::relu", "ProfilerStep#1", "ProfilerStep#1", "ProfilerStep#1"]


def test_trace_without_memory_records_has_an_empty_table(tmp_path: Path) -> None:
    trace = load(tmp_path, [kb.step(1, 0, 10), kb.cpu_op("aten::mm", 1, 5)])
    mem = trace.memory(0)
    assert mem.empty
    assert list(mem.columns) == [c.name for c in MEMORY_COLUMNS]
    assert str(mem["eid"].dtype) == "int64"
    assert trace.memory().empty


def test_select_keeps_the_records_of_the_kept_events(tmp_path: Path) -> None:
    trace = load(tmp_path, small_events())
    part = trace.select(time_range=(1_030_000, 1_065_000))
    assert part.memory(0)["bytes"].tolist() == [256, -512]
    all_ranks = trace.memory()
    assert all_ranks["rank"].tolist() == [0] * 5


def test_chunked_decoding_gives_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_traceview.loading.readers.kineto import decode

    events = []
    for i in range(20):
        t = i * 100
        events += [
            kb.step(i, t, 90),
            kb.cpu_op("aten::empty", t + 5, 10),
            kb.mem(t + 6, 100 + i, 0x1000 + i, total_allocated=100 + i, total_reserved=MIB),
            kb.mem(t + 50, -(100 + i), 0x1000 + i, total_allocated=0, total_reserved=MIB),
        ]
    path = kb.write(tmp_path / "rank-0.json", kb.doc(events, rank=0))
    whole = tv.load(path, cache=False)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1)
    monkeypatch.setattr(decode, "CHUNK_EVENTS", 7)
    chunked = tv.load(path, cache=False)
    pd.testing.assert_frame_equal(whole.memory(0), chunked.memory(0))
    assert len(whole.memory(0)) == 40


def test_cache_round_trip_keeps_the_table(tmp_path: Path) -> None:
    path = kb.write(tmp_path / "rank-0.json", kb.doc(small_events(), rank=0))
    first = tv.load(path, cache=tmp_path / "cache")
    second = tv.load(path, cache=tmp_path / "cache")
    pd.testing.assert_frame_equal(first.memory(0), second.memory(0))
    assert len(second.memory(0)) == 5


def test_clock_alignment_and_reclassifying_keep_the_table(tmp_path: Path) -> None:
    trace = load(tmp_path, small_events())
    shifted = tv.align_clocks(trace, offsets={0: 1000})
    pd.testing.assert_frame_equal(shifted.memory(0), trace.memory(0))
    assert shifted.events(0)["ts_ns"].iloc[0] == trace.events(0)["ts_ns"].iloc[0] - 1000
    reclassified = trace.with_classifier(tv.Classifier())
    pd.testing.assert_frame_equal(reclassified.memory(0), trace.memory(0))


def _raw_records(path: Path) -> list[dict]:
    with gzip.open(path) as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e.get("name") in ("[memory]", "[OutOfMemory]")]


REAL = {
    "h100_bert_small": {"CUDA": 218, "CPU": 18},
    "cpu_memory/mlp_train": {"CPU": 436},
    "cpu_memory/leak": {"CPU": 440},
}


@pytest.mark.parametrize("folder", sorted(REAL))
def test_real_trace_records_are_read_as_written(data_dir: Path, folder: str) -> None:
    (path,) = sorted((data_dir / folder).glob("*.json.gz"))
    raw = _raw_records(path)
    trace = tv.load(path, cache=False)
    (rank,) = trace.ranks
    mem = trace.memory(rank)
    assert len(mem) == len(raw) == sum(REAL[folder].values())
    raw = sorted(raw, key=lambda e: (e["ts"], e["args"]["Ev Idx"]))
    assert mem["bytes"].tolist() == [e["args"]["Bytes"] for e in raw]
    assert mem["addr"].tolist() == [e["args"]["Addr"] for e in raw]
    assert mem["total_allocated_bytes"].tolist() == [e["args"]["Total Allocated"] for e in raw]
    assert mem["total_reserved_bytes"].tolist() == [e["args"]["Total Reserved"] for e in raw]
    assert mem["device"].tolist() == [e["args"]["Device Id"] for e in raw]
    assert mem["device_type"].value_counts().to_dict() == REAL[folder]
    assert np.array_equal(mem["action"] == "free", mem["bytes"] < 0)
    # The records are in allocator order: each total is the previous one plus the call's bytes.
    for _, dev in mem.groupby(["device_type", "device"], observed=True):
        total = dev["total_allocated_bytes"].to_numpy()
        assert np.array_equal(total[1:], total[:-1] + dev["bytes"].to_numpy()[1:])


def test_dask_engine_gives_the_same_table(tmp_path: Path, dask_client: object) -> None:
    pytest.importorskip("distributed")
    path = kb.write(tmp_path / "rank-0.json", kb.doc(small_events(), rank=0))
    serial = tv.load(path, cache=False)
    remote = tv.load(path, engine="dask", client=dask_client, cache=False)
    pd.testing.assert_frame_equal(remote.memory(), serial.memory())
