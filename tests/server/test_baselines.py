"""The sidebar's baselines through a real Jupyter server: each run's verdict against the baseline
kept beside the runs (``traceview baseline set``), and "Set as Baseline" (POST baseline)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

import jupyter_traceview as tv
from jupyter_traceview.loading.baselines import BASELINES_FILE, list_baselines, set_baseline
from jupyter_traceview.server import handlers
from jupyter_traceview.server.handlers import MAX_VERDICTS
from tests import kineto_builder as kb
from tests.server.test_handlers import poll

RUNS = "traceview-runs"


def _run(folder: Path, gemm_us: float, steps: int = 5) -> None:
    """``steps`` steps of 1 ms, each launching a gemm of ``gemm_us`` (the step grows with it)."""
    events: list[dict[str, Any]] = []
    t = 0.0
    for i in range(steps):
        dur = 200 + gemm_us + (i % 2)  # 1 us of step-to-step noise
        events.append(kb.step(i + 1, t, dur))
        events += kb.launch("gemm", t + 10, t + 20, gemm_us, corr=i + 1)
        t += dur + 50
    kb.write(folder / "rank-0.json", kb.doc(events, rank=0))


@pytest.fixture
def runs(jp_root_dir: Path) -> Path:
    _run(jp_root_dir / RUNS / "base", 100)
    _run(jp_root_dir / RUNS / "slow", 400)
    _run(jp_root_dir / RUNS / "same", 100)
    return jp_root_dir


def _verdicts_done(r: Any, body: dict) -> bool:
    return all(
        run["path"] == body.get("baseline", {}).get("path")
        or run.get("verdict", {}).get("status") in ("ready", "error")
        for run in body["runs"]
    )


async def test_each_run_has_its_verdict_against_the_baseline(jp_fetch: Any, runs: Path) -> None:
    set_baseline(runs / RUNS, "main", runs / RUNS / "base")  # as `traceview baseline set main ...` does
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=_verdicts_done)
    baseline = body["baseline"]
    assert baseline["name"] == "main" and baseline["path"] == f"{RUNS}/base"
    assert baseline["file"] == f"{RUNS}/{BASELINES_FILE}"
    rows = {run["path"]: run for run in body["runs"]}
    assert "verdict" not in rows[f"{RUNS}/base"], "the baseline is not compared with itself"
    base = tv.load(runs / RUNS / "base", cache=False)
    for name, expected in (("slow", "slower"), ("same", "same")):
        state = rows[f"{RUNS}/{name}"]["verdict"]
        assert state["status"] == "ready" and state["baseline"] == f"{RUNS}/base"
        cmp = tv.compare(base, tv.load(runs / RUNS / name, cache=False))
        result = state["result"]
        # The badge is tv.compare's verdict and change: the one comparison.
        assert result["verdict"] == cmp.verdict == expected
        assert result["delta_ns"] == pytest.approx(cmp.delta_ns) and result["delta_pct"] == pytest.approx(cmp.delta_pct)
        assert result["noise_test"] == cmp.noise_test
    slow = rows[f"{RUNS}/slow"]["verdict"]["result"]
    # 300 us more gemm a step: the gemm's operator is the top cause, by that much.
    assert slow["top_cause"].startswith("kernel gemm") or "gemm" in slow["top_cause"]
    assert slow["top_cause_delta_ns"] == pytest.approx(300_000, rel=0.05)
    assert not slow["top_cause_within_noise"]
    assert str(runs) not in json.dumps(body), "no server paths"


async def test_a_baseline_kept_in_a_nested_runs_folder_is_found(jp_fetch: Any, jp_root_dir: Path) -> None:
    # %%traceprofile in a notebook of a subfolder writes <sub>/traceview-runs: the sidebar,
    # listing the whole server root, finds the baseline kept there (and sets it there).
    _run(jp_root_dir / "project" / RUNS / "base", 100)
    _run(jp_root_dir / "project" / RUNS / "slow", 400)
    r = await jp_fetch("traceview", "api", "baseline", method="POST", body="", params={"path": f"project/{RUNS}/base"})
    assert json.loads(r.body)["baseline"]["file"] == f"project/{RUNS}/{BASELINES_FILE}"
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=_verdicts_done)
    assert body["baseline"]["path"] == f"project/{RUNS}/base"
    slow = next(run for run in body["runs"] if run["path"] == f"project/{RUNS}/slow")
    assert slow["verdict"]["result"]["verdict"] == "slower"


async def test_no_baseline_no_verdicts(jp_fetch: Any, runs: Path) -> None:
    def ready(r: Any, body: dict) -> bool:
        return all(run["status"] == "ready" for run in body["runs"])

    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=ready)
    assert "baseline" not in body and all("verdict" not in run for run in body["runs"])


async def test_set_as_baseline_from_the_sidebar(jp_fetch: Any, runs: Path) -> None:
    r = await jp_fetch("traceview", "api", "baseline", method="POST", body="", params={"path": f"{RUNS}/same"})
    kept = json.loads(r.body)["baseline"]
    assert kept["name"] == "main" and kept["path"] == f"{RUNS}/same" and kept["file"] == f"{RUNS}/{BASELINES_FILE}"
    # The file `traceview baseline list` / `traceview compare main NEW` read, beside the runs.
    assert [(b["name"], b["path"]) for b in list_baselines(runs / RUNS)] == [("main", str(runs / RUNS / "same"))]
    # A run outside traceview-runs: kept in the listed root holding it (the server root here).
    _run(runs / "elsewhere", 100)
    r = await jp_fetch(
        "traceview", "api", "baseline", method="POST", body="", params={"path": "elsewhere", "name": "ref-1"}
    )
    assert json.loads(r.body)["baseline"]["file"] == BASELINES_FILE
    assert [b["name"] for b in list_baselines(runs)] == ["ref-1"]
    # The most recently set baseline is the one the runs are compared with.
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=lambda r, b: "baseline" in b)
    assert body["baseline"]["name"] in ("main", "ref-1")
    assert body["baseline"]["set_at"] >= kept["set_at"]


@pytest.mark.parametrize(
    ("params", "codes"),
    [
        ({"path": "../etc"}, (403,)),
        ({"path": "/etc/passwd"}, (403,)),
        ({"path": "%2e%2e/%2e%2e/etc"}, (403,)),
        ({"path": "x" * 5000}, (400,)),
        ({}, (400,)),
        ({"path": f"{RUNS}/base", "name": "no spaces allowed"}, (400,)),
        ({"path": f"{RUNS}/base", "roots": "../up"}, (403,)),
    ],
)
async def test_set_baseline_refuses_bad_input(
    jp_fetch: Any, runs: Path, params: dict[str, str], codes: tuple[int, ...]
) -> None:
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "baseline", method="POST", body="", params=params)
    assert exc.value.code in codes
    body = exc.value.response.body.decode()
    assert "message" in json.loads(body) and "Traceback" not in body and str(runs) not in body
    assert not (runs / RUNS / BASELINES_FILE).exists() and not (runs / BASELINES_FILE).exists()


async def test_set_baseline_requires_authentication(jp_fetch: Any, runs: Path) -> None:
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch(
            "traceview",
            "api",
            "baseline",
            method="POST",
            body="",
            params={"path": f"{RUNS}/base"},
            headers={"Authorization": ""},
        )
    assert exc.value.code in (401, 403)
    assert not (runs / RUNS / BASELINES_FILE).exists()


async def test_only_checked_regular_files_inside_the_root(jp_fetch: Any, runs: Path, tmp_path: Path) -> None:
    # A baseline whose run lies outside the server root is never listed (nor compared with).
    outside = tmp_path / "outside"
    _run(outside, 100)
    set_baseline(runs / RUNS, "main", outside)
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=lambda r, b: True)
    assert "baseline" not in body and all("verdict" not in run for run in body["runs"])
    # A baselines file that is a link is not read, and not written through.
    (runs / RUNS / BASELINES_FILE).unlink()
    set_baseline(tmp_path, "main", outside)
    os.symlink(tmp_path / BASELINES_FILE, runs / RUNS / BASELINES_FILE)
    _, body = await poll(jp_fetch, "traceview", "api", "runs", until=lambda r, b: True)
    assert "baseline" not in body
    with pytest.raises(HTTPClientError) as exc:
        await jp_fetch("traceview", "api", "baseline", method="POST", body="", params={"path": f"{RUNS}/base"})
    assert exc.value.code == 409
    # The file the link points to is unchanged: the sidebar did not write through the link.
    assert json.loads((tmp_path / BASELINES_FILE).read_text())["baselines"]["main"]["path"] == "outside"


async def test_verdicts_are_bounded(jp_fetch: Any, runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each verdict is a comparison in the worker: a listing starts at most MAX_VERDICTS, the newest.
    monkeypatch.setattr(handlers, "MAX_VERDICTS", 1)
    set_baseline(runs / RUNS, "main", runs / RUNS / "base")
    os.utime(runs / RUNS / "same" / "rank-0.json", (2e9, 2e9))  # the newest run
    _, body = await poll(
        jp_fetch,
        "traceview",
        "api",
        "runs",
        until=lambda r, b: any(run.get("verdict", {}).get("status") == "ready" for run in b["runs"]),
    )
    compared = [run["path"] for run in body["runs"] if "verdict" in run]
    assert compared == [f"{RUNS}/same"]
    assert handlers.MAX_VERDICTS == 1 and 0 < MAX_VERDICTS <= 64
