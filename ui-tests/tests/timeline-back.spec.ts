// Back and forward through the timeline's views (issue 16): a heatmap click opens the
// dashboard's Timeline on the cell's window with its rank emphasised; Back returns to the
// view the link replaced (here the whole trace the fresh timeline would have opened on),
// Forward to the link's; a second link, after the ranks were narrowed, goes back to the
// first link's window, ranks and emphasis. Alt+←/→ do the same from the keyboard, and the
// `?` help lists them.
import { expect, test } from "@jupyterlab/galata";
import type { Locator, Page } from "@playwright/test";
import { cellText, heatmapCell, newNotebook, runCell, settled, timeline, visibleRange, writeArtifact } from "./helpers";

function dashboard(page: Page): Locator {
  return page.locator(".tvd-dashboard").last();
}

test.describe("Timeline back and forward after dashboard links", () => {
  test("a heatmap link, then Back restores the previous window, ranks and emphasis", async ({ page }) => {
    await newNotebook(page, "timeline-back.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())");
    await runCell(page, "dash = tv.Dashboard(trace)\ndash");
    const dash = dashboard(page);
    const overview = dash.locator('.tvd-panel[data-tab="overview"]');
    await expect(overview).toHaveAttribute("data-state", "ready", { timeout: 60000 });
    const heatmap = overview.locator('.tvd-chart[data-chart="heatmap_all"]');
    await expect(heatmap).toHaveAttribute("data-drawn", "1");
    await heatmap.scrollIntoViewIfNeeded();
    await dash.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

    // Click a cell of rank 1 (second row), 40% into the time axis.
    const [cellX, cellY] = await heatmapCell(heatmap, 1, 0.4, 8);
    await page.mouse.move(cellX, cellY);
    await page.mouse.click(cellX, cellY);
    await expect(dash).toHaveAttribute("data-tab", "timeline", { timeout: 30000 });
    const tl = timeline(page);
    await settled(tl);
    await expect(tl).toHaveAttribute("data-focus-rank", "1");
    const linked = await visibleRange(tl);
    const span = await runCell(page, "print(dash.timeline._span[1])");
    const end = Number((await cellText(page, span)).trim());
    expect(linked[1] - linked[0]).toBeLessThan(end / 10);

    // The fresh timeline opened on the link: Back goes to the whole trace, every rank, no emphasis.
    const back = tl.getByRole("button", { name: /Back/ });
    const forward = tl.getByRole("button", { name: "Forward" });
    await expect(back).toBeEnabled();
    await expect(forward).toBeDisabled();
    await back.click();
    await expect(tl).toHaveAttribute("data-focus-rank", "");
    await expect.poll(async () => visibleRange(tl)).toEqual([0, end]);
    await expect(back).toBeDisabled();
    // Forward: the link's view again.
    await forward.click();
    await expect(tl).toHaveAttribute("data-focus-rank", "1");
    await expect.poll(async () => visibleRange(tl)).toEqual(linked);

    // Narrow the ranks from Python, then follow a second link (rank 5's cell further on).
    await runCell(page, "dash.timeline.ranks = [0, 1]");
    await expect(tl.getByRole("button", { name: /All ranks/ })).toContainText("2 of 8");
    await runCell(page, "dash.follow('heatmap', rank=5, bin=70)");
    await expect(tl).toHaveAttribute("data-focus-rank", "5");
    const second = await runCell(page, "print(dash.timeline.ranks)");
    expect(await cellText(page, second)).toContain("[0, 1, 5]");
    writeArtifact("timeline-back-second-link.png", await tl.screenshot());

    // Alt+←: back to the first link's window with ranks 0 and 1, rank 1 emphasised.
    await tl.focus();
    await page.keyboard.press("Alt+ArrowLeft");
    await expect(tl).toHaveAttribute("data-focus-rank", "1");
    await expect.poll(async () => visibleRange(tl)).toEqual(linked);
    await expect(tl.getByRole("button", { name: /All ranks/ })).toContainText("2 of 8");
    const ranksNow = await runCell(page, "print(dash.timeline.ranks, dash.timeline.focus_rank)");
    expect(await cellText(page, ranksNow)).toContain("[0, 1] 1");
    // Alt+→: the second link again.
    await tl.focus();
    await page.keyboard.press("Alt+ArrowRight");
    await expect(tl).toHaveAttribute("data-focus-rank", "5");
    const again = await runCell(page, "print(dash.timeline.ranks)");
    expect(await cellText(page, again)).toContain("[0, 1, 5]");

    // The keyboard help lists them.
    await tl.focus();
    await page.keyboard.press("?");
    await expect(tl.locator(".tv-help-overlay")).toContainText("Alt+← / Alt+→");
  });
});
