// The timeline's rank picker on the 8-rank DLRM sample (issue 16, "Ranks"): CPU threads open
// folded above four ranks, the filter takes ranks and ranges, pins and order survive it,
// collapse/expand all, the "stragglers" and "slowest N" presets come from the analyses, and a
// focused rank (what a dashboard link sets) is emphasised with every other rank still shown.
import { expect, test } from "@jupyterlab/galata";
import { addCell, cellText, newNotebook, runCell, settled, timeline, writeArtifact } from "./helpers";

test.describe("Timeline rank picker on the 8-rank DLRM sample", () => {
  test("filter, pin, order, collapse, presets, focus and back", async ({ page }) => {
    await newNotebook(page, "timeline-ranks.ipynb");
    await runCell(
      page,
      "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget",
    );
    const cell = await addCell(page, "tl = tv.Timeline(trace, height=560)\ntl");
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const widget = timeline(page);
    await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
    await page.notebook.waitForRun(cell);
    const py = async (code: string): Promise<string> => (await cellText(page, await runCell(page, code))).trim();

    // 8 ranks > 4: each rank's CPU threads open folded into one row; GPU streams stay open.
    expect(await py("print(tl.cpu_collapsed, tl.collapsed)")).toContain("[0, 1, 2, 3, 4, 5, 6, 7] []");

    // The picker: "Ranks" next to the always-visible "All ranks".
    const all = widget.getByRole("button", { name: /All ranks/ });
    await widget.getByRole("button", { name: "Ranks ▾" }).click();
    const picker = widget.getByRole("dialog", { name: "Rank picker" });
    await expect(picker).toBeVisible();
    await expect(picker.getByRole("listitem")).toHaveCount(8);

    // Filter by ranks and ranges: 0-7,12 selects the trace's 0-7 (there is no rank 12)...
    const filter = picker.getByRole("searchbox", { name: "Filter ranks" });
    await filter.fill("0-7,12");
    await expect(picker.locator(".tv-ranks-note").first()).toHaveText("8 of 8");
    // ...1-2,6 three of them; a backwards range is refused, with the reason.
    await filter.fill("2-1");
    await expect(picker.locator(".tv-ranks-note").first()).toContainText("goes backwards");
    await filter.fill("1-2,6");
    await filter.press("Enter");
    await expect(all).toContainText("3 of 8");
    expect(await py("print(tl.ranks)")).toContain("[1, 2, 6]");

    // Pin rank 6 above the others; move rank 2 up past rank 1.
    await picker.getByRole("button", { name: "Pin rank 6" }).click();
    await expect(widget).toHaveAttribute("data-rank-order", "6,1,2");
    await picker.getByRole("button", { name: "Move rank 2 up" }).click();
    await expect(widget).toHaveAttribute("data-rank-order", "6,2,1");
    expect(await py("print(tl.pinned, tl.ranks)")).toContain("[6] [6, 2, 1]");
    writeArtifact("timeline-rank-picker.png", await widget.screenshot());

    // Collapse all, expand all (CPU threads unfolded too).
    await picker.getByRole("button", { name: "Collapse all" }).click();
    expect(await py("print(tl.collapsed)")).toContain("[0, 1, 2, 3, 4, 5, 6, 7]");
    await picker.getByRole("button", { name: "Expand all" }).click();
    expect(await py("print(tl.collapsed, tl.cpu_collapsed)")).toContain("[] []");

    // Presets from the analyses (the pinned rank stays first).
    const presets = await py(
      "from jupyter_traceview.views.timeline.ranks import rank_presets\np = rank_presets(trace)\n" +
        "print([r['rank'] for r in p['stragglers']], [r['rank'] for r in p['slowest']][:2])",
    );
    const [late, slow] = presets.split("] [").map((s) => s.replace(/[[\]]/g, ""));
    await picker.getByRole("button", { name: "Stragglers" }).click();
    await expect(widget).toHaveAttribute("data-rank-order", ["6", ...late!.split(", ")].filter((v, i, a) => a.indexOf(v) === i).join(","));
    await picker.getByRole("spinbutton", { name: "How many slowest ranks" }).fill("2");
    await picker.getByRole("button", { name: "Slowest" }).click();
    await expect(widget).toHaveAttribute("data-rank-order", ["6", ...slow!.split(", ")].filter((v, i, a) => a.indexOf(v) === i).join(","));
    // A preset replaces what the filter selected: the box is cleared.
    await filter.fill("0-3");
    await picker.getByRole("button", { name: "Slowest" }).click();
    await expect(filter).toHaveValue("");
    await picker.getByRole("button", { name: "Close the rank picker" }).click();
    await expect(picker).toBeHidden();

    // "All ranks" brings every rank back; a focus (what a dashboard link sets) keeps them all
    // and emphasises one: scrolled to, highlighted.
    await all.click();
    await expect(all).toBeDisabled();
    await runCell(page, "tl.show_range(tl.t0_ns + 1_000_000, tl.t0_ns + 3_000_000, focus=7)");
    await expect(widget).toHaveAttribute("data-focus-rank", "7");
    const band = widget.locator(".tv-focus-band");
    await expect(band).toBeVisible();
    await expect(all).toBeDisabled(); // every rank still shown
    expect(await py("print(tl.ranks, tl.focus_rank)")).toContain("[0, 1, 2, 3, 4, 5, 6, 7] 7");
    await widget.locator("canvas").scrollIntoViewIfNeeded();
    await settled(widget);
    const canvasBox = (await widget.locator("canvas").boundingBox())!;
    const bandBox = (await band.boundingBox())!;
    expect(bandBox.y).toBeGreaterThanOrEqual(canvasBox.y);
    expect(bandBox.y).toBeLessThan(canvasBox.y + canvasBox.height);
    writeArtifact("timeline-focus-rank.png", await widget.screenshot());

    // Back returns to the view before the focus: no emphasis.
    await widget.getByRole("button", { name: /Back/ }).click();
    await expect(widget).toHaveAttribute("data-focus-rank", "");
    await expect(band).toBeHidden();
  });
});
