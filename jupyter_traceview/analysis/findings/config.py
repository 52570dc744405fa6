"""The thresholds of the findings: one typed configuration, :class:`FindingRules`.

Each rule declares its own thresholds as a frozen dataclass deriving from
:class:`~.thresholds.Thresholds`, next to its function (``rules/<id>.py``); the settings shared by
several rules and by the driver (severity, the tiny-kernel and kernel-wait limits, clock
alignment) are :class:`~.thresholds.Common`. :class:`FindingRules` gathers them all under their field
names: ``tv.findings(trace, rules=tv.FindingRules(host_wait_min_pct=5))`` is the one way
to change a threshold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import OptionError
from .registry import all_rules
from .thresholds import Common, Thresholds

__all__ = ["FindingRules", "ThresholdField"]


@dataclass(frozen=True)
class ThresholdField:
    """One field of :class:`FindingRules`: its name, default and the rule that owns it."""

    name: str
    default: Any
    #: The rule id, or ``None`` for a :class:`Common` setting.
    rule: str | None


#: Fields no longer accepted, and what replaced them.
_REMOVED = {
    "align_clocks": "the findings read the trace they are given: align its clocks first, "
    "tv.findings(tv.align_clocks(trace))",
}


class FindingRules:
    """The thresholds of :func:`findings`, every field with a default (``docs/semantics.md``).

    ``FindingRules(host_wait_min_pct=5, tiny_kernel_ns=2_000)`` overrides some fields by
    name: the :class:`Common` settings and every rule's thresholds (``rules/<id>.py``).
    An unknown name or a bad value raises :class:`OptionError`. Fields read as attributes
    (``rules.high_pct``); :meth:`replace` gives a copy with some fields changed.

    Examples
    --------
    >>> import jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path())
    >>> rules = tv.FindingRules(tiny_kernel_ns=5_000)
    >>> rules.tiny_kernel_ns
    5000
    >>> found = tv.findings(trace, rules=rules)
    >>> tv.FindingRules(no_such_threshold=1)
    Traceback (most recent call last):
    ...
    jupyter_traceview.errors.OptionError: ...
    """

    __slots__ = ("_by_rule", "_common")

    def __init__(self, **thresholds: Any) -> None:
        owners = {f.name: f.rule for f in self.fields()}
        for k in thresholds:
            if k in _REMOVED:
                raise OptionError(f"FindingRules: {k} was removed; {_REMOVED[k]}")
            if k not in owners:
                raise OptionError.invalid("threshold", k, list(owners))
        common = {k: v for k, v in thresholds.items() if owners[k] is None}
        self._common = Common(**common)
        self._by_rule: dict[str, Thresholds] = {
            r.id: r.thresholds(**{k: v for k, v in thresholds.items() if owners[k] == r.id}) for r in all_rules()
        }

    @staticmethod
    def fields() -> list[ThresholdField]:
        """Every field: the common settings, then each rule's, in rule order."""
        out = [ThresholdField(f.name, f.default, None) for f in dataclasses.fields(Common)]
        for r in all_rules():
            out.extend(ThresholdField(f.name, f.default, r.id) for f in dataclasses.fields(r.thresholds))
        return out

    @property
    def common(self) -> Common:
        """The settings shared by the driver and several rules."""
        return self._common

    def of(self, rule_id: str) -> Thresholds:
        """The thresholds of one rule."""
        return self._by_rule[rule_id]

    def as_dict(self) -> dict[str, Any]:
        """Every field and its value."""
        out = dataclasses.asdict(self._common)
        for t in self._by_rule.values():
            out.update(dataclasses.asdict(t))
        return out

    def replace(self, **changes: Any) -> FindingRules:
        """A copy with these fields changed."""
        return FindingRules(**{**self.as_dict(), **changes})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        values = self.as_dict()
        if name not in values:
            raise AttributeError(f"FindingRules has no field {name!r}")
        return values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FindingRules) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.as_dict().items())))

    def __repr__(self) -> str:
        defaults = {f.name: f.default for f in self.fields()}
        changed = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items() if v != defaults[k])
        return f"FindingRules({changed})"
