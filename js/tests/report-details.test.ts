import { describe, expect, it } from "vitest";
import { type RankDetails, ReportDetails, compilePattern, memoryColumns } from "../report/details";

// A grid of 4 cells over [0, 400): edges 0, 100, 200, 300, 400. Kinds: 0 compute, 1 communication.
function handmade(): ReportDetails {
  const rank0: RankDetails = {
    rank: 0,
    source: "gpu",
    kinds: [0, 1],
    // kind 0 busy per cell, then kind 1.
    busy: new Float64Array([50, 100, 0, 20, 0, 0, 40, 0]),
    starts: new Uint32Array([1, 0, 0, 1, 0, 0, 2, 0]),
    // one compute event runs across the edge at 100 (it started in cell 0).
    across: new Uint32Array([0, 1, 0, 0, 0, 0, 0, 0]),
    all: new Float64Array([50, 100, 40, 20]),
    // (cell, name) -> time: gemm in cells 0, 1; nccl in 2; gemm in 3.
    nameCell: new Uint32Array([0, 1, 2, 3]),
    nameCode: new Uint32Array([0, 0, 1, 0]),
    nameNs: new Float64Array([50, 100, 40, 20]),
  };
  const rank1: RankDetails = {
    rank: 1,
    source: "gpu",
    kinds: [0],
    busy: new Float64Array([100, 100, 100, 100]),
    starts: new Uint32Array([4, 0, 0, 0]),
    across: new Uint32Array([0, 1, 1, 1]),
    all: new Float64Array([100, 100, 100, 100]),
    nameCell: new Uint32Array([0, 1, 2, 3]),
    nameCode: new Uint32Array([2, 2, 2, 2]),
    nameNs: new Float64Array([100, 100, 100, 100]),
  };
  // Rows: 10 (rank 0 GPU), 11 (rank 0 CPU), 20 (rank 1). (row, cell, name, count) columns.
  const entries: [number, number, number, number][] = [
    [10, 0, 0, 1],
    [10, 2, 1, 2],
    [10, 3, 0, 1],
    [11, 1, 3, 5],
    [20, 0, 2, 4],
  ];
  const table = new Uint32Array(4 * entries.length);
  entries.forEach((e, i) => e.forEach((v, k) => (table[k * entries.length + i] = v)));
  return new ReportDetails(
    4,
    400,
    ["compute", "communication"],
    ["gemm_kernel", "ncclAllReduce", "longKernel", "aten::mm"],
    ["gemm_kernel", "ncclAllReduce", "longKernel", "aten::mm"],
    [rank0, rank1],
    table,
    entries.length,
    [
      { id: 10, rank: 0, type: "gpu", depth: 0 },
      { id: 11, rank: 0, type: "cpu", depth: 0 },
      { id: 20, rank: 1, type: "gpu", depth: 0 },
    ],
  );
}

