"""The on-disk cache heals: damaged entries are misses, rewritten; replaced files never hit stale entries."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading import cache_key, ingest, loader


def frames(trace: tv.Trace) -> dict[int, pd.DataFrame]:
    return {r: trace.events(r).reset_index(drop=True) for r in trace.ranks}


def assert_same(a: tv.Trace, b: tv.Trace) -> None:
    assert a.ranks == b.ranks
    for r in a.ranks:
        pd.testing.assert_frame_equal(frames(a)[r], frames(b)[r])


def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every parse (a cache miss) from now on."""
    seen: list[str] = []
    real = ingest.read_file
    real_small = ingest.SmallFiles.read

    def counting(tf, options, cache_dir, classifier=None):  # type: ignore[no-untyped-def]
        seen.append(tf.path.name)
        return real(tf, options, cache_dir, classifier)

    def counting_small(self, key, tf):  # type: ignore[no-untyped-def]
        seen.append(tf.path.name)
        return real_small(self, key, tf)

    monkeypatch.setattr(loader, "read_file", counting)  # (the pool's files, and a lone big one)
    monkeypatch.setattr(ingest.SmallFiles, "read", counting_small)  # (a serial load's files)
    return seen


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir())


def test_flipped_bytes_in_an_arrow_file_are_a_miss_that_heals(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for entry in entries(cache):
        target = entry / "r0.events.arrow"
        data = target.read_bytes()
        # One kernel's dur_ns (300 us or 301 us), flipped in place: Arrow reads it without complaint.
        for dur_us in (300, 301):
            value = (dur_us * 1000).to_bytes(8, "little")
            if value in data:
                data = data.replace(value, (dur_us * 1000 + 1).to_bytes(8, "little"), 1)
                break
        else:
            raise AssertionError("the kernel's duration is not in the Arrow file")
        target.write_bytes(data)
    seen = parses(monkeypatch)
    assert_same(tv.load(folder, cache=cache), cold)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"], "both damaged entries were misses"
    seen.clear()
    assert_same(tv.load(folder, cache=cache), cold)
    assert seen == [], "rewritten: a hit again"


@pytest.mark.parametrize(
    "edit",
    [
        lambda doc: [],  # a meta.json of []: must not drop the rank
        lambda doc: {**doc, "ranks": []},
        lambda doc: {**doc, "ranks": [{**doc["ranks"][0], "rank": 7}]},  # an edited rank
        lambda doc: doc["ranks"],  # the format before checksums
    ],
)
def test_an_edited_meta_json_is_a_miss_that_heals(
    folder: Path, monkeypatch: pytest.MonkeyPatch, edit: object, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for entry in entries(cache):
        doc = json.loads((entry / "meta.json").read_text())
        (entry / "meta.json").write_text(json.dumps(edit(doc)))  # type: ignore[operator]
    seen = parses(monkeypatch)
    assert_same(tv.load(folder, cache=cache), cold)
    assert len(seen) == 2
    seen.clear()
    assert_same(tv.load(folder, cache=cache), cold)
    assert seen == []


def test_a_file_replaced_with_the_same_size_and_mtime_is_not_served_stale(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = folder / "rank-0.json"
    before = tv.load(path, cache=cache)
    assert "gemm_0" in set(before.events(0)["name"])
    st = path.stat()
    text = path.read_text()
    replaced = text.replace("gemm_0", "conv_0")
    assert len(replaced) == len(text)
    path.write_text(replaced)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as rsync -t or a restored backup leaves it
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    after = tv.load(path, cache=cache)
    names = set(after.events(0)["name"])
    assert "conv_0" in names and "gemm_0" not in names


def test_the_fingerprint_reads_only_the_ends(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    size = 1 << 20
    big.write_bytes(b"a" * size)
    first = tv_cache.fingerprint(big, size)
    with open(big, "r+b") as fh:  # a change in the middle: outside the hashed ends
        fh.seek(size // 2)
        fh.write(b"b")
    assert tv_cache.fingerprint(big, size) == first
    with open(big, "r+b") as fh:  # a change near the end: inside
        fh.seek(size - 10)
        fh.write(b"b")
    assert tv_cache.fingerprint(big, size) != first
    assert tv_cache.fingerprint(tmp_path / "missing.json", 10) == ""


def test_entry_keys_resolve_links_as_realpath_does(tmp_path: Path) -> None:
    """Keys computed with each folder resolved once equal keys from the file's own real path:
    plain files, a file that is a link, files reached through a linked folder."""
    from jupyter_traceview.loading.readers.files import TraceFile

    real = tmp_path / "real"
    real.mkdir()
    for name in ("a.json", "b.json"):
        (real / name).write_text('{"traceEvents": []}')
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    (real / "c.json").symlink_to(real / "a.json")
    options = {"bad_events": "raise", "pid_map": None}
    paths = [
        real / "a.json",
        real / "b.json",
        real / "c.json",
        tmp_path / "linked" / "b.json",
        tmp_path / "linked" / "c.json",
    ]
    memo: dict[str, str] = {}
    for p in paths:
        st = p.stat()
        tf = TraceFile(p, st.st_size, st.st_mtime_ns, None)
        assert tv_cache.entry_key(tf, options, memo) == tv_cache.entry_key(tf, options)
        assert cache_key._real_path(str(p), memo) == os.path.realpath(p)
    # A link is its target's entry (same real path, size, time and content).
    assert tv_cache.entry_key(TraceFile(paths[2], 1, 0, None), options, {}) == tv_cache.entry_key(
        TraceFile(paths[0], 1, 0, None), options, {}
    )
