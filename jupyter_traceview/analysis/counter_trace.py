"""Write rank traces with counter tracks (queue length, memory bandwidth) for trace viewers.

The output of :func:`write_counters_trace` is the original Kineto file, byte for byte in its
events, with Chrome-trace counter (``"ph": "C"``) events appended to ``traceEvents``: it
opens in Perfetto (ui.perfetto.dev), chrome://tracing and ``tv.load`` alike.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path

import msgspec
import numpy as np

from ..errors import OptionError, TraceFormatError, TraceviewWarning
from ..loading.readers.files import read_bytes
from ..model.text import as_text
from ..model.trace import Trace
from .counters import memory_bandwidth, queue_length
from .launch import has_gpu, launched

__all__ = ["write_counters_trace"]

#: Counter names, as HTA's ``generate_trace_with_counters`` writes them (same tracks in the UI).
QUEUE_COUNTER = "Queue Length"
BANDWIDTH_ARG = "Memory BW (GB/s)"
_BANDWIDTH_NAME = {"memset": "Memset", "unknown": "Memcpy Unknown"}


def _bandwidth_name(kind: str) -> str:
    return _BANDWIDTH_NAME.get(kind, f"Memcpy {kind}")


def _us_text(rel_ns: np.ndarray, exact_us: bool) -> list[str]:
    """Times (ns relative to the file's base) as the file's microsecond numbers, exactly."""
    values = rel_ns.tolist()
    if exact_us:
        return [str(v // 1000) for v in values]
    out = []
    for v in values:
        sign = "-" if v < 0 else ""
        q, r = divmod(abs(v), 1000)
        out.append(f"{sign}{q}.{r:03d}")
    return out


def _counter_events(trace: Trace, queue: bool, bandwidth: bool) -> list[str] | None:
    """A one-rank trace's counter events, each a JSON object text; None without GPU activity.

    Module-level, so that ``Trace.map_ranks`` can run it where the rank lives.
    """
    (rank,) = trace.ranks
    meta = trace.meta(rank)
    ev = trace.rank_data(rank).events
    if not has_gpu(ev):
        return None
    out: list[str] = []
    if queue:
        q = queue_length(trace)
        if len(q):
            acts, _ = launched(ev)
            lanes = ev.iloc[acts][["device", "stream", "pid", "tid"]].drop_duplicates(["device", "stream"])
            where = {(int(d), int(s)): (int(p), int(t)) for d, s, p, t in lanes.itertuples(index=False)}
            rel = q["ts_ns"].to_numpy() - meta.base_time_ns
            exact = bool((rel % 1000 == 0).all())
            ts = _us_text(rel, exact)
            for d, s, t, v in zip(
                q["device"].tolist(), q["stream"].tolist(), ts, q["queue_length"].tolist(), strict=True
            ):
                pid, tid = where[(d, s)]
                out.append(
                    f'{{"ph":"C","name":"{QUEUE_COUNTER}","id":{s},"pid":{pid},"tid":{tid},'
                    f'"ts":{t},"args":{{"{QUEUE_COUNTER}":{v}}}}}'
                )
    if bandwidth:
        b = memory_bandwidth(trace)
        if len(b):
            devices = ev.loc[ev["gpu_class"] == "memory", "pid"]
            pid = int(devices.iloc[0]) if len(devices) else 0
            rel = b["ts_ns"].to_numpy() - meta.base_time_ns
            exact = bool((rel % 1000 == 0).all())
            ts = _us_text(rel, exact)
            enc = msgspec.json.Encoder()
            for k, t, v in zip(as_text(b["kind"]).tolist(), ts, b["bandwidth_gbps"].tolist(), strict=True):
                value = enc.encode(float(v)).decode()
                out.append(
                    f'{{"ph":"C","name":"{_bandwidth_name(k)}","pid":{pid},"ts":{t},"args":{{"{BANDWIDTH_ARG}":{value}}}}}'
                )
    return out


_WHITESPACE = b" \t\r\n"


def _skip_back(data: bytes | memoryview, i: int) -> int:
    """The last index at or before ``i`` that is not JSON whitespace."""
    while i >= 0 and data[i] in _WHITESPACE:
        i -= 1
    return i


def _insertion(path: Path, data: bytes) -> tuple[int, bool]:
    """Where counter events go in a trace file: the offset of the ``]`` that closes its event
    array (``traceEvents``, or a bare top-level array), and whether the array is empty."""
    try:
        if data[:4096].lstrip()[:1] == b"[":  # a bare top-level array of events
            begin, close = data.index(b"["), _skip_back(data, len(data) - 1)
        else:
            doc = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
            if "traceEvents" not in doc:
                raise TraceFormatError(path, "has no traceEvents", "Pass a trace loaded from PyTorch profiler files")
            raw = memoryview(doc["traceEvents"])
            # msgspec.Raw is a zero-copy view into ``data``: its offset is a pointer difference.
            begin = np.frombuffer(raw, dtype=np.uint8).ctypes.data - np.frombuffer(data, dtype=np.uint8).ctypes.data
            if not 0 <= begin < len(data) or data[begin : begin + 1] != b"[":
                raise ValueError("traceEvents is not an array")
            close = _skip_back(data, begin + len(raw) - 1)
    except (msgspec.DecodeError, ValueError) as exc:
        raise TraceFormatError(path, f"cannot be read back as a trace ({exc})", "Load and write it again") from None
    if data[close : close + 1] != b"]":
        raise TraceFormatError(path, "does not end its event array with ]", "Load and write it again")
    return close, _skip_back(data, close - 1) == begin


def _write_gzip_atomic(target: Path, chunks: Iterable[bytes | memoryview]) -> None:
    """Gzip ``chunks`` into ``target`` through a temporary file renamed into place."""
    try:
        from isal import isal_zlib as zlib_like
    except ImportError:  # pragma: no cover - isal is a dependency
        import zlib as zlib_like  # type: ignore[no-redef]
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            comp = zlib_like.compressobj(wbits=31)
            for chunk in chunks:
                fh.write(comp.compress(chunk))
            fh.write(comp.flush())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _with_counters(path: Path, extra: list[str]) -> list[bytes | memoryview]:
    """The file's bytes with ``extra`` events appended to its event array, as chunks."""
    data = read_bytes(path)
    if not extra:
        return [data]
    close, empty = _insertion(path, data)
    view = memoryview(data)
    added = ("" if empty else ",") + ",".join(extra)
    return [view[:close], added.encode(), view[close:]]


