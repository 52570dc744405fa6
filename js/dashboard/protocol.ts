/**
 * The dashboard's data contract, host-agnostic: what `DashboardSource` hands the views.
 *
 * Mirrors jupyter_traceview/dashboard/data.py (the payload, the tabs, the links) and
 * docs/frontend.md ("The dashboard's protocol"). Times are float ns relative to the trace's
 * first event, as in the timeline.
 */
import type { InvokeOptions, StateModel } from "../timeline/state";
import type { TimelineModel } from "../timeline/messages";

/** Version of the contract this front end speaks (dashboard.data.PROTOCOL). */
export const PROTOCOL = 3;

/** A headline figure (dashboard.data.figure_). */
export interface Figure {
  label: string;
  value: string;
  hint: string;
  tone: "" | "good" | "warn" | "bad";
}

/** `_payload`: what the dashboard needs to open (DashboardData.payload). */
export interface DashboardPayload {
  protocol: number;
  source: string;
  title: string;
  ranks: number[];
  /** The trace's origin (absolute ns, as a string: exact); every relative time counts from it. */
  t0_ns: string;
  /** Last event end after t0_ns, ns: the timeline's width. */
  span_ns: number;
  tabs: { id: string; label: string }[];
  headline: Figure[];
  bokeh_version: string;
}

/**
 * A table column; `format`: text, name (a short name, its full one in the table's `full`),
 * int, duration (ns), pct (0-100), bytes, gbps, float.
 */
export interface TableColumn {
  key: string;
  label: string;
  format: "text" | "name" | "int" | "duration" | "pct" | "bytes" | "gbps" | "float";
}

export interface Table {
  id: string;
  title: string;
  columns: TableColumn[];
  rows: unknown[][];
  total_rows: number;
  /** The full names of the `name` columns (by key), row by row (the cells hold short names). */
  full: Record<string, string[]>;
}

/** A chart: a bokeh JSON item (bokeh.embed.json_item), drawn by BokehJS. */
export interface Chart {
  id: string;
  wide: boolean;
  empty: boolean;
  item: { doc: unknown; root_id: string; target_id: string | null; version: string };
}

/** A finding (tv.findings, one row), with `stake` in words. */
export interface Finding {
  id: string;
  severity: "high" | "medium" | "low" | "info";
  title: string;
  detail: string;
  time_at_stake_ns: number;
  time_at_stake_pct: number;
  ranks: number[];
  evidence: Record<string, unknown>;
  rule: string;
  analysis: string;
  /** What fixing it saves per step (ns; 0 when unknown), from tv.what_if. */
  saving_ns: number;
  /** saving_ns as a share of the median step (%). */
  saving_pct: number;
  /** The change that saving assumed, in words ("" when none). */
  change: string;
  stake: string;
  /** What fixing it buys per step, in words ("fix this: ~X/step (Y%), assuming ..."); "" when unknown. */
  fix: string;
}

/** `_tab`: one tab's content (DashboardData.tab). */
export interface TabContent {
  tab: string;
  theme: "light" | "dark";
  range: [number, number] | null;
  figures: Figure[];
  findings?: Finding[];
  /** The Overview's "checked, fine" lines: each rule that did not fire and why (tv.findings(explain=True)). */
  checks?: string[];
  tables: Table[];
  charts: Chart[];
  notes: string[];
  elapsed_ms: number;
  /** The request's `seq` (null when it sent none). */
  seq?: number | null;
  error?: string;
}

/** `_tab` request. */
export interface TabRequest {
  seq: number;
  tab: string;
  theme: "light" | "dark";
  range: [number, number] | null;
}

/** `_link` request: what was clicked (the `link_*` columns of a chart's source). */
export interface LinkRequest {
  target: "heatmap" | "rank" | "iteration" | "kernel" | "event";
  rank: number;
  /** target "event": the event to show (e.g. the operator running at a memory peak). */
  eid?: number;
  /** target "event" at a memory peak: the device whose memory lane the timeline reveals. */
  device_type?: string;
  device?: number;
  bin?: number;
  heatmap?: string;
  step?: number;
  name?: string;
  range?: [number, number] | null;
}

/** `_link` answer: where the timeline goes (DashboardData.link). */
export interface LinkAnswer {
  x_range: [number, number];
  /** The ranks the link is about: added to those the timeline shows. */
  ranks: number[];
  /** The rank the timeline emphasises (scrolled to, highlighted). */
  focus: number;
  search?: string;
  /** The memory lane to reveal (an id of the timeline state's `_memory`). */
  memory?: number;
  error?: string;
}

/** `_timeline` answer: the timeline's initial state; `model_id` when a widget holds it. */
export interface TimelineAnswer {
  /** The state (hosts without a widget); a widget host gives `model_id` instead. */
  state?: TimelineModel;
  model_id?: string;
  error?: string;
}

/** A progress report while a command runs (`{type: "progress"}` messages of the widget). */
export interface ProgressReport {
  type: "progress";
  command: string;
  tab?: string;
  done: number;
  total: number;
  label: string;
}

/**
 * Where a dashboard's data comes from. The anywidget `tv.Dashboard` answers commands in the
 * kernel; the Traces sidebar answers the same commands over HTTP. Views use nothing else.
 */
export interface DashboardSource {
  /** What the dashboard needs to open. */
  payload(): Promise<DashboardPayload>;
  /** One command (docs/frontend.md): a JSON message (and binary buffers) in, the same out. */
  invoke(
    command: string,
    msg: unknown,
    buffers?: DataView[],
    options?: InvokeOptions,
  ): Promise<{ msg: unknown; buffers: DataView[] }>;
  /**
   * The timeline's state, from the `_timeline` answer. Optional: by default the view keeps
   * it in a `LocalModel`; `tv.Dashboard` returns its `Timeline` child widget's model, so
   * that Python sees the view (`dashboard.timeline.x_range`).
   */
  timelineModel?(answer: TimelineAnswer): Promise<StateModel<TimelineModel>>;
  /** Progress reports while commands run (optional; without them the view shows a spinner). */
  onProgress?(callback: (report: ProgressReport) => void): () => void;
}

/** State of the dashboard itself (tv.Dashboard's traits `tab` and `expanded`). */
export interface DashboardState {
  tab: string;
  expanded: boolean;
}
