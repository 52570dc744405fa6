// What a run lacks, shown in JupyterLab (issue 38): a skipped rank file and a %%traceprofile
// run that raised are marked in the Traces sidebar (badges with their reasons on hover) and
// in the run's dashboard header; the findings say the last step is partial; two runs of one
// function read apart by their titles.
import { expect, test } from "@jupyterlab/galata";
import type { IJupyterLabPageFixture } from "@jupyterlab/galata";
import { darkProblems, textContrasts, writeArtifact } from "./helpers";
import { writeNoteRuns } from "./runnotes";

/** Loading and analysing a two-rank run in the server's worker, cold. */
const ANALYSIS_MS = 120_000;

async function openTraces(page: IJupyterLabPageFixture, filter: string) {
  const panel = page.getByRole("region", { name: "Traces" });
  await page.evaluate(() =>
    (
      window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
    ).jupyterapp.commands.execute("traceview:open-sidebar"),
  );
  await expect(panel).toBeVisible();
  await panel.getByRole("searchbox", { name: "Filter runs" }).fill(filter);
  return { panel, list: panel.getByRole("listbox", { name: "Trace runs" }) };
}

test.describe("Runs that lack something", () => {
  test.setTimeout(300_000);

  test("skipped files and a failed run are marked in the sidebar and the dashboard", async ({
    page,
    tmpPath,
  }) => {
    const runs = await writeNoteRuns(page.request, tmpPath);
    const { panel, list } = await openTraces(page, tmpPath);
    const row = (p: string) => list.locator(`[role="option"][data-path="${p}"]`);
    const skipped = row(runs.skipped);
    const failed = row(runs.failed);
    const good = row(runs.good);
    for (const r of [skipped, failed, good]) {
      await expect(r).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    }

    // 1. Two ranks read of three files: the row says one was skipped, and why on hover.
    await expect(skipped).toContainText("2 ranks");
    const skippedBadge = skipped.locator(".tv-RunRow-skipped");
    await expect(skippedBadge).toHaveText("1 skipped");
    await expect(skippedBadge).toHaveAttribute("title", /rank-2\.json: the JSON is truncated/);
    await expect(skipped).toHaveAttribute("title", /3 trace files \(1 not read:/);
    await expect(skipped.locator(".tv-RunRow-partial")).toHaveCount(0);

    // 2. The run that raised is partial; the one that ended well is not.
    await expect(failed.locator(".tv-RunRow-partial")).toHaveText("partial");
    await expect(failed.locator(".tv-RunRow-partial")).toHaveAttribute(
      "title",
      /raised.*last step is partial/,
    );
    await expect(good.locator(".tv-RunRow-partial")).toHaveCount(0);
    await expect(good.locator(".tv-RunRow-skipped")).toHaveCount(0);

    // 8. Two runs of loss_fn read apart: their cells' first lines, whole on hover.
    // A long title is cut in the middle (both ends show); neither is cut again by the row.
    await expect(failed.locator(".tv-RunRow-name")).toHaveText(runs.failedTitle);
    await expect(good.locator(".tv-RunRow-name")).toHaveText("loss = loss_fn(m…alid), y_valid)");
    await expect(good.locator(".tv-RunRow-name")).toHaveAttribute("title", runs.goodTitle);
    for (const name of [failed, good].map((r) => r.locator(".tv-RunRow-name"))) {
      expect(await name.evaluate((n) => n.scrollWidth <= n.clientWidth + 1), "name shown whole").toBe(true);
    }
    writeArtifact("traces-notes-sidebar.png", await panel.screenshot());

    // The dashboards: a warning chip in the header, its reason on hover.
    await skipped.click();
    await panel.getByRole("button", { name: "Open" }).click();
    const skippedView = page.locator(`.tv-RunView[data-path="${runs.skipped}"]:not([data-baseline])`);
    await expect(skippedView).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    const skippedChip = skippedView.locator(".tvd-head .tvd-chip-warn");
    await expect(skippedChip).toHaveCount(1);
    await expect(skippedChip).toContainText("skipped 1 trace file not read (rank-2.json)");
    await expect(skippedChip).toHaveAttribute("title", /rank-2\.json: the JSON is truncated/);
    writeArtifact("traces-notes-skipped-dashboard.png", await skippedView.screenshot());

    await failed.click();
    await panel.getByRole("button", { name: "Open" }).click();
    const failedView = page.locator(`.tv-RunView[data-path="${runs.failed}"]:not([data-baseline])`);
    await expect(failedView).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(failedView.locator(".tvd-head .tvd-chip-warn")).toContainText("run partial (cell raised)");
    const overview = failedView.locator('.tvd-panel[data-tab="overview"]');
    await expect(overview).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(overview.locator(".tvd-finding").filter({ hasText: "is partial and left out" })).toHaveCount(
      1,
    );
    writeArtifact("traces-notes-failed-dashboard.png", await failedView.screenshot());

    // The dark theme: the sidebar's rows, badges and buttons and the run's header read on it.
    await page.theme.setDarkTheme();
    await expect(failedView.locator(".tvd-dashboard")).toHaveAttribute("data-theme", "dark");
    await good.click(); // one row selected (the list unfocused), the others plain
    const problems = [
      ...darkProblems(
        "sidebar",
        await textContrasts(
          panel,
          ".tv-RunRow-name, .tv-RunRow-figure, .tv-RunRow-path, .tv-RunRow-age, .tv-RunRow-kind, button",
        ),
      ),
      ...darkProblems("sidebar badges", await textContrasts(panel, ".tv-RunRow-skipped, .tv-RunRow-partial")),
      ...darkProblems("run header", await textContrasts(failedView, ".tvd-head .tvd-chip, .tvd-tab")),
    ];
    writeArtifact("traces-notes-dark-sidebar.png", await page.screenshot());
    await page.theme.setLightTheme();
    expect(problems).toEqual([]);
  });
});
