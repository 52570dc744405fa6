"""HTA 0.5's loading rules, applied to our tables, for the operator/annotation parity tests.

HTA (``/work/shared/HTA_SEMANTICS.md`` §0) drops the last ProfilerStep when the trace has
two or more step names, and on ns-resolution traces rounds every start up and every end
down to the microsecond. :func:`hta_view` rebuilds a trace with both rules applied, so that
a test compares like with like; each difference that remains is one of HTA's analysis
rules, reproduced by the test that needs it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import jupyter_traceview as tv
from jupyter_traceview.model.rank_data import RankData

GPU_ACTIVITY = ["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"]
GOLDEN_HTA = Path(__file__).resolve().parents[1] / "golden" / "hta"


def hta_csv(folder: str, name: str) -> pd.DataFrame | None:
    """HTA's output ``name`` on ``folder`` (None where HTA failed or returned nothing)."""
    p = GOLDEN_HTA / folder / f"{name}.csv"
    if not p.exists() or p.stat().st_size <= 2:
        return None
    return pd.read_csv(p)


def rebuild(trace: tv.Trace, frames: dict[int, pd.DataFrame]) -> tv.Trace:
    out = []
    for r in trace.ranks:
        d = trace.rank_data(r)
        ev = frames.get(r, d.events)
        eids = ev["eid"].to_numpy()
        out.append(
            RankData(
                meta=d.meta,
                events=ev.reset_index(drop=True),
                gpu_args=d.gpu_args.loc[d.gpu_args["eid"].isin(eids)].reset_index(drop=True),
                comms=d.comms.loc[d.comms["eid"].isin(eids)].reset_index(drop=True),
            )
        )
    return tv.Trace(out, classifier=trace.classifier, source=trace.source, _classified=True)


def hta_kept(trace: tv.Trace) -> dict[int, np.ndarray] | None:
    """Per rank, the rows HTA keeps with ``include_last_profiler_step=False`` (None: all).

    With >= 2 step names (names containing ``ProfilerStep``, over all ranks), per rank
    ``S`` = the latest start of an event with a step name among HTA's "CPU" events (all but
    those with a stream and a correlation id, our GPU activities: so the GPU-side
    ``gpu_user_annotation`` ranges of recent torch count, and ``S`` is their start when the
    GPU runs behind), then HTA keeps those "CPU" events starting before ``S`` and the GPU
    activities launched by a kept call.
    """
    names: set[str] = set()
    for r in trace.ranks:
        names |= {str(n) for n in trace.rank_data(r).events["name"].cat.categories if "ProfilerStep" in str(n)}
    if len(names) < 2:
        return None
    kept = {}
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        device = ev["kind"].isin(GPU_ACTIVITY).to_numpy()
        steps = ~device & ev["name"].astype(str).isin(names).to_numpy()
        if not steps.any():
            continue
        last = int(ev["ts_ns"].to_numpy()[steps].max())
        keep_cpu = ~device & (ev["ts_ns"].to_numpy() < last)
        keep_dev = device & np.isin(ev["launch_eid"].to_numpy(), ev["eid"].to_numpy()[keep_cpu])
        kept[r] = keep_cpu | keep_dev
    return kept


def drop_last_step(trace: tv.Trace) -> tv.Trace:
    """HTA's ``include_last_profiler_step=False`` (:func:`hta_kept`) applied to the trace."""
    kept = hta_kept(trace)
    if kept is None:
        return trace
    return rebuild(trace, {r: trace.rank_data(r).events.loc[k] for r, k in kept.items()})


