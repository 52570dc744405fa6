// The timeline's memory lane on a CPU profile_memory recording (tests/data/cpu_memory):
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
    JSON.parse((await widget.getAttribute("data-memory-lanes")) ?? "[]") as LaneOnScreen[];
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

test("the Memory tab's peak link opens the timeline at the peak with the device's lane in view", async ({
  page,
}) => {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await newNotebook(page, "memory-link.ipynb");
  const folder = path.join(REPO, "tests", "data", "h100_bert_small");
  await runCell(page, `import jupyter_traceview as tv\ntrace = tv.load(${JSON.stringify(folder)})`);
  await runCell(page, "dash = tv.Dashboard(trace)\ndash");
  const dash = page.locator(".tvd-dashboard").last();
  await dash.locator('.tvd-tab[data-tab="memory"]').click();
  const panel = dash.locator('.tvd-panel[data-tab="memory"]');
  await expect(panel).toHaveAttribute("data-state", "ready", { timeout: 120_000 });
  await expect(panel.locator('.tvd-chart[data-chart="memory_timeline"]')).toHaveAttribute("data-drawn", "1");
  // Select the CUDA:0 peak's marker as a click on it does (the chart's link source, tagged for the timeline).
  const picked = await page.evaluate(() => {
    type Src = { tags: unknown[]; data: Record<string, unknown[]>; selected: { indices: number[] } };
    const all = Object.values(window.Bokeh ?? {}).flatMap((b) =>
      b && typeof b === "object" && "documents" in b ? ((b as { documents?: unknown[] }).documents ?? []) : [],
    ) as { all_models: Iterable<unknown> }[];
    for (const doc of all)
      for (const m of doc.all_models) {
        const s = m as Src;
        if (!Array.isArray(s.tags) || !s.tags.includes("traceview-link:event") || !s.data?.link_device_type) continue;
        const i = s.data.link_device_type.indexOf("CUDA");
        if (i < 0) continue;
        s.selected.indices = [i];
        return true;
      }
    return false;
  });
  expect(picked).toBe(true);
  await expect(dash).toHaveAttribute("data-tab", "timeline", { timeout: 30000 });
  const widget = dash.locator(".tv-timeline");
  await settled(widget);
  const lanes = async (): Promise<LaneOnScreen[]> =>
    JSON.parse((await widget.getAttribute("data-memory-lanes")) ?? "[]") as LaneOnScreen[];
  // The CUDA:0 lane (id 1: CPU comes first) is on screen with its peak in the window.
  await expect
    .poll(async () => (await lanes()).filter((l) => l.id === 1 && l.peakX !== null).length, { timeout: 30000 })
    .toBe(1);
  writeArtifact("memory-peak-link.png", await widget.screenshot());
  expect(errors).toEqual([]);
});
