"""Finding trace runs under a Jupyter server's root, and resolving user paths safely.

Pure functions (no server imports) so that they are tested on their own. Every path that
comes from a request goes through :func:`resolve_run`, which refuses absolute paths,
``..``, paths whose real location (symlinks resolved) leaves the root, and anything that
is not a trace run.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["PathRefused", "RunEntry", "find_runs", "resolve_cache_dir", "resolve_inside", "resolve_run"]

#: Names of folders never searched (environments, caches, VCS).
SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "site-packages", ".git", ".hg", ".svn", ".venv", "venv", ".ipynb_checkpoints"}
)
TRACE_SUFFIXES = (".json", ".json.gz", ".gz")
NSYS_SUFFIX = ".sqlite"
RUN_RECORD = ".traceview-run.json"
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

    #: Path relative to the server root, with forward slashes.
    path: str
    #: "folder" (rank traces), "traceprofile" (a %%traceprofile run), "file" or "nsys".
    kind: str
    #: Trace files of the run, relative to the root.
    files: tuple[str, ...]
    #: Latest modification time of its files (seconds since the epoch).
    mtime: float
    #: Total size of its files, bytes.
    size: int
    #: Identity of the run's content: (file, size, mtime_ns) triples.
    signature: tuple[tuple[str, int, int], ...] = field(repr=False)


#: Sniff results kept in a memo (see find_runs) before it is emptied.
SNIFF_MEMO_SIZE = 20000

#: A memo of sniff results by (path, size, mtime_ns).
SniffMemo = dict[tuple[str, int, int], bool]


def _looks_like_trace(path: Path, memo: SniffMemo | None = None) -> bool:
    """A cheap sniff: the file's start mentions traceEvents or trace event fields.

    With ``memo``, results are kept by size and modification time: the sidebar lists runs
    every few seconds, and a gzip sniff costs an open and a decompression.
    """
    if memo is None:
        return _sniff(path)
    try:
        st = path.stat()
    except OSError:
        return True  # unreadable: list it, so that its error shows
    key = (str(path), st.st_size, st.st_mtime_ns)
    known = memo.get(key)
    if known is None:
        known = _sniff(path)
        if len(memo) >= SNIFF_MEMO_SIZE:
            memo.clear()
        memo[key] = known
    return known


def _sniff(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        if head == b"\x1f\x8b":
            with gzip.open(path, "rb") as gz:
                start = gz.read(65536)
        else:
            with open(path, "rb") as fh:
                start = fh.read(65536)
    except (OSError, EOFError):
        return True  # unreadable or truncated: list it, so that its error shows
    text = start.lstrip()
    return text[:1] in (b"{", b"[") and (b'"traceEvents"' in start or b'"ph"' in start or b'"schemaVersion"' in start)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return True


def _within(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _entry(root: Path, folder: Path, files: list[Path], kind: str, as_path: Path) -> RunEntry:
    sig = []
    mtime = 0.0
    size = 0
    for f in files:
        st = f.stat()
        sig.append((f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
        mtime = max(mtime, st.st_mtime)
        size += st.st_size
    return RunEntry(
        path=as_path.relative_to(root).as_posix() or ".",
        kind=kind,
        files=tuple(s[0] for s in sig),
        mtime=mtime,
        size=size,
        signature=tuple(sig),
    )


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
                elif e.name.startswith("."):
                    continue
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
            if p.is_symlink() or p.name.startswith(".") or not p.is_file():
                continue
            if p.name.lower().endswith(TRACE_SUFFIXES) and _looks_like_trace(p, memo):
                traces.append(p)
        if not traces:
            raise PathRefused(400, f"{rel} holds no trace files")
        return _entry(base, real, traces, "traceprofile" if has_record else "folder", real)
    name = real.name.lower()
    if name.endswith(TRACE_SUFFIXES) and _looks_like_trace(real, memo):
        return _entry(base, real.parent, [real], "file", real)
    if name.endswith(NSYS_SUFFIX) and _is_sqlite(real):
        return _entry(base, real.parent, [real], "nsys", real)
    raise PathRefused(400, f"{rel} is not a trace file or a folder of traces")


def resolve_cache_dir(root: Path, rel: str) -> Path:
    """The cache folder ``rel`` (relative to ``root``), created if missing; PathRefused if it leaves the root.

    The rules of :func:`resolve_inside` (no absolute paths, no ``..``, symlinks must stay
    inside the root), checked before and after the folder is created.
    """
    base = root.resolve()
    target = base.joinpath(*_relative_parts(rel, "a cache folder"))
    try:
        if not _within(base, target.resolve()):
            raise PathRefused(403, "the cache folder leads outside the server root")
        if target.exists() and not target.is_dir():
            raise PathRefused(400, f"the cache folder {rel} is not a folder")
        target.mkdir(parents=True, exist_ok=True)
        real = target.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise PathRefused(
            400, f"cannot create the cache folder {rel}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if not _within(base, real):
        raise PathRefused(403, "the cache folder leads outside the server root")
    return real
