"""The timeline's height trait: automatic by default, explicit when asked, remembered under the notebook's path."""

from __future__ import annotations

import pytest

import jupyter_traceview as tv
from jupyter_traceview.errors import OptionError
from jupyter_traceview.views.timeline.protocol import timeline_state
from jupyter_traceview.widgets.timeline import Timeline


def test_default_height_is_automatic_and_explicit_heights_pass(dlrm: tv.Trace) -> None:
    assert Timeline(dlrm).height == 0  # 0: the front end fits the lanes shown (js/timeline/resize.ts)
    assert Timeline(dlrm, height=300).height == 300
    with pytest.raises(OptionError, match="height"):
        timeline_state(dlrm, height=-5)


def test_height_key_is_the_notebook_path(dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    # jupyter_server starts a notebook's kernel with JPY_SESSION_NAME set to the notebook's path.
    monkeypatch.setenv("JPY_SESSION_NAME", "work/run1.ipynb")
    assert Timeline(dlrm)._height_key == "work/run1.ipynb"
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert Timeline(dlrm)._height_key == ""  # the front end uses the page's path then
    assert timeline_state(dlrm)["_height_key"] == ""
