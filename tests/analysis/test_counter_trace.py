"""write_counters_trace(): the original events plus counter tracks, readable everywhere."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def _counters(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "C"]


def _check_chrome_counter(e: dict[str, Any]) -> None:
    """The Trace Event Format's counter event: name, ph, ts, pid and numeric args."""
    assert isinstance(e["name"], str) and e["ph"] == "C"
    assert isinstance(e["ts"], (int, float)) and isinstance(e["pid"], int)
    assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small", "hta_alexnet"])
def test_reloads_with_same_events_and_counters_match(folder: str, tmp_path: Path) -> None:
    src = KINETO_FOLDERS[folder]
    trace = tv.load(src, cache=False)
    paths = tv.write_counters_trace(trace, tmp_path / "out")
    assert [p.name for p in paths] == [
        Path(trace.meta(r).path).name + ("" if trace.meta(r).path.endswith(".gz") else ".gz") for r in trace.ranks
    ]
    assert not list((tmp_path / "out").glob(".*.tmp"))  # no temporary file left behind
    again = tv.load(tmp_path / "out", cache=False)
    assert again.ranks == trace.ranks
    pd.testing.assert_frame_equal(again.events(), trace.events())
    pd.testing.assert_frame_equal(again.gpu_args(), trace.gpu_args())
    q = tv.queue_length(trace)
    b = tv.memory_bandwidth(trace)
    for r, p in zip(trace.ranks, paths, strict=True):
        doc = _doc(p)
        original = json.loads(gzip.decompress(Path(trace.meta(r).path).read_bytes()))
        n_orig = len(original["traceEvents"])
        assert doc["traceEvents"][:n_orig] == original["traceEvents"]  # untouched, in order
        assert {k: v for k, v in doc.items() if k != "traceEvents"} == {
            k: v for k, v in original.items() if k != "traceEvents"
        }
        counters = _counters(doc)
        assert len(doc["traceEvents"]) == n_orig + len(counters)
        assert again.meta(r).skipped.get("other phases", 0) == len(counters)
        for e in counters:
            _check_chrome_counter(e)
        base = trace.meta(r).base_time_ns
        ql = [e for e in counters if e["name"] == "Queue Length"]
        qr = q[q["rank"] == r]
        assert len(ql) == len(qr)
        got = pd.DataFrame(
            {
                "stream": [e["id"] for e in ql],
                "ts_ns": [base + round(e["ts"] * 1000) for e in ql],
                "queue_length": [e["args"]["Queue Length"] for e in ql],
            }
        )
        pd.testing.assert_frame_equal(got, qr[["stream", "ts_ns", "queue_length"]].reset_index(drop=True))
        bw = [e for e in counters if e["name"] != "Queue Length"]
        br = b[b["rank"] == r]
        assert len(bw) == len(br)
        np.testing.assert_array_equal([base + round(e["ts"] * 1000) for e in bw], br["ts_ns"].to_numpy())
        np.testing.assert_allclose([e["args"]["Memory BW (GB/s)"] for e in bw], br["bandwidth_gbps"], rtol=1e-15)
        names = {"HtoD": "Memcpy HtoD", "DtoH": "Memcpy DtoH", "DtoD": "Memcpy DtoD", "memset": "Memset"}
        assert [e["name"] for e in bw] == [names[k] for k in br["kind"].astype(str)]


def test_ns_trace_times_are_exact(tmp_path: Path) -> None:
    """Counter times of ns-resolution traces keep three decimals, relative to the base time."""
    base = 1_700_000_000_000_000_000
    events = [*kb.launch("k", 10.125, 20.5, 3.25, corr=1), *kb.launch("k", 11.001, 30.75, 1, corr=2)]
    src = kb.write(tmp_path / "src" / "r.json", kb.doc(events, base_time_ns=base))
    trace = tv.load(src, cache=False)
    (out,) = tv.write_counters_trace(trace, tmp_path / "out")
    assert out.name == "r.json.gz"
    text = gzip.decompress(out.read_bytes()).decode()
    assert '"ts":10.125,' in text and '"ts":11.001,' in text and '"ts":30.750,' in text
    q = tv.queue_length(trace)
    ts = [base + round(e["ts"] * 1000) for e in _counters(json.loads(text))]
    assert ts == q["ts_ns"].tolist()


