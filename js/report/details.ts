/**
 * The report timeline's answers that need more than the levels: search (names), the names of
 * a hovered column, measured-range summaries and memory lanes, from what
 * jupyter_traceview/views/timeline/details.py and memory.py::memory_levels embed. Pure
 * (given decoded arrays), unit-tested in js/tests/report-details.test.ts.
 *
 * The details grid splits `[0, end)` into `cells` bins (edges `floor(k * end / cells)`, as
 * the kernel's). Range figures are sums over the bins a range touches, prorated by the overlap
 * in its end bins: exact when the range's ends are bin edges.
 */
import type { FindResult, KindBusy, RangeSummary, TopName } from "../timeline/messages";

/** The embedded details (`timeline_details` in details.py). */
export interface DetailsPayload {
  cells: number;
  end: number;
  kinds: string[];
  names: string[];
  short: string[];
  ranks: RankDetailsPayload[];
  /** (row, cell, name, events starting) columns as uint32, sorted by row then cell. */
  rows: string;
  row_entries: number;
}

export interface RankDetailsPayload {
  rank: number;
  source: string;
  kinds: number[];
  busy: string;
  starts: string;
  across: string;
  all: string;
  names: string;
  name_ns: string;
}

/** One rank's decoded details: per kind (index into `kinds`) and cell. */
export interface RankDetails {
  rank: number;
  source: string;
  kinds: number[];
  busy: Float64Array;
  starts: Uint32Array;
  across: Uint32Array;
  all: Float64Array;
  nameCell: Uint32Array;
  nameCode: Uint32Array;
  nameNs: Float64Array;
}

/** A row's entries: events of a name starting in a cell. */
interface RowEntries {
  cell: Uint32Array;
  name: Uint32Array;
  count: Uint32Array;
}

/** What the details read of a row of the timeline (`RowMeta`'s fields). */
export interface SummaryRowMeta {
  id: number;
  rank: number;
  type: string;
  depth: number;
}

/** The kernel's pattern semantics (views/timeline/pattern.py): a case-insensitive regex, else literal text. */
export function compilePattern(pattern: string): RegExp {
  try {
    return new RegExp(pattern, "i");
  } catch {
    return new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
  }
}

export class ReportDetails {
  private readonly rowEntries = new Map<number, RowEntries>();
  private readonly rankRows = new Map<number, number[]>();
  private readonly byRank = new Map<number, RankDetails>();
  private readonly masks = new Map<string, Uint8Array>();

  constructor(
    readonly cells: number,
    readonly end: number,
    readonly kindKeys: string[],
    readonly names: string[],
    readonly short: string[],
    ranks: RankDetails[],
    /** (row, cell, name, count) columns, sorted by row then cell. */
    table: Uint32Array,
    entries: number,
    /** The timeline's rows (`_rows`): their rank, and which a rank's summary row summarises. */
    rowMeta: readonly SummaryRowMeta[],
  ) {
    for (const r of ranks) this.byRank.set(r.rank, r);
    const row = table.subarray(0, entries);
    let a = 0;
    while (a < entries) {
      let b = a;
      while (b < entries && row[b] === row[a]) b++;
      const id = row[a]!;
      this.rowEntries.set(id, {
        cell: table.subarray(entries + a, entries + b),
        name: table.subarray(2 * entries + a, 2 * entries + b),
        count: table.subarray(3 * entries + a, 3 * entries + b),
      });
      a = b;
    }
    // A rank's summary row summarises its GPU work, or its top-level CPU events on a CPU-only rank.
    const gpuRanks = new Set(rowMeta.filter((r) => r.type === "gpu").map((r) => r.rank));
    for (const r of rowMeta) {
      if (gpuRanks.has(r.rank) ? r.type !== "gpu" : r.depth !== 0) continue;
      const list = this.rankRows.get(r.rank) ?? [];
      list.push(r.id);
      this.rankRows.set(r.rank, list);
    }
  }

  /** Start of cell `k`, ns (the kernel's integer edges). */
  edge(k: number): number {
    return Math.floor((k * this.end) / this.cells);
  }

  /** Per embedded name: does it match `pattern` (cached per pattern). */
  mask(pattern: string): Uint8Array {
    let m = this.masks.get(pattern);
    if (!m) {
      const rx = compilePattern(pattern);
      m = new Uint8Array(this.names.length);
      this.names.forEach((n, i) => (m![i] = rx.test(n) ? 1 : 0));
      if (this.masks.size > 8) this.masks.clear();
      this.masks.set(pattern, m);
    }
    return m;
  }

