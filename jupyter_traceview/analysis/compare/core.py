"""``tv.compare``: why one run's steps take longer than another's, in causes that add up.

The plan: cut every step of every rank of each run into causes (:mod:`.parts`), match the
steps of the two runs (by step id, else by order; the first step of a side with three or
more is warm-up and left out), average the causes over the ranks both runs have (the job's
step time is its slowest rank's, so the gap between the slowest rank and the mean is the
``stragglers`` cause), subtract the per-step means, and test each difference against the
step-to-step spread (:mod:`.noise`). Each cause's row adds exactly to the change of the mean
step time: the parts of a step add up to its duration, the means of sums are the sums of
means.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ... import format as fmt
from ...errors import OptionError, TraceSelectionError
from ...model.trace import Trace
from .noise import LEVEL, MIN_STEPS, RESAMPLES, SEED, bootstrap
from .parts import HIGHLIGHT, OPERATOR, OTHER_OPERATORS, STRAGGLERS, RankParts, side_parts

__all__ = ["CAUSE_COLUMNS", "Comparison", "compare"]

#: Verdicts of :class:`Comparison`.
VERDICTS = ("faster", "slower", "same")
#: With fewer than ``noise.MIN_STEPS`` steps on a side the noise cannot be estimated: the
#: verdict is ``same`` when the step time moved by less than this (%).
NO_NOISE_SAME_PCT = 1.0
#: A side with at least this many steps loses its first one (warm-up).
WARMUP_MIN_STEPS = 3
#: A step is a stall (left out) when it lasts more than ``STALL_FACTOR`` times the side's
#: median step and more than the median plus ``STALL_MADS`` scaled median absolute
#: deviations; at most ``STALL_MAX_SHARE`` of a side's steps are left out that way (more
#: than that are the run's behaviour, kept).
STALL_FACTOR = 1.5
STALL_MADS = 10.0
STALL_MAX_SHARE = 0.1

CAUSE_COLUMNS = {
    "cause": "str",
    "status": "str",
    "base_ns": "float64",
    "new_ns": "float64",
    "delta_ns": "float64",
    "share_pct": "float64",
    "ci_low_ns": "float64",
    "ci_high_ns": "float64",
    "within_noise": "bool",
    "evidence": "str",
    "rank": "int64",
    "base_start_ns": "int64",
    "base_end_ns": "int64",
    "new_start_ns": "int64",
    "new_end_ns": "int64",
    "highlight": "str",
}
STEP_COLUMNS = {"step_base": "int64", "step_new": "int64", "base_ns": "int64", "new_ns": "int64", "delta_ns": "int64"}
RANK_COLUMNS = {
    "rank": "int64",
    "base_ns": "float64",
    "new_ns": "float64",
    "delta_ns": "float64",
    "delta_pct": "float64",
    "top_cause": "str",
    "top_cause_delta_ns": "float64",
}


@dataclass(frozen=True, repr=False)
class Comparison:
    """What :func:`compare` found; the tables' columns are documented there.

    ``base_ns``/``new_ns`` are the mean step times (ns) over the matched steps, ``delta_ns``
    their difference (the sum of ``causes["delta_ns"]``), ``delta_pct`` it over ``base_ns``;
    ``ci_low_ns``/``ci_high_ns`` its bootstrap interval (NaN when the noise could not be
    estimated), ``spread_base_ns``/``spread_new_ns`` the standard deviation of each side's
    step time; ``noise_test`` says how the noise was judged.
    """

    causes: pd.DataFrame
    verdict: Literal["faster", "slower", "same"]
    steps: pd.DataFrame
    per_rank: pd.DataFrame
    warnings: tuple[str, ...]
    base_ns: float
    new_ns: float
    delta_ns: float
    delta_pct: float
    ci_low_ns: float
    ci_high_ns: float
    spread_base_ns: float
    spread_new_ns: float
    noise_test: str
    ranks: tuple[int, ...] = field(default=())

    def headline(self) -> str:
        """One line: the verdict, the step times and the noise."""
        sign = "+" if self.delta_ns >= 0 else "-"
        return (
            f"{self.verdict}: mean step {fmt.duration(self.base_ns)} -> {fmt.duration(self.new_ns)} "
            f"({sign}{fmt.duration(abs(self.delta_ns))}, {sign}{fmt.percent(abs(self.delta_pct))}) over "
            f"{fmt.plural(len(self.steps), 'matched step')}; {self.noise_test}"
        )

    def __repr__(self) -> str:
        top = self.causes.head(10)[["cause", "status", "base_ns", "new_ns", "delta_ns", "within_noise"]]
        return f"<Comparison {self.headline()}>\n{top.to_string(index=False)}"

    def _repr_markdown_(self) -> str:
        """Jupyter shows the PR-comment summary (:func:`.markdown.markdown`)."""
        from .markdown import markdown

        return markdown(self)

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-able values (the CLI's ``--json``)."""

        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}
                for row in df.astype(object).to_dict(orient="records")
            ]

        def num(v: float) -> float | None:
            return float(v) if np.isfinite(v) else None

        return {
            "verdict": self.verdict,
            "base_ns": num(self.base_ns),
            "new_ns": num(self.new_ns),
            "delta_ns": num(self.delta_ns),
            "delta_pct": num(self.delta_pct),
            "ci_low_ns": num(self.ci_low_ns),
            "ci_high_ns": num(self.ci_high_ns),
            "spread_base_ns": num(self.spread_base_ns),
            "spread_new_ns": num(self.spread_new_ns),
            "noise_test": self.noise_test,
            "ranks": list(self.ranks),
            "causes": records(self.causes),
            "steps": records(self.steps),
            "per_rank": records(self.per_rank),
            "warnings": list(self.warnings),
        }


