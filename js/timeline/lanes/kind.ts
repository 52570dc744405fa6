/**
 * What a kind of lane is: one object per kind (the table in lanes/index.ts), modelled on
 * Perfetto's `TrackRenderer` (ui/src/public/track.ts: render, getHeight, onMouseMove,
 * renderTooltip). The view's parts (layout, frame, input, tooltip, the window request) ask
 * the slot's kind and never test which kind it is: a new lane is one module and one entry of
 * the table (CONTRIBUTING.md, "How to add a timeline lane").
 */
import type { Ctx, Scale } from "../draw";
import type { Hover, ViewHost } from "../host";
import type { Layout, LayoutOptions, Slot } from "../layout";
import type { MemoryMeta, LaneMeta, RowMeta } from "../messages";
import type { BinRow } from "../protocol";

/** What the model holds that the kinds lay out, indexed once per layout. */
export interface LaneData {
  readonly opts: LayoutOptions;
  readonly rowById: ReadonlyMap<number, RowMeta>;
  /** Each rank's lanes, GPU streams first, then CPU threads. */
  readonly lanesByRank: ReadonlyMap<number, readonly LaneMeta[]>;
  /** Each rank's memory lanes. */
  readonly memoryByRank: ReadonlyMap<number, readonly MemoryMeta[]>;
  readonly collapsed: ReadonlySet<number>;
  readonly showCpu: boolean;
  /** Ranks whose CPU threads are folded into one row. */
  readonly cpuCollapsed: ReadonlySet<number>;
}

/** A slot before it is placed (the layout gives it its `y`, `h` and `kind`). */
export type NewSlot = Omit<Slot, "y" | "h" | "kind">;

/** The layout being built: a kind adds its slots of a rank, top to bottom. */
export interface LayoutBuilder {
  readonly layout: Layout;
  /** Add a slot `h` px tall under the previous ones; returns its index. */
  add(slot: NewSlot, h: number): number;
  /** Leave `opts.laneGap` px under the last slot. */
  gap(): void;
}

/** What a window request asks for (the `_window` message's lists). */
export interface Wants {
  rows: number[];
  summaries: number[];
  memory: number[];
  folds: number[];
}

/** What a kind draws with: the frame's batch of rectangles and its memory. */
export interface Painter {
  readonly host: ViewHost;
  readonly ctx: Ctx;
  readonly scale: Scale;
  /** Canvas width, px. */
  readonly width: number;
  /** Rectangles drawn (add what a kind draws itself). */
  rects: number;
  /** Draw row `rowId` (raw events or merged columns) in `slot`'s band at canvas `y`. */
  row(rowId: number, slot: Slot, y: number): void;
  /**
   * Draw merged columns `bins` of the window (kind colours) in `[y, y + h)`; `target`, the
   * rank they summarise, lets the host label them (see `ViewHost.binNames`).
   */
  bins(bins: BinRow, y: number, h: number, target?: { rank: number }): void;
}

/** A tooltip: a title and `[label, value]` lines. */
export interface Tip {
  title: string;
  lines: [string, string][];
}

/** What a kind's tooltip reads: the host, the hover, and answers that arrive later. */
export interface TipContext {
  readonly host: ViewHost;
  readonly hover: Hover;
  /**
   * The answer `get` gave for `key`, or null while it is on its way: asked for once the
   * pointer rests (the tooltip is drawn again when it arrives, if the pointer is still there).
   */
  later<T>(key: string, get: () => Promise<T | null>): T | null;
}

/** What the pointer is over in a slot: a raw event or a column. */
export interface LaneHit {
  /** Raw event index in its row, or -1. */
  event: number;
  /** Column of the window, or -1. */
  bin: number;
}

export interface LaneKind {
  /** Add the slots of `rank` (its lanes of this kind) to the layout. */
  place(rank: number, data: LaneData, out: LayoutBuilder): void;
  /** Draw `slot`'s band (the plot, right of the gutter) at canvas `y`. */
  draw(p: Painter, slot: Slot, y: number): void;
  /** Draw `slot`'s label in the gutter at canvas `y`; the plain label when absent. */
  drawLabel?(host: ViewHost, ctx: CanvasRenderingContext2D, slot: Slot, y: number): void;
  /** What is at time `t` in `slot`, or null. */
  hit(host: ViewHost, slot: Slot, t: number): LaneHit | null;
  /** The tooltip of `tip.hover` over `slot`, or null (nothing to say). */
  tooltip(tip: TipContext, slot: Slot): Tip | null;
  /** Add what the window request must hold to draw `slot`. */
  want(host: ViewHost, slot: Slot, w: Wants): void;
  /** A click in the plot (`hit`: what is under it); true when handled. */
  click?(host: ViewHost, slot: Slot, hit: Hover | null): boolean;
  /** A click on the slot's label in the gutter. */
  clickLabel?(host: ViewHost, slot: Slot): void;
}

/** `[a, b)`: the times column `k` of window `d` covers. */
export function columnSpan(d: { lo: number; hi: number; width: number }, k: number): [number, number] {
  return [d.lo + ((d.hi - d.lo) * k) / d.width, d.lo + ((d.hi - d.lo) * (k + 1)) / d.width];
}
