"""``%%traceprofile`` and ``%traceview`` driven through IPython (CPU build of PyTorch)."""

from __future__ import annotations

import gzip
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.notebook import recording

pytest.importorskip("IPython")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import ExecutionResult
from IPython.testing import globalipapp

# find_spec, not importorskip: importing torch (~3 s) at collection would cost every xdist
# worker that time, though only the worker that runs these tests needs it (in the cells).
pytestmark = pytest.mark.skipif(find_spec("torch") is None, reason="torch is not installed")


@pytest.fixture(scope="module")
def ip() -> Any:
    # The process's one test shell (started on first use: a docstring example may have started it).
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_traceview")
    return shell


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[tv.Trace]:
    """Traces passed to display.show (the inline view), in order."""
    calls: list[tv.Trace] = []
    monkeypatch.setattr("jupyter_traceview.widgets.display.show", calls.append)
    return calls


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working folder: runs land in ./traceview-runs there."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def run(ip: Any, line: str, body: str) -> ExecutionResult:
    return ip.run_cell(f"%%traceprofile {line}\n{body}".replace("%%traceprofile \n", "%%traceprofile\n"))


def only_run_dir(root: Path) -> Path:
    runs = [p for p in root.glob("*/*") if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def step_names(trace_file: Path) -> list[str]:
    with gzip.open(trace_file, "rt") as fh:
        doc = json.load(fh)
    return sorted({e["name"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")})


TRAIN = """\
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randn(8, 1)
"""

STEP = """\
opt.zero_grad()
loss = torch.nn.functional.mse_loss(model(x), y)
loss.backward()
opt.step()
"""


def test_load_ext_registers_both_magics(ip: Any) -> None:
    assert "traceprofile" in ip.magics_manager.magics["cell"]
    assert "traceview" in ip.magics_manager.magics["line"]


def test_cell_runs_as_without_the_magic(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    r = run(ip, "", "a_value = 41\nprint('hello from the cell')\na_value + 1")
    assert r.success, r.error_in_exec
    out = capsys.readouterr().out
    assert out.count("hello from the cell") == 1
    assert "Out[" in out and ": 42" in out  # the last expression is displayed like IPython does
    assert ip.user_ns["a_value"] == 41
    assert ip.user_ns["_"] == 42
    # Displayed after profiling: the value line comes before the report, the view last.
    assert out.index(": 42") < out.index("traceview: saved to")
    assert len(shown) == 1
    trace = shown[0]
    assert trace.ranks == (0,)
    assert trace.iterations["step"].tolist() == [0]


def test_kineto_progress_lines_are_filtered(ip: Any, work: Path, shown: list[tv.Trace], capfd: Any) -> None:
    r = run(ip, "--repeat 2 --warmup 1", "import sys\nprint('to stderr', file=sys.stderr)")
    assert r.success
    err = capfd.readouterr().err
    assert "USDT:" not in err and "STAGE:" not in err
    assert err.count("to stderr") == 3  # the cell's own output is untouched


def test_native_stderr_filter_passes_other_output(capfd: Any) -> None:
    import os

    with recording._native_stderr_filtered():
        os.write(2, b"USDT:2026-01-01 10:00:00 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
        os.write(2, b"a real error\n")
        os.write(2, b"STAGE:2026-01-01 10:00:00 1:1 x.cpp:51] Completed Stage: Warm Up\n")
    assert capfd.readouterr().err == "a real error\n"


def test_trailing_semicolon_hides_the_value(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    r = run(ip, "", "quiet_value = 7\nquiet_value * 6;")
    assert r.success
    assert ": 42" not in capsys.readouterr().out


def test_training_step_trace(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    ip.run_cell(TRAIN)
    r = run(ip, "--repeat 3 --warmup 2 --record-shapes --name train", STEP)
    assert r.success, r.error_in_exec
    run_dir = only_run_dir(work / "traceview-runs")
    assert run_dir.parent.name == "train"
    files = sorted(p.name for p in run_dir.iterdir())
    assert files == [recording.RUN_RECORD, "rank-0.pt.trace.json.gz"]  # no temporary file left
    trace = shown[0]
    ev = trace.events(0)
    assert (ev["kind"] == "cpu_op").sum() > 20
    assert {"aten::addmm", "aten::mse_loss"} <= set(ev["name"].astype(str))
    # Warm-up runs are not in the trace: exactly --repeat iterations, numbered after the warm-up.
    assert trace.iterations["step"].tolist() == [2, 3, 4]
    assert step_names(run_dir / "rank-0.pt.trace.json.gz") == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    s = tv.analysis.summary(trace)
    assert s.loc[0, "iterations"] == 3 and s.loc[0, "kernels"] == 0


def test_repeat_runs_the_cell_warmup_plus_repeat_times(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    ip.user_ns["runs_seen"] = 0
    r = run(ip, "--repeat 2 --warmup 3", "runs_seen += 1\nruns_seen")
    assert r.success
    assert ip.user_ns["runs_seen"] == 5  # state accumulates over warm-up and profiled runs
    assert ip.user_ns["_"] == 5  # the value of the last run is shown
    assert len(shown[0].iterations) == 2


def test_run_record(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    body = "import torch\nw = torch.ones(4, 4)\nw = w @ w"
    r = run(ip, "--repeat 2 --name rec", body)
    assert r.success
    run_dir = only_run_dir(work / "traceview-runs")
    rec = recording.read_run_record(run_dir)
    assert rec["format"] == recording.RUN_RECORD_FORMAT
    assert rec["status"] == "ok" and rec["error"] is None
    assert rec["source"] == body + "\n" or rec["source"] == body
    assert rec["name"] == "rec" and rec["title"] == "rec"  # --name names the run in lists too
    assert Path(rec["run_dir"]) == run_dir.resolve()
    assert rec["files"] == ["rank-0.pt.trace.json.gz"]
    assert rec["options"]["repeat"] == 2 and rec["options"]["warmup"] == 0
    assert rec["activities"] == ["cpu"]
    assert rec["runs_completed"] == 2 and rec["world_size"] == 1
    assert rec["torch_version"].startswith("2.")
    assert rec["headline"]["iterations"] == 2 and rec["headline"]["ranks"] == 1
    assert rec["headline"]["step_median_ns"] > 0
    assert rec["headline"]["gpu_busy_pct"] is None  # no GPU: null, not NaN (JSON has no NaN)
    assert rec["summary"][0]["rank"] == 0 and rec["summary"][0]["cpu_ops"] > 0
    assert {"started_at", "ended_at", "user", "host", "duration_s"} <= rec.keys()
    text = (run_dir / recording.RUN_RECORD).read_text()
    assert "NaN" not in text
    doc = (Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text()
    for key in [*rec, *rec["options"], *rec["headline"], *rec["summary"][0]]:
        assert f"`{key}`" in doc, f"docs/runs.md does not describe field {key}"
    # The record is hidden from tv.load: loading the run folder gives no warning.
    assert tv.load(run_dir, cache=False).ranks == (0,)
    assert recording.list_runs(work / "traceview-runs")[0]["run_dir"] == str(run_dir)


def test_default_name_comes_from_the_cell(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    ip.run_cell("def train_one_step():\n    return 3")
    assert run(ip, "", "result = train_one_step()").success
    assert only_run_dir(work / "traceview-runs").parent.name == "train_one_step"
    # Lists show the cell's first meaningful line: two cells calling one function differ.
    assert recording.read_run_record(only_run_dir(work / "traceview-runs"))["title"] == "result = train_one_step()"
    assert recording.cell_title("import torch\n\n# one step\nloss = loss_fn(a, b)\nloss.backward()") == (
        "loss = loss_fn(a, b)"
    )
    assert recording.cell_title("from x import y\n%time\n!ls\n") == "cell"
    assert len(recording.cell_title("v = " + "1" * 500)) == 120
    assert recording.cell_name("x = 1") == "cell"
    assert recording.cell_name("opt.zero_grad()\nloss = model(x)") == "model"
    assert recording.cell_name("for _ in range(3):\n    print(len(a))") == "cell"
    assert recording.cell_name("not python (") == "cell"


def test_name_and_out_options(ip: Any, work: Path, tmp_path: Path, shown: list[tv.Trace]) -> None:
    out = tmp_path / "elsewhere"
    assert run(ip, f"--out {out} --name 'my run/1'", "v = 1").success
    run_dir = only_run_dir(out)
    assert run_dir.parent.name == "my-run-1"
    assert not (work / "traceview-runs").exists()


def test_two_runs_in_one_second_get_two_folders(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    for _ in range(3):
        assert run(ip, "--name same --no-show", "v = 1").success
    assert len(list((work / "traceview-runs" / "same").iterdir())) == 3


def test_o_binds_the_trace(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    assert run(ip, "-o my_trace --no-show", "v = 2").success
    assert isinstance(ip.user_ns["my_trace"], tv.Trace)
    assert ip.user_ns["my_trace"].source.endswith("rank-0.pt.trace.json.gz")


def test_no_show_prints_one_line(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    assert run(ip, "--no-show --repeat 2", "v = 3").success
    out = capsys.readouterr().out
    assert shown == []
    lines = [ln for ln in out.splitlines() if ln.startswith("traceview:")]
    assert len(lines) == 1
    assert "ranks 1 · " in lines[0] and "iterations 2 (steps #0-1)" in lines[0]
    assert "saved to traceview-runs" in lines[0]


def test_exception_saves_partial_trace_and_propagates(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    ip.user_ns["attempt"] = 0
    body = "attempt += 1\nif attempt == 2:\n    raise ValueError('boom on run 2')\n"
    r = run(ip, "--repeat 3 -o partial", body)
    assert isinstance(r.error_in_exec, ValueError)
    assert str(r.error_in_exec) == "boom on run 2"
    captured = capsys.readouterr()
    assert (
        "raised ValueError: boom on run 2 in profiled run 2 of 3; partial trace saved to traceview-runs" in captured.err
    )
    # IPython shows the original traceback, pointing at the line of the visible cell.
    assert "ValueError" in captured.out and "boom on run 2" in captured.out
    assert "line 4" in captured.out
    # ... in the cell that ran: "Cell In[n]" names its own number, not the next cell's.
    assert set(re.findall(r"Cell In\[(\d+)\]", captured.out)) == {str(r.execution_count)}
    run_dir = only_run_dir(work / "traceview-runs")
    rec = recording.read_run_record(run_dir)
    assert rec["status"] == "error" and rec["error"] == "ValueError: boom on run 2"
    assert rec["runs_completed"] == 1
    assert rec["headline"]["run_status"] == "error"
    trace = ip.user_ns["partial"]
    assert trace.run_status == "error" and tv.headline(trace)["run_status"] == "error"
    assert tv.load(run_dir, cache=False).run_status == "error"  # from the run record
    # Run 0 completed; run 1 was recorded up to the exception.
    assert trace.iterations["step"].tolist() == [0, 1]
    assert shown == []  # no inline view for a failed cell, only the line above
    # The profiler was stopped cleanly: the next cell profiles normally.
    assert run(ip, "--no-show", "v = 4").success


def test_exception_during_warmup_records_nothing(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    r = run(ip, "--warmup 2", "raise RuntimeError('early')")
    assert isinstance(r.error_in_exec, RuntimeError)
    assert "raised RuntimeError: early in warm-up run 1 of 2; nothing was recorded" in capsys.readouterr().err
    run_dir = only_run_dir(work / "traceview-runs")
    rec = recording.read_run_record(run_dir)
    assert rec["status"] == "error" and rec["files"] == [] and rec["headline"] is None
    assert not list(run_dir.glob("*.gz"))


def test_keyboard_interrupt_keeps_what_was_recorded(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    # A process started in the background (CI) may inherit SIGINT as ignored: Python then
    # never raises KeyboardInterrupt. Install Python's own handler, as an interactive kernel has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_and_check(ip, work, capsys)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_and_check(ip: Any, work: Path, capsys: Any) -> None:
    ip.user_ns["ticks"] = 0
    body = (
        "import os, signal\nticks += 1\nif ticks == 3:\n    os.kill(os.getpid(), signal.SIGINT)\n"
        "    import time\n    time.sleep(5)\n"
    )
    r = run(ip, "--repeat 5 -o interrupted", body)
    assert isinstance(r.error_in_exec, KeyboardInterrupt)
    assert "was interrupted in profiled run 3 of 5; partial trace saved to traceview-runs" in capsys.readouterr().err
    rec = recording.read_run_record(only_run_dir(work / "traceview-runs"))
    assert rec["status"] == "interrupted" and rec["headline"]["run_status"] == "interrupted"
    assert ip.user_ns["interrupted"].iterations["step"].tolist() == [0, 1, 2]
    assert run(ip, "--no-show", "v = 5").success


def test_top_level_await(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    body = "import asyncio\nawait asyncio.sleep(0)\nawaited = 6\nawaited * 7"
    r = run(ip, "--repeat 2 -o awaited_trace", body)
    assert r.success, r.error_in_exec
    assert ip.user_ns["awaited"] == 6
    assert ": 42" in capsys.readouterr().out
    assert len(ip.user_ns["awaited_trace"].iterations) == 2


def test_top_level_await_error_propagates(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    r = run(ip, "", "import asyncio\nawait asyncio.sleep(0)\n1 / 0")
    assert isinstance(r.error_in_exec, ZeroDivisionError)
    assert recording.read_run_record(only_run_dir(work / "traceview-runs"))["status"] == "error"


def test_magics_and_shell_commands_inside_the_cell(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    r = run(ip, "--no-show", "inner = %pwd\nlisted = !echo hi")
    assert r.success, r.error_in_exec
    assert ip.user_ns["inner"] == str(work)
    assert list(ip.user_ns["listed"]) == ["hi"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--repeat 0", "repeat must be at least 1"),
        ("--warmup -1", "warmup must be 0 or more"),
        ("-o 1x", "-o takes a variable name"),
        ("--name ///", "no usable characters"),
        ("--bogus", "unrecognized arguments"),
    ],
)
def test_bad_arguments(ip: Any, work: Path, line: str, message: str, capsys: Any) -> None:
    r = run(ip, line, "never_run = 1")
    assert isinstance(r.error_in_exec, UsageError)
    assert message in str(r.error_in_exec)
    assert "never_run" not in ip.user_ns
    assert not (work / "traceview-runs").exists()


def test_uncreatable_run_folder_runs_the_cell_unprofiled(ip: Any, work: Path, capsys: Any) -> None:
    # The user's work comes first: a warning, then the cell runs once, as without the magic.
    blocker = work / "a-file"
    blocker.write_text("not a folder")
    ip.user_ns["runs_of_cell"] = 0
    r = run(ip, f"--out {blocker} --repeat 3", "runs_of_cell += 1\nruns_of_cell * 10")
    assert r.success and r.result == 10
    assert ip.user_ns["runs_of_cell"] == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot create a run folder in" in err[0] and "without profiling" in err[0]
    assert blocker.read_text() == "not a folder"


def test_run_folder_on_a_full_disk_runs_the_cell_unprofiled(
    ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import errno

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(recording, "new_run_dir", full)
    r = run(ip, "", "ran_on_full_disk = 1")
    assert r.success and ip.user_ns["ran_on_full_disk"] == 1
    assert "disk full (ENOSPC)" in capsys.readouterr().err


def test_full_disk_while_saving_cleans_up_and_says_so(
    ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, shown: list[tv.Trace]
) -> None:
    import errno

    import torch

    def export_on_full_disk(self: Any, path: str) -> None:
        # What Kineto does on a full disk: a half-written "<path>.tmp", then a failed rename.
        Path(path + ".tmp").write_text('{"traceEvents": [')
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", export_on_full_disk)
    monkeypatch.setattr(recording, "_FULL_BYTES", 1 << 62)  # every disk looks full
    r = run(ip, "", "saved_nothing = 1")
    assert r.success and ip.user_ns["saved_nothing"] == 1
    err = capsys.readouterr().err
    assert "could not save the trace" in err and "disk full (ENOSPC)" in err
    assert "No such file" not in err
    runs = work / "traceview-runs"
    assert [p for p in runs.rglob("*") if p.is_file()] == [], "no .tmp or .tmp.tmp left"
    assert [p for p in runs.glob("*/*")] == [], "no empty run folder left"
    assert shown == []


def test_enospc_while_compressing_cleans_up(
    ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, shown: list[tv.Trace]
) -> None:
    import errno

    def no_space(src: Path) -> Any:
        def write(fh: Any) -> None:
            fh.write(b"\x1f\x8b partial")
            raise OSError(errno.ENOSPC, "No space left on device")

        return write

    monkeypatch.setattr(recording, "_gzip_into", no_space)
    r = run(ip, "", "compressed_nothing = 1")
    assert r.success
    assert "disk full (ENOSPC)" in capsys.readouterr().err
    runs = work / "traceview-runs"
    assert [p for p in runs.rglob("*") if p.is_file()] == []
    assert [p for p in runs.glob("*/*")] == []


def test_profiler_failing_to_start_leaves_no_run(ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def refuse(self: Any) -> None:
        raise RuntimeError("profiler busy")

    monkeypatch.setattr(torch.profiler.profile, "__enter__", refuse)
    r = run(ip, "", "not_run_3 = 1")
    assert isinstance(r.error_in_exec, RuntimeError)
    assert "not_run_3" not in ip.user_ns
    assert list((work / "traceview-runs").glob("*/*")) == []


def test_syntax_error_runs_nothing(ip: Any, work: Path) -> None:
    r = run(ip, "", "x = (")
    assert isinstance(r.error_in_exec, SyntaxError)
    assert not (work / "traceview-runs").exists()


def test_without_torch(ip: Any, work: Path, monkeypatch: pytest.MonkeyPatch, shown: list[tv.Trace]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    r = run(ip, "", "untouched = 1")
    assert isinstance(r.error_in_exec, UsageError)
    assert "pip install torch" in str(r.error_in_exec)
    assert "untouched" not in ip.user_ns
    assert not (work / "traceview-runs").exists()
    # Nothing else breaks: viewing traces needs no torch.
    ip.run_line_magic("traceview", str(tv.sample_path()))
    assert shown[-1].ranks == tuple(range(8))


def test_traceview_shows_a_folder_or_file(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    ip.run_line_magic("traceview", f"{tv.sample_path()} -o dlrm_trace")
    assert shown[-1].ranks == tuple(range(8))
    assert ip.user_ns["dlrm_trace"] is shown[-1]
    one = sorted(tv.sample_path().iterdir())[0]
    ip.run_line_magic("traceview", str(one))
    assert shown[-1].ranks == (0,)


def test_traceview_without_path_shows_the_latest_run(ip: Any, work: Path, shown: list[tv.Trace]) -> None:
    assert run(ip, "--name first --no-show", "v = 1").success
    assert run(ip, "--name second --no-show --repeat 2", "v = 2").success
    ip.run_line_magic("traceview", "")
    assert "second" in (shown[-1].source or "")


def test_traceview_errors_are_one_line(ip: Any, work: Path, capsys: Any) -> None:
    r = ip.run_cell(f"%traceview {work / 'missing'}")
    assert isinstance(r.error_in_exec, UsageError)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "no such file or folder" in text
    assert "Traceback" not in text
    r = ip.run_cell("%traceview")
    assert isinstance(r.error_in_exec, UsageError)
    assert "no run under ./traceview-runs" in str(r.error_in_exec)


def test_importing_the_package_stays_light() -> None:
    code = (
        "import sys, jupyter_traceview; "
        "print(','.join(m for m in ('torch', 'IPython', 'jupyter_traceview.notebook.magics') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_write_atomic_leaves_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.json"

    def broken(fh: Any) -> None:
        fh.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        recording.write_atomic(target, broken)
    assert list(tmp_path.iterdir()) == []
    recording.write_atomic(target, lambda fh: fh.write(b"{}"))
    assert target.read_bytes() == b"{}"
    with pytest.raises(KeyboardInterrupt):
        recording.write_atomic(target, broken)
    assert target.read_bytes() == b"{}"  # the old file survives a failed rewrite
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
