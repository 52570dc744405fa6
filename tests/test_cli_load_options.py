"""The traceview command's load options (--ranks, --pid-map, --on-error) and its one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_traceview.cli import _parse_pid_map, _parse_ranks, main
from tests import kineto_builder as kb


def two_processes(path: Path) -> Path:
    """One file holding two ranks' processes (pids 7 and 8), without process names."""
    events = [kb.cpu_op("a", 0, 10, pid=7, tid=7), kb.cpu_op("b", 0, 20, pid=8, tid=8)]
    return kb.write(path / "merged.json", kb.doc(events))


def three_ranks(path: Path) -> Path:
    for r in (0, 1, 2):
        kb.write(path / f"rank-{r}.json", kb.doc([kb.step(1, 0, 100 * (r + 1))], rank=r, world_size=3))
    (path / "rank-3.json").write_text('{"traceEvents": [')
    return path


def summary_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert main(["summary", *args, "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pid_map_ranks_and_on_error_reach_tv_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    merged = two_processes(tmp_path / "m")
    out = summary_json(capsys, str(merged), "--pid-map", "7=3,8=4")
    assert [r["rank"] for r in out["ranks"]] == [3, 4]
    assert [r["trace_span_ns"] for r in out["ranks"]] == [10_000, 20_000]

    folder = three_ranks(tmp_path / "f")
    out = summary_json(capsys, str(folder), "--on-error", "skip")
    assert [r["rank"] for r in out["ranks"]] == [0, 1, 2]
    out = summary_json(capsys, str(folder), "--on-error", "skip", "--ranks", "0,2")
    assert [r["rank"] for r in out["ranks"]] == [0, 2]
    out = summary_json(capsys, str(folder), "--skip-bad", "--ranks", "1-2")
    assert [r["rank"] for r in out["ranks"]] == [1, 2]


def test_report_takes_the_load_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = three_ranks(tmp_path / "f")
    out = tmp_path / "r.html"
    assert main(["report", str(folder), "-o", str(out), "-q", "--on-error", "skip", "--ranks", "1", "--no-cache"]) == 0
    assert out.stat().st_size > 0
    assert main(["report", str(folder), "-o", str(out), "-q", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("traceview: error:") and "truncated" in err[-1]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--ranks", "a"], "--ranks"),
        (["--ranks", "3-1"], "--ranks"),
        (["--ranks", "0-99999999999"], "--ranks"),
        (["--ranks", "0-70000"], "more than"),
        (["--ranks", ""], "--ranks"),
        (["--pid-map", "7"], "--pid-map"),
        (["--pid-map", "7=x"], "--pid-map"),
        (["--pid-map", "=1"], "--pid-map"),
        (["--pid-map", "7=99999999999"], "--pid-map"),
        (["--on-error", "ignore"], "invalid choice"),
        (["--no-such-option"], "unrecognized"),
        (["--pid-map", "7=0"], "have no rank"),
        (["--pid-map", "7=0,8=1", "--ranks", "5"], "no rank among [5]"),
    ],
)
def test_bad_load_options_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    merged = two_processes(tmp_path)
    capsys.readouterr()
    try:
        code = main(["summary", str(merged), "--no-cache", *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceview") and "error" in lines[0] and words in lines[0], lines
    assert "Traceback" not in captured.err


def test_parsers() -> None:
    assert _parse_ranks("0, 2,4-6,2") == [0, 2, 4, 5, 6]
    assert _parse_pid_map("7=3, 8=4,host:1=2") == {7: 3, 8: 4, "host:1": 2}


def test_only_the_commands_that_run_findings_prepare_its_per_rank_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # tv.load(..., prepare=None) prepares a big load in worker processes; `summary` runs no
    # findings and does not pay for them. (`report` loads as `findings` does.)
    from jupyter_traceview.loading import loader

    seen: list[object] = []
    original = loader.load

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs.get("prepare", "missing"))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "load", spy)
    folder = three_ranks(tmp_path / "f")
    (folder / "rank-3.json").unlink()
    assert main(["summary", str(folder), "--no-cache"]) == 0
    assert main(["findings", str(folder), "--no-cache"]) == 0
    capsys.readouterr()
    assert seen == [False, None]
