"""The traceview command: tables, JSON, one-line errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from jupyter_traceview import format as fmt
from jupyter_traceview.cli import main
from tests.conftest import KINETO_FOLDERS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jupyter_traceview", *args], capture_output=True, text=True)


def test_summary_sample_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--sample", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "8 rank(s)" in out
    lines = out.splitlines()
    assert lines[1].split()[:3] == ["rank", "events", "kernels"]
    assert [line.split()[0] for line in lines[3:11]] == [str(r) for r in range(8)]
    assert lines[11] == ""  # then the headline figures
    # The workload verdict (tv.workload) and its evidence, as every surface shows it.
    workload = next(line for line in lines if line.startswith("workload"))
    assert workload.split()[1] == "training"
    assert "97 backward operators" in workload and "Optimizer.step#Adagrad.step" in workload


def test_summary_of_a_capture_says_graph_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests import kineto_builder as kb

    events = [
        *kb.launch("volta_sgemm_128x64_nn", 0, 10, 50, corr=1),
        kb.runtime("cudaStreamBeginCapture", 100, 5, corr=2),
        kb.runtime("cudaStreamEndCapture", 110, 5, corr=3),
        kb.runtime("cudaGraphInstantiate", 120, 50, corr=4),
    ]
    path = kb.write(tmp_path / "capture.json", kb.doc(events))
    assert main(["summary", str(path), "--no-cache"]) == 0
    workload = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("workload"))
    assert workload.split()[1] == "graph_capture"
    assert "1 stream capture begin and 1 end calls, 1 graph instantiations" in workload


def test_summary_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(KINETO_FOLDERS["hta_dlrm_2of128_ranks"]), "--json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    assert data["ranks"][0]["kernels"] == 1154
    assert 0 < data["ranks"][0]["gpu_busy_pct"] <= 100


@pytest.mark.parametrize("name", sorted(KINETO_FOLDERS))
def test_summary_works_on_every_real_folder(name: str) -> None:
    proc = run("summary", str(KINETO_FOLDERS[name]), "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert "rank" in proc.stdout


def test_cpu_only_json_has_null_busy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(KINETO_FOLDERS["hta_cpu_only"]), "--json", "--no-cache"]) == 0
    row = json.loads(capsys.readouterr().out)["ranks"][0]
    assert row["gpu_busy_pct"] is None and row["kernels"] == 0


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda p: p / "missing", "no such file or folder"),
        (lambda p: p, "empty"),
        (lambda p: (p / "x.json").write_text("{") and p / "x.json", "truncated"),
        (lambda p: (p / "x.json.gz").write_bytes(b"\x1f\x8b\x08\x00garbage") and p / "x.json.gz", "gzip"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path: Path, setup, words: str) -> None:
    target = setup(tmp_path)
    proc = run("summary", str(target), "--no-cache")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("traceview: error:") and words in err[0]


def test_no_command_prints_help() -> None:
    proc = run()
    assert proc.returncode == 2 and "summary" in proc.stdout


def test_entry_point_installed() -> None:
    import shutil

    exe = shutil.which("traceview")
    assert exe is not None, "the traceview command is not installed (pip install -e . installs it)"
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("traceview ")


def test_findings_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--sample", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "8 rank(s), 8 finding(s)" in out
    # Ranked by what fixing each saves per step (tv.what_if), then by time at stake.
    assert "1. [low] Blocking host calls: the GPU idles 805 us after synchronisations on rank 3" in out
    assert "4. [high] Ranks wait for late peers in collectives" in out
    assert "   collective_wait: 11.1 ms at stake (56.2% of the job span); ranks 0-7" in out
    assert "Rule: " in out and "More: tv." in out


def test_findings_text_says_what_fixing_each_buys(
    capsys: pytest.CaptureFixture[str], dlrm_findings: pd.DataFrame
) -> None:
    """Under a finding's stake, "fix this: ~X/step (Y%), assuming <change>" from its what-if columns."""
    import textwrap

    assert main(["findings", "--sample", "--no-cache"]) == 0
    out = capsys.readouterr().out
    found = dlrm_findings
    lines = [fmt.saving(r["saving_ns"], r["saving_pct"], r["change"]) for r in found.to_dict(orient="records")]
    assert any(lines), "the sample has findings with a saving"
    for line in lines:
        if line:
            assert textwrap.fill(line, width=100, initial_indent="   ", subsequent_indent="   ") in out
    assert out.count("fix this: ~") == sum(bool(x) for x in lines)


