"""scripts/check_links.py: the offline check of the built site's internal links and anchors."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_links", ROOT / "scripts" / "check_links.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<html><head></head><body>{body}</body></html>", encoding="utf-8")
    return tmp_path


def test_a_sound_site_passes(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="guide.html#set-up">x</a><a href="#top" id="top">t</a>'
            '<a href="https://example.org/x.html">out</a><a href="api/">api</a>'
            '<script src="_static/a.js"></script>',
            "guide.html": '<h2 id="set-up">Set-up</h2><a href="index.html">home</a>',
            "api/index.html": '<a href="generated/f.html">f</a>',
            "api/generated/f.html": '<dl class="py function"><dt class="sig sig-object py" id="f">f()</dt></dl>',
            "_static/a.js": "",
        },
    )
    assert _checker().check(site) == []


def test_broken_links_anchors_and_remote_assets_are_reported(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<a href="missing.html">x</a><a href="guide.html#nowhere">y</a><a href="#gone">z</a>'
            '<script src="https://cdn.example.org/mathjax.js"></script>'
            '<link rel="stylesheet" href="//cdn.example.org/a.css">',
            "guide.html": "<p>no anchors</p>",
            "api/generated/empty.html": "<p>autodoc wrote nothing</p>",
        },
    )
    problems = _checker().check(site)
    assert any("missing.html: no such file" in p for p in problems)
    assert any("guide.html#nowhere: no anchor #nowhere" in p for p in problems)
    assert any("#gone: no anchor #gone" in p for p in problems)
    assert any("mathjax.js: loaded from the network" in p for p in problems)
    assert any("a.css: loaded from the network" in p for p in problems)
    assert any("empty.html: documents nothing" in p for p in problems)
    assert len(problems) == 6, problems
