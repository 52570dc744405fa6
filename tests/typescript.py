"""Reading TypeScript interfaces, to compare them with the TypedDicts they mirror.

Used by the protocol tests (tests/dashboard/test_protocol.py, tests/views/test_timeline_messages.py,
tests/server/test_server_messages.py): each compares the keys of a TypedDict with those of the
TypeScript interface of the same name, optional on both sides or on neither, and the type of
each key's value (``py_types`` and ``ts_types``: ``int`` and ``float`` are ``number``,
``X | None`` is ``X | null``, ``list[X]`` is ``X[]``, ``dict[str, X]`` is
``Record<string, X>``, a ``Literal`` the union of its values, a TypedDict its interface).
"""

from __future__ import annotations

import collections.abc
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


# ---------------------------------------------------------------------------------------
# Value types: a Python annotation and a TypeScript type, written in one canonical form
# (``number``, ``string``, ``boolean``, ``null``, ``unknown``, ``"literal"``, ``Array<T>``,
# ``[A, B]``, ``Record<K, V>``, an interface's name; union members sorted, joined by `` | ``).
# JSON has no tuples: a tuple whose members share a type is ``Array<T>`` on both sides.


def _union(members: list[str]) -> str:
    flat: set[str] = set()
    for m in members:
        flat.update(_split_top(m, "|") if m.count("|") else [m])
    return " | ".join(sorted(flat))


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes, each part stripped."""
    parts, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]


def _object(keys: dict[str, str]) -> str:
    return "{" + "; ".join(f"{k}: {v}" for k, v in sorted(keys.items())) + "}"


def _tuple(members: list[str]) -> str:
    return f"Array<{members[0]}>" if members and len(set(members)) == 1 else f"[{', '.join(members)}]"


def py_type(tp: object, inline: frozenset[str] = frozenset()) -> str:
    """The canonical form of a Python annotation (a TypedDict by its name, or by its keys when
    in ``inline``: a TypeScript type written inline)."""
    import types

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in (int, float):
        return "number"
    if tp is str:
        return "string"
    if tp is bool:
        return "boolean"
    if tp is type(None) or tp is None:
        return "null"
    if tp in (typing.Any, object):
        return "unknown"
    if origin in (typing.Union, types.UnionType):
        return _union([py_type(a, inline) for a in args])
    if origin is typing.Literal:
        return _union(['"' + a + '"' if isinstance(a, str) else str(a).lower() for a in args])
    if origin in (list, collections.abc.Sequence):
        return f"Array<{py_type(args[0], inline)}>"
    if origin is tuple:
        return _tuple([py_type(a, inline) for a in args])
    if origin in (dict, collections.abc.Mapping):
        return f"Record<{py_type(args[0], inline)}, {py_type(args[1], inline)}>"
    if typing.is_typeddict(tp) and tp.__name__ in inline:  # type: ignore[attr-defined]
        return _object({k: py_type(v, inline) for k, v in typing.get_type_hints(tp).items()})
    if typing.is_typeddict(tp):
        return tp.__name__  # type: ignore[attr-defined]
    raise TypeError(f"no TypeScript form for {tp!r}")


def ts_type(text: str, aliases: dict[str, str] | None = None) -> str:
    """The canonical form of a TypeScript type (``aliases``: the file's ``export type`` names, expanded)."""
    aliases = aliases or {}
    t = text.strip()
    members = _split_top(t, "|")
    if len(members) > 1:
        return _union([ts_type(m, aliases) for m in members])
    if t.endswith("[]"):
        return f"Array<{ts_type(t[:-2], aliases)}>"
    if t.startswith("(") and t.endswith(")"):
        return ts_type(t[1:-1], aliases)
    if t.startswith("[") and t.endswith("]"):
        return _tuple([ts_type(m, aliases) for m in _split_top(t[1:-1], ",")])
    if t.startswith("{") and t.endswith("}"):
        keys = {}
        for member in _split_top(t[1:-1], ";"):
            k = re.match(r"(\w+)\??:\s*(.*)$", member, re.S)
            if k:
                keys[k.group(1)] = ts_type(k.group(2), aliases)
        return _object(keys)
    if t.startswith("'") and t.endswith("'"):
        return '"' + t[1:-1] + '"'
    m = re.fullmatch(r"(\w+)<(.*)>", t, re.S)
    if m:
        args = [ts_type(a, aliases) for a in _split_top(m.group(2), ",")]
        if m.group(1) == "Array":
            return f"Array<{args[0]}>"
        return f"{m.group(1)}<{', '.join(args)}>"
    if t == "any":
        return "unknown"
    if t in aliases:
        return ts_type(aliases[t], aliases)
    return t


def ts_types(path: Path) -> dict[str, dict[str, str]]:
    """``{interface: {key: canonical type}}`` of the ``export interface``s of a TypeScript file."""
    source = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(encoding="utf-8"), flags=re.S)
    aliases = {m.group(1): m.group(2) for m in re.finditer(r"^export type (\w+) = ([^;]+);", source, re.M)}
    out: dict[str, dict[str, str]] = {}
    pattern = r"^export interface (\w+)(?:<[^>]*>)?(?: extends ([\w, ]+))? \{\n(.*?)^\}"
    for m in re.finditer(pattern, source, re.M | re.S):
        types_: dict[str, str] = {}
        for base in (m.group(2) or "").split(","):
            if base.strip():
                types_.update(out[base.strip()])
        for member in _split_top(m.group(3), ";"):
            k = re.match(r"(?:readonly\s+)?(\w+)\??:\s*(.*)$", member, re.S)
            if k:  # a method (`name(...)`) has no key
                types_[k.group(1)] = ts_type(k.group(2), aliases)
        out[m.group(1)] = types_
    return out


def py_types(td: type, inline: frozenset[str] = frozenset()) -> dict[str, str]:
    """``{key: canonical type}`` of a TypedDict (its bases' keys included)."""
    return {k: py_type(v, inline) for k, v in typing.get_type_hints(td).items()}
