/**
 * Canvas 2D drawing of rows, bins, the axis and overlays. Rectangles are batched per
 * colour (one path and one fill per colour), events narrower than a pixel are merged per
 * pixel column, and labels are drawn only where they fit: a window of 10,000 events costs
 * a few fill calls plus the labels.
 */
import type { Ticks } from "./axis";
import type { BinRow, RawRow } from "./protocol";
import { NO_KIND } from "./protocol";

/** The subset of CanvasRenderingContext2D the drawing uses (a mock implements it in tests). */
export type Ctx = Pick<
  CanvasRenderingContext2D,
  | "fillStyle"
  | "strokeStyle"
  | "lineWidth"
  | "font"
  | "textBaseline"
  | "textAlign"
  | "globalAlpha"
  | "fillRect"
  | "strokeRect"
  | "beginPath"
  | "closePath"
  | "rect"
  | "fill"
  | "stroke"
  | "moveTo"
  | "lineTo"
  | "bezierCurveTo"
  | "fillText"
  | "measureText"
  | "save"
  | "restore"
  | "clip"
  | "setLineDash"
>;

/** Maps times onto the plot: `[lo, hi)` onto `[x0, x0 + width)` px. */
export interface Scale {
  lo: number;
  hi: number;
  x0: number;
  width: number;
}

export function xOf(s: Scale, t: number): number {
  return s.x0 + ((t - s.lo) / (s.hi - s.lo)) * s.width;
}

/** Rectangles grouped by fill colour, drawn with one path per colour. */
export class RectBatch {
  private readonly groups = new Map<string, number[]>();
  count = 0;

  add(color: string, x: number, y: number, w: number, h: number): void {
    let g = this.groups.get(color);
    if (!g) {
      g = [];
      this.groups.set(color, g);
    }
    g.push(x, y, w, h);
    this.count++;
  }

  /** Fill every group; returns the number of fill calls. */
  flush(ctx: Ctx): number {
    let fills = 0;
    for (const [color, g] of this.groups) {
      ctx.fillStyle = color;
      ctx.beginPath();
      for (let i = 0; i < g.length; i += 4) {
        // Whole pixels: crisp edges, and no anti-aliasing work for the rasteriser.
        const x = Math.round(g[i]!);
        const y = Math.round(g[i + 1]!);
        ctx.rect(
          x,
          y,
          Math.max(1, Math.round(g[i]! + g[i + 2]!) - x),
          Math.max(1, Math.round(g[i + 1]! + g[i + 3]!) - y),
        );
      }
      ctx.fill();
      fills++;
    }
    this.groups.clear();
    return fills;
  }
}

/** Labels to write over the rectangles once they are filled. */
export interface Label {
  text: string;
  x: number;
  y: number;
  maxWidth: number;
  color: string;
}

/**
 * A short label for an event name: drops `void `, template arguments and parameter lists,
 * then namespaces if still long (`void at::native::foo<4, float>(int)` -> `foo`).
 */
export function shortName(name: string, maxLength = 40): string {
  if (name.length <= maxLength) return name;
  let s = name.startsWith("void ") ? name.slice(5) : name;
  let out = "";
  let depth = 0;
  for (const ch of s) {
    if (ch === "<") depth++;
    else if (ch === ">") depth = Math.max(0, depth - 1);
    else if (depth === 0) out += ch;
  }
  s = out;
  const paren = s.lastIndexOf("(");
  if (paren > 0 && s.endsWith(")")) {
    const head = s.slice(0, paren);
    if (!head.endsWith("(anonymous namespace")) s = head;
  }
  if (s.length > maxLength) {
    const parts = s.split("::");
    s = parts[parts.length - 1] ?? s;
  }
  return s.trim() || name;
}

/** Fit `text` into `width` px given the average character width: truncate with an ellipsis. */
export function fitText(text: string, width: number, charWidth: number): string {
  const n = Math.floor(width / charWidth);
  if (n <= 0) return "";
  if (text.length <= n) return text;
  if (n <= 2) return "";
  return `${text.slice(0, n - 1)}…`;
}

export interface RawStyle {
  /** Fill colour of event `i`. */
  fill: (i: number) => string;
  /** Text colour on event `i`'s fill. */
  text: (i: number) => string;
  /** Name of event `i` (for labels); null disables labels. */
  label: ((i: number) => string) | null;
  /** Average character width of the label font, px. */
  charWidth: number;
  /** Is event `i` a search match. */
  match: ((i: number) => boolean) | null;
}

/** Minimum width, px, an event needs for a label. */
export const LABEL_MIN_PX = 28;

/**
 * Queue the events of a raw row (culled to the plot) into `batch`, `labels` and `matches`.
 * Events narrower than a pixel become 1 px wide, one per pixel column.
 * Returns the number of rectangles queued.
 */
