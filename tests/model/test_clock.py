"""Clock alignment from matched collectives: offsets known by construction, refusals, tv.align_clocks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.model.collectives import kernel_collective, rank_collective_kernels
from jupyter_traceview.model.rank_data import RankData
from tests import kineto_builder as kb

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ALLGATHER = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"


def write_job(
    folder: Path,
    offsets_us: Sequence[float],
    *,
    n_coll: int = 12,
    seq: bool = True,
    kernel: str = ALLREDUCE,
    jitter_us: float = 0.4,
    seed: int = 0,
    groups: Sequence[Sequence[int]] | None = None,
    counts: Sequence[int] | None = None,
    collective_name: str = "allreduce",
) -> Path:
    """One file per rank; collective c ends at the same true instant on every rank of its group
    (plus up to ``jitter_us`` of noise), each rank's clock running ``offsets_us[r]`` ahead."""
    rng = np.random.default_rng(seed)
    n = len(offsets_us)
    groups = [list(range(n))] if groups is None else [list(g) for g in groups]
    for r in range(n):
        off = offsets_us[r]
        events: list[dict] = [kb.step(1, 1000 + off, 20_000)]
        corr = 1
        n_mine = n_coll if counts is None else counts[r]
        for c in range(n_mine):
            for g, members in enumerate(groups):
                if r not in members:
                    continue
                true_end = 2000 + 1000 * c + 100 * g
                arrival = true_end - 300 + rng.uniform(0, 200)  # ranks arrive at different times
                end = true_end + rng.uniform(-jitter_us / 2, jitter_us / 2)
                args = {}
                if seq:
                    args = {
                        "Collective name": collective_name,
                        "Seq": c,
                        "Process Group Name": str(g),
                        "Group size": len(members),
                    }
                events.append(kb.runtime("cudaLaunchKernel", arrival - 10 + off, 5, corr=corr))
                events.append(
                    kb.kernel(kernel, round(arrival + off, 3), round(end - arrival, 3), corr=corr, stream=20, **args)
                )
                corr += 1
        kb.write(folder / f"rank-{r}.json", kb.doc(events, rank=r, world_size=n))
    return folder


def offsets_of(result: pd.DataFrame) -> dict[int, int]:
    return dict(zip(result["rank"].tolist(), result["offset_ns"].tolist(), strict=True))


@pytest.mark.parametrize("seq", [True, False], ids=["by-seq", "by-order"])
def test_injected_offsets_are_recovered_within_a_microsecond(tmp_path: Path, seq: bool) -> None:
    offsets_us = [0.0, 1234.567, -98765.4321, 5.5]
    trace = tv.load(write_job(tmp_path, offsets_us, seq=seq), cache=False)
    result = tv.clock_alignment(trace)
    assert list(result.columns) == [
        "rank",
        "offset_ns",
        "reference",
        "collectives",
        "matched_by",
        "residual_median_ns",
        "residual_max_ns",
        "violations",
    ]
    got = offsets_of(result)
    for r, off in enumerate(offsets_us):
        assert abs(got[r] - off * 1000) < 1000, (r, got[r], off)
    assert result["reference"].tolist() == [True, False, False, False]
    assert (result["collectives"] == 12).all()
    assert set(result["matched_by"]) == {"seq" if seq else "order"}
    # Jitter of +-0.2 us: residuals are below half a microsecond, and no collective is inverted.
    assert (result["residual_max_ns"] < 500).all()
    assert (result["violations"] == 0).all()


def test_other_reference_rank(tmp_path: Path) -> None:
    offsets_us = [0.0, 250.0, -40.0]
    trace = tv.load(write_job(tmp_path, offsets_us), cache=False)
    got = offsets_of(tv.clock_alignment(trace, reference=1))
    for r, off in enumerate(offsets_us):
        assert abs(got[r] - (off - 250.0) * 1000) < 1000
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 7"):
        tv.clock_alignment(trace, reference=7)


def test_subgroups_connected_through_a_shared_rank(tmp_path: Path) -> None:
    # Groups {0, 1} and {1, 2}: rank 2 shares nothing with rank 0 but is reached through rank 1.
    offsets_us = [0.0, 70.0, -333.0]
    trace = tv.load(write_job(tmp_path, offsets_us, groups=[[0, 1], [1, 2]]), cache=False)
    got = offsets_of(tv.clock_alignment(trace))
    for r, off in enumerate(offsets_us):
        assert abs(got[r] - off * 1000) < 1000


def test_unconnected_groups_are_refused(tmp_path: Path) -> None:
    trace = tv.load(write_job(tmp_path, [0.0, 1.0, 2.0, 3.0], groups=[[0, 1], [2, 3]]), cache=False)
    with pytest.raises(tv.TraceviewError, match=r"ranks \[2, 3\] share no collective"):
        tv.clock_alignment(trace)


