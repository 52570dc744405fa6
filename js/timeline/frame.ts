/**
 * One frame of the timeline: gridlines, rows (raw events or merged columns) and collapsed
 * ranks' summaries, labels, search matches, the selection with its launch arrow, the hover
 * outline, steps, the measured range, the label gutter and the time axis.
 */
import { formatDuration } from "../format";
import { drawCollective } from "./collective";
import { axisCaption, ticks } from "./axis";
import { withAlpha } from "./colors";
import {
  type BinStyle,
  type Ctx,
  type Label,
  type Scale,
  RectBatch,
  drawArrow,
  drawAxis,
  drawLabels,
  drawMatches,
  drawRange,
  drawSteps,
  layoutBinRow,
  layoutRawRow,
  xOf,
} from "./draw";
import { type ViewHost, AXIS, GUTTER } from "./host";
import { type Slot, visibleSlots } from "./layout";
import { type BinRow, NO_KIND } from "./protocol";
import { laneKind } from "./lanes";
import type { Painter } from "./lanes/kind";

/** What a frame drew. */
export interface FrameStats {
  rects: number;
  rawRects: number;
  matchRects: number;
  /** Events and columns drawn dimmed because they do not match the search. */
  dimmed: number;
  /** Ranks of the selected collective instance drawn. */
  collectiveRanks: number;
}

/** Opacity of what does not match the search while one is active. */
export const DIM_ALPHA = 0.2;
const dimCache = new Map<string, string>();

/** `color` dimmed (memoised: a frame asks for the same few colours many times). */
export function dimmed(color: string): string {
  let d = dimCache.get(color);
  if (d === undefined) {
    d = withAlpha(color, DIM_ALPHA);
    if (dimCache.size > 512) dimCache.clear();
    dimCache.set(color, d);
  }
  return d;
}

export function scaleOf(host: ViewHost): Scale {
  return { lo: host.range.lo, hi: host.range.hi, x0: GUTTER, width: host.width };
}

/** Canvas y of a slot (rows scroll under the fixed axis band). */
export function slotY(host: ViewHost, slot: Slot): number {
  return slot.y + AXIS - host.scrollTop;
}

