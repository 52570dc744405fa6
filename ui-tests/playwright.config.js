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

module.exports = {
  ...baseConfig,
  // galata picks the `github` reporter when CI is set; plain lines read better in any log.
  reporter: [["list"]],
  timeout: 180000,
  expect: { timeout: 30000 },
  retries: 0,
  workers: 1,
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
  // Every spec runs in JupyterLab but those written for Notebook 7's pages, which run there.
  projects: [
    { name: "jupyterlab", testIgnore: NB7_SPECS },
    { name: "notebook7", testMatch: NB7_SPECS, use: { baseURL: `http://127.0.0.1:${nb7Port}` } },
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
