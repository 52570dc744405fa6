// The Traces sidebar in JupyterLab: runs listed with their figures (and an error row for a
// corrupt one), keyboard access, a run panel, a diff, a %%traceprofile run appearing live,
// and the insert-code action producing code that runs.
import { expect, test } from "@jupyterlab/galata";
import type { IJupyterLabPageFixture } from "@jupyterlab/galata";
import type { Locator } from "@playwright/test";
import * as fs from "fs";
import * as path from "path";
import { REPO, cellText, newNotebook, runCell, settled, writeArtifact } from "./helpers";

const SAMPLE = path.join(REPO, "jupyter_traceview", "samples", "dlrm_8rank_v100");
const TWO_RANKS = path.join(REPO, "tests", "data", "hta_dlrm_2of128_ranks");
/** Loading and analysing the 8-rank sample in the server's worker, cold. */
const ANALYSIS_MS = 150_000;

/** Upload every file of a local folder into `dest` on the server. */
async function uploadFolder(page: IJupyterLabPageFixture, local: string, dest: string): Promise<void> {
  for (const name of fs.readdirSync(local).filter((n) => !n.startsWith("."))) {
    expect(await page.contents.uploadFile(path.join(local, name), `${dest}/${name}`)).toBe(true);
  }
}

/** Open the Traces sidebar from the command palette; returns the panel and its parts. */
async function openTraces(page: IJupyterLabPageFixture, filter: string) {
  const panel = page.getByRole("region", { name: "Traces" });
  // A notebook starting its kernel may take the focus and close the palette: try again.
  for (let attempt = 0; attempt < 4 && !(await panel.isVisible()); attempt++) {
    // The palette's own command (its shortcut depends on where the focus is).
    await page.evaluate(() =>
      (
        window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
      ).jupyterapp.commands.execute("apputils:activate-command-palette"),
    );
    const input = page.locator("#command-palette").getByRole("textbox");
    try {
      await input.fill("Open the Traces Panel", { timeout: 10_000 });
      await input.press("Enter", { timeout: 10_000 });
      await expect(panel).toBeVisible({ timeout: 10_000 });
    } catch {
      await page.keyboard.press("Escape");
    }
  }
  await expect(panel).toBeVisible();
  await panel.getByRole("searchbox", { name: "Filter runs" }).fill(filter);
  return { panel, list: panel.getByRole("listbox", { name: "Trace runs" }) };
}

/** The row of the run whose path ends with `/suffix` (rows carry their path). */
function row(list: Locator, runPath: string): Locator {
  return list.locator(`[role="option"][data-path="${runPath}"]`);
}

