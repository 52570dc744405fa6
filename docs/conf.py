"""Sphinx configuration of the documentation site: `bash scripts/docs.sh` -> docs/_build/html.

Why Sphinx (see docs/about.md): the docstrings are numpydoc, which Sphinx renders as written
(numpydoc, autodoc, autosummary: a page per public name); the chapters stay Markdown (MyST);
the example notebooks are executed at build time by myst-nb; the CLI page comes from its
argparse parser (sphinx-argparse); furo bundles its own assets, so the site reads offline.

Before Sphinx reads the sources this file writes what is generated (all gitignored):
docs/api/*.md, one page per topic group of docs/api_groups.py, and docs/examples/, the
notebooks of examples/ (stored without outputs; executed here, unless the tests have just
executed them: see ``_examples``).
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # the checkout's package, whatever is installed
sys.path.insert(0, str(DOCS))

import api_groups  # noqa: E402  (docs/api_groups.py)

import jupyter_traceview  # noqa: E402

project = "jupyter_traceview"
author = "jupyter_traceview developers"
copyright = "jupyter_traceview developers"
release = jupyter_traceview.__version__
version = release

extensions = [
    "myst_nb",  # MyST Markdown (myst-parser) and executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinxarg.ext",
]

# .rst first: autosummary writes its generated pages (reStructuredText) with the first suffix.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "api_groups.py", "**/.ipynb_checkpoints", "**/traceview-runs"]
templates_path = ["_templates"]

# The site is read offline: no CDN anywhere. furo bundles its CSS, JS and fonts; no page has
# math (scripts/check_links.py fails the build on any script or stylesheet from the network).
html_theme = "furo"
html_title = f"jupyter_traceview {release}"
html_static_path: list[str] = []
html_show_sourcelink = False

# MyST: Markdown chapters, heading anchors for links such as semantics.md#idle-time.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4

# The API reference: a page per name, from its numpydoc docstring.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # the signature shows them; numpydoc's Parameters describe them
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Notebooks: executed at build time, in a temporary folder (they write run folders), each
# failure an error. Widget outputs show their text/HTML form: no widget manager from a CDN.
nb_execution_mode = "force"
nb_execution_in_temp = True
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_merge_streams = True


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (an unchanged page is not rebuilt)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _group_page(group: api_groups.Group) -> str:
    lines = [f"# {group.title}", "", group.intro, ""]
    documented = [n for n in group.names if not n.startswith("__")]
    if documented:
        lines += [
            "```{eval-rst}",
            ".. currentmodule:: jupyter_traceview",
            "",
            ".. autosummary::",
            "   :toctree: generated",
            "   :nosignatures:",
            "",
            *(f"   {name}" for name in documented),
            "```",
            "",
        ]
    for name in group.names:
        if name == "__version__":
            lines += [
                "```{py:data} jupyter_traceview.__version__",
                "",
                "The installed version (a string such as `"
                + jupyter_traceview.__version__
                + "`); `traceview --version` prints it with the compiled extensions' state.",
                "```",
                "",
            ]
    if group.slug == "cli":
        lines += [
            "```{eval-rst}",
            ".. argparse::",
            "   :module: jupyter_traceview.cli",
            "   :func: _parser",
            "   :prog: traceview",
            "```",
            "",
        ]
    return "\n".join(lines)


def _api_pages() -> None:
    groups = (*api_groups.GROUPS, api_groups.CLI)
    for group in groups:
        _write_if_changed(DOCS / "api" / f"{group.slug}.md", _group_page(group))
    index = [
        "# API reference",
        "",
        "Every public name of `tv.` (`import jupyter_traceview as tv`), by topic, each on a page "
        "of its own generated from its docstring: what it computes, its options, and every "
        "column it returns with its unit (`*_ns` nanoseconds, `*_pct` percent, `*_bytes`).",
        "",
        "```{toctree}",
        ":maxdepth: 2",
        "",
        *(group.slug for group in groups),
        "```",
        "",
    ]
    _write_if_changed(DOCS / "api" / "index.md", "\n".join(index))


def _same_cells(a: Path, b: Path) -> bool:
    """Whether two notebooks hold the same cells (types and sources; outputs aside)."""
    cells = [
        [(c["cell_type"], "".join(c["source"])) for c in json.loads(p.read_text("utf-8"))["cells"]] for p in (a, b)
    ]
    return cells[0] == cells[1]


def _examples() -> list[str]:
    """Copy examples/*.ipynb to docs/examples/ (Sphinx reads sources under docs/ only).

    Where ``TRACEVIEW_EXECUTED_EXAMPLES`` names a folder holding a notebook as
    tests/test_examples.py executed it (and checked it) with the same cells, that copy, with
    its outputs, is shown instead of executing the notebook again (scripts/test.sh runs the
    tests before the site); returns those notebooks' names, for ``nb_execution_excludepatterns``.
    """
    target = DOCS / "examples"
    target.mkdir(exist_ok=True)
    wanted = {p.name: p for p in sorted((ROOT / "examples").glob("*.ipynb"))}
    for stale in target.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    executed = os.environ.get("TRACEVIEW_EXECUTED_EXAMPLES")
    reused = []
    for name, source in wanted.items():
        ran = Path(executed) / name if executed else None
        if ran is not None and ran.is_file() and _same_cells(source, ran):
            source = ran
            reused.append(f"examples/{name}")
        copy = target / name
        if not copy.exists() or not filecmp.cmp(source, copy, shallow=False):
            shutil.copyfile(source, copy)
    return reused


#: A column of a Returns section: ``name : type`` (or ``a, b : type``), nested in its description.
_COLUMN = re.compile(r"^(?P<indent> +)[\w*`.]+(?:, [\w*`.]+)* : \S")


def _columns_as_definitions(app: object, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """Give each column line of a Returns/Yields section that has no description an empty one.

    The docstrings list a DataFrame's columns as ``name : type`` lines, each with an indented
    description where one is needed (``rank : int`` has none). reStructuredText reads such a
    list as definitions only when every term has one, so a bare line gets an empty comment
    (``..``) as its description: the text shown is the docstring's, unchanged.
    """
    section = None
    out: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not line.startswith(" ") and following.strip() and set(following.strip()) == {"-"}:
            section = line.strip()
        out.append(line)
        match = _COLUMN.match(line) if section in ("Returns", "Yields") else None
        if match:
            indent = len(match.group("indent"))
            if not following.strip() or len(following) - len(following.lstrip()) <= indent:
                out += [" " * (indent + 4) + "..", ""]
    lines[:] = out


def setup(app: object) -> None:
    # Before numpydoc (priority 500) turns the sections into reStructuredText.
    app.connect("autodoc-process-docstring", _columns_as_definitions, priority=400)  # type: ignore[attr-defined]


_api_pages()
# Notebooks the tests have just executed are shown as they ran there; the others execute here.
nb_execution_excludepatterns = _examples()
# The notebooks' kernels import the checkout's package too.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
