"""The baselines the Traces sidebar compares runs with: those kept beside the runs.

``traceview baseline set NAME RUN`` keeps a baseline in ``<runs>/.traceview-baselines.json``
(:mod:`jupyter_traceview.loading.baselines`; ``runs`` is ``./traceview-runs`` by default). The
sidebar looks for that file in each listed root, in its ``traceview-runs`` folder and in the
``traceview-runs`` folders that hold the listed runs (:func:`find_baselines`); the runs' verdicts are against the most recently set baseline
(:func:`current_baseline`). "Set as Baseline" in the sidebar writes the same file
(:func:`keep_baseline`): in the ``traceview-runs`` folder that holds the run, else in the
listed root that holds it.

As everywhere in the server, only checked regular files inside the server root are read: a
baselines file that is a link, a FIFO or larger than MAX_BASELINES_BYTES is skipped, and a
baseline whose run lies outside the root is never listed.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..errors import TraceFormatError
from ..loading.baselines import BASELINES_FILE, RUNS_DIR, parse_baselines, set_baseline
from .messages import BaselineRef
from .runs import PathRefused, check_regular_file, open_checked, resolve_inside

__all__ = ["MAX_BASELINES_BYTES", "current_baseline", "find_baselines", "keep_baseline", "runs_folder"]

#: Largest baselines file read (bytes).
MAX_BASELINES_BYTES = 1 << 20
#: Most baselines listed from one file.
MAX_BASELINES = 256


def runs_folder(run: str) -> str | None:
    """The ``traceview-runs`` folder holding ``run`` (a path relative to the root), or None."""
    parts = PurePosixPath(run).parts
    if RUNS_DIR not in parts[:-1]:
        return None
    return PurePosixPath(*parts[: parts.index(RUNS_DIR) + 1]).as_posix()


def _folders(root: Path, roots: list[str], runs: list[str]) -> list[Path]:
    """The folders whose baselines file counts, inside ``root``: each listed root, its
    ``traceview-runs``, and the ``traceview-runs`` folders holding the listed runs."""
    out: list[Path] = []
    held = sorted({f for f in map(runs_folder, runs) if f is not None})
    for r in [*(roots or [""]), *held]:
        try:
            base = root if r in ("", ".") else resolve_inside(root, r)
        except PathRefused:
            continue
        for folder in (base, base / RUNS_DIR):
            if folder.is_dir() and not folder.is_symlink() and folder not in out:
                out.append(folder)
    return out


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def find_baselines(root: Path, roots: list[str], runs: tuple[str, ...] | list[str] = ()) -> list[BaselineRef]:
    """The baselines kept in the listed ``roots`` (relative to ``root``) and beside the listed
    ``runs`` (their ``traceview-runs`` folders), each run inside ``root``.

    Unreadable or malformed baselines files are skipped (the CLI reports them); so is a
    baseline whose run is gone or lies outside the root.
    """
    root = root.resolve()
    found: list[BaselineRef] = []
    for folder in _folders(root, roots, list(runs)):
        file = folder / BASELINES_FILE
        try:
            check_regular_file(file)
            with open_checked(file) as fh:
                raw = fh.read(MAX_BASELINES_BYTES + 1)
        except OSError:
            continue  # absent, a link, a FIFO: never read
        if len(raw) > MAX_BASELINES_BYTES:
            continue
        try:
            kept = parse_baselines(raw, _rel(root, file))
        except TraceFormatError:
            continue
        for name, item in sorted(kept.items())[:MAX_BASELINES]:
            stored = str(item["path"])
            target = Path(stored) if Path(stored).is_absolute() else folder / stored
            try:
                real = target.resolve(strict=True)
                rel = real.relative_to(root)
            except (OSError, RuntimeError, ValueError):
                continue  # gone, or outside the server root
            found.append(
                BaselineRef(name=name, path=rel.as_posix(), set_at=str(item.get("set_at", "")), file=_rel(root, file))
            )
    return found


def current_baseline(baselines: list[BaselineRef]) -> BaselineRef | None:
    """The baseline the runs are compared with: the most recently set (then by name)."""
    if not baselines:
        return None
    return max(baselines, key=lambda b: (b["set_at"], b["name"], b["file"]))


def keep_baseline(root: Path, roots: list[str], run: str, name: str) -> BaselineRef:
    """Keep ``run`` (a checked run's path, relative to ``root``) as baseline ``name``.

    The baselines file is that of the ``traceview-runs`` folder holding the run, else that of
    the listed root holding it (the longest), else the server root's. Raises PathRefused when
    that file exists and is not a regular file, OptionError for a bad name.
    """
    root = root.resolve()
    held = runs_folder(run)
    if held is not None:
        folder = root / held
    else:
        holders = [r.strip("/") for r in roots if r not in ("", ".") and (run + "/").startswith(r.strip("/") + "/")]
        folder = root / max(holders, key=len) if holders else root
    folder = resolve_inside(root, _rel(root, folder)) if folder != root else root
    file = folder / BASELINES_FILE
    if file.exists() or file.is_symlink():
        try:
            check_regular_file(file)
        except OSError:
            raise PathRefused(409, f"{_rel(root, file)} is not a regular file: not written") from None
    set_baseline(folder, name, root / run)
    return BaselineRef(
        **next(
            b for b in find_baselines(root, [_rel(root, folder)]) if b["name"] == name and b["file"] == _rel(root, file)
        )
    )
