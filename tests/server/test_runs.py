"""Run discovery and path safety, without a server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.server.runs import PathRefused, find_runs, resolve_run
from tests import kineto_builder as kb
from tests.conftest import DATA


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(tv.sample_path(), root / "experiments" / "dlrm")
    shutil.copytree(DATA / "hta_alexnet", root / "alexnet")
    run = root / "traceview-runs" / "cell" / "20260101-120000"
    kb.write(run / "rank-0.pt.trace.json.gz", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=0))
    (run / ".traceview-run.json").write_text('{"format": "jupyter_traceview.run/1"}')
    (root / "notes").mkdir()
    (root / "notes" / "config.json").write_text('{"lr": 0.1}')
    (root / ".hidden").mkdir()
    kb.write(root / ".hidden" / "rank-0.json", kb.doc([kb.step(1, 0, 100)]))
    (root / "node_modules" / "x").mkdir(parents=True)
    kb.write(root / "node_modules" / "x" / "rank-0.json", kb.doc([kb.step(1, 0, 100)]))
    shutil.copy(DATA / "nsys_sqlite" / "rtx3080_two_kernels.sqlite", root / "profile.sqlite")
    return root


def test_find_runs(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    os.utime(root / "alexnet" / "alexnet_trace.json.gz", (1, 1))
    runs = {r.path: r for r in find_runs(root)}
    assert set(runs) == {"experiments/dlrm", "alexnet", "traceview-runs/cell/20260101-120000", "profile.sqlite"}
    assert runs["experiments/dlrm"].kind == "folder" and len(runs["experiments/dlrm"].files) == 8
    assert runs["traceview-runs/cell/20260101-120000"].kind == "traceprofile"
    assert runs["profile.sqlite"].kind == "nsys"
    ordered = [r.path for r in find_runs(root)]
    assert ordered[-1] == "alexnet", "newest first"
    assert [r.path for r in find_runs(root, ["experiments"])] == ["experiments/dlrm"]


def test_symlinks_are_not_followed_out_of_the_root(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(DATA / "hta_triton", outside)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    assert "escape" not in {r.path for r in find_runs(root)}
    with pytest.raises(PathRefused) as exc:
        resolve_run(root, "escape")
    assert exc.value.status == 403


@pytest.mark.parametrize(
    ("rel", "status"),
    [
        ("../outside", 403),
        ("experiments/../../outside", 403),
        ("/etc", 403),
        ("~/x", 403),
        ("C:/Windows", 403),
        ("", 400),
        ("missing", 404),
        ("notes", 400),
        ("notes/config.json", 400),
        ("a\x00b", 400),
    ],
)
def test_refused_paths(tmp_path: Path, rel: str, status: int) -> None:
    root = make_root(tmp_path)
    (tmp_path / "outside").mkdir()
    with pytest.raises(PathRefused) as exc:
        resolve_run(root, rel)
    assert exc.value.status == status


def test_resolve_run(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    assert resolve_run(root, "experiments/dlrm").kind == "folder"
    assert resolve_run(root, "./experiments/dlrm/").path == "experiments/dlrm"
    assert resolve_run(root, "alexnet/alexnet_trace.json.gz").kind == "file"


def test_a_traceprofile_run_has_its_record_title_and_status_in_its_signature(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    rel = "traceview-runs/cell/20260101-120000"
    record = root / rel / ".traceview-run.json"
    before = resolve_run(root, rel)
    assert before.title == ""  # a record written before titles
    record.write_text('{"format": "jupyter_traceview.run/1", "status": "error", "title": "loss = loss_fn(m(x), y)"}')
    os.utime(record, ns=(10**18, 10**18))
    after = resolve_run(root, rel)
    assert after.title == "loss = loss_fn(m(x), y)"
    assert {r.path: r for r in find_runs(root)}[rel].title == after.title
    # The record is part of the run's identity: its headline (run_status) is computed again.
    assert after.signature != before.signature
    assert all(r.title == "" for r in find_runs(root) if r.kind != "traceprofile")
    record.write_text("[not an object")
    assert resolve_run(root, rel).title == ""
