import { describe, expect, it } from "vitest";
import { axisCaption } from "../timeline/axis";
import { computeLayout } from "../timeline/layout";
import type { LaneMeta, RowMeta } from "../timeline/messages";
import { busiestStream, focusScroll } from "../timeline/ranks";
import { allRanksText } from "../timeline/toolbar";

// Issue 38, points 4 and 7: a link scrolls the focused rank to the top and shows its busiest
// stream; the axis caption never runs into the ticks; the "All ranks" button stays short.

const opts = { headerHeight: 20, gpuRowHeight: 18, cpuRowHeight: 15, laneGap: 3 };

/** `n` ranks, each with a compute stream (1 event per rank) and a busy NCCL stream (`busy` rows deep, 50 events a row). */
function trace(n: number, busy: number): { rows: RowMeta[]; lanes: LaneMeta[] } {
  const rows: RowMeta[] = [];
  const lanes: LaneMeta[] = [];
  for (let r = 0; r < n; r++) {
    const mk = (type: "gpu" | "cpu", depths: number, events: number, stream: number) => {
      const id = lanes.length;
      const ids = Array.from({ length: depths }, (_, d) => {
        rows.push({ id: rows.length, rank: r, lane: id, depth: d, type, events });
        return rows.length - 1;
      });
      lanes.push({
        id,
        rank: r,
        type,
        label: `${type} ${stream}`,
        device: 0,
        stream,
        pid: 1,
        tid: id,
        rows: ids,
      });
    };
    mk("gpu", 1, 1, 7);
    mk("gpu", busy, 50, 20);
    mk("cpu", 4, 10, -1);
  }
  return { rows, lanes };
}

describe("a link's focused rank", () => {
  const { rows, lanes } = trace(8, 1);
  const ranks = [0, 1, 2, 3, 4, 5, 6, 7];
  const layout = computeLayout(rows, lanes, ranks, new Set(), true, opts);
  // A rank block: header 20, compute 18 + 3, NCCL 18 + 3, a CPU thread of 4 rows 4 x 15 + 3 = 125 px.
  const block = 125;

  it("finds the busiest GPU stream (the NCCL one, not the compute one or a CPU thread)", () => {
    const i = busiestStream(layout, lanes, rows, 5)!;
    const slot = layout.slots[i]!;
    expect(slot.rank).toBe(5);
    expect(lanes.find((l) => l.rows.includes(slot.row))!.stream).toBe(20);
    expect(busiestStream(layout, lanes, rows, 42)).toBeNull();
  });

  it("comes to the top of the plot, with room under the last rank when it is near the end", () => {
    expect(layout.height).toBe(8 * block);
    // 400 px of plot: rank 5 at y = 625 comes to the top, 25 px of room under rank 7 (625 + 400 - 1000).
    const at5 = focusScroll(layout, 5, 400, busiestStream(layout, lanes, rows, 5))!;
    expect(at5.top).toBe(5 * block);
    expect(at5.room).toBe(25);
    const at7 = focusScroll(layout, 7, 400)!;
    expect(at7.top).toBe(7 * block); // the last rank too: not left at the bottom edge
    expect(at7.room).toBe(275); // 875 + 400 - 1000
    expect(focusScroll(layout, 0, 400)).toEqual({ top: 0, room: 0 });
    expect(focusScroll(layout, 9, 400)).toBeNull();
  });

  it("scrolls on just enough to show the busiest stream whole when the plot is short", () => {
    // The NCCL stream 12 rows deep: rows 44 .. 44 + 12 * 18 = 260 px into the block.
    const deep = trace(8, 12);
    const l = computeLayout(deep.rows, deep.lanes, ranks, new Set(), true, opts);
    const busiest = busiestStream(l, deep.lanes, deep.rows, 5)!;
    const first = l.slots[busiest]!;
    const start = l.headerSlot.get(5)!;
    const y5 = l.slots[start]!.y;
    // 300 px of plot: the first lane at the top shows the NCCL stream's first row.
    expect(focusScroll(l, 5, 300, busiest)!.top).toBe(y5);
    // 30 px: its first row would be cut at the bottom edge, so it comes up to the top.
    const short = focusScroll(l, 5, 30, busiest)!;
    expect(short.top).toBeGreaterThan(y5);
    expect(short.top).toBeLessThanOrEqual(first.y);
    expect(first.y + first.h).toBeLessThanOrEqual(short.top + 30);
  });
});

describe("the axis caption and the toolbar", () => {
  const measure = (t: string) => t.length * 5.5; // 10 px font: about 5.5 px a character

  it("keeps the caption in the gutter (160 px), shortening it before it reaches the ticks", () => {
    const full = axisCaption("1.2 ms", 400, measure);
    expect(full).toBe("time since the trace origin · 1.2 ms shown");
    const fit = axisCaption("20.9 ms", 160, measure);
    expect(measure(fit)).toBeLessThanOrEqual(160);
    expect(fit).toContain("20.9 ms");
    expect(axisCaption("20.9 ms", 30, measure)).toBe("");
  });

  it("writes the All ranks text, never longer than with all but one rank shown", () => {
    expect(allRanksText(8, 8)).toBe("All ranks (8)");
    expect(allRanksText(3, 8)).toBe("All ranks (3 of 8 shown)");
    // The button's width is set from the longest text: the count changing never reflows the toolbar.
    for (const shown of [1, 9, 99, 999, 1024])
      expect(allRanksText(shown, 1024).length).toBeLessThanOrEqual(allRanksText(1023, 1024).length);
  });
});
