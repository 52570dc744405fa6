"""Finding trace files, reading and decompressing them, and guessing ranks from names."""

from __future__ import annotations

import os
import re
import threading
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from ...errors import TraceFormatError
from ...format import size as format_size
from ..storage import RemotePath, is_url, listing, redacted

_zlib: Any = zlib
_INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, EOFError, OSError, ValueError)
try:  # ISA-L inflates gzip about 4x faster than zlib; fall back to zlib without it.
    from isal import igzip_lib as _igzip_lib
    from isal import isal_zlib as _isal_zlib

    _zlib = _isal_zlib
    _INFLATE_ERRORS += (_isal_zlib.error, _igzip_lib.IsalError)  # type: ignore[operator]
except ImportError:  # pragma: no cover - isal is a dependency; this guards odd installs
    pass

__all__ = [
    "DEFAULT_MAX_JSON_BYTES",
    "INFLATE_CHUNK_BYTES",
    "TraceFile",
    "discover",
    "inflate_chunks",
    "inflate_whole",
    "open_file",
    "out_of_memory",
    "prefetch",
    "rank_from_name",
    "read_bytes",
    "trace_format",
    "xprof_installed",
]

#: The most JSON a compressed trace may inflate to before reading stops (``max_json_bytes``):
#: a guard against gzip bombs (a few MB that inflate to many GB), far above real traces.
DEFAULT_MAX_JSON_BYTES = 4 * 2**30
#: :func:`inflate_chunks` gives the inflated content in chunks of at most this many bytes,
#: reading the compressed file in blocks of ``_READ_BLOCK`` bytes.
INFLATE_CHUNK_BYTES = 1 << 18
_READ_BLOCK = 1 << 18

#: File name endings read as Kineto JSON traces.
TRACE_SUFFIXES = (".json", ".json.gz", ".gz")
#: File name endings read as Nsight Systems SQLite exports.
NSYS_SUFFIXES = (".sqlite", ".sqlite3")
#: Nsight Systems' binary reports: found so that loading them says how to export them.
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
#: The first 16 bytes of every SQLite 3 database.
SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"
#: Bytes read (and inflated) from a file's start to tell its format.
_HEAD_BYTES = 4096
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])(?:rank|worker)[-_.]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class TraceFile:
    """A file to read, with what is known of it before parsing."""

    #: A local path, or a :class:`~..storage.RemotePath` (an object in storage, read through
    #: fsspec: :func:`open_file`, ``open_source``) typed as one.
    path: Path
    size: int
    mtime_ns: int
    #: Rank taken from the file name, or None.
    name_rank: int | None


