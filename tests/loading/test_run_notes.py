"""What a load leaves out travels with the trace: skipped files and the run's status (issue 38)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview import format as fmt
from jupyter_traceview.loading.run_notes import RUN_RECORD, run_status_of


def _run_folder(tmp_path: Path, *, truncate: bool = True, status: str | None = None) -> Path:
    """Three ranks of the sample, the third truncated; a run record with ``status`` if given."""
    src = Path(tv.sample_path())
    folder = tmp_path / "run"
    folder.mkdir()
    files = sorted(p for p in src.iterdir() if p.name.endswith(".json.gz"))[:3]
    for f in files:
        shutil.copy(f, folder / f.name)
    if truncate:
        (folder / files[2].name).write_bytes(files[2].read_bytes()[:1000])
    if status is not None:
        (folder / RUN_RECORD).write_text(json.dumps({"format": "jupyter_traceview.run/1", "status": status}))
    return folder


def _load(folder: Path, **kw: object) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(folder, on_error="skip", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("cache", [False, True])
def test_skipped_file_in_headline_and_narrowings(tmp_path: Path, cache: bool) -> None:
    folder = _run_folder(tmp_path)
    kw: dict[str, object] = {} if cache else {"cache": False}
    for _ in range(2 if cache else 1):  # with the cache: cold, then warm
        trace = _load(folder, **kw)
        (skipped,) = tv.headline(trace)["skipped_files"]
        assert skipped["path"].endswith(sorted(p.name for p in folder.iterdir())[2])
        assert "truncated" in skipped["reason"]
        assert trace.ranks == (0, 1)
    # Narrowed, re-classified, aligned: the trace still says what it lacks.
    for derived in (trace.select(ranks=[0]), trace.select(iterations=[10]), tv.align_clocks(trace)):
        assert tv.headline(derived)["skipped_files"] == [skipped]


def test_skipped_file_shown_on_every_text_surface(tmp_path: Path) -> None:
    trace = _load(_run_folder(tmp_path))
    h = tv.headline(trace)
    label, value, hint = fmt.headline_items(h)[0]
    assert label == "skipped" and value.startswith("1 trace file not read (") and "truncated" in hint
    assert "skipped: 1 trace file not read" in repr(trace)
    assert "1 trace file not read" in trace._repr_html_()


def test_complete_trace_has_no_warning(dlrm: tv.Trace) -> None:
    h = tv.headline(dlrm)
    assert h["skipped_files"] == [] and h["run_status"] == "ok"
    assert fmt.headline_warnings(h) == []


@pytest.mark.parametrize("status", ["ok", "error", "interrupted"])
def test_run_status_from_the_run_record(tmp_path: Path, status: str) -> None:
    folder = _run_folder(tmp_path, truncate=False, status=status)
    trace = _load(folder, cache=False)
    assert tv.headline(trace)["run_status"] == status
    assert tv.headline(trace.select(ranks=[1]))["run_status"] == status
    # One file of the run folder: the same run.
    one = _load(next(p for p in folder.iterdir() if p.name.endswith(".gz")), cache=False)
    assert one.run_status == status
    labels = [label for label, _, _ in fmt.headline_items(tv.headline(trace))]
    assert ("run" in labels) == (status != "ok")


def test_run_status_without_a_readable_record(tmp_path: Path) -> None:
    assert run_status_of(None) == "ok"
    assert run_status_of(tmp_path) == "ok"
    (tmp_path / RUN_RECORD).write_text("{not json")
    assert run_status_of(tmp_path) == "ok"
    (tmp_path / RUN_RECORD).write_text(json.dumps({"status": "exploded"}))
    assert run_status_of(tmp_path) == "ok"
    (tmp_path / RUN_RECORD).write_text(json.dumps({"status": "interrupted"}))
    assert run_status_of(tmp_path) == "interrupted"


def test_dask_engine_carries_the_notes(tmp_path: Path, dask_client: object) -> None:
    folder = _run_folder(tmp_path, status="error")
    trace = _load(folder, cache=False, engine="dask", client=dask_client)
    h = tv.headline(trace)
    assert len(h["skipped_files"]) == 1 and h["run_status"] == "error"
    assert tv.headline(trace.select(ranks=[0]))["run_status"] == "error"


def test_cli_summary_says_what_was_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_traceview.cli import main

    folder = _run_folder(tmp_path, status="error")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        assert main(["summary", str(folder), "--skip-bad", "--no-cache"]) == 0
    out = capsys.readouterr().out
    lines = [ln.split(None, 1) for ln in out.splitlines() if ln.startswith(("skipped ", "run "))]
    assert [ln[0] for ln in lines] == ["skipped", "run"]
    assert lines[0][1].startswith("1 trace file not read (") and "truncated" in lines[0][1]
    assert lines[1][1].startswith("partial (cell raised)")
