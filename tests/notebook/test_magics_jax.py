"""``%%traceprofile --jax``: the cell under jax.profiler (CPU jax), loaded as a JAX profile."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.notebook import recording

pytest.importorskip("IPython")

from IPython.core.error import UsageError
from IPython.testing import globalipapp

# find_spec, not importorskip: importing jax (~4 s) at collection would cost every xdist
# worker that time, though only the worker that runs these tests needs it (in the cells).
pytestmark = pytest.mark.skipif(find_spec("jax") is None, reason="jax is not installed")


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "jupyter_traceview")
    shell.run_cell(SETUP)
    return shell


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[tv.Trace]:
    calls: list[tv.Trace] = []
    monkeypatch.setattr("jupyter_traceview.widgets.display.show", calls.append)
    return calls


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


SETUP = """\
import jax, jax.numpy as jnp
jax_runs = 0
@jax.jit
def jax_step(w, x):
    return w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
jax_w, jax_x = jnp.ones((16, 8)), jnp.ones((4, 16))
"""

CELL = """\
jax_runs += 1
jax_w = jax_step(jax_w, jax_x)
jax_w.block_until_ready();
"""


@pytest.mark.parametrize("xprof", [True, False], ids=["with xprof", "without xprof"])
def test_jax_cell_is_profiled_and_loaded(
    ip: Any, work: Path, shown: list[tv.Trace], xprof: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if xprof:
        pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof (jupyter_traceview[jax]) is not installed")
    else:
        monkeypatch.setattr("jupyter_traceview.loading.readers.files.xprof_installed", lambda: False)
    ip.run_cell("jax_runs = 0")
    result = ip.run_cell(f"%%traceprofile --jax --warmup 1 --repeat 3 -o jt\n{CELL}")
    result.raise_error()
    assert ip.user_ns["jax_runs"] == 4
    (run_dir,) = [p for p in (work / "traceview-runs").glob("*/*") if p.is_dir()]
    # Both are kept; the XSpace is the one read where xprof is installed (docs/jax.md).
    (xplane,) = run_dir.glob("plugins/profile/*/*.xplane.pb")
    (json_file,) = run_dir.glob("plugins/profile/*/*.trace.json.gz")
    trace_file = xplane if xprof else json_file
    trace = ip.user_ns["jt"]
    assert [Path(p).resolve() for p in trace.metadata["path"]] == [trace_file.resolve()]
    assert shown == [trace]
    ev = trace.events(0)
    steps = ev.loc[ev["kind"].astype(str) == "user_annotation", "name"].astype(str)
    assert sorted(steps) == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]  # not the warm-up run
    assert trace.meta(0).source_format == "jax"
    record = json.loads((run_dir / recording.RUN_RECORD).read_text())
    assert record["status"] == "ok" and record["files"] == [trace_file.name]
    assert record["headline"]["workload"] == "cpu_only"
    assert tv.load(run_dir, cache=False).ranks == trace.ranks  # the run folder loads as the file does


def test_an_error_keeps_the_steps_run_before_it(ip: Any, work: Path, shown: list[tv.Trace], capsys: Any) -> None:
    ip.run_cell("jax_runs = 0")
    result = ip.run_cell(f"%%traceprofile --jax --repeat 3\n{CELL}if jax_runs == 2:\n    raise ValueError('boom')\n")
    assert isinstance(result.error_in_exec, ValueError)
    (run_dir,) = [p for p in (work / "traceview-runs").glob("*/*") if p.is_dir()]
    record = json.loads((run_dir / recording.RUN_RECORD).read_text())
    assert record["status"] == "error" and record["runs_completed"] == 1
    assert "partial trace saved" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--record-shapes", "--memory"])
def test_torch_only_options_are_refused(ip: Any, work: Path, option: str) -> None:
    with pytest.raises(UsageError, match=f"{option} is torch.profiler's"):
        ip.run_cell_magic("traceprofile", f"--jax {option}", "pass")
