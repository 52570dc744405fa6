"""The base of a rule's thresholds, and the settings shared by the driver and several rules."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ...errors import OptionError

__all__ = ["Common", "Thresholds"]


@dataclass(frozen=True)
class Thresholds:
    """Base of a rule's thresholds: frozen fields with defaults, checked on creation.

    Every field is a non-negative finite number, or a bool where its default is one;
    a subclass adds its own cross-field checks in :meth:`check`.
    """

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(f.default, bool):
                if not isinstance(v, bool):
                    raise OptionError(f"FindingRules.{f.name} must be True or False, got {v!r}")
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise OptionError(f"FindingRules.{f.name} must be a non-negative number, got {v!r}")
        self.check()

    def check(self) -> None:
        """Cross-field checks (raise :class:`OptionError`); none by default."""


@dataclass(frozen=True)
class Common(Thresholds):
    """Settings of the driver and of more than one rule."""

    #: A finding whose time at stake is below this share (%) of the job's elapsed time
    #: is not reported (``info`` findings, which carry no time at stake, are exempt).
    min_time_at_stake_pct: float = 1.0
    #: Severity ``high`` from this share (%) of the elapsed time at stake.
    high_pct: float = 20.0
    #: Severity ``medium`` from this share (%); below it, ``low``.
    medium_pct: float = 5.0
    #: A device idle gap shorter than this with its work already launched is the normal
    #: delay between queued kernels (``kernel_wait``, as :func:`idle_time_breakdown`).
    kernel_wait_ns: int = 30_000
    #: ``tiny_kernels``, ``low_occupancy`` (and ``kernel_launch_stats(short_kernel_ns=)``):
    #: a launch running less than this on the GPU is tiny.
    tiny_kernel_ns: int = 10_000

    def check(self) -> None:
        if self.medium_pct > self.high_pct:
            raise OptionError(
                f"FindingRules: medium_pct ({self.medium_pct}) must not exceed high_pct ({self.high_pct})"
            )
