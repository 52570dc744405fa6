"""%%traceprofile in a distributed job: torch.distributed on gloo, 2 processes, CPU."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview.notebook import recording

pytest.importorskip("IPython")
# find_spec here, torch imported in the test: importing torch (~3 s) at collection would cost
# every xdist worker that time, though only the one that runs this test needs it.
pytestmark = pytest.mark.skipif(find_spec("torch") is None, reason="torch is not installed")

ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).parent / "helpers" / "traceprofile_gloo.py"


@pytest.mark.slow
def test_every_rank_writes_its_file_into_one_run_folder(tmp_path: Path) -> None:
    import torch.distributed

    if not torch.distributed.is_available():
        pytest.skip("torch built without distributed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(HELPER), str(tmp_path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = list((tmp_path / "traceview-runs" / "ddp").iterdir())
    assert len(runs) == 1, runs  # rank 0 chose the folder name, rank 1 used it
    run_dir = runs[0]
    assert sorted(p.name for p in run_dir.glob("*.gz")) == ["rank-0.pt.trace.json.gz", "rank-1.pt.trace.json.gz"]

    for r in (0, 1):
        with gzip.open(run_dir / f"rank-{r}.pt.trace.json.gz", "rt") as fh:
            info = json.load(fh)["distributedInfo"]
        assert info["backend"] == "gloo" and info["rank"] == r and info["world_size"] == 2

    trace = tv.load(run_dir, cache=False)
    assert trace.ranks == (0, 1)
    assert set(trace.metadata["rank_source"]) == {"distributedInfo"}
    for r in (0, 1):
        assert trace.iterations.query("rank == @r")["step"].tolist() == [1, 2]
        names = set(trace.events(r)["name"].astype(str))
        assert any("all_reduce" in n for n in names), sorted(names)[:20]

    # Rank 0 waited for rank 1 and showed the whole run; rank 1 its own file.
    assert (tmp_path / "rank0.seen").read_text() == "0,1"
    assert (tmp_path / "rank1.seen").read_text() == "1"
    rec = recording.read_run_record(run_dir)
    assert rec["world_size"] == 2
    assert rec["files"] == ["rank-0.pt.trace.json.gz", "rank-1.pt.trace.json.gz"]
    assert rec["headline"]["ranks"] == 2 and rec["headline"]["iterations"] == 2
