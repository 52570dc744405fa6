"""Runs in object storage under the sidebar's remote roots (``c.TraceviewServer.remote_roots``).

Pure functions (no server imports), as :mod:`.runs` for local roots. The roots and the
options that reach them (``remote_storage_options``: keys, endpoints) are server
configuration only; a request names at most a URL, which :func:`check_inside` accepts only
inside a configured root (same scheme and bucket, no ``..``, no user, query or fragment).

A listing is bounded: at most ``max_depth`` folders deep, ``max_entries`` names read from the
store and ``max_runs`` runs (the handler also gives it a time limit). Runs are recognised by
their names only (reading an object's start would cost a request per file): a folder holding
``*.json``/``*.json.gz``/``*.gz`` objects, an Nsight Systems export (``*.sqlite``), or a
dataset written by ``tv.export`` (a folder holding ``traceview.json``).

Remote runs are read-only: nothing is ever written to the store (no baselines, no notes).
Opening one (the sidebar's Open) reads it as a local run is read: :func:`remote_run` finds its
objects (one listing, inside a root), :func:`remote_entry` makes it the :class:`.runs.RunEntry`
the server's workers load, naming exactly those objects and keyed by their ETags or versions;
the workers read them with ``tv.load`` (streamed, in blocks) and the server's
``remote_storage_options``.
Errors are :class:`.runs.PathRefused` (a refused URL) or the store's :class:`TraceFormatError`
(naming the URL without secrets), with every configured option's value scrubbed from the
message (:func:`scrubbed`).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Literal

from ..loading.storage import DATASET_METADATA, errors, filesystem, is_url, redacted, version_of
from .runs import NSYS_SUFFIX, SKIP_DIRS, TRACE_SUFFIXES, PathRefused, RunEntry

__all__ = [
    "RemoteRun",
    "check_inside",
    "check_root",
    "find_remote_runs",
    "remote_entry",
    "remote_run",
    "scrubbed",
]

#: "folder" (trace objects under one prefix), "file" (one trace object), "nsys" or "dataset".
RemoteKind = Literal["folder", "file", "nsys", "dataset"]

#: Longest URL accepted from a request (characters).
MAX_URL = 2048
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
#: Percent-encoded ".", "/", "\\" and NUL: refused in URLs (as in local paths).
_ENCODED = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)


@dataclass(frozen=True)
class RemoteRun:
    """One run under a remote root."""

    #: The run's URL (as ``tv.load`` takes it): a folder's without a trailing slash.
    url: str
    #: The configured root it was found under.
    root: str
    kind: RemoteKind
    #: Trace objects of the run (a dataset: 1, its metadata document).
    files: int
    #: Total size of its trace objects, bytes.
    size: int
    #: Latest modification time of its objects (seconds since the epoch; 0 when the store gives none).
    mtime: float
    #: Its trace objects as :func:`remote_run` found them: (URL, size, version: ETag or version id);
    #: a dataset's is its metadata document. Empty in a listing (:func:`find_remote_runs`).
    objects: tuple[tuple[str, int, str], ...] = ()


def _parts(url: str, what: str) -> tuple[str, list[str]]:
    """The scheme and the path parts (bucket first) of ``url``, or PathRefused."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or "\x00" in url:
        raise PathRefused(400, f"{what} must be a URL of at most {MAX_URL} characters")
    m = _SCHEME.match(url)
    if m is None:
        raise PathRefused(400, f"{what} must be a URL such as s3://bucket/prefix")
    if _ENCODED.search(url):
        raise PathRefused(403, "percent-encoded dots, slashes and NULs are refused in URLs")
    rest = url[m.end() :]
    if any(c in rest for c in "?#@\\"):
        raise PathRefused(403, f"{what} may not carry a user, a query or a fragment")
    parts = [p for p in rest.split("/") if p]
    if not parts:
        raise PathRefused(400, f"{what} names no bucket")
    if any(p in (".", "..") for p in parts):
        raise PathRefused(403, "URLs with '.' or '..' parts are refused")
    return m.group(1).lower(), parts


