"""``straggler``: a rank last into collectives far more often than chance."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ....errors import OptionError
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns
from ..thresholds import Thresholds


@dataclass(frozen=True)
class StragglerThresholds(Thresholds):
    """The thresholds of ``straggler``."""

    #: A collective counts against its last rank only when that rank
    #: arrived at least this much after the second-last.
    straggler_min_lateness_ns: int = 5_000
    #: The rank must be last (as above) in at least this many collectives.
    straggler_min_collectives: int = 3
    #: And that often with a probability at most this by chance (binomial
    #: tail with p = 1 / ranks per collective).
    straggler_max_p_value: float = 0.01
    #: Or (however seldom it is last) the wait its lateness causes, lateness x (ranks - 1)
    #: summed where it is last, is at least this share (%) of all the wait in collectives,
    #: and at least twice an even share (2 x the mean of 100 / ranks over collectives):
    #: one rank holds up most of the job.
    straggler_min_wait_share_pct: float = 50.0

    def check(self) -> None:
        if self.straggler_max_p_value > 1:
            raise OptionError(f"FindingRules.straggler_max_p_value must be at most 1, got {self.straggler_max_p_value}")


@rule(
    id="straggler",
    order=50,
    thresholds=StragglerThresholds,
    text="A rank is last into a collective (by >= {straggler_min_lateness_ns} ns over the "
    "second-last) in >= {straggler_min_collectives} collectives, with a binomial "
    "probability <= {straggler_max_p_value} of being last that often by chance; or the wait its "
    "lateness causes (lateness x (ranks - 1) where it is last) is >= {straggler_min_wait_share_pct}% "
    "(and >= twice an even share) of all the wait in collectives.",
    analyses="tv.stragglers, tv.stragglers(by='collective')",
)
def straggler(ctx: Context, r: StragglerThresholds) -> list[Finding]:
    coll = ctx.stragglers("collective")
    per = ctx.stragglers("rank")
    if coll.empty or per.empty:
        return []
    counted = coll.loc[coll["lateness_ns"] >= r.straggler_min_lateness_ns]
    chance = float((1.0 / coll["ranks"].to_numpy()).mean())
    # The wait in collectives each last rank's lateness causes: had it arrived with the
    # second-last, each of the other ranks-1 ranks would have waited lateness less.
    due_all = counted["lateness_ns"].to_numpy(dtype=float) * (counted["ranks"].to_numpy(dtype=float) - 1)
    total_wait = float(coll["wait_ns"].sum())
    # An even share of the wait is the chance of being last (1 / ranks per collective).
    share_min = max(float(r.straggler_min_wait_share_pct), 2.0 * 100.0 * chance)
    out = []
    for _, row in per.iterrows():
        k_rank = int(row["rank"])
        is_mine = (counted["last_rank"] == k_rank).to_numpy()
        mine = counted.loc[is_mine]
        k = len(mine)
        n = int(row["collectives"])
        if k == 0 or n <= 0:
            continue
        due = float(due_all[is_mine].sum())
        due_pct = 100.0 * due / total_wait if total_wait > 0 else 0.0
        p_value = binom_tail(n, k, chance)
        by_count = k >= r.straggler_min_collectives and p_value <= r.straggler_max_p_value
        by_wait = due_pct >= share_min
        if not (by_count or by_wait):
            continue
        lateness = int(mine["lateness_ns"].sum())
        caused = int(mine["wait_ns"].sum())
        kinds = mine["collective"].value_counts()
        kinds_list = sorted(((str(a), int(b)) for a, b in kinds.items()), key=lambda kv: (-kv[1], kv[0]))
        evidence = {
            "rank": k_rank,
            "collectives": n,
            "last_count": k,
            "last_pct": 100.0 * k / n,
            "chance_pct": 100.0 * chance,
            "p_value": p_value,
            "lateness_ns": lateness,
            "mean_lateness_ns": lateness / k,
            "wait_caused_ns": caused,
            "mean_delay_ns": int(row["mean_delay_ns"]),
            "max_delay_ns": int(row["max_delay_ns"]),
            "last_in": [{"collective": a, "count": b} for a, b in kinds_list],
            "wait_due_ns": round(due),
            "wait_due_pct": due_pct,
            "wait_all_ns": round(total_wait),
        }
        due_text = (
            f" Its lateness alone made the others wait {fmt_ns(due)}, {due_pct:.0f}% of all the wait in collectives "
            f"({fmt_ns(total_wait)})."
            if by_wait
            else ""
        )
        if by_count:
            title = (
                f"Straggler: rank {k_rank} is last into {k} of {n} collectives "
                f"(chance: {100.0 * chance:.3g}%), holding them up {fmt_ns(lateness)} in all"
            )
            why = f"by chance a rank is last in 1 of {1.0 / chance:.3g}, and {k} or more of {n} has {_p_text(p_value)}."
        else:
            title = (
                f"Straggler: rank {k_rank} holds up collectives {fmt_ns(lateness)}, causing {due_pct:.0f}% of "
                "the wait in collectives"
            )
            why = (
                f"too seldom to tell from chance by the count alone ({_p_text(p_value)}), but late by enough to matter."
            )
        detail = (
            f"Rank {k_rank} arrived last, at least {fmt_ns(r.straggler_min_lateness_ns)} after the second-last, at {k} of "
            f"the {n} collectives it joined ({', '.join(f'{b} {a}' for a, b in kinds_list)}); {why} It held them up by {fmt_ns(lateness / k)} on average "
            f"({fmt_ns(lateness)} in all); the other ranks' arrival wait in those collectives (from their arrival to "
            f"its) is {fmt_ns(caused)}.{due_text} Look at what "
            f"rank {k_rank} does before them: more compute (load imbalance), host stalls or data loading, a slower "
            "GPU or link, or another process on its host."
        )
        out.append(
            ctx.finding(
                "straggler",
                title=title,
                detail=detail,
                time_at_stake_ns=lateness,
                ranks=[k_rank],
                evidence=evidence,
            )
        )
    return out


def binom_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (no overflow for large n)."""
    if k <= 0 or p >= 1:
        return 1.0
    if p <= 0 or k > n:
        return 0.0
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)
        for i in range(k, n + 1)
    ]
    top = max(logs)
    return float(min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs)))


def _p_text(p: float) -> str:
    return f"p = {p:.2g}" if p >= 1e-300 else "p < 1e-300"
