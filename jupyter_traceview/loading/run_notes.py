"""What a load records beside the ranks it read: the files it left out, and how the run ended.

``tv.load(..., on_error="skip")`` leaves unreadable trace files out; their paths and reasons
travel with the trace (:attr:`Trace.skipped_files`), so that every surface showing the
headline can say a rank is missing. A ``%%traceprofile`` run folder holds a run record
(:data:`RUN_RECORD`, see ``docs/runs.md``) whose ``status`` says whether the profiled cell
ended normally; it travels as :attr:`Trace.run_status`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import TraceFormatError
from ..model.display_hook import SkippedFile
from .readers.files import TraceFile
from .run_files import RUN_RECORD

__all__ = ["RUN_RECORD", "RUN_STATUSES", "run_folder", "run_status_of", "skipped_files_of"]

#: The values of a run record's ``status`` (and of ``Trace.run_status``).
RUN_STATUSES = ("ok", "error", "interrupted")
#: A run record above this size is not read (it is a few KiB).
_MAX_RECORD_BYTES = 1 << 20


def skipped_files_of(failures: Sequence[tuple[TraceFile, TraceFormatError]]) -> list[SkippedFile]:
    """The files a load could not read, as ``{"path", "reason"}``, in the order found."""
    return [{"path": str(tf.path), "reason": exc.problem} for tf, exc in failures]


def run_folder(paths: Iterable[object]) -> str | None:
    """The folder a run record may sit in: the one folder of the local files loaded; ``None``
    for files from several folders or objects in storage (no run record is read there)."""
    folders = {str(p.parent) if isinstance(p, Path) else None for p in paths}
    return folders.pop() if len(folders) == 1 else None


def run_status_of(source: str | os.PathLike[str] | None) -> str:
    """The ``status`` of the run record in the folder ``source``: ``"ok"`` without a
    readable one (a folder of traces written by other means, a single file)."""
    if source is None:
        return "ok"
    path = os.path.join(source, RUN_RECORD)
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MAX_RECORD_BYTES:
            return "ok"
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return "ok"
    status = record.get("status") if isinstance(record, dict) else None
    return status if status in RUN_STATUSES else "ok"