def check_root(url: str) -> str:
    """A configured remote root, normalised (``scheme://bucket/prefix``); ValueError when it
    is not a plain URL (a user, a query or ``..`` in it: secrets belong in the options)."""
    if not is_url(url):
        raise ValueError(f"remote root {url!r} is not a URL (scheme://bucket/prefix)")
    try:
        scheme, parts = _parts(url, "a remote root")
    except PathRefused as exc:
        raise ValueError(f"remote root {redacted(url)}: {exc.message}") from None
    return f"{scheme}://{'/'.join(parts)}"


def check_inside(roots: list[str], url: str) -> tuple[str, str]:
    """``(root, url)``: the configured root holding a request's ``url`` and the URL normalised;
    PathRefused (403) when it is in none (another bucket, another scheme, ``..``)."""
    scheme, parts = _parts(url, "the URL")
    for root in roots:
        r_scheme, r_parts = _parts(root, "a remote root")
        if r_scheme == scheme and parts[: len(r_parts)] == r_parts:
            return root, f"{scheme}://{'/'.join(parts)}"
    raise PathRefused(403, "the URL is not inside a remote root of the server's configuration")


def scrubbed(message: str, storage_options: dict[str, Any] | None) -> str:
    """``message`` with every string value of ``storage_options`` (at any depth) replaced by ``***``."""
    stack: list[Any] = [storage_options or {}]
    secrets: list[str] = []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, str) and len(item) >= 4:
            secrets.append(item)
    for s in sorted(secrets, key=len, reverse=True):
        message = message.replace(s, "***")
    return message


def _mtime(entry: dict[str, Any]) -> float:
    for key in ("LastModified", "last_modified", "mtime", "updated", "created"):
        value = entry.get(key)
        if isinstance(value, _dt.datetime):
            return value.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value:
            try:
                return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return 0.0


def find_remote_runs(
    root: str,
    storage_options: dict[str, Any] | None = None,
    *,
    max_depth: int = 6,
    max_runs: int = 2000,
    max_entries: int = 20000,
) -> tuple[list[RemoteRun], bool]:
    """The runs under the remote ``root`` (newest first) and whether the listing stopped at a
    bound (``max_runs`` runs or ``max_entries`` names read); hidden folders, environments and
    caches are skipped, as locally. Raises TraceFormatError (the root, redacted) when the store
    refuses or lacks the root."""
    fs, base = filesystem(root, storage_options)
    scheme = root.split("://", 1)[0]

    def url_of(path: str) -> str:
        return f"{scheme}://{path.strip('/')}"

    if hasattr(fs, "invalidate_cache"):
        fs.invalidate_cache(base)  # fsspec keeps listings: a new run must show at the next listing
    found: list[RemoteRun] = []
    read = 0
    truncated = False
    stack: list[tuple[str, int]] = [(base.rstrip("/"), 0)]
    with errors(root):
        while stack:
            if len(found) >= max_runs or read >= max_entries:
                truncated = True
                break
            folder, depth = stack.pop()
            try:
                entries = fs.ls(folder, detail=True)
            except FileNotFoundError:
                if depth == 0:
                    raise
                continue
            read += len(entries)
            traces: list[dict[str, Any]] = []
            dataset: dict[str, Any] | None = None
            subfolders: list[str] = []
            for e in sorted(entries, key=lambda e: str(e["name"])):
                path = str(e["name"]).rstrip("/")
                name = path.rsplit("/", 1)[-1]
                if path == folder.rstrip("/") or not name:
                    continue
                if e.get("type") == "directory":
                    if not name.startswith(".") and name not in SKIP_DIRS and depth < max_depth:
                        subfolders.append(path)
                elif name == DATASET_METADATA:
                    dataset = e
                elif name.startswith("."):
                    continue
                elif name.lower().endswith(TRACE_SUFFIXES):
                    traces.append(e)
                elif name.lower().endswith(NSYS_SUFFIX):
                    found.append(RemoteRun(url_of(path), root, "nsys", 1, int(e.get("size") or 0), _mtime(e)))
            if dataset is not None:
                found.append(
                    RemoteRun(url_of(folder), root, "dataset", 1, int(dataset.get("size") or 0), _mtime(dataset))
                )
                continue  # a dataset's parts are not runs of their own
            if traces:
                found.append(
                    RemoteRun(
                        url_of(folder),
                        root,
                        "folder",
                        len(traces),
                        sum(int(e.get("size") or 0) for e in traces),
                        max(_mtime(e) for e in traces),
                    )
                )
            stack.extend((p, depth + 1) for p in reversed(subfolders))
    found = found[:max_runs]
    found.sort(key=lambda r: (-r.mtime, r.url))
    return found, truncated


