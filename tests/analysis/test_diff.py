"""One diff function: ``trace_diff`` went, ``tv.compare`` is the comparison of two runs (its
known answers are tests/analysis/test_compare.py); here the removal, and compare's symmetry on
two real traces of different world sizes (the pair trace_diff's tests used)."""

from __future__ import annotations

import numpy as np
import pytest

import jupyter_traceview as tv
from jupyter_traceview import analysis
from tests.conftest import KINETO_FOLDERS


def test_trace_diff_is_gone_and_says_what_replaced_it() -> None:
    for module in (tv, analysis):
        with pytest.raises(AttributeError, match=r"trace_diff was removed; .*tv\.compare\(base, new\)"):
            module.trace_diff  # noqa: B018
        assert not hasattr(module, "trace_diff")
    assert "trace_diff" not in analysis.__all__ and "trace_diff" not in dir(tv)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tv.nothing_here  # noqa: B018


def test_mirror_across_world_sizes(dlrm: tv.Trace) -> None:
    """DLRM on 8 V100s against 2 ranks of a 128-rank job, both ways: rank by rank, said; the
    causes of one way are the other's negated and both add up to the change."""
    other = tv.load(KINETO_FOLDERS["hta_dlrm_2of128_ranks"], cache=False)
    ab, ba = tv.compare(dlrm, other), tv.compare(other, dlrm)
    for c in (ab, ba):
        assert c.ranks == (0, 1)
        assert any("different world sizes" in w and "rank by rank" in w for w in c.warnings)
        assert float(c.causes["delta_ns"].sum()) == pytest.approx(c.delta_ns, rel=1e-9)
    assert ab.delta_ns == pytest.approx(-ba.delta_ns)
    flip = {"slower": "faster", "faster": "slower", "same": "same"}
    assert flip[ab.verdict] == ba.verdict
    m = ab.causes.merge(ba.causes, on="cause", suffixes=("_ab", "_ba"))
    assert len(m) == len(ab.causes) == len(ba.causes)
    assert np.allclose(m["delta_ns_ab"], -m["delta_ns_ba"])
    status = {"new": "gone", "gone": "new", "slower": "faster", "faster": "slower", "same": "same"}
    assert (m["status_ab"].map(status) == m["status_ba"]).all()
    # Not everything "changed": the same operators on both sides pair (by call-tree path).
    assert {"slower", "faster", "same"} & set(ab.causes["status"])


def test_four_ranks_against_eight_are_compared_rank_by_rank(dlrm: tv.Trace) -> None:
    """The issue's case: a 4-rank run against an 8-rank one. The four ranks both have are
    compared rank r with rank r, said in a warning; the same ranks' work is not "changed"."""
    four = dlrm.select(ranks=[0, 1, 2, 3])
    c = tv.compare(four, dlrm)
    assert c.ranks == (0, 1, 2, 3) and list(c.per_rank["rank"]) == [0, 1, 2, 3]
    [warning] = [w for w in c.warnings if "different world sizes" in w]
    assert "base has 4 ranks, new 8 ranks" in warning and "rank by rank over the 4 both have" in warning
    assert c.verdict == "same" and c.delta_ns == 0
    assert (c.causes["delta_ns"] == 0).all() and set(c.causes["status"]) == {"same"}
