/**
 * Vertical layout: a header per rank (its summary when collapsed), then a row per GPU
 * stream and nesting depth, then (optionally) the CPU threads' rows, then the rank's memory
 * counter lanes (pure, unit-tested).
 */
import type { CounterMeta, LaneMeta, RowMeta } from "./model";

export interface LayoutOptions {
  headerHeight: number;
  gpuRowHeight: number;
  cpuRowHeight: number;
  /** Space after each lane. */
  laneGap: number;
  /** Height of a memory counter lane (default COUNTER_HEIGHT). */
  counterHeight?: number;
}

/** Default height of a memory counter lane, px. */
export const COUNTER_HEIGHT = 36;

export const DEFAULT_LAYOUT: LayoutOptions = {
  headerHeight: 20,
  gpuRowHeight: 18,
  cpuRowHeight: 15,
  laneGap: 3,
};

export interface Slot {
  /** "fold": a rank's folded CPU threads, one summary row (views/timeline/fold.py). */
  kind: "header" | "row" | "counter" | "fold";
  rank: number;
  /** Row id (rows), counter id (counters), -1 for headers. */
  row: number;
  /** Lane id (rows), -1 for headers. */
  lane: number;
  depth: number;
  y: number;
  h: number;
  /** Text for the label gutter: the rank, or the lane's name on its first row. */
  label: string;
  collapsed: boolean;
  /** The row of a rank's folded CPU threads (js/timeline/ranks.ts unfolds it from its label). */
  folded?: boolean;
  /** A folded row: the threads' top rows, drawn over each other where the owner sends no summary. */
  foldRows?: number[];
}

export interface Layout {
  slots: Slot[];
  height: number;
  /** Slot index of each visible row id. */
  rowSlot: Map<number, number>;
  /** Slot index of each rank's header. */
  headerSlot: Map<number, number>;
  /** Slot index of each visible counter lane (by counter id). */
  counterSlot: Map<number, number>;
}

export function computeLayout(
  rows: readonly RowMeta[],
  lanes: readonly LaneMeta[],
  ranks: readonly number[],
  collapsed: ReadonlySet<number>,
  showCpu: boolean,
  opts: LayoutOptions = DEFAULT_LAYOUT,
  counters: readonly CounterMeta[] = [],
  /** Ranks whose CPU threads are folded into one summary row (a "fold" slot). */
  cpuCollapsed: ReadonlySet<number> = new Set(),
): Layout {
  const countersByRank = new Map<number, CounterMeta[]>();
  for (const c of counters) countersByRank.set(c.rank, [...(countersByRank.get(c.rank) ?? []), c]);
  const counterSlot = new Map<number, number>();
  const lanesByRank = new Map<number, LaneMeta[]>();
  for (const lane of lanes) {
    const list = lanesByRank.get(lane.rank) ?? [];
    list.push(lane);
    lanesByRank.set(lane.rank, list);
  }
  const rowById = new Map<number, RowMeta>();
  for (const r of rows) rowById.set(r.id, r);
  const slots: Slot[] = [];
  const rowSlot = new Map<number, number>();
  const headerSlot = new Map<number, number>();
  let y = 0;
  for (const rank of ranks) {
    const isCollapsed = collapsed.has(rank);
    headerSlot.set(rank, slots.length);
    slots.push({
      kind: "header",
      rank,
      row: -1,
      lane: -1,
      depth: 0,
      y,
      h: opts.headerHeight,
      label: `rank ${rank}`,
      collapsed: isCollapsed,
    });
    y += opts.headerHeight;
    if (isCollapsed) continue;
    const rankLanes = lanesByRank.get(rank) ?? [];
    const ordered = [
      ...rankLanes.filter((l) => l.type === "gpu"),
      ...rankLanes.filter((l) => l.type === "cpu"),
    ];
    const folded = showCpu && cpuCollapsed.has(rank);
    for (const lane of ordered) {
      if (lane.type === "cpu" && (!showCpu || folded)) continue;
      const h = lane.type === "gpu" ? opts.gpuRowHeight : opts.cpuRowHeight;
      lane.rows.forEach((rid, i) => {
        const meta = rowById.get(rid);
        rowSlot.set(rid, slots.length);
        slots.push({
          kind: "row",
          rank,
          row: rid,
          lane: lane.id,
          depth: meta ? meta.depth : i,
          y,
          h,
          label: i === 0 ? lane.label : "",
          collapsed: false,
        });
        y += h;
      });
      y += opts.laneGap;
    }
    if (folded) y = foldCpu(rank, ordered, rowById, slots, y, opts);
    for (const c of countersByRank.get(rank) ?? []) {
      const h = opts.counterHeight ?? COUNTER_HEIGHT;
      counterSlot.set(c.id, slots.length);
      slots.push({
        kind: "counter",
        rank,
        row: c.id,
        lane: -1,
        depth: 0,
        y,
        h,
        label: c.label,
        collapsed: false,
      });
      y += h + opts.laneGap;
    }
  }
  return { slots, height: y, rowSlot, headerSlot, counterSlot };
}

/** One row for a rank's CPU threads (their summary, kernel side); returns the next y. */
function foldCpu(
  rank: number,
  lanes: readonly LaneMeta[],
  rowById: ReadonlyMap<number, RowMeta>,
  slots: Slot[],
  y: number,
  opts: LayoutOptions,
): number {
  const cpu = lanes.filter((l) => l.type === "cpu");
  const tops = cpu
    .map((l) => l.rows.find((rid) => (rowById.get(rid)?.depth ?? 0) === 0) ?? l.rows[0])
    .filter((r): r is number => r !== undefined);
  if (!tops.length) return y;
  const h = opts.cpuRowHeight;
  slots.push({
    kind: "fold",
    rank,
    row: -1,
    lane: -1,
    depth: 0,
    y,
    h,
    label: `▸ CPU: ${cpu.length} thread${cpu.length === 1 ? "" : "s"}`,
    collapsed: false,
    folded: true,
    foldRows: tops,
  });
  return y + h + opts.laneGap;
}

/** Index of the slot at height `y` (layout coordinates), or -1 (gaps and outside). */
export function slotAt(layout: Layout, y: number): number {
  const s = layout.slots;
  let lo = 0;
  let hi = s.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const slot = s[mid]!;
    if (y < slot.y) hi = mid - 1;
    else if (y >= slot.y + slot.h) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/** Slots (indices `[first, last)`) intersecting the vertical band `[top, top + height)`. */
export function visibleSlots(layout: Layout, top: number, height: number): [number, number] {
  const s = layout.slots;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const slot = s[mid]!;
    if (slot.y + slot.h <= top) lo = mid + 1;
    else hi = mid;
  }
  let end = lo;
  while (end < s.length && s[end]!.y < top + height) end++;
  return [lo, end];
}
