from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache_key

#: Jupyter server fixtures (jp_fetch, jp_root_dir, ...) for the server extension's tests.
pytest_plugins = ["pytest_jupyter.jupyter_server"]

DATA = Path(__file__).parent / "data"

#: Folders of real Kineto traces used by the tests (the DLRM set is the bundled sample).
KINETO_FOLDERS = {
    "dlrm_8rank_v100": tv.sample_path(),
    "hta_dlrm_2of128_ranks": DATA / "hta_dlrm_2of128_ranks",
    "h100_bert_small": DATA / "h100_bert_small",
    "hta_alexnet": DATA / "hta_alexnet",
    "hta_cpu_only": DATA / "hta_cpu_only",
    "hta_mi250_rocm": DATA / "hta_mi250_rocm",
    "hta_triton": DATA / "hta_triton",
    "h200_train": DATA / "h200_cuda" / "train",
}


def analysis_scopes(trace: tv.Trace) -> list[dict[str, Any]]:
    """Keyword arguments that narrow ``trace`` for an analysis: none, the middle half of its
    time, its iterations after the first and its ranks after the first (where it has two)."""
    lo = trace.t0_ns
    hi = max(int((e["ts_ns"] + e["dur_ns"]).max()) for e in (trace.events(r) for r in trace.ranks))
    steps = sorted(set(trace.iterations["step"].tolist())) if len(trace.iterations) else []
    out: list[dict[str, Any]] = [{}, {"time_range": (lo + (hi - lo) // 4, lo + 3 * (hi - lo) // 4)}]
    if len(steps) >= 2:
        out.append({"iterations": steps[1:]})
    if len(trace.ranks) >= 2:
        out.append({"ranks": list(trace.ranks)[1:]})
    return out


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never touch the user's cache folder."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setattr(cache_key, "default_cache_dir", lambda: cache)


@pytest.fixture(scope="session")
def dask_client() -> Iterator[object]:
    """One two-worker LocalCluster for every dask test of the session."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def dlrm() -> tv.Trace:
    return tv.load(tv.sample_path(), cache=False)


@pytest.fixture(scope="session")
def _dlrm_findings_once() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(tv.load(tv.sample_path(), cache=False, progress=False))


@pytest.fixture
def dlrm_findings(_dlrm_findings_once: pd.DataFrame) -> pd.DataFrame:
    """``tv.findings`` of the bundled sample loaded without the cache (computed in one process),
    once a session (set up before a test's own fixtures and patches); each test gets its own
    deep copy."""
    return _dlrm_findings_once.copy(deep=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
