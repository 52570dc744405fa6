"""thread_activity and host_syncs: states and sync sites known by construction, and the recorded CPU traces."""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb

US = 1000
TORCH_CPU = Path(__file__).resolve().parents[1] / "data" / "torch_cpu"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _py(name: str, ts: float, dur: float, **kw: object) -> dict:
    return kb.cpu_op(name, ts, dur, cat="python_function", **kw)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tv.Trace:
    """Main thread, us::

        [0, 100)  ProfilerStep#1
        [0, 100)  train.py(5): main  (python)
        [0, 40)   DataLoader annotation, with aten::stack [30, 35) inside
        [50, 60)  aten::mm
        [60, 70)  aten::item > aten::_local_scalar_dense [61, 69) > cudaStreamSynchronize [62, 68)
        [70, 80)  torch/nn/functional.py(10): relu > cudaStreamSynchronize [72, 75)

    op 5 + 10 + 10 + 3 = 28 (runtime calls count as op); dataloader 40 - 5 = 35;
    python 100 - 28 - 35 = 37; idle 0. Thread 9: aten::add [0, 50): op 50, idle 50.
    """
    events = [
        kb.step(1, 0, 100),
        _py("train.py(5): main", 0, 100),
        kb.annotation(LOADER, 0, 40),
        kb.cpu_op("aten::stack", 30, 5),
        kb.cpu_op("aten::mm", 50, 10),
        kb.cpu_op("aten::item", 60, 10),
        kb.cpu_op("aten::_local_scalar_dense", 61, 8),
        kb.runtime("cudaStreamSynchronize", 62, 6, corr=1),
        _py("torch/nn/functional.py(10): relu", 70, 10),
        kb.runtime("cudaStreamSynchronize", 72, 3, corr=2),
        kb.cpu_op("aten::add", 0, 50, tid=9),
    ]
    path = tmp_path_factory.mktemp("threads") / "r.json"
    return tv.load(kb.write(path, kb.doc(events)), cache=False)


def test_thread_states_by_construction(tiny: tv.Trace) -> None:
    th = tv.thread_activity(tiny, bins=1).set_index("tid")
    main = th.loc[kb.MAIN_TID]
    assert (main.op_ns, main.dataloader_ns, main.python_ns, main.idle_ns) == (28 * US, 35 * US, 37 * US, 0)
    assert main.busy_pct == pytest.approx(100.0)
    other = th.loc[9]
    assert (other.op_ns, other.idle_ns) == (50 * US, 50 * US) and other.busy_pct == pytest.approx(50.0)
    # Two bins of 50 us: the loader lies in the first.
    two = tv.thread_activity(tiny, bins=2)
    m = two.loc[two["tid"] == kb.MAIN_TID]
    assert m["dataloader_ns"].tolist() == [35 * US, 0]
    assert ((m["end_ns"] - m["start_ns"]) == 50 * US).all()
    with pytest.raises(tv.OptionError, match="bins"):
        tv.thread_activity(tiny, bins=0)


def test_host_syncs_by_construction(tiny: tv.Trace) -> None:
    syncs = tv.host_syncs(tiny)
    got = {(r.name, r.python_line): (r.calls, r.total_ns) for r in syncs.itertuples()}
    # The item's nested _local_scalar_dense and cudaStreamSynchronize count once, as the item;
    # the relu's sync is charged to the user frame around it, not to torch's.
    assert got == {
        ("aten::item", "train.py(5): main"): (1, 10 * US),
        ("cudaStreamSynchronize", "train.py(5): main"): (1, 3 * US),
    }


def test_recorded_cpu_traces() -> None:
    stack = tv.load(TORCH_CPU / "stack" / "stack.pt.trace.json.gz", cache=False)
    th = tv.thread_activity(stack, bins=1)
    assert len(th) == 1
    row = th.iloc[0]
    # The dataset sleeps 2 ms per item, 4 items a batch: most of the time is data loading.
    assert row.dataloader_ns > 0.5 * (row.end_ns - row.start_ns)
    assert row.python_ns > 0 and row.op_ns > 0
    syncs = tv.host_syncs(stack)
    assert syncs["name"].tolist() == ["aten::item"] and syncs["calls"].tolist() == [3]
    assert syncs["python_line"].iloc[0].startswith("record_cpu_traces.py(")
    plain = tv.host_syncs(tv.load(TORCH_CPU / "plain" / "plain.pt.trace.json.gz", cache=False))
    assert plain["python_line"].tolist() == [""]


