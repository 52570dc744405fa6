"""``straggler`` weighs ranks by the wait their lateness causes, not only by how often they are
last (docs/semantics.md, ``straggler``): a rank late once by 20 ms is named."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from tests import job_builder as jb

STEP_US = 30_000.0


def rotating_job(ranks: int, collectives: int, delay: dict[tuple[int, int], float]) -> dict[int, list[jb.Gpu]]:
    """Per collective ``s`` (one per 30 ms step): rank ``r`` computes from the step's start + 10 us
    until its arrival, ``100 + 10 * ((r - s) % ranks)`` us later (plus ``delay[(s, r)]``), then
    joins an all-reduce that ends 50 us after the last arrival on every rank. Without delays,
    the last rank of collective ``s`` is ``(s - 1) % ranks``, 10 us after the second-last."""
    out: dict[int, list[jb.Gpu]] = {r: [] for r in range(ranks)}
    for s in range(collectives):
        t0 = s * STEP_US + 10
        arrive = {r: t0 + 100 + 10 * ((r - s) % ranks) + delay.get((s, r), 0.0) for r in range(ranks)}
        end = max(arrive.values()) + 50
        for r in range(ranks):
            out[r].append(jb.compute(t0, arrive[r] - t0))
            out[r].append(jb.allreduce(arrive[r], end - arrive[r]))
    return out


def findings(tmp: Path, job: dict[int, list[jb.Gpu]], collectives: int) -> pd.DataFrame:
    steps = [(s, s * STEP_US, STEP_US) for s in range(collectives)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(jb.load_job(tmp, job, steps))


def test_a_rank_late_once_by_20_ms_is_named(tmp_path: Path) -> None:
    # 8 ranks, 5 all-reduces. Collective 0: rank 5 arrives at +100 + 50 + 20,000 = +20,150 us;
    # the second-last is rank 7 at +170: lateness 19,980 us; the others wait
    # sum over r != 5 of (20,150 - 100 - 10 r) = 7 x 20,050 - 230 = 140,120 us. Collectives 1-4:
    # ranks 0, 1, 2, 3 last by 10 us; the others wait 70 + 60 + ... + 10 + 0 = 280 us each.
    # All the wait: 140,120 + 4 x 280 = 141,240 us. Rank 5's lateness causes 19,980 x 7 =
    # 139,860 us of it: 99.0 % >= 50 % (and >= 2 x 1/8). Last once of 5: the count says nothing.
    f = findings(tmp_path, rotating_job(8, 5, {(0, 5): 20_000}), 5)
    rows = f[f["id"] == "straggler"]
    assert rows["ranks"].tolist() == [[5]]
    s = rows.iloc[0]
    ev = s["evidence"]
    assert ev["last_count"] == 1 and ev["collectives"] == 5
    assert ev["wait_all_ns"] == 141_240_000 and ev["wait_due_ns"] == 139_860_000
    assert ev["wait_due_pct"] == pytest.approx(100 * 139_860 / 141_240)
    assert s["time_at_stake_ns"] == 19_980_000  # its lateness, as for the count criterion
    assert "99% of the wait in collectives" in s["title"]


def test_rotating_lateness_names_no_one(tmp_path: Path) -> None:
    # Without the delay each collective's last rank (7, 0, 1, 2, 3) causes 10 x 7 = 70 us of
    # the 5 x 280 = 1,400 us of wait: 5 % each, and each is last once: no straggler.
    f = findings(tmp_path, rotating_job(8, 5, {}), 5)
    assert "straggler" not in set(f["id"])


def test_two_ranks_need_more_than_an_even_share(tmp_path: Path) -> None:
    # 2 ranks, 5 collectives: rank 1 last in collectives 0, 2, 4 and rank 0 in 1, 3 (the
    # rotation), each by 10 us + 1 ms of delay: rank 1 causes 3/5 = 60 % of the wait, above 50 %
    # but under twice an even share (2 x 50 % = 100 %): with two ranks one of them is always
    # last, so 60 % is no straggler (and 3 of 5 at p0 = 1/2 is chance: P = 0.5).
    delay = {(s, (s - 1) % 2): 1_000.0 for s in range(5)}
    f = findings(tmp_path, rotating_job(2, 5, delay), 5)
    assert "straggler" not in set(f["id"])