/** Draw everything on the host's canvas. */
export function drawFrame(host: ViewHost, ctx: CanvasRenderingContext2D): FrameStats {
  const dpr = window.devicePixelRatio || 1;
  const W = host.canvas.width / dpr;
  const H = host.canvas.height / dpr;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const th = host.theme;
  const colors = host.colors;
  const layout = host.layout;
  ctx.fillStyle = th.background;
  ctx.fillRect(0, 0, W, H);
  const s = scaleOf(host);
  const tk = ticks(s.lo, s.hi, s.width);
  const c = ctx as Ctx;
  // Rows.
  const [first, last] = visibleSlots(layout, host.scrollTop, H - AXIS);
  const batch = new RectBatch();
  const labels: Label[] = [];
  const matches: number[] = [];
  const d = host.data;
  const byName = host.model.get("color_by") === "name";
  const pattern = host.model.get("search");
  const searching = pattern !== "";
  // Dim what does not match only once the data's matches are for this pattern.
  const dimming = searching && host.dataPattern === pattern;
  let rects = 0;
  let rawRects = 0;
  let dim = 0;
  /** A binned row's fill, dimmed in columns without a match while searching. */
  const binFill = (fill: (k: number) => string, match: Uint32Array | null | undefined) =>
    dimming && match
      ? (k: number) => {
          if (match[k]! > 0) return fill(k);
          dim++;
          return dimmed(fill(k));
        }
      : fill;
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, AXIS, W, H - AXIS);
  ctx.clip();
  // Gridlines under everything.
  ctx.strokeStyle = th.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const v of tk.values) {
    const x = Math.round(xOf(s, v)) + 0.5;
    ctx.moveTo(x, AXIS);
    ctx.lineTo(x, H);
  }
  ctx.stroke();
  /**
   * Labels of merged columns where the host names what they hold (the report's `binNames`):
   * the name starting most often in a run, on rows tall enough for text.
   */
  const binLabels = (
    target: { rank: number } | { row: number },
    slotH: number,
    text: (k: number) => string,
  ): Partial<BinStyle> => {
    const names = host.binNames?.bind(host);
    if (!names || slotH < 14) return {};
    return {
      label: (a, b) => names(target, a, b)[0]?.[0] ?? "",
      text,
      plainText: th.foreground,
      charWidth: host.charWidth,
    };
  };
  /** One row (raw events or merged columns) in `slot`'s band at canvas height `y`. */
  const drawRow = (rowId: number, slot: Slot, y: number): void => {
    const row = d?.rows.get(rowId);
    if (!row || !d) return;
    const h = slot.h - 2;
    if (row.mode === "raw") {
      const names = d.names;
      const nameColors = d.nameColors;
      const nameMatch = d.nameMatch;
      // Per event (name or arguments) where the kernel sent it, else per name.
      const evMatch = row.match ?? null;
      const isMatch = evMatch
        ? (j: number) => evMatch[j] === 1
        : (j: number) => nameMatch[row.name[j]!] === true;
      const base = byName
        ? (j: number) => colors.name(nameColors[row.name[j]!] ?? 0)
        : (j: number) => colors.kind(row.kind[j]!);
      const n = layoutRawRow(
        row,
        s,
        y + 1,
        h,
        {
          fill: dimming
            ? (j) => {
                if (isMatch(j)) return base(j);
                dim++;
                return dimmed(base(j));
              }
            : base,
          text: byName
            ? (j) => colors.nameText[(nameColors[row.name[j]!] ?? 0) % colors.nameText.length] ?? "#000"
            : (j) => colors.kindText[row.kind[j]!] ?? "#000",
          label: slot.h >= 14 ? (j) => names[row.name[j]!] ?? "" : null,
          charWidth: host.charWidth,
          match: searching ? isMatch : null,
        },
        batch,
        labels,
        matches,
      );
      rects += n;
      rawRects += n;
    } else {
      const colorsOf = row.color;
      rects += layoutBinRow(
        row,
        d.lo,
        d.hi,
        s,
        y + 1,
        h,
        {
          fill: binFill(
            byName && colorsOf
              ? (k) => (colorsOf[k]! !== NO_KIND ? colors.name(colorsOf[k]!) : colors.kind(row.kind[k]!))
              : (k) => colors.kind(row.kind[k]!),
            row.match,
          ),
          ...binLabels({ row: rowId }, slot.h, (k) =>
            byName && colorsOf && colorsOf[k]! !== NO_KIND
              ? (colors.nameText[colorsOf[k]! % colors.nameText.length] ?? "#000")
              : (colors.kindText[row.kind[k]!] ?? "#000"),
          ),
        },
        batch,
        matches,
        labels,
      );
    }
  };
  const painter: Painter = {
    host,
    ctx: c,
    scale: s,
    width: W,
    rects: 0,
    row: drawRow,
    bins(bins: BinRow, y: number, h: number, target?: { rank: number }): void {
      if (!d) return;
      const fill = binFill((k) => colors.kind(bins.kind[k]!), bins.match);
      const text = (k: number) => colors.kindText[bins.kind[k]!] ?? "#000";
      const named = target ? binLabels(target, h + 2, text) : {};
      rects += layoutBinRow(bins, d.lo, d.hi, s, y, h, { fill, ...named }, batch, matches, labels);
    },
  };
  for (let i = first; i < last; i++) {
    const slot = layout.slots[i]!;
    laneKind(slot).draw(painter, slot, slotY(host, slot));
  }
  rects += painter.rects;
  batch.flush(c);
  drawLabels(c, labels, host.font(11));
  drawMatches(c, matches, colors.highlight);
  drawSelection(host, ctx, s);
  const coll = host.collective;
  const collectiveRanks = coll
    ? drawCollective(ctx, coll, layout, s, (i) => slotY(host, layout.slots[i]!), AXIS, H, {
        outline: th.accent,
        straggler: th.foreground,
        text: th.background,
        font: host.font(11),
      })
    : 0;
  // Hover outline.
  const hv = host.hover;
  if (hv && hv.event >= 0 && d) {
    const slot = layout.slots[hv.slot];
    const row = slot ? d.rows.get(slot.row) : undefined;
    if (slot && row && row.mode === "raw") {
      const x0 = Math.max(xOf(s, row.start[hv.event]!), GUTTER);
      const x1 = Math.min(xOf(s, row.start[hv.event]! + row.dur[hv.event]!), GUTTER + host.width);
      ctx.strokeStyle = th.foreground;
      ctx.lineWidth = 1;
      ctx.strokeRect(x0 - 0.5, slotY(host, slot) + 0.5, Math.max(x1 - x0, 1) + 1, slot.h - 1);
    }
  }
  // Steps and measured range over the rows.
  drawSteps(c, host.model.get("_steps"), s, AXIS, 0, H, withAlpha(th.muted, 0.8), host.font(10));
  const mr = host.measuring ?? host.measure;
  if (mr) {
    drawRange(c, xOf(s, mr.a), xOf(s, mr.b), AXIS, H, withAlpha(th.accent, 0.12), th.accent);
  }
  ctx.restore();
  // Label gutter.
  drawGutter(host, ctx, first, last, H);
  // Axis band with step numbers.
  drawAxis(c, tk, s, 0, AXIS, AXIS, {
    background: th.panel,
    foreground: th.foreground,
    muted: th.muted,
    grid: th.border,
    font: host.font(10),
  });
  drawSteps(c, host.model.get("_steps"), s, 0, AXIS - 1, AXIS, th.muted, host.font(10));
  ctx.fillStyle = th.panel;
  ctx.fillRect(0, 0, GUTTER, AXIS);
  ctx.fillStyle = th.muted;
  ctx.font = host.font(10);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const caption = axisCaption(formatDuration(s.hi - s.lo), GUTTER - 12, (t) => ctx.measureText(t).width);
  ctx.fillText(caption, 6, AXIS / 2);
  if (host.root.dataset.axisCaption !== caption) host.root.dataset.axisCaption = caption;
  if (mr) {
    const xa = xOf(s, Math.min(mr.a, mr.b));
    const xb = xOf(s, Math.max(mr.a, mr.b));
    const text = formatDuration(Math.abs(mr.b - mr.a));
    ctx.font = host.font(11);
    const tw = ctx.measureText(text).width + 8;
    const x = Math.min(Math.max((xa + xb) / 2 - tw / 2, GUTTER), GUTTER + host.width - tw);
    // Below the axis band, over the rows: never on the tick labels.
    ctx.fillStyle = th.accent;
    ctx.fillRect(x, AXIS + 2, tw, 15);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(text, x + 4, AXIS + 9.5);
  }
  ctx.strokeStyle = th.border;
  ctx.beginPath();
  ctx.moveTo(0, AXIS - 0.5);
  ctx.lineTo(W, AXIS - 0.5);
  ctx.moveTo(GUTTER - 0.5, 0);
  ctx.lineTo(GUTTER - 0.5, H);
  ctx.stroke();
  return { rects, rawRects, matchRects: matches.length / 4, dimmed: dim, collectiveRanks };
}

