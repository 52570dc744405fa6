// Cross-rank collectives on the 8-rank DLRM sample (issue 16): clicking an NCCL all-reduce
// kernel highlights the same all-reduce on every rank and marks the rank that arrived last.
// The sample's second all-reduce starts on ranks 0-3 and 6 at about 17.10 ms, on rank 7 at
// 17.23 ms, rank 4 at 17.63 ms and rank 5 at 17.68 ms, and ends everywhere at about 17.70 ms:
// rank 5 is the straggler, 584 us after rank 3 (tests/views/test_timeline_collective.py).
import { expect, test } from "@jupyterlab/galata";
import { addCell, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

const GUTTER = 172;
const AXIS = 26;

test.describe("Cross-rank collectives", () => {
  test("selecting an all-reduce highlights it on every rank and marks the last arrival", async ({ page }) => {
    await newNotebook(page, "timeline-collective.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget");
    const cell = await addCell(page, "tl = tv.Timeline(trace, cpu=False)\ntl");
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const widget = timeline(page);
    await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
    await page.notebook.waitForRun(cell);
    // Show 16.9-17.9 ms since the trace's origin: the second all-reduce on every rank.
    await runCell(page, "tl.show_range(tl.t0_ns + 16_900_000, tl.t0_ns + 17_900_000)");
    const canvas = widget.locator("canvas");
    await canvas.scrollIntoViewIfNeeded();
    await settled(widget);

    // Find rank 0's all-reduce kernel under the pointer at 17.69 ms (every rank is in it then).
    const box = (await canvas.boundingBox())!;
    const plotW = box.width - GUTTER - 12;
    const x = box.x + GUTTER + ((17_690_000 - 16_900_000) / 1_000_000) * plotW;
    const tooltip = widget.locator(".tv-tooltip");
    let found = -1;
    for (let y = box.y + AXIS + 4; y < box.y + box.height - 4 && found < 0; y += 6) {
      await page.mouse.move(x, y);
      if ((await tooltip.isVisible()) && (await tooltip.innerText()).includes("AllReduce")) found = y;
    }
    expect(found).toBeGreaterThan(0);
    await page.mouse.click(x, found);

    // The instance on all 8 ranks, rank 5 last; drawn on every rank shown, named in the status.
    await expect(widget).toHaveAttribute("data-collective-ranks", "0,1,2,3,4,5,6,7");
    await expect(widget).toHaveAttribute("data-collective-last", "5");
    await expect.poll(async () => Number(await widget.getAttribute("data-collective-drawn"))).toBeGreaterThan(1);
    const status = widget.locator(".tv-collective-line");
    await expect(status).toContainText("all_reduce on ranks 0-7");
    await expect(status).toContainText("last to arrive: rank 5, 584 us after rank 3");
    writeArtifact("collective.png", await canvas.screenshot());

    // Selecting a compute kernel (or nothing) drops the highlight.
    await page.keyboard.press("Escape");
    await expect(widget).toHaveAttribute("data-collective-ranks", "");
    await expect(status).toHaveCount(0);
  });
});