def test_options_and_errors(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(tv.sample_path(), src)
    trace = tv.load(src, cache=False)
    (p,) = tv.write_counters_trace(trace, tmp_path / "q", ranks=[1], bandwidth=False)
    assert {e["name"] for e in _counters(_doc(p))} == {"Queue Length"}
    (p,) = tv.write_counters_trace(trace, tmp_path / "b", ranks=1, queue=False)
    assert "Queue Length" not in {e["name"] for e in _counters(_doc(p))}
    with pytest.raises(ValueError, match="overwrite its source"):
        tv.write_counters_trace(trace, src, ranks=[0])
    with pytest.raises(tv.TraceSelectionError):
        tv.write_counters_trace(trace, tmp_path / "x", ranks=[42])
    Path(trace.meta(2).path).unlink()
    with pytest.raises(tv.TraceFormatError, match="is gone"):
        tv.write_counters_trace(trace, tmp_path / "y", ranks=[2])


def test_bare_array_and_plain_json(tmp_path: Path) -> None:
    events = [*kb.launch("k", 0, 10, 5, corr=1)]
    src = kb.write(tmp_path / "src" / "rank-0.json", events)  # a bare top-level array
    trace = tv.load(src, cache=False)
    (out,) = tv.write_counters_trace(trace, tmp_path / "out")
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert isinstance(doc, list) and doc[: len(events)] == events
    assert [e["args"]["Queue Length"] for e in doc[len(events) :]] == [1, 0]


def test_cpu_only_writes_without_counters(tmp_path: Path) -> None:
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="without counters"):
        (out,) = tv.write_counters_trace(trace, tmp_path)
    assert not _counters(_doc(out))
    pd.testing.assert_frame_equal(tv.load(out, cache=False).events(), trace.events())


def test_insertion_point(tmp_path: Path) -> None:
    from jupyter_traceview.analysis.counter_trace import _insertion

    p = tmp_path / "t.json"
    for text, empty in (
        (b'{"traceEvents": [ ] , "x": 1}', True),
        (b'{\n  "a": [1, 2],\n  "traceEvents": [\n    {"ph": "X"}\n  ],\n  "traceName": "]"\n}\n', False),
        (b'\n[ {"ph": "X"} ]\n\n', False),
        (b"[]", True),
    ):
        close, is_empty = _insertion(p, text)
        assert text[close : close + 1] == b"]" and is_empty == empty
        events_end = text.index(b"]", text.index(b"[", text.index(b"traceEvents") if b"traceEvents" in text else 0))
        assert close == events_end
    for bad in (b'{"other": []}', b'{"traceEvents": 3}', b'{"traceEvents": [', b"[1, 2"):
        with pytest.raises(tv.TraceFormatError):
            _insertion(p, bad)


def test_pretty_printed_source(tmp_path: Path) -> None:
    """Kineto writes indented JSON with keys after traceEvents; both survive unchanged."""
    doc = kb.doc([*kb.launch("k", 0, 10, 5, corr=1)], rank=0, world_size=1)
    doc["traceName"] = "x]"
    src = tmp_path / "src" / "rank-0.json"
    src.parent.mkdir()
    src.write_text(json.dumps(doc, indent=2))
    (out,) = tv.write_counters_trace(tv.load(src, cache=False), tmp_path / "out")
    text = gzip.decompress(out.read_bytes()).decode()
    got = json.loads(text)
    assert got["traceName"] == "x]" and len(got["traceEvents"]) == len(doc["traceEvents"]) + 2
    original = json.dumps(doc, indent=2)
    close = original.rindex("]", 0, original.index('"traceName"'))
    assert text.startswith(original[:close]) and text.endswith(original[close:])  # the source, bytes untouched
