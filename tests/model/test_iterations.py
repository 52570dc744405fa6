"""Trace.iterations on a tiny trace: CPU spans per step, GPU spans by launch, -1 without GPU work."""

from __future__ import annotations

from pathlib import Path

import jupyter_traceview as tv
from tests import kineto_builder as kb


def test_iterations_by_construction(tmp_path: Path) -> None:
    events = [
        kb.step(5, 0, 100),
        *kb.launch("k1", 10, 50, 30, corr=1),  # [50, 80) us, launched in step 5
        *kb.launch("k2", 90, 120, 40, corr=2),  # [120, 160): runs in step 6's time, belongs to 5
        kb.step(6, 100, 50),  # launches nothing
        kb.step(7, 150, 60),
        *kb.launch("k3", 160, 170, 10, corr=3),  # [170, 180)
    ]
    trace = tv.load(kb.write(tmp_path / "r.json", kb.doc(events)), cache=False)
    its = trace.iterations
    assert its.columns.tolist() == ["rank", "step", "start_ns", "end_ns", "dur_ns", "gpu_start_ns", "gpu_end_ns"]
    assert (its.dtypes == "int64").all()
    assert its.values.tolist() == [
        [0, 5, 0, 100_000, 100_000, 50_000, 160_000],
        [0, 6, 100_000, 150_000, 50_000, -1, -1],
        [0, 7, 150_000, 210_000, 60_000, 170_000, 180_000],
    ]


def _iterations_before(d: object) -> object:
    """``trace._iterations_of`` as it was (steps found by binary search, the frame built
    column by column): the reference for the table lookup and the one-go frame."""
    import numpy as np
    import pandas as pd

    from jupyter_traceview.model.schema import EventKind
    from jupyter_traceview.model.trace import _ACTIVITY, _span_per_group

    ev = d.events  # type: ignore[attr-defined]
    names, kinds = ev["name"].array, ev["kind"].array
    step_name = np.append(np.asarray(names.categories.str.startswith("ProfilerStep#"), dtype=bool), False)
    step_kind = np.append(
        np.asarray(kinds.categories.isin([EventKind.USER_ANNOTATION.value, EventKind.CPU_OP.value]), dtype=bool),
        False,
    )
    act_kind = np.append(np.asarray(kinds.categories.isin(_ACTIVITY), dtype=bool), False)
    kind_codes = np.asarray(kinds.codes)
    rows = np.flatnonzero(step_name[np.asarray(names.codes)] & step_kind[kind_codes])
    if not len(rows):
        return pd.DataFrame()
    step, ts, dur = ev["step"].to_numpy(), ev["ts_ns"].to_numpy(), ev["dur_ns"].to_numpy()
    steps = np.unique(step[rows])
    start, end = _span_per_group(np.searchsorted(steps, step[rows]), ts[rows], dur[rows], len(steps))
    acts = np.flatnonzero(act_kind[kind_codes] & (step >= 0))
    pos = np.minimum(np.searchsorted(steps, step[acts]), len(steps) - 1)
    hit = steps[pos] == step[acts]
    acts, pos = acts[hit], pos[hit]
    g_start, g_end = _span_per_group(pos, ts[acts], dur[acts], len(steps))
    out = pd.DataFrame({"step": steps, "start_ns": start, "end_ns": end})
    none = np.bincount(pos, minlength=len(steps)) == 0
    if none.any():
        out["gpu_start_ns"] = np.where(none, -1, g_start).astype(np.float64)
        out["gpu_end_ns"] = np.where(none, -1, g_end).astype(np.float64)
    else:
        out["gpu_start_ns"], out["gpu_end_ns"] = g_start, g_end
    out.insert(0, "rank", d.meta.rank)  # type: ignore[attr-defined]
    out["dur_ns"] = out["end_ns"] - out["start_ns"]
    return out


def test_iterations_of_as_before(tmp_path: Path) -> None:
    """Each rank's iterations (steps through a table, one frame built at once) against the
    computation they replace, on the recorded traces, a window of them, and tiny traces
    whose steps are sparse (past the table's bound: binary search) or launch nothing."""
    import warnings

    import pandas as pd

    from jupyter_traceview.model.trace import _iterations_of
    from tests.conftest import KINETO_FOLDERS

    sparse = [
        kb.step(5, 0, 100),
        *kb.launch("k1", 10, 50, 30, corr=1),
        kb.step(900_000, 100, 50),  # far beyond the table's bound for a few events
        kb.step(7, 150, 60),
        *kb.launch("k3", 160, 170, 10, corr=3),
    ]
    traces = [tv.load(kb.write(tmp_path / "sparse.json", kb.doc(sparse)), cache=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        for name in ("dlrm_8rank_v100", "hta_alexnet", "h100_bert_small", "hta_cpu_only"):
            t = tv.load(KINETO_FOLDERS[name], cache=False, progress=False)
            traces.append(t)
            lo, hi = t.events(t.ranks[0])["ts_ns"].agg(["min", "max"]).tolist()
            traces.append(t.select(time_range=(int(lo + (hi - lo) // 3), int(hi - (hi - lo) // 4))))
    checked = 0
    for t in traces:
        for r in t.ranks:
            d = t.rank_data(r)
            want, got = _iterations_before(d), _iterations_of(d)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            checked += len(got)
    assert checked > 10


def test_iterations_frame_as_concat(tmp_path: Path) -> None:
    """``Trace.iterations`` (built column by column) against the frame it replaced (the ranks'
    frames concatenated, then each column made int64), on several ranks, one rank, ranks
    whose steps launched nothing (float columns, -1) next to ranks whose steps did, and none."""
    import warnings

    import numpy as np
    import pandas as pd

    from jupyter_traceview.model.trace import _ITERATION_COLUMNS, _rank_iterations
    from tests.conftest import KINETO_FOLDERS

    mixed = [kb.step(1, 0, 100), *kb.launch("k1", 10, 50, 30, corr=1), kb.step(2, 100, 50), kb.step(3, 150, 60)]
    traces = [tv.load(kb.write(tmp_path / "mixed.json", kb.doc(mixed)), cache=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        for name in ("dlrm_8rank_v100", "hta_cpu_only"):
            t = tv.load(KINETO_FOLDERS[name], cache=False, progress=False)
            traces += [t, t.select(ranks=t.ranks[-1])]
    floats = 0
    for t in traces:
        parts = [p for p in t.map_ranks(_rank_iterations).values() if len(p)]
        floats += sum(p["gpu_start_ns"].dtype == np.float64 for p in parts)
        want = pd.concat(parts, ignore_index=True)
        for c in _ITERATION_COLUMNS:
            want[c] = want[c].astype(np.int64)
        pd.testing.assert_frame_equal(t.iterations, want[_ITERATION_COLUMNS], check_exact=True)
    assert floats > 0
    none = tv.load(kb.write(tmp_path / "none.json", kb.doc([*kb.launch("k1", 10, 50, 30, corr=1)])), cache=False)
    assert none.iterations.empty and none.iterations.dtypes.tolist() == [np.dtype("int64")] * len(_ITERATION_COLUMNS)