def round_to_us(trace: tv.Trace) -> tv.Trace:
    """HTA on ns-resolution traces: start rounded up, end rounded down, to the microsecond
    of the file's own clock (a negative duration, which HTA keeps, becomes 0 here)."""
    frames = {}
    for r in trace.ranks:
        meta = trace.meta(r)
        if meta.ts_precision != "ns":
            continue
        ev = trace.rank_data(r).events.copy()
        base = meta.base_time_ns
        rel = ev["ts_ns"].to_numpy() - base
        start = -((-rel) // 1000) * 1000
        end = ((rel + ev["dur_ns"].to_numpy()) // 1000) * 1000
        ev["ts_ns"] = start + base
        ev["dur_ns"] = np.maximum(end - start, 0)
        # Keep the schema's row order, (start, -duration), parents before children.
        frames[r] = ev.iloc[np.lexsort((ev["eid"].to_numpy(), -ev["dur_ns"].to_numpy(), ev["ts_ns"].to_numpy()))]
    return rebuild(trace, frames) if frames else trace


def hta_view(trace: tv.Trace) -> tv.Trace:
    """The trace as HTA 0.5's analyses see it (last step dropped, us rounding)."""
    return round_to_us(drop_last_step(trace))


#: Launch calls HTA 0.5's get_aten_op_kernels_and_delay follows (KERNEL_LAUNCH_CATEGORY_PATTERN).
HTA_LAUNCH = r"(?:cuda.*LaunchKernel)|(?:cuLaunchKernel)|(?:^runFunction)"


def hta_aten_op_kernels(trace: tv.Trace, *, ties: str = "outer") -> pd.DataFrame:
    """HTA 0.5's ``get_aten_op_kernels_and_delay``, rewritten over our tables (test-sized).

    Per launch call (name matching :data:`HTA_LAUNCH`) that launched a kernel: the ``aten::``
    op of *any* thread whose span contains the call and which started last (``ties``: at
    equal starts HTA's sort keeps the first in trace order, the enclosing op, ``"outer"``;
    ``"inner"`` takes the nested one). Per op instance: its kernels in launch order, the
    delay op start -> first launch, and first launch -> its kernel. Then per (op name,
    kernel sequence): instances and mean delays (us). HTA accumulates its statistics over
    the ranks it has processed, so rank k's rows pool ranks 0..k: so do these.
    """
    per_instance = []
    for r in trace.ranks:
        ev = trace.rank_data(r).events
        names = ev["name"].astype(str)
        kern = ev.loc[(ev["kind"] == "kernel").to_numpy() & (ev["launch_eid"].to_numpy() >= 0)]
        row_of = pd.Series(np.arange(len(ev)), index=ev["eid"].to_numpy())
        lrows = row_of.reindex(kern["launch_eid"].to_numpy()).to_numpy()
        ok = ~np.isnan(lrows)
        kern, lrows = kern.loc[ok], lrows[ok].astype(np.int64)
        is_launch = names.str.contains(HTA_LAUNCH, regex=True).to_numpy()[lrows]
        kern, lrows = kern.loc[is_launch], lrows[is_launch]
        ops = np.flatnonzero(names.str.startswith("aten::").to_numpy())
        ts = ev["ts_ns"].to_numpy()
        end = ts + ev["dur_ns"].to_numpy()
        o_ts, o_end = ts[ops], end[ops]
        contains = (o_ts[None, :] <= ts[lrows][:, None]) & (o_end[None, :] >= end[lrows][:, None])
        has = contains.any(axis=1)
        latest = np.where(contains, o_ts[None, :], np.iinfo(np.int64).min).max(axis=1)
        cand = contains & (o_ts[None, :] == latest[:, None])
        if ties == "outer":
            pick = np.argmax(cand, axis=1)
        else:
            pick = cand.shape[1] - 1 - np.argmax(cand[:, ::-1], axis=1)
        op_rows = ops[pick]
        sel = np.flatnonzero(has)
        rows = pd.DataFrame(
            {
                "rank": r,
                "op": op_rows[sel],
                "aten_op_name": names.to_numpy()[op_rows[sel]],
                "launch_ts": ts[lrows[sel]],
                "op_ts": ts[op_rows[sel]],
                "kernel_ts": kern["ts_ns"].to_numpy()[sel],
                "kernel": kern["name"].astype(str).to_numpy()[sel],
            }
        ).sort_values(["op", "launch_ts"], kind="stable")
        inst = rows.groupby("op", sort=False).agg(
            aten_op_name=("aten_op_name", "first"),
            kernel_sequence=("kernel", " -> ".join),
            first_launch_delay=("launch_ts", "first"),
            op_ts=("op_ts", "first"),
            kernel_ts=("kernel_ts", "first"),
        )
        inst["d1"] = (inst["first_launch_delay"] - inst["op_ts"]) / 1000
        inst["d2"] = (inst["kernel_ts"] - inst["first_launch_delay"]) / 1000
        inst["rank"] = r
        per_instance.append(inst)
    allinst = pd.concat(per_instance, ignore_index=True)
    out = []
    for r in trace.ranks:
        g = (
            allinst.loc[allinst["rank"] <= r]
            .groupby(["aten_op_name", "kernel_sequence"])
            .agg(
                occurrence_count=("d1", "size"),
                avg_aten_op_launch_delay=("d1", "mean"),
                avg_runtime_delay=("d2", "mean"),
            )
            .reset_index()
        )
        g.insert(0, "rank", r)
        out.append(g)
    return pd.concat(out, ignore_index=True)


def pool_ranks(ours: pd.DataFrame) -> pd.DataFrame:
    """Our ``op_kernels(by="sequence")`` rows in HTA's shape, rank k pooling ranks 0..k."""
    out = []
    for r in sorted(ours["rank"].unique()):
        o = ours.loc[ours["rank"] <= r]
        w1 = o["op_launch_delay_ns"] * o["count"]
        w2 = o["runtime_delay_ns"] * o["count"]
        g = (
            o.assign(w1=w1, w2=w2)
            .groupby(["operator", "sequence"])
            .agg(occurrence_count=("count", "sum"), w1=("w1", "sum"), w2=("w2", "sum"))
            .reset_index()
        )
        g["avg_aten_op_launch_delay"] = g["w1"] / g["occurrence_count"] / 1000
        g["avg_runtime_delay"] = g["w2"] / g["occurrence_count"] / 1000
        g = g.rename(columns={"operator": "aten_op_name", "sequence": "kernel_sequence"}).drop(columns=["w1", "w2"])
        g.insert(0, "rank", r)
        out.append(g)
    return pd.concat(out, ignore_index=True)


def assert_same_rows(
    ours: pd.DataFrame,
    ref: pd.DataFrame,
    key: list[str],
    values: dict[str, str],
    *,
    rtol: float = 0.01,
    atol: float = 0.0,
) -> None:
    """Every row of ``ref`` is in ``ours`` and back, and the ``values`` columns
    (ours -> ref name) agree within ``rtol`` (relative) or ``atol``."""
    m = ours.merge(ref, on=key, how="outer", indicator=True, suffixes=("_ours", "_ref"))
    missing = m.loc[m["_merge"] != "both", [*key, "_merge"]]
    assert missing.empty, f"rows on one side only:\n{missing.head(10).to_string()}"
    for mine, theirs in values.items():
        a = m[mine if mine != theirs else f"{mine}_ours"].to_numpy(dtype=float)
        b = m[theirs if mine != theirs else f"{theirs}_ref"].to_numpy(dtype=float)
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        assert not bad.any(), (
            f"{mine} vs HTA's {theirs} differ:\n{m.loc[bad, key + [c for c in m.columns if c.startswith(mine) or c.startswith(theirs)]].head(10).to_string()}"
        )
