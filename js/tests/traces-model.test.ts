// The Traces sidebar's model (js/labextension/model.ts) over a mocked request layer:
// sorting, filtering, selection, keyboard moves, refresh and live refresh, error rows.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BUSY_INTERVAL_S, TracesModel, matches } from "../labextension/model";
import { TracesApiError } from "../labextension/tokens";
import type { BaselineRef, BaselineSet, RunRow, RunsListing } from "../labextension/messages";
import type { ITracesApi, ListOptions } from "../labextension/tokens";

function run(path: string, mtime: number, extra: Partial<RunRow> = {}): RunRow {
  return {
    path,
    name: path.split("/").pop()!,
    title: "",
    kind: "folder",
    files: 1,
    mtime,
    size: 100,
    status: "ready",
    figures: {
      ranks: 1,
      rank_ids: [0],
      devices: ["Test GPU"],
      t0_ns: "0",
      window: null,
      events: 10,
      cpu_ops: 4,
      kernels: 2,
      gpu_activities: 3,
      iterations: 1,
      steps: [1],
      step_median_ns: 1e6,
      gpu: true,
      job_span_ns: 1e6,
      span_ns: 1e6,
      trace_span_ns: 2e6,
      gpu_busy_pct: 60,
      gpu_busy_min_pct: 60,
      gpu_busy_max_pct: 60,
      idle_pct: 40,
      compute_pct: 50,
      exposed_comm_pct: 5,
      workload: "training",
      workload_evidence: "gradients are computed or applied: 2 backward operators; 1 optimizer steps.",
      skipped_files: [],
      run_status: "ok",
    },
    ...extra,
  };
}

/** A request layer answering from `listings` (the last one repeats) and recording calls. */
class MockApi implements ITracesApi {
  calls: ListOptions[] = [];
  constructor(public listings: (RunsListing | Error)[]) {}
  listRuns(options: ListOptions): Promise<RunsListing> {
    this.calls.push(options);
    const answer = this.listings.length > 1 ? this.listings.shift()! : this.listings[0]!;
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(structuredClone(answer));
  }
  dashboard(): never {
    throw new Error("not used");
  }
  baselines: { path: string; options: ListOptions & { name?: string } }[] = [];
  setBaseline(path: string, options: ListOptions & { name?: string }): Promise<BaselineSet> {
    this.baselines.push({ path, options });
    const baseline: BaselineRef = {
      name: options.name ?? "main",
      path,
      set_at: "2026-12-07T10:00:00+00:00",
      file: ".traceview-baselines.json",
    };
    // The server now lists it.
    const last = this.listings[this.listings.length - 1];
    if (last !== undefined && !(last instanceof Error)) last.baseline = baseline;
    return Promise.resolve({ baseline });
  }
}

const listing = (...runs: RunRow[]): RunsListing => ({ runs, truncated: false });

const THREE = listing(
  run("exp/old", 100),
  run("traceview-runs/train_step/20260101-120000", 300, { kind: "traceprofile" }),
  run("exp/broken", 200, { status: "error", message: "rank-0.json: truncated", figures: undefined }),
);

