"""The findings registry: rules discovered from analysis/findings/rules/, one threshold mechanism."""

from __future__ import annotations

import dataclasses
import pkgutil

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.findings import FindingRules, Thresholds, all_rules, registry, rules
from jupyter_traceview.errors import OptionError


def test_every_rule_module_registers_its_rule() -> None:
    modules = {m.name for m in pkgutil.iter_modules(rules.__path__) if not m.name.startswith("_")}
    ids = [r.id for r in all_rules()]
    # Every rule module (helpers start with _) registers its rules, and every rule is in one.
    assert {r.run.__module__.rsplit(".", 1)[-1] for r in all_rules()} == modules
    assert len(ids) == len(set(ids))
    assert [r.order for r in all_rules()] == sorted(r.order for r in all_rules())


def test_the_built_in_rules_in_order() -> None:
    ids = [r.id for r in all_rules()]
    builtin = [
        "launch_bound",
        "exposed_communication",
        "collective_wait",
        "load_imbalance",
        "straggler",
        "tiny_kernels",
        "pageable_copies",
        "blocking_sync",
        "low_overlap_collective",
        "slow_iteration",
        "low_occupancy",
    ]
    assert [i for i in ids if i in builtin] == builtin


def test_thresholds_reach_their_rule() -> None:
    r = FindingRules(host_wait_min_pct=5, high_pct=30)
    assert r.of("launch_bound").host_wait_min_pct == 5  # type: ignore[attr-defined]
    assert r.common.high_pct == 30
    assert r.host_wait_min_pct == 5 and r.high_pct == 30
    assert r.replace(high_pct=40).high_pct == 40 and r.high_pct == 30
    assert r == FindingRules(high_pct=30, host_wait_min_pct=5)
    assert "host_wait_min_pct=5" in repr(r)
    defaults = {f.name: f.default for f in FindingRules.fields()}
    assert FindingRules().as_dict() == defaults
    with pytest.raises(tv.OptionError, match="straggler_max_p_value"):
        FindingRules(straggler_max_p_value=2)
    # Clock alignment is tv.align_clocks, done to the trace before the findings read it.
    with pytest.raises(tv.OptionError, match=r"align_clocks was removed.*tv\.findings\(tv\.align_clocks\(trace\)\)"):
        FindingRules(align_clocks=True)
    with pytest.raises(tv.OptionError, match="medium_pct"):
        FindingRules(medium_pct=50)


def test_a_threshold_name_belongs_to_one_rule() -> None:
    @dataclasses.dataclass(frozen=True)
    class Clash(Thresholds):
        host_wait_min_pct: float = 1.0

    with pytest.raises(RuntimeError, match="host_wait_min_pct"):
        registry.rule(id="clash", text="", analyses="", order=999, thresholds=Clash)(lambda ctx, t: [])
    assert "clash" not in {r.id for r in all_rules()}


def test_a_subset_of_rules_gives_the_full_runs_rows_of_those_rules(dlrm: tv.Trace) -> None:
    """findings_and_explain(only=...) runs those rules only; their rows (savings included) and
    explain lines are those of the full run, in the same order."""
    from jupyter_traceview.analysis.findings import findings_and_explain

    full, full_explain = findings_and_explain(dlrm)
    fired = list(dict.fromkeys(full["id"]))
    assert len(fired) >= 3
    only = (fired[0], fired[-1], "python_overhead")
    found, explained = findings_and_explain(dlrm, only=only)
    expect = full.loc[full["id"].isin(only).to_numpy()].reset_index(drop=True)
    pd.testing.assert_frame_equal(found, expect)
    assert list(explained["rule"]) == [r.id for r in all_rules() if r.id in only]
    pd.testing.assert_frame_equal(
        explained, full_explain.loc[full_explain["rule"].isin(only).to_numpy()].reset_index(drop=True)
    )
    with pytest.raises(OptionError, match="no_such_rule"):
        findings_and_explain(dlrm, only=("launch_bound", "no_such_rule"))
