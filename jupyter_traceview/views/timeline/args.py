"""The searchable text of an event's recorded arguments, for the timeline's search.

The timeline's search box (and :meth:`Timeline.highlight`) matches a pattern against each
event's full name and against this text: ``key=value`` pairs joined by spaces, from the
rank's tables that carry arguments (``docs/schema.md``):

- ``op_args`` (``record_shapes=True``): ``input_dims``, ``input_type``, ``input_strides``,
  ``concrete_inputs`` as recorded, e.g. ``input_dims=[[32,64],[64]] input_type=["float","float"]``;
- ``comms``: ``collective``, ``dtype``, ``in_nelems``, ``out_nelems``, ``group_size``,
  ``pg_name``, ``pg_desc``, ``seq`` (those recorded), e.g. ``collective=all_reduce dtype=float in_nelems=1024``;
- ``gpu_args``: ``grid`` and ``block`` of kernels (``grid=[8,1,1] block=[128,1,1]``) and the
  ``copy_kind`` of copies (``copy_kind=HtoD``).

An event without arguments has no text (only its name is searched). Texts repeat a lot (one
shape for many calls): each column's distinct values are formatted once, rows are grouped by
their combination of values (integer codes, no per-row string work), and each distinct text
is built, and matched per pattern, once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...model.rank_data import RankData

__all__ = ["event_args_codes", "event_args_text"]

#: Columns of each table in the text, in this order (missing values and negative counts left out).
_OP_ARGS = ("input_dims", "input_type", "input_strides", "concrete_inputs")
_COMMS_TEXT = ("collective", "dtype", "pg_name", "pg_desc")
_COMMS_COUNTS = ("in_nelems", "out_nelems", "group_size", "seq")

#: One column of a table: the ``key=value`` label of each distinct value ("" for none) and
#: each row's code into them.
_Column = tuple[list[str], np.ndarray]


def _text_column(v: pd.Series, key: str) -> _Column:
    cat = v if isinstance(v.dtype, pd.CategoricalDtype) else v.astype("category")
    codes = cat.cat.codes.to_numpy().astype(np.int64)
    labels = [f"{key}={c}" if str(c) != "" else "" for c in cat.cat.categories] + [""]
    return labels, np.where(codes >= 0, codes, len(labels) - 1)


def _count_column(v: pd.Series, key: str) -> _Column:
    u, inv = np.unique(v.to_numpy().astype(np.int64), return_inverse=True)
    return [f"{key}={x}" if x >= 0 else "" for x in u.tolist()], inv.reshape(-1).astype(np.int64)


def _triple_column(frame: pd.DataFrame, key: str, rows: np.ndarray) -> _Column:
    """``key=[x,y,z]`` where ``rows`` (a mask), "" elsewhere."""
    parts = [np.unique(frame[f"{key}_{a}"].to_numpy().astype(np.int64), return_inverse=True) for a in "xyz"]
    radix = [len(u) for u, _ in parts]
    combo = (parts[0][1].reshape(-1) * radix[1] + parts[1][1].reshape(-1)) * radix[2] + parts[2][1].reshape(-1)
    u, inv = np.unique(np.where(rows, combo, -1), return_inverse=True)
    labels = []
    for c in u.tolist():
        if c < 0:
            labels.append("")
            continue
        c, z = divmod(c, radix[2])
        x, y = divmod(c, radix[1])
        labels.append(f"{key}=[{parts[0][0][x]},{parts[1][0][y]},{parts[2][0][z]}]")
    return labels, inv.reshape(-1).astype(np.int64)


def _combine(columns: list[_Column], n: int) -> tuple[np.ndarray, list[str]]:
    """Each row's code into the distinct texts (its columns' labels joined by spaces)."""
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for labels, codes in columns:
        if radix * len(labels) >= 2**62:  # too many combinations for one int64: fold what we have
            u, inv = np.unique(key, return_inverse=True)
            key, radix = inv.reshape(-1).astype(np.int64), len(u)
        key = key * len(labels) + codes
        radix *= len(labels)
    u, inv = np.unique(key, return_inverse=True)
    texts = []
    for k in u.tolist():
        picked = []
        for labels, _ in reversed(columns):
            k, c = divmod(k, len(labels))
            if labels[c]:
                picked.append(labels[c])
        texts.append(" ".join(reversed(picked)))
    return inv.reshape(-1).astype(np.int64), texts


def event_args_codes(data: RankData) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The argument text of the events of ``data`` that have one, as codes: ``(eids, codes, texts)``.

    ``eids`` sorted and distinct; ``texts[codes[i]]`` is the text of event ``eids[i]`` (see
    the module docstring; tables in the order ``op_args``, ``comms``, ``gpu_args``); ``texts``
    are distinct and none is empty.
    """
    tables: list[tuple[np.ndarray, list[_Column]]] = []
    op = data.op_args
    if len(op):
        tables.append((op["eid"].to_numpy(), [_text_column(op[c], c) for c in _OP_ARGS if c in op.columns]))
    cm = data.comms
    if len(cm):
        cols = [_text_column(cm[c], c) for c in _COMMS_TEXT if c in cm.columns]
        cols += [_count_column(cm[c], c) for c in _COMMS_COUNTS if c in cm.columns]
        tables.append((cm["eid"].to_numpy(), cols))
    ga = data.gpu_args
    if len(ga):
        launched = (ga["grid_x"] >= 0).to_numpy()
        cols = [_triple_column(ga, "grid", launched), _triple_column(ga, "block", launched)]
        cols.append(_text_column(ga["copy_kind"], "copy_kind"))
        tables.append((ga["eid"].to_numpy(), cols))
    eids_parts: list[np.ndarray] = []
    codes_parts: list[np.ndarray] = []
    texts: list[str] = []
    for eids, cols in tables:
        codes, t = _combine(cols, len(eids))
        eids_parts.append(eids.astype(np.int64))
        codes_parts.append(codes + len(texts))
        texts += t
    if not eids_parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), []
    eids = np.concatenate(eids_parts)
    codes = np.concatenate(codes_parts)
    keep = np.array([t != "" for t in texts], dtype=bool)[codes]
    eids, codes = eids[keep], codes[keep]
    order = np.argsort(eids, kind="stable")
    eids, codes = eids[order], codes[order]
    # An event in several tables: one text, the tables' texts joined (few events: a loop).
    dup = np.flatnonzero(eids[1:] == eids[:-1]) + 1
    if len(dup):
        firsts = np.unique(np.concatenate([dup - 1, dup]))
        starts = firsts[np.r_[True, eids[firsts[1:]] != eids[firsts[:-1]]]]
        for i in starts.tolist():
            j = i
            parts = []
            while j < len(eids) and eids[j] == eids[i]:
                parts.append(texts[int(codes[j])])
                j += 1
            texts.append(" ".join(parts))
            codes[i] = len(texts) - 1
        first = np.r_[True, eids[1:] != eids[:-1]]
        eids, codes = eids[first], codes[first]
    # The texts used, each once (two tables may give the same one).
    used, local = np.unique(codes, return_inverse=True)
    uniq, inv = np.unique(np.array([texts[i] for i in used.tolist()], dtype=object), return_inverse=True)
    return eids, inv.reshape(-1)[local.reshape(-1)].astype(np.int64), [str(t) for t in uniq]


def event_args_text(data: RankData) -> pd.Series:
    """The argument text of every event of ``data`` that has one: a str Series indexed by ``eid``."""
    eids, codes, texts = event_args_codes(data)
    return pd.Series(np.asarray(texts, dtype=object)[codes] if len(codes) else [], index=eids, dtype=object)
