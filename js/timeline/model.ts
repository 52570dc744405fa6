/**
 * The synced state of a Timeline and the messages it exchanges with the kernel.
 *
 * `TimelineModel` mirrors the traits of `Timeline` in
 * jupyter_traceview/widgets/timeline.py (same snake_case names). Times are float ns
 * relative to the trace's first event.
 */

/** One colour kind of the palette (jupyter_traceview/views/colors.json). */
export interface PaletteKind {
  key: string;
  label: string;
  light: string;
  dark: string;
}

/** jupyter_traceview/views/colors.json, sent once by the widget. */
export interface Palette {
  kinds: PaletteKind[];
  names: { light: string[]; dark: string[] };
  highlight: { light: string; dark: string };
  selection: { light: string; dark: string };
  flow: { light: string; dark: string };
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

/** A memory counter lane: one device of one rank (views/timeline/counters.py CounterInfo). */
export interface CounterMeta {
  id: number;
  rank: number;
  device_type: string;
  device: number;
  label: string;
  records: number;
  /** Largest allocated bytes and when first reached (ns relative to the trace start). */
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
  /** Memory counter lanes (none without memory records). */
  _counters: CounterMeta[];
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
  height: number;
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
  error?: string;
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
  /** Memory counter lanes wanted (ids of `_counters`). */
  counters?: number[];
}

/** Where a row's data sits in the response's sections. */
export interface RowSlice {
  row: number;
  mode: "raw" | "bins";
  offset: number;
  count: number;
}

/** Where a counter lane's columns sit in the `ctr_*` sections. */
export interface CounterSlice {
  counter: number;
  offset: number;
  count: number;
}

export interface SummarySlice {
  rank: number;
  offset: number;
  count: number;
}

/** `[byte offset, length, dtype]` of each section of the response buffer. */
export type Layout = Record<string, [number, number, string]>;

/** `_window` command response metadata (encode_window in timeline.py). */
export interface WindowResponseMeta {
  seq: number;
  lo: number;
  hi: number;
  width: number;
  rows: RowSlice[];
  summaries: SummarySlice[];
  counters?: CounterSlice[];
  names: string[];
  name_colors: number[];
  /** Per name: matches the request's search pattern (absent without a pattern). */
  name_match?: boolean[];
  layout: Layout;
  kernel_ms: number;
  error?: string;
}

/** `_details` command response (TimelineIndex.details). */
export interface EventDetails {
  rank: number;
  eid: number;
  name: string;
  kind: string;
  event_kind: string;
  start: number;
  start_ns: number;
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
  collective?: {
    collective: string;
    dtype: string | null;
    in_nelems: number;
    out_nelems: number;
    group_size: number;
  };
  launch?: { eid: number; name: string; start: number; dur_ns: number; row: number | null };
  operator?: { eid: number; name: string };
  error?: string;
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
  error?: string;
}

/** `_summary` command response (TimelineIndex.range_summary). */
export interface RangeSummary {
  lo: number;
  hi: number;
  ranks: number[];
  source: "gpu" | "cpu" | "mixed";
  all: { busy_ns: number; pct: number; events: number };
  kinds: { kind: string; busy_ns: number; pct: number; events: number }[];
  /** `short`: the name shortened as in the charts (distinct names stay distinct). */
  top: { name: string; short: string; time_ns: number }[];
  error?: string;
}
