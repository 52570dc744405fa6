"""The dashboard reads and keeps the analyses' per-rank results with the cache entries.

``DashboardData`` computes each analysis (and the headline) inside a scope of shared per-rank
facts (``dashboard/data._kept``): a trace loaded through the cache gets, from its second
opening on (or from its load, ``tv.load(..., prepare=)``), the per-rank results kept there
instead of computing them. Pinned here: every tab's frames, figures, findings and tables
are those computed without a cache, both when the results are computed and when they are
read back; the second opening computes none of the kept per-rank functions the Overview
needs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.dashboard.data import DashboardData
from jupyter_traceview.model.trace import Trace
from tests.analysis.test_persisted_facts import KEPT
from tests.conftest import KINETO_FOLDERS


def _load(path: Path | str, cache: Path | bool) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(path, cache=cache, progress=False)


def _opened(trace: tv.Trace) -> tuple[DashboardData, dict[str, Any]]:
    data = DashboardData(trace)
    data.payload()
    parts = {}
    for tab, _ in data.tabs:
        out = data.tab(tab)
        parts[tab] = {k: out.get(k) for k in ("figures", "findings", "tables", "notes")}
    return data, parts


def _same(a: DashboardData, b: DashboardData) -> None:
    assert a.headline == b.headline
    assert a._frames.keys() == b._frames.keys()
    for key, frame in a._frames.items():
        other = b._frames[key]
        if isinstance(frame, pd.DataFrame):
            pd.testing.assert_frame_equal(frame, other, check_exact=True)
        else:
            assert repr(frame) == repr(other), key


def _calls(fn: Callable[[], object]) -> list[str]:
    seen: list[str] = []
    original = Trace.map_ranks

    def recording(self: Trace, f: Callable[..., Any], /, *args: Any, **kwargs: Any) -> dict[int, Any]:
        seen.append(f.__name__)
        return original(self, f, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Trace, "map_ranks", recording)
        fn()
    return seen


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small", "hta_cpu_only"])
def test_every_tab_is_the_same_computed_kept_or_read_back(folder: str, tmp_path: Path) -> None:
    path = KINETO_FOLDERS[folder]
    alone, alone_parts = _opened(_load(path, cache=False))
    first, first_parts = _opened(_load(path, cache=tmp_path))  # computes and keeps
    assert list(tmp_path.glob("*/r*.facts"))
    second, second_parts = _opened(_load(path, cache=tmp_path))  # reads back
    assert first_parts == alone_parts == second_parts
    _same(first, alone)
    _same(second, alone)


def test_the_second_opening_computes_no_kept_per_rank_function_of_the_overview(tmp_path: Path) -> None:
    _opened(_load(tv.sample_path(), cache=tmp_path))
    data = DashboardData(_load(tv.sample_path(), cache=tmp_path))
    calls = _calls(lambda: (data.payload(), data.tab("overview")))
    assert not set(calls) & KEPT, calls
