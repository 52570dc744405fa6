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
