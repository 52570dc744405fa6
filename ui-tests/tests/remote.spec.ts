// The Traces sidebar's runs in object storage (c.TraceviewServer.remote_roots): the test
// server's remote root is s3://tv-ui/runs on a local S3 emulator (jupyter_server_test_config.py)
// that this spec starts itself (tests/s3_emulator.py), so that the sidebar first meets an
// unreachable store: a clear error without the configured secrets. Then the run is listed,
// Open shows its dashboard (the server reads the objects) and Insert load code puts a
// tv.load("s3://...") into the notebook that loads it in the kernel.
import { expect, test } from "@jupyterlab/galata";
import type { IJupyterLabPageFixture } from "@jupyterlab/galata";
import { spawn, spawnSync } from "child_process";
import type { ChildProcessWithoutNullStreams } from "child_process";
import { REPO } from "./helpers";

/** The emulator's port: jupyter_server_test_config.py points the remote root there. */
const S3_PORT = Number(process.env.TRACEVIEW_S3_PORT || Number(process.env.TRACEVIEW_UI_PORT || "8888") + 2);
const ROOT = "s3://tv-ui/runs";
const RUN_URL = `${ROOT}/bert-small`;
/** A real one-rank H100 trace (70 KB). */
const TRACE = "tests/data/h100_bert_small/gaunernst_bert-small-uncased__1016001.json.gz";
/** What the test server's configuration holds: never shown. */
const SECRETS = ["tv-ui-server-key", "tv-ui-server-secret"];

/** Whether this Python has the emulator and the S3 filesystem (the test extra). */
function hasMoto(): boolean {
  return spawnSync("python", ["-c", "import moto.server, boto3, s3fs"], { cwd: REPO }).status === 0;
}

/** Start the emulator with the run in it; resolves once it says it is ready. */
function startEmulator(): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn(
    "python",
    [
      "-m",
      "tests.s3_emulator",
      "--port",
      String(S3_PORT),
      "--bucket",
      "tv-ui",
      "--put",
      `runs/bert-small/rank-0.json.gz=${TRACE}`,
    ],
    { cwd: REPO },
  );
  return new Promise((resolve, reject) => {
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.stdout.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`the S3 emulator exited (${String(code)}): ${err}`)));
  });
}

/** Run an application command (`wait`: until it resolves). */
async function execute(page: IJupyterLabPageFixture, id: string, wait = true): Promise<void> {
  await page.evaluate(
    async ([command, wait]) => {
      const app = (
        window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
      ).jupyterapp;
      const done = app.commands.execute(command as string);
      if (wait) await done;
    },
    [id, wait],
  );
}

/** A notebook whose second cell shows `trace`: the load code goes below its first (active) cell. */
const NOTEBOOK = JSON.stringify({
  cells: [
    { cell_type: "markdown", metadata: {}, source: "A run in object storage" },
    { cell_type: "code", metadata: {}, source: "trace", outputs: [], execution_count: null },
  ],
  metadata: { kernelspec: { name: "python3", display_name: "Python 3 (ipykernel)", language: "python" } },
  nbformat: 4,
  nbformat_minor: 5,
});

test("runs in object storage: an unreachable store named, then listed, loaded and opened", async ({
  page,
  tmpPath,
}) => {
  test.skip(!hasMoto(), "moto[server], boto3 or s3fs is not installed (the test extra)");
  let emulator: ChildProcessWithoutNullStreams | null = null;
  try {
    expect(await page.contents.uploadContent(NOTEBOOK, "text", `${tmpPath}/remote.ipynb`)).toBe(true);
    expect(await page.notebook.openByPath(`${tmpPath}/remote.ipynb`)).toBe(true);
    await execute(page, "traceview:open-sidebar");
    const panel = page.getByRole("region", { name: "Traces" });
    await expect(panel).toBeVisible();
    // The filter box filters the remote runs too (and leaves out every local run here).
    await panel.getByRole("searchbox", { name: "Filter runs" }).fill("tv-ui");
    const remote = panel.getByRole("region", { name: "Trace runs in object storage" });

    // Nothing listens on the endpoint yet: one error naming the root, no secret.
    const alert = remote.getByRole("alert");
    await expect(alert).toContainText(`Cannot list ${ROOT}: the store cannot be reached`);
    for (const secret of SECRETS) await expect(remote).not.toContainText(secret);

    emulator = await startEmulator();
    await execute(page, "traceview:refresh");
    const row = remote.getByRole("listitem").filter({ hasText: "bert-small" });
    await expect(row).toContainText("1 file");
    await expect(alert).toHaveCount(0);

    // Insert load code: below the notebook's active cell; the kernel loads the run with its own
    // credentials (the notebook runs while the server opens the run below).
    await row.getByRole("button", { name: "Insert load code" }).click();
    const cells = page.locator(".jp-Notebook .jp-Cell");
    await expect(cells).toHaveCount(3);
    await expect(cells.nth(1).locator(".jp-InputArea-editor")).toContainText(`trace = tv.load("${RUN_URL}")`);
    await execute(page, "notebook:run-all-cells", false);

    // Open: the run's dashboard, read by the server from the store with the server's credentials.
    await row.getByRole("button", { name: "Open" }).click();
    const view = page.locator(`.tv-RunView[data-path="${RUN_URL}"]`);
    await expect(view).toHaveAttribute("data-state", "ready", { timeout: 60_000 });
    const dash = view.locator(".tvd-dashboard");
    await expect(dash.locator(".tvd-source")).toHaveText(RUN_URL);
    await expect(dash.locator(".tvd-chips")).toContainText("NVIDIA H100");
    await expect(page.getByRole("tab", { name: /bert-small/ })).toBeVisible();

    await page.getByRole("tab", { name: "remote.ipynb" }).click();
    const out = cells.nth(2).locator(".jp-OutputArea-output");
    await expect(out).toContainText(`Trace ${RUN_URL}`, { timeout: 60_000 });
    await expect(out).toContainText("NVIDIA H100");
  } finally {
    if (emulator !== null) {
      emulator.stdin.end(); // it serves until its stdin closes
      emulator.kill();
    }
  }
});
