/**
 * The JSON the Traces sidebar exchanges with the server extension.
 *
 * Mirrors the TypedDicts of the same names in jupyter_traceview/server/messages.py
 * (`RunFigures`: `HeadlineFigures` in jupyter_traceview/model/display_hook.py), with the same
 * snake_case names; tests/server/test_server_messages.py compares the keys and their types.
 * The dashboard's own shapes are js/dashboard/protocol.ts.
 */

/**
 * Headline figures of a run: `tv.headline(trace)` (jupyter_traceview/analysis/headline.py,
 * via worker.py `headline_figures`, which drops `source`). Terms: docs/semantics.md,
 * "Headline figures".
 */
export interface RunFigures {
  ranks: number;
  rank_ids: number[];
  devices: string[];
  /** The trace's origin, absolute ns as a string (exact), as everywhere. */
  t0_ns: string;
  /** The trace's time window, absolute ns as strings, or null. */
  window: [string, string] | null;
  /** Counts, summed over ranks. */
  events: number;
  cpu_ops: number;
  kernels: number;
  gpu_activities: number;
  /** How many ProfilerStep iterations (a count). */
  iterations: number;
  /** The ProfilerStep ids (not a count). */
  steps: number[];
  step_median_ns: number | null;
  /** Whether any rank has GPU work. */
  gpu: boolean;
  /** First GPU work on any rank to last, ns. */
  job_span_ns: number;
  /** The longest rank span (first to last GPU work of a rank), ns. */
  span_ns: number;
  /** The longest rank's first event to last event, any kind, ns. */
  trace_span_ns: number;
  /** Means over the ranks with GPU work, 0-100; null without GPU work. */
  gpu_busy_pct: number | null;
  gpu_busy_min_pct: number | null;
  gpu_busy_max_pct: number | null;
  idle_pct: number | null;
  compute_pct: number | null;
  exposed_comm_pct: number | null;
  /** What the trace records (`tv.workload`): "training", or the verdicts by rank. */
  workload: string;
  /** Why, in words with the counts (`tv.workload`'s evidence). */
  workload_evidence: string;
  /** Trace files the load left out (`on_error="skip"`): a rank missing from every figure. */
  skipped_files: SkippedFile[];
  /** How the `%%traceprofile` run ended (its run record): "ok", "error" or "interrupted". */
  run_status: string;
}

/** A trace file a load left out: its path and why. */
export interface SkippedFile {
  path: string;
  reason: string;
}

/** How far a background task is: worker.py progress entries. */
export interface TaskProgress {
  /** "queued", "starting", "loading", "analysing", "comparing", ... */
  stage?: string;
  done?: number;
  total?: number;
}

export type RunStatus = "ready" | "queued" | "running" | "error";

/** "folder" (rank traces), "traceprofile" (a %%traceprofile run), "file" or "nsys". */
export type RunKind = "folder" | "traceprofile" | "file" | "nsys";

/** One row of `GET /traceview/api/runs`: handlers.py `RunsHandler._row`. */
export interface RunRow {
  /** Relative to the server root, with forward slashes. */
  path: string;
  name: string;
  /** A %%traceprofile run's title (its --name, else the cell's first meaningful line); "" for others. */
  title: string;
  kind: RunKind;
  /** Trace files of the run. */
  files: number;
  /** Latest modification time of its files, seconds since the epoch. */
  mtime: number;
  /** Bytes. */
  size: number;
  status: RunStatus;
  /** When status is "ready". */
  figures?: RunFigures;
  /** When status is "error": why the run cannot be read. */
  message?: string;
  /** When status is "queued" or "running". */
  progress?: TaskProgress;
  /** Against the listing's baseline (not on the baseline itself; only the newest runs). */
  verdict?: VerdictState;
}

/**
 * A run against the baseline: `tv.compare(baseline, run)` summed up (tasks.py `verdict_of`).
 * Durations in ns (mean steps), null when not finite.
 */
export interface RunVerdict {
  /** "faster", "slower" or "same" (within noise). */
  verdict: string;
  base_ns: number | null;
  new_ns: number | null;
  delta_ns: number | null;
  delta_pct: number | null;
  /** The largest cause outside noise, else the largest. */
  top_cause: string;
  top_cause_delta_ns: number | null;
  top_cause_within_noise: boolean;
  /** How the noise was judged (the bootstrap interval, or why there is none). */
  noise_test: string;
  /** The first warnings (world sizes, warm-up, steps matched). */
  warnings: string[];
}

/** A run's verdict against `baseline` (its path) in `GET /traceview/api/runs`. */
export interface VerdictState {
  status: RunStatus;
  baseline: string;
  /** When status is "ready". */
  result?: RunVerdict;
  /** When status is "error". */
  message?: string;
  /** When status is "queued" or "running". */
  progress?: TaskProgress;
}

/** A baseline kept beside the runs (`traceview baseline set`, or "Set as Baseline"). */
export interface BaselineRef {
  name: string;
  /** The run, relative to the server root. */
  path: string;
  /** When it was set, ISO 8601. */
  set_at: string;
  /** The baselines file that keeps it, relative to the server root. */
  file: string;
}

/** `GET /traceview/api/runs`. */
export interface RunsListing {
  runs: RunRow[];
  /** More runs exist than the server lists (c.TraceviewServer.max_runs). */
  truncated: boolean;
  /** The baseline the runs' verdicts are against (the most recently set), if any. */
  baseline?: BaselineRef;
}

/** `POST /traceview/api/baseline`: the baseline as now kept. */
export interface BaselineSet {
  baseline: BaselineRef;
}

/** A task still computing (HTTP 202): its progress, its place in the queue, its age in seconds. */
export interface TaskPending {
  status: "queued" | "running";
  progress: TaskProgress;
  position?: number;
  elapsed_s?: number;
}

/** `POST /traceview/api/dashboard` while the worker computes (202): ask again with the same body. */
export interface CommandPending extends TaskPending {
  command?: string;
}

/** `POST /traceview/api/dashboard` body: one command of the dashboard's front end and its message. */
export interface DashboardRequest {
  command: string;
  msg: Record<string, unknown>;
}

/** The JSON head of a ready `POST /traceview/api/dashboard` answer: the message and its buffers' lengths. */
export interface AnswerHeader {
  status: "ready";
  msg: unknown;
  buffers: number[];
}

/** Any error answer of the server (4xx): why, in words. */
export interface ErrorBody {
  message: string;
}

/**
 * A run in object storage (`GET remote/runs`, `GET remote/run`): its URL (as `tv.load`
 * takes it), the server's remote root it is under, its name, kind ("folder", "file", "nsys"
 * or "dataset"), trace objects, bytes and latest modification time (s; 0 when unknown).
 */
export interface RemoteRunRow {
  url: string;
  root: string;
  name: string;
  kind: string;
  files: number;
  size: number;
  mtime: number;
}

/** A remote root that could not be listed, and why (the URL without secrets). */
export interface RemoteError {
  root: string;
  message: string;
}

/** `GET remote/runs`: the runs under the server's remote roots, newest first. */
export interface RemoteListing {
  runs: RemoteRunRow[];
  truncated: boolean;
  errors: RemoteError[];
}

/** What a task endpoint answers: the data, or how far the work is (HTTP 202). */
export type TaskState<T> = { status: "ready"; data: T } | TaskPending;
