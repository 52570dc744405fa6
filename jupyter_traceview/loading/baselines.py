"""Named baselines: runs kept under a name beside the runs, to compare later runs with.

The names live in ``<runs>/.traceview-baselines.json`` (``runs`` is the runs folder,
``./traceview-runs`` by default), a UTF-8 JSON object::

    {"format": "jupyter_traceview.baselines/1",
     "baselines": {"main": {"path": "train_step/20261207-101500", "set_at": "2026-12-07T10:20:00+00:00"}}}

``path`` is relative to the runs folder when the run lies inside it (so the folder can be
moved), absolute otherwise. The file is written atomically (a hidden temporary file, then a
rename). ``traceview baseline set NAME RUN`` / ``list`` / ``rm NAME`` edit it;
``traceview compare NAME NEW`` reads it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import OptionError, TraceFormatError, TraceSelectionError

__all__ = [
    "BASELINES_FILE",
    "FORMAT",
    "RUNS_DIR",
    "list_baselines",
    "parse_baselines",
    "remove_baseline",
    "resolve_baseline",
    "set_baseline",
]

BASELINES_FILE = ".traceview-baselines.json"
#: The runs folder by default (``%%traceprofile``'s, ``traceview compare --runs``'s).
RUNS_DIR = "traceview-runs"
FORMAT = "jupyter_traceview.baselines/1"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def _file(runs: str | os.PathLike[str]) -> Path:
    return Path(runs) / BASELINES_FILE


def _read(runs: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    path = _file(runs)
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise TraceFormatError(path, f"cannot read the baselines ({exc})", "fix or delete the file") from None
    return parse_baselines(text, path)


def parse_baselines(text: str | bytes, path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The baselines of a baselines file's content (by name: ``path``, ``set_at``); ``path``
    names the file in errors (TraceFormatError)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TraceFormatError(path, f"cannot read the baselines ({exc})", "fix or delete the file") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("baselines"), dict):
        raise TraceFormatError(path, f"not a baselines file of format {FORMAT}", "fix or delete the file")
    return {str(k): v for k, v in data["baselines"].items() if isinstance(v, dict) and isinstance(v.get("path"), str)}


def _write(runs: str | os.PathLike[str], baselines: dict[str, dict[str, Any]]) -> None:
    path = _file(runs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"format": FORMAT, "baselines": baselines}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def set_baseline(runs: str | os.PathLike[str], name: str, run: str | os.PathLike[str]) -> Path:
    """Keep ``run`` (a trace file or folder that exists) as baseline ``name``; returns its path."""
    if not _NAME.match(name):
        raise OptionError(
            f"baseline name {name!r} is not accepted: use letters, digits, '_', '.' and '-' (at most 100)"
        )
    target = Path(run).resolve()
    if not target.exists():
        raise TraceFormatError(run, "no such file or folder", "give a trace file or a folder of rank traces")
    root = Path(runs).resolve()
    stored = str(target.relative_to(root)) if target.is_relative_to(root) else str(target)
    baselines = _read(runs)
    baselines[name] = {"path": stored, "set_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    _write(runs, baselines)
    return target


def list_baselines(runs: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The baselines, by name: ``name``, ``path`` (absolute), ``set_at`` (ISO 8601)."""
    return [
        {"name": k, "path": str(Path(runs).resolve() / v["path"]), "set_at": str(v.get("set_at", ""))}
        for k, v in sorted(_read(runs).items())
    ]


def resolve_baseline(runs: str | os.PathLike[str], name: str) -> Path | None:
    """The run of baseline ``name``, or None when there is no such baseline."""
    entry = _read(runs).get(name)
    return None if entry is None else Path(runs).resolve() / entry["path"]


def remove_baseline(runs: str | os.PathLike[str], name: str) -> None:
    """Forget baseline ``name`` (the run itself stays)."""
    baselines = _read(runs)
    if name not in baselines:
        raise TraceSelectionError.unknown("baseline", name, sorted(baselines))
    del baselines[name]
    _write(runs, baselines)
