"""The dashboard's TypedDicts (dashboard/protocol.py) and the TypeScript interfaces they mirror
(js/dashboard/protocol.ts) name the same keys, optional on both sides or on neither."""

from __future__ import annotations

import re
import typing

import pytest

from jupyter_traceview.dashboard import protocol
from tests.typescript import ROOT, py_keys, py_types, ts_interfaces, ts_types

TS = ts_interfaces(ROOT / "js" / "dashboard" / "protocol.ts")
#: TypedDicts of types written inline in TypeScript: (interface, key, the inline type's keys).
INLINE = {"TabInfo": ("DashboardPayload", "tabs", "{ id: string; label: string }[]")}
TS_TYPES = ts_types(ROOT / "js" / "dashboard" / "protocol.ts")
#: Keys whose TypeScript type is narrower than the Python annotation, and why.
NARROWER_IN_TS = {
    ("Chart", "item"): "bokeh's json_item, a mapping in Python, is typed where BokehJS reads it",
    ("Finding", "severity"): "a str in analysis/findings (tv.findings); its values, SEVERITIES, are listed in TS",
}


def test_the_parser_reads_interfaces() -> None:
    assert TS["LinkRequest"]["target"] is False and TS["LinkRequest"]["bin"] is True
    assert "payload" not in TS["DashboardSource"]  # a method, not a key


@pytest.mark.parametrize("name", [n for n in protocol.__all__ if n not in INLINE])
def test_typed_dict_matches_the_typescript_interface(name: str) -> None:
    assert name in TS, f"js/dashboard/protocol.ts has no interface {name}"
    assert py_keys(getattr(protocol, name)) == TS[name]


@pytest.mark.parametrize("name", [n for n in protocol.__all__ if n not in INLINE])
def test_typed_dict_value_types_match_the_typescript(name: str) -> None:
    py = py_types(getattr(protocol, name), frozenset(INLINE))
    ts = {k: v for k, v in TS_TYPES[name].items() if (name, k) not in NARROWER_IN_TS}
    assert {k: v for k, v in py.items() if (name, k) not in NARROWER_IN_TS} == ts


def test_narrower_typescript_types_are_still_narrower() -> None:
    from jupyter_traceview.analysis.findings import SEVERITIES

    assert TS_TYPES["Finding"]["severity"] == " | ".join(sorted(f'"{s}"' for s in SEVERITIES))
    assert TS_TYPES["Chart"]["item"].startswith("{") and py_types(protocol.Chart)["item"] == "Record<string, unknown>"


def test_absolute_ns_are_strings() -> None:
    assert TS_TYPES["DashboardPayload"]["t0_ns"] == py_types(protocol.DashboardPayload)["t0_ns"] == "string"


def test_inline_types_match() -> None:
    source = (ROOT / "js" / "dashboard" / "protocol.ts").read_text(encoding="utf-8")
    for name, (interface, key, ts_type) in INLINE.items():
        assert key in TS[interface] and f"{key}: {ts_type};" in source
        keys = re.findall(r"(\w+)(\?)?:", ts_type)
        assert py_keys(getattr(protocol, name)) == {k: bool(o) for k, o in keys}


def test_every_message_interface_is_typed() -> None:
    """Every data interface of protocol.ts has its TypedDict (DashboardSource is the host API)."""
    assert set(TS) - {"DashboardSource"} == set(protocol.__all__) - set(INLINE)


def test_the_payload_and_a_tab_have_the_typed_keys(dlrm: object) -> None:
    from jupyter_traceview.dashboard.data import DashboardData

    d = DashboardData(dlrm)  # type: ignore[arg-type]
    p = d.payload()
    assert set(p) == set(typing.get_type_hints(protocol.DashboardPayload))
    tab = d.tab("counters")
    required = protocol.TabContent.__required_keys__  # type: ignore[attr-defined]
    assert required <= set(tab) <= set(typing.get_type_hints(protocol.TabContent))