def remote_run(root: str, url: str, storage_options: dict[str, Any] | None = None) -> RemoteRun:
    """The run at ``url`` (already checked inside ``root`` by :func:`check_inside`): a folder of
    trace objects, a dataset, or one trace object or Nsight Systems export; PathRefused (400)
    when it is none of these, TraceFormatError when the store refuses or lacks it."""
    fs, path = filesystem(url, storage_options)
    shown = redacted(url)
    if hasattr(fs, "invalidate_cache"):
        fs.invalidate_cache(path)
    with errors(url):
        info = fs.info(path)
        if info.get("type") != "directory":
            name = path.rstrip("/").rsplit("/", 1)[-1].lower()
            kind: RemoteKind | None = (
                "file" if name.endswith(TRACE_SUFFIXES) else "nsys" if name.endswith(NSYS_SUFFIX) else None
            )
            if kind is None or name.startswith("."):
                raise PathRefused(400, f"{shown} is not a trace file or a folder of traces")
            size = int(info.get("size") or 0)
            return RemoteRun(url, root, kind, 1, size, _mtime(info), ((url, size, version_of(info)),))
        entries = fs.ls(path, detail=True)
    files = {str(e["name"]).rstrip("/").rsplit("/", 1)[-1]: e for e in entries if e.get("type") != "directory"}

    def objects(names: list[str]) -> tuple[tuple[str, int, str], ...]:
        return tuple((f"{url}/{n}", int(files[n].get("size") or 0), version_of(files[n])) for n in names)

    if DATASET_METADATA in files:
        meta = files[DATASET_METADATA]
        return RemoteRun(url, root, "dataset", 1, int(meta.get("size") or 0), _mtime(meta), objects([DATASET_METADATA]))
    names = sorted(n for n in files if not n.startswith(".") and n.lower().endswith(TRACE_SUFFIXES))
    if not names:
        raise PathRefused(400, f"{shown} holds no trace files")
    traces = [files[n] for n in names]
    return RemoteRun(
        url,
        root,
        "folder",
        len(traces),
        sum(int(e.get("size") or 0) for e in traces),
        max(_mtime(e) for e in traces),
        objects(names),
    )


def remote_entry(run: RemoteRun) -> RunEntry:
    """The :class:`.runs.RunEntry` the server's workers load for ``run`` (found by :func:`remote_run`).

    Its ``path`` is the run's URL; its ``files`` the URLs of exactly the objects found (a
    dataset: its own URL, which ``tv.load`` reads as a dataset; a dataset is a "folder" run);
    its ``signature`` their (URL, size, version), so that a changed object is a new run. No
    load options file is read from the store.
    """
    if not run.objects:
        raise ValueError(f"{run.url}: no objects (a listing's run; look it up with remote_run)")
    files = (run.url,) if run.kind == "dataset" else tuple(o[0] for o in run.objects)
    return RunEntry(
        path=run.url,
        kind="folder" if run.kind == "dataset" else run.kind,
        files=files,
        mtime=run.mtime,
        size=run.size,
        signature=run.objects,
    )
