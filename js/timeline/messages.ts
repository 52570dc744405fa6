/**
 * The synced state of a Timeline and the messages it exchanges with the kernel.
 *
 * `TimelineModel` mirrors the traits of `Timeline` in
 * jupyter_traceview/widgets/timeline.py (same snake_case names). Every interface here mirrors
 * the TypedDict of the same name in jupyter_traceview/views/timeline/messages.py (the palette's
 * in jupyter_traceview/views/colors.py); tests/views/test_timeline_messages.py compares the
 * keys, so name a new shape as an interface (not inline) and add its TypedDict. Times are
 * float ns relative to the trace's first event.
 */

/** One colour kind of the palette (jupyter_traceview/views/colors.json). */
export interface PaletteKind {
  key: string;
  label: string;
  light: string;
  dark: string;
}

/** A CSS colour per theme. */
export interface ThemeColor {
  light: string;
  dark: string;
}

/** The colours names are hashed into, per theme. */
export interface NamePalette {
  light: string[];
  dark: string[];
}

/** jupyter_traceview/views/colors.json, sent once by the widget. */
export interface Palette {
  kinds: PaletteKind[];
  names: NamePalette;
  highlight: ThemeColor;
  selection: ThemeColor;
  flow: ThemeColor;
}

/** A row: one lane (GPU stream or CPU thread) at one nesting depth. */
export interface RowMeta {
  id: number;
  rank: number;
  lane: number;
  depth: number;
  type: "gpu" | "cpu";
  events: number;
}

/** A GPU stream or CPU thread of a rank. */
export interface LaneMeta {
  id: number;
  rank: number;
  type: "gpu" | "cpu";
  label: string;
  device: number;
  stream: number;
  pid: number;
  tid: number;
  rows: number[];
}

/**
 * A memory lane (one device of one rank) or a hardware counter lane (one metric of one GPU:
 * PM sampling's samples) (views/timeline/messages.py MemoryMeta, built by memory.py).
 */
export interface MemoryMeta {
  id: number;
  rank: number;
  device_type: string;
  device: number;
  label: string;
  /** `memory` (allocator records) or `counter` (a sampled metric: one series). */
  kind: "memory" | "counter";
  /** The values' unit: `bytes` for memory; `%` or `""` (none) for a counter. */
  unit: string;
  records: number;
  /** Largest allocated bytes (a counter's largest value) and when first reached (ns relative to the trace start). */
  peak_allocated: number;
  peak_ts: number;
  peak_reserved: number;
  peak_reserved_ts: number;
  start: number;
  end: number;
}

/** A ProfilerStep span (earliest start and latest end over the ranks). */
export interface StepMark {
  step: number;
  start: number;
  end: number;
}

/** The selected event as the front end writes it (`{}` when none). */
export interface SelectedEvent {
  rank?: number;
  eid?: number;
}

/** Traits of jupyter_traceview/widgets/timeline.py::Timeline. */
export interface TimelineModel {
  _palette: Palette;
  _rows: RowMeta[];
  _lanes: LaneMeta[];
  /** Memory lanes (none without memory records). */
  _memory: MemoryMeta[];
  _all_ranks: number[];
  _steps: StepMark[];
  _span: [number, number];
  _kinds: string[];
  _t0_ns: string;
  _search_count: number;
  x_range: [number, number];
  ranks: number[];
  collapsed: number[];
  show_cpu: boolean;
  color_by: "kind" | "name";
  search: string;
  selected_event: SelectedEvent;
  selected_range: number[];
  /** Height of the lanes area, px; 0 fits the lanes shown (resize.ts). */
  height: number;
  /** Where a dragged height is remembered: the notebook's path, or "" (the page's path). */
  _height_key: string;
  /** Ranks whose CPU threads are folded into one row. */
  cpu_collapsed: number[];
  /** Ranks pinned above the others, in order. */
  pinned: number[];
  /** The rank emphasised (scrolled to, highlighted), or null. */
  focus_rank: number | null;
}

/** A rank of the "slowest" preset (jupyter_traceview/views/timeline/ranks.py::SlowRank). */
export interface SlowRank {
  rank: number;
  step_mean_ns: number;
  compute_mean_ns: number;
}

/** A rank of the "stragglers" preset (ranks.py::StragglerRank). */
export interface StragglerRank {
  rank: number;
  last_count: number;
  collectives: number;
  lateness_ns: number;
}

/** `_ranks` command response (ranks.py::rank_presets). */
export interface RankPresets {
  slowest: SlowRank[];
  stragglers: StragglerRank[];
}

/** `_window` command request (Timeline._window). */
export interface WindowRequest {
  seq: number;
  lo: number;
  hi: number;
  width: number;
  rows: number[];
  summaries: number[];
  pattern: string;
  name_colors: boolean;
  /** Memory lanes wanted (ids of `_memory`). */
  memory?: number[];
  /** Ranks whose folded CPU row is wanted (views/timeline/fold.py). */
  folds?: number[];
}

/** `_details` command request. */
export interface DetailsRequest {
  rank: number;
  eid: number;
}

/** `_find` command request: the next (`direction` 1) or previous (-1) match after `t`. */
export interface FindRequest {
  pattern: string;
  t: number;
  direction: number;
  rows: number[];
}

/** `_fold` command request: what `rank`'s CPU threads do in `[lo, hi)` (the folded row's tooltip). */
export interface FoldRequest {
  rank: number;
  lo: number;
  hi: number;
}

