"""Plain-language findings, each with the rule, the threshold and the numbers behind it.

Every rule reads the outputs of the other analyses (``summary``, ``kernel_launch_stats``,
``efficiency``, ``iteration_stats``, ``stragglers``, ``nccl_summary``,
``kernel_overlap_stats``, ``op_kernels``, ``frequent_kernel_sequences``) plus one small
per-rank extraction run through :meth:`Trace.map_ranks` (the device-level idle gaps and
the blocking host calls), and turns them into findings ranked by the GPU time at stake.
The rules, thresholds and preconditions are documented in ``docs/semantics.md
(findings)``.

The package:

``driver``
    :func:`findings`: runs every registered rule on one memo context and ranks the findings.
``registry``
    :func:`rule`, the decorator a rule declares itself with; :func:`all_rules` discovers
    the modules of ``rules/``.
``thresholds``
    :class:`Thresholds`, the base of a rule's thresholds dataclass, and :class:`Common`,
    the settings of the driver and of several rules.
``config``
    :class:`FindingRules`, the one typed configuration of the thresholds (the common
    settings and every rule's own thresholds).
``context``
    :class:`Context`: the scoped trace, the thresholds, the per-rank facts and the other
    analyses' outputs (each computed once); :meth:`Context.finding` makes a row.
``extraction``
    The per-rank facts (device idle gaps, blocking calls, pageable copies, occupancy).
``text``
    Formatting helpers of titles and details.
``rules/<id>.py``
    One rule per file: its id, text, thresholds, analyses and function. Adding a rule is
    adding one file (and its test); see CONTRIBUTING.md.
"""

from __future__ import annotations

from .config import FindingRules
from .context import Context, Finding
from .driver import EXPLAIN_COLUMNS, FINDING_COLUMNS, SEVERITIES, findings, findings_and_explain
from .registry import Rule, all_rules, rule
from .thresholds import Common, Thresholds

__all__ = [
    "EXPLAIN_COLUMNS",
    "FINDING_COLUMNS",
    "SEVERITIES",
    "Common",
    "Context",
    "Finding",
    "FindingRules",
    "Rule",
    "Thresholds",
    "all_rules",
    "findings",
    "findings_and_explain",
    "rule",
]