/** Console errors and uncaught exceptions of the page, collected from now on. */
function collectErrors(page: IJupyterLabPageFixture): string[] {
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

test.describe("Traces sidebar", () => {
  test.setTimeout(300_000);

  test("lists runs with figures and errors, opens one from the keyboard, diffs two", async ({ page, tmpPath }) => {
    const errors = collectErrors(page);
    await uploadFolder(page, SAMPLE, `${tmpPath}/dlrm`);
    await uploadFolder(page, TWO_RANKS, `${tmpPath}/two`);
    await page.contents.uploadContent('{"traceEvents": [{"ph": "X", "name": "a"', "text", `${tmpPath}/broken/rank-0.json`);

    const { panel, list } = await openTraces(page, tmpPath);
    const dlrm = row(list, `${tmpPath}/dlrm`);
    const two = row(list, `${tmpPath}/two`);
    const broken = row(list, `${tmpPath}/broken`);
    await expect(list.getByRole("option")).toHaveCount(3);

    // Headline figures once the server has analysed the runs; the corrupt one is an error row.
    await expect(dlrm).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    await expect(dlrm).toContainText("8 ranks");
    await expect(dlrm).toContainText(/GPU \d+\.\d%/);
    await expect(dlrm).toContainText(/idle \d+\.\d%/);
    await expect(dlrm).toContainText(/comm \d+\.\d%/);
    await expect(dlrm).toContainText(/\d+(\.\d+)? ms/);
    await expect(broken).toHaveAttribute("data-status", "error", { timeout: ANALYSIS_MS });
    await expect(broken).toContainText(/truncated|cannot|invalid/i);
    await expect(two).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    await expect(two).toContainText("2 ranks");

    writeArtifact("traces-sidebar.png", await panel.screenshot());

    // Keyboard: click a row, move with the arrows, open with Enter.
    await two.click();
    await expect(two).toHaveAttribute("aria-selected", "true");
    await list.press("Home");
    const first = list.getByRole("option").first();
    await expect(first).toHaveAttribute("aria-selected", "true");
    await expect(list).toHaveAttribute("aria-activedescendant", (await first.getAttribute("id"))!);
    for (let i = 0; i < 3 && (await dlrm.getAttribute("aria-selected")) !== "true"; i++) {
      await list.press("ArrowDown");
    }
    await expect(dlrm).toHaveAttribute("aria-selected", "true");
    await expect(list.locator('[aria-selected="true"]')).toHaveCount(1);
    await list.press("Enter");

    // The run panel is tv.Dashboard's view, fed by the server: Overview, then the timeline.
    const view = page.locator(`.tv-RunView[data-path="${tmpPath}/dlrm"]:not([data-baseline])`);
    await expect(view).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    const dash = view.locator(".tvd-dashboard");
    await expect(dash.locator(".tvd-chip").filter({ hasText: "ranks" })).toContainText("8");
    const overview = dash.locator('.tvd-panel[data-tab="overview"]');
    await expect(overview).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(overview.locator(".tvd-finding").first()).toBeVisible();
    const charts = overview.locator(".tvd-chart");
    expect(await charts.count()).toBeGreaterThan(0);
    await expect(charts.first()).toHaveAttribute("data-drawn", "1", { timeout: 60_000 });
    writeArtifact("traces-run-overview.png", await view.screenshot());
    await dash.locator('.tvd-tab[data-tab="timeline"]').click();
    await settled(dash.locator(".tv-timeline"));
    await expect(dash.locator(".tv-timeline canvas").first()).toBeVisible();
    writeArtifact("traces-run-timeline.png", await view.screenshot());

    // JupyterLab's theme: the dashboard follows it (charts asked again in the dark theme).
    await expect(dash).toHaveAttribute("data-theme", "light");
    await page.theme.setDarkTheme();
    await expect(dash).toHaveAttribute("data-theme", "dark");
    await dash.locator('.tvd-tab[data-tab="overview"]').click();
    await expect(overview).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(charts.first()).toHaveAttribute("data-drawn", "1", { timeout: 60_000 });
    writeArtifact("traces-run-overview-dark.png", await view.screenshot());
    await page.theme.setLightTheme();

    // Two runs selected (Shift+arrows for a range is the other way): the dashboard of the
    // newer one with the older as its baseline, on its Diff tab.
    await dlrm.click();
    await two.click({ modifiers: ["ControlOrMeta"] });
    await expect(list.locator('[aria-selected="true"]')).toHaveCount(2);
    await panel.getByRole("button", { name: "Diff" }).click();
    const diff = page.locator(`.tv-RunView[data-path="${tmpPath}/two"][data-baseline="${tmpPath}/dlrm"]`);
    await expect(diff).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    const diffTab = diff.locator('.tvd-panel[data-tab="diff"]');
    await expect(diffTab).toBeVisible();
    await expect(diffTab).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(diffTab.locator(".tvd-table tr").nth(1)).toBeVisible();
    await expect(diffTab).toContainText("dlrm");
    writeArtifact("traces-diff.png", await diff.screenshot());
    expect(ours(errors), "no console errors").toEqual([]);
  });

  test("a %%traceprofile run appears without reloading the page", async ({ page, tmpPath }) => {
    await newNotebook(page, "profile.ipynb");
    await runCell(page, "%load_ext jupyter_traceview");
    const { list } = await openTraces(page, `${tmpPath}/traceview-runs`);
    await expect(list.getByRole("option")).toHaveCount(0);

    const index = await runCell(
      page,
      "%%traceprofile --cpu-only --name galata --no-show\nimport torch\nx = torch.randn(64, 64)\ny = x @ x",
    );
    expect(await cellText(page, index)).toContain("traceview-runs");
    const run = list.getByRole("option").filter({ hasText: /galata\/\d{8}-\d{6}/ });
    await expect(run).toHaveCount(1, { timeout: 60_000 });
    await expect(run).toContainText("traceprofile");
    await expect(run).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    await expect(run).toContainText("CPU only");
  });

  test("insert-code puts working code into the notebook", async ({ page, tmpPath }) => {
    await uploadFolder(page, SAMPLE, `${tmpPath}/dlrm`);
    await newNotebook(page, "load.ipynb");
    const { panel, list } = await openTraces(page, tmpPath);
    const dlrm = row(list, `${tmpPath}/dlrm`);
    await dlrm.click();
    await panel.getByRole("button", { name: "Insert load code" }).click();

    // The new notebook's empty cell receives the code, with the import it needs.
    const source = page.locator(".jp-Notebook .jp-Cell").first().locator(".jp-InputArea-editor");
    await expect(source).toContainText('trace = tv.load("dlrm")');
    await expect(source).toContainText("import jupyter_traceview as tv");
    await page.notebook.runCell(0, { inplace: true, wait: true });
    await page.notebook.addCell("code", "print(len(trace.ranks), type(trace).__name__)");
    await page.notebook.runCell(1, { inplace: true, wait: true });
    expect(await cellText(page, 1)).toContain("8 Trace");

    // A second insertion goes below the active cell, without a second import.
    await dlrm.click();
    await panel.getByRole("button", { name: "Insert load code" }).click();
    const cells = page.locator(".jp-Notebook .jp-Cell");
    await expect(cells).toHaveCount(3);
    await expect(cells.nth(2).locator(".jp-InputArea-editor")).toHaveText('trace = tv.load("dlrm")');
  });
});
