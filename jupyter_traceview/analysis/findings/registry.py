"""The registry of findings rules: each rule declares itself with :func:`rule` in its own file.

A rule is a function ``(ctx, thresholds) -> list[Finding]`` in ``rules/<id>.py``,
decorated with :func:`rule`, which records next to it the rule's id, its text (with its
thresholds in braces), its thresholds dataclass, the analyses to look at for more and
its place in the ranking of ties. :func:`all_rules` imports every module of ``rules/``
once (discovery), so adding a rule is adding one file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from .thresholds import Common, Thresholds

__all__ = ["Rule", "RuleFunction", "all_rules", "get", "rule"]

#: ``(ctx: Context, thresholds) -> list[Finding]`` (typed where the rule is written: the
#: registry sits below the context it is called with).
RuleFunction = Callable[..., list[Any]]
F = TypeVar("F", bound=RuleFunction)


@dataclass(frozen=True)
class Rule:
    """One findings rule and what it declares."""

    #: Stable id, the ``id`` column of its findings.
    id: str
    #: The rule in words, with its thresholds in braces (``{host_wait_min_pct}``).
    text: str
    #: The analyses to look at for more, e.g. ``"tv.idle_time_breakdown, tv.queue_length"``.
    analyses: str
    #: Its thresholds (a frozen dataclass deriving from :class:`Thresholds`).
    thresholds: type[Thresholds]
    #: Ties in time at stake rank by this, then by id (the built-in rules use 10, 20, ...).
    order: int
    #: ``(ctx, thresholds) -> list[Finding]``.
    run: RuleFunction


_REGISTRY: dict[str, Rule] = {}
_discovered = False


def rule(
    *,
    id: str,
    text: str,
    analyses: str,
    order: int,
    thresholds: type[Thresholds] = Thresholds,
) -> Callable[[F], F]:
    """Register the decorated function as the findings rule ``id``."""

    def register(fn: F) -> F:
        _add(Rule(id=id, text=text, analyses=analyses, thresholds=thresholds, order=order, run=fn))
        return fn

    return register


def _add(r: Rule) -> None:
    if r.id in _REGISTRY:
        raise RuntimeError(f"findings rule {r.id!r} is registered twice")
    taken = {f.name: "the common settings" for f in fields(Common)}
    for other in _REGISTRY.values():
        taken.update({f.name: f"rule {other.id!r}" for f in fields(other.thresholds)})
    for f in fields(r.thresholds):
        if f.name in taken:
            raise RuntimeError(f"findings rule {r.id!r}: threshold {f.name!r} is already a field of {taken[f.name]}")
    _REGISTRY[r.id] = r


def all_rules() -> tuple[Rule, ...]:
    """Every registered rule, by ``order`` then id (the modules of ``rules/`` imported once)."""
    global _discovered
    if not _discovered:
        from . import rules as package

        for mod in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{mod.name}")
        _discovered = True
    return tuple(sorted(_REGISTRY.values(), key=lambda r: (r.order, r.id)))


def get(rule_id: str) -> Rule:
    """The rule with this id."""
    all_rules()
    return _REGISTRY[rule_id]
