// UI benchmark (a measurement, not a timed assertion): how long the timeline takes to draw
// a window of at least 10,000 event rectangles in Chromium. Writes
// artifacts/draw-benchmark.json.
import { expect, test } from "@jupyterlab/galata";
import * as path from "path";
import { REPO, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

const TARGET_RECTS = 10_000;

// A wide screen: each row may hold about 0.5 raw event per pixel of (fetched) width before
// it is merged per pixel column, so 10,000 raw rectangles need a wide plot and many rows.
test.use({ viewport: { width: 2400, height: 1400 } });

test("draw time of a 10,000-rectangle window", async ({ page }) => {
  await newNotebook(page, "bench.ipynb");
  const benchmarks = path.join(REPO, "benchmarks");
  await runCell(
    page,
    [
      "import sys, tempfile",
      `sys.path.insert(0, ${JSON.stringify(benchmarks)})`,
      "import synth, jupyter_traceview as tv",
      "folder = tempfile.mkdtemp()",
      "synth.generate(__import__('pathlib').Path(folder), 8, 150_000, workers=1)",
      "trace = tv.load(folder, cache=False)",
      "tl = tv.Timeline(trace, height=1500)",
      // Every CPU thread its own row (above 4 ranks they start folded): 10,000 raw events
      // in one frame need the rows.
      "tl.cpu_collapsed = []",
      "tl",
    ].join("\n"),
  );
  const widget = timeline(page);
  await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 120000 });
  await widget.focus();

  // Zoom in (W) until one frame holds at least TARGET_RECTS raw events' rectangles (rows
  // switch from per-pixel bins to raw events as the zoom deepens).
  let rects = 0;
  for (let i = 0; i < 60 && rects < TARGET_RECTS; i++) {
    await page.keyboard.press("w");
    await settled(widget); // the new window arrives and is drawn
    rects = Number(await widget.getAttribute("data-draw-raw-rects"));
  }
  expect(rects).toBeGreaterThanOrEqual(TARGET_RECTS);
  await settled(widget);

  const result = await widget.evaluate(async (el) => {
    const draw = (el as unknown as { traceviewDraw: () => number }).traceviewDraw;
    const times: number[] = [];
    let drawn = 0;
    const rafIntervals = async (work: () => void): Promise<number[]> => {
      const out: number[] = [];
      await new Promise<void>((resolve) => {
        let last = 0;
        let n = 0;
        const step = (now: number) => {
          if (last) out.push(now - last);
          last = now;
          work();
          if (++n < 61) requestAnimationFrame(step);
          else resolve();
        };
        requestAnimationFrame(step);
      });
      return out;
    };
    for (let i = 0; i < 5; i++) draw(); // warm-up
    // 1. The draw call itself (JS, path building and canvas commands), back to back.
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      drawn = draw();
      times.push(performance.now() - t);
    }
    // 2. Whole frames: drawing in requestAnimationFrame, rasterised and composited, against
    //    the same page's frames without drawing (headless software raster sets the pace).
    const idle = await rafIntervals(() => undefined);
    const canvas = el.querySelector("canvas")!;
    const ctx = canvas.getContext("2d")!;
    const clearOnly = await rafIntervals(() => {
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
    });
    const frames = await rafIntervals(() => draw());
    return { times, frames, idle, clearOnly, drawn };
  });
  const sorted = [...result.times].sort((a, b) => a - b);
  const pct = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const frames = [...result.frames].sort((a, b) => a - b);
  const idle = [...result.idle].sort((a, b) => a - b);
  const clearOnly = [...result.clearOnly].sort((a, b) => a - b);
  const summary = {
    rectangles: result.drawn,
    event_rectangles: Number(await widget.getAttribute("data-draw-raw-rects")),
    raw_events_fetched: Number(await widget.getAttribute("data-raw-events")),
    draw_ms: { p50: pct(0.5), p95: pct(0.95), max: sorted[sorted.length - 1] },
    frame_interval_ms: {
      p50: frames[Math.floor(frames.length / 2)],
      p95: frames[Math.floor(frames.length * 0.95)],
    },
    clear_only_frame_interval_ms: {
      p50: clearOnly[Math.floor(clearOnly.length / 2)],
      p95: clearOnly[Math.floor(clearOnly.length * 0.95)],
    },
    idle_frame_interval_ms: {
      p50: idle[Math.floor(idle.length / 2)],
      p95: idle[Math.floor(idle.length * 0.95)],
    },
    canvas_css_px: await widget
      .locator("canvas")
      .evaluate((c) => [(c as HTMLCanvasElement).clientWidth, (c as HTMLCanvasElement).clientHeight]),
    device_pixel_ratio: await page.evaluate(() => window.devicePixelRatio),
    browser: "chromium (headless, --disable-gpu: software raster)",
  };
  writeArtifact("draw-benchmark.json", JSON.stringify(summary, null, 2));
  console.log(
    `draw of ${summary.event_rectangles} event rectangles (${result.drawn} in all): p50 ${summary.draw_ms.p50.toFixed(2)} ms, p95 ${summary.draw_ms.p95.toFixed(2)} ms; frame interval p50 ${summary.frame_interval_ms.p50?.toFixed(1)} ms`,
  );
});
