"""jupyter_traceview: understand the GPU performance of (distributed) PyTorch jobs.

    >>> import jupyter_traceview as tv
    >>> trace = tv.load("run/")          # a folder of rank traces, or one file

Layers point one way: trace model (``schema``, ``readers``, ``trace``) -> analyses ->
charts and widgets -> magics and the JupyterLab extension. Heavy parts load lazily.
"""

from __future__ import annotations

from pathlib import Path

from ._version import __version__
from .analysis import summary
from .cache import clear_cache, default_cache_dir
from .classify import Classifier
from .errors import TraceFormatError, TraceSelectionError, TraceviewError, TraceviewWarning
from .loader import load
from .schema import EventKind, GpuClass
from .trace import Trace
from .trace_data import RankData, RankMeta

__all__ = [
    "Classifier",
    "EventKind",
    "GpuClass",
    "RankData",
    "RankMeta",
    "Timeline",
    "TimelineSelection",
    "Trace",
    "TraceFormatError",
    "TraceSelectionError",
    "TraceviewError",
    "TraceviewWarning",
    "__version__",
    "clear_cache",
    "default_cache_dir",
    "load",
    "sample_path",
    "summary",
]


#: Names exported lazily (their modules import UI packages).
_LAZY = {
    "Timeline": "jupyter_traceview.widgets.timeline",
    "TimelineSelection": "jupyter_traceview.widgets.timeline",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_traceview' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension behind the JupyterLab Traces sidebar (see jupyter_traceview.server)."""
    return [{"module": "jupyter_traceview.server"}]


def sample_path(name: str = "dlrm_8rank_v100") -> Path:
    """Folder of a sample trace shipped with the package (real traces; see samples/NOTICE.md).

    ``dlrm_8rank_v100``: one DLRM training step on 8 V100 GPUs with NCCL, 8 rank files.
    """
    root = Path(__file__).parent / "samples"
    p = root / name
    if not p.is_dir():
        available = sorted(c.name for c in root.iterdir() if c.is_dir())
        raise ValueError(f"no sample named {name!r}; available: {', '.join(available)}")
    return p
