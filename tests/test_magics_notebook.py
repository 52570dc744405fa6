"""%%traceprofile in a real kernel: a notebook executed headless with nbclient (CPU PyTorch)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview import recording

pytest.importorskip("torch")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]

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
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
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

    (run_dir,) = [p for p in (tmp_path / "traceview-runs").glob("*/*") if p.is_dir()]
    trace = tv.load(run_dir, cache=False)
    assert trace.iterations["step"].tolist() == [1, 2, 3]
    rec = recording.read_run_record(run_dir)
    assert rec["status"] == "ok" and rec["headline"]["iterations"] == 3
    assert "cross_entropy" in rec["source"]


@pytest.mark.slow
def test_notebook_error_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_traceview"),
        nbformat.v4.new_code_cell("%%traceprofile --repeat 2\nimport torch\nz = torch.ones(3)\nraise KeyError('gone')"),
        nbformat.v4.new_code_cell("never = 1"),
    ]
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with pytest.raises(nbclient.exceptions.CellExecutionError) as info:
        client.execute()
    assert info.value.ename == "KeyError"  # the original exception, not a wrapper
    outputs = nb.cells[1].outputs
    text = _text(outputs)
    assert "partial trace saved to traceview-runs/" in text
    kinds = [o["output_type"] for o in outputs]
    assert kinds[-1] == "error"  # the path is printed first, then the exception's traceback
    assert "partial trace saved" in _text(outputs[:-1])
    assert nb.cells[2].outputs == []  # execution stopped at the failing cell
    (run_dir,) = [p for p in (tmp_path / "traceview-runs").glob("*/*") if p.is_dir()]
    assert recording.read_run_record(run_dir)["status"] == "error"
    assert tv.load(run_dir, cache=False).iterations["step"].tolist() == [0]
