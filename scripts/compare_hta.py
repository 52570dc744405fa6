"""Print our numbers next to HTA's on every real trace folder, and HTA's rules applied to ours.

    python scripts/compare_hta.py [FOLDER ...]

HTA's numbers are the reference files in ``tests/golden/hta`` (``scripts/hta_reference.py``
writes them with HTA 0.5.0). The third column of each table applies HTA's rules to our
tables (``tests/analysis/hta_rules.py``): where it equals HTA and ours differs, the
difference is one of those rules, which ``docs/semantics.md`` names for each folder. The
tests in ``tests/analysis`` assert all of this; this script is for reading.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jupyter_traceview as tv  # noqa: E402
from scripts.make_golden import FOLDERS  # noqa: E402
from tests.analysis import hta_rules as hr  # noqa: E402

US = 1000
LABELS = {"COMPUTATION": "compute", "COMMUNICATION": "communication", "MEMORY": "memory"}


def temporal(trace: tv.Trace, folder: str) -> pd.DataFrame | None:
    hta = hr.hta_csv(folder, "temporal_breakdown")
    if hta is None:
        return None
    ours = tv.temporal_breakdown(trace)
    view = tv.temporal_breakdown(hr.hta_view(trace, hr.TEMPORAL))
    rows = []
    for i, r in enumerate(hta["rank"]):
        for col, hcol in [
            ("span_ns", "kernel_time(us)"),
            ("idle_ns", "idle_time(us)"),
            ("compute_ns", "compute_time(us)"),
        ]:
            rows.append(
                (r, col.replace("_ns", " (us)"), ours[col].iloc[i] / US, hta[hcol].iloc[i], view[col].iloc[i] / US)
            )
        for col, hcol in [("idle_pct", "idle_time_pctg"), ("compute_pct", "compute_time_pctg")]:
            rows.append((r, col, round(ours[col].iloc[i], 2), hta[hcol].iloc[i], round(view[col].iloc[i], 2)))
    return pd.DataFrame(rows, columns=["rank", "figure", "ours", "HTA", "HTA rules on ours"])


def overlap(trace: tv.Trace, folder: str) -> pd.DataFrame | None:
    hta = hr.hta_csv(folder, "comm_comp_overlap")
    if hta is None or hta["comp_comm_overlap_pctg"].isna().all():
        return None
    ours = tv.comm_comp_overlap(trace)
    view = tv.comm_comp_overlap(hr.hta_view(trace, hr.OVERLAP))
    return pd.DataFrame(
        {
            "rank": hta["rank"],
            "ours overlap_pct": ours["overlap_pct"].round(2).to_numpy(),
            "HTA": hta["comp_comm_overlap_pctg"],
            "HTA rules on ours": view["overlap_pct"].round(2).to_numpy(),
        }
    )


def by_type(trace: tv.Trace, folder: str) -> pd.DataFrame | None:
    hta = hr.hta_csv(folder, "kernel_breakdown.0")
    if hta is None or hta.empty:
        return None

    def summed(t: tv.Trace) -> pd.Series:
        df = tv.kernel_breakdown(t, by="type")
        return df.groupby(df["kernel_type"].astype(str))["time_ns"].sum() / US

    h = pd.Series(
        hta["sum"].to_numpy(dtype=float),
        index=[" overlapping ".join(LABELS[p] for p in k.split(" overlapping ")) for k in hta["kernel_type"]],
    )
    return pd.DataFrame(
        {"ours (us)": summed(trace), "HTA": h, "HTA rules on ours": summed(hr.hta_view(trace, hr.KERNELS))}
    )


def idle(trace: tv.Trace, folder: str) -> pd.DataFrame | None:
    hta = hr.hta_csv(folder, "idle_time_breakdown.0")
    stats = hr.hta_csv(folder, "idle_time_breakdown.1")
    if hta is None or stats is None:
        return None
    keys = ["rank", "stream", "idle_category"]
    hta = hta.merge(stats[[*keys, "count"]], on=keys)
    ours = tv.idle_time_breakdown(trace).assign(idle_category=lambda d: d["idle_category"].astype(str))
    view = hr.hta_view(trace, hr.IDLE)
    on_view = tv.idle_time_breakdown(view).assign(idle_category=lambda d: d["idle_category"].astype(str))
    out = hta[[*keys, "idle_time", "count"]].rename(columns={"idle_time": "HTA (us)", "count": "HTA n"})
    for name, df in [("ours", ours), ("ours on HTA's events", on_view)]:
        part = df[[*keys, "idle_ns", "count"]].assign(idle_ns=df["idle_ns"] / US)
        part = part.rename(columns={"idle_ns": f"{name} (us)", "count": f"{name} n"})
        out = out.merge(part, on=keys, how="left")
    return out[out["HTA (us)"] != 0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="*", default=sorted(FOLDERS))
    a = p.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    for folder in a.folders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tv.TraceviewWarning)
            trace = tv.load(FOLDERS[folder], cache=False, progress=False)
            for title, fn in [
                ("temporal breakdown", temporal),
                ("comm/comp overlap", overlap),
                ("kernel breakdown by type (summed over ranks)", by_type),
                ("idle time breakdown", idle),
            ]:
                frame = fn(trace, folder)
                if frame is not None and not frame.empty:
                    print(f"\n== {folder}: {title}\n{frame.to_string()}")


if __name__ == "__main__":
    main()
