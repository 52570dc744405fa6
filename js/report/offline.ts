/**
 * The timeline's owner inside an HTML report: answers the view's `_window` requests from the
 * multi-level summary embedded in the page (jupyter_traceview/views/timeline/levels.py), so the
 * report's timeline zooms and pans with no kernel, through the widget's own view and drawing code.
 *
 * A window is answered from the coarsest level whose bins are at most as wide as the
 * request's columns (the finest level when the view is zoomed in further): each column's busy
 * fraction and starts are read off the level's prefix sums (exact where columns and bins
 * align, prorated inside a bin otherwise), its kind is the kind of the level's bin covering
 * most of it. Every row comes merged per column. Search (by name), range summaries and memory
 * memory lanes are answered from the embedded details (details.ts) when the page holds them;
 * event details need the events, which the page does not hold: they answer an error.
 */
import type {
  FindRequest,
  Layout,
  SummaryRequest,
  WindowRequest,
  WindowResponseMeta,
} from "../timeline/messages";
import type { Invoke } from "../timeline/state";
import { type MemoryLevel, type MemoryLevelsPayload, type ReportDetails, memoryColumns } from "./details";

/** The memory lanes' embedded levels, decoded. */
export interface OfflineMemory {
  payload: MemoryLevelsPayload;
  levels: MemoryLevel[];
}

/** The embedded payload (`encode_levels` in levels.py). */
export interface LevelsPayload {
  end: number;
  rows: number[];
  ranks: number[];
  frac_scale: number;
  no_kind: number;
  levels: { cells: number; data: string }[];
}

/** One decoded level: per track, `cells` bytes of busy fraction, kind codes, and starts. */
export interface Level {
  cells: number;
  frac: Uint8Array;
  kind: Uint8Array;
  count: Uint32Array;
}

/** Decode the levels' base64 deflated bytes (see `_encode` in levels.py). */
export async function decodeLevels(p: LevelsPayload): Promise<Level[]> {
  const tracks = p.rows.length + p.ranks.length;
  const out: Level[] = [];
  for (const lv of p.levels) {
    const bytes = await inflate(base64Bytes(lv.data));
    out.push(splitLevel(bytes, tracks, lv.cells));
  }
  return out;
}

/** A level's sections from its inflated bytes. */
export function splitLevel(bytes: Uint8Array, tracks: number, cells: number): Level {
  const n = tracks * cells;
  if (bytes.length !== 6 * n) {
    throw new Error(
      `an embedded timeline level of ${tracks} x ${cells} bins has ${bytes.length} bytes, expected ${6 * n}`,
    );
  }
  const counts = new Uint32Array(n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset + 2 * n, 4 * n);
  for (let i = 0; i < n; i++) counts[i] = dv.getUint32(4 * i, true);
  return { cells, frac: bytes.subarray(0, n), kind: bytes.subarray(n, 2 * n), count: counts };
}

