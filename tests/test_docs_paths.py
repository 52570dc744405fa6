"""Docs that do not rot: every repository path the Markdown docs name exists, and
docs/semantics.md's contents list its sections.

A path counts when it is written in backticks or as a link target and starts with one of the
repository's top folders (``jupyter_traceview/``, ``js/``, ``tests/``, ``docs/``, ...), or is
a link to a file beside the doc (``[schema.md](schema.md)``), or is a file named within the
package or the front end (``loading/pieces.py``, ``readers/_kscan.c``, ``timeline/view.ts``),
which must then be some file's path's end. A glob (``*``), a placeholder (``<folder>``,
``{name}``, ``...``) or what a script or a build writes (``benchmarks/.data/``) is not
checked; a file the benchmarks' log names as removed is listed in ``HISTORICAL``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        ROOT / "benchmarks" / "README.md",
        *list((ROOT / "docs").glob("*.md")),
    ]
)
TOP = ("jupyter_traceview/", "js/", "tests/", "docs/", "scripts/", "benchmarks/", "ui-tests/", "schema/")
#: Written by scripts, tests or builds, not kept in the repository.
GENERATED = (
    # The documentation site's build (scripts/docs.sh): its output, its generated API pages and
    # the notebooks it copies in.
    "docs/_build",
    "docs/api/",
    "docs/examples/",
    "benchmarks/.data",
    "benchmarks/.venv-hta",
    "ui-tests/artifacts",
    "jupyter_traceview/static",
    "static/",
    "jupyter_traceview/labextension",
)
#: Files that are gone, named on purpose where the benchmarks' log tells their history.
HISTORICAL = {
    "benchmarks/numba_reader.py": "the numba prototype, removed in wave 6 (in history at 1eb99da)",
    "analysis/findings/prefetch.py": "a hook tried on branch facts17-hook-experiment, not landed",
    # Moved by issue 36; the changelog says from where, the benchmarks' log measured them there.
    "js/timeline/model.ts": "renamed js/timeline/messages.ts (mirror of views/timeline/messages.py)",
    "views/timeline/counters.py": "renamed views/timeline/memory.py (the memory lanes)",
    "jupyter_traceview/loading/pieces.py": "moved into loading/readers/kineto/ (cutting.py, pieces.py)",
    "loading/pieces.py": "moved into loading/readers/kineto/ (cutting.py, pieces.py)",
    "loading/readers/batch.py": "moved to loading/readers/kineto/batch.py",
    "loading/readers/kineto.py": "split into the package loading/readers/kineto/",
    "loading/readers/native.py": "moved to loading/readers/kineto/native.py",
    "readers/native.py": "moved to loading/readers/kineto/native.py",
}
#: A file named by its path within the package or the front end: these folders' names first.
SOURCE_SUFFIXES = (".py", ".ts", ".c", ".h", ".css", ".js", ".json")

_CODE = re.compile(r"`([^`\s]+)`")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _source_files() -> list[str]:
    """Every file under jupyter_traceview/ and js/, as a path from the repository's root."""
    out = []
    for top in ("jupyter_traceview", "js"):
        for folder, dirs, names in os.walk(ROOT / top):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "__pycache__")]
            out += [(Path(folder) / n).relative_to(ROOT).as_posix() for n in names]
    return out


SOURCES = _source_files()
#: The package's and the front end's folders: a path starting with one names a source file.
FOLDERS = {part for f in SOURCES for part in f.split("/")[1:-1]}


def _candidates(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    links = _LINK.findall(text)
    found = set()
    for raw in _CODE.findall(text) + links:
        path = raw.rstrip(".,:;").split("::")[0]
        path = re.sub(r":\d+(-\d+)?$", "", path)  # file.py:120
        if "://" in raw or "..." in path or any(c in path for c in "*<>{}$"):
            continue
        short = "/" in path and path.split("/")[0] in FOLDERS and path.endswith(SOURCE_SUFFIXES)
        if path.startswith(TOP) or short or (raw in links and path.endswith(".md")):
            found.add(path)
    return found


def _exists(doc: Path, path: str) -> bool:
    if path.startswith(GENERATED) or path in HISTORICAL:
        return True
    if (ROOT / path).exists() or (doc.parent / path).exists():
        return True
    return not path.startswith(TOP) and any(f.endswith("/" + path) for f in SOURCES)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_repository_path_named_in_the_docs_exists(doc: Path) -> None:
    if not doc.exists():
        pytest.skip(f"{doc.name} is not in this checkout")
    missing = sorted(p for p in _candidates(doc) if not _exists(doc, p))
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, backticks and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_semantics_opens_with_contents_listing_every_section() -> None:
    text = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    sections = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["Contents", "Shared conventions"], (
        "semantics.md opens with its contents, then the conventions"
    )
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"\]\(#([^)]+)\)", contents)
    assert listed == [_anchor(s) for s in sections[1:]], (
        "docs/semantics.md: the contents list every ## section, in order"
    )
