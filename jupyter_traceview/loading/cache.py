"""On-disk cache of parsed traces (Arrow IPC files), so that a second load is near-instant.

An entry is keyed by the trace file's real path, size and modification time, a content
fingerprint (a hash of its first and last 64 KiB: a file replaced by another of the same size
and modification time, as restored backups, ``touch -r`` or ``rsync -t`` leave it, misses), the
reader and schema versions and the reader options; a changed file or a new reader version
simply misses. An entry also keeps each rank's ``gpu_class`` column with the key of the
classifier that made it (:func:`~..model.classify.rules_key`): a load with an equal
classifier takes the column as stored, another one classifies again. Entries live outside the trace folder, in the user cache directory by default
(``~/.cache/jupyter_traceview`` on Linux).

Integrity: an entry is one file (:data:`ENTRY_FILE`: the ranks' tables as Arrow IPC streams,
their metadata, a trailer) whose trailer holds a CRC-32 of the rest and a seal; any mismatch
(flipped bytes, a truncated or emptied file, edited metadata) is a miss, and the entry is
deleted and written again by the parse that follows: a damaged cache heals itself instead of
giving wrong figures. CRC-32 (ISA-L's, several GB/s) is there to catch damage, not tampering
by someone who can write to the cache folder. An entry of an older format (five Arrow files
a rank and a ``meta.json``, or an unsealed file) is a miss, rewritten in this one.

The writer checks each rank's tables (:func:`check_rank`: what the frames will be built
from is what the schema defines: columns, types, Arrow's full validation, categories none
missing, none repeated) and seals the entry (:mod:`.cache_seal`: a BLAKE2b of the CRC-32,
keyed by the cache folder's key). A load (``tv.load``) maps the file and compares its CRC
and seal: an entry this cache folder's writer did not seal (a hand-made file with a valid
CRC, one copied from another folder) is a miss. It reads a rank's stream when the first of
its tables is built (:class:`_Stream`, checked again then: a sealed entry that fails, which
only someone who read the key makes, raises a :class:`~..errors.TraceviewError` naming the
file), and the pandas frames are built when a rank's table is first read
(:class:`~..model.rank_data.Deferred`: once, thread-safe, and built before a rank is pickled
to another process). A cached load of the bundled 8-rank sample reads none of its 8 streams
and builds none of its 40 frames; an analysis builds those it reads.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import mmap
import os
import shutil
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.ipc

from ..errors import TraceviewError
from ..model.classify import Classifier, rules_key
from ..model.facts import RankFacts, attach
from ..model.frames import paused_gc
from ..model.rank_data import Deferred, RankData, RankMeta, replaced, when_built
from ..model.trace import classified

# The keys live in cache_key (light: found without pandas or Arrow); their names stay here too.
from . import cache_key as _keys
from .cache_arrow import TABLES, Damaged, check_rank, from_arrow, rank_batch, schema_message
from .cache_key import FINGERPRINT_BYTES as FINGERPRINT_BYTES
from .cache_key import default_cache_dir as default_cache_dir
from .cache_key import entry_key as entry_key
from .cache_key import fingerprint as fingerprint
from .cache_key import resolve_dir as resolve_dir
from .cache_seal import SEAL_FILE as SEAL_FILE
from .cache_seal import seal as _seal
from .cache_seal import seal_key as _seal_key

__all__ = ["attach_facts", "clear_cache", "default_cache_dir", "prune"]

#: The cache is pruned back under this size (least recently used entries go first).
MAX_BYTES = 20 * 2**30

#: Format of the entry file; entries of other formats are misses. (4: the classes kept, with
#: the classifier's key; 5: the ranks' CRC over msgspec's encoding; 6: one file an entry;
#: 7: sealed, see loading/cache_seal.py.)
ENTRY_FORMAT = 7
#: An entry's one file: the magic, then each rank's tables as one Arrow IPC stream (at a
#: multiple of 64 bytes; one record batch of one row, a list of structs per table), the
#: metadata (JSON: the ranks' RankMeta, the classifier's key, each stream's start and
#: length), and the trailer: the metadata's start and length, the seal (:func:`_seal`), the
#: CRC-32 of everything before the trailer's last 16 bytes, the format and the magic again.
ENTRY_FILE = "entry.tvc"
_MAGIC = b"TVCACHE\x00"
_TRAILER = struct.Struct("<QQ16sII8s")
#: The trailer's bytes that the CRC-32 does not cover (the CRC, the format, the magic).
_CHECKED_TAIL = 16
_ALIGN = 64

try:  # ISA-L's CRC-32 is about 4x faster than zlib's (isal is a dependency)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - odd installs
    _crc32 = zlib.crc32


#: What reading a damaged or unreadable entry raises (the metadata's decode errors are
#: ValueErrors: :func:`_decode_meta` ends with json's; StopIteration: a stream of no batch).
_UNREADABLE = (
    OSError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    RecursionError,
    StopIteration,
    pa.ArrowException,
)


def _decode_meta(text: bytes) -> Any:
    """The entry's metadata document: msgspec's decoder, or json's for what only it reads (NaN, lone surrogates)."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def read(cache_dir: Path, key: str, *, classifier: Classifier) -> list[RankData] | None:
    """The cached ranks of an entry, classified by ``classifier`` (:func:`~..model.trace.classified`),
    or None if it is missing, unreadable or damaged (then deleted).

    The ``gpu_class`` columns are the stored ones when the entry was written by an equal
    classifier, else computed here.
    """
    entry = os.path.join(cache_dir, key)
    path = os.path.join(entry, ENTRY_FILE)
    try:
        buffer, mtime = _mapped(path)
    except OSError:
        return None  # no entry (or no readable one, or one of an older format: the parse that follows rewrites it)
    except Damaged:  # (an empty file)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    seal_key = _seal_key(str(cache_dir))
    if seal_key is None:
        return None  # no key this process can read: a miss, the entry left to those who can
    try:
        with paused_gc():
            out = _read_entry(path, buffer, seal_key, classifier)
        if time.time() - mtime > _USE_RESOLUTION:
            os.utime(path)  # last use, for pruning
        return out
    except _UNREADABLE:
        # A damaged entry is a miss; it is rewritten after parsing.
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _entry_doc(buffer: pa.Buffer, key: bytes | None) -> dict[str, Any]:
    """The metadata of an entry file (see :data:`ENTRY_FILE`), its magic, format, CRC-32 and
    seal (with the cache folder's ``key``) checked."""
    size = buffer.size
    if size < len(_MAGIC) + _TRAILER.size:
        raise Damaged("too short")
    view = memoryview(buffer)
    meta_at, meta_len, seal, crc, fmt, magic = _TRAILER.unpack_from(view, size - _TRAILER.size)
    if magic != _MAGIC or fmt != ENTRY_FORMAT or view[: len(_MAGIC)].tobytes() != _MAGIC:
        raise Damaged("not an entry of this format")
    body = size - _TRAILER.size
    body_crc = _crc32(view[:body])
    if _crc32(view[body : size - _CHECKED_TAIL], body_crc) != crc:
        raise Damaged("the entry was changed")
    if key is None or not hmac.compare_digest(seal, _seal(key, body_crc, body, ENTRY_FORMAT)):
        raise Damaged("not sealed by this cache's writer")
    if meta_at + meta_len != body or meta_at < len(_MAGIC):
        raise Damaged("no metadata")
    doc = _decode_meta(bytes(view[meta_at:body]))
    if not isinstance(doc, dict):
        raise Damaged("no metadata")
    metas, spans = doc["ranks"], doc["streams"]
    if not isinstance(metas, list) or not metas or not isinstance(spans, list) or len(spans) != len(metas):
        raise Damaged("no ranks")
    for span in spans:
        start, length = span
        if type(start) is not int or type(length) is not int or start < len(_MAGIC) or length < 0:
            raise Damaged("a rank outside the file")
        if start + length > meta_at:
            raise Damaged("a rank outside the file")
    return doc


