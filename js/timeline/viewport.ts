/**
 * The horizontal view: a time range mapped onto a pixel width, and the zoom and pan
 * arithmetic of the interactions (pure functions, unit-tested).
 */

/** A visible time range `[lo, hi)`, ns relative to the trace start. */
export interface Range {
  lo: number;
  hi: number;
}

/** Limits of the view: the trace's extent and the smallest span one may zoom to. */
export interface Limits {
  /** Trace extent. */
  start: number;
  end: number;
  /** Smallest visible span, ns. */
  minSpan: number;
}

/** The smallest span a view may show, ns. */
export const MIN_SPAN_NS = 20;
/** How far past the trace's ends one may pan or zoom out, as a fraction of its extent. */
export const MARGIN = 0.05;

export function limitsFor(start: number, end: number): Limits {
  return { start, end: Math.max(end, start + 1), minSpan: MIN_SPAN_NS };
}

/** Pixel x (relative to the plot's left edge) of time `t`. */
export function timeToX(r: Range, width: number, t: number): number {
  return ((t - r.lo) / (r.hi - r.lo)) * width;
}

/** Time at pixel x. */
export function xToTime(r: Range, width: number, x: number): number {
  return r.lo + (x / width) * (r.hi - r.lo);
}

/** Clamp a range to the limits, keeping its span when it can (shifting rather than shrinking). */
export function clampRange(r: Range, lim: Limits): Range {
  const extent = lim.end - lim.start;
  const minLo = lim.start - MARGIN * extent;
  const maxHi = lim.end + MARGIN * extent;
  let span = Math.max(r.hi - r.lo, lim.minSpan);
  span = Math.min(span, maxHi - minLo);
  let lo = r.lo;
  if (r.hi - r.lo < lim.minSpan) lo = (r.lo + r.hi) / 2 - span / 2;
  lo = Math.min(Math.max(lo, minLo), maxHi - span);
  return { lo, hi: lo + span };
}

/**
 * Zoom by `factor` (< 1 zooms in) keeping time `anchor` under the same pixel.
 */
export function zoomAround(r: Range, anchor: number, factor: number, lim: Limits): Range {
  const span = r.hi - r.lo;
  const newSpan = Math.min(Math.max(span * factor, lim.minSpan), (lim.end - lim.start) * (1 + 2 * MARGIN));
  const f = span > 0 ? (anchor - r.lo) / span : 0.5;
  return clampRange({ lo: anchor - f * newSpan, hi: anchor - f * newSpan + newSpan }, lim);
}

/** Pan by `dx` pixels (positive: the content moves left, the view moves later). */
export function panByPixels(r: Range, width: number, dx: number, lim: Limits): Range {
  const dt = (dx / width) * (r.hi - r.lo);
  return clampRange({ lo: r.lo + dt, hi: r.hi + dt }, lim);
}

/** The whole trace. */
export function fitRange(lim: Limits): Range {
  return { lo: lim.start, hi: lim.end };
}

/** Zoom factor of one wheel event (deltaY in pixels; negative zooms in). */
export function wheelFactor(deltaY: number, deltaMode: number): number {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  return Math.exp(Math.max(-1, Math.min(1, px / 300)));
}

/** Does `outer` cover `inner`? */
export function covers(outer: Range, inner: Range): boolean {
  return outer.lo <= inner.lo && outer.hi >= inner.hi;
}
