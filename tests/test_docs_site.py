"""The documentation site's sources agree with the code (fast: no Sphinx build).

The build itself (`bash scripts/docs.sh`: Sphinx with warnings as errors, then the offline
link check) runs in scripts/test.sh; these checks catch the usual drift first.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

import jupyter_traceview as tv

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _groups_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_groups", DOCS / "api_groups.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("api_groups", module)  # NamedTuple needs its module importable
    spec.loader.exec_module(module)
    return module


groups = _groups_module()


def test_every_public_name_is_in_exactly_one_topic_group() -> None:
    listed = Counter(name for group in groups.GROUPS for name in group.names)
    public = set(tv.__all__)
    missing = sorted(public - set(listed))
    assert not missing, f"add each to a topic group of docs/api_groups.py (its page in the API reference): {missing}"
    twice = sorted(name for name, n in listed.items() if n > 1)
    assert not twice, f"listed in more than one group of docs/api_groups.py: {twice}"
    stale = sorted(set(listed) - public)
    assert not stale, f"docs/api_groups.py lists names that are not public (tv.__all__): {stale}"


def test_groups_are_the_topics() -> None:
    slugs = [g.slug for g in (*groups.GROUPS, groups.CLI)]
    assert len(slugs) == len(set(slugs))
    for topic in ("loading", "breakdowns", "communication", "host", "memory", "perfmodel", "diagnosis"):
        assert topic in slugs
    for topic in ("comparison", "widgets", "report", "cli"):
        assert topic in slugs
    assert groups.CLI.names == ()
    for group in groups.GROUPS:
        assert group.names, f"{group.slug}: an empty group"
        assert group.title and group.intro.strip(), group.slug


def test_the_landing_page_names_public_functions_and_existing_examples() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    named = set(re.findall(r"<jupyter_traceview\.(\w+)>", index))
    assert named, "the 'which function answers my question' table names no function"
    assert named <= set(tv.__all__), sorted(named - set(tv.__all__))
    linked = set(re.findall(r"\]\((examples/[\w]+\.ipynb)\)", index))
    assert linked, "the table links no example notebook"
    for notebook in linked:
        assert (ROOT / notebook).is_file(), notebook


@pytest.mark.parametrize("chapter", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_chapter_is_in_the_navigation(chapter: str) -> None:
    if chapter == "index.md":
        return
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctrees = "\n".join(re.findall(r"```\{toctree\}\n(.*?)```", index, flags=re.S))
    assert chapter.removesuffix(".md") in toctrees.split(), f"docs/{chapter}: add it to a toctree of docs/index.md"


def test_ci_builds_the_site() -> None:
    test_sh = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "bash scripts/docs.sh" in test_sh
    docs_sh = (ROOT / "scripts" / "docs.sh").read_text(encoding="utf-8")
    assert "-W --keep-going" in docs_sh and "scripts/check_links.py" in docs_sh