describe("ReportDetails: the report timeline's search, names and range summaries", () => {
  it("searches names as the kernel does: case-insensitive regex, else literal text", () => {
    expect(compilePattern("NCCL").test("ncclAllReduce")).toBe(true);
    expect(compilePattern("f(").test("f(x)")).toBe(true);
    const d = handmade();
    expect(d.matchCount("gemm")).toBe(2);
    expect(d.matchCount("aten|nccl")).toBe(7);
    expect(d.matchCount("")).toBe(0);
  });

  it("marks the columns whose cells hold a match, summing a rank's rows for its summary", () => {
    const d = handmade();
    // 8 columns of 50 ns over the trace: cell 2 (nccl, 2 events) covers columns 4 and 5.
    expect([...d.columnMatches([10], 0, 400, 8, "nccl")]).toEqual([0, 0, 0, 0, 2, 2, 0, 0]);
    // 2 columns of 200 ns: gemm starts in cells 0 and 3.
    expect([...d.columnMatches([10], 0, 400, 2, "gemm")]).toEqual([1, 1]);
    expect([...d.columnMatches([10, 11], 0, 400, 4, "mm$|nccl")]).toEqual([0, 5, 2, 0]);
    // A rank's summary row summarises its GPU streams: the CPU row's aten::mm is not in it.
    expect(d.rowsOf(0)).toEqual([10]);
    expect([...d.columnMatches(d.rowsOf(0), 0, 400, 4, "mm$|nccl")]).toEqual([0, 0, 2, 0]);
    expect([...d.columnMatches([20], 0, 400, 4, "gemm")]).toEqual([0, 0, 0, 0]);
  });

  it("names the events starting in a hovered column", () => {
    const d = handmade();
    expect(d.namesIn([10, 11], 0, 400)).toEqual([
      ["aten::mm", 5],
      ["gemm_kernel", 2], // ties: in name order
      ["ncclAllReduce", 2],
    ]);
    expect(d.namesIn([10], 200, 300)).toEqual([["ncclAllReduce", 2]]);
  });

  it("walks the matching cells in time order", () => {
    const d = handmade();
    const rr = new Map([
      [10, 0],
      [11, 0],
      [20, 1],
    ]);
    const first = d.find("gemm", -1, 1, [10, 11, 20], rr);
    expect(first).toMatchObject({ found: true, rank: 0, row: 10, eid: -1, start: 0, end: 100 });
    expect(d.find("gemm", 0, 1, [10, 11, 20], rr)).toMatchObject({ found: true, start: 300 });
    expect(d.find("gemm", 300, 1, [10, 11, 20], rr).found).toBe(false);
    expect(d.find("gemm", 300, -1, [10, 11, 20], rr)).toMatchObject({ start: 0 });
  });

  it("sums a range's busy time, events and names, exact at cell edges", () => {
    const d = handmade();
    const s = d.summary(100, 300, [0]);
    expect(s.kinds).toEqual([
      { kind: "compute", busy_ns: 100, pct: 50, events: 1 }, // the event across 100
      { kind: "communication", busy_ns: 40, pct: 20, events: 2 },
    ]);
    expect(s.all).toEqual({ busy_ns: 140, pct: 70, events: 3 });
    expect(s.top.map((t) => [t.name, t.time_ns])).toEqual([
      ["gemm_kernel", 100],
      ["ncclAllReduce", 40],
    ]);
    expect(s.source).toBe("gpu");
    const both = d.summary(0, 400, [0, 1]);
    expect(both.all.busy_ns).toBe(210 + 400);
    expect(both.all.pct).toBeCloseTo((100 * 610) / 800);
    expect(both.kinds[0]).toMatchObject({ kind: "compute", busy_ns: 170 + 400, events: 2 + 4 });
  });

  it("prorates inside a cell", () => {
    const d = handmade();
    // [150, 250): half of cell 1 (compute 100 -> 50) and half of cell 2 (communication 40 -> 20).
    const s = d.summary(150, 250, [0]);
    expect(s.kinds.map((k) => [k.kind, k.busy_ns])).toEqual([
      ["compute", 50],
      ["communication", 20],
    ]);
  });
});

describe("memoryColumns: memory lanes from an embedded level", () => {
  it("takes each column's largest max and its last bin's end value, NaN before the lane starts", () => {
    // One lane, 4 bins over [0, 400): allocated max/end, reserved max/end.
    const values = new Float64Array([
      NaN,
      10,
      30,
      5, // allocated max
      NaN,
      10,
      5,
      5, // allocated end
      NaN,
      20,
      40,
      40, // reserved max
      NaN,
      20,
      40,
      40, // reserved end
    ]);
    const [am, ae, rm, re] = memoryColumns({ cells: 4, values }, 0, 400, 0, 400, 2);
    expect([...am]).toEqual([10, 30]);
    expect([...ae]).toEqual([10, 5]);
    expect([...rm]).toEqual([20, 40]);
    expect([...re]).toEqual([20, 40]);
    const [fine] = memoryColumns({ cells: 4, values }, 0, 400, 0, 100, 2);
    expect(Number.isNaN(fine[0]!)).toBe(true);
  });
});
