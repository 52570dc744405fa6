"""findings(): each rule on a trace built so that its answer is known, its preconditions, and properties."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.findings import FINDING_COLUMNS, all_rules
from jupyter_traceview.analysis.findings.rules.straggler import binom_tail
from tests import job_builder as jb
from tests import kineto_builder as kb
from tests.conftest import KINETO_FOLDERS

GEMM = "volta_sgemm_128x64_nn"
TINY = "vectorized_elementwise_kernel"


def load_rank(tmp: Path, events: list[dict[str, Any]], **doc: Any) -> tv.Trace:
    kb.write(tmp / "trace.json", kb.doc(events, **doc))
    return tv.load(tmp / "trace.json", cache=False, progress=False)


def quiet_findings(trace: tv.Trace, **kw: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(trace, **kw)


def by_id(df: pd.DataFrame, fid: str) -> pd.Series:
    rows = df.loc[df["id"] == fid]
    assert len(rows) == 1, f"expected one {fid} finding, got {list(df['id'])}"
    return rows.iloc[0]


# --------------------------------------------------------------------------- traces
def launch_bound_events(n: int = 200) -> list[dict[str, Any]]:
    """The host launches a 3 us kernel every 10 us, each starting 1 us after its 5 us launch
    call: the GPU idles 7 us between kernels, every time waiting for the next launch."""
    events: list[dict[str, Any]] = [kb.step(1, 0, 10 * n + 10)]
    for i in range(n):
        events += kb.launch(TINY, 10 * i, 10 * i + 6, 3, corr=i + 1, cpu_dur=5)
    return events


def compute_bound_events(n: int = 200) -> list[dict[str, Any]]:
    """The host launches every 5 us, far ahead of 100 us kernels that run back to back."""
    events: list[dict[str, Any]] = [kb.step(1, 0, 100 * n + 10)]
    for i in range(n):
        events += kb.launch(GEMM, 5 * i, 10 + 100 * i, 100, corr=i + 1, cpu_dur=4)
    return events


def pageable_events() -> list[dict[str, Any]]:
    """A kernel, two pageable host-to-device copies whose launch calls block the host while
    the GPU idles, and a kernel after them."""
    events: list[dict[str, Any]] = [kb.step(1, 0, 1000)]
    events += kb.launch(GEMM, 0, 10, 100, corr=1)  # GPU [10, 110)
    events.append(kb.runtime("cudaMemcpyAsync", 110, 200, corr=2))  # host blocked [110, 310)
    events.append(kb.memcpy(290, 10, corr=2, nbytes=4096, pageable=True))  # GPU [290, 300)
    events.append(kb.runtime("cudaMemcpyAsync", 320, 100, corr=3))  # host blocked [320, 420)
    events.append(kb.memcpy(410, 5, corr=3, nbytes=8192, pageable=True))  # GPU [410, 415)
    events += kb.launch(GEMM, 425, 430, 100, corr=4)  # GPU [430, 530)
    return events


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    ranks, steps = jb.straggler_job(ranks=8, slow_rank=5, slowdown=1.2)
    return jb.load_job(tmp_path_factory.mktemp("straggler"), ranks, steps)


def hidden_job() -> dict[int, list[jb.Gpu]]:
    """Two balanced ranks; every all-reduce runs inside a compute kernel on another stream."""
    return {
        r: [jb.compute(10, 500), jb.allreduce(100, 200), jb.compute(600, 300), jb.allreduce(650, 100)] for r in range(2)
    }


def exposed_job() -> dict[int, list[jb.Gpu]]:
    """Two balanced ranks; per step 400 us of compute, then a 200 us all-reduce alone."""
    return {
        r: [g for s in range(3) for g in (jb.compute(1000 * s + 10, 400), jb.allreduce(1000 * s + 410, 200))]
        for r in range(2)
    }


# --------------------------------------------------------------------------- the frame
def ranked(f: pd.DataFrame) -> bool:
    """Sorted by saving_ns, then time_at_stake_ns (both largest first)."""
    key = list(zip((-f["saving_ns"]).tolist(), (-f["time_at_stake_ns"]).tolist(), strict=True))
    return key == sorted(key)


def test_columns_and_dlrm(dlrm: tv.Trace) -> None:
    f = tv.findings(dlrm)
    assert list(f.columns) == list(FINDING_COLUMNS)
    assert ranked(f)
    assert set(f["severity"]) <= {"high", "medium", "low", "info"}
    elapsed = int(tv.efficiency(dlrm)["elapsed_ns"].iloc[0])
    for _, row in f.iterrows():
        assert row["evidence"]["elapsed_ns"] == elapsed
        assert 0 <= row["time_at_stake_ns"] <= elapsed
        assert row["time_at_stake_pct"] == pytest.approx(100 * row["time_at_stake_ns"] / elapsed)
        json.dumps(row["evidence"])  # JSON-able, plain Python values
        assert row["title"] and row["detail"] and row["rule"] and row["analysis"].startswith("tv.")
        assert "{" not in row["rule"], "a threshold was not filled in"
    # The DLRM sample: ranks wait for rank 7 in collectives; launch-bound; rank 7 the straggler.
    # The host syncs save most per step (the host is the bottleneck); the collective wait,
    # most time at stake, saves at most what rank 7's lateness held the others up (1.31 ms
    # in all; its step began late, on the host), and less than the syncs.
    assert f["id"].iloc[0] == "blocking_sync"
    assert by_id(f, "blocking_sync")["saving_ns"] > by_id(f, "collective_wait")["saving_ns"] > 0
    assert by_id(f, "collective_wait")["saving_ns"] <= 1_309_000
    assert by_id(f, "collective_wait")["change"] == tv.changes.BalanceStraggler().describe()
    assert by_id(f, "pageable_copies")["change"] == ""
    s = by_id(f, "straggler")
    assert s["ranks"] == [7]
    assert s["evidence"]["last_count"] == 5 and s["evidence"]["collectives"] == 8
    assert s["time_at_stake_ns"] == 1_309_000  # stragglers(): rank 7's summed lateness
    assert by_id(f, "launch_bound")["title"].startswith("Launch-bound")


def test_rules_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "semantics.md").read_text()
    for fid in (r.id for r in all_rules()):
        assert f"`{fid}`" in doc, f"rule {fid} is not documented in docs/semantics.md"
    for field in (f.name for f in tv.FindingRules.fields()):
        assert f"`{field}`" in doc, f"threshold {field} is not documented in docs/semantics.md"


# --------------------------------------------------------------------------- 1. launch-bound
def test_launch_bound_trace_gives_host_wait_finding(tmp_path: Path) -> None:
    f = tv.findings(load_rank(tmp_path, launch_bound_events()))
    lb = by_id(f, "launch_bound")
    # 199 gaps of 7 us, each ended by a kernel launched after the GPU went idle.
    assert lb["time_at_stake_ns"] == 199 * 7_000
    ev = lb["evidence"]["per_rank"][0]
    assert ev["host_wait_gaps"] == 199 and ev["gpu_span_ns"] == 1_993_000
    assert ev["launch_bound_pct"] == 100.0  # every 3 us kernel is shorter than its 5 us launch call
    assert lb["title"].startswith("Launch-bound") and "CUDA graphs" in lb["detail"]
    assert lb["severity"] == "high"
    # And many tiny kernels, with the gaps before them at stake.
    tk = by_id(f, "tiny_kernels")
    assert tk["evidence"]["per_rank"][0]["tiny_launches"] == 200
    assert tk["time_at_stake_ns"] == 199 * 7_000


def test_compute_bound_trace_has_nothing_to_report(tmp_path: Path) -> None:
    f = tv.findings(load_rank(tmp_path, compute_bound_events()))
    assert f.empty and list(f.columns) == list(FINDING_COLUMNS)


def test_device_host_wait_equals_idle_breakdown_on_one_stream() -> None:
    """On a rank whose work runs on one stream, the device-level host wait is the stream's."""
    trace = tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False, progress=False)
    idle = tv.idle_time_breakdown(trace)
    assert idle["stream"].nunique() == 1
    host = int(idle.loc[idle["idle_category"] == "host_wait", "idle_ns"].sum())
    lb = by_id(tv.findings(trace), "launch_bound")
    assert lb["time_at_stake_ns"] == host == 3_598_388


