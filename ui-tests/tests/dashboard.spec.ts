// tv.Dashboard on the bundled 8-rank DLRM traces in JupyterLab: every tab renders without
// console errors in the light and dark themes (screenshots kept as artefacts), a heatmap
// click moves the timeline, a range selected on the timeline rescopes the Breakdown tab,
// and `trace` on the last line of a cell shows the summary card that opens the dashboard.
import { expect, test } from "@jupyterlab/galata";
import type { Locator, Page } from "@playwright/test";
import {
  addCell,
  cellText,
  heatmapCell,
  newNotebook,
  runCell,
  settled,
  timeline,
  visibleRange,
  writeArtifact,
} from "./helpers";

const TABS = [
  "overview",
  "timeline",
  "breakdown",
  "overlap",
  "kernels",
  "operators",
  "communication",
  "iterations",
  "counters",
  "performance",
];

/** Console errors and uncaught exceptions of the page, collected from now on. */
function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return errors;
}

/** Errors that are ours: JupyterLab itself logs a few unrelated ones in the test server. */
function ours(errors: string[]): string[] {
  return errors.filter((e) => !/favicon|Failed to load resource: the server responded with a status of 404/.test(e));
}

function dashboard(page: Page): Locator {
  return page.locator(".tvd-dashboard").last();
}

/** Open a tab and wait until its content (charts included) is drawn. */
async function openTab(dash: Locator, tab: string): Promise<Locator> {
  await dash.locator(`.tvd-tab[data-tab="${tab}"]`).click();
  const panel = dash.locator(`.tvd-panel[data-tab="${tab}"]`);
  await expect(panel).toBeVisible();
  await expect(panel).toHaveAttribute("data-state", "ready", { timeout: 60000 });
  if (tab === "timeline") {
    await settled(dash.locator(".tv-timeline"));
  } else {
    const charts = panel.locator(".tvd-chart");
    const n = await charts.count();
    for (let i = 0; i < n; i++) await expect(charts.nth(i)).toHaveAttribute("data-drawn", "1");
    // BokehJS draws on the next frames.
    await dash.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  }
  return panel;
}

