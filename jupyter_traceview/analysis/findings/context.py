"""The memo context a rule reads: the scoped trace, the thresholds, the per-rank facts and
the other analyses' outputs, each computed once on demand; and :meth:`Context.finding`,
which turns a rule's numbers into a row of :func:`findings`.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from ...errors import TraceviewWarning
from ...model.trace import Trace
from .._common import distinct_ints, scoped
from .._memo import Memo, per_rank, shared_rank_facts
from .._workers import RankWorkers
from ..host_findings import host_facts
from ..launch import kernel_launch_stats, rows_of
from ..stragglers import kind_from_name, straggler_views
from ..summary import summary
from ..workload import RankWorkload, workload_of
from .config import FindingRules
from .extraction import rank_facts
from .registry import get
from .thresholds import Common

__all__ = ["Context", "Finding"]


class Finding(TypedDict):
    """One row of :func:`findings` (the columns are documented there)."""

    id: str
    severity: str
    title: str
    detail: str
    time_at_stake_ns: int
    time_at_stake_pct: float
    ranks: list[int]
    evidence: dict[str, Any]
    rule: str
    analysis: str


class Context:
    """The scoped trace, the rules, and the analyses' outputs (each computed once, on demand)."""

    def __init__(
        self,
        trace: Trace,
        rules: FindingRules,
        *,
        ranks: Iterable[int] | int | None,
        iterations: Iterable[int] | int | None,
        time_range: tuple[int, int] | None,
        workers: bool = True,
        rank_memo: Memo | None = None,
    ) -> None:
        self.rules = rules
        self.common: Common = rules.common
        #: A run that did not end well (``Trace.run_status``): its last step, cut short by
        #: the error, left out of the findings where other steps remain (rule ``partial_run``).
        self.partial_step, self.partial_left_out = _partial_step(trace, iterations)
        if self.partial_left_out:
            steps = sorted({int(s) for s in trace.iterations["step"].tolist()})
            iterations = [s for s in steps if s != self.partial_step]
        # Ranks and iterations are selected once; the time range goes to every analysis,
        # which applies it after following launch links (see _links.scope_linked).
        self.trace = scoped(trace, ranks=ranks, iterations=iterations)
        self.time_range = time_range
        self._memo: dict[str, Any] = {}
        #: Why each rule that noted it did not fire (:meth:`note`), for ``findings(explain=True)``.
        self.notes: dict[str, str] = {}
        #: The per-rank facts the analyses share while this context computes (._memo):
        #: each rank's GPU activities, unions and eid table once per findings call (or the
        #: caller's store, ``rank_memo``: the dashboard's, shared with its other analyses).
        self._rank_memo: Memo = {} if rank_memo is None else rank_memo
        #: Worker processes that compute a share of the per-rank results not kept yet (a
        #: big cached trace's first findings call; see .._workers). Stopped by close().
        #: ``workers=False``: none (a process that is itself a worker: see .prepare).
        self._workers = RankWorkers(None if workers else 0)
        weakref.finalize(self, self._workers.close)
        windowed = self.trace if time_range is None else self.trace.select(time_range=time_range)
        with shared_rank_facts(self._rank_memo, workers=self._workers):
            facts = per_rank(windowed, rank_facts, int(self.common.tiny_kernel_ns), int(self.common.kernel_wait_ns))
        self.facts: dict[int, dict[str, Any]] = {r: f for r, f in facts.items() if f is not None}
        self.gpu_ranks = sorted(self.facts)
        #: The trace's origin: relative times in the findings count from it, as everywhere.
        self.t0 = int(trace.t0_ns)
        if self.gpu_ranks:
            start = min(f["gpu_start_ns"] for f in self.facts.values())
            #: The job span (docs/semantics.md): first GPU work on any rank to last.
            self.elapsed_ns = max(f["gpu_end_ns"] for f in self.facts.values()) - start
        else:
            # No GPU work: the host-side rules measure against the host's wall time.
            walls = [f["wall_ns"] for f in self.host_facts().values()]
            self.elapsed_ns = max(walls, default=0)

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            with warnings.catch_warnings(), shared_rank_facts(self._rank_memo, workers=self._workers):
                # The analyses warn about what they skip; a finding states its preconditions.
                warnings.simplefilter("ignore", TraceviewWarning)
                self._memo[key] = compute()
        return self._memo[key]

    def close(self) -> None:
        """Stop the worker processes, if any were started (the memos stay)."""
        self._workers.close()

    def call(self, fn: Callable[..., Any], key: str, **kw: Any) -> Any:
        return self.get(key, lambda: fn(self.trace, time_range=self.time_range, **kw))

    # The analyses, by name.
    def summary(self) -> pd.DataFrame:
        return self.call(summary, "summary").set_index("rank", drop=False)

    def launch_rank(self) -> pd.DataFrame:
        df = self.call(kernel_launch_stats, "launch", per="rank", short_kernel_ns=int(self.common.tiny_kernel_ns))
        return df.set_index("rank", drop=False)

    def stragglers(self, by: str) -> pd.DataFrame:
        if len(self.gpu_ranks) < 2:
            return pd.DataFrame()
        views: dict[str, pd.DataFrame] = self.call(
            straggler_views, "stragglers", views=("rank", "collective", "arrival")
        )
        return views[by]

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
                kinds = {int(c): kind_from_name(str(cats[c])) for c in distinct_ints(codes).tolist() if c >= 0}
                for c, w in zip(codes, grp["wait_ns"].to_numpy(), strict=True):
                    if c >= 0:
                        key = (int(r), kinds[int(c)])
                        out[key] = out.get(key, 0) + int(w)
            return out

        result: dict[tuple[int, str], int] = self.get("kind_wait", compute)
        return result

    def host_facts(self) -> dict[int, dict[str, Any]]:
        """Per rank, its main thread's time in operators, data loading and Python, its top
        operators and frames, its host syncs (:func:`..host_findings.host_facts`). With GPU
        work the rules read no operator breakdowns (``python_overhead`` and ``cpu_hotspots``
        are for traces without), so they are not computed."""
        result: dict[int, dict[str, Any]] = self.get(
            "host_facts",
            lambda: host_facts(self.trace, time_range=self.time_range, operators=not self.gpu_ranks),
        )
        return result

    def workloads(self) -> dict[int, RankWorkload]:
        """Per rank, what the trace records (:func:`..workload.workload`), computed once per
        findings call from the host facts the rules read: every rule conditions its advice on it."""

        def compute() -> dict[int, RankWorkload]:
            frame = workload_of(self.trace, time_range=self.time_range, host=self.host_facts())
            return {int(row["rank"]): RankWorkload(**row) for row in frame.to_dict("records")}

        result: dict[int, RankWorkload] = self.get("workload", compute)
        return result

    def workload(self, rank: int) -> RankWorkload:
        """What ``rank`` records (:meth:`workloads`)."""
        return self.workloads()[int(rank)]

    def note(self, rule_id: str, reason: str) -> None:
        """Record why ``rule_id`` reports nothing (``findings(explain=True)``): a precondition
        missing, or the measured value against its threshold ("checked, fine: ...")."""
        self.notes[rule_id] = reason

    def below(self, rule_id: str, what: str, measured_pct: float, threshold_pct: float, rank: int | None) -> None:
        """Note that the largest ``what`` (% of a rank's span, on ``rank``) is under the threshold."""
        where = f" (largest, on rank {rank})" if rank is not None else ""
        self.note(
            rule_id,
            f"checked, fine: {what} {measured_pct:.1f}%{where}, under the threshold of {threshold_pct:g}%",
        )

    def pct(self, ns: float) -> float:
        return 100.0 * ns / self.elapsed_ns if self.elapsed_ns > 0 else 0.0

    def comm_split(self) -> dict[int, dict[str, Any]]:
        """Per rank with communication: exposed communication, of which waiting for late ranks."""

        def compute() -> dict[int, dict[str, Any]]:
            s = self.summary()
            waits = self.wait_ns()
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

        result: dict[int, dict[str, Any]] = self.get("comm_split", compute)
        return result

    def finding(
        self,
        rule_id: str,
        *,
        title: str,
        detail: str,
        time_at_stake_ns: int,
        ranks: Iterable[int],
        evidence: dict[str, Any],
        info: bool = False,
    ) -> Finding:
        """A finding of the rule ``rule_id``: severity, share of the elapsed time, the rule's
        text with its thresholds filled in, and the evidence made JSON-able."""
        rule = get(rule_id)
        tas = 0 if info else int(min(max(time_at_stake_ns, 0), self.elapsed_ns))
        pct = self.pct(tas)
        c = self.common
        severity = "info" if info else "high" if pct >= c.high_pct else "medium" if pct >= c.medium_pct else "low"
        return {
            "id": rule_id,
            "severity": severity,
            "title": title,
            "detail": detail,
            "time_at_stake_ns": tas,
            "time_at_stake_pct": pct,
            "ranks": sorted(set(int(x) for x in ranks)),
            "evidence": clean({**evidence, "elapsed_ns": self.elapsed_ns}),
            "rule": rule.text.format(**self.rules.as_dict()),
            "analysis": rule.analyses,
        }


def clean(obj: Any) -> Any:
    """Plain JSON-able Python values: numpy scalars converted, floats to 6 significant digits."""
    if isinstance(obj, Mapping):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
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


def _partial_step(trace: Trace, iterations: Iterable[int] | int | None) -> tuple[int | None, bool]:
    """The last step of a run that raised or was interrupted (None for a run that ended
    well, or with no step), and whether the findings leave it out: only when no
    ``iterations=`` were asked for and other steps remain."""
    if trace.run_status == "ok":
        return None, False
    steps = sorted({int(s) for s in trace.iterations["step"].tolist()})
    if not steps:
        return None, False
    return steps[-1], iterations is None and len(steps) > 1
