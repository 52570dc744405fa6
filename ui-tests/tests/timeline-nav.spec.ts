// Navigating the timeline on the 8-rank DLRM sample (issue 16): keyboard help, search that dims
// what does not match and walks matches in time order from the earliest, the measured range's
// panel inside the widget, and the always-visible "All ranks" and "Back" controls after a link
// narrowed the view to one rank.
import { expect, test } from "@jupyterlab/galata";
import { addCell, cellText, newNotebook, runCell, settled, timeline, visibleRange } from "./helpers";

// Geometry of the canvas (js/timeline/host.ts): label gutter, axis band.
const GUTTER = 172;
const AXIS = 26;

test.describe("Timeline navigation on the 8-rank DLRM sample", () => {
  test("help, search dimming and order, measure panel, all ranks and back", async ({ page }) => {
    await newNotebook(page, "timeline-nav.ipynb");
    await runCell(
      page,
      "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget",
    );
    const cell = await addCell(page, "tl = tv.Timeline(trace, height=560)\ntl");
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const widget = timeline(page);
    await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
    await page.notebook.waitForRun(cell);
    const canvas = widget.locator("canvas");
    await canvas.scrollIntoViewIfNeeded();
    await settled(widget);

    // `?` opens the keyboard help over the plot; Esc closes it; so do the "?" button and the ×.
    const help = widget.locator(".tv-help-overlay");
    await expect(help).toBeHidden();
    await widget.focus();
    await page.keyboard.press("?");
    await expect(help).toBeVisible();
    await expect(help).toContainText("Shift+drag");
    await page.keyboard.press("Escape");
    await expect(help).toBeHidden();
    await widget.getByRole("button", { name: "Keys and gestures" }).click();
    await expect(help).toBeVisible();
    await help.getByRole("button", { name: "Close help" }).click();
    await expect(help).toBeHidden();

    // Search: the count appears without moving the canvas (no toolbar reflow).
    const before = (await canvas.boundingBox())!;
    await widget.locator(".tv-search").fill("nccl");
    await expect.poll(async () => Number(await widget.getAttribute("data-search-count"))).toBeGreaterThan(0);
    await expect(widget.locator(".tv-search-count")).toContainText("match");
    const after = (await canvas.boundingBox())!;
    expect(after.y).toBe(before.y);
    expect(after.height).toBe(before.height);
    // Everything that does not match is dimmed once the window with the matches arrived.
    await settled(widget);
    await expect.poll(async () => Number(await widget.getAttribute("data-dimmed"))).toBeGreaterThan(0);
    await expect.poll(async () => Number(await widget.getAttribute("data-match-rects"))).toBeGreaterThan(0);

    // Enter walks the matches in time order from the earliest one of the trace.
    const first = await runCell(
      page,
      "ix = tl.index\n" +
        "starts = sorted(int(ix.start[p]) for p in range(len(ix.start)) if 'nccl' in ix.names[int(ix.name[p])].lower())\n" +
        "print(starts[0], starts[1])",
    );
    const [earliest, second] = (await cellText(page, first)).trim().split(/\s+/).map(Number);
    await widget.locator(".tv-search").press("Enter");
    await expect.poll(async () => Number(await widget.getAttribute("data-match-start"))).toBe(earliest);
    await widget.locator(".tv-search").press("Enter");
    await expect.poll(async () => Number(await widget.getAttribute("data-match-start"))).toBe(second);
    await widget.locator(".tv-search").press("Shift+Enter");
    await expect.poll(async () => Number(await widget.getAttribute("data-match-start"))).toBe(earliest);
    // Clearing the search clears the dimming.
    await widget.locator(".tv-search").fill("");
    await widget.locator(".tv-search").press("Enter");
    await expect.poll(async () => Number(await widget.getAttribute("data-dimmed"))).toBe(0);

    // Shift+drag: the range's summary is a panel inside the widget, over the plot.
    await widget.getByRole("button", { name: "Fit" }).click();
    await settled(widget);
    const box = (await canvas.boundingBox())!;
    const y = box.y + AXIS + 30;
    await page.keyboard.down("Shift");
    await page.mouse.move(box.x + GUTTER + 100, y);
    await page.mouse.down();
    await page.mouse.move(box.x + GUTTER + 500, y, { steps: 6 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    const panel = widget.locator(".tv-measure");
    await expect(panel).toBeVisible();
    await expect(panel.locator(".tv-summary")).toBeVisible();
    const pb = (await panel.boundingBox())!;
    expect(pb.y).toBeGreaterThanOrEqual(box.y);
    expect(pb.y + pb.height).toBeLessThanOrEqual(box.y + box.height);
    expect(pb.x + pb.width).toBeLessThanOrEqual(box.x + box.width);
    await panel.getByRole("button", { name: "Clear the range" }).click();
    await expect(panel).toBeHidden();

    // A link narrows the view to one rank (as a heatmap click does): "All ranks" brings every
    // rank back, "Back" returns to the linked view.
    const all = widget.getByRole("button", { name: /All ranks/ });
    await expect(all).toBeDisabled();
    await runCell(page, "tl.show_range(tl.t0_ns + 1_000_000, tl.t0_ns + 3_000_000, ranks=[3])");
    await expect(all).toContainText("1 of 8");
    await expect(all).toBeEnabled();
    const [lo, hi] = await visibleRange(widget);
    expect(lo).toBe(1_000_000);
    expect(hi).toBe(3_000_000);
    await all.click();
    await expect(all).toBeDisabled();
    const shown = await runCell(page, "print(tl.ranks)");
    expect(await cellText(page, shown)).toContain("[0, 1, 2, 3, 4, 5, 6, 7]");
    await widget.getByRole("button", { name: /Back/ }).click();
    await expect(all).toContainText("1 of 8");
    const back = await runCell(page, "print(tl.ranks)");
    expect(await cellText(page, back)).toContain("[3]");
  });
});
