// Galata (Playwright) configuration: JupyterLab is started by the webServer below with
// jupyter_server_test_config.py, and the tests drive /usr/bin/chromium (Playwright's own
// browser download is not used: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 when installing).
const baseConfig = require("@jupyterlab/galata/lib/playwright-config");

const chromium = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
// The JupyterLab server's port (jupyter_server_test_config.py reads the same variable).
const port = process.env.TRACEVIEW_UI_PORT || "8888";
// The Notebook 7 server's port (the "notebook7" project's specs: *notebook7.spec.ts).
const nb7Port = process.env.TRACEVIEW_NB7_PORT || String(Number(port) + 1);
const NB7_SPECS = /notebook7\.spec\.ts$/;
// The draw-time and frame-time measurements (artefacts): their own project, which
// scripts/test.sh runs after the others, alone, so that no other test shares the CPU.
const BENCH_SPECS = /(benchmark|frames)\.spec\.ts$/;
// Two specs at once by default: each test has its own folder, notebook and kernel (Galata's
// tmpPath), and a test waits on the browser and the kernel much of the time, so a second
// worker fills the idle core (TRACEVIEW_UI_WORKERS=1: one at a time).
const workers = Number(process.env.TRACEVIEW_UI_WORKERS || 2);

module.exports = {
  ...baseConfig,
  // galata picks the `github` reporter when CI is set; plain lines read better in any log.
  reporter: [["list"]],
  timeout: 180000,
  expect: { timeout: 30000 },
  retries: 0,
  workers,
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${port}`,
    viewport: { width: 1280, height: 900 },
    video: "off", // needs a downloaded ffmpeg
    trace: "off",
    launchOptions: {
      executablePath: chromium,
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
  },
  // Every spec runs in JupyterLab but those written for Notebook 7's pages, which run there;
  // the benchmarks (in JupyterLab too) one at a time.
  projects: [
    { name: "jupyterlab", testIgnore: [NB7_SPECS, BENCH_SPECS] },
    { name: "notebook7", testMatch: NB7_SPECS, use: { baseURL: `http://127.0.0.1:${nb7Port}` } },
    { name: "benchmarks", testMatch: BENCH_SPECS, workers: 1 },
  ],
  webServer: [
    {
      command: "python -m jupyterlab --config jupyter_server_test_config.py",
      url: `http://127.0.0.1:${port}/lab`,
      timeout: 180 * 1000,
      reuseExistingServer: !process.env.CI,
    },
    {
      // Notebook 7 (the `notebook` package, in the test extra), same configuration.
      command: "python -m notebook --config jupyter_server_test_config.py",
      url: `http://127.0.0.1:${nb7Port}/tree`,
      env: { ...process.env, TRACEVIEW_UI_PORT: nb7Port },
      timeout: 180 * 1000,
      reuseExistingServer: !process.env.CI,
    },
  ],
};
