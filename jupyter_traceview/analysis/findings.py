"""Plain-language findings, each with the rule, the threshold and the numbers behind it.

Every rule reads the outputs of the other analyses (``summary``, ``kernel_launch_stats``,
``efficiency``, ``iteration_stats``, ``stragglers``, ``nccl_summary``,
``kernel_overlap_stats``, ``op_kernels``, ``frequent_kernel_sequences``) plus one small
per-rank extraction run through :meth:`Trace.map_ranks` (the device-level idle gaps and
the blocking host calls), and turns them into findings ranked by the GPU time at stake.
The rules, thresholds and preconditions are documented in ``docs/semantics.md
(findings)`` and field by field on :class:`FindingRules`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceviewWarning
from ..model import intervals as iv
from ..model.schema import EventKind, GpuClass
from ..model.trace import Trace, _fmt_ns, _ranges
from ._common import empty, scoped
from ._gpu import activities
from .concurrency import kernel_overlap_stats
from .efficiency import efficiency, iteration_stats
from .launch import kernel_launch_stats, kind_mask, rows_of
from .nccl import nccl_summary
from .operators import frequent_kernel_sequences, op_kernels
from .stragglers import _kind_from_name, stragglers
from .summary import summary

__all__ = ["FINDING_COLUMNS", "SEVERITIES", "FindingRules", "findings"]

#: The columns of :func:`findings`, in order, with their dtypes.
FINDING_COLUMNS = {
    "id": "str",
    "severity": "str",
    "title": "str",
    "detail": "str",
    "time_at_stake_ns": "int64",
    "time_at_stake_pct": "float64",
    "ranks": "object",
    "evidence": "object",
    "rule": "str",
    "analysis": "str",
}

#: Severity levels, most severe first. ``info`` findings carry no time at stake.
SEVERITIES = ("high", "medium", "low", "info")

#: Host calls that block the CPU until the GPU (or a copy) is done.
BLOCKING_CALLS = (
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cudaMemset",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipMemcpy",
    "hipMemset",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
)


@dataclass(frozen=True)
class FindingRules:
    """Thresholds of the rules of :func:`findings` (see ``docs/semantics.md (findings)``).

    Percentages are 0-100; times are ns. Pass an instance as ``rules=``, or any field as a
    keyword argument of :func:`findings` (``tv.findings(trace, host_wait_min_pct=5)``).
    """

    #: A finding whose time at stake is below this share (%) of the job's elapsed time
    #: is not reported (``info`` findings, which carry no time at stake, are exempt).
    min_time_at_stake_pct: float = 1.0
    #: Severity ``high`` from this share (%) of the elapsed time at stake.
    high_pct: float = 20.0
    #: Severity ``medium`` from this share (%); below it, ``low``.
    medium_pct: float = 5.0

    #: ``launch_bound``: a rank is named when the GPU idles waiting for the host for at
    #: least this share (%) of its GPU span.
    host_wait_min_pct: float = 10.0
    #: ``launch_bound``: above this share (%) of launches running shorter on the GPU than
    #: their launch call on the CPU, the wording says "launch-bound" (else "host-bound").
    launch_bound_min_pct: float = 50.0
    #: ``launch_bound``: ... and the rank has at least this many launches (the first few
    #: launches of a process pay CUDA's lazy initialisation and say little).
    launch_bound_min_launches: int = 20
    #: A device idle gap shorter than this with its work already launched is the normal
    #: delay between queued kernels (``kernel_wait``, as :func:`idle_time_breakdown`).
    kernel_wait_ns: int = 30_000

    #: ``exposed_communication``: a rank is named when communication runs with no compute
    #: alongside, not counting the time spent waiting for late ranks, for at least this
    #: share (%) of its GPU span.
    exposed_comm_min_pct: float = 10.0
    #: ``collective_wait``: a rank is named when it waits in collectives for late peers
    #: (while no compute runs) for at least this share (%) of its GPU span.
    collective_wait_min_pct: float = 5.0
    #: ``low_overlap_collective``: a collective kind is named when at least this share (%)
    #: of its kernels' time (over all ranks) runs with no compute alongside.
    collective_exposed_min_pct: float = 80.0
    #: ``exposed_communication``: a collective's bus bandwidth below this fraction of the
    #: best bus bandwidth achieved in the trace is called low.
    low_busbw_ratio: float = 0.25

    #: ``load_imbalance``: reported when the job's Load Balance (``tv.efficiency``) is
    #: below this (%).
    load_balance_max_pct: float = 90.0

    #: ``straggler``: a collective counts against its last rank only when that rank
    #: arrived at least this much after the second-last.
    straggler_min_lateness_ns: int = 5_000
    #: ``straggler``: the rank must be last (as above) in at least this many collectives.
    straggler_min_collectives: int = 3
    #: ``straggler``: and that often with a probability at most this by chance (binomial
    #: tail with p = 1 / ranks per collective).
    straggler_max_p_value: float = 0.01
    #: ``straggler`` and ``collective_wait``: remove a per-rank clock offset first
    #: (``stragglers(align_ends=True)``), for ranks on hosts with skewed clocks.
    align_clocks: bool = False

    #: ``tiny_kernels``: a launch running less than this on the GPU is tiny.
    tiny_kernel_ns: int = 10_000
    #: ``tiny_kernels``: a rank is named when at least this share (%) of its launches ...
    tiny_kernel_min_pct: float = 50.0
    #: ... and at least this many of them are tiny.
    tiny_kernel_min_count: int = 50

    #: ``slow_iteration``: needs at least this many ProfilerSteps.
    iteration_min_steps: int = 3
    #: ``slow_iteration``: a step is slow when it lasts at least this much (%) longer than
    #: the median step.
    slow_iteration_min_pct: float = 20.0

    #: ``low_occupancy``: a top compute kernel with a time-weighted estimated achieved
    #: occupancy below this (%) is named.
    occupancy_max_pct: float = 25.0
    #: ``low_occupancy``: how many compute kernels (by total time) are looked at.
    occupancy_top_k: int = 10

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "align_clocks":
                if not isinstance(v, bool):
                    raise OptionError(f"FindingRules.align_clocks must be True or False, got {v!r}")
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise OptionError(f"FindingRules.{f.name} must be a non-negative number, got {v!r}")
        if self.medium_pct > self.high_pct:
            raise OptionError(
                f"FindingRules: medium_pct ({self.medium_pct}) must not exceed high_pct ({self.high_pct})"
            )
        if self.iteration_min_steps < 2:
            raise OptionError(f"FindingRules.iteration_min_steps must be at least 2, got {self.iteration_min_steps}")
        if self.straggler_max_p_value > 1:
            raise OptionError(f"FindingRules.straggler_max_p_value must be at most 1, got {self.straggler_max_p_value}")


# --------------------------------------------------------------------------- rule texts
#: The rule of each finding id, in words, with its threshold field(s) in braces.
RULES: dict[str, str] = {
    "launch_bound": (
        "The GPU (all streams) sits idle and the activity that ends the idle gap was launched "
        "by the host only after the gap began; named when that time is >= {host_wait_min_pct}% "
        "of a rank's GPU span. 'Launch-bound' when >= {launch_bound_min_pct}% of launches run "
        "shorter on the GPU than their launch call."
    ),
    "exposed_communication": (
        "Communication running with no compute kernel alongside (comm_comp_overlap), less the "
        "time spent waiting for late ranks (stragglers wait_ns), >= {exposed_comm_min_pct}% of "
        "a rank's GPU span."
    ),
    "collective_wait": (
        "Time a rank's collectives wait for the last rank to arrive (stragglers wait_ns, at "
        "most its exposed communication) >= {collective_wait_min_pct}% of its GPU span."
    ),
    "load_imbalance": (
        "Job Load Balance = mean(U) / max(U) over ranks (U = compute time) below "
        "{load_balance_max_pct}%; time at stake max(U) - mean(U)."
    ),
    "straggler": (
        "A rank is last into a collective (by >= {straggler_min_lateness_ns} ns over the "
        "second-last) in >= {straggler_min_collectives} collectives, with a binomial "
        "probability <= {straggler_max_p_value} of being last that often by chance."
    ),
    "tiny_kernels": (
        ">= {tiny_kernel_min_pct}% and >= {tiny_kernel_min_count} of a rank's launches run "
        "under {tiny_kernel_ns} ns on the GPU; time at stake: the device idle gaps (host or "
        "kernel waits) that end at a tiny launch."
    ),
    "pageable_copies": (
        "Memory copies from or to pageable host memory (synchronous for the host); time at "
        "stake: device idle time from their launch call until the GPU's next work."
    ),
    "blocking_sync": (
        "Host calls that block until the GPU is done (cudaMemcpy, cudaMemset, cuda*Synchronize, "
        "hip*); time at stake: device idle time from the call until the GPU's next work."
    ),
    "low_overlap_collective": (
        "A collective kind whose kernels run >= {collective_exposed_min_pct}% of their time "
        "with no compute alongside (kernel_overlap_stats), over all ranks."
    ),
    "slow_iteration": (
        "With >= {iteration_min_steps} ProfilerSteps, a step (the slowest rank's duration) "
        ">= {slow_iteration_min_pct}% longer than the median step."
    ),
    "low_occupancy": (
        "One of the top {occupancy_top_k} compute kernels by time, averaging at least "
        "{tiny_kernel_ns} ns, with a time-weighted estimated achieved occupancy below "
        "{occupancy_max_pct}% (no time at stake is estimated: info)."
    ),
}

#: Where to look for more, per finding id.
ANALYSES: dict[str, str] = {
    "launch_bound": "tv.idle_time_breakdown, tv.kernel_launch_stats, tv.queue_length",
    "exposed_communication": "tv.comm_comp_overlap, tv.nccl_summary, tv.utilization_heatmap(kind='overlap')",
    "collective_wait": "tv.stragglers(by='collective'), tv.stragglers(by='arrival')",
    "load_imbalance": "tv.efficiency(per='rank'), tv.iteration_stats(per='step'), tv.kernel_breakdown",
    "straggler": "tv.stragglers, tv.stragglers(by='collective')",
    "tiny_kernels": "tv.kernel_launch_stats, tv.frequent_kernel_sequences, tv.op_kernels",
    "pageable_copies": "tv.memory_bandwidth(per='kind'), tv.trace.gpu_args()",
    "blocking_sync": "tv.idle_time_breakdown, tv.kernel_launch_stats",
    "low_overlap_collective": "tv.kernel_overlap_stats, tv.nccl_summary",
    "slow_iteration": "tv.iteration_stats(per='step'), tv.efficiency(per='iteration')",
    "low_occupancy": "tv.kernel_breakdown, trace.gpu_args()",
}


# --------------------------------------------------------------------------- the function
def findings(
    trace: Trace,
    *,
    rules: FindingRules | None = None,
    ranks: Iterable[int] | int | None = None,
    iterations: Iterable[int] | int | None = None,
    time_range: tuple[int, int] | None = None,
    **thresholds: Any,
) -> pd.DataFrame:
    """Plain-language findings, each with its rule, threshold and evidence, ranked by time at stake.

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
        The thresholds (default :class:`FindingRules`).
    ranks, iterations, time_range
        Scope (see :meth:`Trace.select`).
    **thresholds
        Any :class:`FindingRules` field, overriding ``rules``.

    Returns
    -------
    pandas.DataFrame
        One row per finding, sorted by ``time_at_stake_ns`` (largest first), then severity
        and id:

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
        ranks : list of int
            The ranks named.
        evidence : dict
            The numbers the rule used, JSON-able, units in the keys (``*_ns``, ``*_pct``,
            ``*_bytes``, ``*_gbps``); always ``elapsed_ns``.
        rule : str
            The rule in words, with its thresholds filled in.
        analysis : str
            The analyses to look at for more.

        A trace with nothing to report (or without GPU work: then with a
        :class:`TraceviewWarning`) gives an empty frame with these columns.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> f = tv.findings(tv.load(tv.sample_path()))
    >>> bool(f["time_at_stake_ns"].is_monotonic_decreasing)
    True
    >>> "collective_wait" in set(f["id"])
    True
    """
    rules = _rules(rules, thresholds)
    ctx = _Context(trace, rules, ranks=ranks, iterations=iterations, time_range=time_range)
    idle = [r for r in ctx.trace.ranks if r not in ctx.facts]
    if idle:
        warnings.warn(
            f"findings: rank(s) {idle} have no GPU work in scope (a CPU-only trace?); "
            + ("there is nothing to report" if not ctx.gpu_ranks else "the findings are about the other ranks"),
            TraceviewWarning,
            stacklevel=2,
        )
    if not ctx.gpu_ranks:
        return empty(FINDING_COLUMNS)
    found: list[dict[str, Any]] = []
    for rule in _RULES:
        found.extend(rule(ctx))
    return _frame(found, ctx)


def _rules(rules: FindingRules | None, thresholds: Mapping[str, Any]) -> FindingRules:
    if rules is None:
        rules = FindingRules()
    elif not isinstance(rules, FindingRules):
        raise OptionError(f"rules must be a FindingRules, got {type(rules).__name__}")
    if not thresholds:
        return rules
    known = [f.name for f in dataclasses.fields(FindingRules)]
    for k in thresholds:
        if k not in known:
            raise OptionError.invalid("threshold", k, known)
    return dataclasses.replace(rules, **thresholds)


# --------------------------------------------------------------------------- context
class _Context:
    """The scoped trace, the rules, and the analyses' outputs (each computed once, on demand)."""

    def __init__(
        self,
        trace: Trace,
        rules: FindingRules,
        *,
        ranks: Iterable[int] | int | None,
        iterations: Iterable[int] | int | None,
        time_range: tuple[int, int] | None,
    ) -> None:
        self.rules = rules
        # Ranks and iterations are selected once; the time range goes to every analysis,
        # which applies it after following launch links (see _links.scope_linked).
        self.trace = scoped(trace, ranks=ranks, iterations=iterations)
        self.time_range = time_range
        self._memo: dict[str, Any] = {}
        windowed = self.trace if time_range is None else self.trace.select(time_range=time_range)
        self.facts: dict[int, dict[str, Any]] = {
            r: f
            for r, f in windowed.map_ranks(_rank_facts, int(rules.tiny_kernel_ns), int(rules.kernel_wait_ns)).items()
            if f is not None
        }
        self.gpu_ranks = sorted(self.facts)
        if self.gpu_ranks:
            self.t0 = min(f["gpu_start_ns"] for f in self.facts.values())
            self.elapsed_ns = max(f["gpu_end_ns"] for f in self.facts.values()) - self.t0
        else:
            self.t0, self.elapsed_ns = 0, 0

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            with warnings.catch_warnings():
                # The analyses warn about what they skip; a finding states its preconditions.
                warnings.simplefilter("ignore", TraceviewWarning)
                self._memo[key] = compute()
        return self._memo[key]

    def call(self, fn: Callable[..., pd.DataFrame], key: str, **kw: Any) -> pd.DataFrame:
        return self.get(key, lambda: fn(self.trace, time_range=self.time_range, **kw))

    # The analyses, by name.
    def summary(self) -> pd.DataFrame:
        return self.call(summary, "summary").set_index("rank", drop=False)

    def launch_rank(self) -> pd.DataFrame:
        df = self.call(kernel_launch_stats, "launch", per="rank", short_kernel_ns=int(self.rules.tiny_kernel_ns))
        return df.set_index("rank", drop=False)

    def stragglers(self, by: str) -> pd.DataFrame:
        if len(self.gpu_ranks) < 2:
            return pd.DataFrame()
        return self.call(stragglers, f"stragglers_{by}", by=by, align_ends=bool(self.rules.align_clocks))

    def wait_ns(self) -> dict[int, int]:
        """Per rank, time waiting for late ranks in collectives (0 where unknown)."""
        st = self.stragglers("rank")
        if st.empty:
            return {}
        return {int(r): int(w) for r, w in zip(st["rank"], st["wait_ns"], strict=True)}

    def kind_wait_ns(self) -> dict[tuple[int, str], int]:
        """Per (rank, collective kind read from the kernel name), time waiting for late ranks."""

        def compute() -> dict[tuple[int, str], int]:
            arr = self.stragglers("arrival")
            out: dict[tuple[int, str], int] = {}
            if arr.empty:
                return out
            for r, grp in arr.groupby("rank", sort=True):
                ev = self.trace.rank_data(int(r)).events
                rows = rows_of(ev, grp["eid"].to_numpy())
                codes = np.where(rows >= 0, ev["name"].cat.codes.to_numpy()[np.maximum(rows, 0)], -1)
                cats = ev["name"].cat.categories
                kinds = {int(c): _kind_from_name(str(cats[c])) for c in np.unique(codes) if c >= 0}
                for c, w in zip(codes, grp["wait_ns"].to_numpy(), strict=True):
                    if c >= 0:
                        key = (int(r), kinds[int(c)])
                        out[key] = out.get(key, 0) + int(w)
            return out

        result: dict[tuple[int, str], int] = self.get("kind_wait", compute)
        return result

    def pct(self, ns: float) -> float:
        return 100.0 * ns / self.elapsed_ns if self.elapsed_ns > 0 else 0.0