def _read_entry(path: str, buffer: pa.Buffer, key: bytes | None, classifier: Classifier) -> list[RankData]:
    doc = _entry_doc(buffer, key)
    stored = doc["classes"]
    kept = stored is not None and stored == rules_key(classifier)
    return [
        _read_rank(path, buffer, span, RankMeta.from_json(meta), stored, kept, classifier)
        for meta, span in zip(doc["ranks"], doc["streams"], strict=True)
    ]


def _read_rank(
    path: str, buffer: pa.Buffer, span: list[int], meta: RankMeta, stored: Any, kept: bool, classifier: Classifier
) -> RankData:
    """The rank whose tables lie at ``span`` (start, length) of the entry file ``buffer``
    (sealed: read when first used, :class:`_Stream`), with ``meta``, classified by
    ``classifier`` (unless ``kept``: the stored ``gpu_class`` column is that classifier's)."""
    start, length = span
    stream = _Stream(path, buffer.slice(start, length), stored is not None)
    tables = {name: Deferred(functools.partial(stream.frame, name)) for name in TABLES}
    d = RankData(meta=meta, **tables)
    if kept:
        return d
    return replaced(d, events=Deferred(functools.partial(_classified_events, d, classifier)))


class _Stream:
    """A rank's tables in a sealed entry: read (and checked again, cheaply next to building the
    frames) when the first of them is built; each frame built from them by :func:`from_arrow`."""

    def __init__(self, path: str, stream: pa.Buffer, classes: bool) -> None:
        self._path, self._stream, self._classes = path, stream, classes
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[tuple[str, ...], pa.StructArray]] | None = None

    def frame(self, name: str) -> pd.DataFrame:
        with self._lock:
            if self._tables is None:
                self._tables = self._read()
        names, rows = self._tables[name]
        return from_arrow(names, rows)

    def _read(self) -> dict[str, tuple[tuple[str, ...], pa.StructArray]]:
        try:
            batch = pa.ipc.open_stream(self._stream).read_next_batch()
            tables = {name: (names, rows) for name, names, rows in check_rank(batch, schema_message(self._stream))}
            if self._classes != ("gpu_class" in tables["events"][0]):
                raise Damaged("the gpu_class column does not match the metadata")
        except _UNREADABLE as exc:  # (what this module sealed passed these checks when written)
            raise TraceviewError(
                f"{self._path}: a sealed cache entry whose tables cannot be read ({exc}): "
                "clear the cache (tv.clear_cache()) and load again"
            ) from None
        return tables


