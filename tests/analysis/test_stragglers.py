"""stragglers: collectives matched across ranks, known answers, HTA's candidates."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jupyter_traceview as tv
from jupyter_traceview.analysis.stragglers import ARRIVAL_COLUMNS, COLLECTIVE_COLUMNS, RANK_COLUMNS, kind_from_name
from tests import kineto_builder as kb
from tests.analysis.hta_ops import GOLDEN_HTA
from tests.conftest import KINETO_FOLDERS

US = 1000
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ALLGATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
#: Arrival delays (us) of ranks 0-3 at three all-reduces: rank 2 late at the first and third.
DELAYS = [[0, 20, 300, 10], [40, 90, 0, 30], [5, 0, 250, 15]]
STARTS = [1000, 3000, 5000]


def _rank_events(rank: int, *, skew: float = 0.0, meta: bool = False, stream: int = 20) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [kb.step(1, skew, 9000)]
    for c, base in enumerate(STARTS):
        d = DELAYS[c][rank]
        end = base + max(DELAYS[c]) + 100  # every rank's kernel ends when the last one arrived
        gpu0 = base + d
        extra: dict[str, Any] = {}
        if meta:
            extra = {"Collective name": "allreduce", "Process Group Name": "0", "Seq": c, "Group size": 4}
        corr = 10 + c
        events += [
            kb.annotation("nccl:all_reduce", base - 50 + d + skew, 20),
            kb.runtime("cudaLaunchKernel", base - 45 + d + skew, 5, corr=corr),
            kb.kernel(ALLREDUCE, gpu0 + skew, end - gpu0, corr=corr, stream=stream, **extra),
        ]
    # Compute work so that the trace is a GPU trace regardless of the collectives.
    events += kb.launch("gemm", 100 + skew, 200 + skew, 50, corr=1)
    return events


def _write(folder: Path, per_rank: list[list[dict[str, Any]]]) -> Path:
    for r, events in enumerate(per_rank):
        kb.write(folder / f"rank-{r}.json", kb.doc(events, rank=r, world_size=len(per_rank)))
    return folder


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    folder = _write(tmp_path_factory.mktemp("four"), [_rank_events(r) for r in range(4)])
    return tv.load(folder, cache=False)


def test_kind_from_kernel_names() -> None:
    assert (
        kind_from_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == "all_reduce"
    )
    assert kind_from_name(ALLGATHER) == "all_gather"
    assert kind_from_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == "reduce_scatter"
    assert kind_from_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)") == "send_recv"
    assert kind_from_name("cross_device_reduce_1stage<float, 8>(...)") == "cross_device_reduce_1stage"


def test_per_collective_by_construction(four: tv.Trace) -> None:
    coll = tv.stragglers(four, by="collective")
    assert list(coll.columns) == list(COLLECTIVE_COLUMNS)
    assert coll["last_rank"].tolist() == [2, 1, 2]
    assert coll["ranks"].tolist() == [4, 4, 4]
    assert coll["collective"].tolist() == ["all_reduce"] * 3  # from the nccl:all_reduce ranges
    assert coll["lateness_ns"].tolist() == [(300 - 20) * US, (90 - 40) * US, (250 - 15) * US]
    assert coll["spread_ns"].tolist() == [300 * US, 90 * US, 250 * US]
    waits = [sum(max(row) - d for d in row) * US for row in DELAYS]
    assert coll["wait_ns"].tolist() == waits
    assert coll["seq"].tolist() == [-1, -1, -1] and coll["ordinal"].tolist() == [0, 1, 2]


def test_per_rank_by_construction(four: tv.Trace) -> None:
    per = tv.stragglers(four)
    assert list(per.columns) == list(RANK_COLUMNS)
    assert per["rank"].tolist() == [0, 1, 2, 3]
    assert per["last_count"].tolist() == [0, 1, 2, 0]
    assert per["collectives"].tolist() == [3, 3, 3, 3]
    assert per.loc[2, "lateness_ns"] == (280 + 235) * US and per.loc[1, "lateness_ns"] == 50 * US
    assert per.loc[2, "last_pct"] == pytest.approx(200 / 3)
    assert per.loc[2, "max_delay_ns"] == 300 * US
    assert per.loc[0, "mean_delay_ns"] == round((0 + 40 + 5) * US / 3)
    # Time waited by rank 0 for the last one, summed over the collectives.
    assert per.loc[0, "wait_ns"] == ((300 - 0) + (90 - 40) + (250 - 5)) * US


def test_arrivals(four: tv.Trace) -> None:
    arr = tv.stragglers(four, by="arrival")
    assert list(arr.columns) == list(ARRIVAL_COLUMNS)
    assert len(arr) == 12 and int(arr["is_last"].sum()) == 3
    first = arr.loc[arr["collective_id"] == 0].set_index("rank")
    assert first["delay_ns"].tolist() == [d * US for d in DELAYS[0]]
    coll = tv.stragglers(four, by="collective")
    assert arr.groupby("collective_id")["wait_ns"].sum().tolist() == coll["wait_ns"].tolist()


def test_launch_arrival(four: tv.Trace) -> None:
    # The launch calls were made 45 us before each kernel started: the same ranking.
    coll = tv.stragglers(four, by="collective", arrival="launch")
    assert coll["last_rank"].tolist() == [2, 1, 2]
    assert coll["spread_ns"].tolist() == [300 * US, 90 * US, 250 * US]


def test_sequence_numbers_match_across_streams_and_orders(tmp_path: Path) -> None:
    """With process group + sequence numbers, rank 3 running its collectives on another
    stream still matches; by order it could not (no common stream)."""
    ranks = [_rank_events(r, meta=True, stream=20 if r != 3 else 33) for r in range(4)]
    trace = tv.load(_write(tmp_path, ranks), cache=False)
    coll = tv.stragglers(trace, by="collective")
    assert coll["seq"].tolist() == [0, 1, 2] and coll["pg_name"].tolist() == ["0"] * 3
    assert coll["last_rank"].tolist() == [2, 1, 2] and coll["ranks"].tolist() == [4, 4, 4]
    assert coll["stream"].tolist() == [-1, -1, -1]
    with pytest.warns(tv.TraceviewWarning, match="different numbers"):
        by_order = tv.stragglers(trace, by="collective", match="order")
    assert by_order["ranks"].tolist() == [3, 3, 3]


def test_clock_skew_and_aligned_clocks(tmp_path: Path) -> None:
    """Rank 3's clock runs 1 ms ahead: its arrivals look last. Aligning the clocks on the
    collectives' ends (tv.align_clocks, the one way) removes the offset and rank 2 is the
    straggler again."""
    ranks = [_rank_events(r, skew=1000 if r == 3 else 0) for r in range(4)]
    trace = tv.load(_write(tmp_path, ranks), cache=False)
    assert tv.stragglers(trace, by="collective")["last_rank"].tolist() == [3, 3, 3]
    aligned = tv.stragglers(tv.align_clocks(trace), by="collective")
    assert aligned["last_rank"].tolist() == [2, 1, 2]
    assert aligned["spread_ns"].tolist() == [300 * US, 90 * US, 250 * US]
    # The former align_ends= says where alignment went.
    with pytest.raises(tv.OptionError, match=r"align_ends= was removed.*tv\.align_clocks"):
        tv.stragglers(trace, align_ends=True)  # type: ignore[call-arg]


def test_uneven_counts_warn(tmp_path: Path) -> None:
    ranks = [_rank_events(r) for r in range(4)]
    ranks[1] = [e for e in ranks[1] if not (e.get("name") == ALLREDUCE and e["ts"] > 4000)]
    trace = tv.load(_write(tmp_path, ranks), cache=False)
    with pytest.warns(tv.TraceviewWarning, match="different numbers"):
        coll = tv.stragglers(trace, by="collective")
    assert coll["ranks"].tolist() == [4, 4, 3]


def test_single_rank_and_cpu_only_are_empty_with_a_warning() -> None:
    bert = tv.load(KINETO_FOLDERS["h100_bert_small"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no communication kernels"):
        out = tv.stragglers(bert)
    assert out.empty and list(out.columns) == list(RANK_COLUMNS)
    cpu = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    with pytest.warns(tv.TraceviewWarning, match="no GPU activity"):
        out = tv.stragglers(cpu, by="collective")
    assert out.empty and list(out.columns) == list(COLLECTIVE_COLUMNS)


def test_bad_options(four: tv.Trace) -> None:
    with pytest.raises(ValueError, match="by"):
        tv.stragglers(four, by="step")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="arrival"):
        tv.stragglers(four, arrival="end")  # type: ignore[arg-type]
    with pytest.raises(tv.TraceSelectionError):
        tv.stragglers(four, ranks=[0, 9])


def test_time_range(four: tv.Trace) -> None:
    t0 = int(four.events()["ts_ns"].min())
    coll = tv.stragglers(four, by="collective", time_range=(t0 + 2500 * US, t0 + 4500 * US))
    assert coll["last_rank"].tolist() == [1]


def test_dlrm_sample(dlrm: tv.Trace) -> None:
    """Eight ranks, 5 all-to-alls (SendRecv kernels) and 3 all-reduces matched by order."""
    coll = tv.stragglers(dlrm, by="collective")
    assert len(coll) == 8 and (coll["ranks"] == 8).all()
    assert coll["collective"].value_counts().to_dict() == {"all_to_all": 5, "all_reduce": 3}
    assert (coll["lateness_ns"] <= coll["spread_ns"]).all() and (coll["lateness_ns"] >= 0).all()
    per = tv.stragglers(dlrm)
    assert int(per["last_count"].sum()) == len(coll)
    assert per.sort_values("last_count").iloc[-1]["rank"] == 7
    # The first all-to-all waits 7.6 ms for rank 7, whose kernel starts last on the GPU.
    assert coll.iloc[0]["last_rank"] == 7 and coll.iloc[0]["spread_ns"] == 7_624_000


def test_dlrm_ranking_agrees_with_hta_potential_stragglers(dlrm: tv.Trace) -> None:
    """HTA's get_potential_stragglers(num_candidates=3) on the DLRM sample (reference file
    written by scripts/hta_reference.py: ranks 2, 7, 6) names the ranks with the largest
    mean delay; HTA ranks them by the start of one kernel, the last long one of the
    (stream, name) whose duration varies most across ranks."""
    ref = GOLDEN_HTA / "dlrm_8rank_v100" / "potential_stragglers.csv"
    hta = pd.read_csv(ref)["value"].tolist()
    per = tv.stragglers(dlrm)
    ours = per.sort_values("mean_delay_ns", ascending=False)["rank"].head(len(hta)).tolist()
    assert sorted(ours) == sorted(hta)  # HTA returns its candidates in no meaningful order
    assert per.sort_values("last_count", ascending=False)["rank"].iloc[0] in hta


def test_invariant_to_rank_file_order(tmp_path: Path) -> None:
    ranks = [_rank_events(r) for r in range(4)]
    a = tv.load(_write(tmp_path / "a", ranks), cache=False)
    # Same content, files written in reverse order and events of each file reversed.
    folder = tmp_path / "b"
    for r in reversed(range(4)):
        kb.write(folder / f"rank-{r}.json", kb.doc(list(reversed(ranks[r])), rank=r, world_size=4))
    b = tv.load(folder, cache=False)
    for by in ("rank", "collective", "arrival"):
        pd.testing.assert_frame_equal(tv.stragglers(a, by=by), tv.stragglers(b, by=by))  # type: ignore[arg-type]


def test_synthetic_benchmark_straggler(tmp_path: Path) -> None:
    """benchmarks/synth.py makes rank 1 compute 15% slower with sequence-numbered NCCL kernels."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, str(root / "benchmarks" / "synth.py"), str(tmp_path), "--ranks", "4", "--events", "20000"],
        check=True,
        capture_output=True,
    )
    trace = tv.load(tmp_path, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tv.TraceviewWarning)
        per = tv.stragglers(trace)
        coll = tv.stragglers(trace, by="collective")
    assert (coll["seq"] >= 0).all()  # matched by sequence numbers
    assert per.sort_values("last_count").iloc[-1]["rank"] == 1
    assert np.all(per["collectives"] == len(coll))


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks"])
def test_straggler_views_are_the_three_calls(folder: str) -> None:
    """straggler_views matches once for several views: each view is what stragglers(by=...) gives."""
    from jupyter_traceview.analysis.stragglers import straggler_views

    trace = tv.load(KINETO_FOLDERS[folder], cache=False)
    t0 = trace.t0_ns
    for kw in ({}, {"time_range": (t0 + 2_000_000, t0 + 30_000_000)}, {"arrival": "launch", "match": "order"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)  # a rank without collectives in the window
            views = straggler_views(trace, views=("rank", "collective", "arrival"), **kw)
            assert list(views) == ["rank", "collective", "arrival"]
            for by, got in views.items():
                pd.testing.assert_frame_equal(got, tv.stragglers(trace, by=by, **kw), check_exact=True)
    with pytest.raises(ValueError, match="by"):
        straggler_views(trace, views=("rank", "step"))


def test_straggler_warnings_name_the_caller(tmp_path: Path) -> None:
    """The warnings point at the line that called stragglers (or straggler_views), not inside the library."""
    from jupyter_traceview.analysis.stragglers import straggler_views

    ranks = [_rank_events(r) for r in range(4)]
    ranks[1] = [e for e in ranks[1] if not (e.get("name") == ALLREDUCE and e["ts"] > 4000)]
    trace = tv.load(_write(tmp_path, ranks), cache=False)
    cpu = tv.load(KINETO_FOLDERS["hta_cpu_only"], cache=False)
    for call in (
        lambda: tv.stragglers(trace, by="collective"),
        lambda: straggler_views(trace, views=("collective",)),
        lambda: tv.stragglers(cpu),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and all(Path(w.filename) == Path(__file__) for w in caught), [w.filename for w in caught]


@given(
    st.lists(st.integers(0, 60), max_size=40),
    st.lists(st.integers(0, 60), max_size=40),
)
def test_pos_of_rows_as_a_filled_table(c_rows: list[int], at: list[int]) -> None:
    """``_pos_of_rows`` (binary search among the metadata rows) against the table as long as
    the events that it replaces, repeated rows included (the last entry wins)."""
    from jupyter_traceview.analysis.stragglers import _pos_of_rows

    rows = np.array(c_rows, dtype=np.int64)
    pos = np.arange(len(rows), dtype=np.int64) * 3 + 1  # positions in comms, not 0..n-1
    table = np.full(61, -1, dtype=np.int64)
    for r, p in zip(rows.tolist(), pos.tolist(), strict=True):
        table[r] = p
    asked = np.array(at, dtype=np.int64)
    got = _pos_of_rows(rows, pos, asked)
    assert got.dtype == np.int64 and np.array_equal(got, table[asked])


def _match_with_groupby(kernels: pd.DataFrame, key: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``stragglers._match`` as it was (pandas groupby, transform, head, nth): the reference."""
    g = kernels.groupby(key, sort=False)
    first = g["arrival_ns"].transform("min").to_numpy()
    last = g["arrival_ns"].transform("max").to_numpy()
    k = kernels.assign(_first=first, _last=last)
    coll = (
        k.groupby(key, sort=False)
        .agg(
            collective=("collective", "first"),
            pg_name=("pg", "first"),
            seq=("seq", "first"),
            stream=("stream", "first"),
            ordinal=("ordinal", "first"),
            ranks=("rank", "size"),
            first_arrival_ns=("arrival_ns", "min"),
            last_arrival_ns=("arrival_ns", "max"),
        )
        .reset_index(drop=True)
    )
    # Last rank (lowest rank on a tie) and second-last arrival, per collective.
    k = k.assign(_gid=g.ngroup().to_numpy())
    srt = k.sort_values(["_gid", "arrival_ns", "rank"], ascending=[True, False, True], kind="stable")
    top = srt.groupby("_gid", sort=True).head(2)
    last_rank = top.groupby("_gid").nth(0).set_index("_gid")["rank"]
    second = top.groupby("_gid").nth(1).set_index("_gid")["arrival_ns"]
    coll["last_rank"] = last_rank.reindex(range(len(coll))).to_numpy()
    coll["lateness_ns"] = coll["last_arrival_ns"].to_numpy() - second.reindex(range(len(coll))).to_numpy()
    coll["spread_ns"] = coll["last_arrival_ns"] - coll["first_arrival_ns"]
    k["_wait"] = k["_last"] - k["arrival_ns"]
    coll["wait_ns"] = k.groupby("_gid")["_wait"].sum().reindex(range(len(coll))).to_numpy()
    # Number collectives by first arrival.
    order = np.lexsort((np.arange(len(coll)), coll["first_arrival_ns"].to_numpy()))
    cid = np.empty(len(coll), dtype=np.int64)
    cid[order] = np.arange(len(coll))
    coll.insert(0, "collective_id", cid)
    coll = coll.iloc[order].reset_index(drop=True)
    last_of = dict(zip(cid.tolist(), last_rank.reindex(range(len(cid))).tolist(), strict=True))
    arrivals = pd.DataFrame(
        {
            "collective_id": cid[k["_gid"].to_numpy()],
            "rank": k["rank"].to_numpy(),
            "collective": k["collective"].to_numpy(),
            "arrival_ns": k["arrival_ns"].to_numpy(),
            "delay_ns": k["arrival_ns"].to_numpy() - k["_first"].to_numpy(),
            "wait_ns": k["_wait"].to_numpy(),
            "eid": k["eid"].to_numpy(),
        }
    )
    arrivals["is_last"] = arrivals["rank"].to_numpy() == arrivals["collective_id"].map(last_of).to_numpy()
    arrivals = arrivals.sort_values(["collective_id", "rank"]).reset_index(drop=True)
    return arrivals, coll


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks", "h100_bert_small"])
def test_match_as_with_groupby(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every view matched with numpy reductions over the contiguous groups (arrivals from one
    integer sort) equals the views the pandas version gave, by sequence number and by order, by kernel and launch arrival,
    whole and in a window; and synthetic ties (equal arrivals: the lowest rank is last)."""
    import importlib

    sg = importlib.import_module("jupyter_traceview.analysis.stragglers")  # the module, not the function
    trace = tv.load(KINETO_FOLDERS[folder], cache=False, progress=False)
    t0 = trace.t0_ns
    scopes = ({}, {"match": "order"}, {"arrival": "launch"}, {"time_range": (t0 + 2_000_000, t0 + 30_000_000)})
    compared = 0
    for kw in scopes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            got = sg.straggler_views(trace, views=("rank", "collective", "arrival"), **kw)
            monkeypatch.setattr(sg, "_match", _match_with_groupby)
            monkeypatch.setattr(sg, "_arrivals_per_rank", _arrivals_before)
            want = sg.straggler_views(trace, views=("rank", "collective", "arrival"), **kw)
            monkeypatch.undo()
        for v in want:
            pd.testing.assert_frame_equal(got[v], want[v], check_exact=True)
            compared += len(want[v])
    assert compared > 0 or folder == "h100_bert_small"
    # Ties and several groups, by hand: three collectives on four ranks.
    kernels = pd.DataFrame(
        {
            "pg": ["a"] * 4 + ["a"] * 3 + ["b"] * 2,
            "seq": [1, 1, 1, 1, 2, 2, 2, 1, 1],
            "rank": [0, 1, 2, 3, 0, 2, 3, 1, 2],
            "arrival_ns": [10, 40, 40, 5, 70, 60, 90, 0, 0],
            "eid": np.arange(9) * 7,
            "collective": ["allreduce"] * 7 + ["allgather"] * 2,
            "stream": -1,
            "ordinal": -1,
        }
    )
    new, new_coll = sg._match(kernels, ["pg", "seq"])
    old, old_coll = _match_with_groupby(kernels, ["pg", "seq"])
    pd.testing.assert_frame_equal(new.astype(ARRIVAL_COLUMNS), old.astype(ARRIVAL_COLUMNS), check_exact=True)
    pd.testing.assert_frame_equal(
        new_coll.astype(COLLECTIVE_COLUMNS), old_coll.astype(COLLECTIVE_COLUMNS), check_exact=True
    )
    assert new_coll["last_rank"].tolist() == [1, 1, 3]  # by first arrival: b#1 (0), a#1 (5), a#2 (60)


def _arrivals_before(kernels: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """``_views``' steps that ``_arrivals_per_rank`` replaces (pandas sort, drop_duplicates,
    groupby transform): the reference."""
    kernels = kernels.sort_values([*key, "rank", "arrival_ns", "eid"], kind="stable")
    kernels = kernels.drop_duplicates([*key, "rank"], keep="first")
    kernels = kernels.loc[kernels["arrival_ns"] >= 0]
    n_ranks = kernels.groupby(key)["rank"].transform("size")
    return kernels.loc[n_ranks.to_numpy() >= 2].copy().reset_index(drop=True)


@pytest.mark.parametrize("seed", range(12))
def test_arrivals_per_rank_as_sort_and_drop_duplicates(seed: int) -> None:
    """One arrival per (collective, rank) from one integer sort, against the pandas steps it
    replaces: text keys that sort unlike numbers ("10" < "9"), duplicate and negative
    arrivals, ties broken by eid, collectives on one rank only; both matching keys."""
    from jupyter_traceview.analysis.stragglers import _arrivals_per_rank

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    kernels = pd.DataFrame(
        {
            "rank": rng.integers(0, 5, size=n),
            "eid": rng.permutation(n * 3)[:n],
            "arrival_ns": rng.integers(-2, 40, size=n),
            "collective": pd.array(rng.choice(["allreduce", "all_gather", "Broadcast"], size=n), dtype="str"),
            "pg": pd.array(rng.choice(["0", "10", "9", "pg b"], size=n), dtype="str"),
            "seq": rng.integers(0, 6, size=n),
            "stream": rng.choice([7, 20], size=n),
            "ordinal": rng.integers(0, 4, size=n),
        }
    )
    for key in (["pg", "seq"], ["collective", "stream", "ordinal"]):
        want = _arrivals_before(kernels, key)
        got = _arrivals_per_rank(kernels, key)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
