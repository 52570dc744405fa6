/**
 * Words and path helpers of the Traces sidebar: pure functions, tested in
 * js/tests/traces-format.test.ts. Numbers are written by js/format.ts.
 */

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

/**
 * The code that loads a run in a notebook: `trace = tv.load("<path>")`, with
 * `import jupyter_traceview as tv` first unless the notebook has it already.
 */
export function loadCode(runPath: string, notebookPath: string, sources: readonly string[]): string {
  const rel = relativePath(dirname(notebookPath), runPath);
  const load = `trace = tv.load(${pythonString(rel)})`;
  return importsTraceview(sources) ? load : `import jupyter_traceview as tv\n\n${load}`;
}

/** A short display name: the last two path parts for %%traceprofile runs (NAME/timestamp). */
export function displayName(path: string, kind: string): string {
  const parts = path.split("/");
  if (kind === "traceprofile" && parts.length >= 2) return parts.slice(-2).join("/");
  return parts[parts.length - 1] ?? path;
}
