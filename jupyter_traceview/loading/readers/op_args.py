"""The ``op_args`` table: recorded arguments of CPU operators (``record_shapes=True``).

The Kineto reader keeps, for every CPU operator that carries them, the raw JSON text of
``Input Dims``, ``Input type``, ``Input Strides`` and ``Concrete Inputs`` (the values of
scalar arguments). They are stored as categorical strings of compact JSON (the recorded
value re-encoded without whitespace, once per distinct value): a model of an operator's
work (``analysis/perfmodel``) parses the few distinct values once, and the table stays
small (a training step repeats the same shapes over and over).

The reader calls :func:`collect` on each chunk of decoded events (it takes plain sequences,
so that this stays independent of how the reader decodes), :meth:`OpArgs.concat` once per
file and :meth:`OpArgs.table` once per rank. Values travel as codes into each chunk's
distinct texts: a text is decoded, sorted and compacted once, not once per operator.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import numpy as np
import pandas as pd

from ...model.frames import frame
from ...model.schema import OP_ARGS_COLUMNS, categorical

__all__ = ["FIELDS", "OpArgs", "collect", "empty"]

#: The recorded arguments kept, in the order of OP_ARGS_COLUMNS after ``eid``.
FIELDS = ("input_dims", "input_type", "input_strides", "concrete_inputs")


class _HasOpArgs(Protocol):
    """What :func:`collect` reads of an event's decoded ``args`` (raw JSON buffers)."""

    input_dims: Any
    input_type: Any
    input_strides: Any
    concrete_inputs: Any


def _blobs(raws: Sequence[Any]) -> list[bytes] | None:
    """Each raw JSON buffer as bytes (b"" where not recorded), made in C; None if all are empty.

    One join and one split instead of a ``bytes()`` object per value and call: a NUL byte
    cannot occur in JSON text (the decoder refuses control characters), so it separates the
    values unambiguously; the count is checked anyway.
    """
    try:
        joined = b"\x00".join(raws)
    except TypeError:  # None (not recorded) among them
        return [b"" if r is None else bytes(r) for r in raws]
    if len(joined) == max(len(raws) - 1, 0):
        return None  # only separators: nothing recorded (traces without strides, ...)
    blobs = joined.split(b"\x00")
    if len(blobs) != len(raws):  # never for decoded JSON: the per-value path
        blobs = [b"" if r is None else bytes(r) for r in raws]
    return blobs


def _texts(raws: list[Any]) -> list[str | None]:
    """The raw JSON texts of one argument, None where it was not recorded (per value)."""
    codes, values = _coded(raws)
    return [None if c < 0 else values[c] for c in codes.tolist()]


def _coded(raws: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """Dictionary-encode the raw JSON texts of one argument: (int32 codes, -1 where not
    recorded; the distinct texts in first-seen order).

    Each distinct text is decoded once (a training step repeats the same shapes), and the
    loops run in C (``map`` over a dict that numbers keys as it first meets them).
    """
    blobs = _blobs(raws)
    if blobs is None:
        return np.full(len(raws), -1, dtype=np.int32), []
    number: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)
    number[b""]  # code 0: not recorded
    codes = np.fromiter(map(number.__getitem__, blobs), dtype=np.int32, count=len(raws)) - 1
    values = [b.decode("utf-8", "replace") for b in itertools.islice(number, 1, None)]
    return codes.astype(np.int32), values


_GET_ALL = operator.attrgetter(*FIELDS)


@dataclass
class OpArgs:
    """Recorded arguments of (part of) a file: rows among the kept events, and per field the
    codes (int32, -1 where not recorded) into that field's distinct raw JSON texts."""

    rows: np.ndarray
    codes: dict[str, np.ndarray]
    values: dict[str, list[str]]

    @staticmethod
    def concat(parts: Sequence[OpArgs], offsets: Sequence[int]) -> OpArgs:
        """One file's arguments from its chunks (``offsets``: the first row of each chunk)."""
        if not parts:
            return empty()
        if len(parts) == 1 and all(len(set(v)) == len(v) for v in parts[0].values.values()):
            # (What the loop gives one part whose texts are distinct: its own numbering.)
            p = parts[0]
            return OpArgs(
                rows=(p.rows + offsets[0]).astype(np.int64),
                codes={f: p.codes[f].astype(np.int32) for f in FIELDS},
                values={f: list(p.values[f]) for f in FIELDS},
            )
        codes: dict[str, np.ndarray] = {}
        values: dict[str, list[str]] = {}
        for f in FIELDS:
            index: dict[str, int] = {}
            recoded = []
            for p in parts:
                lut = np.array([index.setdefault(v, len(index)) for v in p.values[f]] + [-1], dtype=np.int32)
                recoded.append(lut[p.codes[f]])
            codes[f] = np.concatenate(recoded).astype(np.int32)
            values[f] = list(index)
        rows = np.concatenate([p.rows + off for p, off in zip(parts, offsets, strict=True)]).astype(np.int64)
        return OpArgs(rows=rows, codes=codes, values=values)

    def texts(self, f: str) -> list[str | None]:
        """The texts of one field, row by row (None where not recorded)."""
        vals = self.values[f]
        return [None if c < 0 else vals[c] for c in self.codes[f].tolist()]

    def table(self, eid_of_row: np.ndarray) -> pd.DataFrame:
        """One rank's ``op_args`` table: the rows of this rank, sorted by eid."""
        eids = eid_of_row[self.rows] if len(self.rows) else np.empty(0, dtype=np.int64)
        mine = np.flatnonzero(eids >= 0)
        mine = mine[np.argsort(eids[mine], kind="stable")]
        table: dict[str, Any] = {"eid": eids[mine].astype(np.int64)}
        for f in FIELDS:
            table[f] = _compact_codes(self.codes[f][mine], self.values[f])
        return frame(table, [c.name for c in OP_ARGS_COLUMNS])


