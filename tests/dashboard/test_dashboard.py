"""tv.Dashboard and its content (jupyter_traceview/dashboard/), driven from Python (no browser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jupyter_traceview as tv
from jupyter_traceview import format as fmt
from jupyter_traceview.dashboard import data as dd
from jupyter_traceview.dashboard.commands import answer
from jupyter_traceview.dashboard.data import DashboardData, timeline_overview, to_json
from jupyter_traceview.errors import TraceSelectionError
from jupyter_traceview.format import duration
from jupyter_traceview.widgets import dashboard as dashboard_module
from jupyter_traceview.widgets import timeline as timeline_module
from tests import kineto_builder as kb

TABS = [
    "overview",
    "timeline",
    "breakdown",
    "overlap",
    "kernels",
    "operators",
    "communication",
    "iterations",
    "counters",
    "performance",
]

#: Charts each tab shows (ids), on a multi-rank GPU trace.
CHARTS = {
    "overview": {"heatmap_all", "efficiency", "temporal"},
    "timeline": set(),
    "breakdown": {"temporal", "kernel_types", "idle", "concurrency"},
    "overlap": {"overlap", "heatmap_communication", "heatmap_overlap"},
    "kernels": {"kernel_types", "top_kernels", "kernel_durations"},
    "operators": {"call_tree", "threads"},
    "communication": {"nccl_bw", "stragglers", "heatmap_communication"},
    "iterations": {"iterations"},
    "counters": {"queue_length", "memory_bandwidth"},
    "performance": {"roofline", "time_lost"},
}


@pytest.fixture(autouse=True)
def _front_end(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the bundles are not built (a plain checkout), stand-ins: these tests need no browser."""
    for module, name in ((dashboard_module, "dashboard.js"), (timeline_module, "timeline.js")):
        if not module._ESM.exists():
            stand_in = tmp_path_factory.mktemp("static") / name
            stand_in.write_text("export default { render() {} };\n")
            monkeypatch.setattr(module, "_ESM", stand_in)


@pytest.fixture(scope="module")
def data(dlrm: tv.Trace) -> DashboardData:
    return DashboardData(dlrm)


def test_payload_opens_without_analyses(dlrm: tv.Trace) -> None:
    d = DashboardData(dlrm)
    p = d.payload()
    assert p["protocol"] == dd.PROTOCOL
    assert [t["id"] for t in p["tabs"]] == TABS
    assert p["ranks"] == list(range(8))
    assert int(p["t0_ns"]) == dlrm.t0_ns
    assert {f["label"] for f in p["headline"]} >= {"ranks", "job span", "events", "kernels", "iterations"}
    # The header is tv.headline (kept with the trace); no tab's analysis runs to open.
    assert [(f["label"], f["value"]) for f in p["headline"]] == [
        (a, b) for a, b, _ in fmt.headline_items(tv.headline(dlrm))
    ]
    assert d._frames == {}, "opening computes no tab's analysis"
    assert json.loads(to_json(p)) == p


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_tab_has_its_charts(data: DashboardData, theme: str) -> None:
    for tab in TABS:
        out = data.tab(tab, theme=theme)  # type: ignore[arg-type]
        assert out["tab"] == tab and out["theme"] == theme
        assert out["notes"] == [], f"{tab}: {out['notes']}"
        assert {c["id"] for c in out["charts"]} == CHARTS[tab]
        for c in out["charts"]:
            assert not c["empty"], f"{tab}/{c['id']} has data on the DLRM set"
            item = c["item"]
            assert item["version"] and item["doc"]["roots"], f"{tab}/{c['id']} is a bokeh json item"
        json.loads(to_json(out))  # no NaN, no numpy scalars
        if tab not in ("timeline",):
            assert out["tables"] or out["figures"] or out.get("findings") is not None


