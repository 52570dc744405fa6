"""The reader of ``jax.profiler``'s binary XSpace (``jupyter_traceview/loading/readers/xplane.py``),
through xprof's converter, on the CPU profile recorded here (``tests/data/jax/mlp_train``).

The reference is xprof's own Trace Viewer trace of the same ``.xplane.pb``
(``xprof.convert.raw_to_tool_data``), counted event by event with the mapping of docs/jax.md
(not the reader's code), and the trace JSON jax.profiler wrote beside it in the same run.
Without xprof (the extra ``jupyter_traceview[jax]``), see ``test_jax.py``.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData, to_json
from jupyter_traceview.errors import TraceFormatError
from jupyter_traceview.loading.readers.files import trace_format
from tests.loading.readers.test_jax import HOST_FILE, RUN, _counts, _load
from tests.xplane_builder import Event, Line, Plane, xspace

raw_to_tool_data = pytest.importorskip(
    "xprof.convert.raw_to_tool_data", reason="xprof (the extra jupyter_traceview[jax]) is not installed"
)

XPLANE = HOST_FILE.parent / "host.xplane.pb"


def _xprof_trace(path: Path) -> list[dict[str, Any]]:
    """xprof's Trace Viewer events for the XSpace at ``path`` (converted in a scratch folder:
    xprof writes its caches beside the file)."""
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / path.name
        shutil.copyfile(path, local)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(local)], "trace_viewer", {"use_saved_result": False})
    assert data, "xprof converted nothing"
    return list(json.loads(data)["traceEvents"])


def _expected(events: list[dict[str, Any]]) -> Counter[tuple[int, str]]:
    """Per (rank, kind), what docs/jax.md says each of xprof's events becomes (one host, CPU only)."""
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert set(processes.values()) == {"/host:CPU"}  # JAX on CPU: no device process
    out: Counter[tuple[int, str]] = Counter()
    for e in events:
        ph, args, name = e.get("ph"), e.get("args") or {}, e.get("name", "")
        if ph in ("i", "I"):
            out[(0, "cpu_instant_event")] += 1
        elif ph != "X":
            continue
        elif "step_num" in args:
            out[(0, "user_annotation")] += 1
        elif name.startswith("$"):
            out[(0, "python_function")] += 1
        elif name.startswith("cu"):
            out[(0, "cuda_runtime")] += 1
        else:
            out[(0, "cpu_op")] += 1
    return out


@pytest.fixture(scope="module")
def xplane_trace() -> tv.Trace:
    return _load(RUN)


def test_the_run_folder_reads_the_xplane_with_xprof_installed(xplane_trace: tv.Trace) -> None:
    assert trace_format(XPLANE) == "xplane"
    assert [Path(p).name for p in xplane_trace.metadata["path"]] == ["host.xplane.pb"]
    assert list(xplane_trace.ranks) == [0] and xplane_trace.meta(0).source_format == "jax"
    assert tv.headline(xplane_trace)["workload"] == "cpu_only"


def test_counts_equal_xprofs_converted_trace(xplane_trace: tv.Trace) -> None:
    events = _xprof_trace(XPLANE)
    expected = _expected(events)
    assert expected[(0, "cpu_op")] > 100 and expected[(0, "user_annotation")] == 4
    assert _counts(xplane_trace) == expected
    # The XLA ops the CPU device ran (events with an hlo_op), each execution one operator.
    ran = Counter(e["name"] for e in events if e.get("ph") == "X" and "hlo_op" in (e.get("args") or {}))
    ev = xplane_trace.events(0)
    got = Counter(n for n in ev["name"].astype(str) if n in ran)
    assert ran and got == ran


def test_the_xplane_and_the_trace_json_of_one_run_agree(xplane_trace: tv.Trace) -> None:
    """The same run, read from the XSpace and from the trace JSON jax.profiler wrote from it:
    the same XLA op executions and the same steps, to the ns."""
    from_json = _load(HOST_FILE)
    raw = json.loads(gzip.decompress(HOST_FILE.read_bytes()))["traceEvents"]
    hlo = {e["args"]["hlo_op"] for e in raw if "hlo_op" in (e.get("args") or {})}

    def xla_ops(trace: tv.Trace) -> Counter[str]:
        return Counter(n for n in trace.events(0)["name"].astype(str) if n in hlo)

    assert hlo and xla_ops(xplane_trace) == xla_ops(from_json)

    def steps(trace: tv.Trace) -> dict[str, tuple[int, int]]:
        ev = trace.events(0)
        s = ev.loc[ev["kind"].astype(str) == "user_annotation"]
        return dict(
            zip(s["name"].astype(str), zip(s["ts_ns"].tolist(), s["dur_ns"].tolist(), strict=True), strict=True)
        )

    a, b = steps(xplane_trace), steps(from_json)
    assert sorted(a) == [f"ProfilerStep#{i}" for i in range(4)] and a.keys() == b.keys()
    for k in a:
        assert abs(a[k][0] - b[k][0]) <= 1 and abs(a[k][1] - b[k][1]) <= 1


def test_the_dashboard_builds(xplane_trace: tv.Trace) -> None:
    d = DashboardData(xplane_trace)
    for tab in [t["id"] for t in d.payload()["tabs"]]:
        json.loads(to_json(d.tab(tab)))


