"""Reader for the binary XSpace that ``jax.profiler`` writes (``<host>.xplane.pb``; docs/jax.md).

The XSpace is converted by xprof's own converter
(``xprof.convert.raw_to_tool_data.xspace_to_tool_data(paths, "trace_viewer", ...)``, the
trace that xprof's Trace Viewer shows), and that trace JSON is read as a ``jax.profiler``
trace JSON is (:func:`.jax.ranks_of`: devices are ranks, the ``Stream #`` lines' work is
kernels and copies, the ``XLA Ops``/``XLA Modules``/``Steps`` lines are device annotations).
xprof is the optional extra ``jupyter_traceview[jax]``; it is imported only when an XSpace is
read. xprof writes its caches (``*.SSTABLE``, ``*.hlo_proto.pb``, ...) beside the file it
converts: the reader converts a link to the file made in a temporary folder, so that nothing
is ever written beside the user's profile.

Where the trace has devices, the same XSpace is also given to xprof's ``op_profile`` tool:
XLA's cost analysis of the ops the devices ran (FLOPs and bytes per HLO op, :mod:`.xla_cost`),
kept in each device rank's ``RankMeta.extra`` (:mod:`jupyter_traceview.model.xla_cost`) for
``op_performance``. Where xprof gives none (a CPU profile), or fails to, there is none.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from ...errors import TraceFormatError
from ...model.rank_data import RankData, replaced
from ...model.xla_cost import XLA_COST_KEY
from ..storage import RemotePath
from .files import JAX_XPLANE, open_file
from .jax import ranks_of
from .xla_cost import cost_rows

__all__ = ["JAX_EXTRA", "convert_xplane", "parse_xplane"]

#: What to install to read an XSpace.
JAX_EXTRA = "pip install 'jupyter_traceview[jax]' (xprof), then restart the kernel"
_TOOL = "trace_viewer"
_COST_TOOL = "op_profile"
_DEVICE = b'"/device:'  # a device process of the trace (its process_name)


def _or_the_json(path: Path) -> str:
    """The hint's other way out: the trace JSON jax.profiler writes beside the XSpace (named
    where it is there)."""
    if not isinstance(path, RemotePath) and path.name.endswith(JAX_XPLANE):
        beside = Path(path).with_name(path.name[: -len(JAX_XPLANE)] + ".trace.json.gz")
        if beside.is_file():
            return f"or load the trace JSON written beside it: tv.load({str(beside)!r})"
    return "or load the <host>.trace.json.gz that jax.profiler.trace writes beside it"


def _converter(path: Path) -> Any:
    """xprof's ``raw_to_tool_data`` module, or a :class:`TraceFormatError` naming the extra."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "xprof").split(".")[0] == "xprof":
            problem = "is jax.profiler's binary XSpace, which needs xprof to be read, and xprof is not installed"
        else:  # installed, but it or what it needs does not import
            problem = f"is jax.profiler's binary XSpace, and xprof, which reads it, does not import ({exc})"
        raise TraceFormatError(path, problem, f"{JAX_EXTRA}; {_or_the_json(path)}") from None
    except OSError as exc:  # xprof's converter library does not load (its ctypes.CDLL)
        raise TraceFormatError(
            path,
            f"is jax.profiler's binary XSpace, and xprof's converter library does not load here ({exc})",
            f"Reinstall xprof for this platform ({JAX_EXTRA}); {_or_the_json(path)}",
        ) from None
    return raw_to_tool_data


def _local_copy(path: Path, folder: Path) -> Path:
    """``path`` under ``folder`` (a link to a local file, a copy of an object in storage)."""
    local = folder / (path.name if path.name.endswith(JAX_XPLANE) else "host" + JAX_XPLANE)
    if isinstance(path, RemotePath):
        with open_file(path) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        return local
    try:
        local.symlink_to(Path(path).resolve())
    except OSError:  # no links on this file system: a copy
        shutil.copyfile(path, local)
    return local


def convert_xplane(path: Path) -> tuple[bytes, bytes | None]:
    """The trace JSON of xprof's Trace Viewer for the XSpace at ``path`` (converted by
    ``xprof.convert.raw_to_tool_data``), and, where the trace has devices, xprof's
    ``op_profile`` JSON of it (None where it has none or xprof gives none); a
    :class:`TraceFormatError` naming the file where the trace cannot be: xprof missing (the
    extra to install), an empty file, or one xprof cannot parse (a profile cut short)."""
    convert = _converter(path)
    if isinstance(path, RemotePath):
        size = path.size
    else:
        try:
            size = Path(path).stat().st_size
        except OSError as exc:
            raise TraceFormatError(path, f"cannot be read ({exc.strerror or exc})", "Check that it exists") from None
    if size == 0:
        raise TraceFormatError(
            path, "is empty (0 bytes)", "The profiler may have crashed while writing it; record the profile again"
        )
    errors: list[str] = []

    def tools_data(paths: Any, tool: str, options: Any) -> tuple[Any, bool]:
        # xprof's own conversion, keeping the reason it gives when it fails (the default
        # wrapper drops it).
        from xprof.convert import _pywrap_profiler_plugin

        raw, ok = _pywrap_profiler_plugin.xspace_to_tools_data(paths, tool, options)
        if not ok:
            errors.append(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw))
        return raw, ok

    with tempfile.TemporaryDirectory(prefix="traceview-xplane-") as tmp:
        local = _local_copy(path, Path(tmp))
        try:
            data, _ = convert.xspace_to_tool_data([str(local)], _TOOL, {"use_saved_result": False}, tools_data)
        except Exception as exc:  # noqa: BLE001 - xprof's failures, whatever their type, name the file
            errors.append(f"{type(exc).__name__}: {exc}")
            data = None
        cost = None
        if data and _DEVICE in (data.encode() if isinstance(data, str) else bytes(data)):
            try:
                cost, _ = convert.xspace_to_tool_data([str(local)], _COST_TOOL, {"use_saved_result": False})
            except Exception:  # noqa: BLE001 - no cost analysis: the trace still reads
                cost = None
        reason = "; ".join(e.replace(str(local), path.name) for e in errors)
    if not data:
        raise TraceFormatError(
            path,
            f"is not an XSpace that xprof can read ({reason or 'no trace came back'})",
            f"The profile was cut short or is not a jax.profiler .xplane.pb: record it again ({_or_the_json(path)})",
        )
    trace = data.encode() if isinstance(data, str) else bytes(data)
    return trace, (cost.encode() if isinstance(cost, str) else bytes(cost)) if cost else None


def parse_xplane(path: Path, *, bad_events: str = "raise") -> list[RankData]:
    """Read one ``<host>.xplane.pb`` into one RankData per device, through xprof's Trace Viewer
    trace (:func:`convert_xplane`), mapped as a ``jax.profiler`` trace JSON is (:func:`.jax.ranks_of`)."""
    data, cost = convert_xplane(path)
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(
            path, f"was converted by xprof into invalid JSON ({exc})", "Report it with the xprof version"
        ) from None
    ranks = ranks_of(path, doc, bad_events=bad_events)
    try:
        rows = cost_rows(msgspec.json.decode(cost)) if cost else []
    except msgspec.DecodeError:
        rows = []
    if not rows:
        return ranks
    # Every rank is a device (there are devices), and one table covers the programs of all.
    return [replaced(d, meta=dataclasses.replace(d.meta, extra={**d.meta.extra, XLA_COST_KEY: rows})) for d in ranks]
