"""traceview compare: the verdict as an exit status (a CI gate), the Markdown summary, run names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_traceview.cli import main
from tests.analysis.test_compare import write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``base`` and ``same`` (identical steps of 1000 us) and ``slow`` (steps of 1200 us: +20 %),
    also as named runs under ``traceview-runs/train/<timestamp>``."""
    d = tmp_path_factory.mktemp("runs")
    write_run(d / "base", steps=4, dur=1000, gemm_us=300, gemm_name="g")
    write_run(d / "same", steps=4, dur=1000, gemm_us=300, gemm_name="g")
    write_run(d / "slow", steps=4, dur=1200, gemm_us=500, gemm_name="g")
    write_run(d / "traceview-runs" / "train" / "20261207-101500", steps=4, dur=1000, gemm_us=300, gemm_name="g")
    write_run(d / "traceview-runs" / "train" / "20261207-101500-2", steps=4, dur=1200, gemm_us=500, gemm_name="g")
    return d


def _main(*args: str | Path) -> int:
    return main(["compare", *(str(a) for a in args), "--no-cache"])


def test_exit_status_is_the_gate(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(runs / "base", runs / "slow") == 1
    out = capsys.readouterr().out
    assert out.startswith("slower: mean step 1 ms -> 1.2 ms (+200 us, +20.0%)")
    assert "operator aten::linear" in out
    assert _main(runs / "base", runs / "same") == 0
    assert capsys.readouterr().out.startswith("same:")
    assert _main(runs / "slow", runs / "base") == 0  # faster
    # --fail-above: slower by 20 %, so it fails above 10 % and passes at 25 %.
    assert _main(runs / "base", runs / "slow", "--fail-above", "10") == 1
    assert _main(runs / "base", runs / "slow", "--fail-above", "25") == 0


def test_bad_input_exits_2_with_one_line(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(runs / "nowhere", runs / "base") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or folder, and no run of that name" in err
    assert _main(runs / "base", runs / "slow", "--fail-above", "-3") == 2
    assert "--fail-above" in capsys.readouterr().err
    (runs / "empty.json").write_text("{")
    assert _main(runs / "empty.json", runs / "base") == 2
    assert capsys.readouterr().err.startswith("traceview: error: ")


def test_markdown_and_json(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md = tmp_path / "comment.md"
    assert _main(runs / "base", runs / "slow", "--markdown", md, "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "slower" and data["fails"] is True
    assert sum(c["delta_ns"] for c in data["causes"]) == pytest.approx(data["delta_ns"])
    lines = md.read_text().splitlines()
    assert len(lines) <= 60
    assert lines[0] == "### traceview compare: **slower** (+20.0%)"
    assert any(line.startswith("| operator aten::linear | slower |") for line in lines)


def test_run_names(runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """NAME is the run's latest timestamp folder (``-2`` after the first); NAME/TIMESTAMP one of them."""
    monkeypatch.chdir(runs)
    assert _main("train/20261207-101500", "train") == 1
    assert _main("train/20261207-101500", "train/20261207-101500") == 0
    assert _main(runs / "base", "train", "--runs", runs / "traceview-runs") == 1
    capsys.readouterr()


def test_baselines(runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """baseline set/list/rm keep names in traceview-runs/.traceview-baselines.json; compare reads them."""
    monkeypatch.chdir(runs)
    assert main(["baseline", "list"]) == 0
    assert "no baselines" in capsys.readouterr().out
    assert main(["baseline", "set", "main", "train/20261207-101500"]) == 0
    assert main(["baseline", "set", "outside", str(runs / "base")]) == 0
    capsys.readouterr()
    assert main(["baseline", "list", "--json"]) == 0
    listed = {b["name"]: b["path"] for b in json.loads(capsys.readouterr().out)}
    assert listed == {
        "main": str((runs / "traceview-runs" / "train" / "20261207-101500").resolve()),
        "outside": str((runs / "base").resolve()),
    }
    stored = json.loads((runs / "traceview-runs" / ".traceview-baselines.json").read_text())
    assert stored["baselines"]["main"]["path"] == "train/20261207-101500"  # relative: the folder may move
    assert _main("main", "train") == 1  # the slower latest run against the baseline
    assert _main("main", runs / "same") == 0
    assert main(["baseline", "rm", "main"]) == 0
    capsys.readouterr()
    assert main(["baseline", "rm", "main"]) == 2
    assert "unknown baseline 'main'" in capsys.readouterr().err
    assert main(["baseline", "set", "bad name", "train"]) == 2
    assert main(["baseline", "set", "x", "nowhere"]) == 2
    capsys.readouterr()