def test_findings_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--sample", "--json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    order = [(-f["saving_ns"], -f["time_at_stake_ns"]) for f in data["findings"]]
    assert order == sorted(order) and order[0][0] < 0  # by saving, then time at stake
    assert {"saving_ns", "saving_pct", "change"} <= set(data["findings"][0])
    straggler = next(f for f in data["findings"] if f["id"] == "straggler")
    assert straggler["ranks"] == [7] and straggler["evidence"]["last_count"] == 5


def test_findings_cpu_only_and_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A CPU-only trace: a warning that the GPU rules have nothing to look at; findings about the host.
    assert main(["findings", str(KINETO_FOLDERS["hta_cpu_only"]), "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "Where the CPU time goes" in captured.out and "no GPU work" in captured.err
    proc = run("findings", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "no such file or folder" in proc.stderr


def test_quiet_and_json_turn_the_loaders_progress_bar_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The progress bar appears on stderr when a load takes over a second; with -q (or --json)
    # stderr must hold only the one-line error, however slow the machine is.
    import jupyter_traceview.loading.loader as loader

    seen: list[object] = []

    def fake_load(path: object, **kwargs: object) -> object:
        seen.append(kwargs.get("progress"))
        raise FileNotFoundError(f"no such file or folder: {path}")

    monkeypatch.setattr(loader, "load", fake_load)
    main(["report", "--sample", "-o", str(tmp_path / "r.html"), "-q"])
    main(["summary", "--sample", "--json"])
    assert seen == [False, False]


def test_version_names_the_reader_in_use() -> None:
    env = {**os.environ, "TRACEVIEW_NATIVE": "0"}
    off = subprocess.run(
        [sys.executable, "-m", "jupyter_traceview.cli", "--version"], capture_output=True, text=True, env=env
    )
    assert off.returncode == 0, off.stderr
    assert off.stdout.startswith("traceview ")
    assert "Kineto reader: msgspec only (TRACEVIEW_NATIVE=0" in off.stdout
    assert "Interval loops: numpy only (TRACEVIEW_NATIVE=0" in off.stdout
    assert "Analysis loops: numpy only (TRACEVIEW_NATIVE=0" in off.stdout
    from jupyter_traceview.analysis import loops
    from jupyter_traceview.loading.readers.kineto import native
    from jupyter_traceview.model import intervals

    on = subprocess.run([sys.executable, "-m", "jupyter_traceview.cli", "--version"], capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    assert f"Kineto reader: {native.describe()}" in on.stdout
    assert ("C scanner (compiled)" in on.stdout) == native.AVAILABLE
    # The loops the analyses call (intervals.native, loops.native) are the ones --version names.
    assert ("Interval loops: compiled (_sweep)" in on.stdout) == (intervals.native is not None)
    assert ("Analysis loops: compiled (_loops)" in on.stdout) == (loops.native is not None)


def test_version_finds_the_analyses_loops_by_their_name_and_version() -> None:
    from jupyter_traceview.analysis import loops
    from jupyter_traceview.cli import ANALYSIS_LOOPS

    assert ANALYSIS_LOOPS == (loops.NAME, loops.VERSION)


def test_version_imports_neither_the_reader_nor_numpy_nor_pandas() -> None:
    """--version answers from readers/build.py (as the reader itself does) and finds the compiled
    loops without importing them: the same lines, quickly."""
    code = (
        "import sys\n"
        "from jupyter_traceview.cli import main\n"
        "try:\n    main(['--version'])\n"
        "except SystemExit:\n    pass\n"
        "heavy = ('numpy', 'pandas', 'pyarrow', 'msgspec', 'jupyter_traceview.loading.readers.kineto.native',\n"
        "         'jupyter_traceview.model.intervals', 'jupyter_traceview.analysis')\n"
        "print('imported:', sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    from jupyter_traceview import __version__
    from jupyter_traceview.analysis import loops
    from jupyter_traceview.loading.readers.kineto import native
    from jupyter_traceview.model import sweep_build

    assert out.stdout.splitlines() == [
        f"traceview {__version__}",
        f"Kineto reader: {native.describe()}",
        f"Interval loops: {sweep_build.describe()}",
        f"Analysis loops: {loops.describe()}",
        "imported: []",
    ]


def test_running_out_of_memory_is_one_line_naming_the_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A MemoryError outside a file's reading (which says it as a TraceFormatError naming the
    file) is bad input for this machine: one line naming what was read, exit 2."""
    from jupyter_traceview import cli

    def exhausted(args: object) -> int:
        raise MemoryError

    monkeypatch.setattr(cli, "_cmd_summary", exhausted)
    assert main(["summary", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"traceview: error: {tmp_path}: ran out of memory; read fewer ranks (--ranks), a lower "
        "max_json_bytes, or use a machine with more memory"
    ]
