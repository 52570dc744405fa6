/**
 * What the parts of the timeline view (fetcher, input, tooltip, toolbar, frame) share: the
 * view's state and the few actions they call back. `TimelineView` (view.ts) implements it
 * and composes the parts; each part reads the host, none holds a copy of its state.
 */
import type { FoundInstance } from "./collective";
import type { Colors } from "./colors";
import type { WindowData } from "./protocol";
import type { Layout } from "./layout";
import type { EventDetails, FoldSummary, LaneMeta, TimelineModel } from "./messages";
import type { StateModel } from "./state";
import type { Theme } from "./theme";
import type { Limits, Range } from "./viewport";

/** Width of the label gutter left of the plot, px. */
export const GUTTER = 172;
/** Height of the time axis band above the rows, px. */
export const AXIS = 26;
/** Room kept right of the plot for the scroller's scrollbar, px. */
export const SCROLLBAR = 12;

/** What the pointer is over. */
export interface Hover {
  slot: number;
  /** Raw event index in its row, or -1. */
  event: number;
  /** Column of a binned row or summary, or -1. */
  bin: number;
  x: number;
  y: number;
}

/** The selected event and, once they arrive, its details. */
export interface Selected {
  rank: number;
  eid: number;
  details: EventDetails | null;
}

/** A measured range (times, either order). */
export interface Measure {
  a: number;
  b: number;
}

export interface ViewHost {
  readonly model: StateModel<TimelineModel>;
  readonly root: HTMLDivElement;
  readonly scroller: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly theme: Theme;
  readonly colors: Colors;
  readonly layout: Layout;
  readonly lanes: Map<number, LaneMeta>;
  readonly limits: Limits;
  /** The visible time range. */
  readonly range: Range;
  /** Width of the plot (without gutter and scrollbar), px. */
  readonly width: number;
  /** Height of the scroller's viewport, px. */
  readonly viewHeight: number;
  readonly scrollTop: number;
  readonly data: WindowData | null;
  /** The search pattern the data's matches are for. */
  readonly dataPattern: string;
  /** Does the owner answer folded CPU rows (else they are drawn from the threads' rows)? */
  readonly foldsSupported: boolean;
  readonly hover: Hover | null;
  readonly selected: Selected | null;
  readonly measure: Measure | null;
  /** The collective instance of the selected communication kernel, on every rank (collective.ts). */
  readonly collective: FoundInstance | null;
  /** The range being measured (Shift+drag in progress). */
  measuring: Measure | null;
  readonly charWidth: number;
  font(px: number): string;
  setRange(r: Range): void;
  setHover(h: Hover | null): void;
  select(rank: number, eid: number): void;
  clearSelection(): void;
  save<K extends keyof TimelineModel>(key: K, value: TimelineModel[K]): void;
  invalidate(): void;
  details(rank: number, eid: number): Promise<EventDetails | null>;
  /** What a rank's folded CPU threads do in `[lo, hi)` (the folded row's tooltip). */
  fold(rank: number, lo: number, hi: number): Promise<FoldSummary | null>;
  readonly helpOpen: boolean;
  /** Show (true), hide (false) or toggle the keyboard help. */
  toggleHelp(show?: boolean): void;
  /**
   * Names of the events starting in `[a, b)` of a row or of a rank's rows, most first, where
   * the host knows them without the events (the HTML report's details); undefined elsewhere.
   */
  binNames?(target: { rank: number } | { row: number }, a: number, b: number): [string, number][];
  /** Go back to the previous view / forward to the one Back left (js/timeline/history.ts). */
  back(): void;
  forward(): void;
}
