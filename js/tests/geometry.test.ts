import { describe, expect, it } from "vitest";
import { formatDuration, formatTimePrecise } from "../format";
import { niceStep, ticks, unitForStep } from "../timeline/axis";
import { binAt, eventAt, lastAtOrBefore } from "../timeline/hittest";
import { computeLayout, slotAt, visibleSlots } from "../timeline/layout";
import { MAX_PATTERN_CHARS, patternProblem } from "../timeline/search";
import type { LaneMeta, RowMeta } from "../timeline/messages";
import {
  MIN_SPAN_NS,
  clampRange,
  fitRange,
  limitsFor,
  panByPixels,
  timeToX,
  wheelFactor,
  xToTime,
  zoomAround,
} from "../timeline/viewport";

describe("viewport", () => {
  const lim = limitsFor(0, 1_000_000);

  it("zooms around the anchor, which stays under the same pixel", () => {
    const r = { lo: 100_000, hi: 300_000 };
    const anchor = 150_000;
    const z = zoomAround(r, anchor, 0.5, lim);
    expect(z.hi - z.lo).toBeCloseTo(100_000);
    expect(timeToX(z, 800, anchor)).toBeCloseTo(timeToX(r, 800, anchor));
  });

  it("never zooms below the minimum span nor beyond the trace", () => {
    const z = zoomAround({ lo: 10, hi: 20 }, 15, 0.001, lim);
    expect(z.hi - z.lo).toBe(MIN_SPAN_NS);
    const out = zoomAround({ lo: 0, hi: 1_000_000 }, 0, 100, lim);
    expect(out.hi - out.lo).toBeLessThanOrEqual(1_100_000 + 1e-6);
  });

  it("pans by pixels and stops at the trace's ends", () => {
    const p = panByPixels({ lo: 0, hi: 1000 }, 100, 10, lim);
    expect(p).toEqual({ lo: 100, hi: 1100 });
    const left = panByPixels({ lo: 0, hi: 1000 }, 100, -1e9, lim);
    expect(left.lo).toBeCloseTo(-50_000);
    expect(left.hi - left.lo).toBeCloseTo(1000);
  });

  it("maps time and pixels both ways", () => {
    const r = { lo: 1000, hi: 3000 };
    expect(xToTime(r, 200, timeToX(r, 200, 2345))).toBeCloseTo(2345);
    expect(fitRange(lim)).toEqual({ lo: 0, hi: 1_000_000 });
    expect(clampRange({ lo: 5, hi: 5 }, lim).hi - clampRange({ lo: 5, hi: 5 }, lim).lo).toBe(MIN_SPAN_NS);
  });

  it("turns wheel deltas into zoom factors", () => {
    expect(wheelFactor(-100, 0)).toBeLessThan(1);
    expect(wheelFactor(100, 0)).toBeGreaterThan(1);
    expect(wheelFactor(-3, 1)).toBeCloseTo(wheelFactor(-48, 0));
    expect(wheelFactor(-1e6, 0)).toBeCloseTo(Math.exp(-1));
  });
});

describe("axis", () => {
  it("picks 1-2-5 steps", () => {
    expect([niceStep(0.3), niceStep(1), niceStep(3), niceStep(7), niceStep(120), niceStep(4e6)]).toEqual([
      1, 1, 5, 10, 200, 5e6,
    ]);
  });
  it("labels in the unit of the step", () => {
    expect(unitForStep(200_000).name).toBe("ms");
    expect(unitForStep(100).name).toBe("us");
    expect(unitForStep(5).name).toBe("ns");
    expect(unitForStep(2e8).name).toBe("s");
    const t = ticks(15_000_000, 16_000_000, 500, 100);
    expect(t.step).toBe(200_000);
    expect(t.labels).toEqual(["15.0 ms", "15.2 ms", "15.4 ms", "15.6 ms", "15.8 ms"]);
    expect(t.base).toBe("");
  });
  it("switches to offsets from a base when deep in a long trace", () => {
    const t = ticks(15_000_000_000, 15_000_000_500, 500, 100);
    expect(t.base).toBe("15.0000 s");
    expect(t.labels.slice(0, 2)).toEqual(["+0.0 us", "+0.1 us"]);
  });
  it("formats durations and times", () => {
    expect(formatDuration(850)).toBe("850 ns");
    expect(formatDuration(12_345)).toBe("12.3 us");
    expect(formatDuration(4_560_000)).toBe("4.56 ms");
    expect(formatDuration(7_890_000_000)).toBe("7.89 s");
    expect(formatDuration(123_456_789)).toBe("123 ms");
    expect(formatTimePrecise(7_268_000)).toBe("+7.268000 ms");
  });
});

