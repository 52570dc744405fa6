import { describe, expect, it } from "vitest";
import { foldTooltip } from "../timeline/lanes/fold";
import type { FoldSummary } from "../timeline/messages";
import { type BinRow, NO_KIND } from "../timeline/protocol";

const bins = (frac: number[], kind: number[], count: number[]): BinRow => ({
  mode: "bins",
  frac: Float32Array.from(frac),
  kind: Uint8Array.from(kind),
  count: Uint32Array.from(count),
  match: null,
  color: null,
});

const label = (code: number) => ["compute", "CPU op"][code] ?? "?";

describe("foldTooltip", () => {
  const row = bins([0.5, 0], [1, NO_KIND], [3, 0]);
  it("shows the column's summary from the window while the kernel's answer is on its way", () => {
    const tip = foldTooltip(2, 4, row, 0, 1000, 3000, null, label);
    expect(tip.title).toBe("rank 2: 4 CPU threads folded");
    const lines = Object.fromEntries(tip.lines);
    expect(lines.busy).toContain("50");
    expect(lines.busy).toContain("2 us");
    expect(lines.starting).toBe("3");
    expect(lines.mostly).toBe("CPU op");
    expect(tip.lines.at(-1)).toEqual(["", "click to unfold the threads"]);
  });
  it("then the threads working, their mean number busy and the top names", () => {
    const fold: FoldSummary = {
      rank: 2,
      lo: 1000,
      hi: 3000,
      threads: 4,
      active: 3,
      busy_ns: 1500,
      thread_ns: 3000,
      events: 7,
      top: [
        { name: "aten::mm", short: "aten::mm", time_ns: 2000, events: 2 },
        { name: "aten::add", short: "aten::add", time_ns: 1000, events: 5 },
      ],
    };
    const tip = foldTooltip(2, 4, row, 0, 1000, 3000, fold, label);
    const lines = Object.fromEntries(tip.lines.filter(([k]) => k));
    expect(lines.working).toBe("3 of 4 threads");
    expect(lines.busy).toContain("75");
    expect(lines["busy threads"]).toBe("1.50 on average");
    expect(lines.events).toBe("7");
    expect(lines.top).toContain("aten::mm");
    expect(tip.lines.find(([, v]) => v.startsWith("aten::add"))).toBeDefined();
    // An empty column: no kind.
    expect(
      Object.fromEntries(foldTooltip(2, 1, row, 1, 3000, 5000, null, label).lines).mostly,
    ).toBeUndefined();
  });
});
