"""The top-level fields of a Kineto document: rank, time base, device properties, versions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....errors import TraceFormatError
from ..common import WARNINGS_KEY
from .decode import load_raw
from .events import EXTRA_FIELDS, MAX_NS, Doc

__all__ = ["Header", "rank_problem", "read_header"]


@dataclass
class Header:
    rank: int
    rank_source: str
    base_time_ns: int
    fields: dict[str, Any]


def rank_problem(value: object) -> str | None:
    """Why a ``distributedInfo.rank`` value is not a rank number (None if it is one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is a {type(value).__name__}, not a number"
    if isinstance(value, float) and not value.is_integer():
        return "is not a whole number"
    if value < 0:
        return "is negative"
    if value > _MAX_RANK:
        return f"is larger than {_MAX_RANK:,}"
    return None


#: The largest rank number read from a file (ranks are int32 in every table).
_MAX_RANK = 2**31 - 1


def _header_field(path: Path, doc: Doc, name: str) -> Any:
    """A raw header field's value (the decoder leaves raw text unchecked: checked here)."""
    try:
        return load_raw(getattr(doc, name))
    except UnicodeDecodeError:
        raise TraceFormatError(
            path,
            f"is not valid UTF-8 text (in its {name} field)",
            "JSON traces are UTF-8; the file is damaged or was re-encoded: record or export the trace again",
        ) from None


def read_header(path: Path, doc: Doc, name_rank: int | None, bad_events: str = "raise") -> Header:
    dist = _header_field(path, doc, "distributedInfo")
    if not isinstance(dist, dict):
        dist = {}
    props = _header_field(path, doc, "deviceProperties")
    if not isinstance(props, list):
        props = []
    rank_value = dist.get("rank")
    warnings: list[str] = []
    why = None if rank_value is None else rank_problem(rank_value)
    if why is not None:
        if bad_events == "raise":
            raise TraceFormatError(
                path,
                f"its distributedInfo.rank {why} (a rank is a whole number from 0 to {_MAX_RANK:,})",
                "Fix the file's distributedInfo, or pass bad_events='drop' to ignore it "
                "(the rank then comes from the file name)",
            )
        warnings.append(f"{path.name}: distributedInfo.rank {why}; ignored")
        rank_value = None
    if rank_value is not None:
        rank, source = int(rank_value), "distributedInfo"
    elif name_rank is not None:
        rank, source = name_rank, "file name"
    else:
        rank, source = 0, "default"
    world = dist.get("world_size")
    extra = {}
    for f in EXTRA_FIELDS:
        value = _header_field(path, doc, f)
        if value is not None:
            extra[f] = value
    fields = {
        "world_size": world if isinstance(world, int) else None,
        "backend": dist.get("backend") if isinstance(dist.get("backend"), str) else None,
        "distributed_info": dist,
        "device_properties": tuple(p for p in props if isinstance(p, dict)),
        "schema_version": doc.schemaVersion,
        "trace_name": doc.traceName,
        "extra": extra,
    }
    if warnings:
        extra[WARNINGS_KEY] = warnings
    base = int(doc.baseTimeNanoseconds or 0)
    if not abs(base) < MAX_NS:
        raise TraceFormatError(
            path,
            "its baseTimeNanoseconds is out of range (beyond 2**62 ns)",
            "The file is damaged or was edited; record or export the trace again",
        )
    return Header(rank=rank, rank_source=source, base_time_ns=base, fields=fields)
