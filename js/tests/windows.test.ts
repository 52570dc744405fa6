import { describe, expect, it } from "vitest";
import {
  FETCH_MARGIN,
  PREFETCH_ZOOM_IN,
  PREFETCH_ZOOM_OUT,
  type WindowExtent,
  type WindowKey,
  coverage,
  fits,
  motionOf,
  paddedRequest,
  pickWindow,
  prefetchWants,
  requestedExtent,
} from "../timeline/windows";

const want = (lo: number, hi: number, width = 1000, extra: Partial<WindowKey> = {}): WindowKey => ({
  range: { lo, hi },
  width,
  rows: [1, 2],
  summaries: [],
  pattern: "",
  nameColors: false,
  ...extra,
});

const win = (lo: number, hi: number, width: number, extra: Partial<WindowExtent> = {}): WindowExtent => ({
  lo,
  hi,
  width,
  rows: new Set([1, 2, 3]),
  summaries: new Set<number>(),
  pattern: "",
  nameColors: false,
  epoch: 0,
  ...extra,
});

describe("fits", () => {
  it("accepts a window covering the view at about its resolution", () => {
    // 1 ns/px for the view; the window 1.5x wider in ns and px: also 1 ns/px.
    expect(fits(win(-250, 1250, 1500), want(0, 1000), 0)).toBe(true);
  });
  it("refuses a window that misses part of the view", () => {
    expect(fits(win(100, 1250, 1150), want(0, 1000), 0)).toBe(false);
  });
  it("refuses a window too coarse or too fine", () => {
    // 4 ns/px against 1 ns/px (zoomed in 4x since): blurred.
    expect(fits(win(-2000, 2000, 1000), want(0, 1000), 0)).toBe(false);
    // 0.25 ns/px (zoomed out 4x since): too much data for the view, still fine to draw.
    expect(fits(win(-100, 1100, 4800), want(0, 1000), 0)).toBe(false);
  });
  it("refuses a window missing a row, another pattern, colours or generation", () => {
    const w = win(-250, 1250, 1500);
    expect(fits(w, want(0, 1000, 1000, { rows: [4] }), 0)).toBe(false);
    expect(fits(w, want(0, 1000, 1000, { pattern: "nccl" }), 0)).toBe(false);
    expect(fits(w, want(0, 1000, 1000, { nameColors: true }), 0)).toBe(false);
    expect(fits(w, want(0, 1000), 1)).toBe(false);
  });
});

describe("pickWindow", () => {
  it("draws a covering coarse window rather than a sharp one missing half the view", () => {
    const sharp = win(500, 2000, 1500); // covers [500, 1000) of [0, 1000)
    const coarse = win(-4000, 5000, 1000); // covers all, 9 ns/px
    expect(coverage(sharp, { lo: 0, hi: 1000 })).toBeCloseTo(0.5);
    expect(pickWindow([sharp, coarse], want(0, 1000), 0)).toBe(1);
  });
  it("prefers the sharper of two covering windows", () => {
    const coarse = win(-4000, 5000, 1000);
    const sharp = win(-250, 1250, 1500);
    expect(pickWindow([sharp, coarse], want(0, 1000), 0)).toBe(0);
    expect(pickWindow([coarse, sharp], want(0, 1000), 0)).toBe(1);
  });
  it("prefers a window holding the rows shown", () => {
    const other = win(-250, 1250, 1500, { rows: new Set([7]) });
    const mine = win(-4000, 5000, 1000);
    expect(pickWindow([mine, other], want(0, 1000), 0)).toBe(0);
  });
  it("answers -1 when nothing overlaps the view, and the latest on ties", () => {
    expect(pickWindow([win(2000, 3000, 100)], want(0, 1000), 0)).toBe(-1);
    expect(pickWindow([], want(0, 1000), 0)).toBe(-1);
    expect(pickWindow([win(-250, 1250, 1500), win(-250, 1250, 1500)], want(0, 1000), 0)).toBe(1);
  });
});

describe("requests", () => {
  it("pads the view by FETCH_MARGIN on each side, at the same resolution", () => {
    const r = paddedRequest(want(1000, 2000, 800));
    expect(r.lo).toBe(1000 - FETCH_MARGIN * 1000);
    expect(r.hi).toBe(2000 + FETCH_MARGIN * 1000);
    expect(r.width).toBe(Math.round(800 * (1 + 2 * FETCH_MARGIN)));
  });
  it("a request in flight fits the views it covers (their wants coalesce into it)", () => {
    const inFlight = requestedExtent(want(1000, 2000), 3);
    // A small pan inside the fetched margin, same zoom: no new request needed.
    expect(fits(inFlight, want(1100, 2100), 3)).toBe(true);
    // A pan past the margin or a zoom by 2: a new request.
    expect(fits(inFlight, want(1400, 2400), 3)).toBe(false);
    expect(fits(inFlight, want(1250, 1750), 3)).toBe(false);
  });
});

