import { describe, expect, it } from "vitest";
import { type FoundInstance, collectiveMarks, collectiveText, isFound } from "../timeline/collective";
import { computeLayout } from "../timeline/layout";
import type { LaneMeta, RowMeta } from "../timeline/messages";

// Two ranks of one GPU stream each (rows 0 and 1), and a third rank (2) whose kernel is not drawn.
const rows: RowMeta[] = [
  { id: 0, rank: 0, lane: 0, depth: 0, type: "gpu", events: 3 },
  { id: 1, rank: 1, lane: 1, depth: 0, type: "gpu", events: 3 },
  { id: 2, rank: 2, lane: 2, depth: 0, type: "gpu", events: 3 },
];
const lane = (id: number, rank: number): LaneMeta => ({
  id,
  rank,
  type: "gpu",
  label: "stream 7",
  device: 0,
  stream: 7,
  pid: 0,
  tid: 0,
  rows: [id],
});
const lanes = [lane(0, 0), lane(1, 1), lane(2, 2)];

// An all-reduce: rank 1 arrives at 400 ns, 300 ns after rank 0 (100 ns); both end at 500 ns.
const inst: FoundInstance = {
  found: true,
  key: "order:all_reduce:0",
  collective: "all_reduce",
  matched_by: "order",
  ranks: [
    { rank: 0, start: 100, end: 500, eid: 10, kernels: 1, row: 0 },
    { rank: 1, start: 400, end: 500, eid: 11, kernels: 1, row: 1 },
  ],
  first: { rank: 0, start: 100 },
  last: { rank: 1, start: 400 },
  wait_ns: 300,
  consistent: true,
};
// 1 px per ns from x0 = 10.
const scale = { lo: 0, hi: 1000, x0: 10, width: 1000 };

describe("cross-rank collective", () => {
  it("marks each rank's interval and its wait for the last arrival", () => {
    const layout = computeLayout(rows, lanes, [0, 1, 2], new Set(), true);
    const marks = collectiveMarks(inst, layout, scale);
    expect(marks).toEqual([
      { rank: 0, slot: layout.rowSlot.get(0), x0: 110, x1: 510, waitX1: 410, last: false },
      { rank: 1, slot: layout.rowSlot.get(1), x0: 410, x1: 510, waitX1: 410, last: true },
    ]);
  });

  it("draws on a collapsed rank's header, and not on ranks not shown", () => {
    const layout = computeLayout(rows, lanes, [1], new Set([1]), true);
    const marks = collectiveMarks(inst, layout, scale);
    expect(marks.map((m) => [m.rank, m.slot])).toEqual([[1, layout.headerSlot.get(1)]]);
  });

  it("says who arrived last and how long after the first", () => {
    expect(collectiveText(inst)).toBe(
      "all_reduce on ranks 0-1 · last to arrive: rank 1, 300 ns after rank 0",
    );
    expect(collectiveText({ ...inst, wait_ns: 0 })).toBe(
      "all_reduce on ranks 0-1 · every rank arrived together",
    );
    expect(isFound(inst)).toBe(true);
    expect(isFound({ found: false, reason: "not a communication kernel" })).toBe(false);
    expect(isFound(null)).toBe(false);
  });
});