def compare(
    base: Trace,
    new: Trace,
    *,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    top_operators: int = 12,
) -> Comparison:
    """Why ``new``'s steps take longer (or less) than ``base``'s: causes that add up, and a verdict.

    Each step of each rank is cut into causes (docs/semantics.md "Comparing runs"): the
    operators that ran (GPU compute time shared among the operators that launched it, or, on
    a CPU-only rank, the CPU time of the step thread's outermost operators), exposed
    communication, memory copies, and the time the GPU waited on the host: host syncs, data
    loading, launch overhead, Python and other host time; plus ``stragglers``, the job's
    step time (its slowest rank's) beyond the mean over ranks. Operators are named by
    their position in the call tree (the annotations above them and their name), so a
    renamed kernel under the same operator pairs with its old self.

    Steps are matched by ProfilerStep id when the two runs share ids, else in order; the
    first step of a side with three or more is warm-up and left out (said in
    ``warnings``). Runs with different numbers of ranks are compared over the ranks both
    have, rank by rank, with a warning.

    Parameters
    ----------
    base, new : Trace
        The reference run and the run compared with it.
    ranks : int or iterable of int, optional
        Compare only these ranks (each must be in both runs).
    iterations : int or iterable of int, optional
        Only these ProfilerStep ids (on both sides; warm-up is then not dropped).
    top_operators : int, default 12
        Operators listed one per row (the largest changes); the others are summed in the
        ``operators (other)`` row.

    Returns
    -------
    Comparison
        ``causes``: one row per cause, largest ``|delta_ns|`` first:
        ``cause`` (str); ``status`` (str: ``new``, ``gone``, ``slower``, ``faster`` or
        ``same``); ``base_ns``, ``new_ns`` (float, ns: mean per matched step); ``delta_ns``
        (float, ns, new - base; the rows add up to ``Comparison.delta_ns``); ``share_pct``
        (float, %: of the change of the step time, signed); ``ci_low_ns``, ``ci_high_ns``
        (float, ns: the bootstrap interval of ``delta_ns``, NaN without noise estimate);
        ``within_noise`` (bool: the interval contains 0); ``evidence`` (str); links into
        both timelines (``Timeline.show_range``, ``Timeline.highlight``): ``rank`` (int,
        the rank where the cause moved most), ``base_start_ns``, ``base_end_ns``,
        ``new_start_ns``, ``new_end_ns`` (int, absolute ns: the matched pair of steps where
        it moved most), ``highlight`` (str: a name pattern, empty if none).

        ``steps``: one row per matched step: ``step_base``, ``step_new`` (int);
        ``base_ns``, ``new_ns``, ``delta_ns`` (int, ns: the job's step time, its slowest
        rank's).

        ``per_rank``: one row per compared rank: ``rank``; ``base_ns``, ``new_ns``,
        ``delta_ns`` (float, ns: the rank's mean step); ``delta_pct`` (float, %);
        ``top_cause`` (str), ``top_cause_delta_ns`` (float, ns): its largest change.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> t = tv.load(tv.sample_path())
    >>> c = tv.compare(t, t)
    >>> c.verdict, float(c.causes["delta_ns"].sum())
    ('same', 0.0)
    """
    if not isinstance(top_operators, (int, np.integer)) or isinstance(top_operators, bool) or top_operators < 0:
        raise OptionError(f"top_operators={top_operators!r} is not accepted; give a count >= 0")
    tb, tn = _as_trace(base, "base"), _as_trace(new, "new")
    notes: list[str] = []
    if ranks is not None:
        wanted = [ranks] if isinstance(ranks, (int, np.integer)) else [int(r) for r in ranks]
        for side, t in (("base", tb), ("new", tn)):
            missing = [r for r in wanted if r not in t.ranks]
            if missing:
                raise TraceSelectionError.unknown(f"rank (in {side})", missing[0], t.ranks)
        tb, tn = tb.select(ranks=wanted), tn.select(ranks=wanted)
    pb, pn = side_parts(tb), side_parts(tn)
    if not pb or not pn:
        sides = " and ".join(side for side, p in (("base", pb), ("new", pn)) if not p)
        notes.append(
            f"{sides}: no ProfilerStep steps; each rank's whole trace is compared as one step (call "
            "prof.step() once per iteration for a step-by-step comparison and a noise estimate)"
        )
        pb, pn = side_parts(tb, whole=True), side_parts(tn, whole=True)
    common = sorted(set(pb) & set(pn))
    if not common:
        raise TraceSelectionError(
            f"compare: the runs share no rank with steps (base: {fmt.ranges(pb)}, new: {fmt.ranges(pn)})"
        )
    if len(tb.ranks) != len(tn.ranks):
        notes.append(
            f"different world sizes: base has {fmt.plural(len(tb.ranks), 'rank')}, new "
            f"{fmt.plural(len(tn.ranks), 'rank')}; compared rank by rank over the {len(common)} both have "
            f"({fmt.ranges(common)}): per-rank work differs with the world size, read the causes with that in mind"
        )
    elif set(pb) != set(pn):
        notes.append(f"ranks {fmt.ranges(set(pb) ^ set(pn))} have steps on one side only: left out")
    gpu_b, gpu_n = any(pb[r].gpu for r in common), any(pn[r].gpu for r in common)
    if gpu_b != gpu_n:
        notes.append(
            f"one run has GPU work and the other not (base: {'GPU' if gpu_b else 'CPU only'}, new: "
            f"{'GPU' if gpu_n else 'CPU only'}): operators are GPU time on one side, CPU time on the other"
        )
    sel = None if iterations is None else _ids(iterations)
    ids_b, ids_n = _steps_of(pb, common, sel, "base", notes), _steps_of(pn, common, sel, "new", notes)
    if sel is None:
        ids_b = _without_stalls(pb, common, ids_b, "base", notes)
        ids_n = _without_stalls(pn, common, ids_n, "new", notes)
    pairs = _match(ids_b, ids_n, notes)
    if not pairs:
        raise TraceSelectionError("compare: no steps to compare after matching (see iterations=)")
    sb, sn = [p[0] for p in pairs], [p[1] for p in pairs]
    mb, dur_b, rank_b = _job(pb, common, sb)
    mn, dur_n, rank_n = _job(pn, common, sn)
    columns = _fold_operators(mb, mn, top_operators)
    mb, mn = _folded(mb, columns), _folded(mn, columns)
    vb, vn = mb.to_numpy(dtype=np.float64), mn.to_numpy(dtype=np.float64)
    step_b, step_n = vb.sum(axis=1), vn.sum(axis=1)
    ci = bootstrap(np.column_stack((vb, step_b)), np.column_stack((vn, step_n)))
    base_ns, new_ns = float(step_b.mean()), float(step_n.mean())
    delta = new_ns - base_ns
    delta_pct = 100.0 * delta / base_ns if base_ns > 0 else float("nan")
    if ci is None:
        noise_test = f"noise not estimated (fewer than {MIN_STEPS} steps on a side): same within {NO_NOISE_SAME_PCT:g}%"
        notes.append(noise_test)
        within = np.zeros(len(columns), dtype=bool)
        lo = hi = np.full(len(columns), np.nan)
        step_same = abs(delta_pct) < NO_NOISE_SAME_PCT if np.isfinite(delta_pct) else True
        ci_low = ci_high = float("nan")
    else:
        within_all = ci.contains_zero()
        within, lo, hi = within_all[:-1], ci.low[:-1], ci.high[:-1]
        step_same = bool(within_all[-1])
        ci_low, ci_high = float(ci.low[-1]), float(ci.high[-1])
        noise_test = (
            f"bootstrap {LEVEL:.0%} interval of the mean-step difference [{fmt.duration(ci_low)}, "
            f"{fmt.duration(ci_high)}] ({RESAMPLES} resamples, seed {SEED}); step-to-step spread (std) "
            f"{fmt.duration(float(step_b.std()))} base, {fmt.duration(float(step_n.std()))} new"
        )
    verdict: Literal["faster", "slower", "same"] = "same" if step_same else ("slower" if delta > 0 else "faster")
    causes = _causes(columns, vb, vn, lo, hi, within, delta, (pb, pn), common, (sb, sn), (mb, mn), (rank_b, rank_n))
    steps = pd.DataFrame(
        {
            "step_base": sb,
            "step_new": sn,
            "base_ns": dur_b,
            "new_ns": dur_n,
            "delta_ns": np.asarray(dur_n, dtype=np.int64) - np.asarray(dur_b, dtype=np.int64),
        }
    ).astype(STEP_COLUMNS)
    per_rank = _per_rank(pb, pn, common, sb, sn, columns)
    return Comparison(
        causes=causes,
        verdict=verdict,
        steps=steps,
        per_rank=per_rank,
        warnings=tuple(notes),
        base_ns=base_ns,
        new_ns=new_ns,
        delta_ns=delta,
        delta_pct=delta_pct,
        ci_low_ns=ci_low,
        ci_high_ns=ci_high,
        spread_base_ns=float(step_b.std()),
        spread_new_ns=float(step_n.std()),
        noise_test=noise_test,
        ranks=tuple(common),
    )


