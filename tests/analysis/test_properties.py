"""Properties of the analyses on random tiny traces built in code (hypothesis).

Parts add up to their whole, overlap never exceeds communication, no time is negative, and
results do not depend on the order of events in a file or of rank files in a folder.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.model import intervals as iv
from tests import kineto_builder as kb
from tests.analysis.tiny import ALLREDUCE, GEMM, RELU

NAMES = {"gemm": GEMM, "relu": RELU, "nccl": ALLREDUCE}

activity = st.fixed_dictionaries(
    {
        "what": st.sampled_from(["gemm", "relu", "nccl", "memcpy", "sync"]),
        "stream": st.sampled_from([7, 8, 20]),
        "ts": st.integers(0, 400),
        "dur": st.integers(0, 80),
        "launch": st.one_of(st.none(), st.integers(0, 450)),
    }
)
rank_activities = st.lists(activity, min_size=1, max_size=14)

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(acts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kineto events for these activities (us), each with its launch call if it has one."""
    events: list[dict[str, Any]] = [kb.step(1, 0, 1000)]
    for i, a in enumerate(acts, start=1):
        if a["launch"] is not None:
            name = "cudaMemcpyAsync" if a["what"] == "memcpy" else "cudaLaunchKernel"
            events.append(kb.runtime(name, a["launch"], 1, corr=i))
        if a["what"] == "memcpy":
            events.append(kb.memcpy(a["ts"], a["dur"], corr=i, stream=a["stream"]))
        elif a["what"] == "sync":
            events.append(kb.sync("Stream Sync", a["ts"], a["dur"], corr=i, stream=a["stream"]))
        else:
            events.append(kb.kernel(NAMES[a["what"]], a["ts"], a["dur"], corr=i, stream=a["stream"]))
    return events


def load_folder(files: dict[str, dict[str, Any]]) -> tv.Trace:
    with tempfile.TemporaryDirectory() as tmp:
        for name, doc in files.items():
            kb.write(Path(tmp) / name, doc)
        return tv.load(tmp, cache=False, progress=False)