# --------------------------------------------------------------------------- per-rank facts
def _rank_facts(trace: Trace, tiny_kernel_ns: int, kernel_wait_ns: int) -> dict[str, Any] | None:
    """One rank's device-level idle gaps and blocking host calls (small dict; None without GPU work).

    Runs where the rank lives (``map_ranks``). Device-level gaps are the gaps of the union
    of the GPU work on all streams; each is classified by :func:`idle_time_breakdown`'s
    rule applied to the whole device: ``host_wait`` when every activity starting where the
    gap ends was launched after the gap began (an unknown launch never is), else
    ``kernel_wait`` below ``kernel_wait_ns``, else ``other``.
    """
    (r,) = trace.ranks
    ev = trace.rank_data(r).events
    acts = activities(trace, r, work_only=True)
    if len(acts) == 0:
        return None
    us, ue = acts.union()
    out: dict[str, Any] = {
        "rank": r,
        "gpu_start_ns": int(us[0]),
        "gpu_end_ns": int(ue[-1]),
        "gpu_span_ns": int(ue[-1] - us[0]),
        "gpu_busy_ns": iv.length(us, ue),
        "launches_known": int((acts.launch_eid >= 0).sum()),
    }
    # --- device-level idle gaps and what ended them
    ga, gb = ue[:-1], us[1:]
    ts_ev = ev["ts_ns"].to_numpy()
    lrow = rows_of(ev, acts.launch_eid)
    launch_ts = np.where(lrow >= 0, ts_ev[np.maximum(lrow, 0)], np.iinfo(np.int64).min)
    order = np.argsort(acts.ts, kind="stable")
    a_ts, a_launch = acts.ts[order], launch_ts[order]
    a_tiny = ((acts.end - acts.ts) < tiny_kernel_ns)[order] & (lrow[order] >= 0)
    a_name = acts.name[order]
    if len(ga):
        lo = np.searchsorted(a_ts, gb, side="left")
        hi = np.searchsorted(a_ts, gb, side="right")
        # Reduce over [lo, hi) of each gap end: pairs of indices, one sentinel at the end.
        idx = np.empty(2 * len(lo), dtype=np.int64)
        idx[0::2], idx[1::2] = lo, hi
        pad_launch = np.append(a_launch, np.iinfo(np.int64).max)
        first_launch = np.minimum.reduceat(pad_launch, idx)[0::2]
        any_tiny = np.maximum.reduceat(np.append(a_tiny, False), idx)[0::2]
        gap = gb - ga
        host = first_launch > ga
        kernel_wait = ~host & (gap < kernel_wait_ns)
        out["host_wait_ns"] = int(gap[host].sum())
        out["host_wait_gaps"] = int(host.sum())
        out["kernel_wait_ns"] = int(gap[kernel_wait].sum())
        out["tiny_gap_ns"] = int(gap[any_tiny & (host | kernel_wait)].sum())
        out["tiny_gaps"] = int((any_tiny & (host | kernel_wait)).sum())
        if host.any():
            i = int(np.flatnonzero(host)[np.argmax(gap[host])])
            out["largest_host_gap"] = {
                "gap_ns": int(gap[i]),
                "start_ns": int(ga[i]),
                "next_activity": str(acts.names[a_name[lo[i]]]) if a_name[lo[i]] >= 0 else "",
                "stream": int(acts.stream[order][lo[i]]),
            }
    else:
        out.update(host_wait_ns=0, host_wait_gaps=0, kernel_wait_ns=0, tiny_gap_ns=0, tiny_gaps=0)
    # --- blocking host calls and pageable copies
    names = ev["name"]
    name_codes = names.cat.codes.to_numpy().astype(np.int64)
    categories = names.cat.categories
    host_call = kind_mask(ev, [EventKind.CUDA_RUNTIME.value, EventKind.CUDA_DRIVER.value])
    blocking = np.flatnonzero(host_call & _codes_in(name_codes, categories, BLOCKING_CALLS))
    parent = ev["parent_eid"].to_numpy()
    args = trace.rank_data(r).gpu_args
    pg = args.loc[args["pageable"].to_numpy()]
    p_rows = rows_of(ev, pg["eid"].to_numpy())
    p_ok = p_rows >= 0
    p_rows, pg = p_rows[p_ok], pg.loc[p_ok]
    p_call = rows_of(ev, ev["launch_eid"].to_numpy()[p_rows])
    p_call = p_call[p_call >= 0]
    # A pageable copy's own call is counted with the copies, not again as a blocking call.
    blocking = np.setdiff1d(blocking, p_call)
    dur_ev = ev["dur_ns"].to_numpy()
    byt = pg["bytes"].to_numpy()
    kinds_copy = pg["copy_kind"].astype(str).to_numpy()
    out["pageable"] = {
        "copies": len(p_rows),
        "bytes": int(byt[byt >= 0].sum()),
        "bytes_by_kind": {k: int(byt[(kinds_copy == k) & (byt >= 0)].sum()) for k in sorted(set(kinds_copy))},
        "copy_ns": int(dur_ev[p_rows].sum()),
        "calls": len(p_call),
        "call_ns": int(dur_ev[p_call].sum()),
        "idle_ns": _idle_from_calls(ts_ev[p_call], ts_ev[p_call] + dur_ev[p_call], ga, gb),
        "operators": _top_names(name_codes, categories, rows_of(ev, parent[p_call])),
    }
    b_codes = name_codes[blocking]
    out["blocking"] = {
        "calls": len(blocking),
        "call_ns": int(dur_ev[blocking].sum()),
        "by_name": {
            str(categories[c]): {
                "calls": int((b_codes == c).sum()),
                "call_ns": int(dur_ev[blocking][b_codes == c].sum()),
            }
            for c in np.unique(b_codes)
        },
        "idle_ns": _idle_from_calls(ts_ev[blocking], ts_ev[blocking] + dur_ev[blocking], ga, gb),
        "operators": _top_names(name_codes, categories, rows_of(ev, parent[blocking])),
    }
    # --- estimated achieved occupancy of compute kernels, per name (time-weighted). A
    # kernel that runs has a warp resident: 0 % means the profiler could not estimate it.
    occ_all = args["occupancy_pct"].to_numpy().astype(np.float64)
    has_occ = np.flatnonzero(occ_all > 0)
    k_rows = rows_of(ev, args["eid"].to_numpy()[has_occ])
    ok = k_rows >= 0
    compute_kernel = kind_mask(ev, [EventKind.KERNEL.value]) & (
        ev["gpu_class"].cat.codes.to_numpy() == _category_code(ev["gpu_class"], GpuClass.COMPUTE.value)
    )
    ok[ok] &= compute_kernel[k_rows[ok]]
    k_rows, occ = k_rows[ok], occ_all[has_occ][ok]
    codes = name_codes[k_rows]
    d = dur_ev[k_rows].astype(np.float64)
    n_codes = len(categories)
    occ_ns = np.bincount(codes, weights=d, minlength=n_codes)
    occ_w = np.bincount(codes, weights=d * occ, minlength=n_codes)
    out["occupancy"] = {str(categories[c]): (float(occ_ns[c]), float(occ_w[c])) for c in np.unique(codes)}
    return out


