// Search over event arguments on the 8-rank DLRM sample (issue 16): a pattern found only in
// recorded arguments (the element count 6144 of the first all-to-all, on its nccl:all_to_all
// annotation, twice per rank) is counted, dims everything else, and Enter / Shift+Enter walk
// its matches in time order from the earliest.
import { expect, test } from "@jupyterlab/galata";
import { addCell, cellText, newNotebook, runCell, settled, timeline } from "./helpers";

test.describe("Timeline search over arguments", () => {
  test("an argument-only pattern: count, dimming, order", async ({ page }) => {
    await newNotebook(page, "timeline-search-args.ipynb");
    await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget");
    const cell = await addCell(page, "tl = tv.Timeline(trace, height=560)\ntl");
    await page.notebook.runCell(cell, { inplace: true, wait: false });
    const widget = timeline(page);
    await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 60000 });
    await page.notebook.waitForRun(cell);
    // The oracle: starts of the events whose comms row records 6144 input elements.
    const oracle = await runCell(
      page,
      "c = trace.comms()\nev = trace.events().merge(c.loc[c.in_nelems == 6144, ['rank', 'eid']], on=['rank', 'eid'])\n" +
        "s = sorted(int(t) - trace.t0_ns for t in ev.ts_ns)\nprint(len(s), s[0], s[1], sorted(set(ev.name.astype(str))))",
    );
    const [count, earliest, second, names] = (await cellText(page, oracle)).trim().split(/\s+/, 4);
    expect(count).toBe("16");
    expect(names).toContain("nccl:all_to_all");
    await widget.locator("canvas").scrollIntoViewIfNeeded();
    await settled(widget);

    // No name holds the pattern: only arguments match it.
    const search = widget.locator(".tv-search");
    await search.fill("in_nelems=6144");
    await expect.poll(async () => await widget.getAttribute("data-search-count")).toBe("16");
    await expect(widget.locator(".tv-search-count")).toContainText("16 matches");

    // Enter walks from the earliest match, in time order; Shift+Enter goes back.
    await search.press("Enter");
    await expect.poll(async () => await widget.getAttribute("data-match-start")).toBe(earliest);
    await search.press("Enter");
    await expect.poll(async () => await widget.getAttribute("data-match-start")).toBe(second);
    await search.press("Shift+Enter");
    await expect.poll(async () => await widget.getAttribute("data-match-start")).toBe(earliest);

    // Zoomed onto the match: it is outlined and the rest is dimmed.
    await settled(widget);
    await expect.poll(async () => Number(await widget.getAttribute("data-match-rects"))).toBeGreaterThan(0);
    await expect.poll(async () => Number(await widget.getAttribute("data-dimmed"))).toBeGreaterThan(0);
    // The selection is the annotation that records it.
    const sel = await runCell(page, "print(tl.selection.name)");
    expect(await cellText(page, sel)).toContain("nccl:all_to_all");
  });
});