describe("hit-testing", () => {
  const start = Float64Array.from([0, 100, 200, 210]);
  const dur = Float64Array.from([50, 50, 5, 90]);

  it("finds the event under the pointer", () => {
    expect(eventAt(start, dur, 120, 0)).toBe(1);
    expect(eventAt(start, dur, 205, 0)).toBe(3 - 1);
    expect(eventAt(start, dur, 250, 0)).toBe(3);
  });
  it("finds a nearby narrow event within the tolerance only", () => {
    expect(eventAt(start, dur, 70, 10)).toBe(-1);
    expect(eventAt(start, dur, 55, 10)).toBe(0);
    expect(eventAt(start, dur, 95, 10)).toBe(1);
    expect(eventAt(new Float64Array(0), new Float64Array(0), 5, 10)).toBe(-1);
  });
  it("finds a long event that started long before (nested rows)", () => {
    const s = Float64Array.from([0, 10, 20, 30]);
    const d = Float64Array.from([1000, 2, 2, 2]);
    expect(eventAt(s, d, 500, 0)).toBe(0);
  });
  it("finds pixel columns and sorted positions", () => {
    expect(binAt(0, 100, 10, 55)).toBe(5);
    expect(binAt(0, 100, 10, 100)).toBe(-1);
    expect(binAt(0, 100, 10, -1)).toBe(-1);
    expect(lastAtOrBefore(start, 100)).toBe(1);
    expect(lastAtOrBefore(start, -1)).toBe(-1);
  });
});

describe("layout", () => {
  const rows: RowMeta[] = [
    { id: 0, rank: 0, lane: 0, depth: 0, type: "gpu", events: 5 },
    { id: 1, rank: 0, lane: 1, depth: 0, type: "cpu", events: 5 },
    { id: 2, rank: 0, lane: 1, depth: 1, type: "cpu", events: 5 },
    { id: 3, rank: 1, lane: 2, depth: 0, type: "gpu", events: 5 },
  ];
  const lanes: LaneMeta[] = [
    {
      id: 0,
      rank: 0,
      type: "gpu",
      label: "GPU 0 · stream 7",
      device: 0,
      stream: 7,
      pid: 0,
      tid: 7,
      rows: [0],
    },
    { id: 1, rank: 0, type: "cpu", label: "thread 1", device: -1, stream: -1, pid: 1, tid: 1, rows: [1, 2] },
    {
      id: 2,
      rank: 1,
      type: "gpu",
      label: "GPU 1 · stream 7",
      device: 1,
      stream: 7,
      pid: 1,
      tid: 7,
      rows: [3],
    },
  ];
  const opts = { headerHeight: 20, gpuRowHeight: 18, cpuRowHeight: 15, laneGap: 3 };

  it("stacks headers, GPU rows, then CPU rows per rank", () => {
    const l = computeLayout(rows, lanes, [0, 1], new Set(), true, opts);
    expect(l.slots.map((s) => [s.kind, s.row, s.y])).toEqual([
      ["header", -1, 0],
      ["row", 0, 20],
      ["row", 1, 41],
      ["row", 2, 56],
      ["header", -1, 74],
      ["row", 3, 94],
    ]);
    expect(l.height).toBe(115);
    expect(l.slots[2]!.label).toBe("thread 1");
    expect(l.slots[3]!.label).toBe("");
  });
  it("hides CPU lanes, collapsed ranks and ranks not shown", () => {
    expect(computeLayout(rows, lanes, [0, 1], new Set(), false, opts).rowSlot.has(1)).toBe(false);
    const c = computeLayout(rows, lanes, [0, 1], new Set([0]), true, opts);
    expect(c.slots.filter((s) => s.rank === 0).map((s) => s.kind)).toEqual(["header"]);
    expect(c.slots[0]!.collapsed).toBe(true);
    expect(computeLayout(rows, lanes, [1], new Set(), true, opts).slots.every((s) => s.rank === 1)).toBe(
      true,
    );
  });
  it("finds the slot at a height and the slots in a band", () => {
    const l = computeLayout(rows, lanes, [0, 1], new Set(), true, opts);
    expect(slotAt(l, 25)).toBe(1);
    expect(slotAt(l, 39)).toBe(-1); // lane gap
    expect(slotAt(l, 1000)).toBe(-1);
    expect(visibleSlots(l, 30, 30)).toEqual([1, 4]);
    expect(visibleSlots(l, 0, 1000)).toEqual([0, 6]);
  });
});

describe("search patterns", () => {
  it("refuses a pattern longer than the kernel accepts, with the reason", () => {
    expect(patternProblem("nccl.*sum")).toBeNull();
    expect(patternProblem("a".repeat(MAX_PATTERN_CHARS))).toBeNull();
    expect(patternProblem("a".repeat(MAX_PATTERN_CHARS + 1))).toBe(
      "pattern too long (1,001 characters; at most 1,000)",
    );
  });
});
