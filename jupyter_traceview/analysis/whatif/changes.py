"""The changes :func:`~jupyter_traceview.what_if` can replay (``tv.changes``): small frozen dataclasses.

Each says what it assumes in ``describe()`` (the ``change`` column of ``findings``); how
each one changes the graph is in ``docs/semantics.md`` (*What-if replay*) and in
:mod:`.apply`. Changes combine: ``tv.what_if(trace, RemoveSyncs(), ScaleKernels(...))``.

Examples
--------
>>> import jupyter_traceview as tv
>>> tv.changes.ScaleKernels(family="gemm", factor=0.5).describe()
'gemm kernels take 0.5x their duration'
>>> trace = tv.load(tv.sample_path())
>>> rows = tv.what_if(trace, tv.changes.RemoveSyncs(), tv.changes.GraphLaunch(), ranks=0)
>>> int(rows["saving_ns"].iloc[0]) > 0
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import OptionError

__all__ = [
    "BalanceStraggler",
    "Change",
    "FuseKernels",
    "GraphLaunch",
    "OverlapCommunication",
    "RemoveDataLoading",
    "RemovePython",
    "RemoveSyncs",
    "ScaleKernels",
    "describe_all",
]


def _ms(ns: int) -> str:
    return f"{ns / 1e3:g} us"


@dataclass(frozen=True)
class RemoveSyncs:
    """Host syncs (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaEventSynchronize``,
    synchronous copies such as ``.item()``'s device-to-host copy) return at once: the host no
    longer waits for the GPU (the copies themselves still run on the GPU)."""

    def describe(self) -> str:
        return "host syncs (cuda*Synchronize, synchronous copies such as .item()) no longer wait for the GPU"


@dataclass(frozen=True)
class RemoveDataLoading:
    """The DataLoader's ``enumerate(DataLoader)#...__next__`` ranges take no time (data ready at once)."""

    def describe(self) -> str:
        return "the DataLoader's next() takes no time (data loading fully hidden)"


@dataclass(frozen=True)
class RemovePython:
    """The host time between operators on the threads that launch GPU work (the gaps between
    top-level events, and the own time of Python functions and annotations around operators)
    shrinks to ``floor_ns`` each."""

    floor_ns: int = 0

    def __post_init__(self) -> None:
        if self.floor_ns < 0:
            raise OptionError(f"RemovePython: floor_ns must be >= 0, got {self.floor_ns}")

    def describe(self) -> str:
        floor = f" (to {_ms(self.floor_ns)} each)" if self.floor_ns else ""
        return f"the Python time between operators on the launching threads is removed{floor}"


@dataclass(frozen=True)
class ScaleKernels:
    """GPU kernels matching ``pattern`` (a regular expression searched in the name) and/or
    ``family`` (:func:`~jupyter_traceview.analysis.kernel_families.family_of`) take ``factor`` times
    their duration; with ``to_roofline=True`` instead, kernels whose operator has a roofline
    time (:func:`~jupyter_traceview.op_performance`'s ``ideal_ns``) take their share of it
    (kernels of unmodelled operators keep their duration). No pattern or family: every kernel.

    On a rank without GPU kernels (a CPU-only trace) the "kernels" are its CPU operators
    (``cpu_op`` events) whose name matches ``pattern`` (every operator without one): each
    takes ``factor`` times its duration, the operators and calls nested in it shrinking with
    it, and what follows on its thread moves earlier. A match nested in another match is
    scaled once, with the outermost one (``aten::addmm`` holding an ``aten::mm``, both matched:
    the ``aten::addmm`` scaled, not its ``aten::mm`` again). ``family`` and ``to_roofline``
    select GPU kernels only: with either, CPU-only ranks keep their time."""

    pattern: str | None = None
    family: str | None = None
    factor: float = 1.0
    to_roofline: bool = False

    def __post_init__(self) -> None:
        if not self.factor >= 0:
            raise OptionError(f"ScaleKernels: factor must be >= 0, got {self.factor}")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise OptionError(
                    f"ScaleKernels: pattern {self.pattern!r} is not a regular expression: {exc}"
                ) from None

    def describe(self) -> str:
        what = "kernels"
        if self.family:
            what = f"{self.family} kernels"
        if self.pattern:
            what += f" matching {self.pattern!r}"
        if self.to_roofline:
            return f"{what} run at their roofline time (op_performance's ideal_ns)"
        return f"{what} take {self.factor:g}x their duration"


@dataclass(frozen=True)
class OverlapCommunication:
    """Communication kernels no longer hold anything that is not communication: compute,
    copies and host syncs that waited for them go on as soon as they start (exposed
    communication hidden under compute)."""

    def describe(self) -> str:
        return "communication fully overlapped with compute (nothing waits for a collective to end)"


@dataclass(frozen=True)
class BalanceStraggler:
    """The straggler rank (``rank``, else the one whose late arrivals held the others up
    most: :func:`~jupyter_traceview.stragglers`' ``lateness_ns``) is no longer late into
    collectives: where it arrived last, its work since its previous collective ended (or its
    step began), host and GPU alike, shrinks by its lateness over the second-last arrival;
    lateness from before that (a step begun late) no longer holds the others. Through the
    replay, the others' waits in the collectives shrink, and so does its own step."""

    rank: int | None = None

    def describe(self) -> str:
        who = f"rank {self.rank}" if self.rank is not None else "the straggler rank"
        return f"{who} no longer late into collectives (its work before each shrinks by its lateness)"


@dataclass(frozen=True)
class GraphLaunch:
    """Graph-captured work launched for free: the graph launch calls (``cudaGraphLaunch``,
    ``hipGraphLaunch``, ``cuGraphLaunch``) take no host time and the GPU activities they
    launch (those sharing the call's correlation id) no launch latency; other launches keep
    their cost. ``whole_step=True``: the whole step captured as one graph, so every kernel
    launch call takes no host time and its kernel no launch latency (what ``launch_bound``'s
    fix, "try CUDA graphs", assumes). The host work of the operators around the launches
    stays either way."""

    whole_step: bool = False

    def describe(self) -> str:
        if self.whole_step:
            return "kernel launches captured in a CUDA graph (launch calls and launch latency to zero)"
        return "graph launches (cudaGraphLaunch calls and their kernels' launch latency) to zero"


@dataclass(frozen=True)
class FuseKernels:
    """Consecutive kernels of a stream become one kernel (their durations summed, one launch):
    runs of kernels matching ``pattern``, occurrences of ``sequence`` (one pattern per kernel,
    in order), or runs of kernels shorter than ``shorter_than_ns``. Exactly one of them."""

    pattern: str | None = None
    sequence: tuple[str, ...] | None = None
    shorter_than_ns: int | None = None

    def __post_init__(self) -> None:
        given = sum(x is not None for x in (self.pattern, self.sequence, self.shorter_than_ns))
        if given != 1:
            raise OptionError("FuseKernels: give exactly one of pattern=, sequence= or shorter_than_ns=")
        if self.sequence is not None and len(self.sequence) < 2:
            raise OptionError("FuseKernels: sequence= needs at least two kernel patterns")
        for p in (self.pattern, *(self.sequence or ())):
            if p is not None:
                try:
                    re.compile(p)
                except re.error as exc:
                    raise OptionError(f"FuseKernels: {p!r} is not a regular expression: {exc}") from None

    def describe(self) -> str:
        if self.pattern is not None:
            return f"consecutive kernels matching {self.pattern!r} fused into one (one launch, summed duration)"
        if self.sequence is not None:
            return f"the kernel sequence {' -> '.join(self.sequence)} fused into one (one launch, summed duration)"
        return f"consecutive kernels shorter than {_ms(int(self.shorter_than_ns or 0))} fused into one"


Change = (
    RemoveSyncs
    | RemoveDataLoading
    | RemovePython
    | ScaleKernels
    | OverlapCommunication
    | BalanceStraggler
    | GraphLaunch
    | FuseKernels
)
CHANGE_TYPES = (
    RemoveSyncs,
    RemoveDataLoading,
    RemovePython,
    ScaleKernels,
    OverlapCommunication,
    BalanceStraggler,
    GraphLaunch,
    FuseKernels,
)


def describe_all(changes: tuple[Change, ...]) -> str:
    """The changes' descriptions joined with " + " ("" for none)."""
    return " + ".join(c.describe() for c in changes)
