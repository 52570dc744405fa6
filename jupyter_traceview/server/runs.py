"""Finding trace runs under a Jupyter server's root, and resolving user paths safely.

Pure functions (no server imports) so that they are tested on their own. Every path that
comes from a request goes through :func:`resolve_run`, which refuses absolute paths,
``..``, paths whose real location (symlinks resolved) leaves the root, and anything that
is not a trace run.

Only regular files are ever opened (checked with ``lstat``, opened with ``O_NONBLOCK`` and
checked again with ``fstat``): a FIFO or a device named ``*.json`` is skipped, never read,
and a symbolic link inside a run folder is not part of the run. A run's
:attr:`RunEntry.files` are exactly the files the worker reads (:func:`open_checked`).

A run folder may hold a load options file, ``.traceview-load.json`` (see
:func:`read_load_options` and docs/runs.md): ``tv.load`` options for the sidebar's loads.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ..loading.run_files import RUN_RECORD

__all__ = [
    "LOAD_OPTIONS",
    "PathRefused",
    "RunEntry",
    "check_regular_file",
    "find_runs",
    "read_load_options",
    "resolve_inside",
    "resolve_run",
]

#: "folder" (rank traces), "traceprofile" (a %%traceprofile run), "file" or "nsys".
RunKind = Literal["folder", "traceprofile", "file", "nsys"]

#: Names of folders never searched (environments, caches, VCS).
SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "site-packages", ".git", ".hg", ".svn", ".venv", "venv", ".ipynb_checkpoints"}
)
TRACE_SUFFIXES = (".json", ".json.gz", ".gz")
NSYS_SUFFIX = ".sqlite"
#: The per-run load options file (see read_load_options).
LOAD_OPTIONS = ".traceview-load.json"
#: Largest load options file read (bytes).
MAX_OPTIONS_BYTES = 1 << 20
#: Most entries of ``pid_map`` and ``ranks`` in a load options file.
MAX_OPTION_ITEMS = 65536
#: Ranks must be below this.
MAX_RANK = 2**31
#: Percent-encoded ".", "/", "\\" and NUL: refused in (already decoded) request paths.
_ENCODED = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)


class PathRefused(Exception):
    """A request path that may not be read; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class RunEntry:
    """One run: a folder of rank traces, or a single trace file."""

    #: Path relative to the server root, with forward slashes (a run in object storage: its URL).
    path: str
    #: "folder" (rank traces), "traceprofile" (a %%traceprofile run), "file" or "nsys".
    kind: RunKind
    #: Trace files of the run, relative to the root (a run in object storage: its objects' URLs).
    files: tuple[str, ...]
    #: Latest modification time of its files (seconds since the epoch).
    mtime: float
    #: Total size of its files, bytes.
    size: int
    #: Identity of the run's content: (file, size, mtime_ns) triples (the load options file
    #: included); a run in object storage's: (URL, size, ETag or version) (server/remote.py).
    signature: tuple[tuple[str, int, int | str], ...] = field(repr=False)
    #: tv.load options from the run's load options file, as canonical JSON ("" without one).
    load_options: str = ""
    #: Why the run's load options file was refused ("" when it was read or is absent).
    options_error: str = ""
    #: A %%traceprofile run's title from its run record (the --name, else the cell's first
    #: meaningful line); "" for other runs.
    title: str = ""


#: Sniff results kept in a memo (see find_runs) before it is emptied.
SNIFF_MEMO_SIZE = 20000

#: A memo of sniff results by (path, size, mtime_ns).
SniffMemo = dict[tuple[str, int, int], bool]


