import { describe, expect, it } from "vitest";
import {
  formatLevel,
  memoryBinAt,
  memoryOutline,
  memoryTooltip,
  memoryTop,
  memoryY,
  drawMemory,
  peakMark,
} from "../timeline/lanes/memory";
import { computeLayout } from "../timeline/layout";
import type { MemoryMeta, LaneMeta, RowMeta } from "../timeline/messages";
import type { MemoryBins } from "../timeline/protocol";
import { drawScore, fits, pickWindow, requestedExtent } from "../timeline/windows";
import { MockCtx, asCtx } from "./mockctx";

const MiB = 2 ** 20;
const GiB = 2 ** 30;

function meta(over: Partial<MemoryMeta> = {}): MemoryMeta {
  return {
    id: 0,
    rank: 0,
    device_type: "CUDA",
    device: 0,
    label: "memory · CUDA:0",
    kind: "memory",
    unit: "bytes",
    records: 4,
    peak_allocated: GiB,
    peak_ts: 50,
    peak_reserved: 2 * GiB,
    peak_reserved_ts: 10,
    start: 10,
    end: 90,
    ...over,
  };
}

function bins(allocMax: number[], allocEnd?: number[], resMax?: number[], resEnd?: number[]): MemoryBins {
  return {
    allocMax: Float64Array.from(allocMax),
    allocEnd: Float64Array.from(allocEnd ?? allocMax),
    resMax: Float64Array.from(resMax ?? allocMax.map((v) => (Number.isNaN(v) ? v : 2 * GiB))),
    resEnd: Float64Array.from(resEnd ?? allocMax.map((v) => (Number.isNaN(v) ? v : 2 * GiB))),
  };
}

// 10 columns over [0, 100) drawn on 100 px starting at x = 0.
const S = { lo: 0, hi: 100, x0: 0, width: 100 };

describe("memory lane geometry", () => {
  it("scales to the lane's peak, fixed and clamped", () => {
    expect(memoryTop(meta())).toBe(2 * GiB);
    expect(memoryTop(meta({ peak_allocated: 0, peak_reserved: 0 }))).toBe(1);
    expect(memoryY(0, 10, 20, 100)).toBe(30);
    expect(memoryY(100, 10, 20, 100)).toBe(10);
    expect(memoryY(50, 10, 20, 100)).toBe(20);
    expect(memoryY(500, 10, 20, 100)).toBe(10);
    expect(memoryY(-5, 10, 20, 100)).toBe(30);
  });

  it("draws each column's maximum as a flat step, split where there is no value yet", () => {
    const v = Float64Array.from([NaN, NaN, 50, 100, 25, NaN, 0, 0, 0, 0]);
    const polys = memoryOutline(v, 0, 100, 10, S, 0, 100, 100, true);
    expect(polys).toHaveLength(2);
    // Baseline at x=20, then the steps of columns 2..4, back to the baseline at x=50.
    expect(polys[0]).toEqual([20, 100, 20, 50, 30, 50, 30, 0, 40, 0, 40, 75, 50, 75, 50, 100]);
    expect(polys[1]![0]).toBe(60);
    expect(polys[1]!.at(-2)).toBe(100);
    // Open (a line): no baseline points.
    const line = memoryOutline(v, 0, 100, 10, S, 0, 100, 100, false);
    expect(line[0]).toEqual([20, 50, 30, 50, 30, 0, 40, 0, 40, 75, 50, 75]);
  });

  it("a one-column spike keeps its height (the peak is never lost)", () => {
    const v = new Float64Array(1000).fill(MiB);
    v[517] = GiB;
    const polys = memoryOutline(v, 0, 1000, 1000, { lo: 0, hi: 1000, x0: 0, width: 1000 }, 0, 40, GiB, false);
    const ys = polys[0]!.filter((_, i) => i % 2 === 1);
    expect(Math.min(...ys)).toBe(0); // the top of the lane: the spike reaches the scale's top
  });

  it("skips columns outside the plot", () => {
    const v = Float64Array.from([1, 2, 3, 4]);
    const polys = memoryOutline(v, 0, 100, 4, { lo: 30, hi: 60, x0: 10, width: 30 }, 0, 10, 4, false);
    const xs = polys.flatMap((p) => p.filter((_, i) => i % 2 === 0));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(10 - 25);
    expect(polys).toHaveLength(1);
    expect(polys[0]!.length).toBe(8); // columns 1 and 2 only
  });

  it("marks the peak where it is, or not at all outside the plot", () => {
    expect(peakMark(meta(), S, 0, 100)).toEqual([50, 50]);
    expect(peakMark(meta({ peak_ts: 150 }), S, 0, 100)).toBeNull();
  });

  it("finds the column under the pointer only where the lane has a value", () => {
    const b = bins([NaN, 5, 7]);
    expect(memoryBinAt(b, 0, 30, 3, 5)).toBe(-1);
    expect(memoryBinAt(b, 0, 30, 3, 15)).toBe(1);
    expect(memoryBinAt(b, 0, 30, 3, 29.9)).toBe(2);
    expect(memoryBinAt(b, 0, 30, 3, 30)).toBe(-1);
  });
});

