// Formatting and path helpers of the Traces sidebar (js/labextension/format.ts).
import { describe, expect, it } from "vitest";
import {
  displayName,
  formatAge,
  formatProgress,
  importsTraceview,
  isUrl,
  loadCode,
  middleEllipsis,
  relativePath,
  REMOTE_READ_ONLY,
  RUN_STATUS_TEXT,
  matchesFilter,
  remoteDetail,
  remoteView,
  skippedText,
} from "../labextension/format";

describe("format", () => {
  it("ages, progress", () => {
    const now = 1_000_000 * 1000;
    expect(formatAge(1_000_000 - 3, now)).toBe("just now");
    expect(formatAge(1_000_000 - 42, now)).toBe("42 s ago");
    expect(formatAge(1_000_000 - 5 * 60, now)).toBe("5 min ago");
    expect(formatAge(1_000_000 - 3 * 3600, now)).toBe("3 h ago");
    expect(formatAge(1_000_000 - 86400, now)).toBe("yesterday");
    expect(formatAge(1_000_000 - 3 * 86400, now)).toBe("3 days ago");
    expect(formatProgress({ stage: "loading", done: 3, total: 8 })).toBe("loading 3/8 files");
    expect(formatProgress({ stage: "queued" }, 2)).toBe("queued (2nd in line)");
    expect(formatProgress({ stage: "queued" }, 13)).toBe("queued (13th in line)");
    expect(formatProgress({ stage: "analysing" })).toBe("analysing");
    expect(formatProgress(undefined)).toBe("waiting");
  });

  it("display names: NAME/timestamp for %%traceprofile runs", () => {
    expect(displayName("traceview-runs/train_step/20260101-120000", "traceprofile")).toBe(
      "train_step/20260101-120000",
    );
    expect(displayName("exp/dlrm", "folder")).toBe("dlrm");
    expect(displayName("one.json.gz", "file")).toBe("one.json.gz");
  });

  it("titled %%traceprofile runs: the --name or the cell's first line, cut in the middle", () => {
    const path = "traceview-runs/loss_fn/20260101-120000";
    expect(displayName(path, "traceprofile", "loss = loss_fn(model(x), y)")).toBe(
      "loss = loss_fn(model(x), y)",
    );
    expect(displayName(path, "traceprofile", "")).toBe("loss_fn/20260101-120000");
    expect(displayName("exp/dlrm", "folder", "ignored")).toBe("dlrm");
    expect(middleEllipsis("short", 10)).toBe("short");
    const cut = middleEllipsis("loss = loss_fn(model(batch_a), target_a)", 20);
    expect(Array.from(cut)).toHaveLength(20);
    expect(cut).toBe("loss = los…target_a)");
    // Two runs that a prefix cut would show alike stay apart.
    expect(middleEllipsis("out = loss_fn(model(x), labels_train)", 20)).not.toBe(
      middleEllipsis("out = loss_fn(model(x), labels_valid)", 20),
    );
  });

  it("what a run lacks: skipped files, a partial run", () => {
    expect(skippedText([{ path: "run/rank-2.json.gz", reason: "truncated" }])).toBe(
      "run/rank-2.json.gz: truncated",
    );
    expect(RUN_STATUS_TEXT.error?.badge).toBe("partial");
    expect(RUN_STATUS_TEXT.interrupted?.badge).toBe("interrupted");
    expect(RUN_STATUS_TEXT.ok).toBeUndefined();
  });
});