def test_threshold_keywords(tmp_path: Path) -> None:
    trace = load_rank(tmp_path, launch_bound_events())
    assert "launch_bound" not in set(tv.findings(trace, rules=tv.FindingRules(host_wait_min_pct=99.9))["id"])
    rules = tv.FindingRules(tiny_kernel_ns=2_000)  # 3 us kernels are no longer tiny
    assert "tiny_kernels" not in set(tv.findings(trace, rules=rules)["id"])
    assert "tiny_kernels" in set(tv.findings(trace, rules=rules.replace(tiny_kernel_ns=10_000))["id"])
    with pytest.raises(tv.OptionError, match="host_wait_min_pct"):
        tv.FindingRules(host_wait_min_pc=5)
    with pytest.raises(tv.OptionError, match="high_pct"):
        tv.FindingRules(high_pct=-1)
    with pytest.raises(tv.OptionError, match="rules must be a FindingRules"):
        tv.findings(trace, rules={"high_pct": 5})  # type: ignore[arg-type]


def test_min_time_at_stake_drops_small_findings(tmp_path: Path) -> None:
    trace = load_rank(tmp_path, launch_bound_events())
    assert tv.findings(trace, rules=tv.FindingRules(min_time_at_stake_pct=80)).empty  # 1.39 ms of 1.99 ms is 69.9 %


