// Folded CPU threads (issue 16): above four ranks each rank's CPU threads open folded into one
// row, a summary computed in the kernel over all the rank's threads (views/timeline/fold.py).
// Hovering it tells how many threads there are and work there and what takes the time (the
// `_fold` command); clicking it unfolds the rank's threads.
import { expect, test } from "@jupyterlab/galata";
import { cellText, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

test("a folded CPU row summarises every thread of its rank", async ({ page }) => {
  await newNotebook(page, "timeline-fold.ipynb");
  await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\ntl = tv.Timeline(trace, height=560)\ntl");
  const widget = timeline(page);
  await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
  await settled(widget);
  const py = async (code: string): Promise<string> => (await cellText(page, await runCell(page, code))).trim();
  // Rank 0's CPU threads, and what its folded row holds over the whole trace (the kernel's answer).
  const threads = Number(await py("print(sum(1 for l in tl._lanes if l['rank'] == 0 and l['type'] == 'cpu'))"));
  expect(threads).toBeGreaterThan(1);
  expect(await py("print(tl.cpu_collapsed)")).toContain("[0, 1, 2, 3, 4, 5, 6, 7]");
  await widget.scrollIntoViewIfNeeded();
  await settled(widget);

  // Find rank 0's folded row by hovering down the plot: its tooltip names the rank and its threads.
  const canvas = widget.locator("canvas");
  const box = (await canvas.boundingBox())!;
  const x = box.x + 172 + (box.width - 172) * 0.45;
  let y = -1;
  for (let dy = 30; dy < 400 && y < 0; dy += 4) {
    await page.mouse.move(x, box.y + dy);
    const hover = (await widget.getAttribute("data-hover")) ?? "";
    if (hover.startsWith("rank 0:") && hover.includes("CPU threads folded")) y = box.y + dy;
  }
  expect(y).toBeGreaterThan(0);
  const tooltip = widget.locator(".tv-tooltip");
  await expect(tooltip).toContainText(`rank 0: ${threads} CPU threads folded`);
  // The kernel's `_fold` answer for the column under the pointer: threads working, top names.
  await expect(tooltip).toContainText(`of ${threads} threads`);
  await expect(tooltip).toContainText("click to unfold");
  writeArtifact("timeline-fold-tooltip.png", await widget.screenshot());

  // The same column from Python agrees on the threads (the tooltip shows the kernel's figures).
  const working = (await tooltip.locator("tr", { hasText: "working" }).locator("td").textContent()) ?? "";
  const active = Number(working.split(" of ")[0]);
  expect(active).toBeGreaterThanOrEqual(0);
  expect(active).toBeLessThanOrEqual(threads);

  // A click unfolds the rank's threads (the others stay folded).
  await page.mouse.click(x, y);
  await expect.poll(() => py("print(tl.cpu_collapsed)")).toContain("[1, 2, 3, 4, 5, 6, 7]");
  await settled(widget);
  await page.mouse.move(x, y);
  await expect(widget).not.toHaveAttribute("data-hover", /CPU threads folded/);
});
