"""The timeline's search over event arguments (views/timeline/args.py), as well as names.

A tiny trace built in code: two ``aten::mm`` calls with different recorded shapes, an NCCL
all-reduce whose ``record_param_comms`` annotation records its element count, a copy. A pattern
found only in arguments (a shape, an element count, a copy kind) matches exactly the events
that carry it; counts, the window's per-event flags and the walk of matches agree. On the DLRM
sample: ``in_nelems=6144`` is the first all-to-all's element count, recorded on its
``nccl:all_to_all`` annotation on every rank, twice per rank (steps 1 and 2 of the sample).
"""

from __future__ import annotations

import numpy as np

import jupyter_traceview as tv
from jupyter_traceview.views.timeline import protocol
from jupyter_traceview.views.timeline.args import event_args_text
from jupyter_traceview.views.timeline.index import TimelineIndex
from tests import kineto_builder as kb


def _trace(tmp_path):
    events = [
        kb.cpu_op("aten::mm", 10, 20, **{"Input Dims": [[32, 64], [64, 16]], "Input type": ["float", "float"]}),
        kb.cpu_op("aten::mm", 40, 20, **{"Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}),
        kb.cpu_op(
            "record_param_comms",
            70,
            20,
            **{"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float"},
        ),
        kb.cpu_op("aten::relu", 100, 5),
        kb.memcpy(110, 5, corr=9, kind="DtoH"),
    ]
    path = kb.write(tmp_path / "t.json", kb.doc(events))
    return tv.load(path, cache=False)


def _names(ix: TimelineIndex, positions) -> list[str]:
    return [ix.names[int(ix.name[p])] for p in positions]


def test_argument_text_of_each_event(tmp_path) -> None:
    trace = _trace(tmp_path)
    text = event_args_text(trace.rank_data(0))
    ev = trace.events(0).set_index("eid")
    by_name = {str(ev.loc[e, "name"]) + f"@{int(ev.loc[e, 'ts_ns'])}": t for e, t in text.items()}
    mm = sorted(t for k, t in by_name.items() if k.startswith("aten::mm"))
    assert mm == [
        'input_dims=[[32,64],[64,16]] input_type=["float","float"]',
        'input_dims=[[8,8],[8,8]] input_type=["float","float"]',
    ]
    comm = [t for k, t in by_name.items() if k.startswith("record_param_comms")]
    assert len(comm) == 1 and "collective=all_reduce" in comm[0] and "in_nelems=1024" in comm[0]
    assert not any(k.startswith("aten::relu") for k in by_name)  # no arguments: no text


def test_search_matches_arguments_as_well_as_names(tmp_path) -> None:
    trace = _trace(tmp_path)
    ix = TimelineIndex(trace)
    # Only in arguments: the first mm's shape, the all-reduce's element count.
    assert ix.count_matches(r"\[32,64\]") == 1
    assert ix.count_matches("in_nelems=1024") == 1
    # "aten::mm" names both mm calls; '"float"' is in both of their recorded input types.
    assert ix.count_matches("aten::mm") == 2
    assert ix.count_matches('"float"') == 2
    # A name-only pattern is unchanged.
    assert ix.count_matches("relu") == 1
    # The walk finds the argument match, in time order: the second mm, at 40 us, is 30 us
    # after the trace's origin (its first event, at 10 us).
    p = ix.find(r"\[8,8\]", -1)
    assert p is not None and _names(ix, [p]) == ["aten::mm"] and int(ix.start[p]) == 30_000
    assert ix.find(r"\[8,8\]", 30_000) is None
    assert ix.find(r"\[8,8\]", 29_999) == p
    # The window flags the matching raw events, and encodes them per event.
    rows = [r.id for r in ix.rows]
    win = ix.window(0, int(ix.end_ns) + 1, 1000, rows=rows, pattern="in_nelems=1024")
    flagged = [
        n
        for rw in win.rows
        if rw.mode == "raw" and rw.events is not None
        for n, m in zip(_names(ix, rw.events), rw.matches, strict=True)
        if m
    ]
    assert flagged == ["record_param_comms"]
    meta, [buf] = protocol.answer(
        ix,
        "_window",
        {
            "seq": 1,
            "lo": 0,
            "hi": float(ix.end_ns) + 1,
            "width": 1000,
            "rows": rows,
            "summaries": [],
            "pattern": "1024",
        },
    )
    off, n, dtype = meta["layout"]["ev_match"]
    match = np.frombuffer(buf, dtype=np.uint8, count=n, offset=off)
    off, n, _ = meta["layout"]["ev_name"]
    names = [meta["names"][i] for i in np.frombuffer(buf, dtype=np.uint32, count=n, offset=off)]
    assert dtype == "u1"
    assert [nm for nm, m in zip(names, match, strict=True) if m] == ["record_param_comms"]
    # The per-name flags stay name-only (record_param_comms's name holds no "1024").
    assert not any(meta["name_match"])


def test_argument_search_on_the_sample(dlrm: tv.Trace) -> None:
    ix = TimelineIndex.of(dlrm)
    # Oracle from the comms table: events recording 6144 input elements.
    comms = dlrm.comms()
    expected = int((comms["in_nelems"] == 6144).sum())
    assert expected == 16
    assert ix.count_matches("in_nelems=6144") == expected
    ev = dlrm.events()
    first = ev.merge(comms.loc[comms["in_nelems"] == 6144, ["rank", "eid"]], on=["rank", "eid"])["ts_ns"].min()
    p = ix.find("in_nelems=6144", -1)
    assert p is not None and int(ix.start[p]) == int(first) - ix.t0_ns
    assert _names(ix, [p]) == ["nccl:all_to_all"]
