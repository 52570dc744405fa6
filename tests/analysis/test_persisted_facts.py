"""Per-rank results kept with the cache entries (analysis._memo.per_rank, model.facts).

A trace loaded through the cache gets, per rank, a store next to the rank's Arrow files;
inside a shared scope (``findings``) the analyses' per-rank functions keep their results
there, and a later process reads them instead of computing. Pinned here: the outputs read
back are exactly the computed ones (analyses and findings, on real traces, windows and
selections mixed in); the functions are really not called again; a damaged file, another
code version, ``cache=False``, a window and iterations all fall back to computing.
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.analysis import _memo
from jupyter_traceview.analysis._memo import per_rank, shared_rank_facts
from jupyter_traceview.analysis.host_findings import host_facts
from jupyter_traceview.analysis.perfmodel.matrix import matrix_shapes
from jupyter_traceview.analysis.stragglers import straggler_views
from jupyter_traceview.model import facts
from jupyter_traceview.model.trace import Trace
from tests.conftest import KINETO_FOLDERS, analysis_scopes

ANALYSES: dict[str, Callable[..., Any]] = {
    "summary": tv.summary,
    "efficiency": tv.efficiency,
    "efficiency_rank": lambda t, **kw: tv.efficiency(t, per="rank", **kw),
    "iteration_stats_step": lambda t, **kw: tv.iteration_stats(t, per="step", **kw),
    "iteration_stats": lambda t, **kw: tv.iteration_stats(t, **kw),
    "iteration_stats_job": lambda t, **kw: tv.iteration_stats(t, per="job", **kw),
    "kernel_overlap_stats": lambda t, **kw: tv.kernel_overlap_stats(t, per="rank", **kw),
    "kernel_overlap_stats_job": tv.kernel_overlap_stats,
    "kernel_launch_stats": lambda t, **kw: tv.kernel_launch_stats(t, per="rank", **kw),
    "stragglers": lambda t, **kw: straggler_views(t, views=("rank", "collective", "arrival"), **kw),
    "host_facts": lambda t, time_range=None, **kw: host_facts(t.select(**kw) if kw else t, time_range=time_range),
    "matrix_shapes": lambda t, time_range=None, **kw: matrix_shapes(t.select(**kw) if kw else t, time_range=time_range),
    "findings": tv.findings,
}

#: The per-rank functions whose results are kept (what a cached second load must not call).
KEPT = {
    "_summary_row",
    "_launch_rank",
    "_has_gpu_rank",
    "rank_facts",
    "_rank_overlap",
    "_rank_work",
    "_rank_step_times",
    "_rank_host_facts",
    "_one_rank_matrix",
    "_one_rank_comm_kernels",
}


def _same(a: object, b: object) -> None:
    if isinstance(a, dict) and a and all(isinstance(v, pd.DataFrame) for v in a.values()):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame)
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    else:
        assert repr(a) == repr(b)


def _outputs(trace: tv.Trace, shared: bool) -> dict[tuple[str, int], Any]:
    out = {}
    for i, kw in enumerate(analysis_scopes(trace)):
        for name, fn in ANALYSES.items():
            if shared and name != "findings":
                with shared_rank_facts():
                    out[(name, i)] = fn(trace, **kw)
            else:
                out[(name, i)] = fn(trace, **kw)
    return out


@pytest.fixture
def dlrm_path() -> Path:
    return Path(tv.sample_path())


@pytest.mark.parametrize("folder", ["dlrm_8rank_v100", "h100_bert_small", "hta_dlrm_2of128_ranks", "hta_alexnet"])
def test_results_read_back_are_the_computed_ones(folder: str, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        alone = _outputs(tv.load(KINETO_FOLDERS[folder], cache=False, progress=False), shared=False)
        first = tv.load(KINETO_FOLDERS[folder], cache=tmp_path, progress=False)
        for k, v in _outputs(first, shared=True).items():
            _same(v, alone[k])  # computed (and kept)
        assert list(tmp_path.glob("*/r*.facts"))
        second = tv.load(KINETO_FOLDERS[folder], cache=tmp_path, progress=False)  # a new process would do this
        for k, v in _outputs(second, shared=True).items():
            _same(v, alone[k])  # read back
    # Without a window or narrowed tables, nothing kept was computed again.
    full = _outputs_calls(second)
    assert not (set(full) & KEPT), full


def _outputs_calls(trace: tv.Trace) -> list[str]:
    seen: list[str] = []
    original = Trace.map_ranks

    def recording(self: Trace, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> dict[int, Any]:
        seen.append(fn.__name__)
        return original(self, fn, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        m.setattr(Trace, "map_ranks", recording)
        tv.findings(trace)
    return seen


def _facts_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("*/r*.facts"))


def test_damaged_or_foreign_files_are_misses_and_rewritten(
    tmp_path: Path, dlrm_path: Path, dlrm_findings: pd.DataFrame
) -> None:
    want = dlrm_findings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        _same(tv.findings(tv.load(dlrm_path, cache=tmp_path, progress=False)), want)
        files = _facts_files(tmp_path)
        assert len(files) == 8
        good = files[0].read_bytes()
        files[0].write_bytes(good[: len(good) // 2])  # truncated
        files[1].write_bytes(b"not a pickle")
        doc = pickle.loads(files[2].read_bytes())
        body = bytearray(doc[3])
        body[len(body) // 2] ^= 0xFF  # one flipped byte: the CRC no longer matches
        files[2].write_bytes(pickle.dumps((doc[0], doc[1], doc[2], bytes(body))))
        files[3].write_bytes(pickle.dumps((facts.FORMAT + 1, doc[1], doc[2], doc[3])))  # another format
        files[4].write_bytes(pickle.dumps(["a", "list"]))
        _same(tv.findings(tv.load(dlrm_path, cache=tmp_path, progress=False)), want)
        # Rewritten whole: the next load reads every rank's results back.
        for f in _facts_files(tmp_path)[:5]:
            fmt, _, _crc, _body = pickle.loads(f.read_bytes())
            assert fmt == facts.FORMAT
        _same(tv.findings(tv.load(dlrm_path, cache=tmp_path, progress=False)), want)


def test_another_code_version_recomputes(
    tmp_path: Path, dlrm_path: Path, monkeypatch: pytest.MonkeyPatch, dlrm_findings: pd.DataFrame
) -> None:
    want = dlrm_findings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        _same(tv.findings(tv.load(dlrm_path, cache=tmp_path, progress=False)), want)
        trace = tv.load(dlrm_path, cache=tmp_path, progress=False)
        assert not set(_outputs_calls(trace)) & KEPT
        monkeypatch.setattr(_memo, "code_key", lambda: "another version of the analyses")
        trace = tv.load(dlrm_path, cache=tmp_path, progress=False)
        assert set(_outputs_calls(trace)) >= {"_summary_row", "rank_facts", "_rank_work"}
        _same(tv.findings(tv.load(dlrm_path, cache=tmp_path, progress=False)), want)
        stored = {pickle.loads(f.read_bytes())[1] for f in _facts_files(tmp_path)}
        assert stored == {"another version of the analyses"}


@pytest.mark.parametrize("source", ["_sweep.c", "_loops.c"])
def test_the_code_key_covers_the_c_sources(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # model/_sweep.c and analysis/_loops.c compute what their numpy fallbacks compute; a
    # change to one still recomputes the kept results.
    _memo.code_key.cache_clear()
    key = _memo.code_key()
    original = Path.read_bytes

    def changed(self: Path) -> bytes:
        data = original(self)
        return data + b"/* changed */" if self.name == source else data

    monkeypatch.setattr(Path, "read_bytes", changed)
    try:
        _memo.code_key.cache_clear()
        assert _memo.code_key() != key
    finally:
        monkeypatch.undo()
        _memo.code_key.cache_clear()
    assert _memo.code_key() == key


def test_the_code_key_follows_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    key = _memo.code_key()
    assert len(key) == 64 and key == _memo.code_key()
    root = Path(_memo.__file__).resolve().parent.parent
    assert (root / "analysis" / "efficiency.py").is_file() and (root / "model" / "intervals.py").is_file()
    # A source that cannot be read: a key of this process only, never another's.
    original = Path.read_bytes

    def unreadable(self: Path) -> bytes:
        if self.name == "efficiency.py":
            raise PermissionError(13, "Permission denied", str(self))
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", unreadable)
    try:
        _memo.code_key.cache_clear()
        first = _memo.code_key()
        _memo.code_key.cache_clear()
        second = _memo.code_key()
        assert len({key, first, second}) == 3
    finally:
        monkeypatch.undo()
        _memo.code_key.cache_clear()
    assert _memo.code_key() == key


def test_no_store_without_the_cache_or_for_narrowed_tables(tmp_path: Path, dlrm_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        plain = tv.load(dlrm_path, cache=False, progress=False)
        assert all(facts.store_of(plain.rank_data(r).events) is None for r in plain.ranks)
        cached = tv.load(dlrm_path, cache=tmp_path, progress=False)
        assert all(facts.store_of(cached.rank_data(r).events) is not None for r in cached.ranks)
        assert facts.store_of(cached.select(ranks=[1, 2]).rank_data(1).events) is not None  # tables shared
        lo = cached.t0_ns
        window = cached.select(time_range=(lo + 1_000_000, lo + 9_000_000))
        assert all(facts.store_of(window.rank_data(r).events) is None for r in window.ranks)
        steps = sorted(set(cached.iterations["step"].tolist()))
        some = cached.select(iterations=steps[1:])
        assert all(facts.store_of(some.rank_data(r).events) is None for r in some.ranks)
        # Outside a scope, per_rank is map_ranks: nothing kept.
        per_rank(cached, tv.summary)
        assert not _facts_files(tmp_path)
        # Nor for a window: findings over one keeps nothing of the window (one entry per
        # window asked for would grow without bound), nor over some iterations (new tables);
        # only whether each whole rank has GPU work (kernel_launch_stats asks before narrowing).
        tv.findings(cached, time_range=(lo + 1_000_000, lo + 9_000_000))
        tv.findings(cached, time_range=(lo + 2_000_000, lo + 8_000_000))
        tv.findings(cached, iterations=steps[1:])
        files = _facts_files(tmp_path)
        assert len(files) == 8
        for f in files:
            keys = list(pickle.loads(pickle.loads(f.read_bytes())[3]))
            assert len(keys) == 1 and keys[0].startswith("jupyter_traceview.analysis.launch._has_gpu_rank()|")


def test_the_rank_number_is_part_of_the_key(tmp_path: Path, dlrm_path: Path) -> None:
    """A rank's entry read under another rank number (files numbered by order) is another key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        trace = tv.load(dlrm_path, cache=tmp_path, progress=False)
        with shared_rank_facts():
            rows = per_rank(trace, _rank_of)
        _memo.save_facts()
        assert rows == {r: r for r in trace.ranks}
        store = facts.store_of(trace.rank_data(3).events)
        assert store is not None
        keys = list(pickle.loads(pickle.loads(Path(store.path).read_bytes())[3]))
        assert keys and all(k.endswith("|rank 3") for k in keys)


