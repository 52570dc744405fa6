// The HTML report's timeline works with no kernel: opened from a file, it zooms on the wheel
// and pans on drag over the levels embedded in the page (js/report/offline.ts).
// Plain Playwright (not galata, whose page opens JupyterLab and prefixes its URL).
import { expect, test } from "@playwright/test";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ARTIFACTS } from "./helpers";

test.use({ viewport: { width: 1400, height: 900 } });

const rangeOf = (s: string | null): [number, number] => {
  const [lo, hi] = (s ?? "").split(",").map(Number);
  return [lo!, hi!];
};

test("the report's timeline zooms and pans offline", async ({ page }) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tv-report-"));
  const file = path.join(folder, "report.html");
  execFileSync(
    "python",
    ["-c", `import jupyter_traceview as tv; tv.write_report(tv.load(tv.sample_path()), ${JSON.stringify(file)})`],
    { stdio: "inherit", timeout: 170_000 },
  );
  // No network: the page must draw from what the file holds.
  await page.route(/^https?:/, (route) => route.abort());
  await page.goto(`file://${file}#timeline`);
  const host = page.locator(".tvr-timeline");
  await expect(host).toHaveAttribute("data-ready", "1", { timeout: 60_000 });
  const view = host.locator(".tv-timeline");
  await expect(view).toHaveAttribute("data-first-paint", /\d/);
  await expect(view).toHaveAttribute("data-loading", "0");
  await view.scrollIntoViewIfNeeded();
  const [lo0, hi0] = rangeOf(await view.getAttribute("data-range"));
  expect(Number(await view.getAttribute("data-draw-rects"))).toBeGreaterThan(0);

  // Wheel (zoom in around the pointer).
  const canvas = view.locator("canvas");
  const box = (await canvas.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.6, box.y + 120);
  for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -200);
  const span = async () => {
    const [lo, hi] = rangeOf(await view.getAttribute("data-range"));
    return hi - lo;
  };
  await expect.poll(span).toBeLessThan((hi0 - lo0) / 4);
  await expect(view).toHaveAttribute("data-loading", "0");
  const [lo1, hi1] = rangeOf(await view.getAttribute("data-range"));
  expect(lo1).toBeGreaterThan(lo0);
  // The window drawn is a finer level's: requests were answered in the page.
  expect(Number(await view.getAttribute("data-requests"))).toBeGreaterThan(1);
  expect(Number(await view.getAttribute("data-draw-rects"))).toBeGreaterThan(0);
  await page.screenshot({ path: path.join(ARTIFACTS, "report-timeline-zoomed.png") });

  // Drag right: the view moves earlier by about the dragged share of its span.
  await page.mouse.move(box.x + box.width * 0.5, box.y + 120);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + 120, { steps: 8 });
  await page.mouse.up();
  await expect.poll(async () => rangeOf(await view.getAttribute("data-range"))[0]).toBeLessThan(lo1);
  const [lo2, hi2] = rangeOf(await view.getAttribute("data-range"));
  expect(hi2 - lo2).toBeCloseTo(hi1 - lo1, -1);
  await expect(view).toHaveAttribute("data-loading", "0");
});