def test_too_few_collectives_are_refused(tmp_path: Path) -> None:
    trace = tv.load(write_job(tmp_path, [0.0, 10.0], n_coll=2), cache=False)
    with pytest.raises(tv.TraceviewError, match=r"too few matched collectives .*rank 0: 2.*at least 3"):
        tv.clock_alignment(trace)
    # A weaker estimate on request.
    assert len(tv.clock_alignment(trace, min_collectives=2)) == 2


def test_a_single_rank_is_refused(tmp_path: Path) -> None:
    write_job(tmp_path, [0.0, 10.0])
    trace = tv.load(tmp_path / "rank-0.json", cache=False)
    with pytest.raises(tv.TraceviewError, match="at least two ranks"):
        tv.clock_alignment(trace)


def test_ranks_without_communication_are_refused(tmp_path: Path) -> None:
    for r in range(2):
        kb.write(tmp_path / f"rank-{r}.json", kb.doc([*kb.launch("gemm", 10, 20, 5, corr=1)], rank=r, world_size=2))
    trace = tv.load(tmp_path, cache=False)
    with pytest.raises(
        tv.TraceviewError, match=r"no collective .* could be matched.*without communication kernels: \[0, 1\]"
    ):
        tv.clock_alignment(trace)


def test_point_to_point_kernels_are_not_matched_by_order(tmp_path: Path) -> None:
    trace = tv.load(write_job(tmp_path, [0.0, 5.0], seq=False, kernel=SENDRECV), cache=False)
    with pytest.raises(tv.TraceviewError, match="point-to-point"):
        tv.clock_alignment(trace)
    # Matched by sequence number, they are used when asked for.
    job = write_job(tmp_path / "seq", [0.0, 5.0], seq=True, kernel=SENDRECV, collective_name="send")
    seq_trace = tv.load(job, cache=False)
    with pytest.raises(tv.TraceviewError, match="no collective"):
        tv.clock_alignment(seq_trace)
    got = offsets_of(tv.clock_alignment(seq_trace, collectives=["send"]))
    assert abs(got[1] - 5000) < 1000


def test_different_counts_are_not_matched_by_order(tmp_path: Path) -> None:
    trace = tv.load(write_job(tmp_path, [0.0, 5.0], seq=False, counts=[12, 11]), cache=False)
    with pytest.raises(tv.TraceviewError, match=r"all_reduce was not matched by order.*rank 0: 12, rank 1: 11"):
        tv.clock_alignment(trace)


def test_inconsistent_matches_warn() -> None:
    from tests.conftest import KINETO_FOLDERS

    # Two ranks sampled from a 128-rank job: matched by order, most collectives are not the same ones.
    trace = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="still end on some rank before another rank has started them"):
        result = tv.clock_alignment(trace)
    assert result["violations"].sum() > 0
    assert result["residual_median_ns"].min() > 1_000_000


