"""The host call tree as an icicle: Python frames, annotations and operators, widest = longest."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from bokeh.models import ColumnDataSource

from ..analysis import loops
from ..analysis._chains import chain_sums
from ..model.text import as_text
from ..views.colors import Theme
from ._style import (
    add_hover,
    duration_text,
    empty_chart,
    kind_colors,
    linkable,
    new_figure,
    pct_text,
    require,
    text_color,
    time_unit,
)

__all__ = ["call_tree_chart", "icicle_layout"]

#: Colour key (views/colors.json) of each node kind.
_KIND_COLOR = {
    "python_function": "python",
    "cpu_op": "cpu_op",
    "user_annotation": "annotation",
    "thread": "other",
}


def icicle_layout(tree: pd.DataFrame) -> pd.DataFrame:
    """Where each node of one rank's :func:`~jupyter_traceview.call_tree` frame sits: ``x0_ns``, ``x1_ns``.

    A node spans its inclusive time; its children lie side by side from its left edge, in
    ``node_id`` order (longest first). Where children add up to more than their parent
    (ranges nested improperly) they are scaled down to fit it. Thread roots lie side by side.
    """
    ids = tree["node_id"].to_numpy()
    pos = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
    pos[ids] = np.arange(len(ids))
    parent = tree["parent_id"].to_numpy()
    incl = tree["inclusive_ns"].to_numpy().astype(np.float64)
    depth = tree["depth"].to_numpy()
    x0 = np.zeros(len(tree))
    width = incl.copy()
    roots = np.flatnonzero(depth == 0)
    roots = roots[np.argsort(ids[roots], kind="stable")]
    x0[roots] = np.concatenate(([0.0], np.cumsum(width[roots])[:-1]))
    if loops.native is not None and len(tree):
        # One pass, parents first (by depth), siblings contiguous in node_id order: as many
        # steps as nodes, where the level-by-level loop below costs nodes x depth.
        at = np.flatnonzero(depth > 0)
        p = pos[parent[at]]
        order = np.lexsort((ids[at], p, depth[at]))
        at, p, d = at[order], p[order], depth[at][order]
        new = np.ones(len(at), dtype=bool)
        new[1:] = (p[1:] != p[:-1]) | (d[1:] != d[:-1])
        group = np.cumsum(new, dtype=np.int64)
        loops.native.icicle(at.astype(np.int64), p.astype(np.int64), group, incl, x0, width)
    elif not _whole(tree["inclusive_ns"].to_numpy(), ids, pos, parent, depth, x0):
        _levels(ids, pos, parent, incl, depth, x0, width)
    out = tree.copy()
    out["x0_ns"] = x0
    out["x1_ns"] = x0 + width
    return out


def _whole(
    inclusive: np.ndarray, ids: np.ndarray, pos: np.ndarray, parent: np.ndarray, depth: np.ndarray, x0: np.ndarray
) -> bool:
    """:func:`icicle_layout` below the roots where no box is scaled, in integers: writes ``x0``
    and says True, or False (nothing written) where a box would be scaled, a depth is not its
    parent's + 1, or a sum could reach 2**52. Then every float of the level-by-level code is a
    whole number below 2**53, so exact: these integer sums (along the parent chains, by
    pointer jumping) are the same numbers."""
    if not len(ids) or inclusive.dtype.kind not in "iu" or inclusive.min() < 0:
        return False
    inc = inclusive.astype(np.int64)
    if float(inc.sum(dtype=np.float64)) >= 2.0**52:
        return False
    kids = np.flatnonzero(depth > 0)
    p = pos[parent[kids]]
    if (p < 0).any() or (depth[p] != depth[kids] - 1).any():
        return False
    order = np.lexsort((ids[kids], p))
    k, p = kids[order], p[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = p[1:] != p[:-1]
    starts = np.flatnonzero(new)
    before = np.cumsum(inc[k]) - inc[k]  # running sums before each child, all groups in a row
    first = np.repeat(before[starts], np.diff(np.append(starts, len(k))))
    last = np.append(starts[1:], len(k)) - 1
    if (before[last] + inc[k[last]] - before[starts] > inc[p[starts]]).any():
        return False  # children overflow their parent: scaled boxes
    off = np.zeros(len(ids), dtype=np.int64)
    off[k] = before - first
    up = np.full(len(ids), -1, dtype=np.int64)
    up[k] = p
    # x0 = the sum of the offsets along the chain (the roots' x0 included), by pointer jumping.
    x0[:] = chain_sums(up, off + np.where(depth == 0, x0, 0).astype(np.int64))
    return True


def _levels(
    ids: np.ndarray,
    pos: np.ndarray,
    parent: np.ndarray,
    incl: np.ndarray,
    depth: np.ndarray,
    x0: np.ndarray,
    width: np.ndarray,
) -> None:
    """:func:`icicle_layout` below the roots in numpy, one level at a time (``_loops.icicle`` is
    the same in one compiled pass): writes ``x0`` and ``width``."""
    for d in range(1, int(depth.max()) + 1 if len(depth) else 0):
        at = np.flatnonzero(depth == d)
        at = at[np.argsort(ids[at], kind="stable")]
        p = pos[parent[at]]
        # Siblings are contiguous in node_id order within a parent.
        order = np.lexsort((ids[at], p))
        at, p = at[order], p[order]
        sums = pd.Series(incl[at]).groupby(p).transform("sum").to_numpy()
        scale = np.where(sums > width[p], width[p] / np.maximum(sums, 1.0), 1.0)
        width[at] = incl[at] * scale
        before = pd.Series(width[at]).groupby(p).cumsum().to_numpy() - width[at]
        x0[at] = x0[p] + before


def call_tree_chart(
    df: pd.DataFrame,
    *,
    theme: Theme = "light",
    rank: int | None = None,
    min_width: float = 0.002,
    height: int | None = None,
) -> Any:
    """An icicle of the host call tree of one rank: a box per node, as wide as its inclusive time.

    ``df`` is ``call_tree(trace)``; ``rank`` picks the rank (default: the first).
    Thread roots are the top row, each level below holds the nodes one call deeper; boxes
    narrower than ``min_width`` of the whole are left out. Colours are the timeline's
    (Python frames, annotations, operators); a click on a box opens the timeline at the
    node's first call (link target ``event``).
    """
    title = "Host call tree"
    require(
        df, ["rank", "node_id", "parent_id", "depth", "name", "kind", "inclusive_ns", "first_eid"], "call_tree_chart"
    )
    if df.empty:
        return empty_chart(title, "No operators, annotations or Python frames in this trace")
    r = int(df["rank"].iloc[0]) if rank is None else int(rank)
    tree = df.loc[df["rank"] == r]
    if tree.empty:
        return empty_chart(title, f"No host ranges on rank {r}")
    lay = icicle_layout(tree)
    total = float(lay["x1_ns"].max())
    keep = (lay["x1_ns"] - lay["x0_ns"]) >= min_width * total
    lay = lay.loc[keep]
    unit, scale = time_unit(total)
    colors = kind_colors(theme)
    width_px = 900.0
    box_px = (lay["x1_ns"] - lay["x0_ns"]).to_numpy() / max(total, 1.0) * width_px
    names = as_text(lay["name"]).tolist()
    labels = [_fit(n, px) for n, px in zip(names, box_px.tolist(), strict=True)]
    n_levels = int(lay["depth"].max()) + 1
    source = ColumnDataSource(
        {
            "left": lay["x0_ns"].to_numpy() / scale,
            "right": lay["x1_ns"].to_numpy() / scale,
            "top": -lay["depth"].to_numpy().astype(np.float64),
            "bottom": -lay["depth"].to_numpy().astype(np.float64) - 0.95,
            "mid": (lay["x0_ns"].to_numpy() / scale),
            "name": names,
            "label": labels,
            "kind": as_text(lay["kind"]).tolist(),
            "color": [colors.get(_KIND_COLOR.get(k, "other"), colors["other"]) for k in as_text(lay["kind"])],
            "calls": lay["calls"].to_numpy(),
            "incl_txt": duration_text(lay["inclusive_ns"].to_numpy()),
            "excl_txt": duration_text(lay["exclusive_ns"].to_numpy()),
            "share_txt": pct_text(100.0 * lay["inclusive_ns"].to_numpy() / max(total, 1.0)),
            "link_rank": np.full(len(lay), r, dtype=np.int64),
            "link_eid": lay["first_eid"].to_numpy().astype(np.int64),
        }
    )
    fig = new_figure(
        title=f"{title} (rank {r}): width = inclusive time; click a box to see its first call on the timeline",
        height=height or min(120 + 22 * n_levels, 900),
        tooltips=None,
        x_range=(0, total / scale),
        y_range=(-float(n_levels), 0.05),
        x_label=f"inclusive time ({unit})",
        tools="xpan,xwheel_zoom,reset,save",
    )
    fig.yaxis.visible = False
    fig.ygrid.visible = False
    quads = fig.quad(
        left="left",
        right="right",
        top="top",
        bottom="bottom",
        source=source,
        fill_color="color",
        line_color=text_color("dark" if theme == "light" else "light"),
        line_width=0.5,
    )
    fig.text(
        x="mid",
        y="bottom",
        text="label",
        source=source,
        x_offset=3,
        y_offset=-3,
        text_font_size="11px",
        text_color="#111111",
        text_baseline="bottom",
    )
    add_hover(
        fig,
        [
            ("", "@name"),
            ("kind", "@kind"),
            ("calls", "@calls"),
            ("inclusive", "@incl_txt (@share_txt)"),
            ("exclusive", "@excl_txt"),
        ],
        [quads],
    )
    linkable(fig, source, "event", [quads])
    return fig


def _fit(name: str, px: float, char_px: float = 6.5) -> str:
    """``name`` cut to fit a box ``px`` wide (empty when not even three characters fit)."""
    n = int((px - 6) / char_px)
    if n < 3:
        return ""
    return name if len(name) <= n else name[: n - 1] + "…"
