/**
 * Which window to draw and which to ask for (pure helpers of `Fetcher`, unit-tested).
 *
 * The fetcher keeps the last few windows it received. Each frame draws the best of them for
 * the view (`pickWindow`): one that covers the view at about its resolution, else the one
 * covering most of it, scaled (a zoomed-out window while a zoomed-in one arrives, the
 * previous level while the next arrives). A new window is asked for only when none fits
 * (`fits`); while one is in flight, later wants coalesce into one request, dropped when the
 * window in flight fits them. When the view rests, the neighbours of the view are prefetched
 * (`prefetchWants`): the view zoomed out and the spans either side of it.
 */
import type { Range } from "./viewport";

/** Extra time fetched on each side of the visible range, as a fraction of its span. */
export const FETCH_MARGIN = 0.25;
/** A window fits a view when its ns per pixel is within this factor of the view's. */
export const RESOLUTION_SLACK = 1.5;
/** Windows kept for drawing and reuse. */
export const CACHE_SIZE = 10;
/** The zoomed-out neighbour prefetched: the view's span times this. */
export const PREFETCH_ZOOM_OUT = 4;

/** What a window was asked for with (and what a view wants). */
export interface WindowKey {
  range: Range;
  /** Plot width, px. */
  width: number;
  rows: number[];
  summaries: number[];
  /** Memory lanes (ids). */
  memory?: number[];
  /** Ranks whose folded CPU row is drawn (views/timeline/fold.py). */
  folds?: number[];
  pattern: string;
  nameColors: boolean;
}

/** A window's extent and what it holds (a decoded window, or one in flight). */
export interface WindowExtent {
  lo: number;
  hi: number;
  width: number;
  rows: { has(row: number): boolean };
  summaries: { has(rank: number): boolean };
  memory?: { has(id: number): boolean };
  folds?: { has(rank: number): boolean };
  pattern: string;
  nameColors: boolean;
  /** The fetcher's generation when asked for (a forced request starts a new one). */
  epoch: number;
  /**
   * Every row came as raw events and no summary or memory lane was asked for: exact at any
   * deeper zoom it covers (unknown, so false, for a request in flight).
   */
  exact?: boolean;
}

/** ns per pixel of the window over ns per pixel of the view (1: the same resolution). */
export function resolutionRatio(w: WindowExtent, want: WindowKey): number {
  const view = (want.range.hi - want.range.lo) / Math.max(1, want.width);
  const data = (w.hi - w.lo) / Math.max(1, w.width);
  return data / view;
}

/** Does `w` hold everything `want` needs, at about its resolution, from the current generation? */
export function fits(w: WindowExtent, want: WindowKey, epoch: number): boolean {
  if (w.epoch !== epoch || w.pattern !== want.pattern || w.nameColors !== want.nameColors) return false;
  if (want.rows.some((r) => !w.rows.has(r)) || want.summaries.some((r) => !w.summaries.has(r))) return false;
  if ((want.memory ?? []).some((c) => !w.memory?.has(c))) return false;
  if ((want.folds ?? []).some((r) => !w.folds?.has(r))) return false;
  if (!(w.lo <= want.range.lo && w.hi >= want.range.hi)) return false;
  const ratio = resolutionRatio(w, want);
  // Raw events stay exact deeper in; summaries and memory lanes are merged per column.
  if (w.exact === true && want.summaries.length === 0 && !want.memory?.length && !want.folds?.length) {
    return ratio > 1 / RESOLUTION_SLACK;
  }
  return ratio < RESOLUTION_SLACK && ratio > 1 / RESOLUTION_SLACK;
}

/** Fraction of the view's span that `w` covers (0..1). */
export function coverage(w: WindowExtent, range: Range): number {
  const span = range.hi - range.lo;
  if (span <= 0) return 0;
  return Math.max(0, Math.min(w.hi, range.hi) - Math.max(w.lo, range.lo)) / span;
}

