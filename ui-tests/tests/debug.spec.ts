import { test } from "@jupyterlab/galata";
import { newNotebook, runCell, timeline, writeArtifact } from "./helpers";
test("debug", async ({ page }) => {
  page.on("console", (m) => console.log("CONSOLE", m.type(), m.text()));
  await newNotebook(page, "d.ipynb");
  await runCell(page, "import jupyter_traceview as tv\ntrace = tv.load(tv.sample_path())\nimport anywidget");
  const t0 = await page.evaluate(() => performance.now());
  await runCell(page, "import time\n_t=time.time()\ntl = tv.Timeline(trace, height=560)\nprint(time.time()-_t)\ntl", false);
  const w = timeline(page);
  await w.waitFor();
  const t1 = await page.evaluate(() => performance.now());
  for (let i = 0; i < 10; i++) {
    await page.waitForTimeout(500);
    const attrs = await w.evaluate((e) => JSON.stringify((e as HTMLElement).dataset));
    console.log(i, attrs);
  }
  console.log("t0", t0, "widget el at", t1);
  writeArtifact("debug.png", await w.screenshot());
});
