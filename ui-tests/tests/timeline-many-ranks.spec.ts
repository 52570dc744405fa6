// The rank picker at 1,024 ranks (issue 16): the list is virtual (only the rows in view are in
// the DOM), the filter (`0-7,12`, a regex) answers as one types, keyboard navigation walks the
// whole list (↓, End, Home) scrolling it, and pin and the presets still work. The trace:
// TRACEVIEW_MANY_RANKS_TRACE, else /tmp/traceview_synth_1024x50 (1,024 small ranks written by
// benchmarks/synth.py when missing). The time to open the picker and to filter is written to
// ui-tests/artifacts/rank-picker-1024.json (not asserted: the machine's load varies).
import { expect, test } from "@jupyterlab/galata";
import * as path from "path";
import { REPO, addCell, cellText, newNotebook, runCell, timeline, writeArtifact } from "./helpers";

const TRACE = process.env.TRACEVIEW_MANY_RANKS_TRACE ?? "/tmp/traceview_synth_1024x50";

test("rank picker at 1,024 ranks: virtual list, filter, keys, pin, presets", async ({ page }) => {
  test.setTimeout(600_000);
  await newNotebook(page, "many-ranks.ipynb");
  const benchmarks = path.join(REPO, "benchmarks");
  await runCell(
    page,
    [
      "import sys, pathlib",
      `sys.path.insert(0, ${JSON.stringify(benchmarks)})`,
      "import synth, jupyter_traceview as tv",
      `folder = pathlib.Path(${JSON.stringify(TRACE)})`,
      "None if len(list(folder.glob('*.json*'))) >= 1024 else synth.generate(folder, 1024, 50, workers=1)",
      "trace = tv.load(folder, progress=False)",
    ].join("\n"),
  );
  const cell = await addCell(page, "tl = tv.Timeline(trace, height=500)\ntl");
  await page.notebook.runCell(cell, { inplace: true, wait: false });
  const widget = timeline(page);
  await expect(widget).toHaveAttribute("data-first-paint", /\d/, { timeout: 300_000 });
  await page.notebook.waitForRun(cell);
  const py = async (code: string): Promise<string> => (await cellText(page, await runCell(page, code))).trim();
  expect(await py("print(len(tl.ranks))")).toBe("1024");

  // Open: the list knows 1,024 rows but only the ones in view (and a few more) are in the DOM.
  const timings: Record<string, number> = {};
  const open = widget.getByRole("button", { name: "Ranks ▾" });
  const picker = widget.getByRole("dialog", { name: "Rank picker" });
  const list = picker.locator(".tv-ranks-list");
  let t = Date.now();
  await open.click();
  await expect(picker).toBeVisible();
  await expect(list).toHaveAttribute("data-rows", "1024");
  timings.open_ms = Date.now() - t;
  const rendered = Number(await list.getAttribute("data-rendered"));
  expect(rendered).toBeGreaterThan(5);
  expect(rendered).toBeLessThan(40);
  expect(await picker.getByRole("listitem").count()).toBe(rendered);
  await expect(picker.getByRole("listitem").first()).toHaveAttribute("aria-setsize", "1024");

  // The filter answers as one types: ranks and ranges, then a regex.
  const filter = picker.getByRole("searchbox", { name: "Filter ranks" });
  const note = picker.locator(".tv-ranks-note").first();
  t = Date.now();
  await filter.fill("0-7,12");
  await expect(note).toHaveText("9 of 1,024");
  timings.filter_ms = Date.now() - t;
  await filter.fill("^10");
  await expect(note).toHaveText("35 of 1,024"); // 10, 100-109, 1000-1023

  // Keyboard: ↓ moves to the next row's checkbox, End to the last row (the list scrolls and
  // renders it), Home back to the first.
  await picker.getByRole("checkbox", { name: "Show rank 0", exact: true }).focus();
  await page.keyboard.press("ArrowDown");
  await expect(picker.getByRole("checkbox", { name: "Show rank 1", exact: true })).toBeFocused();
  await page.keyboard.press("End");
  await expect(picker.getByRole("checkbox", { name: "Show rank 1023", exact: true })).toBeFocused();
  expect(Number(await list.getAttribute("data-start"))).toBeGreaterThan(900);
  expect(await picker.getByRole("checkbox", { name: "Show rank 0", exact: true }).count()).toBe(0);
  // Space unticks it: rank 1023 hidden (the list keeps the focus on its row).
  await page.keyboard.press("Space");
  await expect(widget.getByRole("button", { name: /All ranks/ })).toContainText("1023 of 1024");
  await page.keyboard.press("Home");
  await expect(picker.getByRole("checkbox", { name: "Show rank 0", exact: true })).toBeFocused();

  // Pin a rank far down the list: it is drawn first.
  await list.evaluate((e) => (e.scrollTop = 1000 * 24));
  await picker.getByRole("button", { name: "Pin rank 1000", exact: true }).click();
  await expect(widget).toHaveAttribute("data-rank-order", /^1000,0,1,2,/);
  // The kernel hears it (after the presets' computation the picker started, when still running).
  await expect.poll(() => py("print(tl.pinned)"), { timeout: 120_000 }).toBe("[1000]");

  // Filter then Show: the pinned rank stays, then the filter's ranks.
  await filter.fill("0-7,12");
  await filter.press("Enter");
  await expect(widget).toHaveAttribute("data-rank-order", "1000,0,1,2,3,4,5,6,7,12");
  // The stragglers preset (synth makes rank 1 slow: it arrives last).
  // At 1,024 ranks they are computed when asked (not on opening: they hold the kernel a while).
  await expect(picker.locator(".tv-ranks-note").nth(1)).toContainText("computed when you click");
  await picker.getByRole("button", { name: "Stragglers" }).click();
  await expect(widget).toHaveAttribute("data-rank-preset", "stragglers", { timeout: 300_000 });
  await expect.poll(() => py("print(tl.ranks[:1], len(tl.ranks) >= 2)"), { timeout: 120_000 }).toBe("[1000] True");
  writeArtifact("rank-picker-1024.png", await widget.screenshot());
  writeArtifact("rank-picker-1024.json", JSON.stringify({ ranks: 1024, rendered_rows: rendered, ...timings }, null, 1));
});
