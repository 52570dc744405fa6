/**
 * Row lanes: one row per GPU stream or CPU thread and nesting depth, raw events when the
 * window holds them, else merged per pixel column (views/timeline/rank_index.py answers both).
 * A click on an event selects it.
 */
import {
  formatCount,
  formatDuration,
  formatPct,
  formatRate,
  formatTimePrecise as formatTime,
} from "../../format";
import { binAt, eventAt } from "../hittest";
import type { ViewHost } from "../host";
import { type BinRow, type RawRow, NO_KIND } from "../protocol";
import { type LaneKind, type Tip, columnSpan } from "./kind";

/** The tooltip of column `k` of merged columns `bins` (a row's, or a collapsed rank's summary). */
export function binTip(
  host: ViewHost,
  bins: BinRow,
  k: number,
  title: string,
  target: { rank: number } | { row: number },
): Tip {
  const d = host.data!;
  const palette = host.model.get("_palette");
  const [a, b] = columnSpan(d, k);
  const lines: [string, string][] = [];
  const kind = bins.kind[k]!;
  lines.push(["busy", `${formatPct(bins.frac[k]! * 100)} of ${formatDuration(b - a)}`]);
  if (kind !== NO_KIND) lines.push(["mostly", host.colors.label(palette.kinds[kind]?.key ?? "")]);
  lines.push(["at", formatTime(a)]);
  if (bins.match && bins.match[k]! > 0) lines.push(["matches", formatCount(bins.match[k]!)]);
  const names = host.binNames?.(target, a, b) ?? [];
  for (const [name, n] of names) lines.push([`× ${formatCount(n)}`, name]);
  lines.push(["", names.length ? "starting here (the report's grid)" : "zoom in to see the events"]);
  return { title, lines };
}

export const rowLane: LaneKind = {
  place(rank, data, out) {
    if (data.collapsed.has(rank)) return;
    const folded = data.showCpu && data.cpuCollapsed.has(rank);
    const o = data.opts;
    for (const lane of data.lanesByRank.get(rank) ?? []) {
      if (lane.type === "cpu" && (!data.showCpu || folded)) continue;
      const h = lane.type === "gpu" ? o.gpuRowHeight : o.cpuRowHeight;
      lane.rows.forEach((rid, i) => {
        const meta = data.rowById.get(rid);
        const slot = { rank, row: rid, lane: lane.id, depth: meta ? meta.depth : i };
        out.layout.rowSlot.set(
          rid,
          out.add({ ...slot, label: i === 0 ? lane.label : "", collapsed: false }, h),
        );
      });
      out.gap();
    }
  },

  draw(p, slot, y) {
    p.row(slot.row, slot, y);
  },

  hit(host, slot, t) {
    const d = host.data;
    const row = d?.rows.get(slot.row);
    if (!d || !row) return null;
    if (row.mode === "raw") {
      const tol = (3 * (host.range.hi - host.range.lo)) / host.width;
      const k = eventAt(row.start, row.dur, t, tol);
      return k >= 0 ? { event: k, bin: -1 } : null;
    }
    const k = binAt(d.lo, d.hi, d.width, t);
    return k >= 0 && (row.frac[k]! > 0 || row.count[k]! > 0) ? { event: -1, bin: k } : null;
  },

  tooltip(tip, slot) {
    const host = tip.host;
    const h = tip.hover;
    const d = host.data!;
    if (h.event < 0) {
      const bins = d.rows.get(slot.row) as BinRow | undefined;
      if (!bins) return null;
      return binTip(host, bins, h.bin, `${formatCount(bins.count[h.bin]!)} events merged`, { row: slot.row });
    }
    const row = d.rows.get(slot.row) as RawRow | undefined;
    if (!row) return null;
    const palette = host.model.get("_palette");
    const i = h.event;
    const lines: [string, string][] = [];
    const title = d.names[row.name[i]!] ?? "";
    const kindKey = palette.kinds[row.kind[i]!]?.key ?? "";
    lines.push(["duration", formatDuration(row.dur[i]!)]);
    lines.push(["start", formatTime(row.start[i]!)]);
    const lane = host.lanes.get(slot.lane);
    lines.push(["rank", String(slot.rank)]);
    if (lane)
      lines.push([
        lane.type === "gpu" ? "stream" : "thread",
        lane.type === "gpu" ? `${lane.stream} (GPU ${lane.device})` : lane.label,
      ]);
    lines.push(["kind", host.colors.label(kindKey)]);
    const rank = slot.rank;
    const eid = row.eid[i]!;
    const details = tip.later(`details:${rank}:${eid}`, () => host.details(rank, eid));
    if (details) {
      if (details.grid && details.block)
        lines.push(["grid · block", `[${details.grid.join(", ")}] · [${details.block.join(", ")}]`]);
      if (details.registers_per_thread !== undefined)
        lines.push(["registers", String(details.registers_per_thread)]);
      if (details.occupancy_pct !== undefined)
        lines.push(["est. occupancy", formatPct(details.occupancy_pct)]);
      if (details.bytes !== undefined) lines.push(["bytes", formatCount(details.bytes)]);
      if (details.bandwidth_gbps !== undefined) lines.push(["bandwidth", formatRate(details.bandwidth_gbps)]);
      if (details.collective)
        lines.push(["collective", `${details.collective.collective} ${details.collective.dtype ?? ""}`]);
      if (details.operator) lines.push(["operator", details.operator.name]);
      if (details.launch)
        lines.push(["launched by", `${details.launch.name} at ${formatTime(details.launch.start)}`]);
    }
    return { title, lines };
  },

  want(_host, slot, w) {
    w.rows.push(slot.row);
  },

  click(host, slot, hit) {
    if (!hit || hit.event < 0) return false;
    const row = host.data?.rows.get(slot.row);
    if (!row || row.mode !== "raw") return false;
    host.select(slot.rank, row.eid[hit.event]!);
    return true;
  },
};