describe("TracesModel", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("lists runs newest first, error rows included", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    let changes = 0;
    model.changed.connect(() => (changes += 1));
    expect(model.listed).toBe(false);
    await model.refresh();
    expect(model.runs.map((r) => r.path)).toEqual([
      "traceview-runs/train_step/20260101-120000",
      "exp/broken",
      "exp/old",
    ]);
    expect(model.runs[1]!.status).toBe("error");
    expect(model.runs[1]!.message).toContain("truncated");
    expect(model.listed).toBe(true);
    expect(model.error).toBeNull();
    expect(changes).toBeGreaterThan(0);
  });

  it("sends the settings' roots (and no cache folder: that is the server's configuration)", async () => {
    const api = new MockApi([THREE]);
    const model = new TracesModel(api, {
      roots: ["exp", "traceview-runs"],
      refreshInterval: 5,
    });
    await model.refresh();
    expect(api.calls).toEqual([{ roots: ["exp", "traceview-runs"] }]);
    model.settings = { roots: ["exp"], refreshInterval: 5 };
    await vi.waitFor(() => expect(api.calls).toHaveLength(2)); // new roots: listed again at once
    expect(api.calls[1]).toEqual({ roots: ["exp"] });
  });

  it("filters by every term, case-insensitively, and keeps the selection to what is shown", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    await model.refresh();
    model.select("exp/old");
    model.select("exp/broken", "toggle");
    model.filter = "EXP";
    expect(model.visibleRuns.map((r) => r.path)).toEqual(["exp/broken", "exp/old"]);
    model.filter = "exp error";
    expect(model.visibleRuns.map((r) => r.path)).toEqual(["exp/broken"]);
    expect(model.selectedRuns.map((r) => r.path)).toEqual(["exp/broken"]);
    model.filter = "traceprofile";
    expect(model.visibleRuns).toHaveLength(1);
    expect(model.selectedRuns).toHaveLength(0);
    model.filter = "nothing-matches";
    expect(model.visibleRuns).toHaveLength(0);
    model.filter = "";
    expect(model.visibleRuns).toHaveLength(3);
  });

  it("matches on path, kind and status", () => {
    const r = run("a/b", 1, { kind: "traceprofile", status: "running" });
    expect(matches(r, "")).toBe(true);
    expect(matches(r, "a/ traceprofile running")).toBe(true);
    expect(matches(r, "ready")).toBe(false);
  });

  it("selects with clicks: replace, toggle, range", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    await model.refresh();
    const [newest, middle, oldest] = model.runs.map((r) => r.path) as [string, string, string];
    model.select(newest);
    expect(model.selectedRuns.map((r) => r.path)).toEqual([newest]);
    model.select(oldest, "range");
    expect(model.selectedRuns.map((r) => r.path)).toEqual([newest, middle, oldest]);
    model.select(middle, "toggle");
    expect(model.selectedRuns.map((r) => r.path)).toEqual([newest, oldest]);
    expect(model.activeRun?.path).toBe(middle);
    model.select(middle);
    expect(model.selectedRuns.map((r) => r.path)).toEqual([middle]);
    model.select("not/listed");
    expect(model.selectedRuns.map((r) => r.path)).toEqual([middle]);
    model.clearSelection();
    expect(model.selectedRuns).toHaveLength(0);
  });

  it("moves with the keyboard: arrows, Shift+arrows, Home/End, Space", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    await model.refresh();
    const paths = model.runs.map((r) => r.path);
    model.moveActive(1); // nothing active yet: the first row
    expect(model.activeRun?.path).toBe(paths[0]);
    model.moveActive(1);
    expect(model.selectedRuns.map((r) => r.path)).toEqual([paths[1]]);
    model.moveActive(5); // clamped
    expect(model.activeRun?.path).toBe(paths[2]);
    model.moveActive(-1, true); // Shift+Up from the anchor
    expect(model.selectedRuns.map((r) => r.path)).toEqual([paths[1], paths[2]]);
    model.moveActive("first");
    expect(model.selectedRuns.map((r) => r.path)).toEqual([paths[0]]);
    model.moveActive("last", true);
    expect(model.selectedRuns).toHaveLength(3);
    model.toggleActive();
    expect(model.selectedRuns.map((r) => r.path)).toEqual([paths[0], paths[1]]);
    model.selectAll();
    expect(model.selectedRuns).toHaveLength(3);
  });

  it("pairs two selected runs for a diff, the older as the baseline", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    await model.refresh();
    expect(model.diffPair()).toBeNull();
    model.select("traceview-runs/train_step/20260101-120000");
    model.select("exp/old", "toggle");
    expect(model.diffPair()!.map((r) => r.path)).toEqual([
      "exp/old",
      "traceview-runs/train_step/20260101-120000",
    ]);
    model.select("exp/broken", "toggle");
    expect(model.diffPair()).toBeNull();
  });

  it("refresh keeps the selection of runs still there, marks new runs, drops gone ones", async () => {
    const api = new MockApi([THREE, listing(run("exp/old", 100), run("exp/new", 400))]);
    const model = new TracesModel(api);
    await model.refresh();
    model.select("exp/old");
    model.select("exp/broken", "toggle");
    await model.refresh();
    expect(model.runs.map((r) => r.path)).toEqual(["exp/new", "exp/old"]);
    expect(model.selectedRuns.map((r) => r.path)).toEqual(["exp/old"]);
    expect(model.isNew("exp/new")).toBe(true);
    expect(model.isNew("exp/old")).toBe(false);
  });

  it("shares one request between concurrent refreshes", async () => {
    const api = new MockApi([THREE]);
    const model = new TracesModel(api);
    await Promise.all([model.refresh(), model.refresh(), model.refresh()]);
    expect(api.calls).toHaveLength(1);
  });

  it("reports a failed listing and keeps the runs it had", async () => {
    const api = new MockApi([
      THREE,
      new TracesApiError(403, "the path leads outside the server root"),
      THREE,
    ]);
    const model = new TracesModel(api);
    await model.refresh();
    await model.refresh();
    expect(model.error).toBe("the path leads outside the server root");
    expect(model.runs).toHaveLength(3);
    await model.refresh();
    expect(model.error).toBeNull();
  });

  it("does not signal a change when the listing is the same", async () => {
    const model = new TracesModel(new MockApi([THREE]));
    await model.refresh();
    let changes = 0;
    model.changed.connect(() => (changes += 1));
    await model.refresh();
    expect(changes).toBe(1); // the "loading" signal only
  });

  it("refreshes live at the settings' interval, every second while runs are analysed", async () => {
    const pending = listing(
      run("a", 1, { status: "running", progress: { stage: "loading", done: 1, total: 8 } }),
    );
    const api = new MockApi([pending, pending, listing(run("a", 1)), listing(run("a", 1), run("b", 2))]);
    const model = new TracesModel(api, { roots: [], refreshInterval: 30 });
    model.start();
    await vi.waitFor(() => expect(api.calls).toHaveLength(1));
    expect(model.pending).toBe(1);
    await vi.advanceTimersByTimeAsync(BUSY_INTERVAL_S * 1000);
    expect(api.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(BUSY_INTERVAL_S * 1000);
    expect(api.calls).toHaveLength(3);
    expect(model.pending).toBe(0);
    await vi.advanceTimersByTimeAsync(29_000); // idle: the settings' interval
    expect(api.calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(api.calls).toHaveLength(4);
    expect(model.runs.map((r) => r.path)).toEqual(["b", "a"]);
    expect(model.isNew("b")).toBe(true);
    model.stop();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(api.calls).toHaveLength(4);
  });

  it("does not refresh on its own with an interval of 0, nor after dispose", async () => {
    const api = new MockApi([THREE]);
    const model = new TracesModel(api, { roots: [], refreshInterval: 0 });
    model.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.calls).toHaveLength(1);
    model.settings = { roots: [], refreshInterval: 2 };
    await vi.advanceTimersByTimeAsync(2_000);
    expect(api.calls).toHaveLength(2);
    model.dispose();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(api.calls).toHaveLength(2);
    expect(model.isDisposed).toBe(true);
  });
});

