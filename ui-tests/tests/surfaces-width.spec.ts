// Issue 38, points 4 and 5, on the bundled 8-rank DLRM sample:
// - a heatmap cell of rank 5 brings rank 5's first lane to the top of the timeline's plot
//   (it landed at the bottom edge, its busy NCCL stream cut off);
// - every dashboard tab, rendered at 800 px and at 1600 px, gives each chart's plot area at
//   least half of the chart, every axis leaves out tick labels that would overprint, and
//   every figure card holds its text;
// - in a narrow output (an 800 px window with the file browser open: ~368 px), no chart is
//   wider than the output (their minimum widths, 440-556 px, ran past the dashboard's edge).
import { expect, test } from "@jupyterlab/galata";
import type { Locator } from "@playwright/test";
import {
  darkProblems,
  heatmapCell,
  newNotebook,
  runCell,
  settled,
  textContrasts,
  timeline,
  writeArtifact,
} from "./helpers";

const TABS = [
  "overview",
  "breakdown",
  "overlap",
  "kernels",
  "operators",
  "communication",
  "iterations",
  "counters",
  "performance",
];

/** Height of the timeline's axis band, px (js/timeline/host.ts AXIS). */
const AXIS = 26;

interface PlotSize {
  title: string;
  width: number;
  frame: number;
  policies: string[];
  /** The plot's right edge, px from the viewport's left. */
  right: number;
}

async function openTab(dash: Locator, tab: string): Promise<Locator> {
  await dash.locator(`.tvd-tab[data-tab="${tab}"]`).click();
  const panel = dash.locator(`.tvd-panel[data-tab="${tab}"]`);
  await expect(panel).toHaveAttribute("data-state", "ready", { timeout: 120_000 });
  const charts = panel.locator(".tvd-chart");
  for (let i = 0; i < (await charts.count()); i++)
    await expect(charts.nth(i)).toHaveAttribute("data-drawn", "1");
  await dash.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return panel;
}

/** Every drawn bokeh plot inside `panel`: its width, its plot area's width, its axes' label policies. */
async function plotSizes(panel: Locator): Promise<PlotSize[]> {
  return panel.evaluate((root) => {
    type View = {
      el?: HTMLElement;
      shadow_el?: ShadowRoot;
      child_views?: View[];
      bbox?: { width: number };
      frame?: { bbox: { width: number } };
      axis_views?: { model: { major_label_policy: { type: string } } }[];
      model: { title?: { text?: string } | null; above?: { text?: unknown }[] };
    };
    const out: PlotSize[] = [];
    const seen = new Set<View>();
    const visit = (v: View) => {
      if (seen.has(v)) return;
      seen.add(v);
      if (v.frame && v.axis_views && v.el && root.contains(v.el)) {
        out.push({
          // A long title is wrapped onto Titles "above" (the last added is the top line).
          title:
            v.model.title?.text ||
            (v.model.above ?? [])
              .map((t) => t.text)
              .filter((t): t is string => typeof t === "string")
              .reverse()
              .join(" "),
          width: v.bbox!.width,
          frame: v.frame.bbox.width,
          policies: v.axis_views.map((a) => a.model.major_label_policy.type),
          right: v.el.getBoundingClientRect().right,
        });
      }
      for (const c of v.child_views ?? []) visit(c);
    };
    const bokehs = Object.values((window as unknown as { Bokeh?: Record<string, unknown> }).Bokeh ?? {});
    for (const b of [window.Bokeh, ...bokehs])
      for (const v of ((b as { index?: { roots?: View[] } } | undefined)?.index?.roots ?? []) as View[])
        visit(v);
    return out;
  });
}

