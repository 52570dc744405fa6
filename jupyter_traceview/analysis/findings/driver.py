"""The driver of :func:`findings`: run every registered rule on a memo context, rank the findings."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable

import pandas as pd

from ...errors import OptionError, TraceviewWarning
from ...model.trace import Trace
from .._common import empty
from .._memo import Memo, save_facts
from ..whatif.saving import finding_savings
from .config import FindingRules
from .context import Context, Finding
from .registry import Rule, all_rules

__all__ = ["EXPLAIN_COLUMNS", "FINDING_COLUMNS", "SEVERITIES", "findings", "findings_and_explain"]

#: The columns of :func:`findings`, in order, with their dtypes.
FINDING_COLUMNS = {
    "id": "str",
    "severity": "str",
    "title": "str",
    "detail": "str",
    "time_at_stake_ns": "int64",
    "time_at_stake_pct": "float64",
    "saving_ns": "int64",
    "saving_pct": "float64",
    "change": "str",
    "ranks": "object",
    "evidence": "object",
    "rule": "str",
    "analysis": "str",
}

#: The columns of ``findings(explain=True)``, in order, with their dtypes.
EXPLAIN_COLUMNS = {"rule": "str", "fired": "bool", "reason": "str"}

#: Severity levels, most severe first. ``info`` findings carry no time at stake.
SEVERITIES = ("high", "medium", "low", "info")


def findings(
    trace: Trace,
    *,
    rules: FindingRules | None = None,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    explain: bool = False,
) -> pd.DataFrame:
    """Plain-language findings, each with its rule, threshold and evidence, ranked by what fixing them saves.

    Each rule reads the other analyses' outputs (see the ``analysis`` column) and reports a
    finding only when its preconditions hold (e.g. no straggler finding with one rank, no
    iteration finding with fewer than three steps, no communication finding without
    communication) and its threshold is crossed. The rules:

    ``launch_bound``
        The GPU idles waiting for the host to launch work.
    ``exposed_communication``
        Communication not hidden under compute (waiting for late ranks excluded).
    ``collective_wait``
        Ranks waiting in collectives for late peers.
    ``load_imbalance``
        Compute spread unevenly over ranks (POP Load Balance).
    ``straggler``
        A rank last into collectives far more often than chance.
    ``tiny_kernels``
        Many kernels too short to hide their launch; a fusion candidate.
    ``pageable_copies``, ``blocking_sync``
        Copies from pageable memory and host calls that block until the GPU is done.
    ``low_overlap_collective``
        A collective kind whose kernels are mostly exposed.
    ``slow_iteration``
        A ProfilerStep much slower than the median step.
    ``low_occupancy``
        Top compute kernels with low estimated occupancy (``info``).
    ``gemm_below_peak``, ``tiny_gemms``, ``fp32_matmul``
        Matrix products far below the device's peak for their shape, too small to pay for
        their launch, or in fp32 where the device has much faster TF32/BF16 units
        (:func:`op_performance`; traces recorded with ``record_shapes=True``).

    **Time at stake** is an estimate of the GPU time that fixing the finding could
    recover: per rank, a span of that rank's GPU timeline (idle or exposed time the rule
    measures); a finding reports the largest value over the ranks it names (in a
    synchronous job the others wait for that rank). It is never more than the elapsed
    time. Findings can overlap (a host-wait gap before a tiny kernel counts for both
    ``launch_bound`` and ``tiny_kernels``), so times at stake do not add up.

    Parameters
    ----------
    trace : Trace
    rules : FindingRules, optional
        The thresholds (default ``FindingRules()``): ``rules=tv.FindingRules(host_wait_min_pct=5)``
        changes one; every field is documented in ``docs/semantics.md (findings)``.
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`).
    explain : bool, default False
        Instead of the findings, one row per rule saying whether it fired and why not
        (below).

    Returns
    -------
    pandas.DataFrame
        One row per finding, sorted by ``saving_ns`` (largest first), then
        ``time_at_stake_ns`` (largest first), severity and id:

        id : str
            Stable rule id (above).
        severity : str
            ``high``, ``medium``, ``low`` (time at stake >= ``high_pct``, ``medium_pct``,
            else; % of the elapsed time) or ``info`` (no time at stake).
        title : str
            One line to read first.
        detail : str
            What was measured, where (ranks, streams, kernels, steps), and what to try.
        time_at_stake_ns : int, ns
            GPU time that could be recovered (estimate, see above); 0 for ``info``.
        time_at_stake_pct : float, %
            ``time_at_stake_ns`` as a share of the job's elapsed time ``T`` (first GPU work
            start to last GPU work end over all ranks, as :func:`efficiency`).
        saving_ns : int, ns
            What the fix saves per step, predicted by replaying the trace with the change
            the fix implies (:func:`what_if`; the rule -> change table is
            ``jupyter_traceview.analysis.whatif.saving.RULE_CHANGES``): the median saving
            over the steps of the finding's rank that saves most; 0 for a rule without such
            a change. Unlike the time at stake, it counts only what shortens the step (a
            host gap hidden under a long kernel saves nothing; a sync on the critical path
            can save more than its own duration).
        saving_pct : float, %
            ``saving_ns`` as a share of that rank's median step (``what_if``'s ``measured_ns``).
        change : str
            What the saving assumed, in words (the change's ``describe()``); "" for none.
        ranks : list of int
            The ranks named.
        evidence : dict
            The numbers the rule used, JSON-able, units in the keys (``*_ns``, ``*_pct``,
            ``*_bytes``, ``*_gbps``); always ``elapsed_ns``.
        rule : str
            The rule in words, with its thresholds filled in.
        analysis : str
            The analyses to look at for more.

        A trace with nothing to report gives an empty frame with these columns. A trace
        without GPU work warns (:class:`TraceviewWarning`) and gets the host rules only
        (``dataloader_stall``, ``python_overhead``, ``cpu_hotspots``), their times against
        the host's wall time.

        With ``explain=True``, one row per registered rule, in rule order:

        rule : str
            The rule id.
        fired : bool
            Whether it reported a finding (one kept by ``min_time_at_stake_pct``).
        reason : str
            ``"fired: <title>"``; else why not: ``"checked, fine: <measured value> under
            the threshold of <threshold>"``, ``"not applicable: <precondition missing>"``,
            the time at stake under ``min_time_at_stake_pct``, or ``"failed: <error>"``.

        Every rule is guarded: one that raises is reported as a warning
        (:class:`TraceviewWarning`) and as ``failed`` here, and the other rules still run.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> f = tv.findings(tv.load(tv.sample_path()))
    >>> bool(f["saving_ns"].is_monotonic_decreasing)
    True
    >>> "collective_wait" in set(f["id"])
    True
    """
    found, explained = findings_and_explain(
        trace, rules=rules, ranks=ranks, iterations=iterations, time_range=time_range
    )
    return explained if explain else found


def findings_and_explain(
    trace: Trace,
    *,
    rules: FindingRules | None = None,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    rank_memo: Memo | None = None,
    only: Collection[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(findings(trace, ...), findings(trace, ..., explain=True))`` from one run of the rules
    (what the dashboard shows: the findings and the "checked, fine" lines under them).

    ``rank_memo``: the store of per-rank facts to share (:func:`.._memo.shared_rank_facts`),
    so that the caller's other analyses of the same trace reuse what the rules computed (the
    dashboard's); None: a store of this call only. The values are the same either way.

    ``only``: run only the rules with these ids (a tab that shows a few rules: the
    Operators tab's host ones); each rule's rows are those of the full run (every rule reads
    the trace, never another rule's findings, and a finding's saving is its own replay), in
    the same order. None: every rule."""
    if rules is None:
        rules = FindingRules()
    elif not isinstance(rules, FindingRules):
        raise OptionError(f"rules must be a FindingRules, got {type(rules).__name__}")
    chosen = _chosen_rules(only)
    ctx = Context(trace, rules, ranks=ranks, iterations=iterations, time_range=time_range, rank_memo=rank_memo)
    try:
        found = _run(ctx, chosen)
    finally:
        ctx.close()
    return _frame(found, ctx), _explain(found, ctx, chosen)


def _chosen_rules(only: Collection[str] | None) -> tuple[Rule, ...]:
    """The registered rules named by ``only`` (every rule when None), in rule order."""
    every = all_rules()
    if only is None:
        return every
    if isinstance(only, str):
        only = (only,)
    known = {r.id for r in every}
    unknown = sorted(set(only) - known)
    if unknown:
        raise OptionError(f"only: unknown rule id(s) {unknown}; the rules are {sorted(known)}")
    return tuple(r for r in every if r.id in set(only))


def _run(ctx: Context, chosen: tuple[Rule, ...]) -> list[Finding]:
    """The findings of every rule (after warning about ranks without GPU work)."""
    idle = [r for r in ctx.trace.ranks if r not in ctx.facts]
    if idle:
        warnings.warn(
            f"findings: rank(s) {idle} have no GPU work in scope (a CPU-only trace?); "
            + (
                "the findings are about the host (operators, data loading, Python)"
                if not ctx.gpu_ranks
                else "the findings are about the other ranks"
            ),
            TraceviewWarning,
            stacklevel=4,
        )
    found: list[Finding] = []
    for rule in chosen:
        try:
            found.extend(rule.run(ctx, ctx.rules.of(rule.id)))
        except Exception as exc:  # noqa: BLE001 - one rule's failure must not cost the others
            ctx.note(rule.id, f"failed: {type(exc).__name__}: {exc}")
            warnings.warn(
                f"findings: rule {rule.id!r} failed ({type(exc).__name__}: {exc}); its findings are left out, "
                "the other rules ran. Please report it with the trace.",
                TraceviewWarning,
                stacklevel=4,
            )
    save_facts()  # the per-rank results computed here, kept with the ranks' cache entries
    return found


def _kept(f: Finding, ctx: Context) -> bool:
    return f["severity"] == "info" or f["time_at_stake_pct"] >= ctx.common.min_time_at_stake_pct


def _explain(found: list[Finding], ctx: Context, chosen: tuple[Rule, ...]) -> pd.DataFrame:
    """One row per rule of ``chosen``: whether it fired, and why (not)."""
    rows = []
    for rule in chosen:
        own = [f for f in found if f["id"] == rule.id]
        kept = [f for f in own if _kept(f, ctx)]
        if kept:
            top = max(kept, key=lambda f: f["time_at_stake_ns"])
            more = f" (and {len(kept) - 1} more)" if len(kept) > 1 else ""
            rows.append((rule.id, True, f"fired: {top['title']}{more}"))
        elif own:
            top = max(own, key=lambda f: f["time_at_stake_ns"])
            rows.append(
                (
                    rule.id,
                    False,
                    f"checked, fine: its time at stake, {top['time_at_stake_pct']:.2f}% of the elapsed time, is under "
                    f"min_time_at_stake_pct ({ctx.common.min_time_at_stake_pct:g}%)",
                )
            )
        else:
            why = ctx.notes.get(
                rule.id, f"checked, fine: no rank meets the rule ({rule.text.format(**ctx.rules.as_dict())})"
            )
            rows.append((rule.id, False, why))
    return pd.DataFrame(rows, columns=list(EXPLAIN_COLUMNS)).astype(EXPLAIN_COLUMNS)


def _frame(found: list[Finding], ctx: Context) -> pd.DataFrame:
    keep = [f for f in found if _kept(f, ctx)]
    if not keep:
        return empty(FINDING_COLUMNS)
    order = {r.id: i for i, r in enumerate(all_rules())}
    savings = ctx.get(
        "whatif_savings",
        lambda: finding_savings(
            ctx.trace if ctx.time_range is None else ctx.trace.select(time_range=ctx.time_range),
            [(f["id"], f["ranks"]) for f in keep],
            ctx.rules.as_dict(),
        ),
    )
    rows = [
        {**f, "saving_ns": ns, "saving_pct": pct, "change": change}
        for f, (ns, pct, change) in zip(keep, savings, strict=True)
    ]
    rows.sort(
        key=lambda f: (
            -f["saving_ns"],
            -f["time_at_stake_ns"],
            SEVERITIES.index(f["severity"]),
            order[f["id"]],
            f["ranks"],
        )
    )
    out = pd.DataFrame(rows, columns=list(FINDING_COLUMNS))
    return out.astype(FINDING_COLUMNS).reset_index(drop=True)
