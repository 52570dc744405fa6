import { describe, expect, it } from "vitest";
import {
  LABEL_MIN_PX,
  RectBatch,
  type Label,
  type RawStyle,
  drawArrow,
  drawAxis,
  drawMatches,
  fitText,
  layoutBinRow,
  layoutRawRow,
  shortName,
} from "../timeline/draw";
import { ticks } from "../timeline/axis";
import { NO_KIND, type BinRow, type RawRow } from "../timeline/protocol";
import { MockCtx, asCtx } from "./mockctx";

function rawRow(events: [number, number, number?][]): RawRow {
  return {
    mode: "raw",
    start: Float64Array.from(events.map((e) => e[0])),
    dur: Float64Array.from(events.map((e) => e[1])),
    eid: Float64Array.from(events.map((_, i) => i)),
    name: Uint32Array.from(events.map(() => 0)),
    kind: Uint8Array.from(events.map((e) => e[2] ?? 0)),
  };
}

const COLORS = ["#4c78a8", "#e45756", "#54a24b"];
const style = (labels = false, match: ((i: number) => boolean) | null = null): RawStyle => ({
  fill: (i) => COLORS[i % 3]!,
  text: () => "#fff",
  label: labels ? () => "void at::native::vectorized_elementwise_kernel<4, float>(int, float*)" : null,
  charWidth: 6,
  match,
});

describe("RectBatch", () => {
  it("snaps rectangles to whole pixels, at least one wide", () => {
    const b = new RectBatch();
    b.add("#000", 10.4, 2.6, 0.2, 9.8);
    b.add("#000", 20.5, 0, 3.2, 10);
    const ctx = new MockCtx();
    b.flush(asCtx(ctx));
    expect(ctx.of("rect").map((c) => c.args)).toEqual([
      [10, 3, 1, 9],
      [21, 0, 3, 10],
    ]);
  });

  it("fills once per colour whatever the number of rectangles", () => {
    const b = new RectBatch();
    for (let i = 0; i < 10_000; i++) b.add(COLORS[i % 3]!, i, 0, 1, 10);
    const ctx = new MockCtx();
    expect(b.flush(asCtx(ctx))).toBe(3);
    expect(ctx.count("fill")).toBe(3);
    expect(ctx.count("rect")).toBe(10_000);
    expect(new Set(ctx.of("fill").map((c) => c.fillStyle))).toEqual(new Set(COLORS));
  });
});

describe("layoutRawRow", () => {
  const scale = { lo: 0, hi: 1000, x0: 100, width: 1000 }; // 1 ns per px

  it("maps times to pixels and culls events outside the view", () => {
    const row = rawRow([
      [-50, 20],
      [10, 30],
      [500, 100],
      [1200, 10],
    ]);
    const b = new RectBatch();
    const n = layoutRawRow(row, scale, 5, 10, style(), b, [], []);
    expect(n).toBe(2);
    const ctx = new MockCtx();
    b.flush(asCtx(ctx));
    const rects = ctx.of("rect").map((c) => c.args);
    expect(rects).toContainEqual([110, 5, 29, 10]); // a 1 px gap after wide events
    expect(rects).toContainEqual([600, 5, 99, 10]);
  });

  it("clips events crossing the view's edges to the plot", () => {
    const row = rawRow([
      [-100, 200],
      [900, 500],
    ]);
    const b = new RectBatch();
    layoutRawRow(row, scale, 0, 10, style(), b, [], []);
    const ctx = new MockCtx();
    b.flush(asCtx(ctx));
    const xs = ctx.of("rect").map((c) => [c.args[0], (c.args[0] as number) + (c.args[2] as number)]);
    for (const [a, z] of xs) {
      expect(a).toBeGreaterThanOrEqual(100);
      expect(z).toBeLessThanOrEqual(1100);
    }
  });

  it("merges sub-pixel events of one colour per pixel column", () => {
    // 10,000 events of 0.01 ns in 100 ns: 100 pixel columns.
    const events: [number, number, number][] = [];
    for (let i = 0; i < 10_000; i++) events.push([i * 0.01, 0.01, 0]);
    const row = rawRow(events);
    const b = new RectBatch();
    const n = layoutRawRow(row, scale, 0, 10, { ...style(), fill: () => "#000" }, b, [], []);
    expect(n).toBe(100);
    expect(b.count).toBe(100);
  });

  it("labels events wide enough, with short names that fit", () => {
    const row = rawRow([
      [0, LABEL_MIN_PX - 2],
      [100, 300],
    ]);
    const labels: Label[] = [];
    layoutRawRow(row, scale, 0, 16, style(true), new RectBatch(), labels, []);
    expect(labels).toHaveLength(1);
    expect(labels[0]!.text).toBe("vectorized_elementwise_kernel");
    expect(labels[0]!.x).toBe(203);
    expect(labels[0]!.text.length * 6).toBeLessThanOrEqual(labels[0]!.maxWidth);
  });

  it("queues search matches for outlining", () => {
    const row = rawRow([
      [0, 10],
      [20, 10],
      [40, 10],
    ]);
    const matches: number[] = [];
    layoutRawRow(
      row,
      scale,
      0,
      10,
      style(false, (i) => i !== 1),
      new RectBatch(),
      [],
      matches,
    );
    expect(matches.length / 4).toBe(2);
    const ctx = new MockCtx();
    drawMatches(asCtx(ctx), matches, "#ff0");
    expect(ctx.count("stroke")).toBe(1);
    expect(ctx.of("stroke")[0]!.strokeStyle).toBe("#ff0");
  });
});

