"""tv.load's tqdm bar: at once with progress=True, never with False, and with None (the
default) only once a load has taken a while, so that a quick load (the CLI's) never imports tqdm."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import loader


@pytest.fixture
def bars(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """The bars the loader makes, with the keywords it made them with."""
    made: list[tuple[Any, dict[str, Any]]] = []
    real = loader._progress

    def recording(*args: Any, **kw: Any) -> Any:
        bar = real(*args, **kw)
        made.append((bar, kw))
        return bar

    monkeypatch.setattr(loader, "_progress", recording)
    return made


def _load(**kw: Any) -> None:
    tv.load(tv.sample_path(), cache=False, engine="serial", **kw)


def test_progress_true_shows_every_file(
    bars: list[tuple[Any, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    _load(progress=True)
    assert [(b.n, b.total) for b, _ in bars] == [(8, 8)]
    assert "loading traces" in capsys.readouterr().err


def test_progress_false_shows_nothing(
    bars: list[tuple[Any, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    _load(progress=False)
    assert bars == []
    assert "loading traces" not in capsys.readouterr().err


def test_a_quick_default_load_makes_no_bar(bars: list[tuple[Any, dict[str, Any]]]) -> None:
    _load(progress=None)  # the sample loads in well under BAR_DELAY_S
    assert bars == []


def test_default_bar_appears_once_the_load_has_taken_a_while(
    bars: list[tuple[Any, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The clock ticks a second a call: the bar is due 2.5 s after the load started, at the
    # third file, and starts there, counting the two files read before it.
    ticks = iter(range(1000))
    monkeypatch.setattr(loader, "_clock", lambda: float(next(ticks)))
    monkeypatch.setattr(loader, "BAR_DELAY_S", 2.5)
    _load(progress=None)
    assert [(b.n, b.total, kw.get("initial")) for b, kw in bars] == [(8, 8, 2)]
    assert "loading traces" in capsys.readouterr().err


def test_a_quick_default_load_does_not_import_tqdm() -> None:
    code = "import sys, jupyter_traceview as tv\ntv.load(tv.sample_path(), cache=False)\nprint('tqdm' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "False", out.stderr
