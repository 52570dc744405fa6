"""The dashboard's tabs: one module per tab, each with a ``build(b: TabBuilder)`` function.

Adding a tab: a module ``tabs/<id>.py`` whose ``build`` fills the builder (figures,
tables, charts; see :class:`.builder.TabBuilder`), and one line in :data:`TABS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from .builder import TabBuilder

__all__ = ["TABS", "Tab", "TabBuilder"]


@dataclass(frozen=True)
class Tab:
    """A tab of the dashboard: its id (also its module's name), its label, when it shows."""

    id: str
    label: str
    #: Shown only when the dashboard compares the trace with a baseline.
    needs_baseline: bool = False
    #: Shown only when the trace has GPU activity (its content is about the GPU).
    needs_gpu: bool = False
    #: Opened first when the trace has no GPU activity (the main view of a CPU-only run).
    cpu_main: bool = False
    #: Shown only for traces with memory records (``profile_memory=True``).
    needs_memory: bool = False

    @property
    def build(self) -> Callable[[TabBuilder], None]:
        """The module's ``build(b)``."""
        module = importlib.import_module(f"{__name__}.{self.id}")
        fn: Callable[[TabBuilder], None] = module.build
        return fn


#: The dashboard's tabs, in order: one line per tab.
TABS: tuple[Tab, ...] = (
    Tab("overview", "Overview", needs_gpu=True),
    Tab("timeline", "Timeline"),
    Tab("breakdown", "Breakdown", needs_gpu=True),
    Tab("overlap", "Overlap", needs_gpu=True),
    Tab("kernels", "Kernels", needs_gpu=True),
    Tab("operators", "Operators", cpu_main=True),
    Tab("communication", "Communication", needs_gpu=True),
    Tab("iterations", "Iterations", needs_gpu=True),
    Tab("counters", "Counters", needs_gpu=True),
    Tab("memory", "Memory", needs_memory=True),
    Tab("performance", "Performance", needs_gpu=True),
    Tab("diff", "Diff", needs_baseline=True),
)
