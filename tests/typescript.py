"""Reading TypeScript interfaces, to compare them with the TypedDicts they mirror.

Used by the protocol tests (tests/dashboard/test_protocol.py, tests/views/test_timeline_messages.py,
tests/server/test_server_messages.py): each compares the keys of a TypedDict with those of the
TypeScript interface of the same name, optional on both sides or on neither.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ts_interfaces(path: Path) -> dict[str, dict[str, bool]]:
    """``{interface: {key: optional}}`` of the ``export interface``s of a TypeScript file.

    Keys are the members at the interface's top level (``key: type`` or ``key?: type``);
    methods (``name(...)``) are left out. An interface that ``extends`` others of the file
    has their keys too.
    """
    out: dict[str, dict[str, bool]] = {}
    source = path.read_text(encoding="utf-8")
    pattern = r"^export interface (\w+)(?:<[^>]*>)?(?: extends ([\w, ]+))? \{\n(.*?)^\}"
    for m in re.finditer(pattern, source, re.M | re.S):
        keys: dict[str, bool] = {}
        for base in (m.group(2) or "").split(","):
            if base.strip():
                keys.update(out[base.strip()])
        depth = 0
        for line in m.group(3).splitlines():
            if depth == 0:
                k = re.match(r"^  (\w+)(\?)?:", line)
                if k:
                    keys[k.group(1)] = bool(k.group(2))
            depth += line.count("{") + line.count("(") - line.count("}") - line.count(")")
        out[m.group(1)] = keys
    return out


def py_keys(td: type) -> dict[str, bool]:
    """``{key: optional}`` of a TypedDict (its bases' keys included)."""
    hints = typing.get_type_hints(td)
    return {k: k in td.__optional_keys__ for k in hints}  # type: ignore[attr-defined]