/** `_summary` command request. */
export interface SummaryRequest {
  lo: number;
  hi: number;
  ranks: number[];
}

/** The answer to a malformed `_details`, `_find` or `_summary` request. */
export interface CommandError {
  error: string;
}

/** The answer to a malformed `_window` request (`seq`: the request's). */
export interface WindowError {
  seq: number;
  error: string;
}

/** Where a row's data sits in the response's sections. */
export interface RowSlice {
  row: number;
  mode: "raw" | "bins";
  offset: number;
  count: number;
}

/** Where a memory lane's columns sit in the `mem_*` sections. */
export interface MemorySlice {
  memory: number;
  offset: number;
  count: number;
}

/** Where a rank's summary row sits in the bin sections. */
export interface SummarySlice {
  rank: number;
  offset: number;
  count: number;
}

/** `[byte offset, length, dtype]` of each section of the response buffer. */
export type Layout = Record<string, [number, number, string]>;

/** `_window` command response metadata (encode_window in views/timeline/protocol.py). */
export interface WindowResponseMeta {
  seq: number;
  lo: number;
  hi: number;
  width: number;
  rows: RowSlice[];
  summaries: SummarySlice[];
  memory?: MemorySlice[];
  /** Where the folded CPU rows asked for sit (bin sections, after the summaries). */
  folds?: SummarySlice[];
  names: string[];
  name_colors: number[];
  /** Per name: matches the request's search pattern (absent without a pattern). */
  name_match?: boolean[];
  layout: Layout;
  kernel_ms: number;
  /** CPU time the owner's process spent answering (ms). */
  kernel_cpu_ms?: number;
  /** Wall clock (ms since the epoch) when the owner started answering. */
  kernel_at_ms?: number;
}

/** `_collective` request: a communication kernel. */
export interface CollectiveRequest {
  rank: number;
  eid: number;
}

/** One rank's part of a collective instance (times: ns relative to the trace's origin). */
export interface CollectiveRank {
  rank: number;
  /** The rank's first kernel start of the instance (its arrival). */
  start: number;
  /** The rank's last kernel end of the instance. */
  end: number;
  /** The kernel that starts first. */
  eid: number;
  kernels: number;
  /** Its timeline row (null when not drawn). */
  row: number | null;
}

/** The first or the last rank to arrive at a collective instance. */
export interface CollectiveArrival {
  rank: number;
  start: number;
}

/** `_collective` answer (collective_instance in views/timeline/collective.py). */
export interface CollectiveInstance {
  found: boolean;
  reason?: string;
  key?: string;
  collective?: string;
  matched_by?: "seq" | "order";
  ranks?: CollectiveRank[];
  first?: CollectiveArrival;
  last?: CollectiveArrival;
  wait_ns?: number;
  consistent?: boolean;
}

/** The collective of a communication kernel. */
export interface CollectiveInfo {
  collective: string;
  dtype: string | null;
  in_nelems: number;
  out_nelems: number;
  group_size: number;
}

/** The CPU call that launched a GPU activity (`row`: null if not drawn). */
export interface LaunchInfo {
  eid: number;
  name: string;
  start: number;
  dur_ns: number;
  row: number | null;
}

/** The operator around a launch, or the parent of a CPU event. */
export interface OperatorRef {
  eid: number;
  name: string;
}

/** `_details` command response (TimelineIndex.details). */
export interface EventDetails {
  rank: number;
  eid: number;
  name: string;
  kind: string;
  event_kind: string;
  start: number;
  /** The event's start, absolute ns as a string (exact), as `_t0_ns`. */
  start_ns: string;
  dur_ns: number;
  device: number;
  stream: number;
  pid: number;
  tid: number;
  step: number;
  row: number | null;
  grid?: number[];
  block?: number[];
  registers_per_thread?: number;
  shared_memory_bytes?: number;
  occupancy_pct?: number;
  bytes?: number;
  bandwidth_gbps?: number;
  copy_kind?: string;
  collective?: CollectiveInfo;
  launch?: LaunchInfo;
  operator?: OperatorRef;
}

/** `_find` command response. */
export interface FindResult {
  found: boolean;
  rank?: number;
  eid?: number;
  row?: number;
  start?: number;
  end?: number;
  name?: string;
}

/** Time covered by any kind in a range (overlaps counted once), and events overlapping it. */
export interface BusyTotal {
  busy_ns: number;
  pct: number;
  events: number;
}

/** One colour kind's share of a range. */
export interface KindBusy {
  kind: string;
  busy_ns: number;
  pct: number;
  events: number;
}

/** A name taking much (clipped) time in a range; `short`: shortened as in the charts (distinct names stay distinct). */
export interface TopName {
  name: string;
  short: string;
  time_ns: number;
}

/** A name taking much time on a rank's folded CPU threads; `events`: how many. */
export interface FoldName {
  name: string;
  short: string;
  time_ns: number;
  events: number;
}

/**
 * `_fold` command response (TimelineIndex.fold_summary): the rank's CPU threads, those working
 * in the range, the time any works, the work time summed over threads, the events, the top names.
 */
export interface FoldSummary {
  rank: number;
  lo: number;
  hi: number;
  threads: number;
  active: number;
  busy_ns: number;
  thread_ns: number;
  events: number;
  top: FoldName[];
}

/** `_summary` command response (TimelineIndex.range_summary). */
export interface RangeSummary {
  lo: number;
  hi: number;
  ranks: number[];
  source: "gpu" | "cpu" | "mixed";
  all: BusyTotal;
  kinds: KindBusy[];
  top: TopName[];
}