def empty() -> OpArgs:
    """No recorded arguments."""
    return OpArgs(
        rows=np.empty(0, np.int64),
        codes={f: np.empty(0, np.int32) for f in FIELDS},
        values={f: [] for f in FIELDS},
    )


def collect(args: Sequence[_HasOpArgs], rows: np.ndarray) -> OpArgs:
    """Rows (among ``rows``: the CPU operators) that carry shapes, and their argument texts."""
    # The four fields of each operator in one pass (they sit side by side in the struct):
    # fewer passes over the decoded arguments, which are what costs here.
    flat = list(itertools.chain.from_iterable(map(_GET_ALL, map(args.__getitem__, rows.tolist()))))
    dims_codes, dims_values = _coded(flat[0 :: len(FIELDS)])
    has_dims = dims_codes >= 0
    keep = None if has_dims.all() else has_dims.tolist()
    codes = {"input_dims": dims_codes[has_dims]}
    values = {"input_dims": dims_values}
    for i, f in enumerate(FIELDS[1:], start=1):
        column = flat[i :: len(FIELDS)]
        codes[f], values[f] = _coded(column if keep is None else list(itertools.compress(column, keep)))
    return OpArgs(rows=rows[has_dims].astype(np.int64), codes=codes, values=values)


def _no_floats(value: str) -> Any:
    raise ValueError("a float")  # json.dumps formats floats its own way: the json path


#: JSON without floats, for the fast path of :func:`_compact_text`.
_INT_JSON = msgspec.json.Decoder(float_hook=_no_floats)


#: Compact forms of texts met before (the ranks of one job record the same shapes), for texts
#: of up to _MEMO_CHARS characters; emptied when it holds _MEMO_SIZE (at most ~40 MB).
_memo: dict[str, str] = {}
_MEMO_SIZE = 1 << 14
_MEMO_CHARS = 1024


def _compact_text(text: str) -> str:
    """The text as compact JSON (``json.dumps`` with no spaces); itself if it is not JSON."""
    done = _memo.get(text)
    if done is not None:
        return done
    out = _compact(text)
    if len(text) <= _MEMO_CHARS:
        if len(_memo) >= _MEMO_SIZE:
            _memo.clear()
        _memo[text] = out
    return out


def _compact(text: str) -> str:
    """:func:`_compact_text`, computed."""
    if text.isascii() and "\\" not in text:
        # msgspec writes what json.dumps writes for JSON of ints, ASCII strings without
        # escapes, lists, objects, booleans and null (floats are sent to the json path).
        try:
            return msgspec.json.encode(_INT_JSON.decode(text)).decode()
        except msgspec.DecodeError:  # not JSON, or a float in it (ValidationError)
            pass
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))
    except ValueError:
        return text


def _compact_codes(codes: np.ndarray, values: list[str]) -> pd.Categorical:
    """A categorical of the coded texts as compact JSON (texts that are not JSON are kept).

    The categories are the texts used, sorted, then compacted in that order (equal compact
    forms merged): what ``pd.Categorical`` of the texts and a per-category compaction give.
    """
    used = np.unique(codes[codes >= 0])
    order = sorted(used.tolist(), key=values.__getitem__)
    texts = list(map(values.__getitem__, order))
    # Compact forms met before looked up in C (the memo), the others computed.
    compact = list(map(_memo.get, texts))
    if None in compact:
        compact = [_compact_text(t) if c is None else c for t, c in zip(texts, compact, strict=True)]
    index = {c: i for i, c in enumerate(dict.fromkeys(compact))}  # in order of first appearance
    lut = np.full(len(values) + 1, -1, dtype=np.int64)
    lut[order] = list(map(index.__getitem__, compact))
    return categorical(codes=lut[codes].astype(np.int32), categories=list(index))
