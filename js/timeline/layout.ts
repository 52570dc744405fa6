/**
 * Vertical layout: each rank's slots, top to bottom, as the lane kinds (lanes/index.ts, in
 * the table's order) place them: a header per rank (its summary when collapsed), a row per
 * GPU stream and nesting depth, then (optionally) the CPU threads' rows or their folded row,
 * then the rank's memory lanes (pure, unit-tested).
 */
import { LANE_KINDS, type LaneKindName } from "./lanes";
import type { LaneData, LayoutBuilder, NewSlot } from "./lanes/kind";
import type { MemoryMeta, LaneMeta, RowMeta } from "./messages";

export interface LayoutOptions {
  headerHeight: number;
  gpuRowHeight: number;
  cpuRowHeight: number;
  /** Space after each lane. */
  laneGap: number;
  /** Height of a memory lane (default MEMORY_HEIGHT, lanes/memory.ts). */
  memoryHeight?: number;
}

export const DEFAULT_LAYOUT: LayoutOptions = {
  headerHeight: 20,
  gpuRowHeight: 18,
  cpuRowHeight: 15,
  laneGap: 3,
};

export interface Slot {
  /** Which lane kind draws it (lanes/index.ts). */
  kind: LaneKindName;
  rank: number;
  /** Row id (rows), memory lane id (memory), -1 otherwise. */
  row: number;
  /** Lane id (rows), -1 otherwise. */
  lane: number;
  depth: number;
  y: number;
  h: number;
  /** Text for the label gutter: the rank, or the lane's name on its first row. */
  label: string;
  collapsed: boolean;
  /** The row of a rank's folded CPU threads (lanes/fold.ts: a click unfolds them). */
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
  /** Slot index of each visible memory lane (by lane id). */
  memorySlot: Map<number, number>;
}

function groupBy<T>(items: readonly T[], key: (t: T) => number): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const it of items) {
    const list = out.get(key(it));
    if (list) list.push(it);
    else out.set(key(it), [it]);
  }
  return out;
}

export function computeLayout(
  rows: readonly RowMeta[],
  lanes: readonly LaneMeta[],
  ranks: readonly number[],
  collapsed: ReadonlySet<number>,
  showCpu: boolean,
  opts: LayoutOptions = DEFAULT_LAYOUT,
  memory: readonly MemoryMeta[] = [],
  /** Ranks whose CPU threads are folded into one summary row (a "fold" slot). */
  cpuCollapsed: ReadonlySet<number> = new Set(),
): Layout {
  const lanesByRank = groupBy(lanes, (l) => l.rank);
  for (const [rank, list] of lanesByRank)
    lanesByRank.set(rank, [...list.filter((l) => l.type === "gpu"), ...list.filter((l) => l.type === "cpu")]);
  const data: LaneData = {
    opts,
    rowById: new Map(rows.map((r) => [r.id, r])),
    lanesByRank,
    memoryByRank: groupBy(memory, (c) => c.rank),
    collapsed,
    showCpu,
    cpuCollapsed,
  };
  const layout: Layout = {
    slots: [],
    height: 0,
    rowSlot: new Map(),
    headerSlot: new Map(),
    memorySlot: new Map(),
  };
  let y = 0;
  const kinds = Object.entries(LANE_KINDS).map(([name, lane]) => {
    const kind = name as LaneKindName;
    const out: LayoutBuilder = {
      layout,
      add(slot: NewSlot, h: number): number {
        layout.slots.push({ ...slot, kind, y, h });
        y += h;
        return layout.slots.length - 1;
      },
      gap() {
        y += opts.laneGap;
      },
    };
    return { lane: lane, out };
  });
  for (const rank of ranks) for (const { lane, out } of kinds) lane.place(rank, data, out);
  layout.height = y;
  return layout;
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
