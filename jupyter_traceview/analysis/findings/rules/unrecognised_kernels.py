"""``unrecognised_kernels``: much GPU time in kernels no classification pattern knows (``info``).

A kernel whose name matches none of the classifier's patterns, and whose launch context
does not say it communicates (``model/classify.py``, rules 6 and 7), is counted as compute
by default. When such kernels hold a large share of a rank's GPU time, every figure that
splits compute from communication (communication %, exposed communication, overlap, the
efficiency model) rests on a guess: the rule says so once, with the one line that would
classify them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ....model.text import as_text
from ...concurrency import kernel_overlap_stats
from ..context import Context, Finding
from ..registry import rule
from ..text import fmt_ns, fmt_pct, ranks_text, short
from ..thresholds import Thresholds

#: At most this many patterns in the suggested line (the largest kernels first).
MAX_PATTERNS = 5


@dataclass(frozen=True)
class UnrecognisedKernelsThresholds(Thresholds):
    """The thresholds of ``unrecognised_kernels``."""

    #: Reported when compute kernels that no pattern recognises take at least this share (%)
    #: of a rank's GPU work time (kernels, copies and sets, summed).
    unrecognised_min_pct: float = 10.0


def stem(name: str) -> str:
    """The part of a kernel name that names it: without ``void``, template arguments and
    parameters; its namespace (``ep_lib::``) where it has one, so that one pattern covers a
    library's kernels."""
    text = re.sub(r"^void\s+", "", name.strip()).replace("(anonymous namespace)::", "")
    text = re.split(r"[<(]", text, maxsplit=1)[0].strip()
    if "::" in text:
        text = text.rsplit("::", 1)[0] + "::"
    return text or name.strip()[:40]


def literal(pattern: str) -> str:
    """A pattern written as Python source: a raw string where one can hold it."""
    return f'r"{pattern}"' if '"' not in pattern and not pattern.endswith("\\") else repr(pattern)


def suggestion(names: list[str]) -> tuple[list[str], str]:
    """The patterns that match ``names`` (largest first, at most :data:`MAX_PATTERNS`) and
    the one line that classifies them as communication."""
    patterns: list[str] = []
    for n in names:
        p = re.escape(stem(n))
        if p not in patterns:
            patterns.append(p)
        if len(patterns) == MAX_PATTERNS:
            break
    line = (
        "trace = trace.with_classifier(tv.Classifier().extend(communication=["
        + ", ".join(literal(p) for p in patterns)
        + "]))"
    )
    return patterns, line


@rule(
    id="unrecognised_kernels",
    order=105,
    thresholds=UnrecognisedKernelsThresholds,
    text="Compute kernels that no classification pattern recognises (tv.Classifier's patterns, "
    "launch context and stream) take >= {unrecognised_min_pct}% of a rank's GPU work time: "
    "whether they compute or communicate is a guess (no time at stake: info).",
    analyses="tv.kernel_overlap_stats(per='rank'), tv.Classifier",
)
def unrecognised_kernels(ctx: Context, r: UnrecognisedKernelsThresholds) -> list[Finding]:
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    if ks.empty:
        return []
    clf = ctx.trace.classifier
    comp = ks.loc[ks["gpu_class"] == "compute"]
    known = {str(n): clf.recognises(str(n)) for n in comp["name"].unique()}
    unknown = comp.loc[~as_text(comp["name"]).map(known).astype(bool)]
    if unknown.empty:
        return []
    total = ks.groupby("rank")["total_ns"].sum()
    mine = unknown.groupby("rank")["total_ns"].sum()
    share = (100.0 * mine / total.reindex(mine.index)).dropna()
    named = share[share >= r.unrecognised_min_pct]
    if named.empty:
        return []
    worst = int(named.idxmax())
    kernels: pd.DataFrame = unknown.loc[unknown["rank"] == worst].sort_values("total_ns", ascending=False)
    names = [str(n) for n in kernels["name"]]
    patterns, line = suggestion(names)
    listed: list[dict[str, Any]] = [
        {"name": str(row["name"]), "count": int(row["count"]), "total_ns": int(row["total_ns"])}
        for _, row in kernels.head(10).iterrows()
    ]
    k0 = listed[0]
    pct = float(named[worst])
    ranks = sorted(int(x) for x in named.index)
    title = f"{fmt_pct(pct)} of GPU time in kernels no pattern recognises: {short(k0['name'], 50)}" + (
        f" and {len(names) - 1} more" if len(names) > 1 else ""
    )
    detail = (
        f"On {ranks_text(ranks)} kernels that match none of the classifier's patterns take "
        f"{fmt_pct(pct)} of the GPU work time" + ("" if len(ranks) == 1 else f" (rank {worst}, the most)") + ": "
        f"{short(k0['name'])} ({fmt_ns(k0['total_ns'])} over {k0['count']} runs)"
        + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        + ". They were launched under no communication operator or annotation and share their stream with "
        "compute, so they count as compute. If they communicate (an expert-parallel or custom collective "
        f"library), classify them and every communication figure follows: `{line}`. If they compute, "
        "`extend(compute=[...])` with the same patterns marks them as known."
    )
    evidence = {
        "worst_rank": worst,
        "share_pct": {int(k): float(v) for k, v in named.items()},
        "kernels": listed,
        "patterns": patterns,
        "line": line,
    }
    return [
        ctx.finding(
            "unrecognised_kernels",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=ranks,
            evidence=evidence,
            info=True,
        )
    ]
