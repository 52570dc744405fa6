// The Traces sidebar in Notebook 7 (issue 38): Notebook 7 shows one document per browser
// page, so the run and diff panels open as tabs of the tree page, or, from a notebook's page,
// in a new browser tab of the tree page; Insert load code fills the page's notebook. The
// marks of what a run lacks (skipped files, a partial run) show as in JupyterLab.
// Runs in the "notebook7" project (playwright.config.js), against `jupyter notebook`.
import { expect, test } from "@playwright/test";
import type { APIRequestContext, Page } from "@playwright/test";
import { writeArtifact } from "./helpers";
import { writeNoteRuns } from "./runnotes";

/** Loading and analysing a two-rank run in the server's worker, cold. */
const ANALYSIS_MS = 120_000;

async function openTraces(page: Page, filter: string) {
  const panel = page.getByRole("region", { name: "Traces" });
  // The extension's plugin activates once the page's application has started.
  await page.waitForFunction(
    () =>
      (
        window as unknown as { jupyterapp?: { commands: { hasCommand(id: string): boolean } } }
      ).jupyterapp?.commands.hasCommand("traceview:open-sidebar") === true,
    undefined,
    { timeout: 60_000 },
  );
  await page.evaluate(() =>
    (
      window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
    ).jupyterapp.commands.execute("traceview:open-sidebar"),
  );
  await expect(panel).toBeVisible();
  await panel.getByRole("searchbox", { name: "Filter runs" }).fill(filter);
  return { panel, list: panel.getByRole("listbox", { name: "Trace runs" }) };
}

async function emptyNotebook(request: APIRequestContext, path: string): Promise<void> {
  const content = {
    cells: [{ cell_type: "code", source: "", metadata: {}, outputs: [], execution_count: null }],
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  const answer = await request.put(`api/contents/${path}`, {
    data: { type: "notebook", format: "json", content },
  });
  expect(answer.ok()).toBe(true);
}

test.describe("Traces sidebar in Notebook 7", () => {
  test.setTimeout(300_000);

  test("Open, Diff and Insert load code work on the tree and notebook pages", async ({ page, request }) => {
    const root = `nb7-${Date.now()}`;
    const runs = await writeNoteRuns(request, root);
    await emptyNotebook(request, `${root}/load.ipynb`);

    // The tree page: the runs, with what they lack marked as in JupyterLab.
    await page.goto(`tree/${root}`);
    const { panel, list } = await openTraces(page, root);
    const row = (p: string) => list.locator(`[role="option"][data-path="${p}"]`);
    for (const p of [runs.skipped, runs.failed, runs.good]) {
      await expect(row(p)).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    }
    await expect(row(runs.skipped).locator(".tv-RunRow-skipped")).toHaveText("1 skipped");
    await expect(row(runs.failed).locator(".tv-RunRow-partial")).toHaveText("partial");
    await expect(row(runs.good).locator(".tv-RunRow-name")).toHaveAttribute("title", runs.goodTitle);

    // Open: a tab of the tree page, beside Files and Running.
    await row(runs.skipped).click();
    await panel.getByRole("button", { name: "Open" }).click();
    const view = page.locator(`.tv-RunView[data-path="${runs.skipped}"]:not([data-baseline])`);
    await expect(view).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(view).toBeVisible();
    await expect(view.locator(".tvd-head .tvd-chip-warn")).toContainText("skipped");
    writeArtifact("nb7-tree-run.png", await page.screenshot());

    // Diff: two runs selected, the newer with the older as its baseline.
    await row(runs.failed).click();
    await row(runs.good).click({ modifiers: ["ControlOrMeta"] });
    await panel.getByRole("button", { name: "Diff" }).click();
    const diff = page.locator(`.tv-RunView[data-path="${runs.good}"][data-baseline="${runs.failed}"]`);
    await expect(diff).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(diff).toBeVisible();

    // A notebook's page: Open shows the run in a new browser tab of the tree page.
    await page.goto(`notebooks/${root}/load.ipynb`);
    const nb = await openTraces(page, root);
    const failedRow = nb.list.locator(`[role="option"][data-path="${runs.failed}"]`);
    await expect(failedRow).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    await failedRow.click();
    const [popup] = await Promise.all([
      page.context().waitForEvent("page"),
      nb.panel.getByRole("button", { name: "Open" }).click(),
    ]);
    await popup.waitForLoadState();
    expect(popup.url()).toContain("/tree?traceview-open=");
    const opened = popup.locator(`.tv-RunView[data-path="${runs.failed}"]:not([data-baseline])`);
    await expect(opened).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(opened.locator(".tvd-head .tvd-chip-warn")).toContainText("run partial (cell raised)");
    writeArtifact("nb7-popup-run.png", await popup.screenshot());
    await popup.close();

    // Insert load code: into the page's notebook, with the import it needs.
    await failedRow.click();
    await nb.panel.getByRole("button", { name: "Insert load code" }).click();
    const source = page.locator(".jp-Notebook .jp-Cell").first().locator(".jp-InputArea-editor");
    await expect(source).toContainText('trace = tv.load("traceview-runs/loss_fn/20260101-120000")');
    await expect(source).toContainText("import jupyter_traceview as tv");
  });
});
