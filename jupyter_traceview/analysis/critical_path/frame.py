"""The path as a frame: segments named, categorised and summed by category."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...model.text import as_text
from ...model.trace import Trace
from .graph import (
    COLLECTIVE,
    EDGE_NAMES,
    IDLE,
    INFERRED_FORK,
    INFERRED_JOIN,
    INFERRED_WAIT,
    LAUNCH,
    RUNTIME_KINDS,
    SPAN,
    STREAM,
    STREAM_WAIT,
    SYNC,
    WAIT,
)

CRITICAL_PATH_COLUMNS = {
    "rank": "int64",
    "eid": "int64",
    "name": "str",
    "kind": "str",
    "category": "str",
    "edge": "str",
    "start_ns": "int64",
    "end_ns": "int64",
    "dur_ns": "int64",
    "from_rank": "int64",
}
CATEGORY_COLUMNS = {"category": "str", "time_ns": "int64", "time_pct": "float64"}

#: Categories of critical-path time, in the order of ``view="categories"``.
CRITICAL_PATH_CATEGORIES = (
    "cpu",
    "cpu_runtime",
    "cpu_idle",
    "launch_delay",
    "sync",
    "gpu_compute",
    "gpu_communication",
    "gpu_memory",
    "gpu_other",
    "gpu_gap",
    "stream_wait",
    "wait_other_rank",
)


# ---------------------------------------------------------------------- output
_EDGE_CATEGORY = {
    IDLE: "cpu_idle",
    LAUNCH: "launch_delay",
    STREAM: "gpu_gap",
    STREAM_WAIT: "stream_wait",
    INFERRED_WAIT: "stream_wait",
    INFERRED_JOIN: "sync",
    INFERRED_FORK: "sync",
    SYNC: "sync",
    COLLECTIVE: "gpu_communication",
    WAIT: "wait_other_rank",
}


def path_frame(trace: Trace, segs: np.ndarray) -> pd.DataFrame:
    """The path frame from segments in time order (columns: rank, eid, edge, start, end, from_rank)."""
    segs = segs[(segs[:, 4] > segs[:, 3]) | (segs[:, 2] == SPAN)]  # instantaneous hand-overs add nothing
    n = len(segs)
    ranks = segs[:, 0]
    wanted = {int(r): segs[ranks == r, 1] for r in np.unique(ranks).tolist()}
    described = trace.map_ranks(_describe, wanted)
    name = np.empty(n, dtype=object)
    kind = np.empty(n, dtype=object)
    gpu_class = np.empty(n, dtype=object)
    for r, (names, kinds, classes) in described.items():
        if r in wanted:
            at = ranks == r
            name[at], kind[at], gpu_class[at] = names, kinds, classes
    edge = segs[:, 2]
    is_gpu = gpu_class != ""
    category = np.where(
        is_gpu,
        "gpu_" + as_text(gpu_class),
        np.where(np.isin(kind, RUNTIME_KINDS), "cpu_runtime", "cpu"),
    ).astype(object)
    for code, label in _EDGE_CATEGORY.items():
        category[edge == code] = label
    out = pd.DataFrame(
        {
            "rank": ranks,
            "eid": segs[:, 1],
            "name": name,
            "kind": kind,
            "category": category,
            "edge": np.asarray(EDGE_NAMES, dtype=object)[edge] if n else np.empty(0, dtype=object),
            "start_ns": segs[:, 3],
            "end_ns": segs[:, 4],
            "dur_ns": segs[:, 4] - segs[:, 3],
            "from_rank": segs[:, 5],
        }
    )
    return out.astype(CRITICAL_PATH_COLUMNS)


def _describe(trace: Trace, eids: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Names, kinds and GPU classes ("" for CPU events) of the given events of a one-rank trace."""
    (rank,) = trace.ranks
    wanted = np.asarray(eids.get(rank, np.empty(0, dtype=np.int64)), dtype=np.int64)
    ev = trace.rank_data(rank).events
    if not len(wanted):
        empty_obj = np.empty(0, dtype=object)
        return empty_obj, empty_obj.copy(), empty_obj.copy()
    all_eid = ev["eid"].to_numpy()
    row_of = np.full(int(all_eid.max()) + 1, -1, dtype=np.int64)
    row_of[all_eid] = np.arange(len(all_eid))
    rows = row_of[wanted]

    def column(col: str, missing: str) -> np.ndarray:
        cat = ev[col].array
        codes = np.asarray(cat.codes)[rows]
        values = np.asarray(cat.categories, dtype=object)
        return np.where(codes >= 0, values[np.maximum(codes, 0)] if len(values) else missing, missing)

    return column("name", ""), column("kind", ""), column("gpu_class", "")


def category_times(path: pd.DataFrame) -> pd.DataFrame:
    total = int(path["dur_ns"].sum())
    sums = path.groupby("category")["dur_ns"].sum()
    times = np.array([int(sums.get(c, 0)) for c in CRITICAL_PATH_CATEGORIES], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(total > 0, 100.0 * times / max(total, 1), np.nan)
    out = pd.DataFrame({"category": list(CRITICAL_PATH_CATEGORIES), "time_ns": times, "time_pct": pct})
    return out.astype(CATEGORY_COLUMNS)
