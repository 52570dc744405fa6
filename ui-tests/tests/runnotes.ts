// Runs that lack something, written through the server's contents API (JupyterLab and
// Notebook 7 alike): a folder with a truncated rank file loaded with on_error "skip", and two
// %%traceprofile runs of one function, the first of which raised (issue 38, points 1, 2, 8).
import type { APIRequestContext } from "@playwright/test";
import * as fs from "fs";
import * as path from "path";
import { REPO } from "./helpers";

const TWO_RANKS = path.join(REPO, "tests", "data", "hta_dlrm_2of128_ranks");

/** The runs' paths (relative to the server root) and the %%traceprofile runs' titles. */
export interface NoteRuns {
  skipped: string;
  failed: string;
  good: string;
  failedTitle: string;
  goodTitle: string;
}

async function put(request: APIRequestContext, dest: string, body: object): Promise<void> {
  const url = `api/contents/${dest.split("/").map(encodeURIComponent).join("/")}`;
  const answer = await request.put(url, { data: body });
  if (!answer.ok()) throw new Error(`PUT ${dest}: ${answer.status()} ${await answer.text()}`);
}

/** Folders down to `folder`, created one level at a time (the contents API makes no parents). */
async function folders(request: APIRequestContext, folder: string): Promise<void> {
  const parts = folder.split("/");
  for (let i = 1; i <= parts.length; i++) {
    await put(request, parts.slice(0, i).join("/"), { type: "directory" });
  }
}

async function text(request: APIRequestContext, dest: string, content: string): Promise<void> {
  await put(request, dest, { type: "file", format: "text", content });
}

async function twoRanks(request: APIRequestContext, folder: string): Promise<void> {
  await folders(request, folder);
  for (const name of ["rank-0.json.gz", "rank-1.json.gz"]) {
    const content = fs.readFileSync(path.join(TWO_RANKS, name)).toString("base64");
    await put(request, `${folder}/${name}`, { type: "file", format: "base64", content });
  }
}

async function record(
  request: APIRequestContext,
  folder: string,
  status: string,
  title: string,
): Promise<void> {
  const rec = { format: "jupyter_traceview.run/1", name: "loss_fn", title, status, error: null };
  await text(request, `${folder}/.traceview-run.json`, JSON.stringify(rec));
}

/** Write the three runs under `root` (a folder on the server, created if needed). */
export async function writeNoteRuns(request: APIRequestContext, root: string): Promise<NoteRuns> {
  const runs: NoteRuns = {
    skipped: `${root}/skipped`,
    failed: `${root}/traceview-runs/loss_fn/20260101-120000`,
    good: `${root}/traceview-runs/loss_fn/20260101-130000`,
    failedTitle: "loss = loss_fn(model(x), y)",
    goodTitle: "loss = loss_fn(model(x_valid), y_valid)",
  };
  await twoRanks(request, runs.skipped);
  await text(request, `${runs.skipped}/rank-2.json`, '{"traceEvents": [{"ph": "X", "name": "a"');
  await text(request, `${runs.skipped}/.traceview-load.json`, '{"on_error": "skip"}');
  await twoRanks(request, runs.failed);
  await record(request, runs.failed, "error", runs.failedTitle);
  await twoRanks(request, runs.good);
  await record(request, runs.good, "ok", runs.goodTitle);
  return runs;
}
