/**
 * The Traces sidebar's interfaces and token: what the server answers, what the model
 * exposes, what the settings hold.
 *
 * The JSON shapes mirror jupyter_traceview/server/handlers.py (`RunsHandler._row`,
 * `DashboardHandler`) and jupyter_traceview/server/worker.py (`headline_figures`), with
 * the same snake_case names. The dashboard's own shapes are js/dashboard/protocol.ts.
 */
import { Token } from "@lumino/coreutils";
import type { ISignal } from "@lumino/signaling";

/** Headline figures of a run: worker.py `headline_figures`. */
export interface RunFigures {
  ranks: number;
  /** Most ProfilerStep iterations of a rank. */
  iterations: number;
  /** Events and kernels, summed over ranks. */
  events: number;
  kernels: number;
  /** Whether any rank has GPU work. */
  gpu: boolean;
  /** The longest GPU span of a rank (the longest trace span without GPU work), ns. */
  span_ns: number;
  /** Means over the ranks with GPU work, 0-100; null without GPU work. */
  gpu_busy_pct: number | null;
  idle_pct: number | null;
  exposed_comm_pct: number | null;
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
}

export interface RunsListing {
  runs: RunRow[];
  /** More runs exist than the server lists (c.TraceviewServer.max_runs). */
  truncated: boolean;
}

/** What a task endpoint answers: the data, or how far the work is (HTTP 202). */
export type TaskState<T> =
  | { status: "ready"; data: T }
  | { status: "queued" | "running"; progress: TaskProgress; position?: number; elapsed_s?: number };

/** Where to look for runs: from the settings (the cache folder is the server's configuration). */
export interface ListOptions {
  /** Folders relative to the server root; empty: the server's configuration. */
  roots: string[];
}

/** One raw HTTP answer of `POST /traceview/api/dashboard` (dashboardsource.ts decodes it). */
export interface RawAnswer {
  status: number;
  /** The body: binary when `status` is 200, JSON otherwise. */
  body: ArrayBuffer;
}

/** The REST API under /traceview/api/ (api.ts); tests replace it with a mock. */
export interface ITracesApi {
  listRuns(options: ListOptions): Promise<RunsListing>;
  /** One command of a run's dashboard: `params` (path, baseline) and the JSON body. */
  dashboard(params: Record<string, string>, body: string, signal?: AbortSignal): Promise<RawAnswer>;
}

/** An answer of the server that is not the data: its HTTP status and message. */
export class TracesApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "TracesApiError";
  }
}

/** schema/plugin.json. */
export interface TracesSettings {
  roots: string[];
  /** Seconds between refreshes of the list; 0 turns live refresh off. */
  refreshInterval: number;
}

export const DEFAULT_SETTINGS: TracesSettings = { roots: [], refreshInterval: 5 };

/** How a click or key changes the selection. */
export type SelectMode = "replace" | "toggle" | "range";

/** The sidebar's state, shared with other plugins through the ITraces token. */
export interface ITracesModel {
  /** Every run listed, newest first. */
  readonly runs: readonly RunRow[];
  /** The runs the filter lets through, newest first. */
  readonly visibleRuns: readonly RunRow[];
  /** Selected runs, in the order they were selected. */
  readonly selectedRuns: readonly RunRow[];
  /** The run the keyboard is on. */
  readonly activeRun: RunRow | null;
  filter: string;
  settings: TracesSettings;
  /** Why the last listing failed, or null. */
  readonly error: string | null;
  /** Emitted on any change of runs, filter, selection, error. */
  readonly changed: ISignal<ITracesModel, void>;
  refresh(): Promise<void>;
  select(path: string, mode?: SelectMode): void;
  /** The two selected runs as (baseline, other): the older first; null unless two are selected. */
  diffPair(): [RunRow, RunRow] | null;
}

export const ITraces = new Token<ITracesModel>(
  "jupyter_traceview:ITraces",
  "The Traces sidebar's model: runs listed, filter, selection, refresh.",
);