def rank_from_name(name: str) -> int | None:
    """The rank in a file name such as ``rank-3.json.gz`` or ``worker3_step_12...``, else None."""
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def _is_candidate(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(TRACE_SUFFIXES + NSYS_SUFFIXES + NSYS_REPORT_SUFFIXES)


#: A ``jax.profiler`` trace's first metadata events name ``/host:`` and ``/device:`` processes.
_JAX_HEAD = re.compile(rb'"process_name"[^}]*"args"\s*:\s*\{\s*"name"\s*:\s*"/(?:host|device):')
#: Where ``jax.profiler.trace(dir)`` writes its runs, under ``dir``.
JAX_RUNS = ("plugins", "profile")
#: A JAX run's binary XSpace (``<host>.xplane.pb``): read through xprof's converter
#: (:mod:`.xplane`, the extra ``jupyter_traceview[jax]``).
JAX_XPLANE = ".xplane.pb"
#: The Perfetto copy of a JAX run's events (``create_perfetto_trace=True``), beside ``<host>.trace.json.gz``.
JAX_PERFETTO = "perfetto_trace.json.gz"


def is_jax_head(head: bytes) -> bool:
    """Whether the first (inflated) bytes of a JSON trace are those of a ``jax.profiler`` trace."""
    return b'"schemaVersion"' not in head and _JAX_HEAD.search(head) is not None


def _jax_run(p: Path) -> Path:
    """The folder to read for ``p``: the latest run (by name: runs are named by their time) of a
    ``jax.profiler.trace`` output folder, else ``p``."""
    runs_dir = p.joinpath(*JAX_RUNS)
    if not runs_dir.is_dir():
        return p
    runs = sorted(c for c in runs_dir.iterdir() if c.is_dir() and not c.name.startswith("."))
    return runs[-1] if runs else p


def xprof_installed() -> bool:
    """Whether xprof, the converter of ``jax.profiler``'s XSpaces, can be imported (not imported here)."""
    import importlib.util

    try:
        return importlib.util.find_spec("xprof") is not None
    except (ImportError, ValueError):
        return False


def trace_format(path: Path) -> str:
    """``"nsys"`` for Nsight Systems files (by name, or SQLite content), ``"xplane"`` for
    ``jax.profiler``'s binary XSpace (by name: ``*.xplane.pb``), ``"jax"`` for the trace JSON
    of ``jax.profiler`` (by its first events), else ``"kineto"``."""
    lower = path.name.lower()
    if lower.endswith(NSYS_SUFFIXES + NSYS_REPORT_SUFFIXES):
        return "nsys"
    if lower.endswith(JAX_XPLANE):
        return "xplane"
    try:
        with _open(path) as fh:
            head = fh.read(_HEAD_BYTES)
    except (OSError, TraceFormatError):
        return "kineto"  # the Kineto reader reports the error
    if head[: len(SQLITE_MAGIC)] == SQLITE_MAGIC:
        return "nsys"
    if head[:2] == _GZIP_MAGIC:
        try:
            head = _zlib.decompressobj(31).decompress(head, _HEAD_BYTES)
        except _INFLATE_ERRORS:
            return "kineto"  # the Kineto reader says what is wrong
    return "jax" if is_jax_head(head) else "kineto"


def _exported_alongside(entry: Path) -> bool:
    """An Nsight report whose SQLite export sits next to it (the export is read instead)."""
    if not entry.name.lower().endswith(NSYS_REPORT_SUFFIXES):
        return False
    stem = entry.name.rsplit(".", 1)[0]
    return any((entry.parent / f"{stem}{suffix}").is_file() for suffix in NSYS_SUFFIXES)


def _jax_copy(entry: Path, xprof: bool) -> bool:
    """A file of a JAX run that holds the events of another file read instead: with xprof
    installed (``xprof``), a host's ``<host>.trace.json.gz`` beside its ``<host>.xplane.pb``
    (the XSpace is the profile itself, with what the JSON leaves out); without xprof, the
    ``<host>.xplane.pb`` beside its trace JSON (or ``perfetto_trace.json.gz``); and
    ``perfetto_trace.json.gz`` (the same events again) beside either."""
    name = entry.name
    if name.endswith(JAX_XPLANE):
        host_json = entry.parent / (name[: -len(JAX_XPLANE)] + ".trace.json.gz")
        return not xprof and (host_json.is_file() or (entry.parent / JAX_PERFETTO).is_file())
    if name == JAX_PERFETTO:
        return any(
            (c.name.endswith(".trace.json.gz") and c.name != JAX_PERFETTO) or (xprof and c.name.endswith(JAX_XPLANE))
            for c in entry.parent.iterdir()
        )
    if xprof and name.endswith(".trace.json.gz"):
        return (entry.parent / (name[: -len(".trace.json.gz")] + JAX_XPLANE)).is_file()
    return False


def _stat(path: Path) -> TraceFile:
    try:
        st = path.stat()
    except PermissionError:
        raise TraceFormatError(path, "cannot be read (permission denied)", "Check the file's permissions") from None
    except OSError as exc:
        raise TraceFormatError(path, f"cannot be read ({exc.strerror or exc})", "Check that it exists") from None
    return TraceFile(path=path, size=st.st_size, mtime_ns=st.st_mtime_ns, name_rank=rank_from_name(path.name))


def discover(
    path: str | os.PathLike[str], storage_options: dict[str, Any] | None = None
) -> tuple[list[TraceFile], list[Path]]:
    """The trace files at ``path`` (a file or a folder), and the files skipped in a folder.

    A folder is read non-recursively: every ``*.json``, ``*.json.gz``, ``*.gz`` and
    ``*.sqlite`` file in it is a candidate, and so is an Nsight ``*.nsys-rep`` report without
    its SQLite export beside it (reading it explains how to export it). Other regular files
    are returned as skipped (hidden files are ignored silently).

    A URL (``s3://bucket/run/``) is listed through fsspec (:func:`~..storage.listing`) with
    ``storage_options``: the object, or the objects directly under it.
    The output folder of
    ``jax.profiler.trace(dir)`` is read as its latest run (``dir/plugins/profile/<run>/``): a
    host's ``<host>.xplane.pb`` where xprof is installed, else its ``<host>.trace.json.gz``;
    ``perfetto_trace.json.gz``, the same events, is passed over beside either (docs/jax.md).
    """
    if is_url(path):
        return _discover_remote(str(path), storage_options)
    p = Path(path).expanduser()
    if not p.exists():
        parent = p.parent
        hint = "Check the path"
        if parent.is_dir():
            near = sorted(c.name for c in parent.iterdir() if not c.name.startswith("."))[:8]
            if near:
                hint = f"Check the path; {parent} holds: {', '.join(near)}"
        raise TraceFormatError(p, "no such file or folder", hint)
    if p.is_file():
        return [_stat(p)], []
    if not p.is_dir():
        raise TraceFormatError(p, "is neither a file nor a folder", "Pass a trace file or a folder of rank traces")
    p = _jax_run(p)
    try:
        entries = sorted(p.iterdir(), key=lambda c: c.name)
    except PermissionError:
        raise TraceFormatError(p, "folder cannot be listed (permission denied)", "Check its permissions") from None
    files: list[TraceFile] = []
    skipped: list[Path] = []
    subfolders_with_traces: list[str] = []
    xprof = any(e.name.endswith(JAX_XPLANE) for e in entries) and xprof_installed()
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            try:
                if any(_is_candidate(c.name) and c.is_file() for c in entry.iterdir()):
                    subfolders_with_traces.append(entry.name)
            except OSError:
                pass
            continue
        if not entry.is_file():
            continue
        if _exported_alongside(entry) or _jax_copy(entry, xprof):
            continue
        if _is_candidate(entry.name) or entry.name.endswith(JAX_XPLANE):
            files.append(_stat(entry))
        else:
            skipped.append(entry)
    if not files:
        if subfolders_with_traces:
            listed = ", ".join(f"{s}/" for s in subfolders_with_traces[:8])
            raise TraceFormatError(
                p,
                "no trace files directly in this folder",
                f"Its subfolders hold traces ({listed}): load one of them",
            )
        what = (
            "the folder is empty"
            if not skipped
            else f"no trace files here (only: {', '.join(s.name for s in skipped[:8])})"
        )
        raise TraceFormatError(
            p,
            what,
            "Point tv.load() at a PyTorch profiler trace (*.json or *.json.gz), an Nsight Systems SQLite export "
            "(*.sqlite), a jax.profiler.trace output folder, or a folder of them",
        )
    return files, skipped


def _discover_remote(url: str, storage_options: dict[str, Any] | None) -> tuple[list[TraceFile], list[Path]]:
    objects, folder = listing(url, storage_options)
    files: list[TraceFile] = []
    skipped: list[Path] = []
    for obj in objects:
        name = obj.name
        if name.startswith("."):
            continue
        if not folder or _is_candidate(name):
            # (typed as a Path: the readers open it with open_file and open_source)
            files.append(TraceFile(path=cast(Path, obj), size=obj.size, mtime_ns=0, name_rank=rank_from_name(name)))
        else:
            skipped.append(cast(Path, obj))
    if not files:
        raise TraceFormatError(
            redacted(url),
            "no trace files here" + (f" (only: {', '.join(s.name for s in skipped[:8])})" if skipped else ""),
            "Point tv.load() at a PyTorch profiler trace (*.json or *.json.gz) or a folder of them",
        )
    return files, skipped


def open_file(path: Path) -> BinaryIO:
    """A trace file opened for reading (a local file, or an object in storage in blocks);
    a :class:`TraceFormatError` naming it where it cannot be."""
    return _open(path)


def _open(path: Path) -> BinaryIO:
    if isinstance(path, RemotePath):
        return cast(BinaryIO, path.open())
    try:
        return open(path, "rb")
    except PermissionError:
        raise TraceFormatError(path, "cannot be read (permission denied)", "Check the file's permissions") from None
    except IsADirectoryError:
        raise TraceFormatError(path, "is a folder, not a file", "Pass the folder itself to tv.load()") from None
    except OSError as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: Path, exc: OSError) -> TraceFormatError:
    return TraceFormatError(path, f"cannot be read ({exc.strerror or exc})", "Check the file and the disk")