def _classified_events(d: RankData, classifier: Classifier) -> pd.DataFrame:
    return classified(d, classifier).events


def read_rank(entry: str, i: int, meta: RankMeta, *, classifier: Classifier) -> RankData | None:
    """Rank ``i`` of the entry in folder ``entry`` as :func:`read` gives it, with ``meta`` (the
    loader may have renumbered the rank), or None if the entry is missing, unreadable or
    damaged (left as it is: unlike :func:`read`, for a process other than the loader's, e.g.
    a worker computing per-rank results, which then get computed elsewhere)."""
    try:
        path = os.path.join(entry, ENTRY_FILE)
        buffer = _file_buffer(path)
        with paused_gc():
            doc = _entry_doc(buffer, _seal_key(os.path.dirname(os.path.abspath(entry))))
            stored = doc["classes"]
            kept = stored is not None and stored == rules_key(classifier)
            return _read_rank(path, buffer, doc["streams"][i], meta, stored, kept, classifier)
    except _UNREADABLE:
        return None


#: Entries bigger than this are written streamed to their file (not assembled in memory first).
_MAP_BYTES = 1 << 20


def _file_buffer(path: str) -> pa.Buffer:
    """The file at ``path``, memory-mapped (see :func:`_mapped`)."""
    return _mapped(path)[0]