  /** Events whose name matches `pattern`, in every row (the toolbar's count). */
  matchCount(pattern: string): number {
    if (!pattern) return 0;
    const m = this.mask(pattern);
    let n = 0;
    for (const e of this.rowEntries.values())
      for (let i = 0; i < e.name.length; i++) if (m[e.name[i]!]) n += e.count[i]!;
    return n;
  }

  /**
   * Matching events starting in each of `width` columns over `[lo, hi)` in `rows` (summed):
   * a cell's matches count in every column it overlaps (zoomed in past the grid, the columns
   * of a cell with a match all read as matching).
   */
  columnMatches(
    rows: readonly number[],
    lo: number,
    hi: number,
    width: number,
    pattern: string,
  ): Uint32Array {
    const out = new Uint32Array(width);
    const m = this.mask(pattern);
    const col = (hi - lo) / width;
    const c0 = Math.max(0, Math.floor((lo / this.end) * this.cells) - 1);
    const c1 = Math.min(this.cells, Math.ceil((hi / this.end) * this.cells) + 1);
    for (const r of rows) {
      const e = this.rowEntries.get(r);
      if (!e) continue;
      for (let i = lowerBound(e.cell, c0); i < e.cell.length && e.cell[i]! < c1; i++) {
        if (!m[e.name[i]!]) continue;
        const c = e.cell[i]!;
        const j0 = Math.max(0, Math.floor((this.edge(c) - lo) / col));
        const j1 = Math.min(width - 1, Math.ceil((this.edge(c + 1) - lo) / col) - 1);
        for (let j = j0; j <= j1; j++) out[j] = out[j]! + e.count[i]!;
      }
    }
    return out;
  }

  /** The rows a rank's summary row summarises (GPU streams; top-level CPU rows on a CPU-only rank). */
  rowsOf(rank: number): number[] {
    return this.rankRows.get(rank) ?? [];
  }

  /** Names of the events starting in `[a, b)` of `rows`, most events first (at most `top`). */
  namesIn(rows: readonly number[], a: number, b: number, top = 4): [string, number][] {
    const c0 = Math.max(0, Math.floor((a / this.end) * this.cells));
    const c1 = Math.min(this.cells, Math.max(c0 + 1, Math.ceil((b / this.end) * this.cells)));
    const counts = new Map<number, number>();
    for (const r of rows) {
      const e = this.rowEntries.get(r);
      if (!e) continue;
      for (let i = lowerBound(e.cell, c0); i < e.cell.length && e.cell[i]! < c1; i++)
        counts.set(e.name[i]!, (counts.get(e.name[i]!) ?? 0) + e.count[i]!);
    }
    return [...counts.entries()]
      .sort((x, y) => y[1] - x[1] || x[0] - y[0])
      .slice(0, top)
      .map(([n, c]) => [this.short[n] ?? this.names[n] ?? "", c]);
  }

  /** The next (direction 1) or previous (-1) cell after/before `t` holding a match in `rows`. */
  find(
    pattern: string,
    t: number,
    direction: number,
    rows: readonly number[],
    rowRank: Map<number, number>,
  ): FindResult {
    const m = this.mask(pattern);
    let best: { cell: number; row: number; name: number } | null = null;
    for (const r of rows) {
      const e = this.rowEntries.get(r);
      if (!e) continue;
      for (let i = 0; i < e.cell.length; i++) {
        if (!m[e.name[i]!]) continue;
        const c = e.cell[i]!;
        const start = this.edge(c);
        const ok = direction > 0 ? start > t : start < t;
        if (!ok) continue;
        if (!best || (direction > 0 ? c < best.cell : c > best.cell) || (c === best.cell && r < best.row))
          best = { cell: c, row: r, name: e.name[i]! };
      }
    }
    if (!best) return { found: false };
    return {
      found: true,
      rank: rowRank.get(best.row),
      row: best.row,
      eid: -1,
      start: this.edge(best.cell),
      end: this.edge(best.cell + 1),
      name: this.names[best.name],
    };
  }