def _empty(path: Path) -> TraceFormatError:
    return TraceFormatError(
        path, "is empty (0 bytes)", "The profiler may have crashed while writing it; record the trace again"
    )


def read_bytes(path: Path, *, max_json_bytes: int = DEFAULT_MAX_JSON_BYTES) -> bytes:
    """The file's content, gunzipped if it is gzip-compressed (detected by magic bytes).

    Compressed content that inflates to more than ``max_json_bytes`` is refused with a
    :class:`TraceFormatError` before more memory is spent on it.
    """
    with _open(path) as fh:
        try:
            data = fh.read()
        except OSError as exc:
            raise _unreadable(path, exc) from None
    if not data:
        raise _empty(path)
    if is_compressed(path, data[:2]):
        # One output chunk (no copy) for a single gzip member.
        out = list(_inflate(path, iter((data,)), len(data), max_json_bytes, max_json_bytes + 1))
        if len(out) == 1:
            return out[0]
        try:
            return b"".join(out)
        except MemoryError:
            raise out_of_memory(path, json_bytes=sum(map(len, out)), file_bytes=len(data)) from None
    return data


def inflate_chunks(
    path: Path, *, max_json_bytes: int = DEFAULT_MAX_JSON_BYTES, chunk_bytes: int | None = None
) -> Generator[bytes, None, None]:
    """The inflated content of a gzip-compressed file, in order, in chunks of at most ``chunk_bytes``.

    The file is read forward in blocks and inflated as the chunks are asked for: neither
    the compressed file nor its inflated content is ever held whole in memory (default
    ``chunk_bytes``: :data:`INFLATE_CHUNK_BYTES`). The errors
    are :func:`read_bytes`'s (raised when the chunk they concern is asked for: a truncated
    file after all its whole chunks). Close the iterator (``contextlib.closing``) if it is
    not read to the end, to close the file at once.
    """
    with _open(path) as fh:
        try:
            size = path.size if isinstance(path, RemotePath) else os.fstat(fh.fileno()).st_size
        except OSError as exc:
            raise _unreadable(path, exc) from None
        if not size:
            raise _empty(path)

        def blocks() -> Iterator[bytes]:
            while True:
                try:
                    block = fh.read(_READ_BLOCK)
                except OSError as exc:
                    raise _unreadable(path, exc) from None
                if not block:
                    return
                yield block

        yield from _inflate(path, blocks(), size, max_json_bytes, chunk_bytes or INFLATE_CHUNK_BYTES)