def test_overview_figures_and_findings(data: DashboardData, dlrm: tv.Trace) -> None:
    out = data.tab("overview")
    figs = {f["label"]: f for f in out["figures"]}
    busy = tv.summary(dlrm)["gpu_busy_pct"].mean()
    assert figs["GPU busy"]["value"] == f"{busy:.1f}%"
    assert figs["ranks"]["value"].startswith("8")
    found = tv.findings(dlrm)
    assert [f["id"] for f in out["findings"]] == found["id"].tolist()
    assert all("evidence" in f and "stake" in f for f in out["findings"])
    # What fixing each buys, from its what-if columns, in words (format.saving).
    fixes = [fmt.saving(r["saving_ns"], r["saving_pct"], r["change"]) for r in found.to_dict(orient="records")]
    assert [f["fix"] for f in out["findings"]] == fixes
    assert any(x.startswith("fix this: ~") for x in fixes)
    # Under the findings, every rule that did not fire and why (tv.findings(explain=True)).
    why = tv.findings(dlrm, explain=True)
    silent = why.loc[~why["fired"]]
    assert out["checks"] == [f"{r}: {w}" for r, w in zip(silent["rule"], silent["reason"], strict=True)]
    assert (
        "copy_bound: checked, fine: exposed memory copies 0.2% (largest, on rank 7), under the threshold of 10%"
        in out["checks"]
    )
    # The workload, in the header (payload) and the Overview's figures, from tv.headline.
    assert figs["workload"]["value"] == "training"
    assert "97 backward operators" in figs["workload"]["hint"]
    assert ("workload", "training") in [(f["label"], f["value"]) for f in data.payload()["headline"]]


def test_overview_of_a_capture_trace(tmp_path: Path) -> None:
    """A server's CUDA-graph capture: the header says graph_capture, the launch-bound finding
    says capture (not "try CUDA graphs"), and the checked rules are listed."""
    events: list[dict] = [kb.step(1, 0, 2010)]
    for i in range(200):
        events += kb.launch("vectorized_elementwise_kernel", 10 * i, 10 * i + 6, 3, corr=i + 1, cpu_dur=5)
    events += [
        kb.runtime("cudaStreamBeginCapture", 5, 1, corr=9001),
        kb.runtime("cudaStreamEndCapture", 7, 1, corr=9002),
        kb.runtime("cudaGraphInstantiate", 8, 1, corr=9003),
    ]
    trace = tv.load(kb.write(tmp_path / "capture.json", kb.doc(events)), cache=False)
    d = DashboardData(trace)
    assert ("workload", "graph_capture") in [(f["label"], f["value"]) for f in d.payload()["headline"]]
    out = d.tab("overview")
    lb = next(f for f in out["findings"] if f["id"] == "launch_bound")
    assert lb["title"].startswith("GPU idle during CUDA graph capture") and "Try CUDA graphs" not in lb["detail"]
    assert any(c.startswith("copy_bound: checked, fine: no memory copies") for c in out["checks"])


def test_tables_carry_units_and_top_rows(data: DashboardData, dlrm: tv.Trace) -> None:
    out = data.tab("kernels")
    kernels = next(t for t in out["tables"] if t["id"] == "kernels")
    fmt = {c["key"]: c["format"] for c in kernels["columns"]}
    assert fmt["sum_ns"] == "duration" and fmt["share_pct"] == "pct" and fmt["count"] == "int"
    assert len(kernels["rows"]) == min(50, kernels["total_rows"])
    sums = [r[list(fmt).index("sum_ns")] for r in kernels["rows"]]
    assert sums == sorted(sums, reverse=True)
    total = int(tv.kernel_breakdown(dlrm, top_k=None)["sum_ns"].sum())
    figure = next(f for f in out["figures"] if f["label"] == "GPU activity time")
    assert figure["value"] == duration(total)


def test_breakdown_follows_a_time_range(data: DashboardData, dlrm: tv.Trace) -> None:
    full = data.tab("breakdown")
    assert full["range"] is None
    span = dlrm._extent_ns()
    lo, hi = dlrm.t0_ns + span // 4, dlrm.t0_ns + span // 2
    part = data.tab("breakdown", time_range=(lo, hi))
    assert part["range"] == [float(lo - dlrm.t0_ns), float(hi - dlrm.t0_ns)]
    assert part["figures"][0]["label"] == "range"
    expected = tv.temporal_breakdown(dlrm, time_range=(lo, hi))
    table = next(t for t in part["tables"] if t["id"] == "temporal")
    keys = [c["key"] for c in table["columns"]]
    assert [r[keys.index("span_ns")] for r in table["rows"]] == expected["span_ns"].tolist()
    # Through the command, with the relative range the timeline speaks.
    msg, bufs = answer(data, "_tab", {"tab": "breakdown", "range": part["range"], "seq": 7})
    assert msg["seq"] == 7 and msg["range"] == part["range"] and bufs == []
    # Other tabs ignore the range.
    assert data.tab("kernels", time_range=(lo, hi))["range"] is None