def _as_trace(t: object, which: str) -> Trace:
    if isinstance(t, Trace):
        return t
    raise TypeError(
        f"compare takes two Trace objects, got {type(t).__name__} for {which}: load paths first, "
        "tv.compare(tv.load(a), tv.load(b)) (or run `traceview compare A B`)"
    )


def _ids(iterations: Iterable[int] | int) -> set[int]:
    return {int(iterations)} if isinstance(iterations, (int, np.integer)) else {int(i) for i in iterations}


def _steps_of(
    parts: dict[int, RankParts], ranks: list[int], sel: set[int] | None, side: str, notes: list[str]
) -> list[int]:
    """The side's steps present on every compared rank, warm-up dropped (or those of ``sel``)."""
    sets = [set(parts[r].windows["step"].tolist()) for r in ranks]
    ids = sorted(set.intersection(*sets))
    partial = sorted(set.union(*sets) - set(ids))
    if partial:
        notes.append(f"{side}: {fmt.steps(partial)} not on every rank: left out")
    if sel is not None:
        missing = sorted(sel - set(ids))
        if missing:
            raise TraceSelectionError.unknown(f"iteration (in {side})", missing[0], ids)
        return [i for i in ids if i in sel]
    if len(ids) >= WARMUP_MIN_STEPS:
        notes.append(f"{side}: {fmt.steps(ids[:1])} left out as warm-up")
        return ids[1:]
    return ids