describe("memory lane drawing and tooltip", () => {
  it("fills the area, strokes allocated and reserved, labels the peak with its size", () => {
    const ctx = new MockCtx();
    const b = bins([NaN, MiB, GiB, MiB, MiB, MiB, 0, 0, 0, 0]);
    const n = drawMemory(asCtx(ctx), meta(), b, 0, 100, 10, S, 0, 40, {
      area: "rgba(0,0,255,0.3)",
      line: "#00f",
      reserved: "#888",
      peak: "#000",
      text: "#111",
      font: "10px sans-serif",
    });
    expect(n).toBe(2); // one area run, one reserved line
    expect(ctx.of("fill").map((c) => c.fillStyle)).toEqual(["rgba(0,0,255,0.3)", "#000"]);
    expect(ctx.of("stroke").map((c) => c.strokeStyle)).toEqual(["#00f", "#888"]);
    expect(ctx.of("setLineDash").map((c) => c.args[0])).toEqual([[3, 2], []]);
    const text = ctx.of("fillText")[0]!;
    expect(text.args[0]).toBe("peak 1 GiB");
  });

  it("draws no reserved line for the CPU allocator (reserves nothing)", () => {
    const ctx = new MockCtx();
    const m = meta({ device_type: "CPU", device: -1, peak_reserved: 0, peak_ts: 500 });
    drawMemory(asCtx(ctx), m, bins([1, 2]), 0, 100, 2, S, 0, 40, {
      area: "a",
      line: "l",
      reserved: "r",
      peak: "p",
      text: "t",
      font: "10px sans-serif",
    });
    expect(ctx.of("stroke").map((c) => c.strokeStyle)).toEqual(["l"]);
    expect(ctx.count("fillText")).toBe(0); // the peak is outside the plot
  });

  it("the tooltip writes sizes with format.ts and the column's times", () => {
    const b = bins([1.5 * MiB, GiB], [MiB, 512 * MiB], [2 * GiB, 2 * GiB], [2 * GiB, 2 * GiB]);
    const t0 = memoryTooltip(meta(), b, 0, 0, 10);
    expect(t0.title).toBe("memory · CUDA:0");
    expect(t0.lines).toContainEqual(["allocated", "1 MiB"]);
    expect(t0.lines).toContainEqual(["max in column", "1.5 MiB"]);
    expect(t0.lines).toContainEqual(["reserved", "2 GiB"]);
    expect(t0.lines).toContainEqual(["at", "+0 ns – +10 ns"]);
    expect(t0.lines).toContainEqual(["peak", "1 GiB at +50 ns"]);
    const t1 = memoryTooltip(meta(), b, 1, 45, 55);
    expect(t1.lines).toContainEqual(["peak", "1 GiB at +50 ns (here)"]);
    expect(t1.lines).toContainEqual(["allocated", "512 MiB"]);
  });
});

/** A PM-sampling counter lane (views/timeline/memory.py _add_counters): one series, no reserved. */
function counter(over: Partial<MemoryMeta> = {}): MemoryMeta {
  return meta({
    device_type: "GPU",
    label: "GPU 0 · SM Active (%)",
    kind: "counter",
    unit: "%",
    peak_allocated: 95.5,
    peak_reserved: 0,
    ...over,
  });
}