# --------------------------------------------------------------------------- 3, 4. imbalance, stragglers
def test_slow_rank_is_named_in_load_imbalance_and_straggler(straggler: tv.Trace) -> None:
    f = quiet_findings(straggler)
    li = by_id(f, "load_imbalance")
    assert li["ranks"] == [5]
    ev = li["evidence"]
    # 8 ranks, one computing 1.2x: LB = (7 + 1.2) / (8 * 1.2).
    assert ev["load_balance_pct"] == pytest.approx(100 * 8.2 / 9.6, abs=1e-3)
    assert ev["useful_max_rank"] == 5 and ev["steps_led_by_heavy_rank"] == 3
    # U: 3 steps x 4 kernels x 100 us, x1.2 on rank 5; max - mean = 1440 - 1230 us.
    assert li["time_at_stake_ns"] == 210_000
    assert "20% more than the median rank" in li["title"]
    s = by_id(f, "straggler")
    assert s["ranks"] == [5]
    assert s["evidence"]["last_count"] == 3 and s["evidence"]["collectives"] == 3
    assert s["evidence"]["p_value"] == pytest.approx(1 / 8**3, rel=1e-5)
    assert s["time_at_stake_ns"] == 3 * 80_000  # rank 5 arrives 80 us after the others, 3 times
    # The others wait 80 us per step in the all-reduce.
    cw = by_id(f, "collective_wait")
    assert 5 not in cw["ranks"] and cw["time_at_stake_ns"] == 3 * 80_000


def test_one_rank_has_no_cross_rank_findings(straggler: tv.Trace) -> None:
    f = quiet_findings(straggler.select(ranks=5))
    assert not {"load_imbalance", "straggler", "collective_wait"} & set(f["id"])


def test_balanced_job_has_no_imbalance(tmp_path: Path) -> None:
    ranks, steps = jb.straggler_job(ranks=4, slowdown=1.0)
    f = quiet_findings(jb.load_job(tmp_path, ranks, steps))
    assert not {"load_imbalance", "straggler", "collective_wait"} & set(f["id"])


def test_binomial_tail() -> None:
    assert binom_tail(3, 3, 1 / 8) == pytest.approx(1 / 512)
    assert binom_tail(8, 0, 0.5) == 1.0
    assert binom_tail(10, 11, 0.5) == 0.0
    assert binom_tail(4, 2, 0.5) == pytest.approx(11 / 16)
    assert 0.0 <= binom_tail(5000, 4000, 0.125) < 1e-300  # no overflow


