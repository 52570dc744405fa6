"""Project-level rules: the schema is documented, layers point one way, the lower layers are typed strictly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_traceview.model import schema

ROOT = Path(__file__).resolve().parents[1]


def test_every_schema_column_is_documented() -> None:
    doc = (ROOT / "docs" / "schema.md").read_text()
    for table in (
        schema.EVENT_COLUMNS,
        schema.GPU_ARGS_COLUMNS,
        schema.COMMS_COLUMNS,
        schema.OP_ARGS_COLUMNS,
        schema.MEMORY_COLUMNS,
        schema.COUNTER_COLUMNS,
    ):
        for col in table:
            assert f"`{col.name}`" in doc, f"docs/schema.md does not describe column {col.name}"
    for kind in schema.EventKind:
        assert f"`{kind.value}`" in doc, f"docs/schema.md does not describe kind {kind.value}"


def test_analysis_layer_imports_no_ui() -> None:
    code = (
        "import sys, jupyter_traceview, jupyter_traceview.analysis; "
        "bad = [m for m in ('bokeh', 'anywidget', 'ipywidgets', 'IPython') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the trace model or analyses import UI packages: {out.stdout}"


def _pyproject() -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def test_mypy_checks_the_lower_layers_strictly_at_the_lowest_python() -> None:
    """The model, loading, analysis and views layers are checked with exactly ``mypy --strict``'s
    per-module flags (an override: mypy applies ``strict = true`` to the whole run), at the
    lowest Python version the package supports."""
    pytest.importorskip("mypy")
    from mypy.main import process_options
    from mypy.options import PER_MODULE_OPTIONS

    conf = _pyproject()
    mypy_conf = conf["tool"]["mypy"]
    assert conf["project"]["requires-python"] == f">={mypy_conf['python_version']}"
    _, strict = process_options(["--config-file=", "--strict", "-c", "pass"])
    _, plain = process_options(["--config-file=", "-c", "pass"])
    strict_flags = {k: getattr(strict, k) for k in PER_MODULE_OPTIONS if getattr(strict, k) != getattr(plain, k)}
    assert len(strict_flags) >= 10  # what --strict turns on, per module
    (override,) = [o for o in mypy_conf["overrides"] if "jupyter_traceview.model" in o["module"]]
    for layer in ("model", "loading", "analysis", "views"):
        assert {f"jupyter_traceview.{layer}", f"jupyter_traceview.{layer}.*"} <= set(override["module"])
    assert {k: v for k, v in override.items() if k != "module"} == strict_flags
