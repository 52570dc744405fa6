"""The timeline's TypedDicts (views/timeline/messages.py, the palette's in views/colors.py) and the
TypeScript interfaces they mirror (js/timeline/messages.ts) name the same keys, optional on both
sides or on neither; and what the protocol sends has exactly the typed keys."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from jupyter_traceview.model.trace import Trace
from jupyter_traceview.views.timeline import messages, protocol
from jupyter_traceview.views.timeline.index import TimelineIndex
from jupyter_traceview.views.timeline.layout import LaneInfo, RowInfo
from tests.typescript import ROOT, py_keys, py_types, ts_interfaces, ts_types

TS = ts_interfaces(ROOT / "js" / "timeline" / "messages.ts")
TS_TYPES = ts_types(ROOT / "js" / "timeline" / "messages.ts")
TYPED = [n for n in messages.__all__ if isinstance(getattr(messages, n), type)]


def test_the_parser_reads_the_model() -> None:
    assert TS["EventDetails"]["rank"] is False and TS["EventDetails"]["grid"] is True
    assert TS["SelectedEvent"] == {"rank": True, "eid": True}


@pytest.mark.parametrize("name", TYPED)
def test_typed_dict_matches_the_typescript_interface(name: str) -> None:
    assert name in TS, f"js/timeline/messages.ts has no interface {name}"
    assert py_keys(getattr(messages, name)) == TS[name]


@pytest.mark.parametrize("name", TYPED)
def test_typed_dict_value_types_match_the_typescript(name: str) -> None:
    """Each key's value has the same type on both sides (tests/typescript.py: py_types, ts_types)."""
    assert py_types(getattr(messages, name)) == TS_TYPES[name]


def test_absolute_ns_are_strings() -> None:
    """One representation of absolute ns in every protocol: a string (exact in JavaScript)."""
    assert TS_TYPES["TimelineModel"]["_t0_ns"] == TS_TYPES["EventDetails"]["start_ns"] == "string"


@pytest.mark.parametrize(("info", "message"), [(RowInfo, messages.RowMeta), (LaneInfo, messages.LaneMeta)])
def test_the_index_dataclasses_name_their_messages_fields(info: type, message: type) -> None:
    """``message_of`` copies a row's or lane's fields by name: both sides name the same ones."""
    assert {f.name for f in dataclasses.fields(info)} == set(typing.get_type_hints(message))


def test_every_interface_is_typed() -> None:
    """Every interface of messages.ts has its TypedDict: a shape added on one side only fails here."""
    assert set(TS) == set(TYPED)


def keys(td: type) -> tuple[set[str], set[str]]:
    """(required keys, all keys) of a TypedDict."""
    return set(td.__required_keys__), set(typing.get_type_hints(td))  # type: ignore[attr-defined]


def conforms(value: object, td: type) -> None:
    assert isinstance(value, dict)
    required, every = keys(td)
    assert required <= set(value) <= every, (td.__name__, sorted(set(value) ^ required))


@pytest.fixture(scope="module")
def index(dlrm: Trace) -> TimelineIndex:
    return TimelineIndex.of(dlrm)


def test_the_state_has_the_typed_keys(dlrm: Trace, index: TimelineIndex) -> None:
    state = protocol.timeline_state(dlrm, index)
    conforms(state, messages.TimelineModel)
    conforms(state["_palette"], messages.Palette)
    conforms(state["_palette"]["kinds"][0], messages.PaletteKind)
    conforms(state["_rows"][0], messages.RowMeta)
    conforms(state["_lanes"][0], messages.LaneMeta)
    conforms(state["_steps"][0], messages.StepMark)


def test_the_answers_have_the_typed_keys(dlrm: Trace, index: TimelineIndex) -> None:
    rank = dlrm.ranks[0]
    rows = [r.id for r in index.rows if r.rank == rank]
    hi = float(index.end_ns)
    meta, buffers = protocol.answer(
        index,
        "_window",
        {"seq": 3, "lo": 0, "hi": hi, "width": 200, "rows": rows, "summaries": [rank], "pattern": "gemm"},
    )
    conforms(meta, messages.WindowResponseMeta)
    assert meta["seq"] == 3 and "name_match" in meta and len(buffers) == 1
    for s in meta["rows"]:
        conforms(s, messages.RowSlice)
    conforms(meta["summaries"][0], messages.SummarySlice)

    # The first kernel, and an event with a launch and an operator.
    ev = dlrm.rank_data(rank).events
    kernel = int(ev.loc[ev["launch_eid"] >= 0, "eid"].iloc[0])
    details, _ = protocol.answer(index, "_details", {"rank": rank, "eid": kernel})
    conforms(details, messages.EventDetails)
    conforms(details["launch"], messages.LaunchInfo)

    found, _ = protocol.answer(index, "_find", {"pattern": "gemm", "t": -1, "direction": 1, "rows": rows})
    conforms(found, messages.FindResult)
    assert found["found"] is True
    assert set(found) == set(typing.get_type_hints(messages.FindResult))

    summary, _ = protocol.answer(index, "_summary", {"lo": 0, "hi": hi, "ranks": [rank]})
    conforms(summary, messages.RangeSummary)
    conforms(summary["all"], messages.BusyTotal)
    conforms(summary["kinds"][0], messages.KindBusy)
    conforms(summary["top"][0], messages.TopName)


def test_errors_have_the_typed_keys(index: TimelineIndex) -> None:
    err, _ = protocol.answer(index, "_window", {"seq": 5, "lo": "x", "hi": 1, "width": 10})
    assert err == {"seq": 5, "error": err["error"]}
    conforms(err, messages.WindowError)
    for command, msg in [("_details", {"rank": 10**6, "eid": 0}), ("_find", {}), ("_summary", {"lo": 1})]:
        err, _ = protocol.answer(index, command, msg)
        conforms(err, messages.CommandError)
