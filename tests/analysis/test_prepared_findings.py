"""Per-rank results prepared while a trace loads (loading/prepare.py, analysis/findings/prepare.py).

``tv.load(..., prepare=True)`` (the default for big loads in worker processes) runs the
per-rank work of a default ``findings`` call right after each file is read, and keeps the
results with the cache entries. Pinned here: the package root installs findings'; after such a load
``findings`` computes no per-rank function again, and its output is the one computed without
a cache; the values kept are byte for byte those ``findings`` keeps itself; when the load
prepares (and when it does not); a failing function never fails the load.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _memo
from jupyter_traceview.loading import loader
from jupyter_traceview.loading import prepare as prepare_mod
from jupyter_traceview.model import facts
from tests.analysis.test_persisted_facts import KEPT, _outputs_calls
from tests.conftest import KINETO_FOLDERS


def _load(path: Path | str, cache: Path | bool, **kw: object) -> tv.Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.load(path, cache=cache, progress=False, **kw)  # type: ignore[arg-type]


def _findings(trace: tv.Trace) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        return tv.findings(trace)


def _kept(cache: Path) -> dict[tuple[str, str], bytes]:
    """Every kept value, by (the facts file's entry and name, key), for the current code."""
    out: dict[tuple[str, str], bytes] = {}
    version = _memo.code_key()
    for f in sorted(cache.glob("*/r*.facts")):
        fmt, stored, _crc, body = pickle.loads(f.read_bytes())
        assert fmt == facts.FORMAT and stored == version
        for key, data in pickle.loads(body).items():
            out[(f"{f.parent.name}/{f.name}", key)] = data
    return out


def test_the_package_root_installs_the_findings_preparation() -> None:
    assert prepare_mod.prepare_functions() == (tv._prepare_findings,)


def test_a_prepare_function_must_travel_to_the_workers_by_reference() -> None:
    before = prepare_mod.prepare_functions()
    with pytest.raises(TypeError, match="module-level function"):
        prepare_mod.set_prepare_functions([lambda trace: None])
    assert prepare_mod.prepare_functions() == before


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "hta_dlrm_2of128_ranks", "h100_bert_small", "hta_cpu_only"])
def test_after_a_prepared_load_findings_reads_everything_and_finds_the_same(folder: str, tmp_path: Path) -> None:
    path = KINETO_FOLDERS[folder]
    want = _findings(_load(path, cache=False))
    prepared = tmp_path / "prepared"
    first = _load(path, cache=prepared, prepare=True)
    assert list(prepared.glob("*/r*.facts")), "the load kept nothing"
    # In this process (the user's first findings call), and in a later one (a cached load).
    assert not set(_outputs_calls(first)) & KEPT
    pd.testing.assert_frame_equal(_findings(first), want)
    later = _load(path, cache=prepared)
    assert not set(_outputs_calls(later)) & KEPT
    pd.testing.assert_frame_equal(_findings(later), want)
    # The values are those findings keeps when it computes them itself (the load may have
    # prepared more: what the rules that compare ranks need, where the job has one).
    computed = tmp_path / "computed"
    _findings(_load(path, cache=computed, prepare=False))
    have, want_kept = _kept(prepared), _kept(computed)
    assert want_kept and {k: have.get(k) for k in want_kept} == want_kept


def test_worker_processes_prepare_the_files_they_read(tmp_path: Path) -> None:
    want = _findings(_load(tv.sample_path(), cache=False))
    trace = _load(tv.sample_path(), cache=tmp_path, engine="process", prepare=True)
    assert len(list(tmp_path.glob("*/r*.facts"))) == 8
    assert not set(_outputs_calls(trace)) & KEPT
    pd.testing.assert_frame_equal(_findings(trace), want)


def test_by_default_only_big_loads_in_worker_processes_prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _load(tv.sample_path(), cache=tmp_path / "small")  # 7 MB: not prepared
    assert not list((tmp_path / "small").glob("*/r*.facts"))
    _load(tv.sample_path(), cache=tmp_path / "serial", engine="serial")
    assert not list((tmp_path / "serial").glob("*/r*.facts"))
    monkeypatch.setattr(prepare_mod, "MIN_BYTES", 1)  # as if the sample were big
    _load(tv.sample_path(), cache=tmp_path / "big", engine="process")
    assert len(list((tmp_path / "big").glob("*/r*.facts"))) == 8
    _load(tv.sample_path(), cache=tmp_path / "off", engine="process", prepare=False)
    assert not list((tmp_path / "off").glob("*/r*.facts"))


def test_without_a_cache_nothing_is_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[object] = []
    monkeypatch.setattr(prepare_mod, "run", lambda *a, **k: ran.append(a))
    _load(tv.sample_path(), cache=False, prepare=True)
    assert ran == []


def test_prepare_takes_a_bool_or_none() -> None:
    with pytest.raises(tv.OptionError, match="prepare must be True, False or None"):
        _load(tv.sample_path(), cache=False, prepare="yes")


def _raises(trace: tv.Trace) -> None:
    raise MemoryError("out of memory")


@pytest.mark.parametrize("fn", [int, _raises])
@pytest.mark.parametrize("engine", ["serial", "process"])
def test_a_failing_preparation_never_fails_the_load(
    fn: object, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _findings(_load(tv.sample_path(), cache=False))
    monkeypatch.setattr(prepare_mod, "_functions", (fn,))
    trace = _load(tv.sample_path(), cache=tmp_path, prepare=True, engine=engine)
    assert not list(tmp_path.glob("*/r*.facts"))
    pd.testing.assert_frame_equal(_findings(trace), want)


def test_a_preparation_that_fails_half_way_keeps_what_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_traceview.analysis.findings import prepare as findings_prepare

    def half(trace: tv.Trace) -> None:
        from jupyter_traceview.analysis._memo import per_rank, save_facts, shared_rank_facts
        from jupyter_traceview.analysis.summary import _summary_row

        with shared_rank_facts():
            per_rank(trace, _summary_row)
        save_facts()
        raise RuntimeError("out of luck")

    monkeypatch.setattr(findings_prepare, "prepare", half)  # (the root's function imports it when run)
    want = _findings(_load(tv.sample_path(), cache=False))
    trace = _load(tv.sample_path(), cache=tmp_path, prepare=True)
    kept = {key.split("|")[0] for _, key in _kept(tmp_path)}
    assert kept == {"jupyter_traceview.analysis.summary._summary_row()"}
    pd.testing.assert_frame_equal(_findings(trace), want)


def test_the_loader_names_no_analysis() -> None:
    # The layers point one way: the package root installs what the loader runs.
    for module in (loader, prepare_mod):
        source = Path(module.__file__ or "").read_text()
        assert (
            "..analysis" not in source and "jupyter_traceview.analysis" not in source and "import_module" not in source
        )
