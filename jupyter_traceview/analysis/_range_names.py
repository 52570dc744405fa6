"""Range names without their per-call suffix: one name for one kind of range.

PyTorch's ``emit_nvtx`` and Nsight exports of it name every range after its call:
``aten::mm, seq = 118, op_id = 4021, sizes = [[64, 128], [128, 256]], input_op_ids = [...]``.
Grouped by name, each call would be a row of its own. :func:`split_range_name` takes the
suffix off at its first ``, key = `` for the keys PyTorch writes (``seq``, ``stashed seq``,
``op_id``, ``sizes``, ``input_op_ids``, ``scope``); the analyses group by what is left and
keep the suffix in a column where they give one row per range.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

__all__ = ["split_range_name", "split_range_names"]

#: Where a per-call suffix begins: the first ``, key = `` of a key PyTorch writes.
SUFFIX = re.compile(r",\s*(?:stashed\s+)?(?:seq|op_id|sizes|input_op_ids|scope)\s*=")


def split_range_name(name: str) -> tuple[str, str]:
    """``(name, suffix)``: ``"aten::mm, seq = 3, op_id = 7"`` -> ``("aten::mm", "seq = 3, op_id = 7")``;
    a name without such a suffix -> ``(name, "")``."""
    m = SUFFIX.search(name)
    if m is None:
        return name, ""
    return name[: m.start()].rstrip(), name[m.start() :].lstrip(", \t").strip()


def split_range_names(names: Iterable[object]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_range_name` of each name: two object arrays, the names and the suffixes."""
    pairs = [split_range_name(str(n)) for n in names]
    base = np.array([p[0] for p in pairs], dtype=object)
    suffix = np.array([p[1] for p in pairs], dtype=object)
    return base, suffix