describe("layoutBinRow", () => {
  const bins = (frac: number[], kind: number[], match?: number[]): BinRow => ({
    mode: "bins",
    frac: Float32Array.from(frac),
    kind: Uint8Array.from(kind),
    count: Uint32Array.from(frac.map(() => 1)),
    match: match ? Uint32Array.from(match) : null,
    color: null,
  });

  it("draws busy fractions as bars and merges equal neighbours", () => {
    const row = bins([1, 1, 1, 0, 0.5, 0.5, 1], [0, 0, 0, NO_KIND, 1, 1, 1]);
    const scale = { lo: 0, hi: 70, x0: 0, width: 70 };
    const b = new RectBatch();
    const n = layoutBinRow(row, 0, 70, scale, 0, 10, { fill: (k) => COLORS[row.kind[k]!]! }, b, []);
    expect(n).toBe(3); // [0,3) full, [4,6) half, [6,7) full
    const ctx = new MockCtx();
    b.flush(asCtx(ctx));
    const rects = ctx.of("rect").map((c) => c.args);
    expect(rects).toContainEqual([0, 0, 30, 10]);
    expect(rects).toContainEqual([40, 5, 20, 5]);
    expect(rects).toContainEqual([60, 0, 10, 10]);
  });

  it("stretches columns when the view differs from the request (zoom in progress)", () => {
    const row = bins([1, 1], [0, 2]);
    const scale = { lo: 0, hi: 100, x0: 0, width: 400 }; // view is half the request's span
    const b = new RectBatch();
    layoutBinRow(row, 0, 200, scale, 0, 10, { fill: (k) => COLORS[row.kind[k]!]! }, b, []);
    const ctx = new MockCtx();
    b.flush(asCtx(ctx));
    expect(ctx.of("rect").map((c) => c.args)).toEqual([[0, 0, 400, 10]]);
  });

  it("flags columns holding search matches", () => {
    const row = bins([1, 1, 1], [0, 0, 0], [0, 3, 0]);
    const matches: number[] = [];
    layoutBinRow(
      row,
      0,
      3,
      { lo: 0, hi: 3, x0: 0, width: 3 },
      0,
      10,
      { fill: () => "#000" },
      new RectBatch(),
      matches,
    );
    expect(matches).toEqual([1, 0, 1, 10]);
  });

  it("labels runs wide enough with what the owner names there (the report zoomed in)", () => {
    // Bins of 100 ns at 2 px a ns (zoomed past the finest level): two of 200 px, the third cut to 1 px.
    const row = bins([1, 0.25, 1], [0, 1, 2]);
    const labels: Label[] = [];
    const asked: [number, number][] = [];
    layoutBinRow(
      row,
      0,
      300,
      { lo: 0, hi: 200.5, x0: 0, width: 401 },
      0,
      20,
      {
        fill: (k) => COLORS[row.kind[k]!]!,
        label: (a, b) => {
          asked.push([a, b]);
          return a === 0 ? "void at::native::vectorized_elementwise_kernel<4, float>(int)" : "ncclKernel";
        },
        text: () => "#fff",
        plainText: "#111",
        charWidth: 6,
      },
      new RectBatch(),
      [],
      labels,
    );
    // The third bin shows 1 px of the plot: too narrow for a label, and not asked.
    expect(asked).toEqual([
      [0, 100],
      [100, 200],
    ]);
    expect(labels.map((l) => [l.text, l.x, l.color])).toEqual([
      ["vectorized_elementwise_kernel", 3, "#fff"], // on its full bar
      ["ncclKernel", 203, "#111"], // beside a quarter-height bar: the plain text colour
    ]);
    // Without a label function (the widget, whose zoomed windows hold events) nothing is labelled.
    const none: Label[] = [];
    layoutBinRow(
      row,
      0,
      300,
      { lo: 0, hi: 200.5, x0: 0, width: 401 },
      0,
      20,
      { fill: () => "#000" },
      new RectBatch(),
      [],
      none,
    );
    expect(none).toEqual([]);
  });
});