  /** The measured range's summary (the kernel's `range_summary`, to the grid: see the module doc). */
  summary(lo: number, hi: number, ranks: readonly number[], top = 5): RangeSummary {
    const span = (hi - lo) * Math.max(ranks.length, 1);
    const c0 = Math.max(0, Math.min(this.cells - 1, Math.floor((lo / this.end) * this.cells)));
    const c1 = Math.max(c0, Math.min(this.cells - 1, Math.ceil((hi / this.end) * this.cells) - 1));
    // The cell edges are the kernel's integer edges: adjust the first and last cell to them.
    let first = c0;
    while (first > 0 && this.edge(first) > lo) first--;
    while (first + 1 < this.cells && this.edge(first + 1) <= lo) first++;
    let last = Math.max(first, c1);
    while (last + 1 < this.cells && this.edge(last + 1) < hi) last++;
    while (last > first && this.edge(last) >= hi) last--;
    const frac = (c: number) => {
      const a = this.edge(c);
      const b = this.edge(c + 1);
      if (b <= a) return 0;
      return Math.max(0, Math.min(hi, b) - Math.max(lo, a)) / (b - a);
    };
    const busy = new Map<number, number>();
    const events = new Map<number, number>();
    const nameTime = new Map<number, number>();
    const sources = new Set<string>();
    let all = 0;
    for (const rank of ranks) {
      const d = this.byRank.get(rank);
      if (!d) continue;
      sources.add(d.source);
      const cells = this.cells;
      for (let c = first; c <= last; c++) all += d.all[c]! * frac(c);
      d.kinds.forEach((code, k) => {
        let b = 0;
        let n = d.across[k * cells + first]!;
        for (let c = first; c <= last; c++) {
          b += d.busy[k * cells + c]! * frac(c);
          n += d.starts[k * cells + c]!;
        }
        busy.set(code, (busy.get(code) ?? 0) + b);
        events.set(code, (events.get(code) ?? 0) + n);
      });
      for (let i = lowerBound(d.nameCell, first); i < d.nameCell.length && d.nameCell[i]! <= last; i++) {
        const t = d.nameNs[i]! * frac(d.nameCell[i]!);
        if (t > 0) nameTime.set(d.nameCode[i]!, (nameTime.get(d.nameCode[i]!) ?? 0) + t);
      }
    }
    const kinds: KindBusy[] = [...new Set([...busy.keys(), ...events.keys()])]
      .sort((a, b) => a - b)
      .map((code) => {
        const b = Math.round(busy.get(code) ?? 0);
        return {
          kind: this.kindKeys[code] ?? String(code),
          busy_ns: b,
          pct: (100 * b) / span,
          events: events.get(code) ?? 0,
        };
      });
    const best: TopName[] = [...nameTime.entries()]
      .sort((x, y) => y[1] - x[1] || x[0] - y[0])
      .slice(0, top)
      .map(([n, t]) => ({ name: this.names[n] ?? "", short: this.short[n] ?? "", time_ns: Math.round(t) }));
    const allBusy = Math.round(all);
    const allEvents = kinds.reduce((s, k) => s + k.events, 0);
    return {
      lo,
      hi,
      ranks: [...ranks],
      source:
        sources.size === 1 && sources.has("gpu")
          ? "gpu"
          : sources.size === 1 && sources.has("cpu")
            ? "cpu"
            : "mixed",
      all: { busy_ns: allBusy, pct: (100 * allBusy) / span, events: allEvents },
      kinds,
      top: best,
    };
  }
}

/** First index of sorted `a` with a value >= `x`. */
function lowerBound(a: Uint32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// ------------------------------------------------------------------ memory lanes

/** The embedded memory levels (`memory_levels` in memory.py). */
export interface MemoryLevelsPayload {
  lanes: number[];
  series: string[];
  levels: { cells: number; data: string }[];
}

/** One decoded memory level: per lane, 4 series (allocated max/end, reserved max/end) of `cells`. */
export interface MemoryLevel {
  cells: number;
  values: Float64Array;
}

/**
 * A lane's 4 series over `width` columns of `[lo, hi)` from a level of `cells` bins over
 * `[0, end)`: a column's max is the largest max of the bins it overlaps, its end value the end
 * value of the bin holding its last instant (NaN where the lane has no value yet).
 */
export function memoryColumns(
  level: MemoryLevel,
  lanePos: number,
  end: number,
  lo: number,
  hi: number,
  width: number,
): [Float64Array, Float64Array, Float64Array, Float64Array] {
  const cells = level.cells;
  const base = lanePos * 4 * cells;
  const out = [0, 1, 2, 3].map(() => new Float64Array(width).fill(NaN)) as [
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
  ];
  const col = (hi - lo) / width;
  const cellOf = (t: number) => Math.min(cells - 1, Math.max(0, Math.floor((t / end) * cells)));
  for (let j = 0; j < width; j++) {
    const a = lo + j * col;
    const b = a + col;
    if (b <= 0 || a >= end) continue;
    const k0 = cellOf(Math.max(a, 0));
    const k1 = cellOf(Math.min(b, end) - 1e-6);
    for (const s of [0, 2]) {
      let mx = NaN;
      for (let k = k0; k <= k1; k++) {
        const v = level.values[base + s * cells + k]!;
        if (!Number.isNaN(v) && !(v <= mx)) mx = v;
      }
      out[s]![j] = mx;
      out[s + 1]![j] = level.values[base + (s + 1) * cells + k1]!;
    }
  }
  return out;
}