export function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export async function inflate(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  // zlib's format, which the Compression Streams API calls "deflate".
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The index of the level to answer a request whose columns are `colNs` wide. */
export function chooseLevel(levels: readonly { cells: number }[], end: number, colNs: number): number {
  // Coarsest level with bins no wider than a column; else the finest.
  for (let i = 0; i < levels.length; i++) {
    if (end / levels[i]!.cells <= colNs) return i;
  }
  return levels.length - 1;
}

/** Prefix sums of a track's busy time (ns) and starts over a level's bins. */
interface Prefix {
  busy: Float64Array;
  starts: Float64Array;
}

/** One track's merged columns: busy fraction, kind, starts. */
export interface Columns {
  frac: Float32Array;
  kind: Uint8Array;
  count: Uint32Array;
}

/** Answers window requests from decoded levels (pure, unit-tested). */
export class LevelWindows {
  private readonly track = new Map<string, number>();
  private readonly prefixes = new Map<string, Prefix>();

  constructor(
    readonly payload: LevelsPayload,
    readonly levels: Level[],
    readonly details: ReportDetails | null = null,
    readonly memory: OfflineMemory | null = null,
  ) {
    payload.rows.forEach((r, i) => this.track.set(`row:${r}`, i));
    payload.ranks.forEach((r, i) => this.track.set(`rank:${r}`, payload.rows.length + i));
  }

  hasRow(row: number): boolean {
    return this.track.has(`row:${row}`);
  }

  private prefix(li: number, t: number): Prefix {
    const key = `${li}:${t}`;
    let p = this.prefixes.get(key);
    if (p) return p;
    const lv = this.levels[li]!;
    const bw = this.payload.end / lv.cells;
    const busy = new Float64Array(lv.cells + 1);
    const starts = new Float64Array(lv.cells + 1);
    const scale = bw / this.payload.frac_scale;
    const base = t * lv.cells;
    for (let k = 0; k < lv.cells; k++) {
      busy[k + 1] = busy[k]! + lv.frac[base + k]! * scale;
      starts[k + 1] = starts[k]! + lv.count[base + k]!;
    }
    p = { busy, starts };
    this.prefixes.set(key, p);
    return p;
  }

  /** The merged columns of track `t` over `[lo, hi)` in `width` columns, from level `li`. */
  columns(li: number, t: number, lo: number, hi: number, width: number): Columns {
    const lv = this.levels[li]!;
    const end = this.payload.end;
    const cells = lv.cells;
    const bw = end / cells;
    const noKind = this.payload.no_kind;
    const p = this.prefix(li, t);
    const base = t * cells;
    /** The prefix `arr` at time `x` (clamped to the trace), interpolated inside a bin. */
    const at = (arr: Float64Array, x: number): number => {
      if (x <= 0) return 0;
      if (x >= end) return arr[cells]!;
      const k = Math.min(cells - 1, Math.floor(x / bw));
      return arr[k]! + (arr[k + 1]! - arr[k]!) * ((x - k * bw) / bw);
    };
    const frac = new Float32Array(width);
    const kind = new Uint8Array(width).fill(noKind);
    const count = new Uint32Array(width);
    const col = (hi - lo) / width;
    let prevBusy = at(p.busy, lo);
    let prevStarts = at(p.starts, lo);
    for (let j = 0; j < width; j++) {
      const b = lo + (j + 1) * col;
      const busy = at(p.busy, b);
      const starts = at(p.starts, b);
      const covered = busy - prevBusy;
      frac[j] = Math.min(1, Math.max(0, covered / col));
      count[j] = Math.max(0, Math.round(starts - prevStarts));
      if (covered > 0) {
        // The kind of the bin covering most of the column.
        const k0 = Math.max(0, Math.floor((b - col) / bw));
        const k1 = Math.min(cells - 1, Math.floor((b - 1e-9) / bw));
        let best = -1;
        let bestK = noKind;
        for (let k = k0; k <= k1; k++) {
          const f = lv.frac[base + k]!;
          if (f > best && lv.kind[base + k]! !== noKind) {
            best = f;
            bestK = lv.kind[base + k]!;
          }
        }
        kind[j] = bestK;
      }
      prevBusy = busy;
      prevStarts = starts;
    }
    return { frac, kind, count };
  }

  /** The `_window` answer: metadata and the one buffer `decodeWindow` reads. */
  window(req: WindowRequest): [WindowResponseMeta, DataView[]] {
    const t0 = performance.now();
    const width = Math.max(1, Math.round(req.width));
    const li = chooseLevel(this.levels, this.payload.end, (req.hi - req.lo) / width);
    const parts: Columns[] = [];
    const rows: WindowResponseMeta["rows"] = [];
    const summaries: WindowResponseMeta["summaries"] = [];
    for (const r of req.rows) {
      const t = this.track.get(`row:${r}`);
      if (t === undefined) continue;
      rows.push({ row: r, mode: "bins", offset: parts.length * width, count: width });
      parts.push(this.columns(li, t, req.lo, req.hi, width));
    }
    for (const r of req.summaries) {
      const t = this.track.get(`rank:${r}`);
      if (t === undefined) continue;
      summaries.push({ rank: r, offset: parts.length * width, count: width });
      parts.push(this.columns(li, t, req.lo, req.hi, width));
    }
    const n = parts.length * width;
    // Search: matches per column from the details (names only), rows then summaries.
    const d = this.details;
    const matches: Uint32Array[] = [];
    if (req.pattern && d) {
      for (const r of rows) matches.push(d.columnMatches([r.row], req.lo, req.hi, width, req.pattern));
      for (const sm of summaries)
        matches.push(d.columnMatches(d.rowsOf(sm.rank), req.lo, req.hi, width, req.pattern));
    }
    // Memory lanes from the memory levels.
    const ctr: [Float64Array, Float64Array, Float64Array, Float64Array][] = [];
    const memory: NonNullable<WindowResponseMeta["memory"]> = [];
    const c = this.memory;
    if (c && req.memory?.length) {
      const cl = chooseLevel(c.levels, this.payload.end, (req.hi - req.lo) / width);
      for (const id of req.memory) {
        const pos = c.payload.lanes.indexOf(id);
        if (pos < 0 || memory.some((x) => x.memory === id)) continue;
        memory.push({ memory: id, offset: ctr.length * width, count: width });
        ctr.push(memoryColumns(c.levels[cl]!, pos, this.payload.end, req.lo, req.hi, width));
      }
    }
    // Sections 8-byte aligned, as _pack in protocol.py lays them out.
    const layout: Layout = {};
    let offset = 0;
    const plan: [string, number, number, string][] = [
      ["bin_frac", n, 4, "f4"],
      ["bin_count", n, 4, "u4"],
      ["bin_kind", n, 1, "u1"],
    ];
    if (matches.length) plan.push(["bin_match", n, 4, "u4"]);
    if (ctr.length) {
      const m = ctr.length * width;
      for (const name of ["mem_allocated_max", "mem_allocated_end", "mem_reserved_max", "mem_reserved_end"])
        plan.push([name, m, 8, "f8"]);
    }
    for (const [name, len, size, dtype] of plan) {
      layout[name] = [offset, len, dtype];
      offset += Math.ceil((len * size) / 8) * 8;
    }
    const buf = new ArrayBuffer(offset);
    const view = <T>(name: string, ctor: new (b: ArrayBuffer, o: number, l: number) => T): T =>
      new ctor(buf, layout[name]![0], layout[name]![1]);
    const frac = view("bin_frac", Float32Array);
    const count = view("bin_count", Uint32Array);
    const kind = view("bin_kind", Uint8Array);
    parts.forEach((p, i) => {
      frac.set(p.frac, i * width);
      count.set(p.count, i * width);
      kind.set(p.kind, i * width);
    });
    if (matches.length) {
      const match = view("bin_match", Uint32Array);
      matches.forEach((m, i) => match.set(m, i * width));
    }
    if (ctr.length) {
      const names = ["mem_allocated_max", "mem_allocated_end", "mem_reserved_max", "mem_reserved_end"];
      names.forEach((name, s) => {
        const arr = view(name, Float64Array);
        ctr.forEach((cols, i) => arr.set(cols[s]!, i * width));
      });
    }
    const meta: WindowResponseMeta = {
      seq: req.seq,
      lo: req.lo,
      hi: req.hi,
      width,
      rows,
      summaries,
      ...(memory.length ? { memory } : {}),
      names: [],
      name_colors: [],
      layout,
      kernel_ms: performance.now() - t0,
    };
    return [meta, [new DataView(buf)]];
  }
}

/** What a command of the offline owner answers when it needs the events. */
export const OFFLINE_ERROR =
  "not available in the report (it holds a summary of the timeline, not its events): open the trace in tv.Timeline";

/** An `Invoke` answering the timeline view's commands from `windows` (`rowRank`: row id -> rank). */
export function offlineInvoke(windows: LevelWindows, rowRank: Map<number, number> = new Map()): Invoke {
  return <T>(name: string, msg?: unknown): Promise<[T, DataView[]]> => {
    const d = windows.details;
    if (name === "_window") {
      const [meta, buffers] = windows.window(msg as WindowRequest);
      return Promise.resolve([meta as T, buffers]);
    }
    if (name === "_find") {
      const req = msg as FindRequest;
      if (!d) return Promise.resolve([{ found: false, error: OFFLINE_ERROR } as T, []]);
      return Promise.resolve([d.find(req.pattern, req.t, req.direction, req.rows, rowRank) as T, []]);
    }
    if (name === "_summary" && d) {
      const req = msg as SummaryRequest;
      return Promise.resolve([d.summary(req.lo, req.hi, req.ranks) as T, []]);
    }
    return Promise.resolve([{ error: OFFLINE_ERROR } as T, []]);
  };
}
