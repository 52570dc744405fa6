// The HTML report's timeline works with no kernel: opened from a file, it zooms on the wheel
// and pans on drag over the levels embedded in the page (js/report/offline.ts).
// Plain Playwright (not galata, whose page opens JupyterLab and prefixes its URL).
import { expect, test } from "@playwright/test";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ARTIFACTS, REPO } from "./helpers";

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

test("the report's timeline searches names, names a hovered column, summarises a range, draws memory lanes", async ({
  page,
}) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tv-report-"));
  const file = path.join(folder, "report.html");
  // A trace recorded with profile_memory=True (H100, BERT): memory lanes too.
  const trace = path.join(REPO, "tests", "data", "h100_bert_small");
  execFileSync(
    "python",
    ["-c", `import jupyter_traceview as tv; tv.write_report(tv.load(${JSON.stringify(trace)}), ${JSON.stringify(file)})`],
    { stdio: "inherit", timeout: 170_000 },
  );
  await page.route(/^https?:/, (route) => route.abort());
  await page.goto(`file://${file}#timeline`);
  const host = page.locator(".tvr-timeline");
  await expect(host).toHaveAttribute("data-ready", "1", { timeout: 60_000 });
  await expect(host).toHaveAttribute("data-details", "1");
  expect(Number(await host.getAttribute("data-memory"))).toBeGreaterThan(0);
  const view = host.locator(".tv-timeline");
  await expect(view).toHaveAttribute("data-first-paint", /\d/);
  await view.scrollIntoViewIfNeeded();
  const canvas = view.locator("canvas");
  const box = (await canvas.boundingBox())!;

  // Search: a count, the rest dimmed, Enter goes to the earliest match's bin.
  await view.locator(".tv-search").fill("cutlass");
  await expect.poll(async () => Number(await view.getAttribute("data-search-count"))).toBeGreaterThan(0);
  await expect(view.locator(".tv-search-count")).toContainText("match");
  await expect.poll(async () => Number(await view.getAttribute("data-dimmed"))).toBeGreaterThan(0);
  await expect.poll(async () => Number(await view.getAttribute("data-match-rects"))).toBeGreaterThan(0);
  await view.locator(".tv-search").press("Enter");
  await expect(view).toHaveAttribute("data-match-start", /\d/);
  // Enter again: the next bin holding a match, later; Shift+Enter back to the first.
  const firstMatch = Number(await view.getAttribute("data-match-start"));
  await view.locator(".tv-search").press("Enter");
  await expect.poll(async () => Number(await view.getAttribute("data-match-start"))).toBeGreaterThan(firstMatch);
  await view.locator(".tv-search").press("Shift+Enter");
  await expect.poll(async () => Number(await view.getAttribute("data-match-start"))).toBe(firstMatch);
  await page.screenshot({ path: path.join(ARTIFACTS, "report-timeline-search.png") });
  await view.locator(".tv-search").fill("");
  await view.locator(".tv-search").press("Enter");
  await view.getByRole("button", { name: "Fit" }).click();
  await expect(view).toHaveAttribute("data-loading", "0");

  // Hover a busy column: the tooltip lists the names of the events starting there.
  const tip = view.locator(".tv-tooltip");
  let named = false;
  for (let y = 40; y < 200 && !named; y += 14) {
    for (let x = 0.05; x < 1 && !named; x += 0.05) {
      await page.mouse.move(box.x + 172 + (box.width - 190) * x, box.y + y);
      named = (await tip.isVisible()) && (await tip.innerText()).includes("starting here");
    }
  }
  expect(named, "a hovered column names its events").toBe(true);

  // Shift+drag: the range's summary (busy time per kind, top names) from the embedded details.
  const y = box.y + 60;
  await page.keyboard.down("Shift");
  await page.mouse.move(box.x + 200, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 40, y, { steps: 6 });
  await page.mouse.up();
  await page.keyboard.up("Shift");
  const panel = view.locator(".tv-measure");
  await expect(panel.locator(".tv-summary")).toBeVisible();
  await expect(panel).not.toContainText("not available");
  await expect(panel).toContainText("%");
  await page.screenshot({ path: path.join(ARTIFACTS, "report-timeline-measure.png") });

  // The memory lanes: scrolled into view, drawn from the embedded memory levels.
  await view.locator(".tv-scroller").evaluate((e) => (e.scrollTop = e.scrollHeight));
  await expect.poll(async () => JSON.parse((await view.getAttribute("data-memory-lanes")) ?? "[]").length).toBeGreaterThan(0);
  await page.screenshot({ path: path.join(ARTIFACTS, "report-timeline-memory.png") });
});
