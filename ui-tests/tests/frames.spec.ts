// UI benchmark (a measurement, not a timed assertion): frame times of the timeline while it is
// zoomed with the wheel and panned by dragging, on a big trace in a live kernel. Records in the
// page, for every frame drawn, the time the draw took (the view's data-draw-ms) and the
// requestAnimationFrame intervals, and for every wheel step the time from the wheel event to
// its final picture (the first frame drawn with a window fitting the view: data-loading="0").
// Writes artifacts/frames-benchmark.json.
//
// The trace: TRACEVIEW_FRAMES_TRACE, else benchmarks/.data/synth_4x130000 (4 ranks, ~150 MB of
// JSON), generated with benchmarks/synth.py when missing. A set named with TRACEVIEW_FRAMES_TRACE
// (e.g. the 64 ranks x 1M events of benchmarks/.data/synth_64x1000000, 18.6 GB of JSON: run it
// under `flock /work/big.lock` on a shared machine) is loaded without the parse cache and gets
// long timeouts (loading it takes minutes); CI runs only the default set.
import { expect, test } from "@jupyterlab/galata";
import * as fs from "fs";
import * as path from "path";
import { REPO, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

test.use({ viewport: { width: 1600, height: 1100 } });
const BIG = process.env.TRACEVIEW_FRAMES_TRACE !== undefined;
test.setTimeout(BIG ? 3_000_000 : 600_000);

const TRACE = process.env.TRACEVIEW_FRAMES_TRACE ?? path.join(REPO, "benchmarks", ".data", "synth_4x130000");
const loadAverage = () => fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const WHEEL_STEPS = 16;
const WHEEL_PAUSE_MS = 250;

interface Recorded {
  draws: { t: number; ms: number; loading: string; phase: string }[];
  frames: { t: number; phase: string }[];
  wheels: { t: number; finalMs: number | null }[];
  windows: {
    seq: number;
    prefetch: boolean;
    sent: number;
    received: number;
    decoded: number;
    kernelAt: number | null;
    kernelMs: number;
    kernelCpuMs: number | null;
    bytes: number;
  }[];
}

const quantile = (xs: number[], q: number): number | null => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const stats = (xs: number[]) => ({
  n: xs.length,
  p50: quantile(xs, 0.5),
  p95: quantile(xs, 0.95),
  max: xs.length ? Math.max(...xs) : null,
  over_16ms: xs.filter((x) => x > 16).length,
});
// Frame intervals: at 60 Hz one is 16.7 ms; over 25 ms, at least one frame was missed.
const intervalStats = (xs: number[]) => {
  const { over_16ms: _, ...rest } = stats(xs);
  return { ...rest, missed_frames: xs.filter((x) => x > 25).length };
};

test("frame times of wheel zoom and drag on a big trace", async ({ page }) => {
  const loadBefore = loadAverage();
  await newNotebook(page, "frames.ipynb");
  const benchmarks = path.join(REPO, "benchmarks");
  await runCell(
    page,
    [
      "import os, sys, time, pathlib",
      `sys.path.insert(0, ${JSON.stringify(benchmarks)})`,
      "import synth, jupyter_traceview as tv",
      `folder = pathlib.Path(${JSON.stringify(TRACE)})`,
      // One line each: the editor would re-indent a block typed into the cell.
      "None if any(folder.glob('*.json*')) else synth.generate(folder, 4, 130_000, workers=1)",
      `t = time.perf_counter(); trace = tv.load(folder, cache=${BIG ? "False" : "True"}); load_s = time.perf_counter() - t`,
      "size_mb = sum(p.stat().st_size for p in folder.glob('*.json*')) / 1e6",
      "tl = tv.Timeline(trace, height=900)",
      "tl",
    ].join("\n"),
  );
  const widget = timeline(page);
  await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: BIG ? 2_400_000 : 300_000 });
  await settled(widget);
  const info = await runCell(
    page,
    "print(f'{size_mb:.1f} MB of JSON, {len(trace.ranks)} ranks, {int(tl.index.row_ptr[-1]):,} events, " +
      "load {load_s:.1f} s, {len(tl.collapsed)} ranks collapsed, {len(tl.cpu_collapsed)} with CPU threads folded')",
  );
  const infoText = (await page.notebook.getCellTextOutput(info))?.join("\n") ?? "";
  await widget.scrollIntoViewIfNeeded();
  await settled(widget);

  // Record in the page: each draw (the view rewrites data-draw-ms on every frame it draws),
  // each animation frame, and each wheel event's time to its final picture.
  await widget.evaluate((el) => {
    const root = el as HTMLElement;
    const rec: Recorded & { phase: string; pending: { t: number; finalMs: number | null }[] } = {
      draws: [],
      frames: [],
      wheels: [],
      windows: [],
      phase: "idle",
      pending: [],
    };
    (window as unknown as { __tvFrames: typeof rec }).__tvFrames = rec;
    new MutationObserver(() => {
      const t = performance.now();
      const loading = root.dataset.loading ?? "";
      rec.draws.push({ t, ms: Number(root.dataset.drawMs), loading, phase: rec.phase });
      if (loading === "0") {
        for (const w of rec.pending) w.finalMs = t - w.t;
        rec.pending = [];
      }
    }).observe(root, { attributes: true, attributeFilter: ["data-draw-ms"] });
    root.querySelector("canvas")!.addEventListener(
      "wheel",
      () => {
        // Only the last wheel step before a picture counts once (earlier ones share it).
        const w = { t: performance.now(), finalMs: null };
        rec.wheels.push(w);
        rec.pending.push(w);
      },
      { capture: true },
    );
    root.addEventListener("tv-window", (e) => {
      rec.windows.push((e as CustomEvent<Recorded["windows"][number]>).detail);
    });
    const loop = (t: number) => {
      rec.frames.push({ t, phase: rec.phase });
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  });
  const setPhase = (phase: string) =>
    page.evaluate((p) => {
      (window as unknown as { __tvFrames: { phase: string } }).__tvFrames.phase = p;
    }, phase);

  const canvas = widget.locator("canvas");
  const box = (await canvas.boundingBox())!;
  const y = box.y + 200;
  // 1. Wheel: zoom in step by step around a point, then out around another, pausing like a hand.
  await setPhase("wheel");
  await page.mouse.move(box.x + box.width * 0.55, y);
  for (let i = 0; i < WHEEL_STEPS; i++) {
    await page.mouse.wheel(0, -150);
    await page.waitForTimeout(WHEEL_PAUSE_MS);
  }
  await page.mouse.move(box.x + box.width * 0.35, y);
  for (let i = 0; i < WHEEL_STEPS; i++) {
    await page.mouse.wheel(0, 150);
    await page.waitForTimeout(WHEEL_PAUSE_MS);
  }
  await settled(widget);
  // 2. Drag: zoomed in 8x, pan right then left, 40 moves each way.
  await setPhase("idle");
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -120);
  await settled(widget);
  await setPhase("drag");
  await page.mouse.move(box.x + box.width * 0.7, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.2, y, { steps: 40 });
  await page.mouse.move(box.x + box.width * 0.8, y, { steps: 40 });
  await page.mouse.up();
  await setPhase("idle");
  await settled(widget);

  const rec = await page.evaluate(() => (window as unknown as { __tvFrames: Recorded }).__tvFrames);
  const drawsIn = (phase: string) => rec.draws.filter((d) => d.phase === phase).map((d) => d.ms);
  const intervals = (phase: string) => {
    const ts = rec.frames.filter((f) => f.phase === phase).map((f) => f.t);
    return ts.slice(1).map((t, i) => t - ts[i]!);
  };
  const finals = rec.wheels.map((w) => w.finalMs).filter((x): x is number => x !== null);
  // Where a slow wheel step's time went: the window that ended it is the last one received
  // before its final picture; before it was sent the step waited (coalesced behind another
  // request), then the request travelled to the kernel and waited there (to_kernel), the
  // kernel answered (kernel: wall, kernel_cpu: its CPU time), the answer came back and was
  // decoded (back), and the frame was drawn (draw).
  const round = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
  const breakdown = (w: { t: number; finalMs: number | null }) => {
    const end = w.t + (w.finalMs ?? 0);
    const win = [...rec.windows].reverse().find((r) => r.decoded <= end + 1 && r.received >= w.t);
    if (!win) return { final_ms: round(w.finalMs), window: null };
    const kernelAt = win.kernelAt;
    return {
      final_ms: round(w.finalMs),
      prefetch: win.prefetch,
      wait_before_send: round(win.sent - w.t),
      to_kernel: kernelAt === null ? null : round(kernelAt - win.sent),
      kernel: round(win.kernelMs),
      kernel_cpu: round(win.kernelCpuMs),
      back: kernelAt === null ? null : round(win.received - (kernelAt + win.kernelMs)),
      decode: round(win.decoded - win.received),
      draw: round(end - win.decoded),
      bytes: win.bytes,
    };
  };
  const slowWheels = rec.wheels.filter((w) => (w.finalMs ?? 0) > 100).map(breakdown);
  const winStat = (f: (r: Recorded["windows"][number]) => number | null) =>
    stats(rec.windows.map(f).filter((x): x is number => x !== null));
  const summary = {
    trace: TRACE,
    trace_info: infoText.trim(),
    load_average_before_after: [loadBefore, loadAverage()],
    wheel_steps: rec.wheels.length,
    wheel_final_picture_ms: { ...stats(finals), over_100ms: finals.filter((x) => x > 100).length },
    wheel_draw_ms: stats(drawsIn("wheel")),
    drag_draw_ms: stats(drawsIn("drag")),
    wheel_frame_interval_ms: intervalStats(intervals("wheel")),
    drag_frame_interval_ms: intervalStats(intervals("drag")),
    drag_frames_drawn: drawsIn("drag").length,
    requests: Number(await widget.getAttribute("data-requests")),
    wheel_final_each_ms: rec.wheels.map((w) => round(w.finalMs)),
    slow_wheel_steps: slowWheels,
    window_round_trip_ms: winStat((r) => r.received - r.sent),
    window_to_kernel_ms: winStat((r) => (r.kernelAt === null ? null : r.kernelAt - r.sent)),
    window_kernel_ms: winStat((r) => r.kernelMs),
    window_kernel_cpu_ms: winStat((r) => r.kernelCpuMs),
    window_back_ms: winStat((r) => (r.kernelAt === null ? null : r.received - r.kernelAt - r.kernelMs)),
    window_bytes: winStat((r) => r.bytes),
    last_kernel_ms: Number(await widget.getAttribute("data-kernel-ms")),
    canvas_css_px: await canvas.evaluate((c) => [c.clientWidth, c.clientHeight]),
    browser: "chromium (headless, --disable-gpu: software raster)",
    note:
      "draw_ms: script time of each frame drawn; frame_interval: requestAnimationFrame " +
      "intervals (raster and compositing included); final picture: wheel event to the first " +
      "frame drawn with a window fitting the view",
  };
  writeArtifact("frames-benchmark.json", JSON.stringify(summary, null, 2));
  console.log(JSON.stringify(summary));
  // Sanity, not timing: the gestures were seen and drawn.
  expect(rec.wheels.length).toBeGreaterThanOrEqual(2 * WHEEL_STEPS);
  expect(drawsIn("drag").length).toBeGreaterThan(10);
});