def test_heatmap_click_targets_its_bin(data: DashboardData, dlrm: tv.Trace) -> None:
    hm = tv.utilization_heatmap(dlrm, bins=data.heatmap_bins, kind="all")
    r = hm.loc[(hm["rank"] == 3) & (hm["bin"] == 10)]
    lo = int((r["origin_ns"] + r["bin_start_ns"]).iloc[0]) - dlrm.t0_ns
    hi = int((r["origin_ns"] + r["bin_end_ns"]).iloc[0]) - dlrm.t0_ns
    out = data.link({"target": "heatmap", "rank": 3, "bin": 10, "heatmap": "all"})
    assert out["ranks"] == [3]
    a, b = out["x_range"]
    pad = max((hi - lo) * 0.04, 500.0)
    assert (a, b) == (lo - pad, hi + pad), "the bin, with a margin of 4% (500 ns at least) each side"


def test_iteration_and_rank_links(data: DashboardData, dlrm: tv.Trace) -> None:
    its = dlrm.iterations
    r = its.loc[its["rank"] == 2].iloc[0]
    out = data.link({"target": "iteration", "rank": 2, "step": int(r["step"])})
    a, b = out["x_range"]
    assert a <= int(r["start_ns"]) - dlrm.t0_ns and b >= int(r["gpu_end_ns"]) - dlrm.t0_ns
    assert out["ranks"] == [2]
    k = data.link({"target": "kernel", "rank": 0, "name": "ncclKernel_AllReduce(x)", "range": [1000.0, 2000.0]})
    assert k["search"] == r"ncclKernel_AllReduce\(x\)" and k["x_range"][0] < 1000 < 2000 < k["x_range"][1]
    with pytest.raises(TraceSelectionError, match="rank"):
        data.link({"target": "rank", "rank": 99})
    with pytest.raises(TraceSelectionError, match="iteration"):
        data.link({"target": "iteration", "rank": 0, "step": 12345})
    with pytest.raises(ValueError, match="unknown target"):
        data.link({"target": "bogus", "rank": 0})


def test_commands_answer_errors_in_words(data: DashboardData) -> None:
    msg, _ = answer(data, "_tab", {"tab": "nope", "seq": 3})
    assert "nope" in msg["error"] and "overview" in msg["error"] and msg["seq"] == 3
    msg, _ = answer(data, "_unknown", {})
    assert "unknown command" in msg["error"]
    msg, _ = answer(data, "_link", {"target": "heatmap"})
    assert "rank" in msg["error"]
    payload, _ = answer(data, "_payload", None)
    assert payload == data.payload()
    version, js = dd.bokehjs_source()
    msg, bufs = answer(data, "_bokehjs", {})
    import bokeh

    assert version == bokeh.__version__
    assert msg == {"version": bokeh.__version__, "bytes": len(js)} and bufs == [js]
    assert b"Bokeh" in js[:20000]
    state, _ = answer(data, "_timeline", {})
    assert state["state"]["_all_ranks"] == list(range(8))


def test_progress_is_reported_per_step(data: DashboardData) -> None:
    seen: list[tuple[int, int, str]] = []
    data.tab("counters", progress=lambda d, t, label: seen.append((d, t, label)))
    assert seen[0][0] == 0 and seen[-1] == (seen[-1][1], seen[-1][1], "done")
    assert [d for d, _, _ in seen] == list(range(len(seen)))


def _cpu_only(tmp_path: Path) -> tv.Trace:
    events = [*kb.metadata(kb.CPU_PID), kb.step(1, 0, 100), kb.cpu_op("aten::mm", 10, 50)]
    return tv.load(kb.write(tmp_path / "cpu.json", kb.doc(events)), cache=False)