describe("labels", () => {
  it("shortens C++ kernel names", () => {
    expect(
      shortName(
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>(float*, float const*, int)",
      ),
    ).toBe("cunn_SoftMaxForward");
    expect(shortName("aten::addmm")).toBe("aten::addmm");
    expect(
      shortName("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
    ).toBe("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  });
  it("fits text with an ellipsis", () => {
    expect(fitText("abcdefghij", 60, 6)).toBe("abcdefghij");
    expect(fitText("abcdefghij", 30, 6)).toBe("abcd…");
    expect(fitText("abcdefghij", 12, 6)).toBe("");
  });
});

describe("axis and overlays", () => {
  it("draws one label per tick", () => {
    const ctx = new MockCtx();
    const tk = ticks(0, 10_000_000, 900);
    drawAxis(asCtx(ctx), tk, { lo: 0, hi: 10_000_000, x0: 100, width: 900 }, 0, 24, 500, {
      background: "#fff",
      foreground: "#000",
      muted: "#666",
      grid: "#eee",
      font: "10px sans-serif",
    });
    const texts = ctx.of("fillText").map((c) => c.args[0]);
    expect(texts).toEqual(tk.labels);
    expect(texts[1]).toBe("1 ms");
  });
  it("leaves out tick labels that would run into the base note or past the plot", () => {
    // Deep zoom far from the origin: "+1726 ns" labels and "from 7.018 ms" at the right end.
    const lo = 7_019_708;
    const hi = lo + 20;
    const tk = ticks(lo, hi, 1048);
    expect(tk.base).not.toBe("");
    const ctx = new MockCtx();
    const s = { lo, hi, x0: 170, width: 1048 };
    drawAxis(asCtx(ctx), tk, s, 0, 24, 500, {
      background: "#fff",
      foreground: "#000",
      muted: "#666",
      grid: "#eee",
      font: "10px sans-serif",
    });
    const texts = ctx.of("fillText").map((c) => c.args as [string, number]);
    const base = texts.at(-1)!;
    expect(base[0]).toBe(`from ${tk.base}`);
    const baseLeft = s.x0 + s.width - 4 - base[0].length * 6; // right-aligned; the mock's 6 px a character
    const ticksDrawn = texts.slice(0, -1);
    expect(ticksDrawn.length).toBeGreaterThan(3);
    expect(ticksDrawn.length).toBeLessThan(tk.labels.length); // the last ones are left out
    for (const [text, x] of ticksDrawn) expect(x + text.length * 6).toBeLessThan(baseLeft);
  });
  it("draws an arrow ending at the activity", () => {
    const ctx = new MockCtx();
    drawArrow(asCtx(ctx), 10, 100, 50, 20, "#f00");
    const curve = ctx.of("bezierCurveTo")[0]!;
    expect(curve.args.slice(4)).toEqual([50, 20]);
    expect(ctx.count("fill")).toBe(2);
  });
});
