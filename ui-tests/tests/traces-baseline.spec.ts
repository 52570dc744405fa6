// The Traces sidebar against a baseline: "Set as Baseline" on a run, each other run's verdict
// badge (tv.compare in the server's worker: slower with the change, the top cause in its
// tooltip; same for a rerun), and "Compare with Baseline" opening the comparison (the run's
// dashboard on its Diff tab, tv.compare's verdict and causes). The pair is the recorded CPU
// one of tests/data/compare: a 10 ms sleep added to the step, and a rerun of the same loop.
import { expect, test } from "@jupyterlab/galata";
import type { IJupyterLabPageFixture } from "@jupyterlab/galata";
import type { Locator } from "@playwright/test";
import * as fs from "fs";
import * as path from "path";
import { REPO, writeArtifact } from "./helpers";

const PAIRS = path.join(REPO, "tests", "data", "compare");
/** Loading, analysing and comparing the runs in the server's worker, cold. */
const ANALYSIS_MS = 150_000;

async function uploadFolder(page: IJupyterLabPageFixture, local: string, dest: string): Promise<void> {
  for (const name of fs.readdirSync(local).filter((n) => !n.startsWith("."))) {
    expect(await page.contents.uploadFile(path.join(local, name), `${dest}/${name}`)).toBe(true);
  }
}

async function openTraces(page: IJupyterLabPageFixture, filter: string) {
  const panel = page.getByRole("region", { name: "Traces" });
  for (let attempt = 0; attempt < 4 && !(await panel.isVisible()); attempt++) {
    await page.evaluate(() =>
      (
        window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
      ).jupyterapp.commands.execute("traceview:open-sidebar"),
    );
  }
  await expect(panel).toBeVisible();
  await panel.getByRole("searchbox", { name: "Filter runs" }).fill(filter);
  return { panel, list: panel.getByRole("listbox", { name: "Trace runs" }) };
}

function row(list: Locator, runPath: string): Locator {
  return list.locator(`[role="option"][data-path="${runPath}"]`);
}

/** Right-click `target` and pick `item` from JupyterLab's context menu. */
async function contextMenu(page: IJupyterLabPageFixture, target: Locator, item: string): Promise<void> {
  await target.click({ button: "right" });
  const entry = page.locator(".lm-Menu").getByRole("menuitem", { name: item });
  await expect(entry).toBeVisible();
  await entry.click();
}

test.describe("Traces sidebar against a baseline", () => {
  test.setTimeout(300_000);

  test("shows each run's verdict against the baseline and opens the comparison", async ({
    page,
    tmpPath,
  }) => {
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const runs = `${tmpPath}/traceview-runs`;
    await uploadFolder(page, path.join(PAIRS, "base"), `${runs}/base`);
    await uploadFolder(page, path.join(PAIRS, "sleep"), `${runs}/sleep`);
    await uploadFolder(page, path.join(PAIRS, "rerun_0"), `${runs}/rerun`);

    const { panel, list } = await openTraces(page, tmpPath);
    const base = row(list, `${runs}/base`);
    const sleep = row(list, `${runs}/sleep`);
    const rerun = row(list, `${runs}/rerun`);
    await expect(list.getByRole("option")).toHaveCount(3);
    for (const r of [base, sleep, rerun]) {
      await expect(r).toHaveAttribute("data-status", "ready", { timeout: ANALYSIS_MS });
    }
    // No baseline yet: no verdicts, and nothing to compare with.
    await expect(list.locator(".tv-RunRow-verdict")).toHaveCount(0);

    // "Set as Baseline" from the context menu: kept beside the runs, as `traceview baseline set`.
    await contextMenu(page, base, "Set as Baseline");
    await expect(base.locator(".tv-RunRow-baselineBadge")).toHaveText("baseline");
    await expect(base.locator(".tv-RunRow-verdict")).toHaveCount(0);

    // Each other run's verdict, computed by tv.compare in the server's worker.
    const slower = sleep.locator(".tv-RunRow-verdict");
    await expect(slower).toHaveAttribute("data-verdict", "slower", { timeout: ANALYSIS_MS });
    await expect(slower).toHaveText(/^slower \+\d+(\.\d+)? ms \(\+\d+\.\d%\)$/);
    const tooltip = await slower.getAttribute("title");
    expect(tooltip).toContain(`Against baseline main (${runs}/base): slower`);
    expect(tooltip).toContain("Top cause: host: Python / other +");
    expect(tooltip).toContain("Noise: bootstrap");
    expect(tooltip).toContain("right-click: Compare with Baseline");
    const same = rerun.locator(".tv-RunRow-verdict");
    await expect(same).toHaveAttribute("data-verdict", "same", { timeout: ANALYSIS_MS });
    await expect(same).toHaveText(/^same /);
    writeArtifact("traces-baseline-verdicts.png", await panel.screenshot());

    // "Compare with Baseline": the run's dashboard with the baseline, on its Diff tab.
    await sleep.click();
    await contextMenu(page, sleep, "Compare with Baseline");
    const view = page.locator(`.tv-RunView[data-path="${runs}/sleep"][data-baseline="${runs}/base"]`);
    await expect(view).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    const diffTab = view.locator('.tvd-panel[data-tab="diff"]');
    await expect(diffTab).toBeVisible();
    await expect(diffTab).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(diffTab).toContainText(/slower \(\+\d+\.\d%\)/);
    await expect(diffTab.locator(".tvd-table").first()).toContainText("host: Python / other");
    writeArtifact("traces-baseline-compare.png", await view.screenshot());

    // The command works on the selected run from the palette too (the comparison of the rerun).
    await rerun.click();
    await page.evaluate(() =>
      (
        window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
      ).jupyterapp.commands.execute("traceview:compare-baseline"),
    );
    const rerunView = page.locator(`.tv-RunView[data-path="${runs}/rerun"][data-baseline="${runs}/base"]`);
    await expect(rerunView).toHaveAttribute("data-state", "ready", { timeout: ANALYSIS_MS });
    await expect(rerunView.locator('.tvd-panel[data-tab="diff"]')).toContainText(/same \([+-]\d+\.\d%\)/, {
      timeout: ANALYSIS_MS,
    });
    expect(errors).toEqual([]);
  });
});
