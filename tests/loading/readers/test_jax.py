"""The JAX reader (``jupyter_traceview/loading/readers/jax.py``) on profiles ``jax.profiler``
wrote here (``tests/data/jax``, CPU) and on a hand-made profile of two GPUs. The reader of
the ``.xplane.pb`` beside them (through xprof) is tested in ``test_xplane.py``.

The reference is a direct count over the raw JSON events (not the reader's code): per
thread and per name, each event is the kind the mapping in ``docs/semantics.md`` says.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview import analysis
from jupyter_traceview.dashboard.data import DashboardData, to_json
from jupyter_traceview.errors import TraceFormatError
from jupyter_traceview.loading.readers.files import trace_format
from tests.analysis.test_odd_traces import NOT_FRAMES, _call

RUN = Path(__file__).resolve().parents[2] / "data" / "jax" / "mlp_train"
HOST_FILE = RUN / "plugins" / "profile" / "run" / "host.trace.json.gz"
PERFETTO_FILE = RUN / "plugins" / "profile" / "run" / "perfetto_trace.json.gz"


def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as fh:
        doc = json.load(fh)
    return list(doc["traceEvents"])


def _counts(trace: tv.Trace) -> Counter[tuple[int, str]]:
    out: Counter[tuple[int, str]] = Counter()
    for r in trace.ranks:
        for kind, n in trace.events(r)["kind"].astype(str).value_counts().items():
            if n:
                out[(r, str(kind))] = int(n)
    return out


def _load(path: Path) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(path, cache=False)


@pytest.fixture(scope="module")
def mlp() -> tv.Trace:
    """The trace JSON of the recorded run (its folder reads the .xplane.pb where xprof is installed)."""
    return _load(HOST_FILE)


@pytest.fixture
def no_xprof(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where xprof (the extra ``jupyter_traceview[jax]``) is not installed."""
    monkeypatch.setattr("jupyter_traceview.loading.readers.files.xprof_installed", lambda: False)
    monkeypatch.setitem(sys.modules, "xprof", None)
    monkeypatch.setitem(sys.modules, "xprof.convert", None)


def test_the_recorded_files_are_told_apart_from_kineto() -> None:
    assert trace_format(HOST_FILE) == "jax" and trace_format(PERFETTO_FILE) == "jax"
    sample = sorted(Path(tv.sample_path()).glob("*.json.gz"))[0]
    assert trace_format(sample) == "kineto"


def test_cpu_profile_counts_equal_the_raw_events(mlp: tv.Trace) -> None:
    raw = [e for e in _raw(HOST_FILE) if e.get("ph") == "X"]
    steps = [e for e in raw if "step_num" in (e.get("args") or {})]
    assert len(steps) == 4
    expected = Counter({(0, "user_annotation"): len(steps), (0, "cpu_op"): len(raw) - len(steps)})
    assert _counts(mlp) == expected
    assert list(mlp.ranks) == [0] and mlp.meta(0).source_format == "jax"
    assert tv.headline(mlp)["workload"] == "cpu_only"
    ev = mlp.events(0)
    assert sorted(ev.loc[ev["step"] >= 0, "step"].unique().tolist()) == [0, 1, 2, 3]
    # Each step is the StepTraceAnnotation's span, to the ns the trace gives.
    spans = ev.loc[ev["kind"].astype(str) == "user_annotation"]
    spans = spans.set_index(spans["name"].astype(str))
    for e in steps:
        got = int(spans.loc[f"ProfilerStep#{e['args']['step_num']}", "dur_ns"])
        assert abs(got - round(e["dur"] * 1000)) <= 1
    # The XLA ops the CPU ran are operators, under their HLO names.
    ops = set(ev["name"].astype(str))
    hlo = {e["args"]["hlo_op"] for e in raw if "hlo_op" in (e.get("args") or {})}
    assert hlo and hlo <= ops


@pytest.mark.parametrize("where", ["output folder", "run folder", "host file", "perfetto file"])
def test_every_way_to_point_at_the_profile_reads_it_once(mlp: tv.Trace, where: str, no_xprof: None) -> None:
    # Without xprof, a folder reads the host's trace JSON (with it, the .xplane.pb: test_xplane.py).
    path = {
        "output folder": RUN,
        "run folder": HOST_FILE.parent,
        "host file": HOST_FILE,
        "perfetto file": PERFETTO_FILE,
    }
    assert _counts(_load(path[where])) == _counts(mlp)