export function layoutRawRow(
  row: RawRow,
  s: Scale,
  y: number,
  h: number,
  style: RawStyle,
  batch: RectBatch,
  labels: Label[],
  matches: number[],
): number {
  const n = row.start.length;
  const k = s.width / (s.hi - s.lo);
  const xEnd = s.x0 + s.width;
  let lastPx = -Infinity;
  let lastColor = "";
  let queued = 0;
  for (let i = 0; i < n; i++) {
    const t0 = row.start[i]!;
    const t1 = t0 + row.dur[i]!;
    if (t1 < s.lo || t0 >= s.hi) continue;
    let x0 = s.x0 + (t0 - s.lo) * k;
    let x1 = s.x0 + (t1 - s.lo) * k;
    if (x0 < s.x0) x0 = s.x0;
    if (x1 > xEnd) x1 = xEnd;
    const color = style.fill(i);
    const isMatch = style.match !== null && style.match(i);
    if (x1 - x0 < 1) {
      const px = Math.floor(x0);
      if (px === lastPx && color === lastColor && !isMatch) continue;
      lastPx = px;
      lastColor = color;
      batch.add(color, px, y, 1, h);
      if (isMatch) matches.push(px, y, 1, h);
      queued++;
      continue;
    }
    const w = x1 - x0 > 4 ? x1 - x0 - 1 : x1 - x0; // a 1 px gap between wide neighbours
    batch.add(color, x0, y, w, h);
    if (isMatch) matches.push(x0, y, w, h);
    queued++;
    if (style.label && w >= LABEL_MIN_PX) {
      const text = fitText(shortName(style.label(i)), w - 6, style.charWidth);
      if (text) labels.push({ text, x: x0 + 3, y: y + h / 2, maxWidth: w - 6, color: style.text(i) });
    }
  }
  return queued;
}

export interface BinStyle {
  /** Fill colour of column `k` (kind or name colour). */
  fill: (k: number) => string;
  /**
   * Where the owner knows what merged columns hold (the HTML report's embedded names): the
   * label of a run of equal columns over `[a, b)` ns, "" for none. Runs wide enough get it.
   */
  label?: (a: number, b: number) => string;
  /** Text colour on column `k`'s fill (for labels). */
  text?: (k: number) => string;
  /** Text colour off the fill (a label over a bar shorter than the text). */
  plainText?: string;
  /** Average character width of the label font, px. */
  charWidth?: number;
}

/**
 * Queue a binned row: each column's busy fraction as a bar from the row's bottom (at least
 * 1.5 px when anything is there), consecutive equal columns merged. `bins` spans the
 * request's `[lo, hi)`, which may differ from the scale's while a new window is on its way.
 * With `style.label` and `labels`, a run at least `LABEL_MIN_PX` wide is labelled (zoomed in
 * past a summary's finest bins, each bin is such a run). Returns the number of rectangles queued.
 */
export function layoutBinRow(
  bins: BinRow,
  lo: number,
  hi: number,
  s: Scale,
  y: number,
  h: number,
  style: BinStyle,
  batch: RectBatch,
  matches: number[],
  labels: Label[] | null = null,
): number {
  const n = bins.frac.length;
  if (n === 0) return 0;
  const colNs = (hi - lo) / n;
  const colW = colNs * (s.width / (s.hi - s.lo));
  const xStart = xOf(s, lo);
  const xEnd = s.x0 + s.width;
  let queued = 0;
  let runStart = -1;
  let runColor = "";
  let runH = 0;
  const flush = (end: number): void => {
    if (runStart < 0) return;
    let a = xStart + runStart * colW;
    let b = xStart + end * colW;
    if (a < s.x0) a = s.x0;
    if (b > xEnd) b = xEnd;
    if (b > a) {
      batch.add(runColor, a, y + h - runH, Math.max(b - a, 1), runH);
      queued++;
      if (labels && style.label && b - a >= LABEL_MIN_PX) {
        const name = style.label(lo + runStart * colNs, lo + end * colNs);
        const text = name ? fitText(shortName(name), b - a - 6, style.charWidth ?? 6.5) : "";
        // On the bar when it holds the text's height (11 px font, centred), else beside it.
        const onBar = runH >= h / 2 + 6;
        const color = onBar ? style.text?.(runStart) : style.plainText;
        if (text && color) labels.push({ text, x: a + 3, y: y + h / 2, maxWidth: b - a - 6, color });
      }
    }
    runStart = -1;
  };
  for (let k = 0; k < n; k++) {
    const f = bins.frac[k]!;
    const kind = bins.kind[k]!;
    const x = xStart + k * colW;
    if (x + colW < s.x0 || x >= xEnd || f <= 0 || kind === NO_KIND) {
      flush(k);
      continue;
    }
    const barH = Math.max(1.5, Math.round(Math.min(f, 1) * h * 2) / 2);
    const color = style.fill(k);
    if (runStart >= 0 && (color !== runColor || barH !== runH)) flush(k);
    if (runStart < 0) {
      runStart = k;
      runColor = color;
      runH = barH;
    }
    if (bins.match && bins.match[k]! > 0) matches.push(Math.max(x, s.x0), y, Math.max(colW, 1), h);
  }
  flush(n);
  return queued;
}

