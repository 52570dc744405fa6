"""One way to refuse a bad option: ``OptionError`` (a ``ValueError``), whichever entry point takes it.

The analyses' own options are tested with each analysis; these are the options of loading,
selecting, aligning, the report and the widgets, and the removed keywords that name their
replacement.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("small")
    for r in range(2):
        kb.write(folder / f"rank-{r}.json", kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=r))
    return folder


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"engine": "threads"}, r"engine='threads' is not accepted; use one of 'auto', 'serial', 'process', 'dask'"),
        ({"on_error": "ignore"}, r"on_error='ignore' is not accepted; use one of 'raise', 'skip'"),
        ({"bad_events": "keep"}, r"bad_events='keep' is not accepted"),
        ({"max_json_bytes": 0}, r"max_json_bytes must be a positive int"),
        ({"client": object()}, r"client= is for engine='dask'"),
        ({"pid_map": {1: -1}}, r"pid_map values must be ranks"),
        ({"align": "collectives"}, r"align= was removed"),
        ({"on_progress": print}, r"on_progress= was removed"),
    ],
)
def test_load_options(small: Path, options: dict[str, object], message: str) -> None:
    with pytest.raises(tv.OptionError, match=message):
        tv.load(small, cache=False, **options)  # type: ignore[arg-type]


def test_select_align_and_report_options(small: Path) -> None:
    trace = tv.load(small, cache=False)
    with pytest.raises(tv.OptionError, match=r"time_range must be \(start_ns, end_ns\) with end > start"):
        trace.select(time_range=(10, 10))
    with pytest.raises(tv.OptionError, match="min_collectives must be at least 1"):
        tv.clock_alignment(trace, min_collectives=0)
    with pytest.raises(tv.OptionError, match=r"theme='blue' is not accepted; use one of 'light', 'dark'"):
        tv.write_report(trace, small / "r.html", theme="blue")  # type: ignore[arg-type]
    from jupyter_traceview.dashboard.data import DashboardData

    with pytest.raises(tv.OptionError, match=r"theme='blue' is not accepted; use one of 'light', 'dark'"):
        DashboardData(trace).tab("overview", theme="blue")
    with pytest.raises(tv.OptionError, match=r"rank= was removed; pass ranks=0"):
        tv.critical_path(trace, rank=0)  # type: ignore[call-arg]
    with pytest.raises(tv.OptionError, match="align_ends= was removed"):
        tv.stragglers(trace, align_ends=True)  # type: ignore[call-arg]


def test_analyses_take_a_trace_and_scope_it_one_way() -> None:
    """Every public analysis takes a Trace first (``compare`` two) and its ranks as
    ``ranks=``; a keyword kept only to say it was removed is typed ``None``."""
    import inspect

    from jupyter_traceview import analysis

    for name in analysis.__all__:
        fn = getattr(analysis, name)
        if inspect.isclass(fn) or name == "peaks_table":  # FindingRules, DevicePeaks; a table of devices
            continue
        params = inspect.signature(fn).parameters
        first = list(params)[:2] if name in ("compare", "write_counters_trace") else list(params)[:1]
        assert first in (["trace"], ["base", "new"], ["trace", "out_dir"]), name  # the exporter: where to write
        rest = list(params.values())[len(first) :]
        if name == "what_if":  # what_if(trace, *changes, ...): the changes to combine, then keywords
            assert rest[0].kind is inspect.Parameter.VAR_POSITIONAL, name
            rest = rest[1:]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in rest), name
        removed = [k for k in ("rank", "align_ends", "path", "paths") if k in params]
        assert all(params[k].annotation in (None, "None") and params[k].default is None for k in removed), name