@pytest.mark.parametrize("which", ["cpu", "two_gpus"])
def test_every_public_analysis_returns_a_frame(
    mlp: tv.Trace, gpus: tuple[tv.Trace, list[dict[str, Any]]], which: str, tmp_path: Path
) -> None:
    trace = mlp if which == "cpu" else gpus[0]
    failures = {}
    for name in analysis.__all__:
        if name in NOT_FRAMES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", tv.TraceviewWarning)
                out = _call(name, trace, tmp_path)
        except Exception as exc:  # noqa: BLE001 - collected, so that one test lists every failure
            failures[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        if name == "headline":
            json.dumps(out, allow_nan=False)
            out = analysis.headline(trace, per_rank=True)
        if not isinstance(out, pd.DataFrame):
            failures[name] = f"returned {type(out).__name__}"
    assert failures == {}


def test_the_dashboard_builds_as_for_a_cpu_only_trace(mlp: tv.Trace) -> None:
    d = DashboardData(mlp)
    assert [t["id"] for t in d.payload()["tabs"]] == ["operators", "timeline"]
    out = d.tab("operators")
    json.loads(to_json(out))
    (ops,) = [t for t in out["tables"] if t["id"] == "operators"]
    assert {r[0] for r in ops["rows"]} >= {"ProfilerStep*", "PjitFunction(step)"}
    json.loads(to_json(d.tab("timeline")))


# ------------------------------------------------------------- two GPUs, hand-made
def _meta(pid: int, name: str, tid: int | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "M", "pid": pid, "name": "thread_name" if tid is not None else "process_name"}
    if tid is not None:
        e["tid"] = tid
    e["args"] = {"name": name}
    return e


def _x(pid: int, tid: int, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "name": name, "args": args}


def _two_gpus() -> list[dict[str, Any]]:
    """What jax.profiler writes for one process driving two GPUs (shape of xprof's trace JSON)."""
    events: list[dict[str, Any]] = [_meta(1, "/device:GPU:0"), _meta(2, "/device:GPU:1"), _meta(701, "/host:CPU")]
    events += [_meta(701, "python", 10), _meta(701, "tf_pjrt_thread", 11)]
    for pid in (1, 2):
        events += [_meta(pid, "Stream #13(compute)", 13), _meta(pid, "XLA Ops", 100), _meta(pid, "XLA Modules", 101)]
        events += [_meta(pid, "Steps", 102)]
    for step in range(2):
        t = 1000.0 * step
        events.append(_x(701, 10, "train", t, 900, step_num=str(step)))
        events.append(_x(701, 10, "PjitFunction(step)", t + 1, 100))
        events.append(_x(701, 10, "$train.py:12 loss", t + 2, 50))
        events.append(_x(701, 11, "cuLaunchKernel", t + 20, 5, correlation_id=step * 10 + 1))
        events.append(_x(701, 11, "cuLaunchKernel", t + 30, 5, correlation_id=step * 10 + 2))
        for pid in (1, 2):
            events.append(_x(pid, 102, str(step), t + 40, 500))
            events.append(_x(pid, 101, "jit_step(123)", t + 40, 500))
            events.append(_x(pid, 100, "fusion.1", t + 50, 100, hlo_op="fusion.1"))
            events.append(_x(pid, 13, "loop_add_fusion", t + 50, 100, hlo_op="fusion.1", correlation_id=step * 10 + 1))
            events.append(_x(pid, 100, "all-reduce-start", t + 200, 200, hlo_op="all-reduce-start"))
            events.append(
                _x(pid, 13, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 200, 200, hlo_op="all-reduce-start")
            )
            events.append(_x(pid, 13, "MemcpyD2D", t + 420, 10, hlo_op="copy.3"))
    return events


@pytest.fixture(scope="module")
def gpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[tv.Trace, list[dict[str, Any]]]:
    run = tmp_path_factory.mktemp("jax_gpus") / "plugins" / "profile" / "2026_12_07_19_00_00"
    run.mkdir(parents=True)
    events = _two_gpus()
    doc = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
    with gzip.open(run / "node0.trace.json.gz", "wt") as fh:
        json.dump(doc, fh)
    shutil.copy(run / "node0.trace.json.gz", run / "perfetto_trace.json.gz")
    return _load(run.parents[2]), events


def test_each_gpu_is_a_rank_and_the_counts_equal_the_raw_events(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    trace, events = gpus
    assert list(trace.ranks) == [0, 1]
    threads = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    expected: Counter[tuple[int, str]] = Counter()
    for e in events:
        if e["ph"] != "X":
            continue
        thread = threads[(e["pid"], e["tid"])]
        if e["pid"] == 701 and "step_num" in e["args"]:  # a step: every rank's
            expected[(0, "user_annotation")] += 1
            expected[(1, "user_annotation")] += 1
        elif e["pid"] == 701:  # the host's other events go to the first device's rank
            name = e["name"]
            kind = "cuda_runtime" if name.startswith("cu") else "python_function" if name[0] == "$" else "cpu_op"
            expected[(0, kind)] += 1
        elif thread.startswith("Stream #"):
            expected[(e["pid"] - 1, "gpu_memcpy" if "Memcpy" in e["name"] else "kernel")] += 1
        else:
            expected[(e["pid"] - 1, "gpu_user_annotation")] += 1
    assert _counts(trace) == expected


def test_kernels_of_the_first_device_link_to_their_launch(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    trace, _ = gpus
    ev = trace.events(0)
    fusions = ev.loc[ev["name"].astype(str) == "loop_add_fusion"]
    assert len(fusions) == 2 and (fusions["launch_eid"] >= 0).all()
    launches = ev.set_index("eid").loc[fusions["launch_eid"], "name"].astype(str)
    assert launches.tolist() == ["cuLaunchKernel"] * 2


def test_xla_collective_kernels_are_communication_by_name(tmp_path: Path) -> None:
    events = _two_gpus()
    for e in events:
        if e["name"].startswith("ncclDevKernel"):
            e["name"] = "all-reduce-start.1"  # an XLA-emitted collective kernel, not NCCL's
    path = tmp_path / "node0.trace.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    ev = _load(path).events(1)
    kernels = ev.loc[ev["kind"].astype(str) == "kernel"]
    by_class = dict(zip(kernels["name"].astype(str), kernels["gpu_class"].astype(str), strict=False))
    assert by_class == {"loop_add_fusion": "compute", "all-reduce-start.1": "communication"}


def test_the_dashboard_of_two_gpus_builds(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    d = DashboardData(gpus[0])
    tabs = [t["id"] for t in d.payload()["tabs"]]
    assert "overview" in tabs
    for tab in tabs:
        json.loads(to_json(d.tab(tab)))


def test_collectives_are_communication(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    trace, _ = gpus
    for r in trace.ranks:
        ev = trace.events(r)
        comm = ev.loc[ev["gpu_class"].astype(str) == "communication", "name"].astype(str)
        assert comm.tolist() == ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] * 2
        assert trace.comms(r)["collective"].astype(str).tolist() == ["all_reduce"] * 2
    stats = tv.iteration_stats(trace)
    assert sorted(stats["step"].unique().tolist()) == [0, 1] and sorted(stats["rank"].unique()) == [0, 1]
    assert (stats["communication_ns"] == 200_000).all()


def test_a_truncated_profile_is_a_clear_error(tmp_path: Path) -> None:
    data = gzip.decompress(HOST_FILE.read_bytes())
    bad = tmp_path / "host.trace.json.gz"
    bad.write_bytes(gzip.compress(data[: len(data) // 2]))
    with pytest.raises(TraceFormatError, match=r"host\.trace\.json\.gz"):
        tv.load(bad, cache=False)


def test_without_xprof_the_xplane_beside_the_trace_json_is_passed_over_silently(
    mlp: tv.Trace, tmp_path: Path, no_xprof: None
) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_12_07_19_00_00"
    shutil.copytree(HOST_FILE.parent, run)
    (run / "host.xplane.pb").write_bytes(b"\x0a\x00")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tv.TraceviewWarning)
        trace = tv.load(tmp_path, cache=False)
    assert _counts(trace) == _counts(mlp)


def test_without_xprof_an_xplane_alone_names_the_extra_to_install(tmp_path: Path, no_xprof: None) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_12_07_19_00_00"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"\x0a\x00")
    with pytest.raises(
        TraceFormatError, match=r"host\.xplane\.pb.*needs xprof.*not installed.*jupyter_traceview\[jax\]"
    ) as info:
        tv.load(tmp_path, cache=False)
    assert "trace.json.gz" in info.value.hint


@pytest.mark.parametrize("broken", ["import error", "library does not load"])
def test_a_broken_xprof_install_is_said_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str) -> None:
    import types

    convert = types.ModuleType("xprof.convert")  # installed, but raw_to_tool_data does not import

    def fail(name: str) -> Any:
        if broken == "import error":
            raise ImportError(f"cannot import name {name!r}")
        raise OSError("libprofiler_plugin_c_api.so: cannot open shared object file")

    convert.__getattr__ = fail  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "xprof", types.ModuleType("xprof"))
    monkeypatch.setitem(sys.modules, "xprof.convert", convert)
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(b"\x0a\x00")
    what = "does not import" if broken == "import error" else "converter library does not load"
    with pytest.raises(TraceFormatError, match=rf"host\.xplane\.pb.*{what}") as info:
        tv.load(bad, cache=False)
    assert "jupyter_traceview[jax]" in info.value.hint
