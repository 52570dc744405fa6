/**
 * Memory lanes: allocated bytes drawn as an area of each pixel column's maximum
 * (a peak is never lost when zoomed out), reserved bytes as a dashed line over it, the
 * lane's peak marked; the tooltip's text for a column (pure helpers, unit-tested; the
 * numbers are memory_timeline's, binned by views/timeline/memory.py).
 *
 * Hardware counter lanes (PM sampling's "GPU N Counters" tracks, `kind: "counter"`) are the
 * same lanes with one series: the sampled value (a step function too), written in the
 * lane's `unit` (a % lane's scale tops at 100% at least).
 */
import { MISSING, formatBytes, formatCount, formatPct, formatTimePrecise, sig3 } from "../../format";
import { withAlpha } from "../colors";
import { type Ctx, type Scale, xOf } from "../draw";
import { type ViewHost, AXIS, GUTTER } from "../host";
import type { Slot } from "../layout";
import type { MemoryMeta } from "../messages";
import type { MemoryBins } from "../protocol";
import { type LaneKind, columnSpan } from "./kind";

/** Default height of a memory lane, px. */
export const MEMORY_HEIGHT = 36;

/** The largest value a lane's vertical scale must hold: the lane's peak (fixed while zooming). */
export function memoryTop(meta: MemoryMeta): number {
  const top = Math.max(meta.peak_allocated, meta.peak_reserved, 1);
  return meta.unit === "%" ? Math.max(top, 100) : top;
}

/** A lane's value in its unit: bytes ("3 MiB"), % ("42.1%"), else a plain number ("2,048", "1.25"). */
export function formatLevel(meta: MemoryMeta, v: number): string {
  if (meta.unit === "bytes") return formatBytes(v);
  if (meta.unit === "%") return formatPct(v);
  if (!Number.isFinite(v)) return MISSING;
  return Math.abs(v) >= 1000 ? formatCount(v) : sig3(v);
}

/** Canvas y of `bytes` in a lane drawn in `[y, y + h)` whose scale tops at `top` bytes. */
export function memoryY(bytes: number, y: number, h: number, top: number): number {
  const f = Math.min(Math.max(bytes / top, 0), 1);
  return y + h - f * h;
}

/**
 * The outline of an area (or line) through the columns' values: one polygon per run of
 * defined columns (NaN: no value yet), as flat `[x, y, x, y, ...]` arrays. Column `k` of a
 * window `[lo, hi)` of `width` columns covers `[lo + k * step, lo + (k + 1) * step)`; each
 * column is a flat step at its value. With `closed`, each run starts and ends on the
 * baseline (an area); otherwise it is the step line alone. Columns outside the plot
 * (`s.x0` to `s.x0 + s.width`) are skipped.
 */
export function memoryOutline(
  values: Float64Array,
  lo: number,
  hi: number,
  width: number,
  s: Scale,
  y: number,
  h: number,
  top: number,
  closed: boolean,
): number[][] {
  const out: number[][] = [];
  const step = (hi - lo) / Math.max(width, 1);
  const base = y + h;
  let cur: number[] | null = null;
  let lastX = 0;
  const finish = () => {
    if (cur && closed) cur.push(lastX, base);
    if (cur) out.push(cur);
    cur = null;
  };
  for (let k = 0; k < values.length; k++) {
    const v = values[k]!;
    const x0 = xOf(s, lo + k * step);
    const x1 = xOf(s, lo + (k + 1) * step);
    if (!Number.isFinite(v) || x1 < s.x0 || x0 > s.x0 + s.width) {
      finish();
      continue;
    }
    const yy = memoryY(v, y, h, top);
    if (!cur) {
      cur = closed ? [x0, base, x0, yy] : [x0, yy];
    } else {
      cur.push(x0, yy);
    }
    cur.push(x1, yy);
    lastX = x1;
  }
  finish();
  return out;
}

