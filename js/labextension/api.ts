/**
 * The REST API of jupyter_traceview's server extension (jupyter_traceview/server/handlers.py),
 * through JupyterLab's ServerConnection (base URL, token, XSRF cookie).
 */
import { URLExt } from "@jupyterlab/coreutils";
import { ServerConnection } from "@jupyterlab/services";

import { TracesApiError } from "./tokens";
import type { BaselineSet, ErrorBody, RemoteListing, RemoteRunRow, RunsListing } from "./messages";
import type { ITracesApi, ListOptions, RawAnswer } from "./tokens";

const NOT_ENABLED =
  "The Traces server extension does not answer: check that jupyter_traceview is installed in " +
  "the environment that runs JupyterLab (`jupyter server extension list` shows it) and restart JupyterLab.";

/** GET (or POST) /traceview/api/<endpoint>?<params>: the parsed JSON body and the HTTP status. */
async function get(
  settings: ServerConnection.ISettings,
  endpoint: string,
  params: Record<string, string>,
  method: "GET" | "POST" = "GET",
): Promise<{ status: number; body: unknown }> {
  const query = Object.entries(params).filter(([, v]) => v !== "");
  const url =
    URLExt.join(settings.baseUrl, "traceview", "api", endpoint) +
    URLExt.objectToQueryString(Object.fromEntries(query));
  let response: Response;
  try {
    // A POST: JupyterLab's ServerConnection adds the XSRF token the server checks.
    response = await ServerConnection.makeRequest(url, { method }, settings);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new TracesApiError(0, `The Jupyter server cannot be reached: ${why}`);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new TracesApiError(response.status, response.status === 404 ? NOT_ENABLED : response.statusText);
  }
  if (!response.ok) {
    const message = (body as Partial<ErrorBody> | null)?.message;
    throw new TracesApiError(
      response.status,
      typeof message === "string" && message ? message : `${response.status} ${response.statusText}`,
    );
  }
  return { status: response.status, body };
}

export class RestTracesApi implements ITracesApi {
  constructor(settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {
    this._settings = settings;
  }

  async listRuns(options: ListOptions): Promise<RunsListing> {
    const roots = options.roots.map((r) => r.trim()).filter(Boolean);
    const answer = await get(this._settings, "runs", { roots: roots.join(",") });
    return answer.body as RunsListing;
  }

  async listRemote(): Promise<RemoteListing> {
    const answer = await get(this._settings, "remote/runs", {});
    return answer.body as RemoteListing;
  }

  async remoteRun(url: string): Promise<RemoteRunRow> {
    const answer = await get(this._settings, "remote/run", { url });
    return answer.body as RemoteRunRow;
  }

  async setBaseline(path: string, options: ListOptions & { name?: string }): Promise<BaselineSet> {
    const roots = options.roots.map((r) => r.trim()).filter(Boolean);
    const answer = await get(
      this._settings,
      "baseline",
      { path, name: options.name ?? "", roots: roots.join(",") },
      "POST",
    );
    return answer.body as BaselineSet;
  }

  async dashboard(params: Record<string, string>, body: string, signal?: AbortSignal): Promise<RawAnswer> {
    const url =
      URLExt.join(this._settings.baseUrl, "traceview", "api", "dashboard") +
      URLExt.objectToQueryString(params);
    let response: Response;
    try {
      // POST: JupyterLab's ServerConnection adds the XSRF token the server checks.
      response = await ServerConnection.makeRequest(url, { method: "POST", body, signal }, this._settings);
    } catch (err) {
      if (signal?.aborted) throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new TracesApiError(0, `The Jupyter server cannot be reached: ${why}`);
    }
    const isJson = (response.headers.get("Content-Type") ?? "").includes("json");
    if (response.status === 404 && !isJson) throw new TracesApiError(404, NOT_ENABLED);
    return { status: response.status, body: await response.arrayBuffer() };
  }

  private readonly _settings: ServerConnection.ISettings;
}