def inflate_whole(path: Path, compressed: bytes, *, max_json_bytes: int, most: int) -> bytes | None:
    """The inflated content of a whole gzip file (``compressed``) as one buffer, where it is at
    most ``most`` bytes; None where it is longer, or fails to inflate (:func:`inflate_chunks`
    then reads it, and says what is wrong). One buffer, not chunks joined into one: a small
    trace is inflated without a second copy."""
    try:
        out = _inflate(path, iter((compressed,)), len(compressed), max_json_bytes, most + 1)
        whole = next(out, b"")
        if len(whole) > most or next(out, None) is not None:
            return None
        return whole
    except TraceFormatError:
        return None


def out_of_memory(path: Path, *, json_bytes: int | None = None, file_bytes: int | None = None) -> TraceFormatError:
    """The error for a ``MemoryError`` while reading ``path``: how much of it was read
    (``json_bytes`` of JSON, inflated where it is compressed; ``file_bytes`` on disk) and how to
    read it in less memory. docs/loading.md ("Hostile input")."""
    seen = []
    if json_bytes:
        seen.append(f"{format_size(json_bytes)} of JSON inflated so far")
    if file_bytes:
        seen.append(f"{file_bytes:,} bytes on disk")
    detail = f" ({', '.join(seen)})" if seen else ""
    return TraceFormatError(
        path,
        f"ran out of memory while reading it{detail}: a gzip bomb, or a trace too large for this machine's memory",
        "Refuse such files sooner with a lower tv.load(..., max_json_bytes=...) limit, or read a "
        'genuine large trace in parts with tv.load(..., engine="dask") or on a machine with more memory',
    )


