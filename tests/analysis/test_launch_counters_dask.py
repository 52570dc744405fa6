"""Launch stats, queue length, memory bandwidth and counter traces on engine="dask": same results."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv

distributed = pytest.importorskip("distributed")


@pytest.fixture
def client(dask_client: object) -> object:
    return dask_client


def test_same_results_on_dask(client: object, dlrm: tv.Trace, tmp_path: Path) -> None:
    trace = tv.load(tv.sample_path(), engine="dask", client=client, cache=False)
    t0 = dlrm.t0_ns
    window = (t0 + 2_000_000, t0 + 9_000_000)
    cases = [
        (tv.kernel_launch_stats, {}),
        (tv.kernel_launch_stats, {"per": "rank", "outlier_rule": "tukey"}),
        (tv.queue_length, {"ranks": [1, 2], "time_range": window}),
        (tv.queue_length, {"per": "stream"}),
        (tv.memory_bandwidth, {"iterations": [10]}),
        (tv.memory_bandwidth, {"per": "kind"}),
    ]
    for fn, kw in cases:
        pd.testing.assert_frame_equal(fn(trace, **kw), fn(dlrm, **kw), obj=f"{fn.__name__}({kw})")
    (a,) = tv.write_counters_trace(trace, tmp_path / "dask", ranks=[4])
    (b,) = tv.write_counters_trace(dlrm, tmp_path / "serial", ranks=[4])
    assert gzip.decompress(a.read_bytes()) == gzip.decompress(b.read_bytes())