def _mapped(path: str) -> tuple[pa.Buffer, float]:
    """The file at ``path``, memory-mapped, and its modification time.

    Mapped: its numeric columns then stay in the page cache, never copied; even for the
    sample's small entries a mapping costs less than a read in a fresh process (no new pages
    to fault in and fill: 0.5 against 1.5 ms for its 8 entries, CRC included), and Python's
    mapping less than Arrow's (~25 us an entry). The cache never changes a file in place
    (entries are written aside and renamed; pruning and healing unlink them), so the mapping
    of a file read here stays what was checked.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_size == 0:
            raise Damaged(f"{os.path.basename(path)} is empty")
        return pa.py_buffer(mmap.mmap(fd, 0, access=mmap.ACCESS_READ)), st.st_mtime
    finally:
        os.close(fd)


#: An entry's last use (its file's modification time, for pruning) is recorded when it is
#: older than this (seconds): not at every read, a system call an entry.
_USE_RESOLUTION = 3600.0


def write(cache_dir: Path, key: str, ranks: Sequence[RankData], *, classifier: Classifier | None) -> None:
    """Store an entry atomically (written aside, then renamed). Failures are silent misses.

    ``classifier``: the one that made the ranks' ``gpu_class`` columns (kept with its key),
    or None for ranks without them.
    """
    if any(("gpu_class" in d.events.columns) != (classifier is not None) for d in ranks):
        raise ValueError("cache.write: ranks with gpu_class columns come with the classifier that made them")
    entry = cache_dir / key
    tmp = cache_dir / f".{key}.{uuid.uuid4().hex}.tmp"
    try:
        tmp.mkdir(parents=True, exist_ok=False)
        seal = _seal_key(str(cache_dir), create=True)
        if seal is None:
            return  # (no key to seal with: the folder is not ours to write)
        # The metadata as it will be read back (JSON round trip).
        metas = json.loads(json.dumps([d.meta.to_json() for d in ranks]))
        doc = {"ranks": metas, "classes": None if classifier is None else rules_key(classifier)}
        batches = [rank_batch(d) for d in ranks]
        for batch in batches:
            # Checked before it is sealed (a load then trusts it): what from_arrow builds of it
            # is the tables given. Never fails for frames the readers make.
            check_rank(batch, batch.schema.serialize().to_pybytes())
        _write_entry(str(tmp / ENTRY_FILE), batches, doc, seal)
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
    except (OSError, Damaged):
        pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_entry(path: str, batches: Sequence[pa.RecordBatch], doc: dict[str, Any], key: bytes) -> None:
    """Write an entry file (see :data:`ENTRY_FILE`) of these ranks' batches and metadata
    ``doc``, sealed with ``key`` (the batches checked: see :func:`write`).

    A small one is written in memory and saved by one write (a quarter of the cost of a file
    stream and a mapping to read it back, for the sample's tables); a big one is streamed
    to the file and read back mapped for its CRC, so that it is never held twice in memory.
    """
    big = sum(b.nbytes for b in batches) > _MAP_BYTES
    sink = pa.OSFile(path, "wb") if big else pa.BufferOutputStream()
    try:
        sink.write(_MAGIC)
        spans = []
        for batch in batches:
            if sink.tell() % _ALIGN:
                sink.write(bytes(_ALIGN - sink.tell() % _ALIGN))
            start = sink.tell()
            with pa.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            spans.append([start, sink.tell() - start])
        meta = json.dumps({**doc, "streams": spans}).encode()
        meta_at = sink.tell()
        sink.write(meta)
        if not big:
            data = sink.getvalue()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.write(fd, _trailer(key, _crc32(memoryview(data)), data.size, meta_at))
            finally:
                os.close(fd)
            return
    finally:
        sink.close()
    with pa.memory_map(path, "r") as written:
        body = written.read_buffer()
        trailer = _trailer(key, _crc32(memoryview(body)), body.size, meta_at)
    with open(path, "ab") as fh:
        fh.write(trailer)


def _trailer(key: bytes, body_crc: int, body_size: int, meta_at: int) -> bytes:
    """The trailer of an entry file whose bytes before it (``body_size`` of them, the metadata
    from ``meta_at``) have the CRC-32 ``body_crc``."""
    head = _TRAILER.pack(meta_at, body_size - meta_at, _seal(key, body_crc, body_size, ENTRY_FORMAT), 0, 0, b"")
    head = head[: _TRAILER.size - _CHECKED_TAIL]
    return head + struct.pack("<II8s", _crc32(head, body_crc), ENTRY_FORMAT, _MAGIC)


def attach_facts(cache_dir: Path, key: str, ranks: Sequence[RankData]) -> None:
    """Give each rank of the entry ``key`` its store of derived results (:mod:`..model.facts`):
    the file ``r<i>.facts`` in the entry, next to its tables (not in ``meta.json``: a missing or
    damaged one is only a miss, see :class:`~..model.facts.RankFacts`)."""
    entry = os.path.join(cache_dir, key)
    for i, d in enumerate(ranks):
        store = RankFacts(os.path.join(entry, f"r{i}.facts"), tables=(entry, i))
        # Keyed by the events frame: attached when it is built (see model.rank_data.Deferred).
        when_built(d, "events", functools.partial(attach, store=store))


def _entry_size(entry: Path) -> int:
    total = 0
    with os.scandir(entry) as it:
        for f in it:
            if f.is_file(follow_symlinks=False):
                total += f.stat(follow_symlinks=False).st_size
    return total


def prune(cache_dir: Path, max_bytes: int = MAX_BYTES) -> int:
    """Delete the least recently used entries until the cache holds at most ``max_bytes``.

    Returns the bytes freed. Called by ``tv.load`` after it wrote entries.
    """
    if not cache_dir.is_dir():
        return 0
    entries = []
    for entry in cache_dir.iterdir():
        # (meta.json: an entry of a format before 6, never read again but pruned alike)
        meta = entry / ENTRY_FILE if (entry / ENTRY_FILE).is_file() else entry / "meta.json"
        if entry.is_dir() and meta.is_file():
            try:
                entries.append((meta.stat().st_mtime, _entry_size(entry), entry))
            except OSError:
                continue
    total = sum(size for _, size, _ in entries)
    freed = 0
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total - freed <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        freed += size
    return freed


def clear_cache(cache_dir: str | os.PathLike[str] | None = None) -> int:
    """Delete every cached entry, and the folder's sealing key (the next write makes a new
    one); returns the bytes freed.

    Examples
    --------
    >>> import tempfile
    >>> import jupyter_traceview as tv
    >>> folder = tempfile.mkdtemp()
    >>> _ = tv.load(tv.sample_path(), cache=folder)  # parsed, and kept in ``folder``
    >>> tv.clear_cache(folder) > 0  # bytes freed
    True
    >>> tv.clear_cache(folder)
    0
    """
    root = Path(cache_dir) if cache_dir is not None else _keys.default_cache_dir()
    if not root.is_dir():
        return 0
    freed = 0
    for entry in root.iterdir():
        if entry.is_dir():
            freed += sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
            shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(OSError):
        (root / SEAL_FILE).unlink()
    return freed