def _idle_from_calls(cs: np.ndarray, ce: np.ndarray, ga: np.ndarray, gb: np.ndarray) -> int:
    """Device idle time from a host call until the GPU's next work, over all calls (once).

    For each device idle gap ``[a, b)``: if a call is running at ``a``, the whole gap; else
    from the start of the first call starting inside the gap to ``b``.
    """
    if len(cs) == 0 or len(ga) == 0:
        return 0
    us, ue = iv.union(cs, ce)
    k = np.searchsorted(us, ga, side="right") - 1
    covering = (k >= 0) & (ue[np.maximum(k, 0)] > ga)
    nxt = k + 1
    has_next = nxt < len(us)
    next_s = us[np.minimum(nxt, len(us) - 1)]
    start = np.where(covering, ga, np.where(has_next & (next_s < gb), next_s, gb))
    return int((gb - start).sum())


def _top_names(codes: np.ndarray, categories: pd.Index, rows: np.ndarray, k: int = 3) -> list[list[Any]]:
    """The ``k`` most frequent names at these rows, as [name, count] (ties by name)."""
    rows = rows[rows >= 0]
    c = codes[rows]
    c = c[c >= 0]
    if len(c) == 0:
        return []
    counts = np.bincount(c)
    seen = np.flatnonzero(counts)
    items = sorted(((str(categories[i]), int(counts[i])) for i in seen), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [[n, m] for n, m in items]


def _codes_in(codes: np.ndarray, categories: pd.Index, values: Iterable[str]) -> np.ndarray:
    """Rows whose categorical code is one of these values' (on the codes: fast)."""
    wanted = categories.get_indexer(list(values))
    wanted = wanted[wanted >= 0]
    if len(wanted) == 0:
        return np.zeros(len(codes), dtype=bool)
    return np.isin(codes, wanted)


def _category_code(col: pd.Series, value: str) -> int:
    """The code of ``value`` in a categorical column; -2 (matches no row) if absent."""
    cats = col.cat.categories
    return int(cats.get_loc(value)) if value in cats else -2


# --------------------------------------------------------------------------- helpers
def _f(ns: float) -> str:
    return _fmt_ns(ns)


def _p(x: float) -> str:
    return f"{x:.1f}%"


def _ranks_text(ranks: Iterable[int]) -> str:
    rs = sorted(set(int(r) for r in ranks))
    return f"rank {rs[0]}" if len(rs) == 1 else f"ranks {_ranges(rs)}"


def _amount(named: Iterable[int], worst: int, amount: str) -> str:
    """ "X" when one rank is named, "up to X on rank W" when several are."""
    return amount if len(set(named)) == 1 else f"up to {amount} on rank {worst}"


def _on(named: Iterable[int], worst: int) -> str:
    """ "" when one rank is named, "on rank W, " when several are."""
    return "" if len(set(named)) == 1 else f"on rank {worst}, "


def _short(name: str, n: int = 60) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def _finding(
    ctx: _Context,
    fid: str,
    *,
    title: str,
    detail: str,
    time_at_stake_ns: int,
    ranks: Iterable[int],
    evidence: dict[str, Any],
    info: bool = False,
) -> dict[str, Any]:
    tas = 0 if info else int(min(max(time_at_stake_ns, 0), ctx.elapsed_ns))
    pct = ctx.pct(tas)
    r = ctx.rules
    severity = "info" if info else "high" if pct >= r.high_pct else "medium" if pct >= r.medium_pct else "low"
    return {
        "id": fid,
        "severity": severity,
        "title": title,
        "detail": detail,
        "time_at_stake_ns": tas,
        "time_at_stake_pct": pct,
        "ranks": sorted(set(int(x) for x in ranks)),
        "evidence": _clean({**evidence, "elapsed_ns": ctx.elapsed_ns}),
        "rule": RULES[fid].format(**dataclasses.asdict(r)),
        "analysis": ANALYSES[fid],
    }


def _clean(obj: Any) -> Any:
    """Plain JSON-able Python values: numpy scalars converted, floats to 6 significant digits."""
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if not math.isfinite(x):
            return None
        return float(f"{x:.6g}")
    return obj


def _frame(found: list[dict[str, Any]], ctx: _Context) -> pd.DataFrame:
    keep = [f for f in found if f["severity"] == "info" or f["time_at_stake_pct"] >= ctx.rules.min_time_at_stake_pct]
    if not keep:
        return empty(FINDING_COLUMNS)
    order = {fid: i for i, fid in enumerate(RULES)}
    keep.sort(key=lambda f: (-f["time_at_stake_ns"], SEVERITIES.index(f["severity"]), order[f["id"]], f["ranks"]))
    out = pd.DataFrame(keep, columns=list(FINDING_COLUMNS))
    return out.astype(FINDING_COLUMNS).reset_index(drop=True)


# --------------------------------------------------------------------------- rules
def _launch_bound(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    facts = {k: f for k, f in ctx.facts.items() if f["launches_known"] > 0 and f["gpu_span_ns"] > 0}
    if not facts:
        return []
    share = {k: 100.0 * f["host_wait_ns"] / f["gpu_span_ns"] for k, f in facts.items()}
    named = [k for k in facts if share[k] >= r.host_wait_min_pct and facts[k]["host_wait_ns"] > 0]
    if not named:
        return []
    worst = max(named, key=lambda k: (facts[k]["host_wait_ns"], -k))
    f = facts[worst]
    launch = ctx.launch_rank()
    per_rank = []
    for k in named:
        row = {
            "rank": k,
            "host_wait_ns": facts[k]["host_wait_ns"],
            "host_wait_gaps": facts[k]["host_wait_gaps"],
            "gpu_span_ns": facts[k]["gpu_span_ns"],
            "host_wait_pct": share[k],
            "gpu_busy_pct": 100.0 * facts[k]["gpu_busy_ns"] / facts[k]["gpu_span_ns"],
        }
        if k in launch.index:
            lr = launch.loc[k]
            row.update(
                launches=int(lr["launches"]),
                launch_bound_pct=float(lr["launch_bound_pct"]),
                short_kernel_pct=float(lr["short_kernel_pct"]),
                cpu_launch_p50_ns=int(lr["cpu_dur_p50_ns"]),
                gpu_dur_p50_ns=int(lr["gpu_dur_p50_ns"]),
            )
        per_rank.append(row)
    wrow = next(p for p in per_rank if p["rank"] == worst)
    gap = f.get("largest_host_gap")
    where = ""
    if gap is not None:
        where = (
            f"; the longest gap is {_f(gap['gap_ns'])} at +{_f(gap['start_ns'] - ctx.t0)} (from the first GPU "
            f"work), before {_short(gap['next_activity'])} on stream {gap['stream']}"
        )
    bound = (
        wrow.get("launch_bound_pct", 0.0) >= r.launch_bound_min_pct
        and wrow.get("launches", 0) >= r.launch_bound_min_launches
    )
    if bound:
        why = (
            f"{_p(wrow['launch_bound_pct'])} of its {wrow['launches']} launches run shorter on the GPU than "
            f"their launch call takes on the CPU (median kernel {_f(wrow['gpu_dur_p50_ns'])}, median launch "
            f"call {_f(wrow['cpu_launch_p50_ns'])}): the GPU runs work faster than the host can launch it. "
            "Try CUDA graphs (torch.compile(mode='reduce-overhead') or torch.cuda.graphs), fewer and larger "
            "kernels (torch.compile, fused optimizers), or a larger batch."
        )
        title = "Launch-bound: the GPU waits for the host to launch work"
    else:
        why = (
            "Its kernels are long enough to hide their own launches, so the host is slow for another reason "
            "(Python or CPU operators, data loading, synchronisation): look at the CPU timeline in these gaps. "
            "Try DataLoader workers with pin_memory=True, fewer host syncs (.item(), .cpu()), or CUDA graphs."
        )
        title = "GPU idle waiting on the host"
    detail = (
        f"On {_ranks_text(named)} the GPU sat idle on every stream, waiting for the host to launch the next "
        f"work, for {_amount(named, worst, _f(f['host_wait_ns']))} ({_p(share[worst])} of its GPU span, "
        f"{f['host_wait_gaps']} gaps){where}. {why}"
    )
    title = f"{title}: {_f(f['host_wait_ns'])} idle on rank {worst} ({_p(share[worst])} of its GPU span)"
    evidence = {"worst_rank": worst, "per_rank": per_rank, "largest_gap": _rel(gap, ctx.t0)}
    return [
        _finding(
            ctx,
            "launch_bound",
            title=title,
            detail=detail,
            time_at_stake_ns=f["host_wait_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _rel(gap: dict[str, Any] | None, t0: int) -> dict[str, Any] | None:
    if gap is None:
        return None
    return {
        "gap_ns": gap["gap_ns"],
        "start_rel_ns": gap["start_ns"] - t0,
        "next_activity": gap["next_activity"],
        "stream": gap["stream"],
    }


def _comm_split(ctx: _Context) -> dict[int, dict[str, Any]]:
    """Per rank with communication: exposed communication, of which waiting for late ranks."""
    s = ctx.summary()
    waits = ctx.wait_ns()
    out = {}
    for rank, row in s.iterrows():
        if int(row["comm_ns"]) <= 0 or int(row["gpu_span_ns"]) <= 0:
            continue
        exposed = int(row["exposed_comm_ns"])
        waiting = min(waits.get(int(rank), 0), exposed)
        out[int(rank)] = {
            "comm_ns": int(row["comm_ns"]),
            "exposed_comm_ns": exposed,
            "waiting_ns": waiting,
            "exposed_transfer_ns": exposed - waiting,
            "gpu_span_ns": int(row["gpu_span_ns"]),
            "overlap_pct": float(row["overlap_pct"]),
        }
    return out


def _exposed_communication(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    split = _comm_split(ctx)
    named = [
        k for k, v in split.items() if 100.0 * v["exposed_transfer_ns"] / v["gpu_span_ns"] >= r.exposed_comm_min_pct
    ]
    named = [k for k in named if split[k]["exposed_transfer_ns"] > 0]
    if not named:
        return []
    worst = max(named, key=lambda k: (split[k]["exposed_transfer_ns"], -k))
    w = split[worst]
    share = 100.0 * w["exposed_transfer_ns"] / w["gpu_span_ns"]
    nccl = ctx.call(nccl_summary, "nccl_job")
    top: list[dict[str, Any]] = []
    best = float(nccl["busbw_gbps"].max()) if len(nccl) and nccl["busbw_gbps"].notna().any() else math.nan
    for _, row in nccl.head(3).iterrows():
        top.append(
            {
                "collective": str(row["collective"]),
                "size_bucket": str(row["size_bucket"]),
                "group_size": int(row["group_size"]),
                "count": int(row["count"]),
                "total_ns": int(row["total_ns"]),
                "busbw_gbps": float(row["busbw_gbps"]),
            }
        )
    named_coll = "; ".join(
        f"{t['collective']} {t['size_bucket']} ({t['count']} calls, {_f(t['total_ns'])}"
        + (f", bus bandwidth {t['busbw_gbps']:.3g} GB/s" if t["busbw_gbps"] == t["busbw_gbps"] else "")
        + ")"
        for t in top
    )
    low = [
        t
        for t in top
        if t["busbw_gbps"] == t["busbw_gbps"]
        and best == best
        and best > 0
        and t["busbw_gbps"] < r.low_busbw_ratio * best
    ]
    bw_text = ""
    if low:
        bw_text = (
            f" {low[0]['collective']} {low[0]['size_bucket']} reaches {low[0]['busbw_gbps']:.3g} GB/s of bus bandwidth, "
            f"under {r.low_busbw_ratio:.0%} of the best achieved in this trace ({best:.3g} GB/s): small messages are "
            "latency-bound; fuse them into larger buckets."
        )
    waiting_text = ""
    if w["waiting_ns"]:
        waiting_text = f" (not counting {_f(w['waiting_ns'])} of waiting for late ranks)"
    detail = (
        f"On {_ranks_text(named)} communication runs with no compute kernel alongside: "
        f"{_amount(named, worst, _f(w['exposed_transfer_ns']))}{waiting_text}, {_p(share)} of its GPU span; "
        f"{_p(w['overlap_pct'])} of its communication time is hidden under compute. "
        + (f"Largest collectives: {named_coll}.{bw_text} " if top else "")
        + "Overlap it with compute: DDP gradient bucketing (bucket_cap_mb) so all-reduces start during "
        "backward, FSDP prefetching, async collectives (async_op=True) waited on just before their result is "
        "needed, and communication on its own stream."
    )
    title = f"Exposed communication: {_f(w['exposed_transfer_ns'])} on rank {worst} ({_p(share)} of its GPU span)"
    evidence = {
        "worst_rank": worst,
        "per_rank": [{"rank": k, **split[k]} for k in named],
        "top_collectives": top,
        "best_busbw_gbps": best,
    }
    return [
        _finding(
            ctx,
            "exposed_communication",
            title=title,
            detail=detail,
            time_at_stake_ns=w["exposed_transfer_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _collective_wait(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    split = _comm_split(ctx)
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
        f"the {_ordinal(c0['ordinal'] + 1)} {c0['collective']} (stream {c0['stream']})"
        if c0["ordinal"] >= 0
        else f"{c0['collective']} #{c0['seq']}"
    )
    most_late = ", ".join(f"rank {k} ({v} of {len(coll)})" for k, v in last_counts[:3])
    detail = (
        f"On {_ranks_text(named)} collectives spin waiting for the last rank to arrive: "
        f"{_amount(named, worst, _f(w['waiting_ns']))} ({_p(share)} of its GPU span). The longest wait is at {which}, where rank "
        f"{c0['last_rank']} arrived {_f(c0['spread_ns'])} after the first; last to arrive most often: {most_late}. "
        "Speed up or rebalance the late ranks (see the load_imbalance and straggler findings); a late first "
        "collective often means the ranks began the step at different times (data loading, host work before "
        "it). Arrivals compare clocks across ranks: with several hosts check with stragglers(align_ends=True)."
    )
    title = (
        f"Ranks wait for late peers in collectives: {_f(w['waiting_ns'])} on rank {worst} ({_p(share)} of its GPU span)"
    )
    evidence = {
        "worst_rank": worst,
        "per_rank": [{"rank": k, **split[k]} for k in named],
        "longest_waits": top_list,
        "last_arrivals": [{"rank": k, "collectives": v} for k, v in last_counts],
        "collectives": len(coll),
    }
    return [
        _finding(
            ctx,
            "collective_wait",
            title=title,
            detail=detail,
            time_at_stake_ns=w["waiting_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _load_imbalance(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    if len(ctx.gpu_ranks) < 2:
        return []
    job = ctx.call(efficiency, "efficiency_job")
    if job.empty or int(job["ranks"].iloc[0]) < 2 or int(job["useful_max_ns"].iloc[0]) <= 0:
        return []
    lb = float(job["load_balance_pct"].iloc[0])
    if not lb < r.load_balance_max_pct:
        return []
    per = ctx.call(efficiency, "efficiency_rank", per="rank")
    heavy = int(job["useful_max_rank"].iloc[0])
    umax = int(job["useful_max_ns"].iloc[0])
    umean = float(job["useful_mean_ns"].iloc[0])
    useful = {int(k): int(v) for k, v in zip(per["rank"], per["useful_ns"], strict=True)}
    median = float(np.median(list(useful.values())))
    light = min(useful, key=lambda k: (useful[k], k))
    evidence: dict[str, Any] = {
        "load_balance_pct": lb,
        "useful_max_rank": heavy,
        "useful_max_ns": umax,
        "useful_mean_ns": umean,
        "useful_median_ns": median,
        "useful_min_rank": light,
        "useful_ns_by_rank": [{"rank": k, "useful_ns": v} for k, v in sorted(useful.items())],
    }
    # Which step: where the heavy rank led, and the widest compute spread.
    steps = ctx.call(iteration_stats, "iteration_step", per="step")
    step_text = ""
    if len(steps):
        led = int((steps["most_compute_rank"] == heavy).sum())
        wide = steps.sort_values(["compute_spread_ns", "step"], ascending=[False, True], kind="stable").iloc[0]
        evidence["steps"] = len(steps)
        evidence["steps_led_by_heavy_rank"] = led
        evidence["widest_step"] = {
            "step": int(wide["step"]),
            "most_compute_rank": int(wide["most_compute_rank"]),
            "compute_spread_ns": int(wide["compute_spread_ns"]),
        }
        step_text = (
            f" Rank {heavy} had the most compute in {led} of {len(steps)} step(s); the widest spread is step "
            f"{int(wide['step'])} ({_f(int(wide['compute_spread_ns']))}, most on rank {int(wide['most_compute_rank'])})."
        )
    # Which kernels: the heavy rank's excess over the median rank, per compute kernel name.
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    kernel_text = ""
    comp = ks.loc[ks["gpu_class"] == "compute"]
    if len(comp):
        table = comp.pivot_table(index="name", columns="rank", values="total_ns", aggfunc="sum", fill_value=0)
        if heavy in table.columns:
            excess = (table[heavy] - table.median(axis=1)).sort_values(ascending=False, kind="stable")
            excess = excess.loc[excess > 0]
            if len(excess):
                excess_top = [(str(n), int(v)) for n, v in excess.head(3).items()]
                evidence["kernel_excess_vs_median"] = [{"name": n, "excess_ns": v} for n, v in excess_top]
                kernel_text = f" Most of the excess is in {_short(excess_top[0][0])} (+{_f(excess_top[0][1])} over the median rank)."
    more = 100.0 * (umax / median - 1) if median > 0 else math.nan
    title = (
        f"Load imbalance: rank {heavy} computes {more:.0f}% more than the median rank (Load Balance {_p(lb)})"
        if more == more
        else f"Load imbalance: rank {heavy} does most of the compute (Load Balance {_p(lb)})"
    )
    detail = (
        f"Compute time (some compute kernel running) ranges from {_f(useful[light])} on rank {light} to "
        f"{_f(umax)} on rank {heavy} (mean {_f(umean)}); in a synchronous job the other ranks wait for rank {heavy} "
        f"at the next collective, so up to {_f(umax - umean)} per rank is lost.{step_text}{kernel_text} Balance the "
        "work (shard embedding tables or batches by cost, pack variable-length inputs), and check the rank's GPU "
        "(clocks, thermals) if its kernels are simply slower."
    )
    return [
        _finding(
            ctx,
            "load_imbalance",
            title=title,
            detail=detail,
            time_at_stake_ns=round(umax - umean),
            ranks=[heavy],
            evidence=evidence,
        )
    ]


def _binom_tail(n: int, k: int, p: float) -> float:
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


def _straggler(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    coll = ctx.stragglers("collective")
    per = ctx.stragglers("rank")
    if coll.empty or per.empty:
        return []
    counted = coll.loc[coll["lateness_ns"] >= r.straggler_min_lateness_ns]
    chance = float((1.0 / coll["ranks"].to_numpy()).mean())
    out = []
    for _, row in per.iterrows():
        k_rank = int(row["rank"])
        mine = counted.loc[counted["last_rank"] == k_rank]
        k = len(mine)
        n = int(row["collectives"])
        if k < r.straggler_min_collectives or n <= 0:
            continue
        p_value = _binom_tail(n, k, chance)
        if p_value > r.straggler_max_p_value:
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
        }
        title = (
            f"Straggler: rank {k_rank} is last into {k} of {n} collectives "
            f"(chance: {100.0 * chance:.3g}%), holding them up {_f(lateness)} in all"
        )
        detail = (
            f"Rank {k_rank} arrived last, at least {_f(r.straggler_min_lateness_ns)} after the second-last, at {k} of "
            f"the {n} collectives it joined ({', '.join(f'{b} {a}' for a, b in kinds_list)}); by chance a rank is last "
            f"in 1 of {1.0 / chance:.3g}, and {k} or more of {n} has {_p_text(p_value)}. It held them up by {_f(lateness / k)} on average "
            f"({_f(lateness)} in all); the other ranks waited {_f(caused)} in those collectives. Look at what "
            f"rank {k_rank} does before them: more compute (load imbalance), host stalls or data loading, a slower "
            "GPU or link, or another process on its host."
        )
        out.append(
            _finding(
                ctx,
                "straggler",
                title=title,
                detail=detail,
                time_at_stake_ns=lateness,
                ranks=[k_rank],
                evidence=evidence,
            )
        )
    return out


def _tiny_kernels(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    launch = ctx.launch_rank()
    if launch.empty:
        return []
    named = [
        int(k)
        for k, row in launch.iterrows()
        if row["short_kernel_pct"] >= r.tiny_kernel_min_pct and row["short_kernels"] >= r.tiny_kernel_min_count
    ]
    named = [k for k in named if k in ctx.facts]
    if not named:
        return []
    worst = max(named, key=lambda k: (ctx.facts[k]["tiny_gap_ns"], int(launch.loc[k, "short_kernels"]), -k))
    lw = launch.loc[worst]
    fw = ctx.facts[worst]
    per_rank = [
        {
            "rank": k,
            "launches": int(launch.loc[k, "launches"]),
            "tiny_launches": int(launch.loc[k, "short_kernels"]),
            "tiny_pct": float(launch.loc[k, "short_kernel_pct"]),
            "gaps_before_tiny": ctx.facts[k]["tiny_gaps"],
            "gap_before_tiny_ns": ctx.facts[k]["tiny_gap_ns"],
            "cpu_launch_total_ns": int(launch.loc[k, "cpu_dur_total_ns"]),
        }
        for k in named
    ]
    candidate = _fusion_candidate(ctx, worst)
    cand_text = ""
    if candidate is not None:
        seq = candidate["sequence"].split(" -> ")
        shown = " -> ".join(_short(s, 40) for s in seq[:3]) + (" -> ..." if len(seq) > 3 else "")
        cand_text = (
            f" Fusion candidate: {_short(candidate['operator'])} launches the same {candidate['length']}-kernel "
            f"sequence {candidate['count']} times ({shown}; {_f(candidate['gpu_ns'])} of GPU time)."
        )
    detail = (
        f"On {_ranks_text(named)} most launches are tiny: {_on(named, worst)}{int(lw['short_kernels'])} of "
        f"{int(lw['launches'])} ({_p(float(lw['short_kernel_pct']))}) run under {_f(r.tiny_kernel_ns)} on the GPU, "
        f"about what their launch costs; the GPU idles {_f(fw['tiny_gap_ns'])} in {fw['tiny_gaps']} gaps just before "
        f"them.{cand_text} Fuse them (torch.compile, fused or foreach optimizers, fused layers) or replay them with "
        "CUDA graphs."
    )
    title = (
        f"Many tiny kernels: {_p(float(lw['short_kernel_pct']))} of rank {worst}'s launches run under "
        f"{_f(r.tiny_kernel_ns)}"
    )
    evidence = {"worst_rank": worst, "per_rank": per_rank, "fusion_candidate": candidate}
    return [
        _finding(
            ctx,
            "tiny_kernels",
            title=title,
            detail=detail,
            time_at_stake_ns=fw["tiny_gap_ns"],
            ranks=named,
            evidence=evidence,
        )
    ]


def _fusion_candidate(ctx: _Context, rank: int) -> dict[str, Any] | None:
    """The outermost operator launching the most tiny activities, several per call, and the
    most frequent activity sequence of its calls (``frequent_kernel_sequences``)."""
    tiny = ctx.rules.tiny_kernel_ns
    ok = ctx.get(
        f"op_kernels_outermost_{rank}",
        lambda: op_kernels(ctx.trace, level="outermost", by="kernel", ranks=rank, time_range=ctx.time_range),
    )
    if ok.empty:
        return None
    ok = ok.assign(tiny=np.where(ok["gpu_ns"] < tiny * ok["count"], ok["count"], 0))
    g = ok.groupby("operator", sort=True).agg(
        launches=("count", "sum"), tiny=("tiny", "sum"), instances=("instances", "max")
    )
    g = g.loc[(g["tiny"] > 0) & (g["launches"] >= 2 * g["instances"])]
    if g.empty:
        return None
    best, tiny_launches = sorted(((str(k), int(v)) for k, v in g["tiny"].items()), key=lambda kv: (-kv[1], kv[0]))[0]
    seqs = ctx.get(
        f"sequences_{rank}",
        lambda: frequent_kernel_sequences(
            ctx.trace, operator=str(best), ranks=rank, top_k=1, time_range=ctx.time_range
        ),
    )
    if seqs.empty:
        return None
    s = seqs.iloc[0]
    return {
        "operator": str(s["operator"]),
        "sequence": str(s["sequence"]),
        "length": int(s["length"]),
        "count": int(s["count"]),
        "gpu_ns": int(s["gpu_ns"]),
        "cpu_ns": int(s["cpu_ns"]),
        "operator_tiny_launches": tiny_launches,
    }


def _copies_and_syncs(ctx: _Context) -> list[dict[str, Any]]:
    out = []
    # Pageable copies.
    pg = {k: f["pageable"] for k, f in ctx.facts.items() if f["pageable"]["copies"] > 0}
    if pg:
        worst = max(pg, key=lambda k: (pg[k]["idle_ns"], pg[k]["bytes"], -k))
        w = pg[worst]
        total_bytes = sum(v["bytes"] for v in pg.values())
        total = sum(v["copies"] for v in pg.values())
        kinds: dict[str, int] = {}
        for v in pg.values():
            for kk, b in v["bytes_by_kind"].items():
                kinds[kk] = kinds.get(kk, 0) + b
        ops = ", ".join(f"{n} ({c})" for n, c in w["operators"])
        detail = (
            f"{total} memory copies on {_ranks_text(pg)} involve pageable host memory ({_bytes(total_bytes)}: "
            + ", ".join(f"{k} {_bytes(b)}" for k, b in sorted(kinds.items()))
            + f"). A copy from or to pageable memory is staged through a pinned buffer and blocks the host; on rank "
            f"{worst} the GPU idled {_f(w['idle_ns'])} from their launch calls until its next work"
            + (f" (launched from {ops})" if ops else "")
            + ". Allocate the host tensors pinned (pin_memory=True in the DataLoader, tensor.pin_memory()) and copy "
            "with non_blocking=True."
        )
        title = f"Pageable memory copies: {total} copies, {_bytes(total_bytes)}; {_f(w['idle_ns'])} GPU idle on rank {worst}"
        evidence = {
            "worst_rank": worst,
            "copies": total,
            "bytes": total_bytes,
            "bytes_by_kind": kinds,
            "per_rank": [{"rank": k, **v} for k, v in sorted(pg.items())],
        }
        out.append(
            _finding(
                ctx,
                "pageable_copies",
                title=title,
                detail=detail,
                time_at_stake_ns=w["idle_ns"],
                ranks=pg,
                evidence=evidence,
            )
        )
    # Blocking host calls.
    bl = {k: f["blocking"] for k, f in ctx.facts.items() if f["blocking"]["calls"] > 0}
    if bl:
        worst = max(bl, key=lambda k: (bl[k]["idle_ns"], bl[k]["call_ns"], -k))
        w = bl[worst]
        by_name = ", ".join(
            f"{n} x{v['calls']}" for n, v in sorted(w["by_name"].items(), key=lambda kv: (-kv[1]["calls"], kv[0]))
        )
        ops = ", ".join(f"{n} ({c})" for n, c in w["operators"])
        detail = (
            f"On {_ranks_text(bl)} the host blocks until the GPU is done: {_on(bl, worst)}{by_name}, "
            f"{_f(w['call_ns'])} of host time"
            + (f", called from {ops}" if ops else "")
            + f". The GPU's queue drains while the host waits, and it idled {_f(w['idle_ns'])} from these calls until "
            "its next work. Avoid synchronising in the loop: keep values on the GPU instead of .item()/.cpu()/print, "
            "copy with non_blocking=True to pinned memory, and synchronise once per step at most."
        )
        title = f"Blocking host calls: the GPU idles {_f(w['idle_ns'])} after synchronisations on rank {worst}"
        evidence = {"worst_rank": worst, "per_rank": [{"rank": k, **v} for k, v in sorted(bl.items())]}
        out.append(
            _finding(
                ctx,
                "blocking_sync",
                title=title,
                detail=detail,
                time_at_stake_ns=w["idle_ns"],
                ranks=bl,
                evidence=evidence,
            )
        )
    return out


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def _low_overlap_collective(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    comm = ks.loc[ks["gpu_class"] == "communication"]
    if comm.empty:
        return []
    comm = comm.assign(kind=[_kind_from_name(str(n)) for n in comm["name"]])
    split = _comm_split(ctx)
    job = comm.groupby("kind", sort=True)[["count", "total_ns", "exposed_ns"]].sum()
    out = []
    for kind, row in job.iterrows():
        total = int(row["total_ns"])
        if total <= 0:
            continue
        exposed_pct = 100.0 * int(row["exposed_ns"]) / total
        if exposed_pct < r.collective_exposed_min_pct:
            continue
        mine = comm.loc[comm["kind"] == kind]
        per_rank_kind = mine.groupby("rank")[["count", "total_ns", "exposed_ns"]].sum()
        # Per rank: this kind's exposed time, at most the rank's exposed transfer time.
        # Per rank: this kind's exposed time less the time its kernels waited for late
        # ranks, at most the rank's exposed communication (a union: per-activity sums of
        # overlapping kernels could exceed it).
        waits = ctx.kind_wait_ns()
        waiting = {
            int(k): min(waits.get((int(k), str(kind)), 0), int(v["exposed_ns"])) for k, v in per_rank_kind.iterrows()
        }
        stake = {
            int(k): min(int(v["exposed_ns"]) - waiting[int(k)], split.get(int(k), {}).get("exposed_comm_ns", 0))
            for k, v in per_rank_kind.iterrows()
        }
        named = [k for k, v in stake.items() if v > 0]
        if not named:
            continue
        worst = max(named, key=lambda k: (stake[k], -k))
        kernels = sorted(set(str(n) for n in mine["name"]))
        evidence = {
            "collective": str(kind),
            "kernels": kernels,
            "count": int(row["count"]),
            "total_ns": total,
            "exposed_ns": int(row["exposed_ns"]),
            "exposed_pct": exposed_pct,
            "per_rank": [
                {
                    "rank": int(k),
                    "total_ns": int(v["total_ns"]),
                    "exposed_ns": int(v["exposed_ns"]),
                    "waiting_ns": waiting[int(k)],
                    "time_at_stake_ns": stake[int(k)],
                }
                for k, v in per_rank_kind.iterrows()
            ],
        }
        title = f"{kind} is barely overlapped: {_p(exposed_pct)} of its {_f(total)} runs with no compute alongside"
        detail = (
            f"The {int(row['count'])} {kind} kernels ({_short(kernels[0])}"
            + (f" and {len(kernels) - 1} more" if len(kernels) > 1 else "")
            + f") run {_p(exposed_pct)} of their time with no compute kernel on any stream; on rank {worst} that costs "
            f"up to {_f(stake[worst])} once waiting for late ranks is set aside. Launch them where independent compute "
            "can run alongside (on their own stream, async_op=True, and wait just before the result is needed), or "
            "overlap them with the next layer's compute (DDP/FSDP bucketing and prefetching)."
        )
        out.append(
            _finding(
                ctx,
                "low_overlap_collective",
                title=title,
                detail=detail,
                time_at_stake_ns=stake[worst],
                ranks=named,
                evidence=evidence,
            )
        )
    return out


def _slow_iteration(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    steps = ctx.call(iteration_stats, "iteration_step", per="step")
    if len(steps) < r.iteration_min_steps:
        return []
    dur = steps["duration_ns"].to_numpy()
    median = float(np.median(dur))
    if median <= 0:
        return []
    slow = steps.loc[100.0 * (dur / median - 1.0) >= r.slow_iteration_min_pct]
    if slow.empty:
        return []
    first_step = int(steps["step"].min())
    med = {c: float(steps[c].median()) for c in ("compute_max_ns", "exposed_comm_max_ns", "idle_max_ns")}
    labels = {
        "compute_max_ns": "compute",
        "exposed_comm_max_ns": "exposed communication",
        "idle_max_ns": "GPU idle time",
    }
    slow_list: list[dict[str, Any]] = []
    for _, s in slow.iterrows():
        growth = {c: float(s[c]) - med[c] for c in med}
        grew = max(growth, key=lambda c: (growth[c], c))
        slow_list.append(
            {
                "step": int(s["step"]),
                "duration_ns": int(s["duration_ns"]),
                "vs_median_pct": 100.0 * (float(s["duration_ns"]) / median - 1.0),
                "slowest_rank": int(s["slowest_rank"]),
                "grew_most": labels[grew],
                "grew_most_ns": growth[grew],
            }
        )
    slow_list.sort(key=lambda d: (-d["duration_ns"], d["step"]))
    excess = round(sum(d["duration_ns"] - median for d in slow_list))
    job = ctx.call(iteration_stats, "iteration_job", per="job")
    jitter = float(job["jitter_pct"].iloc[0]) if len(job) else math.nan
    s0 = slow_list[0]
    names = ", ".join(str(d["step"]) for d in slow_list)
    warm = ""
    if s0["step"] == first_step:
        warm = (
            f" Step {first_step} is the first profiled step: warm-up (cuDNN autotuning, allocator growth, "
            "compilation, lazy initialisation) often makes it slow; profile with a warm-up "
            "(torch.profiler.schedule(wait=1, warmup=1, active=3))."
        )
    title = (
        f"Slow iteration: step {s0['step']} takes {_f(s0['duration_ns'])}, {s0['vs_median_pct']:.0f}% over the "
        f"median step ({_f(median)})"
        if len(slow_list) == 1
        else f"Slow iterations: steps {names} take up to {s0['vs_median_pct']:.0f}% longer than the median step ({_f(median)})"
    )
    detail = (
        f"Of {len(steps)} steps, {len(slow_list)} last(s) at least {_p(r.slow_iteration_min_pct)} longer than the median "
        f"step ({_f(median)}; step time = the slowest rank's); step-time jitter {_p(jitter)}. In step {s0['step']} "
        f"(slowest on rank {s0['slowest_rank']}) {s0['grew_most']} grew the most, by {_f(s0['grew_most_ns'])} over "
        f"the median step.{warm} Compare it with a typical step (tv.iteration_stats, tv.trace_diff of the two steps) "
        "to find what changed: data loading, a recompilation, a checkpoint or evaluation, garbage collection."
    )
    evidence = {"steps": len(steps), "median_step_ns": median, "jitter_pct": jitter, "slow_steps": slow_list}
    return [
        _finding(
            ctx,
            "slow_iteration",
            title=title,
            detail=detail,
            time_at_stake_ns=excess,
            ranks=sorted({d["slowest_rank"] for d in slow_list}),
            evidence=evidence,
        )
    ]


def _low_occupancy(ctx: _Context) -> list[dict[str, Any]]:
    r = ctx.rules
    ks = ctx.call(kernel_overlap_stats, "overlap_rank", per="rank")
    comp = ks.loc[ks["gpu_class"] == "compute"]
    if comp.empty:
        return []
    job = comp.groupby("name", sort=False)[["count", "total_ns"]].sum()
    job = job.sort_values("total_ns", ascending=False, kind="stable").head(int(r.occupancy_top_k))
    occ_ns: dict[str, float] = {}
    occ_w: dict[str, float] = {}
    for f in ctx.facts.values():
        for name, (d, w) in f["occupancy"].items():
            occ_ns[name] = occ_ns.get(name, 0.0) + d
            occ_w[name] = occ_w.get(name, 0.0) + w
    flagged: list[dict[str, Any]] = []
    for name, row in job.iterrows():
        n = str(name)
        if occ_ns.get(n, 0.0) <= 0 or row["total_ns"] < r.tiny_kernel_ns * row["count"]:
            continue
        occ = occ_w[n] / occ_ns[n]
        if occ < r.occupancy_max_pct:
            flagged.append(
                {
                    "name": n,
                    "count": int(row["count"]),
                    "total_ns": int(row["total_ns"]),
                    "mean_ns": float(row["total_ns"]) / int(row["count"]),
                    "occupancy_pct": occ,
                }
            )
    if not flagged:
        return []
    ranks = sorted(set(int(x) for x in comp.loc[comp["name"].isin([f["name"] for f in flagged]), "rank"]))
    k0 = flagged[0]
    detail = (
        f"{len(flagged)} of the top {len(job)} compute kernels by time run at a low estimated achieved occupancy "
        f"(CUPTI's estimate, time-weighted): {_short(k0['name'])} at {_p(k0['occupancy_pct'])} over "
        f"{k0['count']} runs ({_f(k0['total_ns'])})"
        + (f", and {len(flagged) - 1} more" if len(flagged) > 1 else "")
        + ". Too few blocks for the GPU's SMs, or too many registers or shared memory per block, leave the GPU "
        "underused; larger batches, other tile sizes (torch.backends.cuda.matmul settings, autotuning via "
        "torch.compile(mode='max-autotune')) may help. No time at stake is estimated: a low-occupancy kernel can "
        "still be bound by memory bandwidth."
    )
    title = f"Low occupancy: {_short(k0['name'])} runs at {_p(k0['occupancy_pct'])} estimated occupancy"
    return [
        _finding(
            ctx,
            "low_occupancy",
            title=title,
            detail=detail,
            time_at_stake_ns=0,
            ranks=ranks,
            evidence={"kernels": flagged, "top_k": len(job)},
            info=True,
        )
    ]


_RULES: tuple[Callable[[_Context], list[dict[str, Any]]], ...] = (
    _launch_bound,
    _exposed_communication,
    _collective_wait,
    _load_imbalance,
    _straggler,
    _tiny_kernels,
    _copies_and_syncs,
    _low_overlap_collective,
    _slow_iteration,
    _low_occupancy,
)
