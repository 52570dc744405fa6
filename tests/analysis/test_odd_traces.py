"""Every public analysis returns a frame on every trace that loads, however odd (see odd_traces.py)."""

from __future__ import annotations

import json
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview import analysis
from tests import kineto_builder as kb
from tests.analysis.odd_traces import HUGE, odd_docs, odd_docs_real, write_odd

#: Analyses that write a file rather than return a frame, classes, and the device table.
NOT_FRAMES = {"FindingRules", "DevicePeaks", "peaks_table", "write_counters_trace"}


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tv.Trace]:
    folders = write_odd(tmp_path_factory.mktemp("odd"))
    return {name: tv.load(folder, cache=False) for name, folder in folders.items()}


def _most_common(trace: tv.Trace, kind: str) -> str | None:
    names = pd.concat([trace.events(r) for r in trace.ranks])
    names = names.loc[names["kind"].astype(str) == kind, "name"].astype(str)
    return None if names.empty else str(names.mode().iloc[0])


def _call(name: str, trace: tv.Trace, tmp_path: Path) -> Any:
    fn = getattr(analysis, name)
    if name == "compare":
        return fn(trace, trace).causes
    if name == "frequent_kernel_sequences":
        op = _most_common(trace, "cpu_op")
        return fn(trace, operator=op) if op is not None else pd.DataFrame()
    if name == "kernel_pace":
        kernel = _most_common(trace, "kernel")
        return fn(trace, name=kernel) if kernel is not None else pd.DataFrame()
    return fn(trace)


@pytest.mark.parametrize("trace_name", sorted({**odd_docs(), **odd_docs_real()}))
def test_every_analysis_returns_a_frame(odd: dict[str, tv.Trace], trace_name: str, tmp_path: Path) -> None:
    trace = odd[trace_name]
    failures = {}
    for name in analysis.__all__:
        if name in NOT_FRAMES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", tv.TraceviewWarning)
                out = _call(name, trace, tmp_path)
        except Exception as exc:  # noqa: BLE001 - collected, so that one test lists every failure
            failures[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        if name == "headline":  # a JSON-ready dict, and its per-rank frame
            json.dumps(out, allow_nan=False)
            out = analysis.headline(trace, per_rank=True)
        if not isinstance(out, pd.DataFrame):
            failures[name] = f"returned {type(out).__name__}"
    assert failures == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        written = analysis.write_counters_trace(trace, tmp_path / "counters")
    assert written


def test_critical_path_when_every_timestamp_is_equal(odd: dict[str, tv.Trace]) -> None:
    trace = odd["dlrm_2_ranks_all_ts_equal"]
    with pytest.warns(tv.TraceviewWarning):
        path = analysis.critical_path(trace)
    assert isinstance(path, pd.DataFrame)


def test_compare_of_a_huge_name_allocates_no_fixed_width_strings(tmp_path: Path) -> None:
    # (trace_diff once made a fixed-width string array of a name; tv.compare, which replaced
    # it, names kernels without a launching operator in its causes.)
    events = [kb.step(1, 0, 10_000)]
    for i in range(60):
        events += kb.launch(HUGE if i == 0 else f"k{i}", 10 * i, 10 * i, 5, corr=i + 1)
    trace = tv.load(kb.write(tmp_path / "huge.json", kb.doc(events)), cache=False)
    other = tv.load(kb.write(tmp_path / "other.json", kb.doc(events[:-20])), cache=False)
    analysis.compare(other, other)  # its lazy imports, which allocate, before the measure
    tracemalloc.start()
    try:
        cmp = analysis.compare(trace, other, top_operators=100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A fixed-width array of the 60 names would take 60 x 4 MiB (UTF-32 of a 1 MiB name).
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert any(HUGE in c for c in cmp.causes["cause"])
    assert float(cmp.causes["delta_ns"].sum()) == pytest.approx(cmp.delta_ns)