describe("load code", () => {
  it("paths relative to the notebook's folder", () => {
    expect(relativePath("", "runs/a")).toBe("runs/a");
    expect(relativePath("runs", "runs/a")).toBe("a");
    expect(relativePath("nb/deep", "runs/a")).toBe("../../runs/a");
    expect(relativePath("runs/a", "runs/a")).toBe(".");
    expect(relativePath("runs/a/b", "runs/a")).toBe("..");
    expect(relativePath("./x/", "x/y")).toBe("y");
  });

  it("imports tv unless a cell does", () => {
    expect(importsTraceview(["import numpy as np\nimport jupyter_traceview as tv"])).toBe(true);
    expect(importsTraceview(["import os, jupyter_traceview as tv"])).toBe(true);
    expect(importsTraceview(["import jupyter_traceview"])).toBe(false);
    expect(importsTraceview(["# import jupyter_traceview as tv"])).toBe(false);
    expect(loadCode("runs/a", "nb/x.ipynb", [])).toBe(
      'import jupyter_traceview as tv\n\ntrace = tv.load("../runs/a")',
    );
    expect(loadCode("runs/a", "x.ipynb", ["import jupyter_traceview as tv"])).toBe(
      'trace = tv.load("runs/a")',
    );
  });

  it("quotes paths as Python string literals", () => {
    expect(loadCode('we"ird\\name', "x.ipynb", ["import jupyter_traceview as tv"])).toBe(
      'trace = tv.load("we\\"ird\\\\name")',
    );
  });

  it("a run in object storage: its URL as it is in the load code, never made relative", () => {
    expect(isUrl("s3://runs/team/dlrm")).toBe(true);
    expect(isUrl("gs://b/p")).toBe(true);
    expect(isUrl("runs/s3:/x")).toBe(false);
    expect(isUrl("C:/runs")).toBe(false);
    expect(loadCode("s3://runs/team/dlrm", "nb/deep/x.ipynb", ["import jupyter_traceview as tv"])).toBe(
      'trace = tv.load("s3://runs/team/dlrm")',
    );
    expect(loadCode("s3://runs/team/dlrm", "x.ipynb", [])).toBe(
      'import jupyter_traceview as tv\n\ntrace = tv.load("s3://runs/team/dlrm")',
    );
  });

  it("a remote run's line and why it is read-only", () => {
    const now = 1_000_000 * 1000;
    const row = { files: 8, size: 446_464, mtime: 1_000_000 - 5 * 60, kind: "folder" };
    expect(remoteDetail(row, now)).toBe("8 files · 436 KiB · 5 min ago");
    expect(remoteDetail({ ...row, files: 1, mtime: 0 }, now)).toBe("1 file · 436 KiB");
    expect(remoteDetail({ ...row, kind: "dataset" }, now)).toBe("dataset · 5 min ago");
    expect(REMOTE_READ_ONLY).toMatch(/read-only/);
    expect(REMOTE_READ_ONLY).toMatch(/Open shows its dashboard, read by the Jupyter server/);
    expect(REMOTE_READ_ONLY).toMatch(/Baselines and notes are for local runs/);
  });

  it("the object storage section: hidden without remote roots, errors named, rows read-only", () => {
    const now = 1_000_000 * 1000;
    expect(remoteView({ runs: [], errors: [], truncated: false }, null, now).hidden).toBe(true);
    const run = { url: "s3://b/runs/a", name: "a", kind: "folder", files: 2, size: 2048, mtime: 0 };
    const view = remoteView(
      {
        runs: [run],
        errors: [{ root: "s3://denied/x", message: "s3://denied/x: access denied. Check" }],
        truncated: true,
      },
      null,
      now,
    );
    expect(view.hidden).toBe(false);
    expect(view.problems).toEqual(["Cannot list s3://denied/x: access denied. Check"]);
    const other = remoteView(
      { runs: [], errors: [{ root: "s3://a/b", message: "timeout" }], truncated: false },
      null,
      now,
    );
    expect(other.problems).toEqual(["Cannot list s3://a/b: timeout"]);
    expect(view.rows).toEqual([
      {
        url: "s3://b/runs/a",
        name: "a",
        kind: "folder",
        detail: "2 files · 2 KiB",
        tooltip: `s3://b/runs/a\n${REMOTE_READ_ONLY}`,
      },
    ]);
    expect(view.filteredOut).toBe(0);
    expect(view.truncated).toBe(true);
    const failed = remoteView(null, "The Jupyter server cannot be reached", now);
    expect(failed).toEqual({
      hidden: false,
      problems: ["Cannot list runs in object storage: The Jupyter server cannot be reached"],
      rows: [],
      filteredOut: 0,
      truncated: false,
    });
  });

  it("the sidebar's filter applies to the runs in object storage as to the local ones", () => {
    const now = 1_000_000 * 1000;
    const runs = [
      { url: "s3://b/team/bert", name: "bert", kind: "folder", files: 1, size: 10, mtime: 0 },
      {
        url: "s3://b/team/llama/rank-0.json",
        name: "rank-0.json",
        kind: "file",
        files: 1,
        size: 10,
        mtime: 0,
      },
      { url: "s3://b/exports/llama", name: "llama", kind: "dataset", files: 1, size: 10, mtime: 0 },
    ];
    const listing = { runs, errors: [], truncated: false };
    const urls = (filter: string) => remoteView(listing, null, now, filter).rows.map((r) => r.url);
    expect(urls("")).toEqual(runs.map((r) => r.url));
    expect(urls("LLAMA")).toEqual(["s3://b/team/llama/rank-0.json", "s3://b/exports/llama"]);
    expect(urls("llama dataset")).toEqual(["s3://b/exports/llama"]);
    expect(urls("team   bert")).toEqual(["s3://b/team/bert"]);
    const none = remoteView(listing, null, now, "my-tmp-folder");
    // Filtered out, not hidden: the section says how many runs the filter leaves out.
    expect([none.hidden, none.rows.length, none.filteredOut]).toEqual([false, 0, 3]);
    expect(matchesFilter("a/b folder ready", "  ")).toBe(true);
    expect(matchesFilter("a/b folder ready", "B READY")).toBe(true);
    expect(matchesFilter("a/b folder ready", "b c")).toBe(false);
  });
});
