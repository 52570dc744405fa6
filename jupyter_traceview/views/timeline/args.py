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
shape for many calls), so each distinct text is matched once per pattern.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...model.rank_data import RankData

__all__ = ["event_args_text"]

#: Columns of each table in the text, in this order (missing values and negative counts left out).
_OP_ARGS = ("input_dims", "input_type", "input_strides", "concrete_inputs")
_COMMS_TEXT = ("collective", "dtype", "pg_name", "pg_desc")
_COMMS_COUNTS = ("in_nelems", "out_nelems", "group_size", "seq")


def _labels(v: pd.Series, key: str, *, count: bool) -> np.ndarray:
    """``key=value`` per row of ``v`` as an object array, "" where missing (or a negative count).

    Each distinct value is formatted once (columns are categorical or small sets of counts).
    """
    if count:
        a = v.to_numpy().astype(np.int64)
        u, inv = np.unique(a, return_inverse=True)
        text = np.array([f"{key}={x}" if x >= 0 else "" for x in u.tolist()], dtype=object)
        return text[inv.reshape(-1)] if len(a) else np.empty(0, dtype=object)
    cat = v if isinstance(v.dtype, pd.CategoricalDtype) else v.astype("category")
    codes = cat.cat.codes.to_numpy()
    text = np.array([f"{key}={c}" if str(c) != "" else "" for c in cat.cat.categories] + [""], dtype=object)
    return text[np.where(codes >= 0, codes, len(text) - 1)]


def _join(parts: list[np.ndarray], n: int) -> np.ndarray:
    """Element-wise join of object arrays of strings with spaces, skipping empty ones."""
    out = np.full(n, "", dtype=object)
    for p in parts:
        has = p != ""
        both = has & (out != "")
        out = np.where(both, out + " " + p, np.where(has, p, out))
    return out


def _pairs(frame: pd.DataFrame, text_cols: tuple[str, ...], count_cols: tuple[str, ...]) -> np.ndarray:
    """``key=value`` pairs of each row of ``frame``, joined by spaces (an object array)."""
    parts = [_labels(frame[c], c, count=False) for c in text_cols if c in frame.columns]
    parts += [_labels(frame[c], c, count=True) for c in count_cols if c in frame.columns]
    return _join(parts, len(frame))


def _triple(frame: pd.DataFrame, name: str) -> np.ndarray:
    """``name=[x,y,z]`` of each row (an object array), each distinct triple formatted once."""
    xyz = np.stack([frame[f"{name}_{a}"].to_numpy().astype(np.int64) for a in "xyz"], axis=1)
    if not len(xyz):
        return np.empty(0, dtype=object)
    u, inv = np.unique(xyz, axis=0, return_inverse=True)
    text = np.array([f"{name}=[{x},{y},{z}]" for x, y, z in u.tolist()], dtype=object)
    return text[inv.reshape(-1)]


def event_args_text(data: RankData) -> pd.Series:
    """The argument text of every event of ``data`` that has one: a str Series indexed by ``eid``.

    See the module docstring for what it holds; the order of the tables is ``op_args``,
    ``comms``, ``gpu_args``.
    """
    parts: list[pd.Series] = []
    op = data.op_args
    if len(op):
        parts.append(pd.Series(_pairs(op, _OP_ARGS, ()), index=op["eid"].to_numpy()))
    cm = data.comms
    if len(cm):
        parts.append(pd.Series(_pairs(cm, _COMMS_TEXT, _COMMS_COUNTS), index=cm["eid"].to_numpy()))
    ga = data.gpu_args
    if len(ga):
        launch = [_triple(ga, "grid"), _triple(ga, "block")]
        launched = (ga["grid_x"] >= 0).to_numpy()
        launch = [np.where(launched, t, "") for t in launch]
        text = _join([*launch, _labels(ga["copy_kind"], "copy_kind", count=False)], len(ga))
        parts.append(pd.Series(text, index=ga["eid"].to_numpy()))
    if not parts:
        return pd.Series([], index=pd.Index([], dtype=np.int64), dtype=object)
    allp = pd.concat(parts)
    allp = allp[allp.to_numpy() != ""]
    # One text per event: the tables' texts joined where an event is in several.
    dup = allp.index.duplicated(keep=False)
    if dup.any():
        joined = allp[dup].groupby(level=0, sort=False).agg(" ".join)
        allp = pd.concat([allp[~dup], joined])
    allp = allp.sort_index(kind="stable")
    allp.index = allp.index.astype(np.int64)
    return allp
