// The dashboard's diagnosis on two traces built in the notebook (tests/kineto_builder.py's
// shapes): a CUDA-graph capture, whose header says graph_capture and whose launch finding
// describes the capture (no "try CUDA graphs"), and a copy-bound trace (HtoD copies 90 % of
// the span) with its copy_bound finding; both list the rules that did not fire, with why.
import { expect, test } from "@jupyterlab/galata";
import type { Locator, Page } from "@playwright/test";
import { addCell, newNotebook, runCell, writeArtifact } from "./helpers";

/** Python that writes the two traces (times in us, as Kineto writes them). */
const BUILD = `
import json, jupyter_traceview as tv

def x(cat, name, ts, dur, pid=100, tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

def gpu(cat, name, ts, dur, corr, **args):
    return x(cat, name, ts, dur, pid=0, tid=7, device=0, context=1, stream=7, correlation=corr, **args)

def write(path, events):
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "numSms": 80}], "traceEvents": events}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path

# A server capturing a CUDA graph: 200 tiny kernels launched every 10 us (the GPU waits for
# each launch), and the stream capture / instantiation calls.
capture = [x("user_annotation", "ProfilerStep#1", 0, 2010)]
for i in range(200):
    capture += [x("cuda_runtime", "cudaLaunchKernel", 10 * i, 5, correlation=i + 1),
                gpu("kernel", "vectorized_elementwise_kernel", 10 * i + 6, 3, i + 1)]
capture += [x("cuda_runtime", name, 5 + i, 1, correlation=9001 + i)
            for i, name in enumerate(["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate"])]

# Nine pinned 1 MB host-to-device copies of 100 us back to back, then a 100 us GEMM.
copies = [x("user_annotation", "ProfilerStep#1", -20, 1100)]
for i in range(9):
    copies += [x("cuda_runtime", "cudaMemcpyAsync", -10 + i, 1, correlation=i + 1),
               gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 100 * i, 100, i + 1, bytes=1_000_000)]
copies += [x("cuda_runtime", "cudaLaunchKernel", 0, 5, correlation=20), gpu("kernel", "volta_sgemm_128x64_nn", 900, 100, 20)]

capture_trace = tv.load(write("capture.json", capture), cache=False)
copy_trace = tv.load(write("copies.json", copies), cache=False)
import anywidget, bokeh
`;

function lastDashboard(page: Page): Locator {
  return page.locator(".tvd-dashboard").last();
}

async function openDashboard(page: Page, variable: string): Promise<Locator> {
  const cell = await addCell(page, `tv.Dashboard(${variable})`);
  await page.notebook.runCell(cell, { inplace: true, wait: false });
  const dash = lastDashboard(page);
  await expect(dash).toBeVisible({ timeout: 60000 });
  const overview = dash.locator('.tvd-panel[data-tab="overview"]');
  await expect(overview).toHaveAttribute("data-state", "ready", { timeout: 90000 });
  return dash;
}

/** The header chip with this label. */
function chip(dash: Locator, label: string): Locator {
  return dash.locator(".tvd-chip", { has: dash.page().locator(".tvd-chip-label", { hasText: label }) });
}

test.describe("Diagnosis: workload and coverage", () => {
  test.beforeEach(async ({ page }) => {
    await newNotebook(page, "diagnosis.ipynb");
    // One line (exec of the source): the editor would re-indent the blocks typed into it.
    await runCell(page, `exec(${JSON.stringify(BUILD)})`);
  });

  test("a CUDA-graph capture is described as a capture", async ({ page }) => {
    const dash = await openDashboard(page, "capture_trace");
    await expect(chip(dash, "workload")).toContainText("graph_capture");
    const overview = dash.locator('.tvd-panel[data-tab="overview"]');
    const launch = overview.locator('.tvd-finding[data-finding="launch_bound"]');
    await expect(launch.locator(".tvd-finding-title")).toContainText("GPU idle during CUDA graph capture");
    await expect(launch.locator(".tvd-finding-detail")).toContainText("one-off cost");
    await expect(launch.locator(".tvd-finding-detail")).not.toContainText("Try CUDA graphs");
    const checks = overview.locator(".tvd-checks .tvd-check");
    await expect(checks.filter({ hasText: "copy_bound: checked, fine: no memory copies" })).toHaveCount(1);
    writeArtifact("diagnosis-capture.png", await dash.screenshot());
  });

  test("a copy-bound trace gets its copy_bound finding", async ({ page }) => {
    const dash = await openDashboard(page, "copy_trace");
    await expect(chip(dash, "workload")).toContainText("inference");
    const overview = dash.locator('.tvd-panel[data-tab="overview"]');
    const copies = overview.locator('.tvd-finding[data-finding="copy_bound"]');
    await expect(copies.locator(".tvd-finding-title")).toContainText("Copy-bound: HtoD copies expose 900 us");
    await expect(copies.locator(".tvd-finding-detail")).toContainText("10 GB/s");
    await expect(overview.locator(".tvd-checks summary")).toContainText("Checked, no finding");
    await expect(overview.locator(".tvd-checks .tvd-check").first()).toBeVisible();
    writeArtifact("diagnosis-copies.png", await dash.screenshot());
  });
});
