// The timeline's memory counter lane on a CPU profile_memory recording (tests/data/cpu_memory):
// the lane is drawn under the rank's lanes, its peak marked, and hovering it shows a size.
import { expect, test } from "@jupyterlab/galata";
import * as path from "path";
import { REPO, addCell, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

interface LaneOnScreen {
  id: number;
  y: number;
  peakX: number | null;
}

const SIZE = /\d+(\.\d+)? (B|KiB|MiB|GiB)/;

test("a memory trace's timeline draws its memory lane, with the size in the tooltip", async ({ page }) => {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await newNotebook(page, "memory-lane.ipynb");
  const folder = path.join(REPO, "tests", "data", "cpu_memory", "mlp_train");
  await runCell(page, `import jupyter_traceview as tv\ntrace = tv.load(${JSON.stringify(folder)})`);
  const cell = await addCell(page, "tl = tv.Timeline(trace, height=640)\ntl");
  await page.notebook.runCell(cell, { inplace: true, wait: false });
  const widget = timeline(page);
  await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
  await settled(widget);
  // Bring the lane (under the rank's CPU lanes) into view.
  await widget.locator(".tv-scroller").evaluate((el) => {
    el.scrollTop = el.scrollHeight;
  });
  await settled(widget);
  const lanes = async (): Promise<LaneOnScreen[]> =>
    JSON.parse((await widget.getAttribute("data-counter-lanes")) ?? "[]") as LaneOnScreen[];
  await expect.poll(async () => (await lanes()).length, { timeout: 30000 }).toBe(1);
  const [lane] = await lanes();
  expect(lane!.peakX).not.toBeNull(); // the whole trace is shown: its peak is in view

  const canvas = widget.locator("canvas");
  await canvas.scrollIntoViewIfNeeded();
  const box = (await canvas.boundingBox())!;
  // On the peak mark (the lane has a value there: the peak is a record).
  await page.mouse.move(box.x + lane!.peakX! + 0.5, box.y + lane!.y + 8);
  const tip = widget.locator(".tv-tooltip");
  await expect(tip).toBeVisible();
  await expect(tip.locator(".tv-tooltip-title")).toHaveText("memory · CPU");
  const text = (await tip.textContent()) ?? "";
  expect(text).toMatch(new RegExp(`allocated${SIZE.source}`));
  expect(text).toMatch(new RegExp(`peak${SIZE.source} at \\+`));
  writeArtifact("memory-lane.png", await widget.screenshot());
  expect(errors).toEqual([]);
});
