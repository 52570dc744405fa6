/**
 * The dashboard's data over HTTP: a `DashboardSource` (js/dashboard/protocol.ts) answered by
 * `POST /traceview/api/dashboard` (jupyter_traceview/server/handlers.py `DashboardHandler`),
 * so that a run panel shows the same dashboard as `tv.Dashboard` in a notebook: the server
 * answers the same commands with the same function (dashboard.data.answer), in its
 * background worker.
 *
 * A command is asked again while the server answers 202 (computing; the server holds each
 * request up to a second, so there is no extra wait); its progress goes to `onProgress`.
 */
import type { DashboardPayload, DashboardSource, ProgressReport } from "../dashboard/protocol";
import type { InvokeOptions } from "../timeline/state";
import { TracesApiError } from "./tokens";
import type {
  AnswerHeader,
  CommandPending,
  DashboardRequest,
  ErrorBody,
  TaskProgress,
  TaskState,
} from "./messages";
import type { RawAnswer } from "./tokens";

/** Sends one command to the server: `ITracesApi.dashboard` (api.ts: JupyterLab's ServerConnection). */
export type DashboardTransport = (
  params: Record<string, string>,
  body: string,
  signal?: AbortSignal,
) => Promise<RawAnswer>;

/** A decoded ready answer: the JSON message and the binary buffers. */
export interface Answer {
  msg: unknown;
  buffers: DataView[];
}

/** A 202 answer: how far the server is. */
export type Pending = CommandPending;

/** Pause between two asks while the server computes (it already holds each request ~1 s). */
const REASK_MS = 50;

/**
 * A ready answer: a 4-byte big-endian length, that many bytes of JSON
 * `{"status": "ready", "msg", "buffers": [byte lengths]}`, then the buffers.
 */
export function decodeAnswer(body: ArrayBuffer): Answer {
  if (body.byteLength < 4) throw new TracesApiError(200, "the server's answer is truncated");
  const n = new DataView(body).getUint32(0, false);
  if (4 + n > body.byteLength) throw new TracesApiError(200, "the server's answer is truncated");
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(body, 4, n))) as Partial<AnswerHeader>;
  const buffers: DataView[] = [];
  let at = 4 + n;
  for (const size of head.buffers ?? []) {
    if (at + size > body.byteLength) throw new TracesApiError(200, "the server's answer is truncated");
    buffers.push(new DataView(body, at, size));
    at += size;
  }
  return { msg: head.msg, buffers };
}

function jsonBody(answer: RawAnswer): Partial<ErrorBody> & Record<string, unknown> {
  try {
    return JSON.parse(new TextDecoder().decode(answer.body)) as Partial<ErrorBody> & Record<string, unknown>;
  } catch {
    return {};
  }
}

function abortError(): DOMException {
  return new DOMException("aborted", "AbortError");
}

export class RestDashboardSource implements DashboardSource {
  /**
   * @param path The run, relative to the server root.
   * @param baseline Another run to compare with (the dashboard then has a Diff tab), or null.
   */
  constructor(
    private readonly _transport: DashboardTransport,
    readonly path: string,
    readonly baseline: string | null = null,
  ) {}

  /** One ask: the answer, or the server's progress (HTTP 202); errors as TracesApiError. */
  async ask(command: string, msg: unknown, signal?: AbortSignal): Promise<Answer | Pending> {
    const params: Record<string, string> = { path: this.path };
    if (this.baseline !== null) params.baseline = this.baseline;
    const request: DashboardRequest = { command, msg: (msg ?? {}) as Record<string, unknown> };
    const answer = await this._transport(params, JSON.stringify(request), signal);
    if (answer.status === 200) return decodeAnswer(answer.body);
    const body = jsonBody(answer);
    if (answer.status === 202) return body as unknown as Pending;
    const message = typeof body.message === "string" && body.message ? body.message : `HTTP ${answer.status}`;
    throw new TracesApiError(answer.status, message);
  }

  /** The payload, one ask at a time (the run view shows the progress while the run loads). */
  async payloadState(signal?: AbortSignal): Promise<TaskState<DashboardPayload>> {
    const got = await this.ask("_payload", {}, signal);
    if ("msg" in got) return { status: "ready", data: got.msg as DashboardPayload };
    return got;
  }

  async payload(): Promise<DashboardPayload> {
    return (await this.invoke("_payload", {})).msg as DashboardPayload;
  }

  async invoke(
    command: string,
    msg: unknown,
    _buffers?: DataView[],
    options?: InvokeOptions,
  ): Promise<Answer> {
    const signal = options?.signal;
    for (;;) {
      if (signal?.aborted) throw abortError();
      const got = await this.ask(command, msg, signal);
      if ("msg" in got) return got;
      this._report(command, msg, got.progress);
      await new Promise((resolve) => setTimeout(resolve, REASK_MS));
    }
  }

  onProgress(callback: (report: ProgressReport) => void): () => void {
    this._listeners.add(callback);
    return () => this._listeners.delete(callback);
  }

  private _report(command: string, msg: unknown, progress: TaskProgress | undefined): void {
    if (!progress || this._listeners.size === 0) return;
    const tab = (msg as { tab?: unknown } | null)?.tab;
    const report: ProgressReport = {
      type: "progress",
      command,
      tab: typeof tab === "string" ? tab : undefined,
      done: progress.done ?? 0,
      total: progress.total ?? 1,
      label: progress.stage ?? "working",
    };
    for (const cb of this._listeners) cb(report);
  }

  private readonly _listeners = new Set<(report: ProgressReport) => void>();
}