# --------------------------------------------------------------------------- 2, 7. communication
def test_hidden_communication_gives_no_communication_finding(tmp_path: Path) -> None:
    f = quiet_findings(jb.load_job(tmp_path, hidden_job(), [(1, 0, 1000)]))
    assert not {"exposed_communication", "low_overlap_collective", "collective_wait"} & set(f["id"])


def test_exposed_communication(tmp_path: Path) -> None:
    f = quiet_findings(jb.load_job(tmp_path, exposed_job(), [(s, 1000 * s, 1000) for s in range(3)]))
    ec = by_id(f, "exposed_communication")
    assert ec["ranks"] == [0, 1]
    assert ec["time_at_stake_ns"] == 3 * 200_000  # nobody waits: all exposed time is transfer
    top = ec["evidence"]["top_collectives"][0]
    assert top["collective"] == "all_reduce" and top["count"] == 6
    assert "all_reduce" in ec["detail"]
    lo = by_id(f, "low_overlap_collective")
    assert lo["evidence"]["collective"] == "all_reduce" and lo["evidence"]["exposed_pct"] == 100.0
    assert lo["time_at_stake_ns"] == 3 * 200_000
    # No backward, no optimizer: an inference job (tv.workload), no gradients to bucket, so the
    # advice names neither DDP nor FSDP.
    assert set(
        tv.workload(jb.load_job(tmp_path, exposed_job(), [(s, 1000 * s, 1000) for s in range(3)]))["workload"]
    ) == {"inference"}
    for row in (ec, lo):
        assert "DDP" not in row["detail"] and "FSDP" not in row["detail"]
        assert "no gradients to bucket" in row["detail"]


def test_no_communication_no_communication_finding(tmp_path: Path) -> None:
    f = tv.findings(load_rank(tmp_path, launch_bound_events()))
    assert not {"exposed_communication", "low_overlap_collective", "collective_wait", "straggler"} & set(f["id"])


# --------------------------------------------------------------------------- 6. copies and syncs
def test_pageable_copies_with_their_bytes(tmp_path: Path) -> None:
    f = tv.findings(load_rank(tmp_path, pageable_events()))
    pc = by_id(f, "pageable_copies")
    ev = pc["evidence"]
    assert ev["copies"] == 2 and ev["bytes"] == 4096 + 8192 and ev["bytes_by_kind"] == {"HtoD": 12288}
    # Device idle gaps [110, 290), [300, 410), [415, 430): the calls cover [110, 310) and
    # [320, 420): 180 + (410 - 300) + (430 - 415) us.
    assert pc["time_at_stake_ns"] == (180 + 110 + 15) * 1000
    assert "12,288 bytes" in pc["title"] and "pin_memory" in pc["detail"]
    assert "blocking_sync" not in set(f["id"])  # a pageable copy's call is not counted twice


