"""The tab registry: every module of dashboard/tabs/ is a registered tab, and every tab has its module."""

from __future__ import annotations

import pkgutil

from jupyter_traceview.dashboard import tabs


def test_every_tab_module_is_registered_once() -> None:
    modules = {m.name for m in pkgutil.iter_modules(tabs.__path__)} - {"builder"}
    ids = [t.id for t in tabs.TABS]
    assert len(ids) == len(set(ids))
    assert set(ids) == modules


def test_every_tab_builds() -> None:
    for t in tabs.TABS:
        assert callable(t.build), t.id
        assert t.label