def _looks_like_trace(path: Path, memo: SniffMemo | None = None) -> bool:
    """A cheap sniff: the file's start mentions traceEvents or trace event fields.

    With ``memo``, results are kept by size and modification time: the sidebar lists runs
    every few seconds, and a gzip sniff costs an open and a decompression.
    """
    try:
        st = check_regular_file(path)
    except OSError:
        return False  # gone, or not a regular file: never opened
    if memo is None:
        return _sniff(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    known = memo.get(key)
    if known is None:
        known = _sniff(path)
        if len(memo) >= SNIFF_MEMO_SIZE:
            memo.clear()
        memo[key] = known
    return known


def open_checked(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``path`` opened for reading if it is a regular file (not a link, FIFO or device); else OSError.

    Opened with ``O_NOFOLLOW | O_NONBLOCK`` (opening a FIFO never blocks) and checked with
    ``fstat`` after opening, so that a file swapped for something else in between is refused.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def check_regular_file(path: str | os.PathLike[str]) -> os.stat_result:
    """``lstat(path)`` if it is a regular file (not a link, FIFO or device); else OSError."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return st


def _sniff(path: Path) -> bool:
    try:
        with open_checked(path) as fh:
            head = fh.read(65536)
            if head[:2] == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                    start = gz.read(65536)
            else:
                start = head
    except (OSError, EOFError, zlib.error):
        return True  # unreadable or truncated: list it, so that its error shows
    text = start.lstrip()
    return text[:1] in (b"{", b"[") and (b'"traceEvents"' in start or b'"ph"' in start or b'"schemaVersion"' in start)


def _is_sqlite(path: Path) -> bool:
    try:
        with open_checked(path) as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return True


def _within(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _entry(root: Path, folder: Path, files: list[Path], kind: RunKind, as_path: Path) -> RunEntry:
    sig = []
    mtime = 0.0
    size = 0
    for f in files:
        st = check_regular_file(f)
        sig.append((f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
        mtime = max(mtime, st.st_mtime)
        size += st.st_size
    options, error = "", ""
    extra: list[tuple[str, int, int]] = []
    if kind in ("folder", "traceprofile"):
        opt_path = folder / LOAD_OPTIONS
        try:
            opt_st: os.stat_result | None = os.lstat(opt_path)
        except OSError:
            opt_st = None
        if opt_st is not None:
            extra.append((opt_path.relative_to(root).as_posix(), opt_st.st_size, opt_st.st_mtime_ns))
            try:
                options = json.dumps(read_load_options(opt_path), sort_keys=True, separators=(",", ":"))
            except LoadOptionsError as exc:
                error = str(exc)
    title = ""
    if kind == "traceprofile":
        # The run record: its status is part of the headline (run_status), its title names the run.
        rec_path = folder / RUN_RECORD
        try:
            rec_st = os.lstat(rec_path)
        except OSError:
            pass
        else:
            extra.append((rec_path.relative_to(root).as_posix(), rec_st.st_size, rec_st.st_mtime_ns))
            title = read_run_title(rec_path)
    return RunEntry(
        path=as_path.relative_to(root).as_posix() or ".",
        kind=kind,
        files=tuple(s[0] for s in sig),
        mtime=mtime,
        size=size,
        signature=tuple(sig + extra),
        load_options=options,
        options_error=error,
        title=title,
    )


#: Largest run record read for its title (bytes; a record is a few KiB).
MAX_RECORD_BYTES = 1 << 20


def read_run_title(path: str | os.PathLike[str]) -> str:
    """The ``title`` of a run record (``.traceview-run.json``): the ``--name`` given to
    ``%%traceprofile``, else the cell's first meaningful line; "" when the record is not
    readable or has none (records written before titles)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RECORD_BYTES:
            return ""
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return ""
    title = record.get("title") if isinstance(record, dict) else None
    return title[:200] if isinstance(title, str) else ""


class LoadOptionsError(ValueError):
    """A load options file that was refused; the message names the file and what is wrong."""


def read_load_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The validated tv.load options of a run's load options file (``.traceview-load.json``).

    A JSON object with any of ``pid_map`` (an object: process id as written in the trace ->
    rank), ``ranks`` (a list of ranks to load) and ``on_error`` (``"raise"`` or ``"skip"``).
    Returns them as keyword arguments of tv.load, as JSON (``pid_map`` keys are strings;
    the worker turns decimal ones into ints, as process ids written as numbers). Raises LoadOptionsError (naming the file) for a file that is not a regular
    file, larger than 1 MiB, not a JSON object, or holding other keys or bad values.
    """
    name = Path(path).name
    try:
        with open_checked(path) as fh:
            raw = fh.read(MAX_OPTIONS_BYTES + 1)
    except OSError as exc:
        raise LoadOptionsError(f"{name}: cannot be read ({exc.strerror or 'not a regular file'})") from None
    if len(raw) > MAX_OPTIONS_BYTES:
        raise LoadOptionsError(f"{name}: larger than {MAX_OPTIONS_BYTES >> 20} MiB")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise LoadOptionsError(f'{name}: not valid JSON; write an object such as {{"on_error": "skip"}}') from None
    if not isinstance(doc, dict):
        raise LoadOptionsError(f"{name}: must be a JSON object with pid_map, ranks or on_error")
    unknown = sorted(set(doc) - {"pid_map", "ranks", "on_error"})
    if unknown:
        raise LoadOptionsError(
            f"{name}: unknown key(s) {', '.join(map(repr, unknown[:5]))}; known: pid_map, ranks, on_error"
        )
    out: dict[str, Any] = {}
    if "on_error" in doc:
        if doc["on_error"] not in ("raise", "skip"):
            raise LoadOptionsError(f'{name}: on_error must be "raise" or "skip"')
        out["on_error"] = doc["on_error"]
    if "ranks" in doc:
        ranks = doc["ranks"]
        if (
            not isinstance(ranks, list)
            or not ranks
            or len(ranks) > MAX_OPTION_ITEMS
            or not all(_is_rank(r) for r in ranks)
        ):
            raise LoadOptionsError(
                f"{name}: ranks must be a non-empty list of at most {MAX_OPTION_ITEMS} integers from 0 to {MAX_RANK - 1}"
            )
        out["ranks"] = sorted(set(ranks))
    if "pid_map" in doc:
        pid_map = doc["pid_map"]
        if not isinstance(pid_map, dict) or not pid_map or len(pid_map) > MAX_OPTION_ITEMS:
            raise LoadOptionsError(f"{name}: pid_map must be a non-empty object of at most {MAX_OPTION_ITEMS} entries")
        for pid, rank in pid_map.items():
            if len(pid) > 256 or not _is_rank(rank):
                raise LoadOptionsError(
                    f"{name}: pid_map maps process ids (at most 256 characters) to ranks from 0 to {MAX_RANK - 1}"
                )
        out["pid_map"] = dict(pid_map)
    return out


def _is_rank(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_RANK


def find_runs(
    root: str | os.PathLike[str],
    roots: list[str] | None = None,
    *,
    max_depth: int = 6,
    max_runs: int = 2000,
    memo: SniffMemo | None = None,
) -> list[RunEntry]:
    """Trace runs under ``root`` (searched from each of ``roots``, relative to it), newest first.

    A folder holding trace files directly is one run (a ``%%traceprofile`` run when it has a
    run record); an Nsight Systems export (``.sqlite``) is a run of its own. Symbolic links
    are not followed; hidden folders and environments are skipped. ``memo`` (a dict kept
    by the caller between calls) saves sniffing unchanged files again.
    """
    base = Path(root).resolve()
    found: list[RunEntry] = []
    seen: set[str] = set()
    for start_rel in roots or [""]:
        try:
            start = resolve_inside(base, start_rel) if start_rel else base
        except PathRefused:
            continue
        if not start.is_dir():
            continue
        stack: list[tuple[Path, int]] = [(start, 0)]
        while stack and len(found) < max_runs:
            folder, depth = stack.pop()
            traces: list[Path] = []
            has_record = False
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for e in sorted(entries, key=lambda e: e.name):
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    continue
                p = Path(e.path)
                if stat.S_ISDIR(st.st_mode):
                    if not e.name.startswith(".") and e.name not in SKIP_DIRS and depth < max_depth:
                        stack.append((p, depth + 1))
                elif e.name == RUN_RECORD:
                    has_record = True
                elif e.name.startswith(".") or not stat.S_ISREG(st.st_mode):
                    continue  # hidden, or not a regular file (a FIFO, a device): never opened
                elif e.name.lower().endswith(TRACE_SUFFIXES) and _looks_like_trace(p, memo):
                    traces.append(p)
                elif e.name.lower().endswith(NSYS_SUFFIX) and _is_sqlite(p):
                    entry = _entry(base, folder, [p], "nsys", p)
                    if entry.path not in seen:
                        seen.add(entry.path)
                        found.append(entry)
            if traces:
                entry = _entry(base, folder, traces, "traceprofile" if has_record else "folder", folder)
                if entry.path not in seen:
                    seen.add(entry.path)
                    found.append(entry)
    found.sort(key=lambda r: (-r.mtime, r.path))
    return found


def _relative_parts(rel: str, what: str) -> list[str]:
    """The parts of a request's relative path, or PathRefused (absolute, ``..``, NUL, too long)."""
    if not isinstance(rel, str) or not rel or len(rel) > 4096 or "\x00" in rel:
        raise PathRefused(400, f"{what} relative to the server root is required")
    if _ENCODED.search(rel):
        # Decoded once by the server already: a second encoding is an attempt to hide a separator.
        raise PathRefused(403, "percent-encoded dots, slashes and NULs are refused in paths")
    pure = PurePosixPath(rel.replace("\\", "/"))
    if pure.is_absolute() or rel.startswith("~") or (len(rel) > 1 and rel[1] == ":"):
        raise PathRefused(403, f"absolute paths are refused: give {what} relative to the server root")
    if ".." in pure.parts:
        raise PathRefused(403, "paths with '..' are refused")
    return [p for p in pure.parts if p not in ("", ".")]


def resolve_inside(root: Path, rel: str) -> Path:
    """``root / rel`` after checking that it stays inside ``root`` (symlinks resolved)."""
    target = root.joinpath(*_relative_parts(rel, "a path"))
    try:
        real = target.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise PathRefused(404, f"no such file or folder: {rel}") from None
    except (OSError, RuntimeError):
        raise PathRefused(403, f"cannot resolve {rel}") from None
    if not _within(root.resolve(), real):
        raise PathRefused(403, "the path leads outside the server root")
    return real


def resolve_run(root: str | os.PathLike[str], rel: str, *, memo: SniffMemo | None = None) -> RunEntry:
    """The run at ``rel`` (a folder of traces or a trace file), or PathRefused; ``memo`` as in find_runs."""
    base = Path(root).resolve()
    real = resolve_inside(base, rel)
    if real.is_dir():
        traces = []
        has_record = (real / RUN_RECORD).is_file()
        for p in sorted(real.iterdir()):
            try:
                regular = stat.S_ISREG(os.lstat(p).st_mode)
            except OSError:
                continue
            if p.name.startswith(".") or not regular:
                continue  # hidden, a link, a FIFO, a device: not part of the run
            if p.name.lower().endswith(TRACE_SUFFIXES) and _looks_like_trace(p, memo):
                traces.append(p)
        if not traces:
            raise PathRefused(400, f"{rel} holds no trace files")
        return _entry(base, real, traces, "traceprofile" if has_record else "folder", real)
    try:
        check_regular_file(real)
    except OSError:
        raise PathRefused(400, f"{rel} is not a regular file or a folder") from None
    name = real.name.lower()
    if name.endswith(TRACE_SUFFIXES) and _looks_like_trace(real, memo):
        return _entry(base, real.parent, [real], "file", real)
    if name.endswith(NSYS_SUFFIX) and _is_sqlite(real):
        return _entry(base, real.parent, [real], "nsys", real)
    raise PathRefused(400, f"{rel} is not a trace file or a folder of traces")
