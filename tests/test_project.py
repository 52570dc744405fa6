"""Project-level rules: the schema is documented, layers point one way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
