"""``partial_run``: the ``%%traceprofile`` run raised or was interrupted; its last step is partial (``info``).

A cell that raised stops in the middle of a step: that step holds the work done up to the
error, then the exception's unwinding (Python between operators, no GPU work), so every rule
reading it would report the error's aftermath as a cost. The findings leave that step out
when other steps remain (:class:`~..context.Context`), and this rule says so, with the run's
status from its run record (``Trace.run_status``).
"""

from __future__ import annotations

from ..context import Context, Finding
from ..registry import rule
from ..thresholds import Thresholds


@rule(
    id="partial_run",
    order=1,
    text="The profiled run did not end normally (its run record's status is error or interrupted): "
    "its last step is partial and is left out of the findings when other steps remain (no time at stake: info).",
    analyses="tv.headline (run_status), Trace.iterations",
)
def partial_run(ctx: Context, _: Thresholds) -> list[Finding]:
    step = ctx.partial_step
    if step is None:
        ctx.note("partial_run", "not applicable: the run ended normally (or the trace has no run record)")
        return []
    status = ctx.trace.run_status
    how = "raised an exception" if status == "error" else "was interrupted"
    if ctx.partial_left_out:
        title = f"The run {how}: step #{step} is partial and left out of the findings"
        tail = (
            f"the findings above read the other steps only; `tv.findings(trace, iterations=[{step}])` "
            "reads the partial one."
        )
    else:
        title = f"The run {how}: step #{step} is partial"
        tail = (
            "it is the only step in scope, so the findings read it: they may report the error's "
            "aftermath (Python between operators, an idle GPU) as a cost. Profile the cell again once it runs."
        )
    detail = (
        f"The profiled cell {how} during step #{step} (the run record's status is {status!r}): the "
        f"step holds the work done up to that point and then the exception's unwinding; {tail}"
    )
    return [
        ctx.finding(
            "partial_run",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=ctx.trace.ranks,
            evidence={"run_status": status, "partial_step": step, "left_out": ctx.partial_left_out},
            info=True,
        )
    ]