def _without_stalls(
    parts: dict[int, RankParts], ranks: list[int], ids: list[int], side: str, notes: list[str]
) -> list[int]:
    """``ids`` without the stalls: steps far longer than the side's others (``STALL_*``)."""
    if not ids:
        return ids
    _, dur, _ = _job(parts, ranks, ids)
    d = dur.astype(np.float64)
    med = float(np.median(d))
    mad = 1.4826 * float(np.median(np.abs(d - med)))
    stall = (d > STALL_FACTOR * med) & (d > med + STALL_MADS * mad)
    if not stall.any() or stall.sum() > int(STALL_MAX_SHARE * len(d)):
        return ids
    out = [i for i, s in zip(ids, stall, strict=True) if not s]
    shown = ", ".join(f"#{i} ({fmt.duration(x)})" for i, x, s in zip(ids, d, stall, strict=True) if s)
    notes.append(
        f"{side}: step {shown} left out as a stall (over {STALL_FACTOR:g}x the median step, "
        f"{fmt.duration(med)}, and {STALL_MADS:g} deviations above it)"
    )
    return out


def _match(ids_b: list[int], ids_n: list[int], notes: list[str]) -> list[tuple[int, int]]:
    """Pairs of (base step, new step): by id when the runs share ids, else by order."""
    shared = sorted(set(ids_b) & set(ids_n))
    if shared and 2 * len(shared) >= min(len(ids_b), len(ids_n)):
        pairs = [(s, s) for s in shared]
        how = "by step id"
    else:
        n = min(len(ids_b), len(ids_n))
        pairs = list(zip(ids_b[:n], ids_n[:n], strict=True))
        how = "in order (the runs' step ids differ)"
    left = len(ids_b) + len(ids_n) - 2 * len(pairs)
    notes.append(
        f"steps matched {how}: {fmt.plural(len(pairs), 'pair')}"
        + (f"; {fmt.plural(left, 'step')} without a match left out" if left else "")
    )
    return pairs