/** Where the lane's peak is drawn (x, y), or null when it is outside the plot. */
export function peakMark(meta: MemoryMeta, s: Scale, y: number, h: number): [number, number] | null {
  const x = xOf(s, meta.peak_ts);
  if (x < s.x0 || x > s.x0 + s.width) return null;
  return [x, memoryY(meta.peak_allocated, y, h, memoryTop(meta))];
}

export interface MemoryStyle {
  area: string;
  line: string;
  reserved: string;
  peak: string;
  text: string;
  font: string;
}

/** Draw one memory lane in `[y, y + h)`; returns the polygons drawn. */
export function drawMemory(
  ctx: Ctx,
  meta: MemoryMeta,
  bins: MemoryBins,
  lo: number,
  hi: number,
  width: number,
  s: Scale,
  y: number,
  h: number,
  style: MemoryStyle,
): number {
  const top = memoryTop(meta);
  const trace = (poly: number[]) => {
    ctx.moveTo(poly[0]!, poly[1]!);
    for (let i = 2; i < poly.length; i += 2) ctx.lineTo(poly[i]!, poly[i + 1]!);
  };
  const area = memoryOutline(bins.allocMax, lo, hi, width, s, y, h, top, true);
  ctx.fillStyle = style.area;
  ctx.beginPath();
  for (const p of area) trace(p);
  ctx.fill();
  ctx.strokeStyle = style.line;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const p of memoryOutline(bins.allocMax, lo, hi, width, s, y, h, top, false)) trace(p);
  ctx.stroke();
  let n = area.length;
  if (meta.peak_reserved > 0) {
    const res = memoryOutline(bins.resMax, lo, hi, width, s, y, h, top, false);
    ctx.strokeStyle = style.reserved;
    ctx.setLineDash([3, 2]);
    ctx.beginPath();
    for (const p of res) trace(p);
    ctx.stroke();
    ctx.setLineDash([]);
    n += res.length;
  }
  const pk = peakMark(meta, s, y, h);
  if (pk) {
    const [px, py] = pk;
    ctx.fillStyle = style.peak;
    ctx.beginPath();
    ctx.moveTo(px, py);
    ctx.lineTo(px - 4, py - 6);
    ctx.lineTo(px + 4, py - 6);
    ctx.closePath();
    ctx.fill();
    ctx.font = style.font;
    ctx.fillStyle = style.text;
    ctx.textBaseline = "top";
    const label = `peak ${formatLevel(meta, meta.peak_allocated)}`;
    const tw = ctx.measureText(label).width;
    ctx.textAlign = px + 6 + tw > s.x0 + s.width ? "right" : "left";
    ctx.fillText(label, ctx.textAlign === "right" ? px - 6 : px + 6, y + 1);
    ctx.textAlign = "left";
  }
  return n;
}

/** Column of `bins` under time `t` that has a value, or -1. */
export function memoryBinAt(bins: MemoryBins, lo: number, hi: number, width: number, t: number): number {
  if (t < lo || t >= hi || width <= 0) return -1;
  const k = Math.min(Math.floor(((t - lo) / (hi - lo)) * width), width - 1);
  return Number.isFinite(bins.allocMax[k]) ? k : -1;
}

/** The tooltip of column `k` (covering `[a, b)`): a title and `[label, value]` lines. */
export function memoryTooltip(
  meta: MemoryMeta,
  bins: MemoryBins,
  k: number,
  a: number,
  b: number,
): { title: string; lines: [string, string][] } {
  const lines: [string, string][] = [];
  const max = bins.allocMax[k]!;
  const end = bins.allocEnd[k]!;
  lines.push([meta.kind === "counter" ? "value" : "allocated", formatLevel(meta, end)]);
  if (max !== end) lines.push(["max in column", formatLevel(meta, max)]);
  if (meta.peak_reserved > 0) {
    const resMax = bins.resMax[k]!;
    const resEnd = bins.resEnd[k]!;
    lines.push(["reserved", formatBytes(resEnd)]);
    if (resMax !== resEnd) lines.push(["reserved max", formatBytes(resMax)]);
  }
  lines.push(["at", `${formatTimePrecise(a)} – ${formatTimePrecise(b)}`]);
  lines.push(["rank", String(meta.rank)]);
  const isPeak = meta.peak_ts >= a && meta.peak_ts < b;
  lines.push([
    "peak",
    `${formatLevel(meta, meta.peak_allocated)} at ${formatTimePrecise(meta.peak_ts)}${isPeak ? " (here)" : ""}`,
  ]);
  return { title: meta.label, lines };
}