/** Outline search matches (x, y, w, h quadruples) in one stroke. */
export function drawMatches(ctx: Ctx, rects: number[], color: string): void {
  if (rects.length === 0) return;
  ctx.strokeStyle = color;
  ctx.lineWidth = 2;
  ctx.beginPath();
  for (let i = 0; i < rects.length; i += 4)
    ctx.rect(rects[i]! + 1, rects[i + 1]! + 1, Math.max(rects[i + 2]! - 2, 1), rects[i + 3]! - 2);
  ctx.stroke();
}

export function drawLabels(ctx: Ctx, labels: Label[], font: string): void {
  if (labels.length === 0) return;
  ctx.font = font;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  let color = "";
  for (const l of labels) {
    if (l.color !== color) {
      ctx.fillStyle = l.color;
      color = l.color;
    }
    ctx.fillText(l.text, l.x, l.y, l.maxWidth);
  }
}

export interface AxisStyle {
  background: string;
  foreground: string;
  muted: string;
  grid: string;
  font: string;
}

/** The time axis band at `[y, y + h)` and the vertical grid lines down to `bottom`. */
export function drawAxis(
  ctx: Ctx,
  ticks: Ticks,
  s: Scale,
  y: number,
  h: number,
  bottom: number,
  st: AxisStyle,
): void {
  ctx.fillStyle = st.background;
  ctx.fillRect(s.x0, y, s.width, h);
  ctx.strokeStyle = st.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of ticks.values) {
    const x = Math.round(xOf(s, t)) + 0.5;
    ctx.moveTo(x, y + h - 5);
    ctx.lineTo(x, bottom);
  }
  ctx.stroke();
  ctx.fillStyle = st.foreground;
  ctx.font = st.font;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  // A label runs right of its tick: one that would cross the plot's right edge, or the
  // "from <base>" note at its end, is left out (it would be cut or overprinted).
  const base = ticks.base ? `from ${ticks.base}` : "";
  const right = s.x0 + s.width - (base ? ctx.measureText(base).width + 12 : 0);
  ticks.values.forEach((t, i) => {
    const x = xOf(s, t);
    const text = ticks.labels[i] ?? "";
    if (x + 3 + ctx.measureText(text).width > right) return;
    ctx.fillText(text, x + 3, y + h / 2 - 2);
  });
  if (base) {
    ctx.fillStyle = st.muted;
    ctx.textAlign = "right";
    ctx.fillText(base, s.x0 + s.width - 4, y + h / 2 - 2);
  }
}

/** ProfilerStep markers: a dashed line at each step start and its number in the axis band. */
export function drawSteps(
  ctx: Ctx,
  steps: readonly { step: number; start: number; end: number }[],
  s: Scale,
  y: number,
  h: number,
  bottom: number,
  color: string,
  font: string,
): void {
  ctx.save();
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1;
  ctx.setLineDash([4, 3]);
  ctx.font = font;
  ctx.textBaseline = "bottom";
  ctx.textAlign = "left";
  ctx.beginPath();
  const shown: { x: number; step: number }[] = [];
  for (const st of steps) {
    if (st.start < s.lo || st.start >= s.hi) continue;
    const x = Math.round(xOf(s, st.start)) + 0.5;
    ctx.moveTo(x, y);
    ctx.lineTo(x, bottom);
    shown.push({ x, step: st.step });
  }
  ctx.stroke();
  let lastX = -Infinity;
  for (const m of shown) {
    if (m.x - lastX < 48) continue;
    ctx.fillText(`#${m.step}`, m.x + 3, y + h);
    lastX = m.x;
  }
  ctx.restore();
}

/** A flow arrow from a CPU launch at (x1, y1) to its GPU activity at (x2, y2). */
export function drawArrow(ctx: Ctx, x1: number, y1: number, x2: number, y2: number, color: string): void {
  ctx.save();
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([]);
  const dy = (y2 - y1) / 2;
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.bezierCurveTo(x1, y1 + dy, x2, y2 - dy, x2, y2);
  ctx.stroke();
  const dir = y2 >= y1 ? 1 : -1;
  ctx.beginPath();
  ctx.moveTo(x2, y2);
  ctx.lineTo(x2 - 4, y2 - 7 * dir);
  ctx.lineTo(x2 + 4, y2 - 7 * dir);
  ctx.closePath();
  ctx.fill();
  ctx.beginPath();
  ctx.rect(x1 - 2, y1 - 2, 4, 4);
  ctx.fill();
  ctx.restore();
}

/** The measured range: a translucent band over the plot with edges. */
export function drawRange(
  ctx: Ctx,
  xa: number,
  xb: number,
  top: number,
  bottom: number,
  fill: string,
  edge: string,
): void {
  const a = Math.min(xa, xb);
  const b = Math.max(xa, xb);
  ctx.fillStyle = fill;
  ctx.fillRect(a, top, Math.max(b - a, 1), bottom - top);
  ctx.strokeStyle = edge;
  ctx.lineWidth = 1;
  ctx.setLineDash([]);
  ctx.beginPath();
  ctx.moveTo(Math.round(a) + 0.5, top);
  ctx.lineTo(Math.round(a) + 0.5, bottom);
  ctx.moveTo(Math.round(b) + 0.5, top);
  ctx.lineTo(Math.round(b) + 0.5, bottom);
  ctx.stroke();
}