@pytest.mark.parametrize("n_pids, n_tids", [(1, 1), (1, 3), (3, 2), (50, 40)])
def test_thread_ids_partition_as_row_ids(n_pids: int, n_tids: int) -> None:
    """``threads._thread_ids`` (each column hashed alone, pairs counted densely; packed and
    hashed past a bound) groups rows as ``_links.row_ids`` does, with the same first rows."""
    import numpy as np

    from jupyter_traceview.analysis import _links as lk
    from jupyter_traceview.analysis.threads import _thread_ids

    rng = np.random.default_rng(n_pids * 100 + n_tids)
    pid = rng.choice(np.array([7, 2**40 + 3, -1, 99, 5] * 10, dtype=np.int64)[:n_pids], size=3000)
    tid = rng.choice(rng.integers(-(2**62), 2**62, size=n_tids), size=3000)
    ids, first = _thread_ids(pid, tid)
    want_ids, want_first = lk.row_ids(np.column_stack((pid, tid)))
    assert sorted(first.tolist()) == sorted(want_first.tolist())
    # The same partition: ids map one to one through each group's first row.
    assert np.array_equal(want_ids, want_ids[first][ids])
    assert np.array_equal(ids, ids[want_first][want_ids])
    empty_ids, empty_first = _thread_ids(pid[:0], tid[:0])
    assert len(empty_ids) == 0 and len(empty_first) == 0
    # Rows in runs on one thread (events in time order): the ids are found per run.
    runs = rng.integers(1, 60, size=200)
    r_pid, r_tid = np.repeat(pid[:200], runs), np.repeat(tid[:200], runs)
    ids, first = _thread_ids(r_pid, r_tid)
    want_ids, want_first = lk.row_ids(np.column_stack((r_pid, r_tid)))
    assert ids.dtype == first.dtype == np.int64
    assert sorted(first.tolist()) == sorted(want_first.tolist())
    assert np.array_equal(want_ids, want_ids[first][ids]) and np.array_equal(ids, ids[want_first][want_ids])


@pytest.mark.parametrize(
    "path",
    [TORCH_CPU / f / f"{f}.pt.trace.json.gz" for f in ("plain", "shapes", "stack")] + [Path(tv.sample_path())],
    ids=["plain", "shapes", "stack", "dlrm"],
)
@pytest.mark.parametrize("few_keys", [None, -1, 0], ids=["default", "sorted", "compared"])
def test_thread_states_of_recorded_traces_unchanged(
    path: Path, few_keys: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """thread_states against the computation it replaced (threads by ``row_ids``, every
    subtraction done), on the recorded CPU traces, whole and in a window; each (thread,
    state)'s rows found by comparing keys (few in use) or by one sort (many): both ways."""
    import re

    from jupyter_traceview.analysis import threads

    if few_keys is not None:
        monkeypatch.setattr(threads, "_FEW_KEYS", few_keys if few_keys < 0 else 10**6)

    import numpy as np

    from jupyter_traceview.analysis import _links as lk
    from jupyter_traceview.analysis.threads import _HOST_KINDS, _OP_KINDS, DATALOADER_PATTERN, thread_states
    from jupyter_traceview.model import intervals as iv
    from jupyter_traceview.model.schema import EventKind

    trace = tv.load(path, cache=False, progress=False)
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        lo, hi = int(ev["ts_ns"].min()), int((ev["ts_ns"] + ev["dur_ns"]).max())
        for window in (None, (lo + (hi - lo) // 3, hi - (hi - lo) // 3)):
            mask = lk.category_mask(ev["kind"], _HOST_KINDS)
            ts, end = ev["ts_ns"].to_numpy(), (ev["ts_ns"] + ev["dur_ns"]).to_numpy()
            if window is not None:
                mask &= (ts < window[1]) & (end > window[0])
            rows = np.flatnonzero(mask)
            kind = ev["kind"].astype(str).to_numpy()[rows]
            name = ev["name"].astype(str).to_numpy()[rows]
            s, e = ts[rows], end[rows]
            if window is not None:
                s, e = np.maximum(s, window[0]), np.minimum(e, window[1])
            named = np.array([re.search(DATALOADER_PATTERN, n) is not None for n in name], dtype=bool)
            loader = (kind == EventKind.USER_ANNOTATION.value) & named
            op, py = np.isin(kind, list(_OP_KINDS)), kind == EventKind.PYTHON_FUNCTION.value
            pid, tid = ev["pid"].to_numpy()[rows], ev["tid"].to_numpy()[rows]
            ids, first = lk.row_ids(np.column_stack((pid, tid)))
            want = {}
            for t in np.argsort(first, kind="stable").tolist():
                on = ids == t
                u_op = iv.union(s[on & op], e[on & op])
                u_ld = iv.subtract(iv.union(s[on & loader], e[on & loader]), u_op)
                u_py = iv.subtract(iv.subtract(iv.union(s[on & py], e[on & py]), u_op), u_ld)
                want[(int(pid[first[t]]), int(tid[first[t]]))] = {"op": u_op, "dataloader": u_ld, "python": u_py}
            got = thread_states(ev, window)
            assert list(got) == list(want)
            for k, states in want.items():
                for state, (ws, we) in states.items():
                    gs, ge = got[k][state]
                    assert np.array_equal(gs, ws) and np.array_equal(ge, we), (k, state)
                    assert gs.dtype == ws.dtype == np.int64