/**
 * How good `w` is to draw `want` now (higher is better; -Infinity: not drawable). Covering
 * the view comes first, then holding the rows shown, then a resolution at least as fine as
 * the view's (a coarser one is drawn blurred), then the current generation and pattern.
 */
export function drawScore(w: WindowExtent, want: WindowKey, epoch: number): number {
  const cov = coverage(w, want.range);
  if (cov <= 0) return -Infinity;
  const memory = want.memory ?? [];
  const folds = want.folds ?? [];
  const needed = want.rows.length + want.summaries.length + memory.length + folds.length;
  const held =
    want.rows.filter((r) => w.rows.has(r)).length +
    want.summaries.filter((r) => w.summaries.has(r)).length +
    memory.filter((c) => w.memory?.has(c)).length +
    folds.filter((r) => w.folds?.has(r)).length;
  const rowsShare = needed ? held / needed : 1;
  const ratio = resolutionRatio(w, want);
  // 1 at the view's resolution or finer (or raw events); falls off as the window gets coarser.
  const sharp = ratio <= 1 || w.exact === true ? 1 : 1 / ratio;
  const current = (w.epoch === epoch ? 1 : 0) + (w.pattern === want.pattern ? 1 : 0);
  return (
    Math.round(cov * 100) * 1e6 + Math.round(rowsShare * 100) * 1e3 + Math.round(sharp * 100) * 10 + current
  );
}

/** The index in `windows` of the best window to draw `want` (-1 when none overlaps the view). */
export function pickWindow(windows: readonly WindowExtent[], want: WindowKey, epoch: number): number {
  let best = -1;
  let bestScore = -Infinity;
  windows.forEach((w, i) => {
    const s = drawScore(w, want, epoch);
    // Ties go to the most recent (the windows are oldest first).
    if (s >= bestScore && s > -Infinity) {
      best = i;
      bestScore = s;
    }
  });
  return best;
}

/** The range and width to ask for: the view with `margin` of its span on each side. */
export function paddedRequest(
  want: WindowKey,
  margin = FETCH_MARGIN,
): { lo: number; hi: number; width: number } {
  const span = want.range.hi - want.range.lo;
  return {
    lo: want.range.lo - margin * span,
    hi: want.range.hi + margin * span,
    width: Math.max(1, Math.round(want.width * (1 + 2 * margin))),
  };
}

/** The extent a request for `want` will answer (before the owner snaps it), as a `WindowExtent`. */
export function requestedExtent(want: WindowKey, epoch: number): WindowExtent {
  const r = paddedRequest(want);
  return {
    ...r,
    rows: new Set(want.rows),
    summaries: new Set(want.summaries),
    memory: new Set(want.memory ?? []),
    folds: new Set(want.folds ?? []),
    pattern: want.pattern,
    nameColors: want.nameColors,
    epoch,
  };
}

/** The zoom-in neighbour prefetched: the view's span divided by this, around the zoom's anchor. */
export const PREFETCH_ZOOM_IN = 2;

/** How the view last moved: zoomed in or out around `anchor`, or panned (`direction` -1 earlier, 1 later). */
export type Motion =
  { kind: "in" | "out"; anchor: number } | { kind: "pan"; direction: number } | { kind: "none" };

/** How the view moved from `prev` to `next` (a zoom's anchor is the time that stayed in place). */
export function motionOf(prev: Range, next: Range): Motion {
  const s0 = prev.hi - prev.lo;
  const s1 = next.hi - next.lo;
  if (Math.abs(s1 - s0) > 1e-9 * s0) {
    // lo1 = a - f * s1 and lo0 = a - f * s0 for the anchor a at fraction f: a = (lo1 s0 - lo0 s1) / (s0 - s1).
    const anchor = (next.lo * s0 - prev.lo * s1) / (s0 - s1);
    return { kind: s1 < s0 ? "in" : "out", anchor: Math.min(Math.max(anchor, next.lo), next.hi) };
  }
  if (next.lo !== prev.lo) return { kind: "pan", direction: next.lo > prev.lo ? 1 : -1 };
  return { kind: "none" };
}