def test_cpu_only_trace_opens_on_its_operators(tmp_path: Path) -> None:
    """A trace without GPU activity shows no GPU tab ("No GPU activity" charts), opens on the
    Operators tab, whose table, call tree and threads are about the CPU."""
    d = DashboardData(_cpu_only(tmp_path))
    assert [t["id"] for t in d.payload()["tabs"]] == ["operators", "timeline"]
    with pytest.raises(TraceSelectionError, match="operators"):
        d.tab("overview")
    out = d.tab("operators")
    json.loads(to_json(out))
    assert out["notes"] == []
    assert {c["id"]: c["empty"] for c in out["charts"]} == {"call_tree": False, "threads": False}
    (ops,) = [t for t in out["tables"] if t["id"] == "operators"]
    rows = {r[0]: dict(zip([c["key"] for c in ops["columns"]], r, strict=True)) for r in ops["rows"]}
    assert (rows["aten::mm"]["calls"], rows["aten::mm"]["self_ns"]) == (1, 50_000)
    assert rows["ProfilerStep*"]["self_ns"] == 50_000  # the step's 100 us less the operator
    assert {f["id"] for f in out["findings"]} >= {"cpu_hotspots"}
    assert "No GPU activity" not in json.dumps(out)  # the GPU charts' empty message


def test_operators_findings_say_what_fixing_each_buys() -> None:
    """The Operators tab's host findings carry "fix this: ~X/step (Y%), assuming ..." (format.saving
    of the finding's what-if columns), on a recorded DataLoader stall (tests/data/whatif)."""
    path = Path(__file__).parents[1] / "data" / "whatif" / "dataloader_workers" / "before.json.gz"
    with pytest.warns(tv.TraceviewWarning, match="no GPU work"):
        trace = tv.load(path, cache=False)
        found = tv.findings(trace)
        out = DashboardData(trace).tab("operators")
    rows = {r["id"]: r for r in found.to_dict(orient="records")}
    fixes = {f["id"]: f["fix"] for f in out["findings"]}
    assert fixes == {i: fmt.saving(r["saving_ns"], r["saving_pct"], r["change"]) for i, r in rows.items()}
    stall = rows["dataloader_stall"]
    assert fixes["dataloader_stall"] == (
        f"fix this: ~{fmt.duration(stall['saving_ns'])}/step ({fmt.percent(stall['saving_pct'])}), "
        "assuming the DataLoader's next() takes no time (data loading fully hidden)"
    )
    assert stall["saving_ns"] > 0 and fixes["cpu_hotspots"] == ""  # no what-if behind the hotspots


