"""The ``op_args`` table: recorded arguments of CPU operators (``record_shapes=True``).

The Kineto reader keeps, for every CPU operator that carries them, the raw JSON text of
``Input Dims``, ``Input type``, ``Input Strides`` and ``Concrete Inputs`` (the values of
scalar arguments). They are stored as categorical strings of compact JSON (the recorded
value re-encoded without whitespace, once per distinct value): a model of an operator's
work (``analysis/perfmodel``) parses the few distinct values once, and the table stays
small (a training step repeats the same shapes over and over).

The reader calls :func:`collect` on each chunk of decoded events and :func:`table` once per
rank; both take plain sequences, so that this stays independent of how the reader decodes.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ...model.schema import OP_ARGS_COLUMNS, categorical

__all__ = ["FIELDS", "collect", "table"]

#: The recorded arguments kept, in the order of OP_ARGS_COLUMNS after ``eid``.
FIELDS = ("input_dims", "input_type", "input_strides", "concrete_inputs")


class _HasOpArgs(Protocol):
    """What :func:`collect` reads of an event's decoded ``args`` (raw JSON buffers)."""

    input_dims: Any
    input_type: Any
    input_strides: Any
    concrete_inputs: Any


def _texts(raws: list[Any]) -> list[str | None]:
    """The raw JSON texts of one argument, None where it was not recorded.

    Each distinct text is decoded once (a training step repeats the same shapes), and the
    loops run in C (``map``): this is per CPU operator, on the reader's hot path.
    """
    try:
        blobs = list(map(bytes, raws))
    except TypeError:  # None (not recorded) among them
        blobs = [b"" if r is None else bytes(r) for r in raws]
    text_of = {b: (b.decode("utf-8", "replace") if b else None) for b in dict.fromkeys(blobs)}
    return list(map(text_of.__getitem__, blobs))


_GETTERS = {f: operator.attrgetter(f) for f in FIELDS}


def collect(args: Sequence[_HasOpArgs], rows: np.ndarray) -> tuple[np.ndarray, dict[str, list[str | None]]]:
    """Rows (among ``rows``: the CPU operators) that carry shapes, and their argument texts."""
    candidates = [args[i] for i in rows.tolist()]
    try:
        sizes = np.fromiter(map(len, map(_GETTERS["input_dims"], candidates)), dtype=np.int64, count=len(candidates))
    except TypeError:  # None (not recorded) among them
        sizes = np.array([0 if a.input_dims is None else len(a.input_dims) for a in candidates], dtype=np.int64)
    has_dims = sizes > 0
    kept = rows[has_dims].astype(np.int64)
    picked = list(itertools.compress(candidates, has_dims.tolist()))
    out = {f: _texts(list(map(_GETTERS[f], picked))) for f in FIELDS}
    return kept, out


def _compact_text(text: str) -> str:
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))
    except ValueError:
        return text


def _compact(values: list[str | None]) -> pd.Categorical:
    """A categorical of the values as compact JSON (texts that are not JSON are kept)."""
    raw = pd.Categorical(values)
    compacted = [_compact_text(str(c)) for c in raw.categories]
    index: dict[str, int] = {}
    lut = np.array([index.setdefault(c, len(index)) for c in compacted] + [-1], dtype=np.int64)
    codes = lut[np.asarray(raw.codes, dtype=np.int64)]
    return categorical(codes=codes.astype(np.int32), categories=list(index))


def table(rows: np.ndarray, values: dict[str, list[str | None]], eid_of_row: np.ndarray) -> pd.DataFrame:
    """One rank's ``op_args`` table: the rows of this rank, sorted by eid."""
    eids = eid_of_row[rows] if len(rows) else np.empty(0, dtype=np.int64)
    mine = np.flatnonzero(eids >= 0)
    mine = mine[np.argsort(eids[mine], kind="stable")]
    pick = mine.tolist()
    frame: dict[str, Any] = {"eid": eids[mine].astype(np.int64)}
    for f in FIELDS:
        col = values[f]
        frame[f] = _compact([col[i] for i in pick])
    return pd.DataFrame(frame, columns=[c.name for c in OP_ARGS_COLUMNS])
