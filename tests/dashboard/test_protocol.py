"""The dashboard's TypedDicts (dashboard/protocol.py) and the TypeScript interfaces they mirror
(js/dashboard/protocol.ts) name the same keys, optional on both sides or on neither."""

from __future__ import annotations

import re
import typing

import pytest

from jupyter_traceview.dashboard import protocol
from tests.typescript import ROOT, py_keys, ts_interfaces

TS = ts_interfaces(ROOT / "js" / "dashboard" / "protocol.ts")
#: TypedDicts of types written inline in TypeScript: (interface, key, the inline type's keys).
INLINE = {"TabInfo": ("DashboardPayload", "tabs", "{ id: string; label: string }[]")}


def test_the_parser_reads_interfaces() -> None:
    assert TS["LinkRequest"]["target"] is False and TS["LinkRequest"]["bin"] is True
    assert "payload" not in TS["DashboardSource"]  # a method, not a key


@pytest.mark.parametrize("name", [n for n in protocol.__all__ if n not in INLINE])
def test_typed_dict_matches_the_typescript_interface(name: str) -> None:
    assert name in TS, f"js/dashboard/protocol.ts has no interface {name}"
    assert py_keys(getattr(protocol, name)) == TS[name]


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