def write_counters_trace(
    trace: Trace,
    out_dir: str | os.PathLike[str],
    *,
    ranks: Iterable[int] | int | None = None,
    queue: bool = True,
    bandwidth: bool = True,
) -> list[Path]:
    """Write each rank's trace file again with counter tracks, for Perfetto and chrome://tracing.

    For every file the ranks were loaded from, writes ``out_dir/<file name>`` (gzip-compressed,
    ``.gz`` added if the name lacks it) holding the original file's content, events untouched,
    plus Chrome-trace counter events (``"ph": "C"``) in the file's own time unit
    (microseconds relative to its ``baseTimeNanoseconds``; three decimals on ns-resolution
    traces):

    * ``Queue Length`` per stream (``"id"`` = stream, on the stream's pid/tid; value:
      :func:`queue_length`), as HTA's ``generate_trace_with_counters`` names it;
    * ``Memcpy HtoD``, ``Memcpy DtoH``, ..., ``Memset`` with the arg ``Memory BW (GB/s)``
      (value: :func:`memory_bandwidth`), on the device's pid.

    The counters are computed on ``trace`` as given (a trace narrowed with ``select`` gives
    counters of the narrowed events). Each file is written to a temporary file and renamed
    into place, so a reader never sees half a file. Files keep their names, so
    ``tv.load(out_dir)`` finds the same ranks.

    Parameters
    ----------
    trace:
        A trace loaded from files (``tv.load``); the files must still exist.
    out_dir:
        Folder to write to (created if missing); must not be the folder of the sources.
    ranks:
        Only these ranks' files (default: all).
    queue, bandwidth:
        Which counter tracks to add.

    Returns
    -------
    list of pathlib.Path
        The files written, in rank order.

    Warns
    -----
    TraceviewWarning
        For ranks without GPU activity (their files are written without counters).

    Examples
    --------
    >>> import tempfile, jupyter_traceview as tv
    >>> trace = tv.load(tv.sample_path(), ranks=[0])
    >>> with tempfile.TemporaryDirectory() as out:
    ...     [p.name for p in tv.write_counters_trace(trace, out)]
    ['worker0_step_12.1694128201545.pt.trace.json.gz']
    """
    if ranks is not None:
        trace = trace.select(ranks=ranks)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_file: dict[Path, list[int]] = {}
    for r in trace.ranks:
        by_file.setdefault(Path(trace.meta(r).path), []).append(r)
    targets: dict[Path, Path] = {}
    for src in by_file:
        name = src.name if src.name.lower().endswith(".gz") else f"{src.name}.gz"
        target = out / name
        if target.resolve() == src.resolve():
            raise OptionError(f"write_counters_trace would overwrite its source {src}; pick another out_dir")
        if target in targets.values():
            raise ValueError(f"two source files would both be written to {target}: rename one of them")
        if not src.exists():
            raise TraceFormatError(src, "is gone", "write_counters_trace re-reads the source files; load them again")
        targets[src] = target
    counters = trace.map_ranks(_counter_events, queue, bandwidth)
    no_gpu = [r for r, events in counters.items() if events is None]
    written: list[Path] = []
    for src, rank_list in by_file.items():
        extra = [e for r in rank_list for e in counters[r] or ()]
        _write_gzip_atomic(targets[src], _with_counters(src, extra))
        written.append(targets[src])
    if no_gpu:
        warnings.warn(
            f"write_counters_trace: rank(s) {no_gpu} have no GPU activity; their files are written without counters",
            TraceviewWarning,
            stacklevel=2,
        )
    return written
