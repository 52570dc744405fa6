"""HTA 0.5.0's rules, applied explicitly to our data, to reproduce HTA's numbers.

Where our analyses differ from Holistic Trace Analysis on purpose (``docs/semantics.md``),
a test shows both sides: our number, and HTA's number reproduced by applying HTA's rule to
our tables. Each rule here is one of HTA's loading or analysis rules, as read in HTA's
code (0.5.0, the PyPI release), switchable on its own so a test can name the
rule that makes the difference.

HTA's reference outputs are in ``tests/golden/hta/<folder>/<analysis>.csv`` (written by
``scripts/hta_reference.py``); times there are microseconds.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import jupyter_traceview as tv
from jupyter_traceview.model.rank_data import RankData, RankMeta
from tests.analysis.hta_ops import hta_kept

HTA_DIR = Path(__file__).resolve().parents[1] / "golden" / "hta"
_GPU_KINDS = ["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"]
_WORK_KINDS = ["kernel", "gpu_memcpy", "gpu_memset"]


def hta_csv(folder: str, name: str) -> pd.DataFrame | None:
    """HTA's output ``name`` (e.g. ``temporal_breakdown``) on ``folder``; None where HTA failed."""
    p = HTA_DIR / folder / f"{name}.csv"
    return pd.read_csv(p) if p.exists() else None


@dataclass(frozen=True)
class Rules:
    """Which of HTA's rules to apply (all of them by default)."""

    #: With >= 2 distinct ProfilerStep names, keep only GPU activities launched before the
    #: start of each rank's last ProfilerStep (HTA's ``include_last_profiler_step=False``).
    drop_last_step: bool = True
    #: ns-resolution traces: start rounded up, end rounded down to the microsecond.
    round_to_us: bool = True
    #: With ``round_to_us``, an event shorter than a microsecond that starts and ends inside
    #: one gets -1 us, which HTA keeps: its sums per kernel and its idle and temporal
    #: breakdowns count it (the sub-us memsets of an H200 trace, ``h200_train``); its
    #: breakdown by kernel type merges intervals, where it adds nothing (False).
    negative_durations: bool = True
    #: Synchronisation records (Stream/Event/Context Sync) are GPU time (non-compute), as
    #: every event with a stream is to HTA's temporal breakdown.
    syncs_are_work: bool = False
    #: ``Stream Wait Event`` is COMPUTATION (HTA 0.5.0's classifier).
    wait_event_is_compute: bool = False
    #: CPU events that carry a ``stream`` argument (Triton/Inductor kernels' cpu_op) are GPU
    #: compute events (HTA selects GPU events by ``stream != -1``).
    stream_cpu_ops: bool = False


#: The rules of HTA's temporal breakdown, comm/comp overlap, kernel breakdown, idle breakdown.
TEMPORAL = Rules(syncs_are_work=True, wait_event_is_compute=True, stream_cpu_ops=True)
OVERLAP = Rules(wait_event_is_compute=True, stream_cpu_ops=True)
KERNELS = Rules(wait_event_is_compute=True, stream_cpu_ops=True)
IDLE = Rules()


def _raw_events(path: str) -> list[dict]:
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _stream_cpu_ops(meta: RankMeta) -> set[tuple[str, int]]:
    """(name, ts_ns) of CPU events whose args carry an integer ``stream`` (HTA: GPU events)."""
    out = set()
    for e in _raw_events(meta.path):
        a = e.get("args") or {}
        if e.get("cat") in _GPU_KINDS or e.get("ph") != "X" or "stream" not in a:
            continue
        try:
            stream = int(a["stream"])
        except (TypeError, ValueError):
            continue  # HTA: a stream it cannot convert is -1
        if stream != -1:
            out.add((e["name"], _to_ns(e["ts"], meta.base_time_ns)))
    return out


def _to_ns(ts_us: float, base_ns: int) -> int:
    whole = int(np.floor(ts_us))
    return base_ns + whole * 1000 + round((ts_us - whole) * 1000)


def first_event_ts_ns(meta: RankMeta) -> int:
    """Start of the first event HTA keeps from the file (its row 0): HTA's idle breakdown
    uses it as the launch time of GPU activities whose launch is not in the trace."""
    for e in _raw_events(meta.path):
        if e.get("dur") is not None and e.get("cat") is not None and e.get("cat") != "Trace":
            return _to_ns(e["ts"], meta.base_time_ns)
    raise ValueError(f"{meta.path}: no complete event")