def _rows(part: RankParts, steps: list[int]) -> np.ndarray:
    pos = pd.Index(part.windows["step"]).get_indexer(steps)
    return np.asarray(pos)


def _job(
    parts: dict[int, RankParts], ranks: list[int], steps: list[int]
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Per step: the mean over ranks of each cause, plus ``stragglers`` (slowest rank's step
    minus the mean); the job's step times; each step's slowest rank."""
    frames = [parts[r].values.iloc[_rows(parts[r], steps)].reset_index(drop=True) for r in ranks]
    cols = list(dict.fromkeys(c for f in frames for c in f.columns))
    stack = np.stack([f.reindex(columns=cols, fill_value=0).to_numpy(dtype=np.float64) for f in frames])
    durs = stack.sum(axis=2)  # ranks x steps
    mean = pd.DataFrame(stack.mean(axis=0), columns=cols)
    slowest = durs.max(axis=0)
    mean[STRAGGLERS] = slowest - durs.mean(axis=0)
    return mean, slowest.astype(np.int64), np.asarray(ranks)[durs.argmax(axis=0)]


def _fold_operators(mb: pd.DataFrame, mn: pd.DataFrame, top: int) -> list[str]:
    """The columns kept: the ``top`` operators with the largest change, then the other causes
    (``OTHER_OPERATORS`` collects the operators not kept)."""
    cols = list(dict.fromkeys([*mb.columns, *mn.columns]))
    delta = mn.reindex(columns=cols, fill_value=0).mean() - mb.reindex(columns=cols, fill_value=0).mean()
    ops = [c for c in cols if c.startswith(OPERATOR) or c.startswith("kernel ")]
    ops.sort(key=lambda c: -abs(float(delta[c])))
    rest = [c for c in cols if c not in ops and c != OTHER_OPERATORS]
    kept = ops[:top]
    if len(ops) > top or OTHER_OPERATORS in cols:
        kept.append(OTHER_OPERATORS)
    return kept + rest


def _folded(m: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = m.reindex(columns=columns, fill_value=0.0)
    other = [c for c in m.columns if c not in columns]
    if other:
        out[OTHER_OPERATORS] = out[OTHER_OPERATORS] + m[other].sum(axis=1)
    return out


def _status(b: float, n: float, within: bool) -> str:
    if b == 0 and n > 0:
        return "new"
    if n == 0 and b > 0:
        return "gone"
    if within or n == b:
        return "same"
    return "slower" if n > b else "faster"


def _causes(
    columns: list[str],
    vb: np.ndarray,
    vn: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    within: np.ndarray,
    total: float,
    parts: tuple[dict[int, RankParts], dict[int, RankParts]],
    ranks: list[int],
    steps: tuple[list[int], list[int]],
    jobs: tuple[pd.DataFrame, pd.DataFrame],
    slowest: tuple[np.ndarray, np.ndarray],
) -> pd.DataFrame:
    b_mean, n_mean = vb.mean(axis=0), vn.mean(axis=0)
    delta = n_mean - b_mean
    rows = []
    for i, c in enumerate(columns):
        if b_mean[i] == 0 and n_mean[i] == 0:
            continue
        rank, pair = _where(c, parts, ranks, steps, jobs, slowest)
        wb = parts[0][rank].windows.iloc[_rows(parts[0][rank], [steps[0][pair]])[0]]
        wn = parts[1][rank].windows.iloc[_rows(parts[1][rank], [steps[1][pair]])[0]]
        rows.append(
            {
                "cause": c,
                "status": _status(float(b_mean[i]), float(n_mean[i]), bool(within[i])),
                "base_ns": float(b_mean[i]),
                "new_ns": float(n_mean[i]),
                "delta_ns": float(delta[i]),
                "share_pct": 100.0 * float(delta[i]) / total if total != 0 else float("nan"),
                "ci_low_ns": float(lo[i]),
                "ci_high_ns": float(hi[i]),
                "within_noise": bool(within[i]),
                "evidence": _evidence(c, float(b_mean[i]), float(n_mean[i]), parts, ranks, steps),
                "rank": int(rank),
                "base_start_ns": int(wb["start_ns"]),
                "base_end_ns": int(wb["end_ns"]),
                "new_start_ns": int(wn["start_ns"]),
                "new_end_ns": int(wn["end_ns"]),
                "highlight": _highlight(c),
            }
        )
    if not rows:
        return pd.DataFrame({k: pd.Series([], dtype=v) for k, v in CAUSE_COLUMNS.items()})
    out = pd.DataFrame(rows)
    out = out.iloc[np.argsort(-np.abs(out["delta_ns"].to_numpy()), kind="stable")].reset_index(drop=True)
    return out.astype(CAUSE_COLUMNS)


def _where(
    cause: str,
    parts: tuple[dict[int, RankParts], dict[int, RankParts]],
    ranks: list[int],
    steps: tuple[list[int], list[int]],
    jobs: tuple[pd.DataFrame, pd.DataFrame],
    slowest: tuple[np.ndarray, np.ndarray],
) -> tuple[int, int]:
    """The rank and matched pair where ``cause`` moved most (stragglers: the job's values and
    the new side's slowest rank)."""
    if cause == STRAGGLERS:
        d = jobs[1][cause].to_numpy() - jobs[0][cause].to_numpy()
        pair = int(np.argmax(np.abs(d)))
        return int(slowest[1][pair]), pair
    best, best_rank, best_pair = -1.0, ranks[0], 0
    for r in ranks:
        b = _column(parts[0][r], cause, steps[0])
        n = _column(parts[1][r], cause, steps[1])
        d = np.abs(n - b)
        if d.max() > best:
            best, best_rank, best_pair = float(d.max()), r, int(np.argmax(d))
    return best_rank, best_pair


def _column(part: RankParts, cause: str, steps: list[int]) -> np.ndarray:
    rows = _rows(part, steps)
    if cause not in part.values.columns:
        return np.zeros(len(rows))
    return np.asarray(part.values[cause].to_numpy()[rows], dtype=np.float64)


def _calls(parts: dict[int, RankParts], ranks: list[int], cause: str, steps: list[int]) -> float:
    per_rank = [
        float(parts[r].calls[cause].to_numpy()[_rows(parts[r], steps)].mean()) if cause in parts[r].calls else 0.0
        for r in ranks
    ]
    return float(np.mean(per_rank))


def _evidence(
    cause: str,
    b: float,
    n: float,
    parts: tuple[dict[int, RankParts], dict[int, RankParts]],
    ranks: list[int],
    steps: tuple[list[int], list[int]],
) -> str:
    text = f"{fmt.duration(b)} -> {fmt.duration(n)} a step (mean over ranks)"
    if cause.startswith(OPERATOR):
        cb, cn = _calls(parts[0], ranks, cause, steps[0]), _calls(parts[1], ranks, cause, steps[1])
        text += f"; calls a step {cb:.3g} -> {cn:.3g}"
        kb = next((p.kernels[cause] for p in parts[0].values() if cause in p.kernels), [])
        kn = next((p.kernels[cause] for p in parts[1].values() if cause in p.kernels), [])
        if kb or kn:
            gone = [k for k in kb if k not in kn][:2]
            added = [k for k in kn if k not in kb][:2]
            if gone or added:
                text += "; kernels " + ", ".join(fmt.short_name(k, 48) for k in gone) + " -> "
                text += ", ".join(fmt.short_name(k, 48) for k in added)
            else:
                text += "; top kernel " + fmt.short_name((kn or kb)[0], 48)
    elif cause == STRAGGLERS:
        text += " (the slowest rank's step beyond the mean over ranks)"
    return text


def _highlight(cause: str) -> str:
    import re

    if cause.startswith(OPERATOR) and cause != OTHER_OPERATORS:
        return "^" + re.escape(cause[len(OPERATOR) :].split(" > ")[-1]) + "$"
    if cause.startswith("kernel "):
        return "^" + re.escape(cause[len("kernel ") :]) + "$"
    return HIGHLIGHT.get(cause, "")


def _per_rank(
    pb: dict[int, RankParts],
    pn: dict[int, RankParts],
    ranks: list[int],
    sb: list[int],
    sn: list[int],
    columns: list[str],
) -> pd.DataFrame:
    rows = []
    for r in ranks:
        b = pb[r].values.iloc[_rows(pb[r], sb)]
        n = pn[r].values.iloc[_rows(pn[r], sn)]
        cols = list(dict.fromkeys([*b.columns, *n.columns]))
        d = n.reindex(columns=cols, fill_value=0).mean() - b.reindex(columns=cols, fill_value=0).mean()
        top = str(d.abs().idxmax()) if len(d) else ""
        bm, nm = float(b.to_numpy().sum(axis=1).mean()), float(n.to_numpy().sum(axis=1).mean())
        rows.append(
            {
                "rank": r,
                "base_ns": bm,
                "new_ns": nm,
                "delta_ns": nm - bm,
                "delta_pct": 100.0 * (nm - bm) / bm if bm > 0 else float("nan"),
                "top_cause": top,
                "top_cause_delta_ns": float(d[top]) if top else float("nan"),
            }
        )
    return pd.DataFrame(rows).astype(RANK_COLUMNS)