def test_blocking_sync(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = [kb.step(1, 0, 1000)]
    events += kb.launch(GEMM, 0, 10, 100, corr=1)  # GPU [10, 110)
    events.append(kb.runtime("cudaStreamSynchronize", 20, 95, corr=2))  # returns at 115
    events += kb.launch(GEMM, 200, 210, 100, corr=3)  # GPU [210, 310): launched late
    f = tv.findings(load_rank(tmp_path, events))
    bs = by_id(f, "blocking_sync")
    assert bs["time_at_stake_ns"] == 100_000  # the whole gap [110, 210)
    assert bs["evidence"]["per_rank"][0]["by_name"] == {"cudaStreamSynchronize": {"calls": 1, "call_ns": 95_000}}


# --------------------------------------------------------------------------- 8. iterations
def slow_step_job(n_steps: int, slow: int) -> tuple[dict[int, list[jb.Gpu]], list[tuple[int, float, float]]]:
    steps, ranks = [], {0: [], 1: []}  # type: ignore[var-annotated]
    t = 0.0
    for s in range(n_steps):
        length = 2000.0 if s == slow else 1000.0
        steps.append((s, t, length))
        for r in ranks:
            ranks[r].append(jb.compute(t + 10, length / 2))
        t += length
    return ranks, steps


def test_one_slow_iteration_among_five_is_named(tmp_path: Path) -> None:
    ranks, steps = slow_step_job(5, slow=3)
    f = quiet_findings(jb.load_job(tmp_path, ranks, steps))
    si = by_id(f, "slow_iteration")
    slow = si["evidence"]["slow_steps"]
    assert [s["step"] for s in slow] == [3]
    assert slow[0]["vs_median_pct"] == pytest.approx(100.0)
    assert si["time_at_stake_ns"] == 1_000_000
    assert "step 3" in si["title"]


def test_no_iteration_finding_with_two_steps(tmp_path: Path) -> None:
    ranks, steps = slow_step_job(2, slow=1)
    f = quiet_findings(jb.load_job(tmp_path, ranks, steps))
    assert "slow_iteration" not in set(f["id"])


def test_first_step_slow_mentions_warmup(tmp_path: Path) -> None:
    ranks, steps = slow_step_job(4, slow=0)
    si = by_id(quiet_findings(jb.load_job(tmp_path, ranks, steps)), "slow_iteration")
    assert "warm-up" in si["detail"]


# --------------------------------------------------------------------------- preconditions, scope
def test_cpu_only_trace_warns_and_reports_the_host() -> None:
    """Without GPU work only the host rules run (no GPU rule reports), against the host's wall time."""
    trace = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False, progress=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU work.*about the host"):
        f = tv.findings(trace)
    assert list(f.columns) == list(FINDING_COLUMNS)
    assert set(f["id"]) <= {"dataloader_stall", "python_overhead", "cpu_hotspots"}
    assert "cpu_hotspots" in set(f["id"])


def test_scoping(straggler: tv.Trace) -> None:
    # Ranks 0, 1 and 5: LB = (1 + 1 + 1.2) / (3 * 1.2) = 88.9 %; ranks 0 and 5: 91.7 %.
    f = quiet_findings(straggler, ranks=[0, 1, 5], iterations=[0, 1, 2])
    assert by_id(f, "load_imbalance")["ranks"] == [5]
    assert "load_imbalance" not in set(quiet_findings(straggler, ranks=[0, 5])["id"])
    t0 = int(straggler.t0_ns)
    # The first step only: the window's elapsed time is the reference.
    w = quiet_findings(straggler, time_range=(t0, t0 + 1_000_000))
    assert all(row["evidence"]["elapsed_ns"] <= 1_000_000 for _, row in w.iterrows())
    with pytest.raises(tv.TraceSelectionError):
        tv.findings(straggler, ranks=[99])


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_every_real_folder(name: str) -> None:
    trace = tv.load(KINETO_FOLDERS[name], cache=False, progress=False)
    f = quiet_findings(trace)
    assert list(f.columns) == list(FINDING_COLUMNS)
    assert ranked(f)
    if len(trace.ranks) < 2:
        assert not {"load_imbalance", "straggler", "collective_wait"} & set(f["id"])


def test_dashboard_and_cli_show_findings(dlrm: tv.Trace) -> None:
    from jupyter_traceview.dashboard.tables import dashboard_tables

    tables = dashboard_tables(dlrm)
    assert list(tables["findings"]["id"]) == list(tv.findings(dlrm)["id"])


# --------------------------------------------------------------------------- properties
activity = st.fixed_dictionaries(
    {
        "what": st.sampled_from(["gemm", "tiny", "nccl", "memcpy"]),
        "stream": st.sampled_from([7, 8, 20]),
        "ts": st.integers(0, 400),
        "dur": st.integers(0, 80),
        "launch": st.one_of(st.none(), st.integers(0, 450)),
        "pageable": st.booleans(),
    }
)
NAMES = {"gemm": GEMM, "tiny": TINY, "nccl": jb.allreduce(0, 1).name}


def build(acts: list[dict[str, Any]], steps: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [kb.step(s, 100 * s, 100) for s in range(steps)]
    for i, a in enumerate(acts, start=1):
        if a["launch"] is not None:
            events.append(
                kb.runtime("cudaMemcpyAsync" if a["what"] == "memcpy" else "cudaLaunchKernel", a["launch"], 3, corr=i)
            )
        if a["what"] == "memcpy":
            events.append(kb.memcpy(a["ts"], a["dur"], corr=i, stream=a["stream"], pageable=a["pageable"]))
        else:
            events.append(kb.kernel(NAMES[a["what"]], a["ts"], a["dur"], corr=i, stream=a["stream"]))
    return events


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(activity, min_size=1, max_size=12), min_size=1, max_size=3),
    st.integers(0, 5),
    st.floats(0, 5),
)
def test_time_at_stake_bounded_and_sorted(ranks: list[list[dict[str, Any]]], steps: int, min_pct: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for r, acts in enumerate(ranks):
            kb.write(Path(tmp) / f"rank{r}.json", kb.doc(build(acts, steps), rank=r, world_size=len(ranks)))
        trace = tv.load(tmp, cache=False, progress=False)
    f = quiet_findings(trace, rules=tv.FindingRules(min_time_at_stake_pct=min_pct))
    assert list(f.columns) == list(FINDING_COLUMNS)
    if f.empty:
        return
    elapsed = int(f["evidence"].iloc[0]["elapsed_ns"])
    stake = f["time_at_stake_ns"].to_numpy()
    assert (stake >= 0).all() and (stake <= elapsed).all()
    assert ranked(f)
    assert (f["saving_ns"] >= 0).all()
    for _, row in f.iterrows():
        if row["severity"] == "info":
            assert row["time_at_stake_ns"] == 0
        else:
            assert row["time_at_stake_pct"] >= min_pct
        assert set(row["ranks"]) <= set(trace.ranks)
        json.dumps(row["evidence"])


def test_docstring_example() -> None:
    import builtins
    import doctest
    import importlib

    module = importlib.import_module("jupyter_traceview.analysis.findings.driver")  # where findings() is written

    missing = object()
    before = builtins.__dict__.get("_", missing)
    try:
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    finally:
        if before is missing:
            builtins.__dict__.pop("_", None)
        else:
            builtins._ = before  # type: ignore[attr-defined]
    assert result.attempted > 0 and result.failed == 0


def test_cpu_only_rank_in_a_gpu_job_warns(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank0.json", kb.doc(launch_bound_events(), rank=0, world_size=2))
    kb.write(tmp_path / "rank1.json", kb.doc([kb.step(1, 0, 100), kb.cpu_op("aten::add", 10, 5)], rank=1, world_size=2))
    trace = tv.load(tmp_path, cache=False, progress=False)
    with pytest.warns(tv.TraceviewWarning, match=r"rank\(s\) \[1\] have no GPU work.*other ranks"):
        f = tv.findings(trace)
    assert "launch_bound" in set(f["id"]) and all(r == [0] for r in f["ranks"])


def test_low_overlap_sets_waiting_aside_per_kind(dlrm: tv.Trace) -> None:
    """Ranks 1 and 7 of the DLRM sample: rank 1's all-to-all (SendRecv kernels) is mostly
    waiting for rank 7; each kind's stake is its own exposed time less its own waiting."""
    f = tv.findings(dlrm, ranks=[1, 7])
    over = f.loc[f["id"] == "low_overlap_collective"]
    assert sorted(e["collective"] for e in over["evidence"]) == ["all_reduce", "send_recv"]
    exposed = tv.comm_comp_overlap(dlrm, ranks=[1, 7]).set_index("rank")["exposed_comm_ns"]
    stakes: dict[int, int] = {}
    for ev in over["evidence"]:
        for row in ev["per_rank"]:
            assert row["time_at_stake_ns"] == row["exposed_ns"] - row["waiting_ns"]
            stakes[row["rank"]] = stakes.get(row["rank"], 0) + row["time_at_stake_ns"]
    for rank, stake in stakes.items():
        assert stake <= exposed[rank]
