/**
 * A rank's header: its name in the gutter (a click there collapses or expands the rank) and,
 * while the rank is collapsed, its summary (every row merged per pixel column).
 */
import { formatCount } from "../../format";
import { withAlpha } from "../colors";
import { binAt } from "../hittest";
import { GUTTER } from "../host";
import { type LaneKind } from "./kind";
import { binTip } from "./row";

export const headerLane: LaneKind = {
  place(rank, data, out) {
    const slot = {
      rank,
      row: -1,
      lane: -1,
      depth: 0,
      label: `rank ${rank}`,
      collapsed: data.collapsed.has(rank),
    };
    out.layout.headerSlot.set(rank, out.add(slot, data.opts.headerHeight));
  },

  draw(p, slot, y) {
    const th = p.host.theme;
    p.ctx.fillStyle = withAlpha(th.foreground, th.dark ? 0.06 : 0.04);
    p.ctx.fillRect(0, y, p.width, slot.h);
    const sm = p.host.data?.summaries.get(slot.rank);
    if (slot.collapsed && sm) p.bins(sm, y + 2, slot.h - 3, { rank: slot.rank });
  },

  drawLabel(host, ctx, slot, y) {
    const th = host.theme;
    ctx.fillStyle = withAlpha(th.foreground, th.dark ? 0.08 : 0.05);
    ctx.fillRect(0, y, GUTTER, slot.h);
    ctx.fillStyle = th.foreground;
    ctx.font = `600 ${host.font(12)}`;
    ctx.fillText(`${slot.collapsed ? "▸" : "▾"} ${slot.label}`, 6, y + slot.h / 2);
  },

  hit(host, slot, t) {
    const d = host.data;
    const s = d?.summaries.get(slot.rank);
    if (!d || !slot.collapsed || !s) return null;
    const k = binAt(d.lo, d.hi, d.width, t);
    return k >= 0 && s.count[k]! + (s.frac[k]! > 0 ? 1 : 0) > 0 ? { event: -1, bin: k } : null;
  },

  tooltip(tip, slot) {
    const bins = tip.host.data?.summaries.get(slot.rank);
    if (!bins) return null;
    const k = tip.hover.bin;
    return binTip(tip.host, bins, k, `rank ${slot.rank}: ${formatCount(bins.count[k]!)} events`, {
      rank: slot.rank,
    });
  },

  want(_host, slot, w) {
    if (slot.collapsed) w.summaries.push(slot.rank);
  },

  clickLabel(host, slot) {
    const collapsed = new Set(host.model.get("collapsed"));
    if (collapsed.has(slot.rank)) collapsed.delete(slot.rank);
    else collapsed.add(slot.rank);
    host.save(
      "collapsed",
      [...collapsed].sort((a, b) => a - b),
    );
  },
};
