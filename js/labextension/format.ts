/**
 * Words and path helpers of the Traces sidebar: pure functions, tested in
 * js/tests/traces-format.test.ts. Numbers are written by js/format.ts.
 */
import { URLExt } from "@jupyterlab/coreutils";

import { formatBytes } from "../format";

/** How long ago `mtimeS` (seconds since the epoch) was, from `nowMs`: "just now", "5 min ago", ... */
export function formatAge(mtimeS: number, nowMs: number): string {
  const s = Math.max(0, Math.round(nowMs / 1000 - mtimeS));
  if (s < 10) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const days = Math.floor(s / 86400);
  if (days < 30) return days === 1 ? "yesterday" : `${days} days ago`;
  return new Date(mtimeS * 1000).toLocaleDateString();
}

/** A progress entry as words: "loading 3/8 files", "analysing", "queued (3rd)". */
export function formatProgress(
  progress: { stage?: string; done?: number; total?: number } | undefined,
  position?: number,
): string {
  const stage = progress?.stage ?? "waiting";
  if (stage === "queued") return position ? `queued (${ordinal(position)} in line)` : "queued";
  if (stage.startsWith("loading") && progress?.total) {
    return `${stage} ${progress.done ?? 0}/${progress.total} file${progress.total === 1 ? "" : "s"}`;
  }
  return stage;
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/** The folder part of a path relative to the server root ("" at the root). */
export function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

/**
 * `target` (relative to the server root) as seen from the folder `fromDir` (relative to
 * the server root too): the path a kernel started in `fromDir` opens.
 */
export function relativePath(fromDir: string, target: string): string {
  const parts = (p: string): string[] => p.split("/").filter((x) => x !== "" && x !== ".");
  const from = parts(fromDir);
  const to = parts(target);
  let common = 0;
  while (common < from.length && common < to.length && from[common] === to[common]) common += 1;
  const up: string[] = new Array<string>(from.length - common).fill("..");
  const rel = [...up, ...to.slice(common)].join("/");
  return rel === "" ? "." : rel;
}

/** Whether some cell source imports jupyter_traceview as tv. */
export function importsTraceview(sources: readonly string[]): boolean {
  const re = /^\s*import\s+(?:[\w.]+\s*,\s*)*jupyter_traceview\s+as\s+tv\b/m;
  return sources.some((s) => re.test(s));
}

/** A Python string literal for `s` (JSON's escapes are valid Python escapes). */
export function pythonString(s: string): string {
  return JSON.stringify(s);
}

/** Whether `path` is a URL (`s3://bucket/prefix`: a run under one of the server's remote roots). */
export function isUrl(path: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(path);
}

/**
 * The code that loads a run in a notebook: `trace = tv.load("<path>")`, with
 * `import jupyter_traceview as tv` first unless the notebook has it already. A URL (a run
 * in object storage) is kept as it is; a path is made relative to the notebook's folder.
 */
export function loadCode(runPath: string, notebookPath: string, sources: readonly string[]): string {
  const rel = isUrl(runPath) ? runPath : relativePath(dirname(notebookPath), runPath);
  const load = `trace = tv.load(${pythonString(rel)})`;
  return importsTraceview(sources) ? load : `import jupyter_traceview as tv\n\n${load}`;
}

/**
 * A short display name: a %%traceprofile run's title (its --name, else its cell's first
 * meaningful line) when its record has one, else the last two path parts (NAME/timestamp);
 * the last path part for other runs.
 */
export function displayName(path: string, kind: string, title = ""): string {
  const parts = path.split("/");
  if (kind === "traceprofile" && title) return title;
  if (kind === "traceprofile" && parts.length >= 2) return parts.slice(-2).join("/");
  return parts[parts.length - 1] ?? path;
}

/** `text` cut to `max` characters in the middle ("loss = loss_fn(m…, y)"), so that both ends show. */
export function middleEllipsis(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const keep = Math.max(2, max - 1);
  const head = Math.ceil(keep / 2);
  return chars.slice(0, head).join("") + "…" + chars.slice(chars.length - (keep - head)).join("");
}

/** How a run that did not end well is marked: "partial" when its cell raised, else its status. */
export const RUN_STATUS_TEXT: Record<string, { badge: string; hint: string }> = {
  error: {
    badge: "partial",
    hint: "The profiled cell raised: its last step is partial (findings leave it out)",
  },
  interrupted: {
    badge: "interrupted",
    hint: "The profiled cell was interrupted: its last step is partial (findings leave it out)",
  },
};

/** The trace files a load left out, one "path: reason" line each. */
export function skippedText(skipped: readonly { path: string; reason: string }[]): string {
  return skipped.map((f) => `${f.path}: ${f.reason}`).join("\n");
}

/** The URL parameters of a run panel to open when a page starts (Notebook 7: placement.ts). */
export const OPEN_PARAM = "traceview-open";
export const BASELINE_PARAM = "traceview-baseline";

/** What to open: a run (`baseline` null) or a diff of `baseline` and `path`. */
export interface OpenRequest {
  path: string;
  baseline: string | null;
}

/** The tree page's URL that opens `request` when it starts. */
export function treeUrl(request: OpenRequest, baseUrl: string): string {
  const query: Record<string, string> = { [OPEN_PARAM]: request.path };
  if (request.baseline !== null) query[BASELINE_PARAM] = request.baseline;
  return URLExt.join(baseUrl, "tree") + URLExt.objectToQueryString(query);
}

/** The panel a page was opened to show (its URL's parameters), or null. */
export function pendingOpen(search: string): OpenRequest | null {
  const params = new URLSearchParams(search);
  const path = params.get(OPEN_PARAM);
  if (!path) return null;
  return { path, baseline: params.get(BASELINE_PARAM) || null };
}

/** What a run in object storage offers in the sidebar, and why no baseline or notes (its rows' tooltip). */
export const REMOTE_READ_ONLY =
  "In object storage (read-only): Open shows its dashboard, read by the Jupyter server with the " +
  "server's credentials; Insert load code puts tv.load(url) in the notebook, whose kernel reads it " +
  "with its own. Baselines and notes are for local runs, since the server writes nothing to the store.";

/** Does `text` hold every whitespace-separated term of `filter` (case-insensitive)? The sidebar's filter. */
export function matchesFilter(text: string, filter: string): boolean {
  const terms = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const lower = text.toLowerCase();
  return terms.every((t) => lower.includes(t));
}

/** A remote run's second line: its objects, their size and age ("8 files · 436 KiB · 3 min ago"). */
export function remoteDetail(
  row: { files: number; size: number; mtime: number; kind: string },
  nowMs: number,
): string {
  const parts = [
    row.kind === "dataset" ? "dataset" : `${String(row.files)} file${row.files === 1 ? "" : "s"}`,
  ];
  if (row.kind !== "dataset") parts.push(formatBytes(row.size));
  if (row.mtime > 0) parts.push(formatAge(row.mtime, nowMs));
  return parts.join(" · ");
}

/** What the sidebar's object storage section shows (remote.ts draws it). */
export interface RemoteView {
  /** Hidden: the server has no remote roots (an empty listing without errors). */
  hidden: boolean;
  /** One alert line each: the listing failed, or a root could not be listed. */
  problems: string[];
  rows: { url: string; name: string; kind: string; detail: string; tooltip: string }[];
  /** Runs listed but not shown: they do not match the sidebar's filter. */
  filteredOut: number;
  truncated: boolean;
}

/**
 * The object storage section for a listing (or the error that replaced it), its rows those
 * matching the sidebar's `filter` (their URL and kind, as a local run's path and kind).
 */
export function remoteView(
  listing: {
    runs: readonly { url: string; name: string; kind: string; files: number; size: number; mtime: number }[];
    errors: readonly { root: string; message: string }[];
    truncated: boolean;
  } | null,
  error: string | null,
  nowMs: number,
  filter = "",
): RemoteView {
  const problems = error !== null ? [`Cannot list runs in object storage: ${error}`] : [];
  if (listing === null) return { hidden: false, problems, rows: [], filteredOut: 0, truncated: false };
  for (const e of listing.errors) {
    // The server's messages name the URL first: not twice.
    problems.push(
      e.message.startsWith(e.root) ? `Cannot list ${e.message}` : `Cannot list ${e.root}: ${e.message}`,
    );
  }
  const shown = listing.runs.filter((r) => matchesFilter(`${r.url} ${r.kind}`, filter));
  return {
    hidden: listing.runs.length === 0 && listing.errors.length === 0,
    problems,
    rows: shown.map((r) => ({
      url: r.url,
      name: r.name,
      kind: r.kind,
      detail: remoteDetail(r, nowMs),
      tooltip: `${r.url}\n${REMOTE_READ_ONLY}`,
    })),
    filteredOut: listing.runs.length - shown.length,
    truncated: listing.truncated,
  };
}
