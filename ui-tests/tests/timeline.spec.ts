// The timeline on the bundled 8-rank DLRM traces, driven like a user would in JupyterLab:
// first paint, zoom, pan, hover, click-to-select read back from Python, search, themes.
import { expect, test } from "@jupyterlab/galata";
import {
  addCell,
  cellText,
  newNotebook,
  runCell,
  settled,
  timeline,
  visibleRange,
  writeArtifact,
} from "./helpers";

// Geometry of the canvas (js/timeline/view.ts): label gutter, axis band, rank header.
const GUTTER = 172;
const AXIS = 26;
const HEADER = 20;
const GPU_ROW = 18;

test.describe("Timeline on the 8-rank DLRM sample", () => {
  test("renders, zooms, pans, hovers, selects, searches, themes", async ({ page }) => {
    await newNotebook(page, "timeline.ipynb");
    await runCell(
      page,
      "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget",
    );

    // First paint: from running the cell to the first frame drawn with data.
    const cell = await addCell(page, "tl = tv.Timeline(trace, height=560)\ntl");
    const t0 = await page.evaluate(() => performance.now());
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const widget = timeline(page);
    await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
    const painted = Number(await widget.getAttribute("data-first-paint"));
    const firstPaintMs = painted - t0;
    writeArtifact(
      "first-paint.json",
      JSON.stringify(
        {
          trace: "dlrm_8rank_v100",
          first_paint_ms: firstPaintMs,
          window_ms: Number(await widget.getAttribute("data-window-ms")),
          kernel_ms: Number(await widget.getAttribute("data-kernel-ms")),
        },
        null,
        2,
      ),
    );
    console.log(
      `first paint of the 8-rank DLRM timeline: ${firstPaintMs.toFixed(0)} ms after the cell started`,
    );
    await page.notebook.waitForRun(1);

    const canvas = widget.locator("canvas");
    // Where things are on screen: recomputed after each cell run (the notebook may scroll).
    let box = { x: 0, y: 0, width: 0, height: 0 };
    let plotX = 0;
    let rowY = 0;
    const locate = async (): Promise<void> => {
      await canvas.scrollIntoViewIfNeeded();
      box = (await canvas.boundingBox())!;
      plotX = box.x + GUTTER + (box.width - GUTTER - 12) / 2;
      rowY = box.y + AXIS + HEADER + GPU_ROW / 2; // rank 0's first GPU stream (stream 7)
    };
    await locate();

    // Wheel zooms in around the pointer.
    const [lo0, hi0] = await visibleRange(widget);
    await page.mouse.move(plotX, rowY);
    await page.mouse.wheel(0, -400);
    await expect
      .poll(async () => {
        const [a, b] = await visibleRange(widget);
        return b - a;
      })
      .toBeLessThan((hi0 - lo0) * 0.6);

    // Drag pans (content follows the pointer: dragging left shows later times).
    const [lo1] = await visibleRange(widget);
    await page.mouse.move(plotX, rowY);
    await page.mouse.down();
    await page.mouse.move(plotX - 200, rowY, { steps: 8 });
    await page.mouse.up();
    await expect.poll(async () => (await visibleRange(widget))[0]).toBeGreaterThan(lo1);

    // W/S zoom with the keyboard; A/D pan.
    const [lo2, hi2] = await visibleRange(widget);
    await widget.focus();
    await page.keyboard.press("w");
    await expect
      .poll(async () => {
        const [a, b] = await visibleRange(widget);
        return b - a;
      })
      .toBeLessThan((hi2 - lo2) * 0.95);
    const [lo3] = await visibleRange(widget);
    await page.keyboard.press("d");
    await expect.poll(async () => (await visibleRange(widget))[0]).toBeGreaterThan(lo3);

    // Python moves the view onto one known kernel of rank 0's stream 7 (eid 459, 8 us).
    await runCell(
      page,
      "k = trace.events(0).set_index('eid').loc[459]\n" +
        "tl.show_range(int(k.ts_ns) - 4_000, int(k.ts_ns) + int(k.dur_ns) + 4_000)\nprint(k['name'][:40])",
    );
    await expect
      .poll(async () => {
        const [a, b] = await visibleRange(widget);
        return b - a;
      })
      .toBeLessThan(20_000);
    await settled(widget); // the window for the new range arrives
    await locate();

    // Hover shows a tooltip naming the kernel, its duration and its launching operator.
    await page.mouse.move(plotX, rowY);
    const tooltip = widget.locator(".tv-tooltip");
    await expect(tooltip).toBeVisible();
    await expect(tooltip).toContainText("gemmSN_TN_kernel");
    await expect(tooltip).toContainText("duration8 us"); // format.ts: 3 significant digits, no trailing zeros
    await expect(tooltip).toContainText("aten::addmm");

    // Click selects it; Python reads the selection.
    await page.mouse.click(plotX, rowY);
    await expect(widget.locator(".tv-status")).toContainText("gemmSN_TN_kernel");
    const sel = await runCell(page, "print(tl.selection.rank, tl.selection.stream, tl.selection.event)");
    expect(await cellText(page, sel)).toContain("0 7 459");
    await page.mouse.move(box.x + 5, box.y + 5);
    await locate();

    // Search highlights every match (NCCL kernels and calls), counted by the kernel.
    await widget.locator(".tv-search").fill("nccl");
    await expect(widget.locator(".tv-search-count")).toContainText("match");
    // The count comes from the kernel, after the pattern has reached it.
    await expect.poll(async () => Number(await widget.getAttribute("data-search-count"))).toBeGreaterThan(0);
    const count = Number(await widget.getAttribute("data-search-count"));
    await widget.locator("button", { hasText: "Fit" }).click();
    await expect.poll(async () => Number(await widget.getAttribute("data-match-rects"))).toBeGreaterThan(0);
    const py = await runCell(page, "print(tl.search, tl.index.count_matches('nccl'))");
    expect(await cellText(page, py)).toContain(`nccl ${count}`);

    // Shift+drag measures a range and summarises it per kind.
    await locate();
    await page.keyboard.down("Shift");
    await page.mouse.move(box.x + GUTTER + 100, rowY);
    await page.mouse.down();
    await page.mouse.move(box.x + GUTTER + 500, rowY, { steps: 6 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    await expect(widget.locator(".tv-summary")).toBeVisible();
    const rng = await runCell(
      page,
      "print(tl.selection.range is not None and tl.selection.range[1] > tl.selection.range[0])",
    );
    expect(await cellText(page, rng)).toContain("True");

    // Light and dark screenshots (artefacts).
    await page.theme.setLightTheme();
    await expect(widget).not.toHaveClass(/tv-dark/);
    await settled(widget);
    writeArtifact("timeline-light.png", await widget.screenshot());
    await page.theme.setDarkTheme();
    await expect(widget).toHaveClass(/tv-dark/); // the canvas follows JupyterLab's theme
    await settled(widget);
    writeArtifact("timeline-dark.png", await widget.screenshot());
    await page.theme.setLightTheme();
  });
});
