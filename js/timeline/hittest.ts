/**
 * Hit-testing: which event or pixel column is under the pointer (pure, unit-tested).
 */

/** Index of the last element of sorted `a` that is <= t, or -1. */
export function lastAtOrBefore(a: Float64Array, t: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** How many events before the candidate are also examined (rows are mostly disjoint). */
const LOOKBACK = 16;

/**
 * The event of a start-sorted row under time `t`: one whose `[start, start + dur)` holds
 * `t` (the latest starting if several do), else the nearest one within `tol` ns (so that
 * events narrower than a pixel can be hovered), else -1.
 */
export function eventAt(start: Float64Array, dur: Float64Array, t: number, tol: number): number {
  const n = start.length;
  if (n === 0) return -1;
  const k = lastAtOrBefore(start, t);
  let best = -1;
  let bestDist = Infinity;
  for (let j = k; j >= 0 && j > k - LOOKBACK; j--) {
    const s = start[j]!;
    const e = s + dur[j]!;
    if (t >= s && t < e) return j;
    const d = t - e;
    if (d < bestDist) {
      bestDist = d;
      best = j;
    }
  }
  if (k + 1 < n) {
    const d = start[k + 1]! - t;
    if (d < bestDist) {
      bestDist = d;
      best = k + 1;
    }
  }
  return bestDist <= tol ? best : -1;
}

/** Column of a binned row (request `[lo, hi)` split into `width` columns) holding time `t`, or -1. */
export function binAt(lo: number, hi: number, width: number, t: number): number {
  if (t < lo || t >= hi || width <= 0) return -1;
  const k = Math.floor(((t - lo) / (hi - lo)) * width);
  return Math.min(Math.max(k, 0), width - 1);
}
