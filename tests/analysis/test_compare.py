"""tv.compare: causes that add up, by construction (traces built in code); bad input; real traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.compare import CAUSE_COLUMNS, Comparison
from tests import kineto_builder as kb

US = 1000
DATA = Path(__file__).resolve().parents[1] / "data"


def _step_events(k: int, t0: float, dur: float, gemm_us: float, gemm_name: str, corr: int) -> list[dict[str, Any]]:
    """One step of ``dur`` us at ``t0`` (us); relative to ``t0``::

        CPU  ProfilerStep#k [0, dur)
             aten::linear [10, 110) > cudaLaunchKernel [20, 25) -> GEMM on the GPU [100, 100 + gemm)
             DataLoader range [600, 700); cudaStreamSynchronize [800, 850)
        GPU  gemm [100, 100 + gemm); all_reduce [700, 750) (exposed: no compute then)

    With gemm 300 us and dur 1000 us the parts are: operator aten::linear 300 (compute),
    exposed communication 50, host: syncs 50, data loading 100, host: launch overhead 90
    (aten::linear on the CPU while the GPU is idle, [10, 100)), host: Python / other the
    rest, 1000 - 590 = 410.
    """
    return [
        kb.step(k, t0, dur),
        kb.cpu_op("aten::linear", t0 + 10, 100),
        kb.runtime("cudaLaunchKernel", t0 + 20, 5, corr=corr),
        kb.kernel(gemm_name, t0 + 100, gemm_us, corr=corr),
        kb.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0 + 600, 100),
        kb.runtime("ncclAllReduce", t0 + 690, 5, corr=corr + 1),
        kb.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t0 + 700, 50, corr=corr + 1, stream=8),
        kb.runtime("cudaStreamSynchronize", t0 + 800, 50, corr=corr + 2),
    ]


def write_run(
    path: Path,
    *,
    steps: int,
    dur: float,
    gemm_us: float,
    gemm_name: str,
    rank: int = 0,
    world: int = 1,
    copy_us: float = 0,
) -> Path:
    """``steps`` steps of :func:`_step_events`; ``copy_us``: a host-to-device copy of that
    length at [450, 450 + copy_us) of each step (GPU otherwise idle then)."""
    events: list[dict[str, Any]] = []
    for k in range(steps):
        t0 = 1_000 + k * dur
        events += _step_events(k, t0, dur, gemm_us, gemm_name, corr=10 * k + 1)
        if copy_us:
            events += [
                kb.runtime("cudaMemcpyAsync", t0 + 440, 5, corr=10 * k + 5),
                kb.memcpy(t0 + 450, copy_us, corr=10 * k + 5),
            ]
    kb.write(path / f"rank{rank}.json", kb.doc(events, rank=rank, world_size=world))
    return path


def _parts_sum(c: Comparison) -> float:
    return float(c.causes["delta_ns"].sum())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[tv.Trace, tv.Trace]:
    d = tmp_path_factory.mktemp("cmp")
    base = write_run(d / "base", steps=4, dur=1000, gemm_us=300, gemm_name="volta_sgemm_128x64_nn")
    # The kernel under aten::linear is renamed and 200 us slower; the steps 200 us longer.
    new = write_run(d / "new", steps=4, dur=1200, gemm_us=500, gemm_name="sm90_xmma_gemm_f32")
    return tv.load(base, cache=False), tv.load(new, cache=False)


def test_causes_by_construction(built: tuple[tv.Trace, tv.Trace]) -> None:
    c = tv.compare(*built)
    assert list(c.causes.columns) == list(CAUSE_COLUMNS)
    by = c.causes.set_index("cause")
    # Base parts (docstring of _step_events); new: gemm 500, python 1200 - 790 = 410.
    assert by.loc["operator aten::linear", ["base_ns", "new_ns", "delta_ns"]].tolist() == [300 * US, 500 * US, 200 * US]
    assert by.loc["exposed communication", "base_ns"] == 50 * US
    assert by.loc["host: syncs", "base_ns"] == 50 * US
    assert by.loc["data loading", "base_ns"] == 100 * US
    assert by.loc["host: launch overhead", "base_ns"] == 90 * US
    assert by.loc["host: Python / other", ["base_ns", "new_ns"]].tolist() == [410 * US, 410 * US]
    # The renamed kernel pairs with its old self under the same operator, and says so.
    assert by.loc["operator aten::linear", "status"] == "slower"
    assert "volta_sgemm_128x64_nn" in by.loc["operator aten::linear", "evidence"]
    assert "sm90_xmma_gemm_f32" in by.loc["operator aten::linear", "evidence"]
    # Identical steps: no noise, the change is real; unchanged causes are within noise.
    assert c.verdict == "slower" and c.delta_ns == 200 * US
    assert by.loc["host: Python / other", "within_noise"] and not by.loc["operator aten::linear", "within_noise"]
    assert _parts_sum(c) == pytest.approx(c.delta_ns, abs=1e-6)
    assert by.loc["operator aten::linear", "share_pct"] == pytest.approx(100.0)
    # Warm-up: step 0 left out, steps 1-3 matched by id.
    assert c.steps["step_base"].tolist() == [1, 2, 3] and c.steps["step_new"].tolist() == [1, 2, 3]
    assert any("warm-up" in w for w in c.warnings)
    # Links: the rank and the matched steps' windows, and a pattern for Timeline.highlight.
    row = by.loc["operator aten::linear"]
    t0 = built[0].iterations.set_index("step").loc[1, "start_ns"]  # every pair moved alike: the first
    assert row["rank"] == 0 and row["base_start_ns"] == t0 and row["base_end_ns"] - row["base_start_ns"] == 1000 * US
    assert row["new_end_ns"] - row["new_start_ns"] == 1200 * US and row["highlight"] == "^aten::linear$"


def test_repr_in_text_and_in_jupyter(built: tuple[tv.Trace, tv.Trace]) -> None:
    c = tv.compare(*built)
    assert repr(c).startswith("<Comparison slower: mean step 1 ms -> 1.2 ms (+200 us, +20.0%)")
    assert "operator aten::linear" in repr(c).splitlines()[2]
    assert c._repr_markdown_().startswith("### traceview compare: **slower** (+20.0%)")


def test_reversed_is_faster_and_same_is_same(built: tuple[tv.Trace, tv.Trace]) -> None:
    back = tv.compare(built[1], built[0])
    assert back.verdict == "faster" and back.delta_ns == -200 * US
    same = tv.compare(built[0], built[0])
    assert same.verdict == "same" and same.delta_ns == 0 and bool(same.causes["within_noise"].all())


def test_stragglers_and_world_sizes(tmp_path: Path) -> None:
    # Two ranks: in new, rank 1's gemm takes 500 us and its steps 1200 us; rank 0 unchanged.
    # Job step = slowest rank: 1000 -> 1200. Mean over ranks of the parts: 1000 -> 1100;
    # stragglers = 1200 - 1100 = 100; aten::linear (300 + 500) / 2 - 300 = +100.
    for r in (0, 1):
        write_run(tmp_path / "base", steps=3, dur=1000, gemm_us=300, gemm_name="g", rank=r, world=2)
    write_run(tmp_path / "new", steps=3, dur=1000, gemm_us=300, gemm_name="g", rank=0, world=2)
    write_run(tmp_path / "new", steps=3, dur=1200, gemm_us=500, gemm_name="g", rank=1, world=2)
    c = tv.compare(tv.load(tmp_path / "base", cache=False), tv.load(tmp_path / "new", cache=False))
    by = c.causes.set_index("cause")
    assert by.loc["stragglers", "delta_ns"] == pytest.approx(100 * US)
    assert by.loc["operator aten::linear", "delta_ns"] == pytest.approx(100 * US)
    assert c.delta_ns == pytest.approx(200 * US) and _parts_sum(c) == pytest.approx(c.delta_ns)
    assert c.per_rank.set_index("rank").loc[1, "delta_ns"] == pytest.approx(200 * US)
    assert c.per_rank.set_index("rank").loc[0, "delta_ns"] == pytest.approx(0)
    assert by.loc["stragglers", "rank"] == 1
    # A one-rank run against the two-rank one: compared over rank 0, with a warning.
    write_run(tmp_path / "one", steps=3, dur=1000, gemm_us=300, gemm_name="g", rank=0, world=1)
    w = tv.compare(tv.load(tmp_path / "one", cache=False), tv.load(tmp_path / "new", cache=False))
    assert w.ranks == (0,) and any("different world sizes" in m for m in w.warnings)


def test_options_and_bad_input(built: tuple[tv.Trace, tv.Trace]) -> None:
    c = tv.compare(*built, iterations=[2, 3])
    assert c.steps["step_base"].tolist() == [2, 3] and not any("warm-up" in w for w in c.warnings)
    assert tv.compare(*built, top_operators=0).causes["cause"].str.startswith("operator ").sum() == 0
    with pytest.raises(tv.TraceSelectionError, match="rank"):
        tv.compare(*built, ranks=[3])
    with pytest.raises(tv.TraceSelectionError, match="iteration"):
        tv.compare(*built, iterations=[9])
    with pytest.raises(TypeError, match=r"tv\.compare"):
        tv.compare("base/", built[1])  # type: ignore[arg-type]
    with pytest.raises(tv.OptionError, match="top_operators"):
        tv.compare(*built, top_operators=-1)


def test_runs_without_steps_compare_whole() -> None:
    t = tv.load(DATA / "hta_cpu_only")
    c = tv.compare(t, t)
    assert c.verdict == "same" and c.delta_ns == 0


def test_different_world_sizes_on_real_traces() -> None:
    """hta_dlrm_2of128_ranks (2 ranks) against the 8-rank sample: rank by rank, said."""
    c = tv.compare(tv.load(DATA / "hta_dlrm_2of128_ranks"), tv.load(tv.sample_path()))
    assert c.ranks == (0, 1) and any("different world sizes" in w for w in c.warnings)
    assert _parts_sum(c) == pytest.approx(c.delta_ns, rel=1e-9)


def test_spread_splits_intervals_across_windows() -> None:
    """Windows [0, 10), [10, 20), [20, 30): a [2, 5) -> 3 in the first; b [8, 25) -> 2, 10, 5;
    c [40, 50) lies after every window -> nothing."""
    from jupyter_traceview.analysis.compare.parts import _spread

    ts, end = np.array([2, 8, 40]), np.array([5, 25, 50])
    got = _spread(ts, end, np.array(["a", "b", "c"], dtype=object), np.array([0, 10, 20]), np.array([10, 20, 30]))
    assert {k: v.tolist() for k, v in got.items()} == {"a": [3, 0, 0], "b": [2, 10, 5], "c": [0, 0, 0]}


def test_memory_copies(tmp_path: Path) -> None:
    """New copies 40 us per step while the GPU is otherwise idle, in steps 40 us longer:
    memory copies 0 -> 40 us; the cudaMemcpyAsync call [440, 445) runs while the GPU idles,
    so launch overhead +5 us and Python/other -5 us; the step +40 us."""
    write_run(tmp_path / "a", steps=3, dur=1000, gemm_us=300, gemm_name="g")
    write_run(tmp_path / "b", steps=3, dur=1040, gemm_us=300, gemm_name="g", copy_us=40)
    c = tv.compare(tv.load(tmp_path / "a", cache=False), tv.load(tmp_path / "b", cache=False))
    by = c.causes.set_index("cause")
    assert by.loc["memory copies", ["base_ns", "new_ns", "status"]].tolist() == [0.0, 40 * US, "new"]
    assert by.loc["host: launch overhead", "delta_ns"] == 5 * US
    assert by.loc["host: Python / other", "delta_ns"] == -5 * US
    assert c.delta_ns == 40 * US and _parts_sum(c) == pytest.approx(c.delta_ns)
    assert by.loc["memory copies", "highlight"] == "Memcpy|Memset"


def test_paths_leave_python_frames_out() -> None:
    """A trace recorded with stacks (H200 training loop): operator paths hold annotations and
    operator names, never a Python frame's file(line) (which moves with every edit)."""
    t = tv.load(DATA / "h200_cuda" / "train")
    c = tv.compare(t, t, top_operators=1000)
    ops = [x for x in c.causes["cause"] if x.startswith("operator ")]
    assert ops and not any(".py(" in x for x in ops)
    assert c.verdict == "same" and c.delta_ns == 0
