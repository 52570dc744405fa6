"""Text helpers of the findings' titles and details: durations, shares, sizes, rank lists."""

from __future__ import annotations

from collections.abc import Iterable

from ...model.trace import _fmt_ns, _ranges

__all__ = ["amount", "fmt_bytes", "fmt_ns", "fmt_pct", "on_rank", "ordinal", "ranks_text", "short"]


def fmt_ns(ns: float) -> str:
    """A duration in ns, in the unit that reads best."""
    return _fmt_ns(ns)


def fmt_pct(x: float) -> str:
    """A share in %, one decimal."""
    return f"{x:.1f}%"


def ranks_text(ranks: Iterable[int]) -> str:
    """ "rank 3" or "ranks 0-2, 5"."""
    rs = sorted(set(int(r) for r in ranks))
    return f"rank {rs[0]}" if len(rs) == 1 else f"ranks {_ranges(rs)}"


def amount(named: Iterable[int], worst: int, amount: str) -> str:
    """ "X" when one rank is named, "up to X on rank W" when several are."""
    return amount if len(set(named)) == 1 else f"up to {amount} on rank {worst}"


def on_rank(named: Iterable[int], worst: int) -> str:
    """ "" when one rank is named, "on rank W, " when several are."""
    return "" if len(set(named)) == 1 else f"on rank {worst}, "


def short(name: str, n: int = 60) -> str:
    """A name cut to n characters."""
    return name if len(name) <= n else name[: n - 3] + "..."


def fmt_bytes(n: int) -> str:
    """A size in bytes, in binary units with the exact count."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
