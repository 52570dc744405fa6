"""jupyter_traceview: understand the GPU performance of (distributed) PyTorch jobs.

    >>> import jupyter_traceview as tv
    >>> trace = tv.load("run/")          # a folder of rank traces, or one file

The names under ``tv.`` are what users call: ``load``, the ``Trace``, the analyses
(``jupyter_traceview.analysis``), the widgets, the report, the errors. Each is imported on
first use (PEP 562), so ``import jupyter_traceview`` imports neither pandas nor pyarrow nor
any UI package. The layers behind them: docs/architecture.md.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .loading.prepare import set_prepare_functions
from .model.display_hook import Headline, set_headline_hook, set_mimebundle_hook

if TYPE_CHECKING:
    # What type checkers see; at run time __getattr__ imports each name on first use.
    from . import analysis as analysis
    from . import charts as charts
    from .analysis import *  # noqa: F403 (the public analyses: analysis/__init__.py)
    from .analysis.whatif import changes as changes
    from .errors import (
        OptionError as OptionError,
    )
    from .errors import (
        TraceFormatError as TraceFormatError,
    )
    from .errors import (
        TraceSelectionError as TraceSelectionError,
    )
    from .errors import (
        TraceviewError as TraceviewError,
    )
    from .errors import (
        TraceviewWarning as TraceviewWarning,
    )
    from .loading.cache import clear_cache as clear_cache
    from .loading.dataset import export as export
    from .loading.loader import load as load
    from .loading.sql import sql as sql
    from .model.classify import Classifier as Classifier
    from .model.clock import align_clocks as align_clocks
    from .model.clock import clock_alignment as clock_alignment
    from .model.schema import EventKind as EventKind
    from .model.schema import GpuClass as GpuClass
    from .model.trace import Trace as Trace
    from .report.html import write_report as write_report
    from .samples import sample_path as sample_path
    from .widgets.dashboard import Dashboard as Dashboard
    from .widgets.timeline import Timeline as Timeline
    from .widgets.timeline import TimelineSelection as TimelineSelection

#: The public names other than the analyses, and the module that defines each (one line a
#: name). The analyses are the names of ``jupyter_traceview.analysis.__all__``.
_PUBLIC: dict[str, str] = {
    "load": "jupyter_traceview.loading.loader",
    "clear_cache": "jupyter_traceview.loading.cache",
    "export": "jupyter_traceview.loading.dataset",
    "sql": "jupyter_traceview.loading.sql",
    "Trace": "jupyter_traceview.model.trace",
    "Classifier": "jupyter_traceview.model.classify",
    "EventKind": "jupyter_traceview.model.schema",
    "GpuClass": "jupyter_traceview.model.schema",
    "align_clocks": "jupyter_traceview.model.clock",
    "clock_alignment": "jupyter_traceview.model.clock",
    "sample_path": "jupyter_traceview.samples",
    "OptionError": "jupyter_traceview.errors",
    "TraceFormatError": "jupyter_traceview.errors",
    "TraceSelectionError": "jupyter_traceview.errors",
    "TraceviewError": "jupyter_traceview.errors",
    "TraceviewWarning": "jupyter_traceview.errors",
    "Dashboard": "jupyter_traceview.widgets.dashboard",
    "Timeline": "jupyter_traceview.widgets.timeline",
    "TimelineSelection": "jupyter_traceview.widgets.timeline",
    "write_report": "jupyter_traceview.report.html",
    "changes": "jupyter_traceview.analysis.whatif",
}
#: Subpackages reachable as attributes (``tv.charts``: bokeh figures of the analyses).
_SUBPACKAGES = ("analysis", "charts")


def _analyses() -> list[str]:
    from . import analysis

    names: list[str] = vars(analysis)["__all__"]  # built at run time (analysis/__init__.py)
    return list(names)


if not TYPE_CHECKING:  # type checkers read the imports above, and know no other name

    def __getattr__(name: str) -> Any:
        if name == "__all__":  # ``from jupyter_traceview import *``
            return _public()
        module = _PUBLIC.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif name in _SUBPACKAGES:
            value = importlib.import_module(f"{__name__}.{name}")
        elif _is_submodule(name):
            # ``from jupyter_traceview import cli``: the import system asks here first, then
            # imports the module; no analysis name is a module's, so the analyses stay unimported.
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        elif not name.startswith("_") and name in _analyses():
            value = getattr(importlib.import_module(f"{__name__}.analysis"), name)
        else:
            from .deprecation import removed_name

            raise removed_name(__name__, name) or AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value  # the next look-up is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_PUBLIC, *_SUBPACKAGES, *_analyses()})


def _is_submodule(name: str) -> bool:
    """Whether ``name`` is a module or package of this package (looked up in its folder)."""
    here = os.path.dirname(__file__)
    return os.path.isfile(os.path.join(here, f"{name}.py")) or os.path.isfile(os.path.join(here, name, "__init__.py"))


def _public() -> list[str]:
    """Every public name (``__all__`` is this, built on first use: it lists the analyses)."""
    return sorted({*_PUBLIC, *_analyses(), "__version__", "load_ipython_extension", "unload_ipython_extension"})


def _trace_mimebundle(trace: Any, *, include: Any = None, exclude: Any = None) -> dict[str, Any] | None:
    """A trace on the last line of a cell: the widgets layer's summary card (imported when first shown)."""
    from .widgets.display import trace_mimebundle

    return trace_mimebundle(trace, include=include, exclude=exclude)


set_mimebundle_hook(_trace_mimebundle)


def _trace_headline(trace: Any) -> Headline:
    """``tv.headline(trace)`` for the trace's reprs (the analyses imported when first shown)."""
    from .analysis.headline import headline

    return headline(trace)


set_headline_hook(_trace_headline)


def _prepare_findings(trace: Any) -> None:
    """What a default ``tv.findings`` computes per rank, computed by a big load's workers as
    they read each file (``tv.load(..., prepare=)``; the analyses imported when first run)."""
    from .analysis.findings.prepare import prepare

    prepare(trace)


set_prepare_functions((_prepare_findings,))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension behind the JupyterLab Traces sidebar (see jupyter_traceview.server)."""
    return [{"module": "jupyter_traceview.server"}]


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext jupyter_traceview``: register ``%%traceprofile`` and ``%traceview``.

    Examples
    --------
    >>> from IPython.testing import globalipapp
    >>> ip = globalipapp.get_ipython()  # an IPython shell; in a notebook, get_ipython()
    >>> ip.run_line_magic("reload_ext", "jupyter_traceview")  # %load_ext, or again: calls this function
    >>> "traceprofile" in ip.magics_manager.magics["cell"]
    True
    """
    from .notebook.magics import load_ipython_extension as load_magics

    load_magics(ip)


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext jupyter_traceview``: undo what :func:`load_ipython_extension` set up.

    Examples
    --------
    >>> from IPython.testing import globalipapp
    >>> ip = globalipapp.get_ipython()  # an IPython shell; in a notebook, get_ipython()
    >>> ip.run_line_magic("reload_ext", "jupyter_traceview")  # loaded (again)
    >>> ip.run_line_magic("unload_ext", "jupyter_traceview")  # calls this function
    >>> "jupyter_traceview" in ip.extension_manager.loaded
    False
    >>> ip.run_line_magic("load_ext", "jupyter_traceview")  # loaded again
    """
    from .notebook.magics import unload_ipython_extension as unload_magics

    unload_magics(ip)
