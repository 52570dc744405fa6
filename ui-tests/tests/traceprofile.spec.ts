// %%traceprofile in JupyterLab: a profiled cell behaves as without the magic (its output and
// its last value appear) and the run's dashboard appears under it, drawn.
import { expect, test } from "@jupyterlab/galata";
import { cellText, newNotebook, runCell, writeArtifact } from "./helpers";

test("a %%traceprofile cell shows its output, its value and the run's dashboard", async ({ page }) => {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await newNotebook(page, "traceprofile.ipynb");
  await runCell(page, "%load_ext jupyter_traceview");

  const index = await runCell(
    page,
    [
      "%%traceprofile --cpu-only --name galata-show --repeat 2 --warmup 1",
      "import torch",
      "x = torch.randn(128, 128)",
      "y = (x @ x).relu()",
      "print('cell ran')",
      "tuple(y.shape)",
    ].join("\n"),
  );
  const cell = page.locator(".jp-Notebook .jp-Cell").nth(index);
  const dash = cell.locator(".tvd-dashboard");
  await expect(dash).toBeVisible({ timeout: 120_000 });
  // A CPU-only run opens on its Operators tab: no GPU tab, no "No GPU activity" chart.
  const ops = dash.locator('.tvd-panel[data-tab="operators"]');
  await expect(ops).toHaveAttribute("data-state", "ready", { timeout: 120_000 });
  await expect(ops).toBeVisible();
  await expect(dash.locator('.tvd-tab[data-tab="overview"]')).toHaveCount(0);
  await expect(dash.locator('.tvd-tab[data-tab="kernels"]')).toHaveCount(0);
  // The operators table lists the cell's matmul; the call tree and the threads are drawn;
  // the findings are about the CPU.
  await expect(ops.locator(".tvd-table").first()).toContainText("aten::mm");
  await expect(ops.locator('.tvd-chart[data-chart="call_tree"]')).toBeVisible();
  await expect(ops.locator('.tvd-chart[data-chart="threads"]')).toBeVisible();
  // (Which host finding ranks first depends on the run's timing: Python overhead may lead.)
  await expect(ops.locator('.tvd-finding[data-finding="cpu_hotspots"]')).toContainText("CPU time");
  await expect(ops).not.toContainText("No GPU activity");
  await expect(ops).not.toContainText("Nothing to report");

  const text = await cellText(page, index);
  expect(text).toContain("cell ran");
  expect(text).toContain("(128, 128)");
  expect(text).toContain("galata-show");

  // The variable the cell assigned lands in the user namespace, as without the magic.
  const check = await runCell(page, "print(y.shape[0] + 1)");
  expect(await cellText(page, check)).toContain("129");
  writeArtifact("traceprofile-dashboard.png", await cell.screenshot());
  expect(errors).toEqual([]);
});

test("a %%traceprofile --memory cell shows a real Memory tab", async ({ page }) => {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await newNotebook(page, "traceprofile-memory.ipynb");
  await runCell(page, "%load_ext jupyter_traceview");

  const index = await runCell(
    page,
    [
      "%%traceprofile --cpu-only --memory --name galata-memory --repeat 3 --warmup 1",
      "import torch",
      "w = torch.randn(256, 256, requires_grad=True)",
      "loss = torch.relu(torch.randn(64, 256) @ w).sum()",
      "loss.backward()",
    ].join("\n"),
  );
  const cell = page.locator(".jp-Notebook .jp-Cell").nth(index);
  const dash = cell.locator(".tvd-dashboard");
  await expect(dash).toBeVisible({ timeout: 120_000 });
  await dash.locator('.tvd-tab[data-tab="memory"]').click();
  const panel = dash.locator('.tvd-panel[data-tab="memory"]');
  await expect(panel).toHaveAttribute("data-state", "ready", { timeout: 120_000 });
  // The curve is drawn, with data (not the "no memory records" placeholder).
  const chart = panel.locator('.tvd-chart[data-chart="memory_timeline"]');
  await expect(chart).toHaveAttribute("data-drawn", "1", { timeout: 60_000 });
  await expect(chart).not.toHaveAttribute("data-empty", "1");
  // The per-operator table lists CPU allocations of the cell's operators.
  const ops = panel.locator('.tvd-table-box[data-table="memory_operators"]');
  await expect(ops).toContainText("aten::");
  await expect(ops).toContainText("CPU");
  writeArtifact("traceprofile-memory.png", await cell.screenshot());
  expect(errors).toEqual([]);
});
