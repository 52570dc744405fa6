"""The public namespace: light to import, only what users call, each name defined once."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview import analysis

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "numpy", "bokeh", "IPython", "ipywidgets", "anywidget", "traitlets", "jupyter_server")


def test_import_is_light() -> None:
    code = f"import sys, jupyter_traceview; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"import jupyter_traceview imported {out.stdout.strip()}"


def test_a_module_imported_by_name_stays_light() -> None:
    """``from jupyter_traceview import cli`` (the root's __getattr__ is asked first) imports the
    module, not the analyses: no pandas, pyarrow or numpy."""
    code = (
        "import sys; from jupyter_traceview import cli, errors, format, samples; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_a_name_imports_only_its_layer() -> None:
    code = (
        "import sys, jupyter_traceview as tv; tv.summary; "
        "print(','.join(m for m in ('bokeh', 'IPython', 'ipywidgets', 'anywidget') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_every_public_name_resolves() -> None:
    names = tv.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(tv, name) is not None, name
    assert set(names) <= set(dir(tv))
    # The analyses are analysis/__init__.py's names, each a function or class of an analysis module.
    for name in analysis.__all__:
        assert name in names
        assert getattr(analysis, name).__module__.startswith("jupyter_traceview.analysis."), name
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        tv.not_a_name  # noqa: B018


def test_internals_are_not_public() -> None:
    for internal in (
        "RankData",
        "RankMeta",
        "set_mimebundle_hook",
        "default_cache_dir",
        "DashboardData",
        "annotations",
    ):
        assert internal not in tv.__all__, internal
        assert internal not in analysis.__all__, internal


def test_type_checkers_see_the_same_names() -> None:
    """The ``if TYPE_CHECKING:`` imports of the root name exactly the names __getattr__ serves."""
    tree = ast.parse((ROOT / "jupyter_traceview" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen = {a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}
    star = "*" in seen
    assert star, "the analyses are imported with `from .analysis import *`"
    public = {*tv._PUBLIC, *tv._SUBPACKAGES}
    assert seen - {"*"} == public
