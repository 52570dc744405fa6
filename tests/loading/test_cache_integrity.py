"""The on-disk cache heals: damaged entries are misses, rewritten; replaced files never hit stale entries."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview.loading import cache as tv_cache
from jupyter_traceview.loading import cache_key, ingest, loader
from tests.loading.entries import entry_files, key_of, read_entry


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


def test_flipped_bytes_in_an_entry_are_a_miss_that_heals(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for target in entry_files(cache):
        data = target.read_bytes()
        # One kernel's dur_ns (300 us or 301 us), flipped in place: Arrow reads it without complaint.
        for dur_us in (300, 301):
            value = (dur_us * 1000).to_bytes(8, "little")
            if value in data:
                data = data.replace(value, (dur_us * 1000 + 1).to_bytes(8, "little"), 1)
                break
        else:
            raise AssertionError("the kernel's duration is not in the entry")
        target.write_bytes(data)
    seen = parses(monkeypatch)
    assert_same(tv.load(folder, cache=cache), cold)
    assert sorted(seen) == ["rank-0.json", "rank-1.json"], "both damaged entries were misses"
    seen.clear()
    assert_same(tv.load(folder, cache=cache), cold)
    assert seen == [], "rewritten: a hit again"


def test_every_byte_of_an_entry_flipped_is_a_miss(folder: Path, filled: tuple[Path, tv.Trace]) -> None:
    """Each byte of an entry file in turn (the magic, the ranks' streams and their padding, the
    metadata, the trailer: its offsets, CRC, format and magic), flipped: a miss, and the
    damaged entry is deleted; the intact file reads back."""
    cache, _ = filled
    path = entry_files(cache)[0]
    good = path.read_bytes()
    key = path.parent.name
    clf = tv.Classifier()
    assert tv_cache.read(cache, key, classifier=clf) is not None
    for i in range(len(good)):
        damaged = bytearray(good)
        damaged[i] ^= 0x5A
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(bytes(damaged))
        assert tv_cache.read(cache, key, classifier=clf) is None, f"byte {i} of {len(good)}"
        assert not path.parent.exists(), f"byte {i}: the damaged entry was kept"
    path.parent.mkdir()
    path.write_bytes(good)
    assert tv_cache.read(cache, key, classifier=clf) is not None


@pytest.mark.parametrize("keep", [0, 1, 8, 100, -33, -17, -16, -1])
def test_a_cut_entry_is_a_miss(keep: int, filled: tuple[Path, tv.Trace]) -> None:
    """An entry file cut anywhere (empty, inside the magic, a stream, the trailer): a miss."""
    cache, _ = filled
    path = entry_files(cache)[0]
    path.write_bytes(path.read_bytes()[:keep])
    assert tv_cache.read(cache, path.parent.name, classifier=tv.Classifier()) is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda doc: [],  # a metadata document of []: must not drop the rank
        lambda doc: {**doc, "ranks": []},
        lambda doc: {**doc, "streams": []},
        lambda doc: {**doc, "streams": [[8, 10**9]]},  # a rank past the file's end
        lambda doc: doc["ranks"],  # the ranks alone
    ],
)
def test_edited_metadata_is_a_miss_that_heals(
    folder: Path, monkeypatch: pytest.MonkeyPatch, edit: object, filled: tuple[Path, tv.Trace]
) -> None:
    """Metadata edited behind a valid CRC and seal (as if this module had written it, so that
    the metadata's own checks stand): a miss, rewritten."""
    cache, cold = filled
    for path in entry_files(cache):
        doc, _ = read_entry(path)
        data = path.read_bytes()
        meta_at = struct.unpack_from("<Q", data, len(data) - 48)[0]
        body = data[:meta_at] + json.dumps(edit(doc)).encode()  # type: ignore[operator]
        body_crc = tv_cache._crc32(body)
        seal = tv_cache._seal(key_of(path), body_crc, len(body), tv_cache.ENTRY_FORMAT)
        head = struct.pack("<QQ16s", meta_at, len(body) - meta_at, seal)
        tail = struct.pack("<II", tv_cache._crc32(head, body_crc), tv_cache.ENTRY_FORMAT) + data[-8:]
        path.write_bytes(body + head + tail)
    seen = parses(monkeypatch)
    assert_same(tv.load(folder, cache=cache), cold)
    assert len(seen) == 2
    seen.clear()
    assert_same(tv.load(folder, cache=cache), cold)
    assert seen == []


def test_an_edited_rank_without_its_crc_is_a_miss(
    folder: Path, monkeypatch: pytest.MonkeyPatch, filled: tuple[Path, tv.Trace]
) -> None:
    cache, cold = filled
    for path in entry_files(cache):
        data = path.read_bytes()
        assert b'"rank": 0' in data or b'"rank": 1' in data
        path.write_bytes(data.replace(b'"rank": 0', b'"rank": 7').replace(b'"rank": 1', b'"rank": 7'))
    seen = parses(monkeypatch)
    assert_same(tv.load(folder, cache=cache), cold)
    assert len(seen) == 2


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
    for n in (10, 64 * 1024, 100 * 1024, 200 * 1024):  # the bytes hashed: the size, the first and last 64 KiB
        part = tmp_path / f"part{n}.json"
        part.write_bytes(os.urandom(n))
        data = part.read_bytes()
        ends = data[: 64 * 1024] + (data[max(64 * 1024, n - 64 * 1024) :] if n > 64 * 1024 else b"")
        assert tv_cache.fingerprint(part, n) == hashlib.sha256(str(n).encode() + ends).hexdigest()[:32]
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