def test_nothing_is_written_beside_the_profile(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_12_07_19_00_00"
    shutil.copytree(HOST_FILE.parent, run)
    before = sorted(p.name for p in run.iterdir())
    trace = _load(tmp_path)
    assert [Path(p).name for p in trace.metadata["path"]] == ["host.xplane.pb"]
    assert sorted(p.name for p in run.iterdir()) == before  # xprof's caches went to a scratch folder


def test_an_xplane_given_alone_is_read(xplane_trace: tv.Trace) -> None:
    assert _counts(_load(XPLANE)) == _counts(xplane_trace)


@pytest.mark.parametrize("damage", ["truncated", "not a protobuf"])
def test_a_damaged_xplane_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    data = XPLANE.read_bytes()
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not an XSpace at all" * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        with pytest.raises(TraceFormatError, match=r"host\.xplane\.pb.*not an XSpace that xprof can read") as info:
            tv.load(bad, cache=False)
    assert "record it again" in info.value.hint
    assert "traceview-xplane-" not in str(info.value)  # names the file, not the reader's scratch copy


def test_a_damaged_xplane_in_a_run_names_the_trace_json_beside_it(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_12_07_19_00_00"
    shutil.copytree(HOST_FILE.parent, run)
    (run / "host.xplane.pb").write_bytes(XPLANE.read_bytes()[:5000])
    with pytest.raises(TraceFormatError, match=r"host\.xplane\.pb.*not an XSpace") as info:
        tv.load(tmp_path, cache=False)
    assert f"tv.load({str(run / 'host.trace.json.gz')!r})" in info.value.hint


def test_an_empty_xplane_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(b"")
    with pytest.raises(TraceFormatError, match=r"host\.xplane\.pb.*empty"):
        tv.load(bad, cache=False)


# ------------------------------------------------- two GPUs: an XSpace built here, through xprof
_KERNEL = "regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:50"


def _two_gpus_xspace() -> bytes:
    """One process driving two GPUs, as the profiler's XSpace holds it: the host's runtime calls,
    and per device a compute stream with a fusion, an all-reduce and a copy per step (xprof
    derives the ``XLA Ops``/``XLA Modules`` lines from the kernels' ``hlo_op``/``hlo_module``)."""
    t0 = 1_800_000_000_000_000_000
    host = Plane(0, "/host:CPU", [Line(10, "python"), Line(11, "tf_pjrt_thread")])
    devices = [Plane(d + 1, f"/device:GPU:{d}", [Line(13, "Stream #13(compute)")]) for d in range(2)]
    for step in range(2):
        t = t0 + step * 1_000_000
        host.lines[0].events.append(Event("PjitFunction(step)", t + 1000, 100_000))
        for k in (1, 2):
            host.lines[1].events.append(
                Event("cuLaunchKernel", t + 10_000 * k, 5000, {"correlation_id": step * 10 + k})
            )
        for device in devices:
            stream = device.lines[0].events
            module = {"hlo_module": "jit_step"}
            stream.append(
                Event(
                    "loop_add_fusion",
                    t + 50_000,
                    100_000,
                    {"hlo_op": "fusion.1", **module, "correlation_id": step * 10 + 1, "kernel_details": _KERNEL},
                )
            )
            stream.append(
                Event(
                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                    t + 200_000,
                    200_000,
                    {
                        "hlo_op": "all-reduce-start",
                        **module,
                        "correlation_id": step * 10 + 2,
                        "kernel_details": _KERNEL,
                    },
                )
            )
            stream.append(
                Event("MemcpyD2D", t + 420_000, 10_000, {"hlo_op": "copy.3", **module, "memcpy_details": "size:4096"})
            )
    return xspace([host, *devices], hostname="node0")


@pytest.fixture(scope="module")
def gpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[tv.Trace, list[dict[str, Any]]]:
    run = tmp_path_factory.mktemp("xplane_gpus") / "plugins" / "profile" / "2026_12_07_19_00_00"
    run.mkdir(parents=True)
    (run / "node0.xplane.pb").write_bytes(_two_gpus_xspace())
    return _load(run.parents[2]), _xprof_trace(run / "node0.xplane.pb")


def test_gpu_activities_equal_xprofs_converted_trace(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    trace, events = gpus
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    rank_of = {pid: int(name.rsplit(":", 1)[1]) for pid, name in processes.items() if name.startswith("/device:GPU:")}
    assert sorted(rank_of.values()) == [0, 1] and list(trace.ranks) == [0, 1]
    # xprof derived its device lines from the kernels (named "XLA Ops - from #13" here).
    assert any(n.startswith("XLA Ops") for n in threads.values())
    expected: Counter[tuple[int, str]] = Counter()
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["pid"] not in rank_of:  # the host's: the first device's rank
            expected[(0, "cuda_runtime" if e["name"].startswith("cu") else "cpu_op")] += 1
        elif threads[(e["pid"], e["tid"])].startswith("Stream #"):
            expected[(rank_of[e["pid"]], "gpu_memcpy" if "Memcpy" in e["name"] else "kernel")] += 1
        else:
            expected[(rank_of[e["pid"]], "gpu_user_annotation")] += 1
    assert expected[(1, "kernel")] == 4 and expected[(1, "gpu_memcpy")] == 2
    assert _counts(trace) == expected


def test_xla_collectives_of_an_xplane_are_communication(gpus: tuple[tv.Trace, list[dict[str, Any]]]) -> None:
    trace, _ = gpus
    for r in trace.ranks:
        assert trace.comms(r)["collective"].astype(str).tolist() == ["all_reduce"] * 2
    launches = trace.events(0)
    fusions = launches.loc[launches["name"].astype(str) == "loop_add_fusion"]
    assert len(fusions) == 2 and (fusions["launch_eid"] >= 0).all()  # linked to their cuLaunchKernel