def _rank_of(trace: tv.Trace) -> int:
    (r,) = trace.ranks
    return int(r)


def test_a_store_hands_out_copies_and_fails_silently(tmp_path: Path) -> None:
    store = facts.RankFacts(str(tmp_path / "entry" / "r0.facts"))
    assert store.get("v1", "k") == (False, None)
    store.put("v1", "k", {"a": [1, 2]})
    found, value = store.get("v1", "k")
    assert found and value == {"a": [1, 2]}
    value["a"].append(3)  # the caller's copy
    assert store.get("v1", "k") == (True, {"a": [1, 2]})
    facts.flush()  # the entry folder does not exist: nothing written, no error
    assert not (tmp_path / "entry").exists()
    (tmp_path / "entry").mkdir()
    store.put("v1", "k2", 5)
    facts.flush()
    again = facts.RankFacts(store.path)
    assert again.get("v1", "k") == (True, {"a": [1, 2]}) and again.get("v1", "k2") == (True, 5)
    assert again.get("v2", "k") == (False, None)  # another version: empty


def _kept(tmp_path: Path) -> tuple[tv.Trace, list[Path]]:
    """The sample loaded through the cache at ``tmp_path`` after a findings call kept its facts."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tv.TraceviewWarning)
        tv.findings(tv.load(tv.sample_path(), cache=tmp_path, progress=False))
    files = sorted(tmp_path.glob("*/r*.facts"))
    assert files
    return tv.load(tv.sample_path(), cache=tmp_path, progress=False), files


def test_facts_files_are_written_for_this_user_alone(tmp_path: Path) -> None:
    _, files = _kept(tmp_path)
    for f in files:
        assert f.stat().st_mode & 0o077 == 0, oct(f.stat().st_mode)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_a_facts_file_others_could_write_is_not_read(tmp_path: Path) -> None:
    trace, files = _kept(tmp_path)
    assert not set(_outputs_calls(trace)) & KEPT  # read back
    for f in files:
        f.chmod(0o666)  # group and others may write it: anybody could have
    again = tv.load(tv.sample_path(), cache=tmp_path, progress=False)
    assert set(_outputs_calls(again)) & KEPT  # computed again, not unpickled


def test_a_linked_facts_file_is_not_read(tmp_path: Path) -> None:
    _, files = _kept(tmp_path)
    for f in files:
        aside = f.with_name(f.name + ".real")
        f.rename(aside)
        f.symlink_to(aside)
    again = tv.load(tv.sample_path(), cache=tmp_path, progress=False)
    assert set(_outputs_calls(again)) & KEPT


class _Runs:
    """A pickle that would call ``os.system`` when loaded (what a planted file would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_facts_file_naming_other_code_runs_nothing(tmp_path: Path) -> None:
    """A well-formed facts file (right format, version and CRC, this user's) whose values or
    whole body name a function outside :data:`facts.ALLOWED`: a miss, and nothing runs."""
    _, files = _kept(tmp_path)
    marker = tmp_path / "ran"
    for i, f in enumerate(files):
        fmt, version, _, body = pickle.loads(f.read_bytes())
        values = pickle.loads(body)
        if i % 2:  # every value replaced
            planted = pickle.dumps({k: pickle.dumps(_Runs(marker)) for k in values})
        else:  # the body itself
            planted = pickle.dumps(_Runs(marker))
        f.write_bytes(pickle.dumps((fmt, version, facts._crc32(planted), planted)))
        f.chmod(0o600)
    again = tv.load(tv.sample_path(), cache=tmp_path, progress=False)
    outputs = _outputs_calls(again)
    assert not marker.exists()
    assert set(outputs) & KEPT  # recomputed
    # The next flush replaced the planted files with good ones: read back again.
    third = tv.load(tv.sample_path(), cache=tmp_path, progress=False)
    assert not set(_outputs_calls(third)) & KEPT
    assert not marker.exists()


def test_the_outer_document_names_no_global(tmp_path: Path) -> None:
    """The allowed list is what values need; the file's envelope needs none."""
    _, files = _kept(tmp_path)
    fmt, version, crc, body = facts._loads(files[0].read_bytes())
    assert (fmt, type(version), type(crc), type(body)) == (facts.FORMAT, str, int, bytes)
