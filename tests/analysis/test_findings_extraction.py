"""findings.extraction helpers against their plain definitions (random inputs, exact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jupyter_traceview.analysis.findings.extraction import _codes_in, _top_names


def _top_names_by_definition(codes: np.ndarray, categories: pd.Index, rows: np.ndarray, k: int) -> list[list[object]]:
    """Every named row counted, sorted by count (descending) then name, the first k."""
    counts: dict[str, int] = {}
    for r in rows.tolist():
        if r >= 0 and codes[r] >= 0:
            name = str(categories[codes[r]])
            counts[name] = counts.get(name, 0) + 1
    return [[n, m] for n, m in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@pytest.mark.parametrize("seed", range(40))
def test_top_names_as_defined(seed: int) -> None:
    rng = np.random.default_rng(seed)
    categories = pd.Index([f"op{i:03d}" for i in rng.permutation(300)])
    m = int(rng.integers(1, 300))
    codes = rng.integers(-1, m, size=500).astype(np.int16)  # stored codes, -1: no name
    rows = rng.integers(-1, 500, size=int(rng.integers(0, 120)))
    for k in (1, 2, 3, 7):
        assert _top_names(codes, categories, rows, k) == _top_names_by_definition(codes, categories, rows, k)


def test_codes_in_as_isin() -> None:
    rng = np.random.default_rng(1)
    categories = pd.Index(["a", "b", "c", "d", "e"])
    codes = rng.integers(-1, 5, size=1000).astype(np.int8)
    for values in (["b", "e"], ["x"], [], ["a", "x", "d"], ["e", "d", "c", "b", "a"], ["a", "a", "b", "c", "d"]):
        want = np.isin(codes, categories.get_indexer(values)[categories.get_indexer(values) >= 0])
        assert np.array_equal(_codes_in(codes, categories, values), want)


def test_rank_facts_do_not_depend_on_the_activities_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """rank_facts reads activities in start order as they come (no sort, no gathers) and
    sorts them otherwise: the same facts for the activities shuffled, on the sample."""
    import jupyter_traceview as tv
    from jupyter_traceview.analysis import _gpu
    from jupyter_traceview.analysis.findings import extraction

    trace = tv.load(tv.sample_path(), cache=False, progress=False)
    rng = np.random.default_rng(11)
    for r in trace.ranks[:3]:
        one = trace.select(ranks=r)
        want = extraction.rank_facts(one, 10_000, 50_000)
        acts = _gpu.activities(one, r, work_only=True)
        assert bool((acts.ts[1:] >= acts.ts[:-1]).all())  # the path taken: as they come
        perm = rng.permutation(len(acts))
        fields = ("ts", "end", "cls", "stream", "name", "launch_eid", "rows")
        shuffled = _gpu.Activities(**{f: getattr(acts, f)[perm] for f in fields}, names=acts.names)
        assert not bool((shuffled.ts[1:] >= shuffled.ts[:-1]).all())
        monkeypatch.setattr(extraction, "activities", lambda *a, shuffled=shuffled, **k: shuffled)
        got = extraction.rank_facts(one, 10_000, 50_000)
        monkeypatch.undo()
        assert got == want and want is not None and want["host_wait_gaps"] > 0
