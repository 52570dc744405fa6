import { expect, test } from "@playwright/test";
import * as fs from "fs";

test("timeline in Notebook 7", async ({ page }) => {
  const nb = {
    cells: [
      { cell_type: "code", metadata: {}, execution_count: null, outputs: [], source: "import jupyter_traceview as tv\ntl = tv.Timeline(tv.load(tv.sample_path()), height=400)\ntl" },
      { cell_type: "code", metadata: {}, execution_count: null, outputs: [], source: "print(tl.x_range)" },
    ],
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  fs.writeFileSync("/tmp/nb7/root/t.ipynb", JSON.stringify(nb));
  await page.goto("/notebooks/t.ipynb");
  await page.waitForSelector(".jp-Notebook", { timeout: 60000 });
  await page.waitForTimeout(3000); // kernel start
  await page.locator(".jp-Cell").first().click();
  await page.keyboard.press("Escape");
  await page.keyboard.press("Shift+Enter");
  const w = page.locator(".tv-timeline");
  await expect(w).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
  const canvas = w.locator("canvas");
  const box = (await canvas.boundingBox())!;
  await page.mouse.move(box.x + 172 + (box.width - 184) / 2, box.y + 26 + 20 + 9);
  await page.mouse.wheel(0, -300);
  await page.waitForTimeout(1000);
  fs.writeFileSync("/tmp/nb7/nb7.png", await w.screenshot());
  console.log("rects", await w.getAttribute("data-draw-rects"), "range", await w.getAttribute("data-range"));
});