describe("hardware counter lanes (PM sampling)", () => {
  it("write values in the lane's unit: %, a plain number, or bytes", () => {
    expect(formatLevel(counter(), 95.5)).toBe("95.5%");
    expect(formatLevel(counter({ unit: "" }), 2048)).toBe("2,048");
    expect(formatLevel(counter({ unit: "" }), 1.25)).toBe("1.25");
    expect(formatLevel(counter({ unit: "" }), NaN)).toBe("–");
    expect(formatLevel(meta(), 1.5 * MiB)).toBe("1.5 MiB");
  });

  it("a % lane's scale tops at 100% at least; others at their peak", () => {
    expect(memoryTop(counter())).toBe(100);
    expect(memoryTop(counter({ peak_allocated: 140 }))).toBe(140);
    expect(memoryTop(counter({ unit: "", peak_allocated: 4096 }))).toBe(4096);
  });

  it("draw the value's area and no reserved line; the peak label in the unit", () => {
    const ctx = new MockCtx();
    const m = counter({ peak_ts: 50 });
    drawMemory(asCtx(ctx), m, bins([NaN, 80, 95.5, 2.5]), 0, 100, 4, S, 0, 40, {
      area: "a",
      line: "l",
      reserved: "r",
      peak: "p",
      text: "t",
      font: "10px sans-serif",
    });
    expect(ctx.of("stroke").map((c) => c.strokeStyle)).toEqual(["l"]);
    expect(ctx.of("fillText")[0]!.args[0]).toBe("peak 95.5%");
  });

  it("the tooltip names the value, not allocated or reserved", () => {
    const b = bins([80, 95.5]);
    const t = memoryTooltip(counter({ peak_ts: 60 }), b, 1, 50, 100);
    expect(t.title).toBe("GPU 0 · SM Active (%)");
    expect(t.lines).toContainEqual(["value", "95.5%"]);
    expect(t.lines).toContainEqual(["peak", "95.5% at +60 ns (here)"]);
    expect(t.lines.map((l) => l[0])).not.toContain("allocated");
    expect(t.lines.map((l) => l[0])).not.toContain("reserved");
  });
});

describe("memory lanes in the layout", () => {
  const rows: RowMeta[] = [
    { id: 0, rank: 0, lane: 0, depth: 0, type: "gpu", events: 1 },
    { id: 1, rank: 0, lane: 1, depth: 0, type: "cpu", events: 1 },
    { id: 2, rank: 1, lane: 2, depth: 0, type: "cpu", events: 1 },
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
    { id: 1, rank: 0, type: "cpu", label: "thread 1", device: -1, stream: -1, pid: 1, tid: 1, rows: [1] },
    { id: 2, rank: 1, type: "cpu", label: "thread 2", device: -1, stream: -1, pid: 1, tid: 2, rows: [2] },
  ];
  const opts = { headerHeight: 20, gpuRowHeight: 18, cpuRowHeight: 15, laneGap: 3, memoryHeight: 30 };
  const memory = [meta({ id: 0, rank: 0, label: "memory · CPU" }), meta({ id: 1, rank: 0 })];

  it("puts a rank's memory lanes under its lanes, whether CPU lanes show or not", () => {
    const l = computeLayout(rows, lanes, [0, 1], new Set(), true, opts, memory);
    expect(l.slots.map((s) => [s.kind, s.row, s.y])).toEqual([
      ["header", -1, 0],
      ["row", 0, 20],
      ["row", 1, 41],
      ["memory", 0, 59],
      ["memory", 1, 92],
      ["header", -1, 125],
      ["row", 2, 145],
    ]);
    expect(l.memorySlot.get(1)).toBe(4);
    expect(l.slots[3]!.label).toBe("memory · CPU");
    const noCpu = computeLayout(rows, lanes, [0, 1], new Set(), false, opts, memory);
    expect(noCpu.slots.filter((s) => s.kind === "memory").map((s) => s.y)).toEqual([41, 74]);
  });

  it("hides them with their rank (collapsed or not shown), and has none without memory", () => {
    expect(computeLayout(rows, lanes, [0, 1], new Set([0]), true, opts, memory).memorySlot.size).toBe(0);
    expect(computeLayout(rows, lanes, [1], new Set(), true, opts, memory).memorySlot.size).toBe(0);
    const none = computeLayout(rows, lanes, [0, 1], new Set(), true, opts);
    expect(none.slots.some((s) => s.kind === "memory")).toBe(false);
  });
});

describe("memory lanes in the window cache", () => {
  const want = {
    range: { lo: 0, hi: 100 },
    width: 100,
    rows: [],
    summaries: [],
    memory: [3],
    pattern: "",
    nameColors: false,
  };
  const extent = (memory: number[] | undefined) => ({
    lo: -25,
    hi: 125,
    width: 150,
    rows: new Set<number>(),
    summaries: new Set<number>(),
    memory: memory === undefined ? undefined : new Set(memory),
    pattern: "",
    nameColors: false,
    epoch: 0,
  });

  it("a window fits only when it holds the lanes shown", () => {
    expect(fits(extent([3]), want, 0)).toBe(true);
    expect(fits(extent([]), want, 0)).toBe(false);
    expect(fits(extent(undefined), want, 0)).toBe(false);
    expect(fits(extent(undefined), { ...want, memory: [] }, 0)).toBe(true);
    expect(requestedExtent(want, 0).memory?.has(3)).toBe(true);
  });

  it("prefers the window holding the lanes", () => {
    expect(pickWindow([extent([3]), extent([])], want, 0)).toBe(0);
    expect(drawScore(extent([3]), want, 0)).toBeGreaterThan(drawScore(extent([]), want, 0));
  });
});