test.describe("Dashboard on the 8-rank DLRM sample", () => {
  test("every tab renders without console errors, light and dark", async ({ page }) => {
    const errors = collectErrors(page);
    await newNotebook(page, "dashboard.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget, bokeh");

    // First appearance and first tab (Overview): from running the cell.
    const cell = await addCell(page, "dash = tv.Dashboard(trace)\ndash");
    const t0 = await page.evaluate(() => performance.now());
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const dash = dashboard(page);
    await expect(dash).toBeVisible({ timeout: 60000 });
    const shown = await page.evaluate(() => performance.now());
    const overview = dash.locator('.tvd-panel[data-tab="overview"]');
    await expect(overview).toHaveAttribute("data-state", "ready", { timeout: 60000 });
    const ready = await page.evaluate(() => performance.now());
    await expect(overview.locator(".tvd-finding").first()).toBeVisible();
    const timing = {
      trace: "dlrm_8rank_v100",
      dashboard_shown_ms: shown - t0,
      overview_ready_ms: ready - t0,
      overview_compute_ms: Number(await overview.getAttribute("data-compute-ms")),
    };
    writeArtifact("dashboard-first-paint.json", JSON.stringify(timing, null, 2));
    console.log(`dashboard: shown ${timing.dashboard_shown_ms.toFixed(0)} ms, overview ready ${timing.overview_ready_ms.toFixed(0)} ms after the cell started`);
    await page.notebook.waitForRun(cell);

    for (const theme of ["light", "dark"] as const) {
      if (theme === "dark") await page.theme.setDarkTheme();
      else await page.theme.setLightTheme();
      await expect(dash).toHaveAttribute("data-theme", theme);
      for (const tab of TABS) {
        const panel = await openTab(dash, tab);
        if (tab !== "timeline") {
          expect(await panel.locator(".tvd-chart").count(), `${tab} has charts`).toBeGreaterThan(0);
        }
        writeArtifact(`dashboard-${tab}-${theme}.png`, await dash.screenshot());
      }
    }
    await page.theme.setLightTheme();
    expect(ours(errors), "no console errors").toEqual([]);
  });

  test("heatmap click zooms the timeline; a timeline range rescopes Breakdown; the trace card opens it", async ({
    page,
  }) => {
    const errors = collectErrors(page);
    await newNotebook(page, "dashboard-links.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())");
    await runCell(page, "dash = tv.Dashboard(trace)\ndash");
    const dash = dashboard(page);
    const overview = await openTab(dash, "overview");

    // The Nsight-style heatmap, kept for review by eye.
    const heatmap = overview.locator('.tvd-chart[data-chart="heatmap_all"]');
    await heatmap.scrollIntoViewIfNeeded();
    writeArtifact("heatmap-dlrm-light.png", await heatmap.screenshot());

    // Click a cell of rank 1 (second row), 40% into the time axis.
    const [cellX, cellY] = await heatmapCell(heatmap, 1, 0.4, 8);
    // Hover first: the cell's interval as the heatmap labels it (times since the trace's origin).
    await page.mouse.move(cellX, cellY);
    // BokehJS draws the tooltip at the page's top level: the innermost element holding its rows.
    const tip = page
      .locator("div")
      .filter({ hasText: "zoom the timeline here" })
      .filter({ hasText: /time:?\s*\+/ })
      .last();
    await expect(tip).toBeVisible({ timeout: 30000 });
    const label = (await tip.innerText()).replace(/\s+/g, " ");
    const m = /time:? \+?([\d.]+) (s|ms|us|ns) … \+?([\d.]+) (s|ms|us|ns)/.exec(label);
    expect(m, `heatmap tooltip: ${label}`).not.toBeNull();
    const ns = (v: string, u: string) => Number(v) * { s: 1e9, ms: 1e6, us: 1e3, ns: 1 }[u]!;
    const [cellLo, cellHi] = [ns(m![1]!, m![2]!), ns(m![3]!, m![4]!)];
    await page.mouse.click(cellX, cellY);
    await expect(dash).toHaveAttribute("data-tab", "timeline", { timeout: 30000 });
    const tl = timeline(page);
    await settled(tl);
    const [lo, hi] = await visibleRange(tl);
    expect(hi - lo).toBeLessThan(1_000_000); // one heatmap bin (~100 us) and a margin
    // The timeline's window holds the interval the cell showed (3 significant digits: +-0.5%).
    expect(lo).toBeLessThanOrEqual(cellLo * 1.005);
    expect(hi).toBeGreaterThanOrEqual(cellHi * 0.995);
    const link = JSON.parse((await dash.getAttribute("data-last-link")) ?? "{}") as { rank?: number; bin?: number };
    expect(link.rank).toBe(1);
    // Every rank stays shown; the clicked rank is emphasised (scrolled to, highlighted).
    const py = await runCell(page, "print(dash.tab, dash.timeline.ranks, dash.timeline.focus_rank)");
    const out = await cellText(page, py);
    expect(out).toContain("timeline [0, 1, 2, 3, 4, 5, 6, 7] 1");
    await expect(tl).toHaveAttribute("data-focus-rank", "1");
    await expect(tl.locator(".tv-focus-band")).toBeVisible();
    await expect(tl.getByRole("button", { name: /All ranks/ })).toBeDisabled(); // all already shown
    // The widget is in the viewport, not scrolled away (no empty view after the link).
    const tlBox = (await tl.locator("canvas").boundingBox())!;
    const viewport = page.viewportSize()!;
    expect(tlBox.y).toBeLessThan(viewport.height);
    expect(tlBox.y + tlBox.height).toBeGreaterThan(0);
    writeArtifact("dashboard-after-heatmap-click.png", await dash.screenshot());

    // Shift+drag a range on the timeline: Breakdown is computed for it.
    await runCell(page, "dash.timeline.ranks = list(trace.ranks)\ndash.timeline.fit()\ndash.tab = 'timeline'");
    await settled(tl);
    const tlCanvas = tl.locator("canvas");
    await tlCanvas.scrollIntoViewIfNeeded();
    const cb = (await tlCanvas.boundingBox())!;
    const y = cb.y + 60;
    await page.keyboard.down("Shift");
    await page.mouse.move(cb.x + 172 + 200, y);
    await page.mouse.down();
    await page.mouse.move(cb.x + 172 + 420, y, { steps: 6 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    await expect(dash.locator('.tvd-tab[data-tab="breakdown"]')).toHaveClass(/tvd-ranged/);
    const breakdown = await openTab(dash, "breakdown");
    await expect(breakdown.locator(".tvd-banner")).toContainText("Range selected on the timeline");
    const rng = await runCell(page, "r = dash.breakdown_range\nprint(r is not None and r[1] > r[0], dash.breakdown()['range'] is not None)");
    expect(await cellText(page, rng)).toContain("True True");
    writeArtifact("dashboard-breakdown-range.png", await dash.screenshot());

    // `trace` on the last line of a cell: the card, whose button opens the dashboard in place.
    await runCell(page, "trace");
    const card = page.locator(".tvd-card").last();
    await expect(card).toBeVisible();
    await expect(card).toContainText("8 (0-7)");
    writeArtifact("trace-card.png", await card.screenshot());
    await card.getByRole("button", { name: "Open dashboard" }).click();
    const opened = dashboard(page);
    await expect(opened.locator('.tvd-panel[data-tab="overview"]')).toHaveAttribute("data-state", "ready", {
      timeout: 60000,
    });
    expect(ours(errors), "no console errors").toEqual([]);
  });
});
