"""The one way numbers are written, everywhere in Python (reprs, CLI, charts, tables, findings).

Its TypeScript twin is ``js/format.ts``: same rules, same outputs (``tests/test_format.py``
and ``js/tests/format.test.ts`` check the same cases).

The rules
---------
- **Durations** (:func:`duration`): three significant digits, trailing zeros dropped, in the
  largest of ``ns``, ``us``, ``ms``, ``s`` in which the value is at least 1: ``850 ns``,
  ``12.3 us``, ``4.56 ms``, ``14 ms``, ``7.89 s``; from 1,000 s on, whole seconds with
  thousands separators (``1,234 s``).
- **Times** (:func:`time`): a point in time relative to the trace's origin
  (``Trace.t0_ns``), like a duration but with a leading ``+``: ``+18.1 ms``.
  ``timeline.show_range(trace.t0_ns + a, trace.t0_ns + b)`` shows it.
- **Sizes** (:func:`size`): binary units, three significant digits: ``512 B``,
  ``1.5 KiB``, ``3 MiB``, ``2.25 GiB`` (1 KiB = 1,024 bytes). There is no other convention.
- **Rates** (:func:`rate`): bandwidth in GB/s, decimal (1 GB/s = 10^9 bytes/s, as the
  analyses' ``*_gbps`` columns and nccl-tests define it), three significant digits.
- **Percentages** (:func:`percent`): one decimal and ``%``: ``42.1%``.
- **Counts** (:func:`count`): integers with thousands separators: ``1,234``.
- **Missing** values (None, NaN, infinite) are written :data:`MISSING` (an en dash).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "ABSENT_IF_NEGATIVE",
    "MISSING",
    "WARNING_LABELS",
    "cell",
    "count",
    "duration",
    "evidence",
    "evidence_label",
    "headline_items",
    "headline_warnings",
    "kind_of_key",
    "percent",
    "plural",
    "ranges",
    "rate",
    "saving",
    "short_name",
    "short_names",
    "size",
    "steps",
    "time",
]

#: How a missing value is written.
MISSING = "–"

#: (name, ns per unit), largest first.
TIME_UNITS: tuple[tuple[str, float], ...] = (("s", 1e9), ("ms", 1e6), ("us", 1e3))
#: (name, bytes per unit), largest first.
SIZE_UNITS: tuple[tuple[str, float], ...] = (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10))


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _round(v: float) -> int:
    """Nearest integer, halves up (as JavaScript's ``Math.round``)."""
    return math.floor(v + 0.5)


def _sig3(v: float) -> str:
    """Three significant digits, trailing zeros dropped, no exponent.

    Rounds the exact binary value half away from zero, as JavaScript's ``toPrecision``
    does (Python's ``.3g`` rounds ties to even), so that both sides write the same text.
    """
    if v == 0:
        return "0"
    d = Decimal(v)
    q = d.quantize(Decimal(1).scaleb(d.adjusted() - 2), rounding=ROUND_HALF_UP)
    return format(q.normalize(), "f")


def duration(ns: Any) -> str:
    """A duration given in ns: ``850 ns``, ``12.3 us``, ``4.56 ms``, ``7.89 s``.

    >>> duration(850), duration(12_345), duration(4_560_000), duration(14_000_000)
    ('850 ns', '12.3 us', '4.56 ms', '14 ms')
    >>> duration(1_234_000_000_000), duration(float("nan"))
    ('1,234 s', '–')
    """
    v = _number(ns)
    if v is None:
        return MISSING
    a = abs(v)
    if _round(a) < 1000:
        return f"{_round(v)} ns"
    if a >= 999.5e9:
        return f"{_round(v / 1e9):,} s"
    for i, (name, scale) in enumerate(TIME_UNITS):
        if a >= scale or i == len(TIME_UNITS) - 1:
            text = _sig3(v / scale)
            if abs(float(text)) >= 1000:  # 999.7 us rounds to 1 ms
                bigger_name, bigger = TIME_UNITS[i - 1]
                return f"{_sig3(v / bigger)} {bigger_name}"
            return f"{text} {name}"
    raise AssertionError("unreachable")


def time(rel_ns: Any) -> str:
    """A time since the trace's origin (ns): ``+18.1 ms``; negative times get ``-``.

    >>> time(18_091_000), time(0), time(-5_000)
    ('+18.1 ms', '+0 ns', '-5 us')
    """
    v = _number(rel_ns)
    if v is None:
        return MISSING
    return ("-" if v < 0 else "+") + duration(abs(v))


def size(n_bytes: Any) -> str:
    """A size in bytes, binary units: ``512 B``, ``1.5 KiB``, ``3 MiB``.

    >>> size(512), size(1536), size(3 * 2**20), size(41_343)
    ('512 B', '1.5 KiB', '3 MiB', '40.4 KiB')
    """
    v = _number(n_bytes)
    if v is None:
        return MISSING
    a = abs(v)
    for i, (name, scale) in enumerate(SIZE_UNITS):
        if a >= scale:
            text = _sig3(v / scale)
            if abs(float(text)) >= 1024 and i > 0:
                bigger = SIZE_UNITS[i - 1]
                return f"{_sig3(v / bigger[1])} {bigger[0]}"
            return f"{text} {name}"
    if _round(a) >= 1024:
        return f"{_sig3(v / 1024)} KiB"
    return f"{_round(v)} B"


def rate(gbps: Any) -> str:
    """A bandwidth given in GB/s (10^9 bytes/s): ``12.3 GB/s``.

    >>> rate(12.345), rate(0.01234)
    ('12.3 GB/s', '0.0123 GB/s')
    """
    v = _number(gbps)
    if v is None:
        return MISSING
    if abs(v) >= 1000:
        return f"{_round(v):,} GB/s"
    return f"{_sig3(v)} GB/s"


def percent(pct: Any) -> str:
    """A percentage (already in %): ``42.1%``.

    >>> percent(42.123), percent(None)
    ('42.1%', '–')
    """
    v = _number(pct)
    if v is None:
        return MISSING
    return f"{Decimal(v).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}%"


def count(n: Any) -> str:
    """A count with thousands separators: ``1,234``.

    >>> count(1234567), count(3.0)
    ('1,234,567', '3')
    """
    v = _number(n)
    if v is None:
        return MISSING
    return f"{_round(v):,}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 rank``, ``8 ranks``, ``1,234 events``.

    >>> plural(1, "rank"), plural(2104, "kernel")
    ('1 rank', '2,104 kernels')
    """
    return f"{count(n)} {word if n == 1 else (words or word + 's')}"


def ranges(values: Iterable[int]) -> str:
    """Integers as ranges: ``[0, 1, 2, 3, 5]`` -> ``"0-3, 5"``.

    >>> ranges([0, 1, 2, 3, 5]), ranges([])
    ('0-3, 5', '')
    """
    vals = sorted({int(v) for v in values})
    if not vals:
        return ""
    parts = []
    start = prev = vals[0]
    for v in vals[1:]:
        if v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}-{prev}" if prev > start else f"{start}")
        start = prev = v
    parts.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(parts)


def steps(ids: Iterable[int]) -> str:
    """ProfilerStep ids, labelled as ids (not a count): ``step #10``, ``steps #3-7``.

    >>> steps([10]), steps([3, 4, 5, 6, 7]), steps([])
    ('step #10', 'steps #3-7', 'no steps')
    """
    vals = sorted({int(v) for v in ids})
    if not vals:
        return "no steps"
    return f"{'step' if len(vals) == 1 else 'steps'} #{ranges(vals)}"


def saving(saving_ns: Any, saving_pct: Any, change: str = "") -> str:
    """What fixing a finding buys per step (its ``saving_ns``, ``saving_pct`` and ``change``
    columns): ``fix this: ~4.56 ms/step (12.3%), assuming <change>``; ``""`` when nothing is
    known (no saving and no change).

    >>> saving(4_560_000, 12.34, "host syncs no longer wait"), saving(0, 0.0, "")
    ('fix this: ~4.56 ms/step (12.3%), assuming host syncs no longer wait', '')
    >>> saving(0, 0.0, "the data is ready at once")
    'fix this: ~0 ns/step (0.0%), assuming the data is ready at once'
    """
    v = _number(saving_ns)
    if not change and (v is None or v <= 0):
        return ""
    text = f"fix this: ~{duration(saving_ns)}/step ({percent(saving_pct)})"
    return f"{text}, assuming {change}" if change else text


def headline_items(h: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The headline (``tv.headline(trace)``) as ``(label, value, hint)`` texts, in display order.

    Every surface that shows the headline (the trace's repr, the dashboard's header, the
    HTML report, the Traces sidebar, ``traceview summary``) writes these texts, so that the
    same figure reads the same everywhere. Terms as defined in docs/semantics.md.
    """
    out = headline_warnings(h)
    n = int(h["ranks"])
    ids = h.get("rank_ids") or []
    out.append(("ranks", f"{n} ({ranges(ids)})" if n > 1 else str(n), ""))
    if h.get("devices"):
        out.append(("devices", ", ".join(h["devices"]), ""))
    if h.get("workload"):
        out.append(("workload", str(h["workload"]), str(h.get("workload_evidence") or "")))
    if h.get("gpu"):
        out.append(("job span", duration(h["job_span_ns"]), "first GPU work to last, all ranks"))
        lo, hi = h.get("gpu_busy_min_pct"), h.get("gpu_busy_max_pct")
        spread = f" ({percent(lo)} … {percent(hi)})" if n > 1 else ""
        out.append(("GPU busy", percent(h["gpu_busy_pct"]), f"share of each rank's span, mean over ranks{spread}"))
        out.append(("compute", percent(h["compute_pct"]), "share of the span with a compute kernel running"))
        out.append(("exposed communication", percent(h["exposed_comm_pct"]), "communication with no compute alongside"))
    else:
        out.append(("trace span", duration(h["trace_span_ns"]), "first event to last; no GPU work"))
    out.append(("iterations", count(h["iterations"]), steps(h.get("steps") or [])))
    if h.get("step_median_ns") is not None:
        hint = "the slowest rank's step, median over steps"
        if h.get("gpu"):
            # Both show: a step counts from its ProfilerStep's CPU start to the end of its GPU
            # work (tv.iteration_stats), the job span GPU work only, so a step can be longer.
            hint += "; from the step's CPU start to its GPU end, so it can exceed the job span (GPU work only)"
        out.append(("median step", duration(h["step_median_ns"]), hint))
    out.append(("events", count(h["events"]), "every kind, all ranks"))
    out.append(("kernels", count(h["kernels"]), "GPU kernels"))
    out.append(("GPU activities", count(h["gpu_activities"]), "kernels, copies, sets and syncs"))
    return out


#: Labels of :func:`headline_warnings`' items (shown as warnings: a badge, a warning tone).
WARNING_LABELS = ("skipped", "run")
#: What a run status other than "ok" means, in words.
_RUN_STATUS_TEXT = {
    "error": "the profiled cell raised: the last step is partial (findings leave it out)",
    "interrupted": "the profiled cell was interrupted: the last step is partial (findings leave it out)",
}


def headline_warnings(h: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """What the headline's figures leave out, as ``(label, value, hint)`` items: the skipped
    trace files (``skipped_files``) and a run that did not end well (``run_status``); none
    for a complete trace. The first items of :func:`headline_items`."""
    out: list[tuple[str, str, str]] = []
    skipped = h.get("skipped_files") or []
    if skipped:
        names = ", ".join(os.path.basename(str(f["path"])) for f in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        hint = "; ".join(f"{f['path']}: {f['reason']}" for f in skipped)
        out.append(("skipped", f"{plural(len(skipped), 'trace file')} not read ({names}{more})", hint))
    status = str(h.get("run_status") or "ok")
    if status != "ok":
        out.append(
            (
                "run",
                "partial (cell raised)" if status == "error" else f"partial ({status})",
                _RUN_STATUS_TEXT.get(status, status),
            )
        )
    return out


_LAMBDA = re.compile(r"::\{lambda\([^{}]*?\)#\d+\}")
_OPERATOR_CALL = re.compile(r"::operator\(\)\(\)(?: const)?")
_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::")
#: A C++ signature: an identifier (maybe qualified, after ``void``) directly followed by ``<`` or ``(``.
_SIGNATURE = re.compile(r"^(?:void )?[A-Za-z_][\w:]*[<(]")


def _strip_groups(s: str, opening: str, closing: str) -> str:
    """``s`` without its (nested) ``opening ... closing`` groups."""
    out, depth = [], 0
    for ch in s:
        if ch == opening:
            depth += 1
        elif ch == closing and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _fold_templates(s: str, keep_depth: int) -> str:
    """Template arguments deeper than ``keep_depth`` folded to ``<…>``."""
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
            if depth == keep_depth + 1:
                out.append("<…>")
                continue
        elif ch == ">":
            depth -= 1
            if depth == keep_depth:
                continue
        if depth <= keep_depth:
            out.append(ch)
    return "".join(out)


def _simplified(name: str) -> str:
    """A C++ kernel signature without what never tells kernels apart.

    The return type, the parameter list, namespaces, lambda closures and the argument lists
    of functions named inside template arguments go; template arguments stay.
    """
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    prev = None
    while prev != s:
        prev = s
        s = _OPERATOR_CALL.sub("", _LAMBDA.sub("", s))
    # The parameter list: the first "(" outside the template arguments.
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            s = s[:i]
            break
    s = _strip_groups(s, "(", ")")
    s = _QUALIFIER.sub("", s)
    return re.sub(r"\s*>\s*>", ">>", re.sub(r"\s+", " ", s)).replace(">>", "> >").replace("> >", ">>").strip()


def short_name(name: str, n: int = 64) -> str:
    """A kernel name short enough for a chart label that still tells kernels apart.

    Template arguments, which distinguish the instances of one kernel template, are kept
    (deeper ones folded to ``<…>`` only when the name exceeds ``n``); the return type,
    namespaces, lambdas and parameter lists go. Names that are not C++ signatures are only
    cut at ``n``. Use :func:`short_names` for a set of labels that must stay distinct.

    >>> short_name("void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda"
    ...     "(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    ...     "at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)")
    'vectorized_elementwise_kernel<4, sqrt_kernel_cuda, Array<char*, 2>>'
    >>> short_name("Memcpy HtoD (Pinned -> Device)")
    'Memcpy HtoD (Pinned -> Device)'
    """
    s = str(name)
    if _SIGNATURE.match(s):
        simple = _simplified(s) or s
        for depth in (3, 2, 1):
            if len(simple) <= n:
                break
            simple = _fold_templates(simple, depth)
        s = _drop_last_arguments(simple, n)
    return s if len(s) <= n else s[: n - 1] + "…"


def _drop_last_arguments(s: str, n: int) -> str:
    """``k<a, b, c>`` -> ``k<a, b, …>`` -> ``k<a, …>`` until it fits in ``n`` (the first argument stays)."""
    if len(s) <= n or not s.endswith(">") or "<" not in s:
        return s
    head, args = s[: s.index("<")], s[s.index("<") + 1 : -1]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    shorter = s
    while len(parts) > 1:
        parts.pop()
        shorter = f"{head}<{', '.join(parts)}, …>"
        if len(shorter) <= n:
            return shorter
    return shorter


def middle_ellipsis(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters in its middle: its start and its end (where the
    instances of a kernel or the shapes of an operator differ) both stay.

    >>> middle_ellipsis("ampere_sgemm_128x64_tn", 12)
    'ampere…64_tn'
    >>> middle_ellipsis("gemm", 12)
    'gemm'
    """
    s = str(text)
    if len(s) <= n:
        return s
    keep = max(n - 1, 2)
    head = (keep + 1) // 2
    return s[:head] + "…" + s[len(s) - (keep - head) :]


def label_names(names: Iterable[str], n: int = 20) -> list[str]:
    """Chart labels of at most ``n`` characters: :func:`short_names` cut in the middle
    (:func:`middle_ellipsis`), kept distinct (a ``[k]`` suffix where two would read alike).
    Charts show the full name on hover.

    >>> label_names(["void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda>(int)", "gemm"])
    ['vectorized…nel_cuda>', 'gemm']
    """
    out = [middle_ellipsis(x, n) for x in short_names(names, max(2 * n, 64))]
    seen: dict[str, int] = {}
    for i, x in enumerate(out):
        k = seen.get(x, 0)
        seen[x] = k + 1
        if k:
            out[i] = f"{x} [{k + 1}]"
    return out


def short_names(names: Iterable[str], n: int = 64) -> list[str]:
    """:func:`short_name` of each name, made longer where two different names would read alike.

    >>> short_names(["k<float>(int)", "k<float>(long)", "gemm"])
    ['k<float> [1]', 'k<float> [2]', 'gemm']
    """
    full = [str(x) for x in names]
    out = [short_name(x, n) for x in full]
    for width in (2 * n, 4 * n):
        groups: dict[str, set[str]] = {}
        for s, f in zip(out, full, strict=True):
            groups.setdefault(s, set()).add(f)
        clash = {s for s, fs in groups.items() if len(fs) > 1}
        if not clash:
            return out
        out = [short_name(f, width) if s in clash else s for s, f in zip(out, full, strict=True)]
    groups = {}
    for s, f in zip(out, full, strict=True):
        groups.setdefault(s, set()).add(f)
    numbered: dict[str, dict[str, int]] = {}
    result = []
    for s, f in zip(out, full, strict=True):
        if len(groups[s]) == 1:
            result.append(s)
            continue
        ids = numbered.setdefault(s, {})
        ids.setdefault(f, len(ids) + 1)
        result.append(f"{s} [{ids[f]}]")
    return result


#: Keys whose value -1 means "not recorded" (``docs/schema.md``): shown empty, not as data.
ABSENT_IF_NEGATIVE = frozenset({"seq", "stream", "device", "tid", "correlation"})


def kind_of_key(key: str) -> str:
    """How a value is written, from its key's unit suffix (the analyses' naming rules).

    >>> kind_of_key("wait_ns"), kind_of_key("busy_pct"), kind_of_key("bytes"), kind_of_key("busbw_gbps")
    ('duration', 'pct', 'bytes', 'gbps')
    """
    if key.endswith("_ns"):
        return "duration"
    if key.endswith("_pct"):
        return "pct"
    if key == "bytes" or key.endswith("_bytes"):
        return "bytes"
    if key.endswith("_gbps"):
        return "gbps"
    return "float"


def cell(value: Any, kind: str) -> str:
    """A table cell in its column's format: ``duration``, ``pct``, ``bytes``, ``gbps``, ``int``, ``float`` or ``text``.

    >>> cell(1_500_000, "duration"), cell(12.345, "pct"), cell(None, "int"), cell("aten::mm", "text")
    ('1.5 ms', '12.3%', '–', 'aten::mm')
    """
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return str(value)
    writer = {"duration": duration, "pct": percent, "bytes": size, "gbps": rate, "int": count}.get(kind)
    if writer is not None:
        return writer(value)
    v = _number(value)
    if v is None:
        return MISSING
    if kind == "float":
        return _sig3(v) if not float(v).is_integer() else count(v)
    return str(value)


def evidence_label(key: str) -> str:
    """The header of an evidence value: its key without the unit suffix the cells carry.

    >>> evidence_label("gap_ns"), evidence_label("host_wait_pct"), evidence_label("worst_rank")
    ('gap', 'host wait', 'worst rank')
    """
    return re.sub(r"_(ns|pct|bytes|gbps)$", "", key).replace("_", " ")


def evidence(key: str, value: Any) -> str:
    """An evidence value (a finding's ``evidence`` entry) as text, by its key's unit suffix.

    >>> evidence("wait_ns", 1_309_000), evidence("seq", -1), evidence("ranks", [0, 1])
    ('1.31 ms', '', '0, 1')
    """
    if key in ABSENT_IF_NEGATIVE and isinstance(value, (int, float)) and value < 0:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return cell(value, kind_of_key(key))
    if isinstance(value, (list, tuple)):
        return ", ".join(" × ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for v in value)
    if isinstance(value, Mapping):
        return " · ".join(f"{k}: {evidence(str(k), v)}" for k, v in value.items())
    return str(value)
