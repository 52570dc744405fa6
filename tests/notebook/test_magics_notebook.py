"""%%traceprofile in a real kernel: a notebook executed headless with nbclient (CPU PyTorch).

The same cell run in JupyterLab, seeing the inline view appear, is left to the Galata UI tests
(they come with the UI test infrastructure).
"""

from __future__ import annotations

import os
import re
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.notebook import recording

# find_spec, not importorskip: importing torch (~3 s) at collection would cost every xdist
# worker that time, though only the worker that runs these tests needs it (in its kernel).
pytestmark = pytest.mark.skipif(find_spec("torch") is None, reason="torch is not installed")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "%load_ext jupyter_traceview",
    """\
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
steps_run = 0""",
    """\
%%traceprofile --repeat 3 --warmup 1 -o tr
opt.zero_grad()
loss = torch.nn.functional.cross_entropy(model(x), y)
loss.backward()
opt.step()
steps_run += 1
print(f"step {steps_run}")
display({"text/plain": f"display call {steps_run}"}, raw=True)
loss.item()""",
    """\
import jupyter_traceview as tv
ev = tr.events(0)
s = tv.analysis.summary(tr)
assert steps_run == 4, steps_run
assert tr.iterations["step"].tolist() == [1, 2, 3]
assert (ev["kind"] == "cpu_op").sum() > 50
assert {"aten::addmm", "aten::cross_entropy_loss"} <= set(ev["name"].astype(str))
assert int(s.loc[0, "iterations"]) == 3
print("checked", len(ev))""",
    "%traceview",
    """\
%%traceprofile --no-show -o awaited_trace
import asyncio
await asyncio.sleep(0.01)
awaited = 6
awaited * 7""",
    "assert len(awaited_trace.iterations) == 1",
    "%%traceprofile --repeat 2 --name failing\nz = torch.ones(3)\nraise KeyError('gone')",
]


def _text(outputs: list[Any]) -> str:
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream":
            parts.append(o["text"])
        elif "data" in o:
            parts.append(o["data"].get("text/html", "") + o["data"].get("text/plain", ""))
        elif o.get("output_type") == "error":
            parts.append("\n".join(o["traceback"]))
    return "\n".join(parts)


@pytest.mark.slow
def test_notebook_training_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    profiled = nb.cells[2].outputs
    text = _text(profiled)
    assert [ln for ln in text.splitlines() if ln.startswith("step ")] == [f"step {k}" for k in range(1, 5)]
    # The last expression's value is the cell's execute_result, as without the magic.
    results = [o for o in profiled if o["output_type"] == "execute_result"]
    assert len(results) == 1 and float(results[0]["data"]["text/plain"]) > 0
    assert "traceview: saved to traceview-runs/" in text
    assert "jp-traceview-summary" in text  # the inline view: the trace's rich summary ...
    assert "gpu_busy_pct" in text  # ... and the summary table
    assert "checked" in _text(nb.cells[3].outputs)
    assert "jp-traceview-summary" in _text(nb.cells[4].outputs)  # %traceview: the latest run
    assert "display call 4" in text  # display() calls inside the cell appear
    # Top-level await runs on the kernel's event loop; the value is shown as usual.
    awaited = [o for o in nb.cells[5].outputs if o["output_type"] == "execute_result"]
    assert [o["data"]["text/plain"] for o in awaited] == ["42"]
    assert all(o["output_type"] != "error" for c in nb.cells[:-1] for o in c.outputs)

    # A failing cell: the partial trace's path first, then the original exception.
    failing = nb.cells[-1].outputs
    assert failing[-1]["output_type"] == "error" and failing[-1]["ename"] == "KeyError"
    # The traceback names the cell that ran (IPython 9 counts the next cell before running one).
    number = nb.cells[-1]["execution_count"]
    frames = re.findall(r"Cell In\[(\d+)\]", re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(failing[-1]["traceback"])))
    assert frames and set(frames) == {str(number)}, (frames, number)
    assert "partial trace saved to traceview-runs/failing/" in _text(failing[:-1])
    (failed_dir,) = (tmp_path / "traceview-runs" / "failing").iterdir()
    assert recording.read_run_record(failed_dir)["status"] == "error"
    assert tv.load(failed_dir, cache=False).iterations["step"].tolist() == [0]

    (run_dir,) = [p for p in (tmp_path / "traceview-runs" / "model").glob("*") if p.is_dir()]
    trace = tv.load(run_dir, cache=False)
    assert trace.iterations["step"].tolist() == [1, 2, 3]
    rec = recording.read_run_record(run_dir)
    assert rec["status"] == "ok" and rec["headline"]["iterations"] == 3
    assert "cross_entropy" in rec["source"]
