"""The call-tree icicle and the memory records' operators on an N-deep chain (issue 37).

``python benchmarks/deep_chain.py N [--old]``: the icicle layout (``icicle_layout``) of an
N-deep chain of calls, and the innermost and outermost operators (``op_rows``) of two
records at its bottom. ``--old`` runs the level-by-level code they replace: the numpy
layout (``_loops`` off) and a walk of every level (``WALK_LEVELS`` unbounded). Prints
seconds per part. Synthetic frames, no trace file: only these loops are timed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from jupyter_traceview.analysis import loops  # noqa: E402
from jupyter_traceview.analysis.memory import _records  # noqa: E402
from jupyter_traceview.charts.call_tree import icicle_layout  # noqa: E402


def main(n: int, old: bool) -> None:
    if old:
        loops.native = None
        _records.WALK_LEVELS = 10**12
    ids = np.arange(n)
    tree = pd.DataFrame({"node_id": ids, "parent_id": ids - 1, "depth": ids, "inclusive_ns": n - ids})
    t = time.perf_counter()
    icicle_layout(tree)
    print(f"icicle_layout, {n} deep{' (old)' if old else ''}: {time.perf_counter() - t:.3f} s")
    kinds = np.array(["cpu_op", "cpu_instant_event"])
    ev = pd.DataFrame(
        {
            "eid": np.arange(n + 2, dtype=np.int64),
            "parent_eid": np.r_[-1, np.arange(n - 1), n - 1, 0],
            "kind": pd.Categorical(kinds[np.r_[np.zeros(n, dtype=np.int64), 1, 1]], categories=kinds),
        }
    )
    t = time.perf_counter()
    if old:  # the outermost as memory.operators found it: the last of all the levels' pairs
        _records.op_rows(ev, np.array([n, n + 1]), all_levels=True, kinds=("cpu_op",))
    else:
        _records.op_rows(ev, np.array([n, n + 1]), outermost=True, kinds=("cpu_op",))
    print(f"op_rows outermost, {n} deep{' (old)' if old else ''}: {time.perf_counter() - t:.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]), "--old" in sys.argv[2:])