def hta_view(trace: tv.Trace, rules: Rules) -> tv.Trace:
    """Our trace as HTA's analyses see it, under ``rules``."""
    kept = hta_kept(trace) if rules.drop_last_step else None
    out = []
    for r in trace.ranks:
        d = trace.rank_data(r)
        ev = d.events.copy()
        meta = d.meta
        is_gpu = ev["kind"].isin(_GPU_KINDS).to_numpy()
        keep = np.ones(len(ev), dtype=bool)
        if kept is not None and r in kept:
            keep = kept[r]
        if rules.stream_cpu_ops:
            marked = _stream_cpu_ops(meta)
            if marked:
                pairs = list(zip(ev["name"].astype(str), ev["ts_ns"], strict=True))
                hit = np.array([(n, int(t)) in marked for n, t in pairs]) & ~is_gpu
                ev["kind"] = ev["kind"].astype(str).where(~hit, "kernel").astype(ev["kind"].dtype)
                ev["gpu_class"] = ev["gpu_class"].astype(object).where(~hit, "compute").astype(ev["gpu_class"].dtype)
                ev.loc[hit, "stream"] = -2  # a stream of its own
        name = ev["name"].astype(str)
        if rules.wait_event_is_compute:
            wait = (name == "Stream Wait Event").to_numpy()
            ev["gpu_class"] = ev["gpu_class"].astype(object).where(~wait, "compute").astype(ev["gpu_class"].dtype)
        if rules.syncs_are_work:
            sync = (ev["gpu_class"].astype(object) == "other").to_numpy()
            ev["gpu_class"] = ev["gpu_class"].astype(object).where(~sync, "memory").astype(ev["gpu_class"].dtype)
        if rules.round_to_us and meta.ts_precision == "ns":
            rel = ev["ts_ns"].to_numpy() - meta.base_time_ns
            end = rel + ev["dur_ns"].to_numpy()
            start_us = -(-rel // 1000)
            end_us = end // 1000
            ev["ts_ns"] = start_us * 1000 + meta.base_time_ns
            dur_us = end_us - start_us
            ev["dur_ns"] = (dur_us if rules.negative_durations else np.maximum(dur_us, 0)) * 1000
        ev = ev.loc[keep].reset_index(drop=True)
        out.append(RankData(meta=meta, events=ev, gpu_args=d.gpu_args, comms=d.comms))
    return tv.Trace(out, classifier=trace.classifier, source=trace.source, _classified=True)


def hta_idle(
    view: tv.Trace, rank: int, *, kernel_wait_us: float = 30, missing_launch: str = "first_event"
) -> pd.DataFrame:
    """HTA's idle-time rules on our data: per stream, the gap to the *immediately preceding*
    activity (negative when they overlap), every gap counted (zero and negative ones too),
    and HTA's launch-time lookup: an activity whose launch is not in the trace gets the
    start of the file's first event as its launch time (``missing_launch="first_event"``),
    or no launch time (``"unknown"``: never a host wait, our rule).
    Returns rank, stream, idle_category, idle_time (us), count, as HTA's frames."""
    ev = view.rank_data(rank).events
    acts = ev.loc[ev["kind"].isin(_WORK_KINDS)].copy()
    first = first_event_ts_ns(view.meta(rank)) if missing_launch == "first_event" else np.iinfo(np.int64).min
    eids, lid = ev["eid"].to_numpy(), acts["launch_eid"].to_numpy()
    pos = np.minimum(np.searchsorted(eids, lid), len(eids) - 1)
    has = (lid >= 0) & (eids[pos] == lid)
    acts["launch_ts"] = np.where(has, ev["ts_ns"].to_numpy()[pos], first)
    rows = []
    for stream, s in acts.groupby("stream"):
        s = s.sort_values("ts_ns", kind="stable")
        ts = s["ts_ns"].to_numpy()
        end = ts + s["dur_ns"].to_numpy()
        prev_end = np.concatenate(([ts[0]], end[:-1]))  # row 0: no previous activity
        gap = (ts - prev_end).astype(np.float64) / 1000
        gap[0] = np.nan
        host = s["launch_ts"].to_numpy() > prev_end
        host[0] = False
        cat = np.where(host, "host_wait", np.where(gap < kernel_wait_us, "kernel_wait", "other"))
        for c, part in pd.DataFrame({"cat": cat, "gap": gap}).groupby("cat"):
            rows.append((rank, int(stream), c, float(part["gap"].sum()), int(part["gap"].count())))
    return pd.DataFrame(rows, columns=["rank", "stream", "idle_category", "idle_time", "count"])


def hta_others(events: pd.DataFrame, *, num_kernels: int = 10, duration_ratio: float = 0.8) -> pd.DataFrame:
    """HTA's frame 2 of the kernel breakdown for one (rank, kernel type): per-name statistics
    (us), with the names past ``num_kernels`` or past the ``duration_ratio`` quantile of the
    cumulative sums renamed ``others`` and *re-aggregated over per-name totals*."""
    dur = events["dur_ns"] / 1000
    per = (
        pd.DataFrame({"name": events["name"].astype(str), "dur": dur})
        .groupby("name")["dur"]
        .agg(["sum", "max", "min", "std", "mean"])
        .fillna(0)
        .sort_values("sum", ascending=False)
        .reset_index()
    )
    if len(per) <= num_kernels:
        return per
    cum = per["sum"].cumsum()
    q = cum.quantile(duration_ratio)
    per.loc[(cum > q) | (np.arange(len(per)) >= num_kernels), "name"] = "others"
    again = per.groupby("name")["sum"].agg(["sum", "max", "min", "std", "mean"]).fillna(0).reset_index()
    return again