def analyses(trace: tv.Trace) -> dict[str, pd.DataFrame]:
    """Every analysis; CPU-only ranks (only syncs drawn) warn, which is not under test here."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return {
            "temporal": tv.temporal_breakdown(trace),
            "overlap": tv.comm_comp_overlap(trace),
            "idle": tv.idle_time_breakdown(trace),
            "kernel": tv.kernel_breakdown(trace, top_k=1),
            "type": tv.kernel_breakdown(trace, by="type"),
            "distribution": tv.kernel_duration_distribution(trace, top_k=2),
            "summary": tv.summary(trace),
        }


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """Categoricals as text: category order may follow file order, values may not."""
    return df.assign(**{c: df[c].astype(str) for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)})


def work_union(trace: tv.Trace, rank: int, classes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    ev = trace.events(rank)
    sel = ev[ev["gpu_class"].isin(classes)]
    return iv.union(sel["ts_ns"].to_numpy(), (sel["ts_ns"] + sel["dur_ns"]).to_numpy())


@SETTINGS
@given(acts=rank_activities)
def test_parts_add_up_and_are_not_negative(acts: list[dict[str, Any]]) -> None:
    trace = load_folder({"r.json": kb.doc(build(acts))})
    out = analyses(trace)
    tb = out["temporal"]
    if tb.empty:  # only sync records: no GPU work
        assert all(a["what"] == "sync" for a in acts)
        return
    row = tb.iloc[0]
    assert row["idle_ns"] + row["compute_ns"] + row["non_compute_ns"] == row["span_ns"]
    assert min(row["idle_ns"], row["compute_ns"], row["non_compute_ns"]) >= 0
    pcts = row[["idle_pct", "compute_pct", "non_compute_pct"]]
    assert abs(pcts.sum() - 100) < 1e-9 if row["span_ns"] > 0 else pcts.isna().all()
    s, e = work_union(trace, 0, ["compute", "communication", "memory"])
    busy = iv.length(s, e)
    assert row["span_ns"] - row["idle_ns"] == busy
    # By type: exclusive segments add up to the busy time.
    assert out["type"]["time_ns"].sum() == busy and (out["type"]["time_ns"] > 0).all()
    # Overlap never exceeds communication nor compute.
    ov = out["overlap"].iloc[0]
    assert 0 <= ov["overlap_ns"] <= min(ov["comm_ns"], ov["compute_ns"])
    assert ov["exposed_comm_ns"] == ov["comm_ns"] - ov["overlap_ns"] >= 0
    assert ov["compute_ns"] == row["compute_ns"]
    # Per stream, idle over the categories = stream span - stream busy; nothing negative.
    idle = out["idle"]
    ev = trace.events(0)
    work = ev[ev["gpu_class"].isin(["compute", "communication", "memory"])]
    for stream, part in work.groupby("stream"):
        ss, se = iv.union(part["ts_ns"].to_numpy(), (part["ts_ns"] + part["dur_ns"]).to_numpy())
        assert idle.loc[idle["stream"] == stream, "idle_ns"].sum() == (se[-1] - ss[0]) - iv.length(ss, se)
    assert (idle["idle_ns"] >= 0).all() and (idle["count"] >= 0).all()
    assert (idle["max_ns"].dropna() > 0).all()
    # Per kernel: counts and sums cover every work activity.
    kbk = out["kernel"]
    assert kbk["count"].sum() == len(work) and kbk["sum_ns"].sum() == work["dur_ns"].sum()
    assert (kbk["min_ns"] <= kbk["mean_ns"] + 1e-6).all() and (kbk["mean_ns"] <= kbk["max_ns"] + 1e-6).all()
    assert (kbk["std_ns"] >= 0).all()
    # The summary agrees with the analyses it condenses.
    sm = out["summary"].iloc[0]
    assert sm["gpu_span_ns"] == row["span_ns"] and sm["comm_ns"] == ov["comm_ns"]
    assert sm["exposed_comm_ns"] == ov["exposed_comm_ns"]


@SETTINGS
@given(acts=rank_activities, seed=st.integers(0, 2**32 - 1))
# Found by hypothesis: zero-duration kernels of one stream starting together, one launched
# after the stream went idle and one with no launch call: which of them ends the gap (host
# wait or kernel wait) must not depend on the order of the events in the file.
@example(
    acts=[
        {"what": "gemm", "stream": 7, "ts": 4, "dur": 0, "launch": None},
        {"what": "gemm", "stream": 7, "ts": 0, "dur": 0, "launch": 0},
        {"what": "gemm", "stream": 7, "ts": 0, "dur": 0, "launch": None},
        {"what": "gemm", "stream": 7, "ts": 0, "dur": 0, "launch": None},
        {"what": "gemm", "stream": 7, "ts": 4, "dur": 0, "launch": 5},
        {"what": "gemm", "stream": 7, "ts": 0, "dur": 0, "launch": None},
    ],
    seed=0,
)
@example(
    acts=[
        {"what": "gemm", "stream": 7, "ts": 0, "dur": 10, "launch": None},
        {"what": "gemm", "stream": 7, "ts": 11, "dur": 0, "launch": 12},
        {"what": "relu", "stream": 7, "ts": 11, "dur": 0, "launch": 1},
    ],
    seed=1,
)
def test_invariant_to_event_order(acts: list[dict[str, Any]], seed: int) -> None:
    events = build(acts)
    shuffled = events[:]
    random.Random(seed).shuffle(shuffled)
    a = analyses(load_folder({"r.json": kb.doc(events)}))
    b = analyses(load_folder({"r.json": kb.doc(shuffled)}))
    for name in a:
        pd.testing.assert_frame_equal(comparable(a[name]), comparable(b[name]), obj=name)


@SETTINGS
@given(r0=rank_activities, r1=rank_activities)
def test_invariant_to_rank_file_order(r0: list[dict[str, Any]], r1: list[dict[str, Any]]) -> None:
    d0 = kb.doc(build(r0), rank=0, world_size=2)
    d1 = kb.doc(build(r1), rank=1, world_size=2)
    a = analyses(load_folder({"a.json": d0, "b.json": d1}))
    b = analyses(load_folder({"a.json": d1, "b.json": d0}))
    for name in a:
        pd.testing.assert_frame_equal(comparable(a[name]), comparable(b[name]), obj=name)
