"""Build small XSpaces (``jax.profiler``'s ``<host>.xplane.pb``) for tests, written field by field
in the protobuf wire format of ``tsl/profiler/protobuf/xplane.proto`` (XSpace, XPlane, XLine,
XEvent, XStat, XEventMetadata, XStatMetadata), so that no generated protobuf module is needed.

Field numbers (xplane.proto): XSpace planes=1, hostnames=4; XPlane id=1, name=2, lines=3,
event_metadata=4 (map<int64, XEventMetadata>), stat_metadata=5 (map<int64, XStatMetadata>);
XLine id=1, name=2, timestamp_ns=3, events=4, duration_ps=9, display_id=10, display_name=11;
XEvent metadata_id=1, offset_ps=2, duration_ps=3, stats=4; XStat metadata_id=1,
uint64_value=3, int64_value=4, str_value=5; XEventMetadata id=1, name=2; XStatMetadata id=1,
name=2. A map entry is a message of key=1 and value=2.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s as two's complement, as protobuf writes them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value) if value else b""


def _bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode()) if value else b""


@dataclass
class Event:
    name: str
    ts_ns: int
    dur_ns: int
    stats: dict[str, int | str] = field(default_factory=dict)


@dataclass
class Line:
    id: int
    name: str
    events: list[Event] = field(default_factory=list)


@dataclass
class Plane:
    id: int
    name: str
    lines: list[Line] = field(default_factory=list)


def xspace(planes: list[Plane], hostname: str = "host") -> bytes:
    """The serialized XSpace of ``planes`` (each event's times in ns since the epoch; its stats
    as int64 or string values)."""
    out = b""
    for plane in planes:
        events: dict[str, int] = {}
        stats: dict[str, int] = {}
        body_lines = b""
        for line in plane.lines:
            t0 = min((e.ts_ns for e in line.events), default=0)
            end = max((e.ts_ns + e.dur_ns for e in line.events), default=0)
            body = _int(1, line.id) + _str(2, line.name) + _int(3, t0) + _int(9, (end - t0) * 1000)
            body += _int(10, line.id) + _str(11, line.name)
            for e in line.events:
                mid = events.setdefault(e.name, len(events) + 1)
                ev = _int(1, mid) + _int(2, (e.ts_ns - t0) * 1000) + _int(3, e.dur_ns * 1000)
                for k, v in e.stats.items():
                    sid = stats.setdefault(k, len(stats) + 1)
                    value = _str(5, v) if isinstance(v, str) else _int(4, v)
                    ev += _bytes(4, _int(1, sid) + value)
                body += _bytes(4, ev)
            body_lines += _bytes(3, body)
        p = _int(1, plane.id) + _str(2, plane.name) + body_lines
        for name, mid in events.items():
            p += _bytes(4, _int(1, mid) + _bytes(2, _int(1, mid) + _str(2, name)))
        for name, sid in stats.items():
            p += _bytes(5, _int(1, sid) + _bytes(2, _int(1, sid) + _str(2, name)))
        out += _bytes(1, p)
    return out + _str(4, hostname)
