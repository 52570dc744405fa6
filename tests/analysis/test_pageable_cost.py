"""What a pageable copy costs (docs/semantics.md, ``pageable_copies``): its time beyond the same
copy at the pinned rate of its direction (measured on pinned copies, else the device's host
link, else PCIe Gen3), plus the GPU idle its blocking call causes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis.perfmodel.links import host_link
from tests import kineto_builder as kb

GEMM = "volta_sgemm_128x64_nn"
MIB64 = 64 << 20  # 67,108,864 bytes
H100 = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]


def busy_copy_events(copy_us: float = 8000, pinned: tuple[int, float] | None = None) -> list[dict[str, Any]]:
    """A GEMM [0, 100), a 64 MiB pageable HtoD copy [100, 100 + copy_us) whose call blocks the
    host, and a GEMM right after it, launched before the copy's call: the GPU never idles, so
    all the cost is the copy's slowness. ``pinned=(bytes, us)`` adds a pinned HtoD copy at the end."""
    end = 100 + copy_us
    ev: list[dict[str, Any]] = [kb.step(1, 0, end + 2000)]
    ev += kb.launch(GEMM, 0, 0, 100, corr=1)
    ev += kb.launch(GEMM, 40, end, 100, corr=2)
    ev.append(kb.runtime("cudaMemcpyAsync", 80, end - 80, corr=3))
    ev.append(kb.memcpy(100, copy_us, corr=3, nbytes=MIB64, pageable=True))
    if pinned is not None:
        nbytes, us = pinned
        ev.append(kb.runtime("cudaMemcpyAsync", end + 50, 5, corr=4))
        ev.append(kb.memcpy(end + 100, us, corr=4, nbytes=nbytes))
    return ev


def pageable(tmp: Path, events: list[dict[str, Any]], **doc: Any) -> pd.Series:
    kb.write(tmp / "t.json", kb.doc(events, **doc))
    f = tv.findings(tv.load(tmp / "t.json", cache=False, progress=False))
    rows = f[f["id"] == "pageable_copies"]
    assert len(rows) == 1, list(f["id"])
    return rows.iloc[0]


def test_a_slow_copy_that_keeps_the_gpu_busy_fires(tmp_path: Path) -> None:
    # H100: PCIe Gen5 x16, 63 GB/s nominal x 0.8 = 50.4 GB/s pinned. Pinned time of 64 MiB:
    # 10 us (fixed: tiny_kernel_ns) + 67,108,864 / 50.4 ns = 10,000 + 1,331,525.08 ns; the copy
    # took 8,000,000 ns: 6,658,474.92 ns slower. No GPU idle: time at stake 6,658,475 ns.
    row = pageable(tmp_path, busy_copy_events(), deviceProperties=H100)
    ev = row["evidence"]["per_rank"][0]
    assert ev["idle_ns"] == 0
    assert ev["slow_ns"] == 6_658_475 and row["time_at_stake_ns"] == 6_658_475
    assert ev["pinned_gbps_by_kind"]["HtoD"][0] == pytest.approx(50.4)
    assert "slower than pinned" in row["title"] and "PCIe Gen5 x16" in row["detail"]


def test_the_pinned_rate_measured_on_the_trace_comes_first(tmp_path: Path) -> None:
    # A pinned 8 MiB HtoD copy in 400 us: 8,388,608 / 400,000 = 20.97152 bytes/ns. Pinned time
    # of 64 MiB: 10,000 + 67,108,864 / 20.97152 = 10,000 + 3,200,000 ns; slower by
    # 8,000,000 - 3,210,000 = 4,790,000 ns (the device's link is not used: measured first).
    row = pageable(tmp_path, busy_copy_events(pinned=(8 << 20, 400)), deviceProperties=H100)
    ev = row["evidence"]["per_rank"][0]
    assert ev["slow_ns"] == 4_790_000
    assert "measured on 1 pinned HtoD copies" in row["detail"]


def test_small_pinned_copies_do_not_measure_the_link(tmp_path: Path) -> None:
    # A 1 MiB pinned copy is under 4 MiB (latency-bound): the device's link is used, as above.
    row = pageable(tmp_path, busy_copy_events(pinned=(1 << 20, 400)), deviceProperties=H100)
    assert row["evidence"]["per_rank"][0]["slow_ns"] == 6_658_475


def test_an_unknown_device_assumes_the_slowest_link(tmp_path: Path) -> None:
    # "Test GPU": no link known, PCIe Gen3 x16 (15.75 x 0.8 = 12.6 GB/s): 67,108,864 / 12.6 =
    # 5,326,100.32 ns + 10,000; slower by 8,000,000 - 5,336,100.32 = 2,663,899.68 ns.
    row = pageable(tmp_path, busy_copy_events())
    assert row["evidence"]["per_rank"][0]["slow_ns"] == 2_663_900
    assert "the slowest link in use" in row["detail"]


def test_a_copy_at_the_pinned_rate_costs_nothing(tmp_path: Path) -> None:
    # 64 MiB in 1,000 us is 67.1 GB/s, faster than Gen5's 50.4: nothing is lost to the copy,
    # and the GPU never idles: time at stake 0, under min_time_at_stake_pct, so no finding.
    kb.write(tmp_path / "t.json", kb.doc(busy_copy_events(copy_us=1000), deviceProperties=H100))
    f = tv.findings(tv.load(tmp_path / "t.json", cache=False, progress=False))
    assert "pageable_copies" not in set(f["id"])


@pytest.mark.parametrize(
    ("name", "link"),
    [
        ("NVIDIA H200", "PCIe Gen5 x16"),
        ("NVIDIA H20", "PCIe Gen5 x16"),
        ("NVIDIA H100 80GB HBM3", "PCIe Gen5 x16"),
        ("AMD Instinct MI300X VF", "PCIe Gen5 x16"),
        ("NVIDIA A100-PG509-200", "PCIe Gen4 x16"),
        ("NVIDIA A10", "PCIe Gen4 x16"),
        ("AMD Instinct MI250X", "PCIe Gen4 x16"),
        ("Tesla V100-SXM2-32GB", "PCIe Gen3 x16"),
        ("NVIDIA GH200 480GB", "NVLink-C2C"),
    ],
)
def test_host_links_by_name(name: str, link: str) -> None:
    found = host_link(name)
    assert found is not None and found.name == link


def test_unknown_names_have_no_link() -> None:
    assert host_link("Test GPU") is None and host_link("AMD Radeon Graphics") is None and host_link("") is None