describe("prefetchWants", () => {
  it("asks for the view zoomed out, then the spans either side of the fetched window", () => {
    const w = want(4000, 5000);
    const [out, left, right] = prefetchWants(w, 0, 100_000);
    expect(out!.range.hi - out!.range.lo).toBe(1000 * PREFETCH_ZOOM_OUT);
    expect((out!.range.lo + out!.range.hi) / 2).toBe(4500);
    // The side windows, padded as requests, meet the view's padded window edge to edge.
    const main = paddedRequest(w);
    expect(paddedRequest(left!).hi).toBeCloseTo(main.lo);
    expect(paddedRequest(right!).lo).toBeCloseTo(main.hi);
    expect(left!.rows).toEqual(w.rows);
  });
  it("stays inside the trace: no zoom-out past its extent, no neighbour beyond its ends", () => {
    // The whole trace shown: nothing to zoom out to, nothing either side; only the first
    // wheel step in, around the middle.
    const whole = prefetchWants(want(0, 1000), 0, 1000);
    expect(whole.map((w) => w.range)).toEqual([{ lo: 250, hi: 750 }]);
    // Near the start: the zoom-out is clamped to [0, 4000), no left neighbour.
    const got = prefetchWants(want(0, 1000), 0, 10_000);
    expect(got[0]!.range).toEqual({ lo: 0, hi: 4000 });
    expect(got.length).toBe(3);
    expect(got[1]!.range.lo).toBeGreaterThan(1000);
    expect(got[2]!.range).toEqual({ lo: 250, hi: 750 });
  });
});

describe("motion-aware prefetch", () => {
  it("finds the anchor of a zoom and the direction of a pan", () => {
    // Zoom in 2x keeping t = 300 in place (at 30% of the view).
    expect(motionOf({ lo: 0, hi: 1000 }, { lo: 150, hi: 650 })).toEqual({ kind: "in", anchor: 300 });
    const out = motionOf({ lo: 150, hi: 650 }, { lo: 0, hi: 1000 });
    expect(out.kind).toBe("out");
    expect(motionOf({ lo: 0, hi: 1000 }, { lo: 100, hi: 1100 })).toEqual({ kind: "pan", direction: 1 });
    expect(motionOf({ lo: 0, hi: 1000 }, { lo: 0, hi: 1000 })).toEqual({ kind: "none" });
  });
  it("zooming in prefetches the next zoom around the same anchor first", () => {
    const w = want(150, 650);
    const [first] = prefetchWants(w, 0, 100_000, { kind: "in", anchor: 300 });
    expect(first!.range.hi - first!.range.lo).toBe(500 / PREFETCH_ZOOM_IN);
    // The anchor stays at the same fraction (30%) of the view.
    expect((300 - first!.range.lo) / (first!.range.hi - first!.range.lo)).toBeCloseTo(0.3);
  });
  it("zooming out prefetches the next zoom-out step around the same anchor, inside the trace", () => {
    const w = want(4000, 5000);
    const [first, back, second] = prefetchWants(w, 0, 100_000, { kind: "out", anchor: 4200 });
    expect(first!.range.hi - first!.range.lo).toBe(1000 * PREFETCH_ZOOM_IN);
    expect((4200 - first!.range.lo) / (first!.range.hi - first!.range.lo)).toBeCloseTo(0.2);
    // A wheel step out (1.65x) is fitted by it: same rows, covered, resolution within the slack.
    const next = want(4200 - 0.2 * 1650, 4200 + 0.8 * 1650);
    expect(fits(requestedExtent(first!, 0), next, 0)).toBe(true);
    // Then the other direction (a zoom back in around the anchor) ...
    expect(back!.range.hi - back!.range.lo).toBe(1000 / PREFETCH_ZOOM_IN);
    // ... and the 4x zoom-out, which does not fit the next step.
    expect(second!.range.hi - second!.range.lo).toBe(1000 * PREFETCH_ZOOM_OUT);
    expect(fits(requestedExtent(second!, 0), next, 0)).toBe(false);
    // Clamped to the trace near its start.
    const [edge] = prefetchWants(want(100, 1100), 0, 100_000, { kind: "out", anchor: 200 });
    expect(edge!.range).toEqual({ lo: 0, hi: 2000 });
  });
  it("zooming in, the prefetched window fits the next wheel step", () => {
    const w = want(150, 650);
    const [first] = prefetchWants(w, 0, 100_000, { kind: "in", anchor: 300 });
    const s = 500 / Math.exp(0.5);
    expect(fits(requestedExtent(first!, 0), want(300 - 0.3 * s, 300 + 0.7 * s), 0)).toBe(true);
  });
  it("panning prefetches the side it moves to first", () => {
    const w = want(4000, 5000);
    expect(prefetchWants(w, 0, 100_000, { kind: "pan", direction: -1 })[0]!.range.hi).toBeLessThan(4000);
    expect(prefetchWants(w, 0, 100_000, { kind: "pan", direction: 1 })[0]!.range.lo).toBeGreaterThan(5000);
  });
  it("a window of raw events fits any deeper zoom it covers", () => {
    const raw = win(-250, 1250, 1500, { exact: true });
    expect(fits(raw, want(100, 200), 0)).toBe(true);
    expect(fits(win(-250, 1250, 1500), want(100, 200), 0)).toBe(false);
    // Not with summaries (always merged per column), nor zoomed out.
    expect(fits(raw, want(100, 200, 1000, { summaries: [0] }), 0)).toBe(false);
    expect(fits(raw, want(100, 200, 1000, { memory: [3] }), 0)).toBe(false);
    expect(fits(raw, want(-2000, 3000), 0)).toBe(false);
  });
});