def is_compressed(path: Path, head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` is gzip-compressed (by its magic bytes).

    A ``.gz`` name on plain content is refused with a :class:`TraceFormatError`, however the
    file is then read (whole, or in byte ranges).
    """
    if head[:2] == _GZIP_MAGIC:
        return True
    if str(path).lower().endswith(".gz"):
        raise TraceFormatError(
            path, "has a .gz name but is not gzip-compressed", "Rename it to .json if it is plain JSON"
        )
    return False


class _TooBig(Exception):
    pass


def _inflate(path: Path, blocks: Iterator[bytes], compressed: int, limit: int, chunk: int) -> Iterator[bytes]:
    """Inflate every gzip member of the compressed ``blocks`` (``compressed`` bytes in all), in
    chunks of at most ``chunk`` bytes, refusing more than ``limit`` bytes of output."""
    total = 0
    pending = b""  # compressed bytes not given to an inflater yet
    first = True
    try:
        while True:
            if not first:
                # Concatenated gzip members are one stream (gzip's own rule); trailing zero
                # padding (tape blocks, preallocated files) is ignored, as gzip does.
                while len(pending) < 2 and (more := next(blocks, None)) is not None:
                    pending += more
                if pending[:2] != _GZIP_MAGIC:
                    return
            first = False
            inflater = _zlib.decompressobj(31)  # 31: a gzip header and trailer (CRC, size)
            data = pending
            while True:
                n = min(chunk, limit + 1 - total)
                part = inflater.decompress(data, n)
                total += len(part)
                if total > limit:
                    raise _TooBig
                if part:
                    yield part
                if inflater.eof:
                    pending = inflater.unused_data
                    break
                data = inflater.unconsumed_tail
                if not data and len(part) < n:  # (a full chunk: the inflater may hold more output)
                    more = next(blocks, None)
                    if more is None:
                        raise EOFError("truncated")
                    data = more
    except TraceFormatError:
        raise  # (a read error of the blocks, already said: a ValueError, not a gzip error)
    except MemoryError:
        raise out_of_memory(path, json_bytes=total, file_bytes=compressed) from None
    except _INFLATE_ERRORS as exc:
        truncated = isinstance(exc, EOFError) or "truncated" in str(exc).lower() or "end-of-stream" in str(exc).lower()
        problem = (
            f"the gzip data is truncated ({compressed:,} compressed bytes)"
            if truncated
            else f"is not valid gzip (the compressed data is corrupt: {exc})"
        )
        raise TraceFormatError(
            path, problem, "The file was damaged or cut short while being written or copied; copy or record it again"
        ) from None
    except _TooBig:
        raise TraceFormatError(
            path,
            f"inflates to more than {format_size(limit)} of JSON ({compressed:,} compressed bytes): "
            "a gzip bomb, or a trace larger than the limit",
            "If the trace is genuine, raise the limit: tv.load(..., max_json_bytes=...)",
        ) from None


def prefetch(path: Path | str) -> threading.Thread | None:
    """Ask the OS to read ``path`` into its page cache now, in the background (the thread
    returned; None where the OS has no ``posix_fadvise``).

    A pool worker asks for a file that a later task will read, so that the disk reads it while
    the CPUs parse: a load of files that are not in the page cache waits less on the disk (two
    workers on two cores idle whenever they wait). Advice only: a missing or unreadable file
    is the task's to report, nothing happens here.
    """
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or not isinstance(path, (str, os.PathLike)):  # (an object in storage: no page cache)
        return None

    def run() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return
        try:
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=run, name="traceview-prefetch", daemon=True)
    thread.start()
    return thread
