"""The timeline's rank picker presets (views/timeline/ranks.py) and the folding of CPU lanes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.views.timeline.protocol import answer, timeline_state
from jupyter_traceview.views.timeline.ranks import CPU_COLLAPSE_ABOVE, initial_cpu_collapsed, rank_presets
from tests import kineto_builder as kb

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
#: Arrival delays (us) of ranks 0-3 at three all-reduces. Rank 2 is last at the first
#: (300 us, 280 us after the second-last, rank 1 at 20) and at the third (250 us, 235 after
#: rank 3 at 15): last twice, 515 us late in all. Rank 1 is last at the second (90 us, 50
#: after rank 0 at 40): once, 50 us. Ranks 0 and 3 are never last.
DELAYS = [[0, 20, 300, 10], [40, 90, 0, 30], [5, 0, 250, 15]]
STARTS = [1000, 3000, 5000]
#: ProfilerStep duration (us) of each rank: slowest first is 1, 3, 0, 2.
STEP_US = [9000, 9500, 8000, 9200]


def _rank_events(rank: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [kb.step(1, 0, STEP_US[rank])]
    for c, base in enumerate(STARTS):
        d = DELAYS[c][rank]
        end = base + max(DELAYS[c]) + 100  # every rank's kernel ends when the last one arrived
        corr = 10 + c
        events += [
            kb.annotation("nccl:all_reduce", base - 50 + d, 20),
            kb.runtime("cudaLaunchKernel", base - 45 + d, 5, corr=corr),
            kb.kernel(ALLREDUCE, base + d, end - base - d, corr=corr, stream=20),
        ]
    events += kb.launch("gemm", 100, 200, 50, corr=1)
    return events


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    folder = tmp_path_factory.mktemp("four")
    for r in range(4):
        kb.write(folder / f"rank-{r}.json", kb.doc(_rank_events(r), rank=r, world_size=4))
    return tv.load(folder, cache=False)


def test_presets_by_construction(four: tv.Trace) -> None:
    p = rank_presets(four)
    assert [r["rank"] for r in p["slowest"]] == [1, 3, 0, 2]
    assert [r["step_mean_ns"] for r in p["slowest"]] == [9_500_000, 9_200_000, 9_000_000, 8_000_000]
    assert p["stragglers"] == [
        {"rank": 2, "last_count": 2, "collectives": 3, "lateness_ns": 515_000},
        {"rank": 1, "last_count": 1, "collectives": 3, "lateness_ns": 50_000},
    ]


def test_presets_agree_with_the_analyses(dlrm: tv.Trace) -> None:
    """One truth: the presets are the analyses' numbers, reordered."""
    p = rank_presets(dlrm)
    its = tv.iteration_stats(dlrm, per="rank").set_index("rank")
    for r in p["slowest"]:
        assert r["step_mean_ns"] == round(its.loc[r["rank"], "duration_mean_ns"])
    steps = [r["step_mean_ns"] for r in p["slowest"]]
    assert steps == sorted(steps, reverse=True)
    late = tv.stragglers(dlrm).set_index("rank")
    assert {r["rank"] for r in p["stragglers"]} == set(late.index[late["last_count"] > 0])
    counts = [r["last_count"] for r in p["stragglers"]]
    assert counts == sorted(counts, reverse=True)


def test_presets_of_a_trace_without_steps_or_collectives(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", kb.doc(kb.launch("k", 0, 5, 3, corr=1), rank=0, world_size=1))
    assert rank_presets(tv.load(tmp_path, cache=False)) == {"slowest": [], "stragglers": []}


def test_ranks_command_answers_the_presets(four: tv.Trace) -> None:
    ix = tv.Timeline(four).index
    msg, buffers = answer(ix, "_ranks", {})
    assert buffers == [] and msg == dict(rank_presets(four))


@pytest.mark.parametrize(("n", "folded"), [(1, False), (CPU_COLLAPSE_ABOVE, False), (CPU_COLLAPSE_ABOVE + 1, True)])
def test_cpu_lanes_fold_above_four_ranks(n: int, folded: bool) -> None:
    assert CPU_COLLAPSE_ABOVE == 4
    shown = list(range(n))
    assert initial_cpu_collapsed(shown) == (shown if folded else [])


def test_state_folds_cpu_lanes_of_the_eight_rank_sample(dlrm: tv.Trace) -> None:
    state = timeline_state(dlrm)
    assert state["cpu_collapsed"] == list(range(8)), "8 ranks > 4: CPU threads open folded"
    assert state["collapsed"] == [], "GPU streams stay open"
    assert state["focus_rank"] is None and state["pinned"] == []
    four = timeline_state(dlrm, ranks=[0, 1, 2, 3])
    assert four["cpu_collapsed"] == []


def test_state_with_a_focus_adds_and_emphasises_the_rank(dlrm: tv.Trace) -> None:
    state = timeline_state(dlrm, ranks=[0, 1], focus=6)
    assert state["ranks"] == [0, 1, 6] and state["focus_rank"] == 6
    with pytest.raises(tv.TraceSelectionError):
        timeline_state(dlrm, focus=99)
