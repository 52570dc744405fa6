"""The server's TypedDicts (server/messages.py) and the TypeScript interfaces they mirror
(js/labextension/messages.ts) name the same keys, optional on both sides or on neither; the
headline figures the runs list carries are typed with the keys tv.headline documents."""

from __future__ import annotations

import typing

import pytest

from jupyter_traceview.analysis.headline import HEADLINE_KEYS, figures_of, headline
from jupyter_traceview.model.display_hook import Headline, HeadlineFigures
from jupyter_traceview.model.trace import Trace
from jupyter_traceview.server import messages
from tests.typescript import ROOT, py_keys, py_types, ts_interfaces, ts_types

TS = ts_interfaces(ROOT / "js" / "labextension" / "messages.ts")
TS_TYPES = ts_types(ROOT / "js" / "labextension" / "messages.ts")
#: Answers of endpoints the sidebar does not call (GET run, GET diff): typed in Python only.
PYTHON_ONLY = {"RunPending", "DiffPending", "FrameJson", "RunData", "RunAnswer", "DiffSide", "DiffData", "DiffAnswer"}
MIRRORED = [n for n in messages.__all__ if n not in PYTHON_ONLY]


def test_the_parser_follows_extends() -> None:
    assert TS["CommandPending"]["command"] is True and TS["CommandPending"]["status"] is False


@pytest.mark.parametrize("name", MIRRORED)
def test_typed_dict_matches_the_typescript_interface(name: str) -> None:
    assert name in TS, f"js/labextension/messages.ts has no interface {name}"
    assert py_keys(getattr(messages, name)) == TS[name]


@pytest.mark.parametrize("name", MIRRORED)
def test_typed_dict_value_types_match_the_typescript(name: str) -> None:
    assert py_types(getattr(messages, name)) == TS_TYPES[name]


def test_absolute_ns_are_strings(dlrm: Trace) -> None:
    """The runs list sends the trace's origin and window as strings, as every protocol does."""
    from jupyter_traceview.server.tasks import headline_figures

    figures = headline_figures(dlrm)
    assert figures["t0_ns"] == str(dlrm.t0_ns) and TS_TYPES["RunFigures"]["t0_ns"] == "string"
    assert figures["window"] is None or all(isinstance(t, str) for t in figures["window"])


def test_every_message_interface_is_typed() -> None:
    assert set(TS) == set(MIRRORED)
    assert set(messages.__all__) >= PYTHON_ONLY


def test_the_headline_is_typed_with_its_documented_keys(dlrm: Trace) -> None:
    assert set(typing.get_type_hints(Headline)) == set(HEADLINE_KEYS)
    figures = figures_of(headline(dlrm))
    assert set(figures) == set(typing.get_type_hints(HeadlineFigures)) == set(HEADLINE_KEYS) - {"source"}
