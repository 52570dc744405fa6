"""Build small XSpaces (``jax.profiler``'s ``<host>.xplane.pb``) for tests, written field by field
in the protobuf wire format of ``tsl/profiler/protobuf/xplane.proto`` (XSpace, XPlane, XLine,
XEvent, XStat, XEventMetadata, XStatMetadata), so that no generated protobuf module is needed.

Field numbers (xplane.proto): XSpace planes=1, hostnames=4; XPlane id=1, name=2, lines=3,
event_metadata=4 (map<int64, XEventMetadata>), stat_metadata=5 (map<int64, XStatMetadata>);
XLine id=1, name=2, timestamp_ns=3, events=4, duration_ps=9, display_id=10, display_name=11;
XEvent metadata_id=1, offset_ps=2, duration_ps=3, stats=4; XStat metadata_id=1,
uint64_value=3, int64_value=4, str_value=5; XEventMetadata id=1, name=2; XStatMetadata id=1,
name=2. A map entry is a message of key=1 and value=2.

XLA's cost analysis (the FLOPs and bytes of xprof's ``op_profile``) is computed from the HLO of
each program, which a profile keeps in its ``/host:metadata`` plane (an event metadata per
program, named ``<module>(<program_id>)``, with ``Hlo Proto`` and ``program_id`` stats):
:func:`metadata_plane` takes that plane as recorded from a real ``.xplane.pb``, and
:func:`hlo_ops` lists the ops of a program's entry computation (HloProto hlo_module=1;
HloModuleProto entry_computation_name=2, computations=3; HloComputationProto name=1,
instructions=2; HloInstructionProto name=1, opcode=2), so that a built GPU plane can run them.
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


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """The fields of a protobuf message: (number, varint or bytes) pairs, in order."""
    out: list[tuple[int, int | bytes]] = []
    i = 0

    def varint() -> int:
        nonlocal i
        value = shift = 0
        while True:
            b = buf[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(buf):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 2:
            n = varint()
            out.append((number, buf[i : i + n]))
            i += n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            out.append((number, buf[i : i + size]))
            i += size
        else:
            raise ValueError(f"wire type {wire} at byte {i}")
    return out


def _all(fields: list[tuple[int, int | bytes]], number: int) -> list[bytes]:
    return [v for n, v in fields if n == number and isinstance(v, bytes)]


def metadata_plane(recorded: bytes) -> bytes:
    """The ``/host:metadata`` plane of a recorded XSpace, serialized as it is there."""
    for plane in _all(_fields(recorded), 1):
        if _all(_fields(plane), 2) == [b"/host:metadata"]:
            return plane
    raise ValueError("no /host:metadata plane")


def hlo_ops(plane: bytes, program: str) -> list[tuple[str, str]]:
    """(name, opcode) of each instruction of the entry computation of ``program`` (the event
    metadata named so, e.g. ``jit_step(14)``) in a ``/host:metadata`` ``plane``."""
    stat_names = {}
    for entry in _all(_fields(plane), 5):
        meta = _fields(_all(_fields(entry), 2)[0])
        stat_names[next(v for n, v in meta if n == 1)] = _all(meta, 2)[0].decode()
    for entry in _all(_fields(plane), 4):
        meta = _fields(_all(_fields(entry), 2)[0])
        if _all(meta, 2) != [program.encode()]:
            continue
        for stat in _all(meta, 5):
            fields = _fields(stat)
            if stat_names.get(next(v for n, v in fields if n == 1)) != "Hlo Proto":
                continue
            module = _fields(_all(_fields(_all(fields, 6)[0]), 1)[0])
            entry_name = _all(module, 2)[0]
            for comp in _all(module, 3):
                cf = _fields(comp)
                if _all(cf, 1) == [entry_name]:
                    return [(_all(_fields(i), 1)[0].decode(), _all(_fields(i), 2)[0].decode()) for i in _all(cf, 2)]
    raise ValueError(f"no HLO for {program!r}")


def xspace(planes: list[Plane], hostname: str = "host", recorded_planes: tuple[bytes, ...] = ()) -> bytes:
    """The serialized XSpace of ``planes`` (each event's times in ns since the epoch; its stats
    as int64 or string values), then ``recorded_planes`` (serialized XPlanes, as
    :func:`metadata_plane` gives them)."""
    out = b"".join(_bytes(1, p) for p in recorded_planes)
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
                    # A stat's value is a oneof: written even where it is 0 or "".
                    value = _bytes(5, v.encode()) if isinstance(v, str) else _varint(4 << 3) + _varint(v)
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
