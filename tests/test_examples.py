"""The example notebooks (examples/*.ipynb) run top to bottom, and are stored without outputs.

Each notebook is executed headless with nbclient in a fresh kernel, in a temporary folder (they
write run folders and reports), with the checkout's package and a private cache folder. The
site (docs/, `bash scripts/docs.sh`) shows their outputs: where ``TRACEVIEW_EXECUTED_EXAMPLES``
names a folder (scripts/test.sh sets it), each notebook that ran here and passed is written
there with its outputs, and the site shows that copy instead of executing the notebook again.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A TraceviewWarning as the kernel prints it: the warning's line, then the source line it names.
TRACEVIEW_WARNING = re.compile(r"^\S.*: TraceviewWarning: .*\n(?:  .*(?:\n|$))?", re.M)
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_are_examples() -> None:
    assert len(NOTEBOOKS) >= 6, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear the outputs"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), f"{path.name}: a title first"


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tv.load's cache for the notebooks' kernels, off the user's (shared: the sample is read once)."""
    return tmp_path_factory.mktemp("xdg_cache")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_top_to_bottom(path: Path, tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on an error
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    for cell in code:
        for out in cell.outputs:
            assert out.output_type != "error", cell.source
            if out.output_type == "stream" and out.name == "stderr":
                # Only the package's own warnings, meant for the reader (with the line echoed).
                rest = TRACEVIEW_WARNING.sub("", out.text).strip()
                assert not rest, f"{path.name}: {cell.source}\n{out.text}"
    executed = os.environ.get("TRACEVIEW_EXECUTED_EXAMPLES")
    if executed:  # for the site (docs/conf.py), once every check above has passed
        nbformat.write(nb, Path(executed) / path.name)