def test_kernel_names_give_the_collective() -> None:
    assert kernel_collective(ALLREDUCE) == "all_reduce"
    assert kernel_collective(ALLGATHER) == "all_gather"
    assert kernel_collective(SENDRECV) == "send_recv"
    assert kernel_collective("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "reduce_scatter"
    assert kernel_collective("ncclDevKernel_Generic_4") == "unknown"
    assert kernel_collective("sm90_xmma_gemm") == "unknown"


# ---------------------------------------------------------------------- the DLRM sample
def test_dlrm_ranks_are_matched_by_annotation_and_order(dlrm: tv.Trace) -> None:
    k = rank_collective_kernels(dlrm.select(ranks=3))
    # 5 all-to-all (SendRecv kernels under nccl:all_to_all annotations) and 3 all-reduce.
    assert k["collective"].value_counts().to_dict() == {"all_to_all": 5, "all_reduce": 3}
    result = tv.clock_alignment(dlrm)
    assert (result["collectives"] == 8).all()
    assert (result["violations"] == 0).all()
    # One host: the clocks agree to within NCCL's few-microsecond last step.
    assert result["offset_ns"].abs().max() < 5_000
    assert result["residual_max_ns"].max() < 5_000


def test_dlrm_offset_injected_into_one_rank_is_recovered(dlrm: tv.Trace) -> None:
    before = offsets_of(tv.clock_alignment(dlrm))
    injected = 1_234_567_891  # 1.23 s ahead
    shifted = tv.align_clocks(dlrm, {5: -injected})
    assert shifted.meta(5).extra["clock_offset_ns"] == -injected
    after = offsets_of(tv.clock_alignment(shifted))
    for r in dlrm.ranks:
        expected = before[r] + (injected if r == 5 else 0)
        assert abs(after[r] - expected) < 1000, (r, after[r], expected)
    # Injected into the reference rank instead: every other rank moves the other way.
    after_ref = offsets_of(tv.clock_alignment(tv.align_clocks(dlrm, {0: -injected})))
    for r in dlrm.ranks[1:]:
        assert abs(after_ref[r] - (before[r] - injected)) < 1000


def test_align_clocks_shifts_every_time_and_records_it(dlrm: tv.Trace) -> None:
    result = tv.clock_alignment(dlrm)
    aligned = tv.align_clocks(dlrm, result)
    for r, off in offsets_of(result).items():
        np.testing.assert_array_equal(aligned.events(r)["ts_ns"], dlrm.events(r)["ts_ns"] - off)
        assert aligned.meta(r).extra["clock_offset_ns"] == off
        assert dlrm.meta(r).extra.get("clock_offset_ns") is None  # the input is not modified
        if dlrm.meta(r).profiler_start_ns is not None:
            assert aligned.meta(r).profiler_start_ns == dlrm.meta(r).profiler_start_ns - off
    assert aligned.metadata["clock_offset_ns"].tolist() == result["offset_ns"].tolist()
    assert (dlrm.metadata["clock_offset_ns"] == 0).all()
    # Aligned again: nothing left to move (within rounding), and shifts add up.
    again = tv.clock_alignment(aligned)
    assert again["offset_ns"].abs().max() <= 1
    twice = tv.align_clocks(aligned, {1: 100})
    assert twice.meta(1).extra["clock_offset_ns"] == offsets_of(result)[1] + 100


def test_align_clocks_estimates_when_not_given_offsets(dlrm: tv.Trace) -> None:
    """tv.align_clocks(trace) is the one way to align (load(align=) was removed): without
    offsets it estimates them with clock_alignment and records them in the metadata."""
    aligned = tv.align_clocks(tv.load(tv.sample_path(), cache=False))
    expected = tv.clock_alignment(dlrm)
    assert aligned.metadata["clock_offset_ns"].tolist() == expected["offset_ns"].tolist()
    pd.testing.assert_frame_equal(aligned.events(2), tv.align_clocks(dlrm, expected).events(2))
    with pytest.raises(tv.OptionError, match=r"align= was removed.*tv\.align_clocks\(tv\.load\(path\)\)"):
        tv.load(tv.sample_path(), align="collectives")  # type: ignore[call-arg]


def test_align_clocks_checks_its_offsets(dlrm: tv.Trace) -> None:
    with pytest.raises(tv.TraceSelectionError, match="unknown rank 12"):
        tv.align_clocks(dlrm, {12: 5})
    with pytest.raises(tv.TraceviewError, match="lacks column"):
        tv.align_clocks(dlrm, pd.DataFrame({"rank": [0]}))


# ---------------------------------------------------------------------- dask
def test_dask_engine_aligns_the_same(dask_client: object, dlrm: tv.Trace) -> None:
    trace = tv.align_clocks(tv.load(tv.sample_path(), engine="dask", client=dask_client, cache=False))
    expected = tv.clock_alignment(dlrm)
    assert trace.metadata["clock_offset_ns"].tolist() == expected["offset_ns"].tolist()
    assert trace.meta(3).extra["clock_offset_ns"] == expected["offset_ns"].iloc[3]
    pd.testing.assert_frame_equal(trace.events(3), tv.align_clocks(dlrm, expected).events(3))
    pd.testing.assert_frame_equal(tv.clock_alignment(trace)[["rank", "collectives"]], expected[["rank", "collectives"]])


def test_collective_kernels_are_computed_once_per_rank_table(dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    # Clock alignment, the critical path and the what-if replay read one result per rank
    # table (one truth, computed once): count the computations behind them.
    from jupyter_traceview.model import collectives

    traced = dlrm.with_classifier(dlrm.classifier)  # new tables: nothing kept from other tests
    calls: list[int] = []
    real = collectives._collective_kernels_of

    def counting(d: RankData, window: tuple[int, int] | None) -> pd.DataFrame:
        calls.append(1)
        return real(d, window)

    monkeypatch.setattr(collectives, "_collective_kernels_of", counting)
    tv.clock_alignment(traced)
    tv.critical_path(traced)
    tv.what_if(traced)
    assert len(calls) == len(traced.ranks)
    # The frame handed out is a copy: a caller's new column does not reach the next caller.
    one = rank_collective_kernels(traced.select(ranks=3))
    one["extra"] = 1
    assert "extra" not in rank_collective_kernels(traced.select(ranks=3)).columns
    assert len(calls) == len(traced.ranks)
