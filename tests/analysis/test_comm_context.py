"""Communication by context (model/classify.py, rules 6 and 7) and ``unrecognised_kernels``,
on tiny traces whose answers are worked out in the comments (times in us)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.findings.rules.unrecognised_kernels import stem, suggestion
from jupyter_traceview.loading.readers import kineto
from tests import kineto_builder as kb

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32"
EP_DISPATCH = "void ep_lib::a2a_dispatch_recv<8, 256>(ep_lib::Params)"
EP_NOTIFY = "void ep_lib::notify_counts<8>(int*)"


def load(tmp: Path, events: list[dict[str, Any]]) -> tv.Trace:
    return tv.load(kb.write(tmp / "rank-0.json", kb.doc(events, rank=0)), cache=False, progress=False)


def findings(trace: tv.Trace) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(trace)


def classes(trace: tv.Trace) -> dict[str, str]:
    ev = trace.rank_data(0).events
    k = ev.loc[ev["kind"] == "kernel"]
    return dict(zip(k["name"].astype(str), k["gpu_class"].astype(str), strict=True))


def expert_parallel_events() -> list[dict[str, Any]]:
    """An expert-parallel step. ``record_param_comms`` (an all_to_all) launches the dispatch
    kernel, 120-520 on stream 20 (400 us, 5 % occupancy: few SMs, by design); ``aten::mm``
    launches a GEMM, 130-330 on stream 7 (200 us); the library's notify kernel, launched
    outside any operator, runs 600-650 on stream 20. Stream 20 runs only these two kernels.

    Communication = 400 + 50 = 450 us; compute = 200 us; the GEMM hides 200 us of the
    dispatch, so exposed communication = 450 - 200 = 250 us."""
    return [
        kb.step(1, 0, 1000),
        kb.cpu_op("record_param_comms", 100, 50, **{"Collective name": "all_to_all"}),
        *kb.launch(EP_DISPATCH, 110, 120, 400, corr=1, stream=20, **{"est. achieved occupancy %": 5}),
        kb.cpu_op("aten::mm", 200, 20),
        *kb.launch(GEMM, 205, 130, 200, corr=2, stream=7),
        *kb.launch(EP_NOTIFY, 300, 600, 50, corr=3, stream=20, **{"est. achieved occupancy %": 5}),
    ]


def test_unknown_kernels_under_a_collective_or_on_its_stream_communicate(tmp_path: Path) -> None:
    trace = load(tmp_path, expert_parallel_events())
    assert classes(trace) == {EP_DISPATCH: "communication", GEMM: "compute", EP_NOTIFY: "communication"}
    s = tv.summary(trace).iloc[0]
    assert (s["comm_ns"], s["compute_ns"], s["exposed_comm_ns"]) == (450_000, 200_000, 250_000)
    found = findings(trace)
    assert "low_occupancy" not in set(found["id"])  # the dispatch kernel is not judged: it communicates
    assert "unrecognised_kernels" not in set(found["id"])
    # Every figure sees it: the kernel breakdown and the efficiency model's communication.
    kb_type = tv.kernel_breakdown(trace, by="kernel").set_index("name")
    assert kb_type.loc[EP_DISPATCH, "kernel_type"] == "communication"


def test_fused_says_how_a_kernel_was_built_not_what_it_does(tmp_path: Path) -> None:
    """``fused`` in a name is no sign of compute: a fused dispatch kernel launched by an
    all_to_all (as the expert-parallel step above, renamed) communicates, and the same name
    with no context is unrecognised, not known compute."""
    fused = "void ep_lib::fused_send_tokens<8>(ep_lib::Params)"
    events = [{**e, "name": fused} if e.get("name") == EP_DISPATCH else e for e in expert_parallel_events()]
    assert classes(load(tmp_path, events))[fused] == "communication"
    assert not tv.Classifier().recognises("fused_moe_gate_up_sm90<128, 4>")


def test_the_same_kernels_without_context_are_compute_and_reported(tmp_path: Path) -> None:
    """The dispatch kernel launched outside any operator, on the GEMM's stream: nothing says it
    communicates. Unrecognised time = 400 + 50 = 450 us of 400 + 50 + 50 = 500 us of GPU
    work: 90 %."""
    events = [
        kb.step(1, 0, 1000),
        *kb.launch(EP_DISPATCH, 110, 120, 400, corr=1, stream=7, **{"est. achieved occupancy %": 5}),
        kb.cpu_op("aten::mm", 200, 20),
        *kb.launch(GEMM, 205, 530, 50, corr=2, stream=7),
        *kb.launch(EP_NOTIFY, 300, 600, 50, corr=3, stream=7),
    ]
    trace = load(tmp_path, events)
    assert set(classes(trace).values()) == {"compute"}
    row = findings(trace).set_index("id").loc["unrecognised_kernels"]
    assert row["severity"] == "info" and row["ranks"] == [0]
    ev = row["evidence"]
    assert ev["share_pct"] == {"0": pytest.approx(100 * 450 / 500)}
    assert ev["patterns"] == ["ep_lib::"] and [k["name"] for k in ev["kernels"]] == [EP_DISPATCH, EP_NOTIFY]
    line = ev["line"]
    assert line == 'trace = trace.with_classifier(tv.Classifier().extend(communication=[r"ep_lib::"]))'
    assert f"`{line}`" in row["detail"]
    # The suggested line works: run as written, both kernels communicate and the finding is gone.
    scope: dict[str, Any] = {"tv": tv, "trace": trace}
    exec(line, scope)
    fixed = scope["trace"]
    assert classes(fixed) == {EP_DISPATCH: "communication", GEMM: "compute", EP_NOTIFY: "communication"}
    assert tv.summary(fixed).iloc[0]["comm_ns"] == 450_000
    assert "unrecognised_kernels" not in set(findings(fixed)["id"])
    # And compute= marks them as known compute: no finding either.
    known = trace.with_classifier(tv.Classifier().extend(compute=ev["patterns"]))
    assert set(classes(known).values()) == {"compute"}
    assert "unrecognised_kernels" not in set(findings(known)["id"])


def test_unrecognised_below_ten_percent_is_not_reported(tmp_path: Path) -> None:
    """45 us of unknown kernel among 500 us of GPU work: 9 % < 10 %."""
    events = [
        kb.step(1, 0, 1000),
        *kb.launch("mystery_kernel_v2", 10, 20, 45, corr=1),
        kb.cpu_op("aten::mm", 100, 20),
        *kb.launch(GEMM, 105, 100, 455, corr=2),
    ]
    assert "unrecognised_kernels" not in set(findings(load(tmp_path, events))["id"])


def test_known_compute_kernels_under_a_dispatch_range_stay_compute(tmp_path: Path) -> None:
    """An MoE layer's ``dispatch`` range: a Triton permutation kernel launched in it with no
    operator between is known compute, and stays so; an unknown kernel in it communicates."""
    events = [
        kb.step(1, 0, 1000),
        kb.annotation("moe_dispatch", 100, 100),
        *kb.launch("triton_poi_fused_permute_0", 110, 120, 50, corr=1),
        *kb.launch("void my_ep::send_tokens(int*)", 150, 180, 50, corr=2, stream=9),
    ]
    got = classes(load(tmp_path, events))
    assert got == {"triton_poi_fused_permute_0": "compute", "void my_ep::send_tokens(int*)": "communication"}


def test_library_namespaces_are_communication_by_name() -> None:
    clf = tv.Classifier()
    for name in (
        "void mscclpp::allreduce6<__nv_bfloat16>(...)",
        "void pplx::a2a_dispatch_kernel<...>",
        "nvshmemi_transfer_rma_kernel",
        "void deep_ep::internode_ll::dispatch<8>",
        "void uccl::intranode::combine<bf16>",
        "ccl_kernel_allreduce",
        "void ucc_ec_cuda_reduce",
    ):
        assert clf.classify(name) == "communication", name
    assert clf.classify("void cclone_kernel") == "compute"
    with pytest.raises(TypeError, match="sequence of patterns"):
        clf.extend(communication="ep_lib::")  # type: ignore[arg-type]


def test_suggested_patterns() -> None:
    assert stem("void ep_lib::a2a<8>(int*)") == "ep_lib::"
    assert stem("my_kernel_v2(float*)") == "my_kernel_v2"
    assert stem("void (anonymous namespace)::fancy<1>()") == "fancy"
    patterns, line = suggestion(["a.b(float)", "a.b(int)", "c::d::e<1>"])
    assert patterns == [r"a\.b", "c::d::"] and line.endswith(r'(communication=[r"a\.b", r"c::d::"]))')


@pytest.mark.skipif(not kineto.NATIVE_AVAILABLE, reason="the batched path reads what the C scanner read")
def test_the_batched_reader_classifies_by_context_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ranks' small files read together (``readers.kineto.batch``): the same classes as alone."""
    for r in (0, 1):
        kb.write(tmp_path / "job" / f"rank-{r}.json", kb.doc(expert_parallel_events(), rank=r, world_size=2))
    built: list[int] = []
    real = kineto.batch_tables

    def spy(pending: Any, classifier: Any) -> Any:
        built.append(len(pending))
        return real(pending, classifier)

    monkeypatch.setattr(kineto, "batch_tables", spy)
    trace = tv.load(tmp_path / "job", cache=False, progress=False)
    assert built == [2]
    for r in (0, 1):
        ev = trace.rank_data(r).events
        k = ev.loc[ev["kind"] == "kernel"]
        got = dict(zip(k["name"].astype(str), k["gpu_class"].astype(str), strict=True))
        assert got == {EP_DISPATCH: "communication", GEMM: "compute", EP_NOTIFY: "communication"}
