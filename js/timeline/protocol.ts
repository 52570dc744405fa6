/**
 * Decoding the kernel's binary window responses (encode_window in
 * jupyter_traceview/widgets/timeline.py) into typed-array views per row.
 */
import type { Layout, WindowResponseMeta } from "./messages";

/** Raw events of one row, in start order (views into the response buffer). */
export interface RawRow {
  mode: "raw";
  /** Start, ns relative to the trace start. */
  start: Float64Array;
  dur: Float64Array;
  eid: Float64Array;
  /** Index into `WindowData.names`. */
  name: Uint32Array;
  /** Colour kind code (position in the palette's kinds). */
  kind: Uint8Array;
  /** 1 where the event's name or argument text matches the search (when a pattern was sent). */
  match?: Uint8Array | null;
}

/** One row merged per pixel column of the request. */
export interface BinRow {
  mode: "bins";
  /** Busy fraction 0..1 of each column. */
  frac: Float32Array;
  /** Kind code covering most of each column; NO_KIND when none. */
  kind: Uint8Array;
  /** Events starting in each column. */
  count: Uint32Array;
  /** Search matches starting in each column (when a pattern was sent). */
  match: Uint32Array | null;
  /** Name-palette index of the event at each column's centre (colour by name). */
  color: Uint8Array | null;
}

export type RowData = RawRow | BinRow;

/** A memory lane per pixel column: bytes, NaN before the lane's first record. */
export interface MemoryBins {
  /** Largest allocated bytes in each column (a peak is never lost). */
  allocMax: Float64Array;
  /** Allocated bytes at each column's end. */
  allocEnd: Float64Array;
  resMax: Float64Array;
  resEnd: Float64Array;
}

/** A decoded window: the request's range and width, and the data of each row. */
export interface WindowData {
  seq: number;
  lo: number;
  hi: number;
  width: number;
  rows: Map<number, RowData>;
  summaries: Map<number, BinRow>;
  /** Folded CPU rows by rank (views/timeline/fold.py). */
  folds: Map<number, BinRow>;
  /** The owner answered the folded rows asked for (an owner that does not know them omits `folds`). */
  foldsAnswered: boolean;
  /** Memory lanes by lane id. */
  memory: Map<number, MemoryBins>;
  names: string[];
  nameColors: number[];
  /** Per name: does it match the search pattern sent with the request. */
  nameMatch: boolean[];
  kernelMs: number;
  /** Raw events in the window (all rows). */
  rawEvents: number;
}

export const NO_KIND = 255;

type Typed = Float64Array | Float32Array | Uint32Array | Uint8Array;

const CTORS = {
  f8: Float64Array,
  f4: Float32Array,
  u4: Uint32Array,
  u1: Uint8Array,
} as const;

/** Typed-array views of the sections of `buffer` described by `layout`. */
export function sections(layout: Layout, buffer: ArrayBuffer): Map<string, Typed> {
  const out = new Map<string, Typed>();
  for (const [name, [offset, length, dtype]] of Object.entries(layout)) {
    const ctor = (CTORS as Record<string, (typeof CTORS)[keyof typeof CTORS] | undefined>)[dtype];
    if (ctor === undefined) throw new Error(`unknown section dtype ${dtype} for ${name}`);
    out.set(name, new ctor(buffer, offset, length));
  }
  return out;
}

/**
 * An 8-byte aligned copy of a received buffer: views of a DataView's bytes inside a
 * larger message need not be aligned for Float64Array.
 */
export function aligned(view: DataView | ArrayBuffer): ArrayBuffer {
  if (view instanceof ArrayBuffer) return view;
  const copy = new ArrayBuffer(view.byteLength);
  new Uint8Array(copy).set(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
  return copy;
}

function get<T extends Typed>(s: Map<string, Typed>, name: string, ctor: new (n: number) => T): T {
  const a = s.get(name);
  return (a ?? new ctor(0)) as T;
}

/** Decode a `_window` response. */
export function decodeWindow(meta: WindowResponseMeta, buffer: ArrayBuffer | null): WindowData {
  const s = buffer ? sections(meta.layout, buffer) : new Map<string, Typed>();
  const evStart = get(s, "ev_start", Float64Array);
  const evDur = get(s, "ev_dur", Float64Array);
  const evEid = get(s, "ev_eid", Float64Array);
  const evName = get(s, "ev_name", Uint32Array);
  const evKind = get(s, "ev_kind", Uint8Array);
  const evMatch = s.has("ev_match") ? get(s, "ev_match", Uint8Array) : null;
  const binFrac = get(s, "bin_frac", Float32Array);
  const binKind = get(s, "bin_kind", Uint8Array);
  const binCount = get(s, "bin_count", Uint32Array);
  const binMatch = s.has("bin_match") ? get(s, "bin_match", Uint32Array) : null;
  const binColor = s.has("bin_color") ? get(s, "bin_color", Uint8Array) : null;
  const bins = (offset: number, count: number): BinRow => ({
    mode: "bins",
    frac: binFrac.subarray(offset, offset + count),
    kind: binKind.subarray(offset, offset + count),
    count: binCount.subarray(offset, offset + count),
    match: binMatch ? binMatch.subarray(offset, offset + count) : null,
    color: binColor ? binColor.subarray(offset, offset + count) : null,
  });
  const rows = new Map<number, RowData>();
  let rawEvents = 0;
  for (const r of meta.rows) {
    if (r.mode === "raw") {
      const a = r.offset;
      const b = r.offset + r.count;
      rawEvents += r.count;
      rows.set(r.row, {
        mode: "raw",
        start: evStart.subarray(a, b),
        dur: evDur.subarray(a, b),
        eid: evEid.subarray(a, b),
        name: evName.subarray(a, b),
        kind: evKind.subarray(a, b),
        match: evMatch ? evMatch.subarray(a, b) : null,
      });
    } else {
      rows.set(r.row, bins(r.offset, r.count));
    }
  }
  const summaries = new Map<number, BinRow>();
  for (const sm of meta.summaries) summaries.set(sm.rank, bins(sm.offset, sm.count));
  const folds = new Map<number, BinRow>();
  for (const f of meta.folds ?? []) folds.set(f.rank, bins(f.offset, f.count));
  const memory = new Map<number, MemoryBins>();
  const ctr = (name: string) => get(s, name, Float64Array);
  const [am, ae, rm, re] = [
    ctr("mem_allocated_max"),
    ctr("mem_allocated_end"),
    ctr("mem_reserved_max"),
    ctr("mem_reserved_end"),
  ];
  for (const c of meta.memory ?? []) {
    const a = c.offset;
    const b = c.offset + c.count;
    memory.set(c.memory, {
      allocMax: am.subarray(a, b),
      allocEnd: ae.subarray(a, b),
      resMax: rm.subarray(a, b),
      resEnd: re.subarray(a, b),
    });
  }
  return {
    seq: meta.seq,
    lo: meta.lo,
    hi: meta.hi,
    width: meta.width,
    rows,
    summaries,
    folds,
    foldsAnswered: meta.folds !== undefined,
    memory,
    names: meta.names,
    nameColors: meta.name_colors,
    nameMatch: meta.name_match ?? meta.names.map(() => false),
    kernelMs: meta.kernel_ms,
    rawEvents,
  };
}
