"""Hostile sizes (issue 37): every public analysis runs on a trace with a 50 MB event name and
a gzip bomb, each in a subprocess under an address-space limit (``RLIMIT_AS``), so that a
fixed-width text array (a 50 MB name made the width of every row) fails the test instead of
the machine, and running out of memory while loading is a TraceFormatError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jupyter_traceview as tv

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "tests" / "data" / "h100_bert_small" / "gaunernst_bert-small-uncased__1016001.json.gz"
#: The address space each run gets: room for Python, numpy, pandas, Arrow and the trace, not
#: for a fixed-width copy of a long name or for pairs of 300,000 events.
LIMIT = 3 * 1024**3


def _run_all(path: Path) -> None:
    """Every public analysis on ``path`` under :data:`LIMIT` (tests/loading/hostile_run.py)."""
    env = {
        **os.environ,
        # Arrow's own allocators reserve large address ranges up front; the system one does not.
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    run = subprocess.run(
        [sys.executable, "-m", "tests.loading.hostile_run", str(path), str(LIMIT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


def test_every_analysis_runs_with_a_50_mb_event_name(tmp_path: Path) -> None:
    import gzip

    doc = json.loads(gzip.decompress(BERT.read_bytes()))
    big = "n" * 50_000_000
    renamed = set()
    for ev in doc["traceEvents"]:
        cat = ev.get("cat")
        if cat in ("cpu_op", "kernel") and cat not in renamed:
            ev["name"] = big + cat  # one operator and one kernel: host and GPU paths
            renamed.add(cat)
    assert renamed == {"cpu_op", "kernel"}
    path = tmp_path / "big_name.json"
    path.write_text(json.dumps(doc))
    del doc
    _run_all(path)


def test_every_analysis_runs_on_300k_identical_events(tmp_path: Path) -> None:
    """300,000 identical tiny matrix products around one launch: every range encloses every
    other (9e10 pairs: ``findings`` tried to allocate 671 GiB) and they nest 300,000 deep.
    Containment is computed by sweeps, in memory linear in the events, and parent chains
    are walked by pointer jumping (``_chains``), not level by level (events x depth), so
    each analysis fits the address-space limit, in seconds."""
    from tests.kineto_builder import cpu_op, kernel, runtime

    mm_args: dict[str, Any] = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    op = cpu_op("aten::mm", 10.0, 1.0, **mm_args)
    events = [op] * 300_000 + [runtime("cudaLaunchKernel", 10.2, 0.3, corr=1), kernel("gemm", 12.0, 2.0, corr=1)]
    path = tmp_path / "identical.json"
    path.write_text(json.dumps({"traceEvents": events}))
    del events
    _run_all(path)


_BOMB_CHECK = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))
import jupyter_traceview as tv
from jupyter_traceview.cli import main
try:
    tv.load(sys.argv[1], cache=False)
except tv.TraceFormatError as exc:
    print("load:", exc)
sys.exit(main(["summary", sys.argv[1], "--no-cache"]))
"""


def test_a_gzip_bomb_beyond_memory_is_a_trace_format_error(tmp_path: Path) -> None:
    """3 GiB of JSON (whitespace in the event list: no parse error stops it early) in 3 MB of
    gzip, under a 2 GiB address space and the default max_json_bytes (4 GiB): the MemoryError
    becomes a TraceFormatError naming the file, what was inflated and what to do; the CLI
    exits 2 with one line."""
    import gzip

    path = tmp_path / "bomb.json.gz"
    block = gzip.compress(b" " * (64 << 20), compresslevel=9)
    with path.open("wb") as f:
        f.write(gzip.compress(b'{"traceEvents": ['))
        for _ in range(3 * 16):
            f.write(block)  # concatenated gzip members are one stream
        f.write(gzip.compress(b"]}"))
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", _BOMB_CHECK, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    said = run.stdout.strip()
    assert said.startswith(f"load: {path}: ran out of memory while reading it ("), said + run.stderr
    assert "of JSON inflated so far" in said and "max_json_bytes=" in said and 'engine="dask"' in said
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, (run.returncode, run.stderr)
    # The reader's error (not the CLI's own line for memory run out elsewhere): the CLI's load
    # gets the memory the first load had back (test_a_failed_load_leaves_no_reference_cycle).
    assert lines[0].startswith(f"traceview: error: {path}: ran out of memory while reading it ("), lines[0]


def test_a_failed_load_leaves_no_reference_cycle(tmp_path: Path) -> None:
    """A load that raises gives its memory back as it returns, without the garbage collector:
    no frame of the reader is left in a reference cycle with the error (the frame that
    raised a failure once was), which would keep a gzip bomb's inflated GiB alive, so that
    the next load in the same kernel or CLI ran out of memory where the bomb's did not."""
    import gc
    import types

    path = tmp_path / "cut.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}')
    said = ""
    gc.collect()
    gc.disable()
    try:
        try:
            tv.load(path, cache=False)
        except tv.TraceFormatError as exc:
            said = str(exc)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        cycles = [
            f"{o.f_code.co_name} ({o.f_code.co_filename}:{o.f_lineno})"
            for o in gc.garbage
            if isinstance(o, types.FrameType) and "jupyter_traceview" in o.f_code.co_filename
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert "truncated" in said
    assert cycles == [], cycles
