import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  type Level,
  type LevelsPayload,
  LevelWindows,
  chooseLevel,
  decodeLevels,
  offlineInvoke,
  splitLevel,
} from "../report/offline";
import type { FindResult, WindowRequest, WindowResponseMeta } from "../timeline/messages";
import { aligned, decodeWindow } from "../timeline/protocol";

const NO_KIND = 255;

/** Levels of one row (track 0) and one rank's summary (track 1) over [0, 800): 8 and 32 bins. */
function fixture(): { payload: LevelsPayload; levels: Level[] } {
  // Fine level (32 bins of 25 ns): the row busy in bins 4..7 fully (kind 1) and bin 8 at 40% (kind 2).
  const fineFrac = new Uint8Array(64);
  const fineKind = new Uint8Array(64).fill(NO_KIND);
  const fineCount = new Uint32Array(64);
  for (let k = 4; k < 8; k++) {
    fineFrac[k] = 255;
    fineKind[k] = 1;
  }
  fineFrac[8] = 102;
  fineKind[8] = 2;
  fineCount[4] = 3;
  fineCount[8] = 1;
  // The rank's summary: busy all along at 100%, kind 0, one start per bin.
  for (let k = 32; k < 64; k++) {
    fineFrac[k] = 255;
    fineKind[k] = 0;
    fineCount[k] = 1;
  }
  // Coarse level (8 bins of 100 ns), the sums of the fine one.
  const coarseFrac = new Uint8Array(16);
  const coarseKind = new Uint8Array(16).fill(NO_KIND);
  const coarseCount = new Uint32Array(16);
  for (let t = 0; t < 2; t++) {
    for (let c = 0; c < 8; c++) {
      let f = 0;
      let n = 0;
      let best = -1;
      for (let k = 4 * c; k < 4 * c + 4; k++) {
        f += fineFrac[t * 32 + k]!;
        n += fineCount[t * 32 + k]!;
        if (fineKind[t * 32 + k]! !== NO_KIND && fineFrac[t * 32 + k]! > best) {
          best = fineFrac[t * 32 + k]!;
          coarseKind[t * 8 + c] = fineKind[t * 32 + k]!;
        }
      }
      coarseFrac[t * 8 + c] = Math.round(f / 4);
      coarseCount[t * 8 + c] = n;
    }
  }
  const pack = (frac: Uint8Array, kind: Uint8Array, count: Uint32Array) => {
    const out = new Uint8Array(frac.length * 6);
    out.set(frac, 0);
    out.set(kind, frac.length);
    const dv = new DataView(out.buffer, 2 * frac.length);
    count.forEach((v, i) => dv.setUint32(4 * i, v, true));
    return out;
  };
  const coarse = pack(coarseFrac, coarseKind, coarseCount);
  const fine = pack(fineFrac, fineKind, fineCount);
  const payload: LevelsPayload = {
    end: 800,
    rows: [5],
    ranks: [0],
    frac_scale: 255,
    no_kind: NO_KIND,
    levels: [
      { cells: 8, data: Buffer.from(deflateSync(coarse)).toString("base64") },
      { cells: 32, data: Buffer.from(deflateSync(fine)).toString("base64") },
    ],
  };
  return { payload, levels: [splitLevel(coarse, 2, 8), splitLevel(fine, 2, 32)] };
}

const request = (
  lo: number,
  hi: number,
  width: number,
  rows = [5],
  summaries: number[] = [],
): WindowRequest => ({
  seq: 1,
  lo,
  hi,
  width,
  rows,
  summaries,
  pattern: "",
  name_colors: false,
});

describe("offline levels", () => {
  it("decodes the embedded base64 deflated levels", async () => {
    const { payload, levels } = fixture();
    const got = await decodeLevels(payload);
    expect(got.map((l) => l.cells)).toEqual([8, 32]);
    expect(Array.from(got[1]!.frac)).toEqual(Array.from(levels[1]!.frac));
    expect(Array.from(got[1]!.count)).toEqual(Array.from(levels[1]!.count));
    expect(() => splitLevel(new Uint8Array(10), 2, 8)).toThrow(/expected 96/);
  });

  it("answers from the coarsest level at least as fine as the columns", () => {
    const cells = [{ cells: 8 }, { cells: 32 }];
    expect(chooseLevel(cells, 800, 100)).toBe(0); // 100 ns columns: 100 ns bins do
    expect(chooseLevel(cells, 800, 50)).toBe(1); // 50 ns columns: 25 ns bins
    expect(chooseLevel(cells, 800, 1)).toBe(1); // finer than all: the finest
    expect(chooseLevel(cells, 800, 1000)).toBe(0);
  });

  it("columns aligned with bins read the bins; their busy time and starts add up", () => {
    const { payload, levels } = fixture();
    const w = new LevelWindows(payload, levels);
    // [100, 300) in 8 columns of 25 ns: the fine level, one bin per column.
    const c = w.columns(1, 0, 100, 300, 8);
    expect(Array.from(c.frac).map((f) => Math.round(f * 255))).toEqual([255, 255, 255, 255, 102, 0, 0, 0]);
    expect(Array.from(c.kind)).toEqual([1, 1, 1, 1, 2, NO_KIND, NO_KIND, NO_KIND]);
    expect(Array.from(c.count)).toEqual([3, 0, 0, 0, 1, 0, 0, 0]);
    // Zoomed out: [0, 800) in 2 columns of the coarse level; busy = (4 x 25 + 0.4 x 25) ns of 400 ns.
    const z = w.columns(0, 0, 0, 800, 2);
    expect(z.frac[0]).toBeCloseTo((100 + 10) / 400, 2);
    expect(z.frac[1]).toBe(0);
    expect(Array.from(z.count)).toEqual([4, 0]);
    expect(z.kind[0]).toBe(1); // the kind covering most of the column
  });

  it("answers _window in the binary form decodeWindow reads, rows and summaries", async () => {
    const { payload, levels } = fixture();
    const invoke = offlineInvoke(new LevelWindows(payload, levels));
    const [meta, buffers] = await invoke<WindowResponseMeta>("_window", request(100, 300, 8, [5, 99], [0]));
    const d = decodeWindow(meta, aligned(buffers[0]!));
    expect([...d.rows.keys()]).toEqual([5]); // row 99 is not embedded: left out
    const row = d.rows.get(5)!;
    expect(row.mode).toBe("bins");
    if (row.mode !== "bins") return;
    expect(Array.from(row.kind)).toEqual([1, 1, 1, 1, 2, NO_KIND, NO_KIND, NO_KIND]);
    expect(Array.from(d.summaries.get(0)!.frac).every((f) => f === 1)).toBe(true);
    expect(d.lo).toBe(100);
    expect(d.hi).toBe(300);
    expect(d.width).toBe(8);
    // What needs the events answers an error the view shows as "not found" / no details.
    const [found] = await invoke<FindResult>("_find", { pattern: "x" });
    expect(found.found).toBe(false);
    const [details] = await invoke<{ error?: string }>("_details", { rank: 0, eid: 1 });
    expect(details.error).toMatch(/not available in the report/);
  });
});