/**
 * The neighbours of a resting view worth fetching before they are asked for, most likely
 * next first given how the view last moved (`motion`): zooming in, the view zoomed in
 * `PREFETCH_ZOOM_IN` times around the zoom's anchor; zooming out, the view zoomed out as much
 * around the anchor (the next wheel step's resolution: a 4x zoom-out would be too coarse to
 * fit it), then `PREFETCH_ZOOM_OUT` times around its centre (clamped to the trace's extent
 * `[start, end]`); then the zoom the other way around the anchor; panning, the span on the side
 * it moves to; then the others. At rest
 * (no motion yet) the view zoomed in around its middle comes last.
 */
export function prefetchWants(
  want: WindowKey,
  start: number,
  end: number,
  motion: Motion = { kind: "none" },
): WindowKey[] {
  const span = want.range.hi - want.range.lo;
  const mid = (want.range.lo + want.range.hi) / 2;
  const extent = end - start;
  let zoomOut: WindowKey | null = null;
  const outSpan = Math.min(span * PREFETCH_ZOOM_OUT, extent);
  if (outSpan > span * 1.01) {
    let lo = Math.max(start, mid - outSpan / 2);
    lo = Math.min(lo, end - outSpan);
    zoomOut = { ...want, range: { lo, hi: lo + outSpan } };
  }
  // The fetched window covers the view plus FETCH_MARGIN on each side; the side neighbours
  // start where it ends, so a drag of up to a span and a half each way stays sharp.
  const step = span * (1 + 2 * FETCH_MARGIN);
  const left =
    want.range.lo - FETCH_MARGIN * span > start
      ? { ...want, range: { lo: want.range.lo - step, hi: want.range.hi - step } }
      : null;
  const right =
    want.range.hi + FETCH_MARGIN * span < end
      ? { ...want, range: { lo: want.range.lo + step, hi: want.range.hi + step } }
      : null;
  // Zooming (a wheel step is e^0.5 = 1.65x): the next step around the same anchor, kept at the
  // same fraction of the view as the wheel does, clamped to the trace for zooming out.
  const around = (anchor: number, factor: number): WindowKey | null => {
    const f = span > 0 ? (anchor - want.range.lo) / span : 0.5;
    const s = Math.min(span * factor, extent);
    if (Math.abs(s - span) <= span * 0.01) return null;
    let lo = anchor - f * s;
    if (factor > 1) lo = Math.max(start, Math.min(lo, end - s));
    return { ...want, range: { lo, hi: lo + s } };
  };
  const sameAs = (a: WindowKey | null, b: WindowKey | null) =>
    a !== null && b !== null && a.range.lo === b.range.lo && a.range.hi === b.range.hi;
  let order: (WindowKey | null)[];
  // Both directions of a zoom: the way it goes first, then back the other way.
  if (motion.kind === "in") {
    const back = around(motion.anchor, PREFETCH_ZOOM_IN);
    order = [
      around(motion.anchor, 1 / PREFETCH_ZOOM_IN),
      back,
      sameAs(back, zoomOut) ? null : zoomOut,
      left,
      right,
    ];
  } else if (motion.kind === "out") {
    const step = around(motion.anchor, PREFETCH_ZOOM_IN);
    order = [
      step,
      around(motion.anchor, 1 / PREFETCH_ZOOM_IN),
      sameAs(step, zoomOut) ? null : zoomOut,
      left,
      right,
    ];
  } else if (motion.kind === "pan") {
    order = motion.direction < 0 ? [left, right, zoomOut] : [right, left, zoomOut];
  } else {
    // At rest after a fit or a link: the first wheel step in, around the middle, comes last.
    order = [zoomOut, left, right, around(mid, 1 / PREFETCH_ZOOM_IN)];
  }
  return order.filter((w): w is WindowKey => w !== null);
}
