import { describe, expect, it } from "vitest";
import { computeLayout, slotAt, visibleSlots } from "../timeline/layout";
import type { LaneMeta, RowMeta } from "../timeline/messages";
import { displayOrder, keepPinned, moveRank, parseRankFilter, rankBlock, withRanks } from "../timeline/ranks";

const ALL = Array.from({ length: 16 }, (_, i) => i);

describe("parseRankFilter", () => {
  it("reads ranks and inclusive ranges", () => {
    expect(parseRankFilter("0-7,12", ALL).ranks).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 12]);
    expect(parseRankFilter(" 3 , 1-2 ,", ALL).ranks).toEqual([1, 2, 3]);
    expect(parseRankFilter("15-99", ALL).ranks).toEqual([15]);
    expect(parseRankFilter("7", ALL).ranks).toEqual([7]);
  });
  it("keeps the trace's order and only its ranks", () => {
    expect(parseRankFilter("12,0-1", [12, 0, 1, 5]).ranks).toEqual([12, 0, 1]);
    expect(parseRankFilter("100-200", ALL).ranks).toEqual([]);
  });
  it("refuses a backwards range", () => {
    expect(parseRankFilter("7-0", ALL).error).toContain("7-0 goes backwards");
  });
  it("matches anything else as a regular expression on the rank's number", () => {
    expect(parseRankFilter("^1", ALL).ranks).toEqual([1, 10, 11, 12, 13, 14, 15]);
    expect(parseRankFilter("5$", ALL).ranks).toEqual([5, 15]);
    expect(parseRankFilter("(", ALL).error).toContain("regular expression");
  });
  it("selects every rank when empty", () => {
    expect(parseRankFilter("  ", [3, 1]).ranks).toEqual([3, 1]);
  });
});

describe("rank order", () => {
  it("draws pinned ranks first, in pin order, only if shown", () => {
    expect(displayOrder([0, 1, 2, 3], [3, 9, 1])).toEqual([3, 1, 0, 2]);
    expect(displayOrder([2, 0], [])).toEqual([2, 0]);
  });
  it("adds missing ranks at the end", () => {
    expect(withRanks([4, 2], [2, 7, 1])).toEqual([4, 2, 7, 1]);
  });
  it("keeps pinned ranks through a filter", () => {
    expect(keepPinned([0, 1, 5], [5, 9])).toEqual([5, 9, 0, 1]);
  });
  it("moves a rank up or down, not past the ends", () => {
    expect(moveRank([0, 1, 2], 2, -1)).toEqual([0, 2, 1]);
    expect(moveRank([0, 1, 2], 0, 1)).toEqual([1, 0, 2]);
    expect(moveRank([0, 1, 2], 0, -1)).toEqual([0, 1, 2]);
    expect(moveRank([0, 1, 2], 2, 1)).toEqual([0, 1, 2]);
    expect(moveRank([0, 1, 2], 9, 1)).toEqual([0, 1, 2]);
  });
});

describe("folded CPU threads and rank blocks", () => {
  // Rank 0: one GPU stream (row 0), two CPU threads (rows 1-2 at depths 0-1, row 3 at depth 0).
  const rows: RowMeta[] = [
    { id: 0, rank: 0, lane: 0, depth: 0, type: "gpu", events: 1 },
    { id: 1, rank: 0, lane: 1, depth: 0, type: "cpu", events: 1 },
    { id: 2, rank: 0, lane: 1, depth: 1, type: "cpu", events: 1 },
    { id: 3, rank: 0, lane: 2, depth: 0, type: "cpu", events: 1 },
    { id: 4, rank: 1, lane: 3, depth: 0, type: "gpu", events: 1 },
  ];
  const lane = (id: number, rank: number, type: "gpu" | "cpu", r: number[]): LaneMeta => ({
    id,
    rank,
    type,
    label: `lane ${id}`,
    device: type === "gpu" ? 0 : -1,
    stream: type === "gpu" ? 7 : -1,
    pid: 1,
    tid: id,
    rows: r,
  });
  const lanes = [
    lane(0, 0, "gpu", [0]),
    lane(1, 0, "cpu", [1, 2]),
    lane(2, 0, "cpu", [3]),
    lane(3, 1, "gpu", [4]),
  ];
  const opts = { headerHeight: 20, gpuRowHeight: 18, cpuRowHeight: 15, laneGap: 3 };

  it("draws a rank's CPU threads as one folded row (their summary; their depth-0 rows as a fallback)", () => {
    const l = computeLayout(rows, lanes, [0, 1], new Set(), true, opts, [], new Set([0]));
    // header 0..20, GPU row 20..38 (+3 gap), folded row 41..56 (+3 gap), rank 1 header at 59.
    expect(l.slots.map((s) => [s.kind, s.row, s.y, s.folded ?? false])).toEqual([
      ["header", -1, 0, false],
      ["row", 0, 20, false],
      ["fold", -1, 41, true],
      ["header", -1, 59, false],
      ["row", 4, 79, false],
    ]);
    expect(l.slots[2]!.label).toBe("▸ CPU: 2 threads");
    expect(l.slots[2]!.rank).toBe(0);
    expect(l.slots[2]!.foldRows).toEqual([1, 3]);
    expect(l.rowSlot.has(1) || l.rowSlot.has(2) || l.rowSlot.has(3)).toBe(false); // no thread row while folded
    expect(l.slots[slotAt(l, 45)]!.folded).toBe(true);
    const [a, b] = visibleSlots(l, 40, 10);
    expect(l.slots.slice(a, b).map((s) => s.kind)).toEqual(["fold"]);
  });
  it("unfolded (or with CPU lanes hidden) is the usual layout", () => {
    const plain = computeLayout(rows, lanes, [0, 1], new Set(), true, opts);
    expect(plain.slots.some((s) => s.folded)).toBe(false);
    const hidden = computeLayout(rows, lanes, [0, 1], new Set(), false, opts, [], new Set([0]));
    expect(hidden.slots.filter((s) => s.kind === "row").map((s) => s.row)).toEqual([0, 4]);
  });
  it("finds a rank's block: its header to the next header", () => {
    const l = computeLayout(rows, lanes, [1, 0], new Set(), true, opts, [], new Set([0]));
    expect(rankBlock(l, 1)).toEqual({ y: 0, h: 41 });
    expect(rankBlock(l, 0)).toEqual({ y: 41, h: l.height - 41 });
    expect(rankBlock(l, 5)).toBeNull();
  });
});
