"""Step-to-step noise: a bootstrap interval of the difference of mean step parts.

The steps of each side are resampled with replacement (``RESAMPLES`` times, a fixed seed, so
the answer is the same on every run), the same resampled steps for every cause, and each
cause's difference of means is computed on every resample. A cause is *within noise* when
the central ``LEVEL`` interval of those differences contains 0; the step time itself (the
sum of the causes) is tested the same way and gives the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LEVEL", "MIN_STEPS", "RESAMPLES", "SEED", "Interval", "bootstrap"]

#: Resamples of the bootstrap.
RESAMPLES = 2000
#: The seed of its generator (``numpy.random.default_rng``).
SEED = 0
#: The interval's coverage (a central 95 % interval: the 2.5th and 97.5th percentiles).
LEVEL = 0.95
#: Steps needed on each side to estimate the noise at all.
MIN_STEPS = 2


@dataclass(frozen=True)
class Interval:
    """Per column of the parts: the bootstrap interval of ``mean(new) - mean(base)``."""

    low: np.ndarray
    high: np.ndarray

    def contains_zero(self) -> np.ndarray:
        out: np.ndarray = (self.low <= 0) & (self.high >= 0)
        return out


def bootstrap(base: np.ndarray, new: np.ndarray) -> Interval | None:
    """The interval of each column's difference of means (rows are steps); None with fewer
    than ``MIN_STEPS`` steps on a side."""
    if len(base) < MIN_STEPS or len(new) < MIN_STEPS:
        return None
    rng = np.random.default_rng(SEED)
    # Each resample as the weights of the steps (how often drawn / steps): the means are then
    # one matrix product, resamples x steps memory and never resamples x steps x columns.
    diffs = _weights(rng, len(new)) @ np.asarray(new, dtype=np.float64) - _weights(rng, len(base)) @ np.asarray(
        base, dtype=np.float64
    )
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(diffs, [tail, 100 - tail], axis=0)
    return Interval(low=np.asarray(low, dtype=np.float64), high=np.asarray(high, dtype=np.float64))


def _weights(rng: np.random.Generator, n: int) -> np.ndarray:
    draws = rng.integers(0, n, size=(RESAMPLES, n))
    w = np.zeros((RESAMPLES, n), dtype=np.float64)
    np.add.at(w, (np.repeat(np.arange(RESAMPLES), n), draws.ravel()), 1.0 / n)
    return w
