/**
 * The Traces sidebar's interfaces and token: what the model exposes, what the settings hold,
 * how the REST API is called. The JSON the server answers is typed in messages.ts.
 */
import { Token } from "@lumino/coreutils";
import type { ISignal } from "@lumino/signaling";

import type { BaselineRef, BaselineSet, RemoteListing, RemoteRunRow, RunRow, RunsListing } from "./messages";

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
  /** Keep the run at `path` as baseline `name` (the server's default: "main"), beside the runs. */
  setBaseline(path: string, options: ListOptions & { name?: string }): Promise<BaselineSet>;
  /** The runs under the server's remote roots (object storage; read-only). */
  listRemote?(): Promise<RemoteListing>;
  /** One run in object storage, checked by the server (inside a remote root, still there). */
  remoteRun?(url: string): Promise<RemoteRunRow>;
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
  /** The baseline the runs' verdicts are against (the server's listing), or null. */
  readonly baseline: BaselineRef | null;
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