describe("TracesModel with a baseline", () => {
  const BASE: BaselineRef = {
    name: "main",
    path: "exp/old",
    set_at: "2026-12-07T09:00:00+00:00",
    file: "exp/.traceview-baselines.json",
  };

  it("keeps the listing's baseline and pairs the one selected run with it", async () => {
    const verdict = { status: "running" as const, baseline: "exp/old", progress: { stage: "comparing" } };
    const api = new MockApi([
      { ...listing(run("exp/old", 100), run("exp/new", 300, { verdict })), baseline: BASE },
    ]);
    const model = new TracesModel(api);
    await model.refresh();
    expect(model.baseline).toEqual(BASE);
    expect(model.isBaseline("exp/old")).toBe(true);
    expect(model.isBaseline("exp/new")).toBe(false);
    expect(model.baselinePair()).toBeNull(); // nothing selected
    model.select("exp/new");
    expect(model.baselinePair()![0]).toBe("exp/old");
    expect(model.baselinePair()![1].path).toBe("exp/new");
    model.select("exp/old");
    expect(model.baselinePair()).toBeNull(); // the baseline itself
    // A comparison in progress keeps the list refreshing quickly, as an analysis does.
    expect(model.pending).toBe(1);
  });

  it("sets a run as the baseline through the server, then lists again", async () => {
    const api = new MockApi([listing(run("exp/old", 100), run("exp/new", 300))]);
    const model = new TracesModel(api, { roots: ["exp"], refreshInterval: 0 });
    await model.refresh();
    expect(model.baseline).toBeNull();
    const kept = await model.setBaseline("exp/new");
    expect(api.baselines).toEqual([{ path: "exp/new", options: { roots: ["exp"], name: undefined } }]);
    expect(kept.path).toBe("exp/new");
    expect(api.calls.length).toBe(2);
    expect(model.baseline?.path).toBe("exp/new");
  });

  it("drops the baseline when the server lists none", async () => {
    const api = new MockApi([
      { ...listing(run("exp/old", 100)), baseline: BASE },
      listing(run("exp/old", 100)),
    ]);
    const model = new TracesModel(api);
    await model.refresh();
    expect(model.baseline).not.toBeNull();
    await model.refresh();
    expect(model.baseline).toBeNull();
  });
});
