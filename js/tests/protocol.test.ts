import { describe, expect, it } from "vitest";
import palette from "../../jupyter_traceview/views/colors.json";
import { Colors, parseColor, textOn, withAlpha } from "../timeline/colors";
import type { Palette, WindowResponseMeta } from "../timeline/messages";
import { aligned, decodeWindow } from "../timeline/protocol";

/** Pack sections the way jupyter_traceview/widgets/timeline.py::_pack does (8-byte aligned). */
function pack(sections: Record<string, Float64Array | Float32Array | Uint32Array | Uint8Array>) {
  const dtype = (a: ArrayBufferView) =>
    a instanceof Float64Array
      ? "f8"
      : a instanceof Float32Array
        ? "f4"
        : a instanceof Uint32Array
          ? "u4"
          : "u1";
  const layout: Record<string, [number, number, string]> = {};
  let off = 0;
  const parts: [number, Uint8Array][] = [];
  for (const [name, arr] of Object.entries(sections)) {
    off += (8 - (off % 8)) % 8;
    layout[name] = [off, arr.length, dtype(arr)];
    parts.push([off, new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength)]);
    off += arr.byteLength;
  }
  const buf = new Uint8Array(off);
  for (const [o, p] of parts) buf.set(p, o);
  return { layout, buf };
}

describe("decodeWindow", () => {
  it("splits the sections into per-row views", () => {
    const { layout, buf } = pack({
      ev_start: Float64Array.from([0, 10, 20]),
      ev_dur: Float64Array.from([5, 5, 5]),
      ev_eid: Float64Array.from([7, 8, 9]),
      ev_name: Uint32Array.from([0, 1, 0]),
      ev_kind: Uint8Array.from([0, 1, 0]),
      bin_frac: Float32Array.from([0.5, 1, 0, 0.25]),
      bin_kind: Uint8Array.from([0, 0, 255, 2]),
      bin_count: Uint32Array.from([1, 2, 0, 3]),
    });
    const meta: WindowResponseMeta = {
      seq: 4,
      lo: 0,
      hi: 40,
      width: 2,
      rows: [
        { row: 3, mode: "raw", offset: 0, count: 2 },
        { row: 5, mode: "raw", offset: 2, count: 1 },
        { row: 6, mode: "bins", offset: 0, count: 2 },
      ],
      summaries: [{ rank: 1, offset: 2, count: 2 }],
      names: ["a", "b"],
      name_colors: [3, 4],
      name_match: [true, false],
      layout,
      kernel_ms: 1.5,
    };
    // Received buffers are DataViews into larger messages, maybe unaligned.
    const big = new Uint8Array(buf.length + 3);
    big.set(buf, 3);
    const w = decodeWindow(meta, aligned(new DataView(big.buffer, 3, buf.length)));
    const r3 = w.rows.get(3)!;
    expect(r3.mode).toBe("raw");
    if (r3.mode === "raw") {
      expect(Array.from(r3.start)).toEqual([0, 10]);
      expect(Array.from(r3.eid)).toEqual([7, 8]);
    }
    const r5 = w.rows.get(5)!;
    if (r5.mode === "raw") expect(Array.from(r5.eid)).toEqual([9]);
    const r6 = w.rows.get(6)!;
    expect(r6.mode).toBe("bins");
    if (r6.mode === "bins") {
      expect(Array.from(r6.frac)).toEqual([0.5, 1]);
      expect(r6.match).toBeNull();
    }
    expect(Array.from(w.summaries.get(1)!.kind)).toEqual([255, 2]);
    expect(w.rawEvents).toBe(3);
    expect(w.nameMatch).toEqual([true, false]);
  });

  it("refuses unknown dtypes", () => {
    const meta = {
      seq: 0,
      lo: 0,
      hi: 1,
      width: 1,
      rows: [],
      summaries: [],
      names: [],
      name_colors: [],
      layout: { x: [0, 1, "i8"] },
      kernel_ms: 0,
    } as unknown as WindowResponseMeta;
    expect(() => decodeWindow(meta, new ArrayBuffer(8))).toThrow(/dtype/);
  });
});

describe("colors", () => {
  const p = palette as unknown as Palette;
  it("reads the shared palette (jupyter_traceview/views/colors.json)", () => {
    const light = new Colors(p, false);
    const dark = new Colors(p, true);
    expect(light.kind(light.code("compute"))).toBe(p.kinds[0]!.light);
    expect(dark.kind(dark.code("communication"))).toBe(p.kinds[1]!.dark);
    expect(light.code("nope")).toBe(-1);
    expect(light.name(p.names.light.length + 2)).toBe(p.names.light[2]);
    expect(light.label("cpu_op")).toBe("CPU op");
  });
  it("parses colours and picks readable text", () => {
    expect(parseColor("#ff0000")).toEqual([255, 0, 0]);
    expect(parseColor("#0f0")).toEqual([0, 255, 0]);
    expect(parseColor("rgb(1, 2, 3)")).toEqual([1, 2, 3]);
    expect(parseColor("rgba(0, 0, 0, 0)")).toBeNull();
    expect(textOn("#ffffff")).toBe("#111111");
    expect(textOn("#111111")).toBe("#ffffff");
    expect(withAlpha("#000000", 0.5)).toBe("rgba(0, 0, 0, 0.5)");
  });
});
