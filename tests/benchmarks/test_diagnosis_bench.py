"""The diagnosis benchmark (``benchmarks/diagnosis/``): its labels are well-formed, and a fast
subset of its scenarios passes.

The whole benchmark is ``python benchmarks/diagnosis/run.py``; here run.py's own checking
function runs on a few scenarios. Those that need a rule id or ``tv.workload`` the package
does not have yet (issue 32: helpers diagwork and diagsig) skip, saying what they wait for.
"""

from __future__ import annotations

import pytest

import jupyter_traceview as tv
from tests.benchmarks import run_script

run = run_script("diagnosis_bench_run", "benchmarks/diagnosis/run.py")
NAMES = run.scenario_names()


def _registry_ids() -> set[str]:
    from jupyter_traceview.analysis.findings.registry import all_rules

    return {r.id for r in all_rules()}


def test_there_are_at_least_24_scenarios() -> None:
    assert len(NAMES) >= 24, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_expected_toml_is_well_formed(name: str) -> None:
    exp = run.load_expected(name)  # raises ValueError naming the file and what is wrong
    assert exp.workload in run.WORKLOADS
    assert exp.trace_path().exists(), f"{name}: trace {exp.trace_path()} is missing"
    assert len(exp.ids) == len(set(exp.ids)), f"{name}: an id is listed twice in top3"
    assert not set(exp.ids) & set(exp.forbidden_ids), f"{name}: an id is both expected and forbidden"


def test_validate_names_each_problem() -> None:
    ids = {"launch_bound", "copy_bound"}
    good = {"workload": "inference", "top3": [{"id": "launch_bound"}], "forbidden": [], "notes": "why"}
    assert run.validate(good, ids) == []
    bad = {
        "workload": "serving",
        "top3": [
            {"id": "slow_gpu", "time_at_stake_ms": 3.0},
            {"id": "copy_bound", "time_at_stake_ms": -1, "tolerance_pct": 5},
        ],
        "forbidden": [""],
        "notes": " ",
        "has_backward": "no",
        "also_ok": ["nope"],
        "forbidden_in": {"nope": ["x"], "copy_bound": [""]},
        "colour": "red",
    }
    problems = "\n".join(run.validate(bad, ids))
    for words in (
        "unknown key 'colour'",
        "workload 'serving' is not one of",
        "top3 id 'slow_gpu' is not a known finding id",
        "time_at_stake_ms and tolerance_pct go together",
        "time_at_stake_ms must be a positive number, got -1",
        "also_ok id 'nope'",
        "forbidden must be a list of non-empty phrases",
        "has_backward must be true or false",
        "notes must say",
        "forbidden_in id 'nope'",
        "forbidden_in.copy_bound must be a list of non-empty phrases",
    ):
        assert words in problems
    assert "missing 'notes'" in "\n".join(run.validate({"workload": "inference", "top3": [], "forbidden": []}, ids))


def test_known_ids_are_the_registry_and_the_new_issue_32_ids() -> None:
    assert run.known_ids() == _registry_ids() | {"unrecognised_kernels", "copy_bound", "dominant_kernel_family"}


def _needs(name: str) -> list[str]:
    """What a scenario needs that the package may not have yet."""
    needs = []
    for t in run.load_expected(name).top3:
        if t["id"] in run.NEW_IDS:
            needs.append(t["id"])
    return needs


#: A fast subset (each well under 1 s), with what each waits for beyond its own top-3 ids:
#: ``workload`` = ``tv.workload`` (helper diagwork: advice conditioned on the workload),
#: ``unrecognised_kernels`` = the marker of helper diagsig's communication-by-context work.
SUBSET = {
    "real_h100_bert_inference": [],
    "real_h200_matmul": [],
    "real_mi250_train": [],
    "gpu_kv_cache_inference": [],
    "gpu_host_gap_after_item": [],
    "gpu_copy_bound": [],
    "gpu_softmax_dominant": [],
    "gpu_graph_capture": ["workload"],
    "gpu_graph_replay": ["workload"],
    "cpu_mlp_infer": ["workload"],
    "gpu_deepep_alltoall": ["unrecognised_kernels"],
    "gpu_unrecognised_kernels": [],
}


@pytest.mark.parametrize("name", sorted(SUBSET))
def test_scenario_passes(name: str) -> None:
    ids = _registry_ids()
    waiting = [
        i
        for i in _needs(name) + SUBSET[name]
        if (i == "workload" and not hasattr(tv, "workload")) or (i != "workload" and i not in ids)
    ]
    if waiting:
        pytest.skip(f"needs {', '.join(waiting)} (issue 32, not in this package yet)")
    res = run.check(name)
    assert res.status == "pass", run._table(res)


def test_summary_counts_precision_and_recall() -> None:
    r1 = run.Result(name="a", status="pass", expected_top3=["x", "y"], true_positives=2, acceptable=3)
    r1.got_top3 = [{"id": "x"}, {"id": "y"}, {"id": "z"}]
    r2 = run.Result(name="b", status="fail", expected_top3=["x"], missing=["x"], acceptable=0)
    r2.got_top3 = [{"id": "w"}]
    r2.forbidden_hits = ["w: 'CUDA graphs'"]
    r2.workload_ok = False
    r3 = run.Result(name="c", status="skip", expected_top3=["q"])
    s = run.summary([r1, r2, r3])
    assert (s["passed"], s["failed"], s["skipped"]) == (1, 1, 1)
    assert s["recall"] == pytest.approx(2 / 3)  # x, y found; x missing in b; c not run
    assert s["precision"] == pytest.approx(3 / 4)
    assert s["strict_precision"] == pytest.approx(2 / 4)
    assert (s["forbidden_advice_hits"], s["workload_mismatches"], s["workload_checked"]) == (1, 1, 1)
