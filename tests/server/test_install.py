"""The installed package enables its server extension and its JupyterLab extension.

``pip install .`` (or ``-e .``) puts ``jupyter_server_config.d/jupyter_traceview.json`` and
``share/jupyter/labextensions/jupyter_traceview`` under the environment's prefix (see
pyproject.toml's shared-data); Jupyter's own listing commands must then show both as
enabled and loadable, as a user would check.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jupyter_traceview

REPO = Path(__file__).resolve().parents[2]


def _listing(module: str) -> str:
    # The modules, not `jupyter ...`: that runs the first jupyter-* script on PATH, which may
    # belong to another environment than this interpreter's.
    out = subprocess.run(
        [sys.executable, "-m", module, "list"], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    # The listings write to stderr; colours are ANSI escapes whatever NO_COLOR says.
    return re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)


def test_server_extension_is_enabled_and_loads() -> None:
    text = _listing("jupyter_server.extension.serverextension")
    assert re.search(r"jupyter_traceview\s+enabled", text), text
    # Validated: the extension imports and its entry points load.
    assert re.search(r"jupyter_traceview\s+\S+\s+OK", text), text


def test_lab_extension_is_installed_enabled_and_ok() -> None:
    if not (Path(jupyter_traceview.__file__).parent / "labextension" / "package.json").exists():
        pytest.fail("the lab extension is not built: run `jlpm build` (or `pip install .`)")
    text = _listing("jupyterlab.labextensions")
    assert re.search(r"jupyter_traceview\s+\S+\s+enabled\s+OK", text), text


def test_install_layout_enables_both() -> None:
    # What pip installs, from the sources: the server config and the lab extension's metadata.
    config = json.loads((REPO / "jupyter-config" / "server-config" / "jupyter_traceview.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"]["jupyter_traceview"] is True
    package = json.loads((REPO / "package.json").read_text())
    assert package["jupyterlab"]["outputDir"] == "jupyter_traceview/labextension"
    assert package["jupyterlab"]["schemaDir"] == "schema"
    schema = json.loads((REPO / "schema" / "plugin.json").read_text())
    assert {"roots", "refreshInterval"} <= set(schema["properties"])
    assert "cacheDir" not in schema["properties"], "the cache folder is server configuration"