def test_operators_tab_alone_runs_only_its_host_rules(dlrm: tv.Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened first, the Operators tab runs the host rules it shows, not every rule; after the
    Overview it reuses the full run; its findings are the same either way."""
    from jupyter_traceview.analysis.findings import driver
    from jupyter_traceview.dashboard.tabs.operators import HOST_FINDINGS

    ran: list[list[str]] = []
    real = driver._run

    def spy(ctx: object, chosen: tuple[object, ...]) -> object:
        ran.append([r.id for r in chosen])  # type: ignore[attr-defined]
        return real(ctx, chosen)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "_run", spy)
    alone = DashboardData(dlrm).tab("operators")
    assert len(ran) == 1 and set(ran[0]) == set(HOST_FINDINGS)
    d = DashboardData(dlrm)
    d.tab("overview")
    after = d.tab("operators")
    assert len(ran) == 2 and len(ran[1]) > len(HOST_FINDINGS)  # the Overview's full run only
    assert alone["findings"] == after["findings"]
    assert {f["id"] for f in after["findings"]} == set(HOST_FINDINGS) & set(tv.findings(dlrm)["id"])


def test_call_tree_box_opens_its_first_call(dlrm: tv.Trace) -> None:
    d = DashboardData(dlrm)
    tree = tv.call_tree(dlrm, ranks=0)
    node = tree.loc[tree["name"] == "aten::linear"].iloc[0]
    link = d.link({"target": "event", "rank": 0, "eid": int(node["first_eid"])})
    lo, hi = link["x_range"]
    start = int(node["first_ts_ns"]) - d.t0_ns
    assert lo < start < start + int(node["first_dur_ns"]) < hi
    assert link["ranks"] == [0]
    with pytest.raises(TraceSelectionError, match="no event"):
        d.link({"target": "event", "rank": 0, "eid": -5})


def test_diff_tab_with_a_baseline(dlrm: tv.Trace) -> None:
    d = DashboardData(dlrm, baseline=dlrm)
    assert [t["id"] for t in d.payload()["tabs"]] == [*TABS, "diff"]
    out = d.tab("diff")
    assert {f["label"] for f in out["figures"]} >= {"baseline", "verdict"}
    # The one comparison, tv.compare: its verdict, causes (adding up to the change) and ranks.
    cmp = tv.compare(dlrm, dlrm)
    assert next(f for f in out["figures"] if f["label"] == "verdict")["value"] == "same (+0.0%)"
    assert [t["id"] for t in out["tables"]] == ["causes", "per_rank"]
    causes = next(t for t in out["tables"] if t["id"] == "causes")
    assert causes["total_rows"] == len(cmp.causes)
    delta = [c["key"] for c in causes["columns"]].index("delta_ns")
    assert sum(r[delta] for r in causes["rows"]) == 0, "a trace against itself"
    per_rank = next(t for t in out["tables"] if t["id"] == "per_rank")
    assert [r[0] for r in per_rank["rows"]] == list(cmp.per_rank["rank"])
    assert [c["id"] for c in out["charts"]] == ["compare"]
    # Its warnings (here: one step a side, no noise estimate) are the tab's notes.
    assert cmp.warnings and out["notes"] == [f"compare: {w}" for w in cmp.warnings]
    with pytest.raises(TraceSelectionError, match="diff"):
        DashboardData(dlrm).tab("diff")


def test_timeline_overview_covers_every_gpu_stream(dlrm: tv.Trace) -> None:
    ov = timeline_overview(dlrm, bins=100)
    assert list(ov.columns) == ["row", "label", "rank", "bin", "start_ns", "end_ns", "busy_frac", "kind"]
    assert set(ov["rank"]) == set(dlrm.ranks)
    assert ov["busy_frac"].between(0, 1 + 1e-9).all()
    assert (ov.groupby("row").size() == 100).all()
    assert ov.loc[ov["busy_frac"] > 0, "kind"].isin(["compute", "communication", "memory"]).all()
    assert (ov["busy_frac"] > 0).any()


# ---------------------------------------------------------------------- the widget
def test_widget_state_and_follow(dlrm: tv.Trace) -> None:
    dash = tv.Dashboard(dlrm)
    assert dash.tab == "overview" and dash.expanded
    assert [t["id"] for t in dash._payload["tabs"]] == TABS
    assert dash.breakdown_range is None
    out = dash.follow("heatmap", rank=1, bin=5, heatmap="all")
    assert dash.tab == "timeline"
    # Every rank stays shown; the clicked one is emphasised.
    assert dash.timeline.ranks == list(range(8)) and dash.timeline.x_range == out["x_range"]
    assert out["focus"] == 1 and dash.timeline.focus_rank == 1
    # A narrowed timeline keeps its ranks and gains the link's.
    dash.timeline.ranks = [0, 2]
    dash.follow("rank", rank=5)
    assert dash.timeline.ranks == [0, 2, 5] and dash.timeline.focus_rank == 5
    # A range selected on the timeline scopes the Breakdown tab.
    lo = dash.timeline.t0_ns + 1_000_000
    dash.timeline.selected_range = [1_000_000.0, 3_000_000.0]
    assert dash.breakdown_range == (lo, lo + 2_000_000)
    assert dash.breakdown()["range"] == [1_000_000.0, 3_000_000.0]
    with pytest.raises(tv.OptionError, match="tab='nope' is not accepted; use one of 'overview'"):
        tv.Dashboard(dlrm, tab="nope")
    with pytest.raises(TypeError):
        tv.Dashboard("not a trace")  # type: ignore[arg-type]


def test_widget_commands(dlrm: tv.Trace) -> None:
    dash = tv.Dashboard(dlrm)
    sent: list[dict] = []
    dash.send = lambda msg, buffers=None: sent.append(msg)  # type: ignore[method-assign]
    msg, _ = dash._answer("_tab", {"tab": "iterations", "seq": 1})
    assert msg["tab"] == "iterations" and msg["charts"]
    assert sent and sent[-1]["type"] == "progress" and sent[-1]["label"] == "done"
    link, _ = dash._answer("_link", {"target": "rank", "rank": 0})
    assert link["ranks"] == [0]


def test_widget_mimebundle_has_a_static_fallback(dlrm: tv.Trace) -> None:
    dash = tv.Dashboard(dlrm, expanded=False)
    bundle = dash._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "tv.Dashboard" in data["text/html"]


def test_trace_repr_outside_a_kernel_is_text_and_html(dlrm: tv.Trace) -> None:
    assert dlrm._repr_mimebundle_() is None, "no kernel here: IPython shows text/plain and text/html"
    assert "ranks" in dlrm._repr_html_()