function drawGutter(
  host: ViewHost,
  ctx: CanvasRenderingContext2D,
  first: number,
  last: number,
  H: number,
): void {
  const th = host.theme;
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, AXIS, GUTTER, H - AXIS);
  ctx.clip();
  ctx.fillStyle = th.panel;
  ctx.fillRect(0, AXIS, GUTTER, H - AXIS);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  for (let i = first; i < last; i++) {
    const slot = host.layout.slots[i]!;
    const y = slotY(host, slot);
    const kind = laneKind(slot);
    if (kind.drawLabel) {
      kind.drawLabel(host, ctx, slot, y);
      continue;
    }
    if (!slot.label) continue;
    ctx.fillStyle = th.muted;
    ctx.font = host.font(11);
    const text =
      slot.label.length * host.charWidth > GUTTER - 24
        ? `${slot.label.slice(0, Math.floor((GUTTER - 24) / host.charWidth) - 1)}…`
        : slot.label;
    ctx.fillText(text, 16, y + slot.h / 2);
  }
  ctx.restore();
}

function drawSelection(host: ViewHost, ctx: CanvasRenderingContext2D, s: Scale): void {
  const sel = host.selected;
  const det = sel?.details;
  if (!sel || !det) return;
  const layout = host.layout;
  const idx = det.row !== null ? layout.rowSlot.get(det.row) : undefined;
  if (idx === undefined) return;
  const slot = layout.slots[idx]!;
  const y = slotY(host, slot);
  const x0 = Math.max(xOf(s, det.start), GUTTER - 2);
  const x1 = Math.min(xOf(s, det.start + det.dur_ns), GUTTER + host.width + 2);
  ctx.strokeStyle = host.colors.selection;
  ctx.lineWidth = 2;
  ctx.setLineDash([]);
  ctx.strokeRect(x0 - 1, y, Math.max(x1 - x0, 1) + 2, slot.h);
  const launch = det.launch;
  if (launch && launch.row !== null) {
    const li = layout.rowSlot.get(launch.row);
    if (li !== undefined) {
      const ls = layout.slots[li]!;
      const ly = slotY(host, ls) + ls.h / 2;
      drawArrow(ctx, xOf(s, launch.start), ly, xOf(s, det.start), ly < y ? y : y + slot.h, host.colors.flow);
    }
  }
}
