"""The analyses on engine="dask": per-rank work runs on the workers, results are identical."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import pytest

import jupyter_traceview as tv

distributed = pytest.importorskip("distributed")

CALLS: dict[str, Callable[..., pd.DataFrame]] = {
    "temporal_breakdown": tv.temporal_breakdown,
    "comm_comp_overlap": tv.comm_comp_overlap,
    "idle_time_breakdown": tv.idle_time_breakdown,
    "kernel_breakdown": tv.kernel_breakdown,
    "kernel_breakdown_type": lambda t, **kw: tv.kernel_breakdown(t, by="type", **kw),
    "kernel_duration_distribution": tv.kernel_duration_distribution,
    "summary": tv.summary,
}


@pytest.fixture(scope="module")
def dask_trace() -> Iterator[tv.Trace]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster)
    yield tv.load(tv.sample_path(), engine="dask", client=client, cache=False)
    client.close()
    cluster.close()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_same_as_in_process(dask_trace: tv.Trace, dlrm: tv.Trace, name: str) -> None:
    fn = CALLS[name]
    pd.testing.assert_frame_equal(fn(dask_trace), fn(dlrm))
    t0 = dlrm.t0_ns
    scope = {"ranks": [1, 6], "time_range": (t0 + 2_000_000, t0 + 9_000_000)}
    pd.testing.assert_frame_equal(fn(dask_trace, **scope), fn(dlrm, **scope))