/** Draw the memory lane of `slot` (a memory slot) at canvas `y`; returns the polygons drawn. */
export function drawMemorySlot(host: ViewHost, ctx: Ctx, slot: Slot, y: number, s: Scale): number {
  const d = host.data;
  const bins = d?.memory.get(slot.row);
  const meta = memoryMeta(host, slot.row);
  if (!d || !bins || !meta) return 0;
  const th = host.theme;
  return drawMemory(ctx, meta, bins, d.lo, d.hi, d.width, s, y + 2, slot.h - 5, {
    area: withAlpha(th.accent, 0.35),
    line: th.accent,
    reserved: th.muted,
    peak: th.foreground,
    text: th.foreground,
    font: host.font(10),
  });
}

/** The lane `id` of the host's state, or undefined. */
export function memoryMeta(host: ViewHost, id: number): MemoryMeta | undefined {
  return host.model.get("_memory").find((c) => c.id === id);
}

/** The column under time `t` in the memory lane of `slot`, or -1. */
export function memoryHit(host: ViewHost, slot: Slot, t: number): number {
  const d = host.data;
  const bins = d?.memory.get(slot.row);
  return d && bins ? memoryBinAt(bins, d.lo, d.hi, d.width, t) : -1;
}

/** The tooltip of column `k` of the memory lane of `slot`, or null. */
export function memorySlotTooltip(
  host: ViewHost,
  slot: Slot,
  k: number,
): { title: string; lines: [string, string][] } | null {
  const d = host.data;
  const bins = d?.memory.get(slot.row);
  const meta = memoryMeta(host, slot.row);
  if (!d || !bins || !meta || k < 0) return null;
  const [a, b] = columnSpan(d, k);
  return memoryTooltip(meta, bins, k, a, b);
}

/** The memory lanes on screen with data: id, canvas y of the lane's middle and its peak's x (or null). */
export function memoryOnScreen(host: ViewHost): { id: number; y: number; peakX: number | null }[] {
  const out: { id: number; y: number; peakX: number | null }[] = [];
  const d = host.data;
  const s: Scale = { lo: host.range.lo, hi: host.range.hi, x0: GUTTER, width: host.width };
  for (const [id, idx] of host.layout.memorySlot) {
    const slot = host.layout.slots[idx]!;
    const y = slot.y + AXIS - host.scrollTop;
    const meta = memoryMeta(host, id);
    if (!d?.memory.has(id) || !meta || y + slot.h <= AXIS || y >= host.viewHeight) continue;
    const pk = peakMark(meta, s, y + 2, slot.h - 5);
    out.push({ id, y: y + slot.h / 2, peakX: pk ? pk[0] : null });
  }
  return out;
}

export const memoryLane: LaneKind = {
  place(rank, data, out) {
    if (data.collapsed.has(rank)) return;
    for (const c of data.memoryByRank.get(rank) ?? []) {
      const slot = { rank, row: c.id, lane: -1, depth: 0, label: c.label, collapsed: false };
      out.layout.memorySlot.set(c.id, out.add(slot, data.opts.memoryHeight ?? MEMORY_HEIGHT));
      out.gap();
    }
  },

  draw(p, slot, y) {
    p.rects += drawMemorySlot(p.host, p.ctx, slot, y, p.scale);
  },

  hit(host, slot, t) {
    const k = memoryHit(host, slot, t);
    return k >= 0 ? { event: -1, bin: k } : null;
  },

  tooltip(tip, slot) {
    return memorySlotTooltip(tip.host, slot, tip.hover.bin);
  },

  want(_host, slot, w) {
    w.memory.push(slot.row);
  },
};
