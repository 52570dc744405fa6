"""``collective_wait``: ranks waiting in collectives for late peers (their *exposed peer wait*).

The words (docs/semantics.md, "Waits: one word per quantity"): a rank's *arrival wait* at a
collective is the time from its arrival to the last rank's (``tv.stragglers``' ``wait_ns``);
its *exposed peer wait* is the part of its summed arrival wait the step pays, at most its
exposed communication (``Context.comm_split``'s ``waiting_ns``). This rule reports the
second; ``straggler`` names who causes the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..context import Context, Finding
from ..registry import rule
from ..text import amount, fmt_ns, fmt_pct, ordinal, ranks_text
from ..thresholds import Thresholds


@dataclass(frozen=True)
class CollectiveWaitThresholds(Thresholds):
    """The thresholds of ``collective_wait``."""

    #: A rank is named when its exposed peer wait (its arrival wait in collectives, at most
    #: its exposed communication) is at least this share (%) of its GPU span.
    collective_wait_min_pct: float = 5.0


@rule(
    id="collective_wait",
    order=30,
    thresholds=CollectiveWaitThresholds,
    text="Exposed peer wait: a rank's arrival wait in collectives (time from its arrival to the last "
    "rank's, stragglers wait_ns), at most its exposed communication, >= {collective_wait_min_pct}% of its "
    "GPU span.",
    analyses="tv.stragglers(by='collective'), tv.stragglers(by='arrival')",
)
def collective_wait(ctx: Context, r: CollectiveWaitThresholds) -> list[Finding]:
    split = ctx.comm_split()
    coll = ctx.stragglers("collective")
    if coll.empty:
        return []
    named = [
        k
        for k, v in split.items()
        if v["waiting_ns"] > 0 and 100.0 * v["waiting_ns"] / v["gpu_span_ns"] >= r.collective_wait_min_pct
    ]
    if not named:
        return []
    worst = max(named, key=lambda k: (split[k]["waiting_ns"], -k))
    w = split[worst]
    share = 100.0 * w["waiting_ns"] / w["gpu_span_ns"]
    top = coll.sort_values(["wait_ns", "collective_id"], ascending=[False, True], kind="stable").head(3)
    top_list: list[dict[str, Any]] = [
        {
            "collective_id": int(c["collective_id"]),
            "collective": str(c["collective"]),
            "seq": int(c["seq"]),
            "stream": int(c["stream"]),
            "ordinal": int(c["ordinal"]),
            "last_rank": int(c["last_rank"]),
            "spread_ns": int(c["spread_ns"]),
            "wait_ns": int(c["wait_ns"]),
        }
        for _, c in top.iterrows()
    ]
    lasts = coll["last_rank"].value_counts()
    last_counts = sorted(((int(k), int(v)) for k, v in lasts.items()), key=lambda kv: (-kv[1], kv[0]))
    c0 = top_list[0]
    which = (
        f"the {ordinal(c0['ordinal'] + 1)} {c0['collective']} (stream {c0['stream']})"
        if c0["ordinal"] >= 0
        else f"{c0['collective']} #{c0['seq']}"
    )
    most_late = ", ".join(f"rank {k} ({v} of {len(coll)})" for k, v in last_counts[:3])
    detail = (
        f"On {ranks_text(named)} collectives spin waiting for the last rank to arrive, with no compute alongside "
        f"(exposed peer wait): {amount(named, worst, fmt_ns(w['waiting_ns']))} ({fmt_pct(share)} of its GPU span). "
        f"The most arrival wait (time from each rank's arrival to the last rank's, {fmt_ns(c0['wait_ns'])} over all "
        f"ranks) is at {which}, where rank {c0['last_rank']} arrived {fmt_ns(c0['spread_ns'])} after the first; last "
        f"to arrive most often: {most_late}. "
        "Speed up or rebalance the late ranks (see the load_imbalance and straggler findings); a late first "
        "collective often means the ranks began the step at different times (data loading, host work before "
        "it). Arrivals compare clocks across ranks: with several hosts, align them first (tv.align_clocks(trace))."
    )
    title = (
        f"Ranks wait for late peers in collectives: exposed peer wait {fmt_ns(w['waiting_ns'])} on rank {worst} "
        f"({fmt_pct(share)} of its GPU span)"
    )
    evidence = {
        "worst_rank": worst,
        "per_rank": [{"rank": k, **split[k]} for k in named],
        "longest_waits": top_list,
        "last_arrivals": [{"rank": k, "collectives": v} for k, v in last_counts],
        "collectives": len(coll),
    }
    return [
        ctx.finding(
            "collective_wait",
            title=title,
            detail=detail,
            time_at_stake_ns=w["waiting_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]