test.describe("surfaces at any width", () => {
  test("a heatmap link brings the focused rank's first lane to the top", async ({ page }) => {
    await newNotebook(page, "surfaces-link.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())");
    await runCell(page, "dash = tv.Dashboard(trace)\ndash");
    const dash = page.locator(".tvd-dashboard").last();
    const overview = await openTab(dash, "overview");
    const heatmap = overview.locator('.tvd-chart[data-chart="heatmap_all"]');
    await heatmap.scrollIntoViewIfNeeded();
    const [x, y] = await heatmapCell(heatmap, 5, 0.5, 8);
    await page.mouse.click(x, y);
    await expect(dash).toHaveAttribute("data-tab", "timeline", { timeout: 30000 });
    const tl = timeline(page);
    await settled(tl);
    await expect(tl).toHaveAttribute("data-focus-rank", "5");
    // The lanes are scrolled to rank 5's block: its header at the top of the plot.
    const top = Number(await tl.getAttribute("data-focus-top"));
    const scroller = tl.locator(".tv-scroller");
    await expect.poll(() => scroller.evaluate((el) => el.scrollTop)).toBe(top);
    expect(top).toBeGreaterThan(0);
    // The emphasis band starts right under the axis (not at the bottom edge).
    const band = tl.locator(".tv-focus-band");
    await expect(band).toBeVisible();
    expect(await band.evaluate((el) => (el as HTMLElement).style.top)).toBe(`${AXIS}px`);
    const view = await scroller.evaluate((el) => el.clientHeight);
    const bandHeight = await band.evaluate((el) => (el as HTMLElement).getBoundingClientRect().height);
    // The band covers the plot below the axis as far as the rank's block goes: more than a sliver.
    expect(bandHeight).toBeGreaterThan(Math.min(100, view - AXIS - 1));
    writeArtifact("link-rank5-top.png", await tl.screenshot());
  });

  // One page and kernel for the three widths: at each, the dashboard's cell runs again, so a
  // fresh dashboard is drawn at that width (its tabs' facts are kept with the trace, so the
  // kernel computes them once). Problems are gathered over the three and reported together.
  test("every tab at 800, 1600 and narrow px: plot areas over half the chart, no overprinted ticks", async ({
    page,
  }) => {
    test.setTimeout(360_000);
    await newNotebook(page, "surfaces-widths.ipynb");
    await runCell(
      page,
      "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget, bokeh",
    );
    const problems: string[] = [];
    let dashCell = -1;
    for (const [width, name, browser] of [
      [800, "800", false],
      [1600, "1600", false],
      [800, "narrow", true],
    ] as const) {
      await test.step(`${name} px`, async () => {
        await page.setViewportSize({ width, height: 900 });
        if (browser) await page.sidebar.openTab("filebrowser");
        if (dashCell < 0) dashCell = await runCell(page, "dash = tv.Dashboard(trace)\ndash");
        else await page.notebook.runCell(dashCell, { inplace: true, wait: true });
        const dash = page.locator(".tvd-dashboard").last();
        await expect(dash).toBeVisible();
        // The output's right edge: no chart may run past it.
        const output = await dash.evaluate((el) => {
          const r = (el.closest(".jp-OutputArea-output") ?? el).getBoundingClientRect();
          return { width: r.width, right: r.right };
        });
        if (browser) expect(output.width).toBeLessThan(400);
        let plots = 0;
        for (const tab of TABS) {
          const panel = await openTab(dash, tab);
          for (const p of await plotSizes(panel)) {
            plots++;
            if (p.right > output.right + 1)
              problems.push(
                `${name} px, ${tab}: "${p.title}" ${p.width.toFixed(0)} px runs ${(p.right - output.right).toFixed(0)} px past a ${output.width.toFixed(0)} px output`,
              );
            if (p.frame < 0.5 * p.width)
              problems.push(
                `${name} px, ${tab}: "${p.title}" plot ${p.frame.toFixed(0)} of ${p.width.toFixed(0)} px`,
              );
            const bad = p.policies.filter((t) => t !== "NoOverlap");
            if (bad.length)
              problems.push(`${name} px, ${tab}: "${p.title}" axes may overprint (${bad.join(", ")})`);
          }
          // Figure cards hold their text (a long operator name in a hint ran over the next card).
          const over = await panel
            .locator(".tvd-figure")
            .evaluateAll((els) =>
              els
                .filter((e) => e.scrollWidth > e.clientWidth + 1)
                .map((e) => (e.textContent ?? "").slice(0, 40)),
            );
          for (const text of over) problems.push(`${name} px, ${tab}: figure card "${text}" overflows`);
          writeArtifact(`surfaces-${name}-${tab}.png`, await dash.screenshot());
          if (browser) {
            // Each chart whole (the dashboard's screenshot shows the viewport's part only).
            const charts = panel.locator(".tvd-chart");
            for (let i = 0; i < (await charts.count()); i++)
              writeArtifact(`surfaces-${name}-${tab}-${i}.png`, await charts.nth(i).screenshot());
          }
        }
        expect(plots, `${name} px: plots drawn`).toBeGreaterThan(10);
      });
    }
    expect(problems).toEqual([]);
  });
});

test.describe("dark theme", () => {
  test("dashboard and timeline take JupyterLab's dark colours, text readable", async ({ page }) => {
    await newNotebook(page, "surfaces-dark.ipynb");
    await page.theme.setDarkTheme();
    await runCell(
      page,
      "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget, bokeh",
    );
    await runCell(page, "dash = tv.Dashboard(trace)\ndash");
    const dash = page.locator(".tvd-dashboard").last();
    await expect(dash).toHaveAttribute("data-theme", "dark");
    const overview = await openTab(dash, "overview");
    const kernels = await openTab(dash, "kernels");
    const timelineTab = dash.locator('.tvd-tab[data-tab="timeline"]');
    const problems: string[] = [];
    for (const [where, root, sel] of [
      ["header", dash, ".tvd-figure, .tvd-tab"],
      ["overview", overview, ".tvd-finding"],
      ["kernels table", kernels, "td, th"],
    ] as const) {
      problems.push(...darkProblems(where, await textContrasts(root, sel)));
    }
    writeArtifact("dark-dashboard-kernels.png", await dash.screenshot());
    await timelineTab.click();
    const tl = timeline(page);
    await settled(tl);
    await expect(tl).toHaveClass(/tv-dark/);
    problems.push(
      ...darkProblems(
        "timeline",
        await textContrasts(tl, ".tv-toolbar button, .tv-toolbar label, .tv-status"),
      ),
    );
    // The canvas: its label gutter (left, under the axis band) is drawn in the theme's panel colour.
    const shot = await tl.locator("canvas").screenshot();
    writeArtifact("dark-timeline.png", shot);
    const gutter = await tl.locator("canvas").evaluate((c) => {
      const ctx = (c as HTMLCanvasElement).getContext("2d")!;
      const d = ctx.getImageData(4 * devicePixelRatio, 40 * devicePixelRatio, 1, 1).data;
      return (0.2126 * d[0]! + 0.7152 * d[1]! + 0.0722 * d[2]!) / 255;
    });
    if (gutter > 0.3) problems.push(`timeline gutter is light (${gutter.toFixed(2)})`);
    await page.theme.setLightTheme();
    expect(problems).toEqual([]);
  });
});
