// One-off check in Jupyter Notebook 7 (not part of CI): the timeline renders and paints.
module.exports = {
  testDir: ".",
  timeout: 180000,
  reporter: [["list"]],
  use: {
    baseURL: "http://127.0.0.1:8890",
    viewport: { width: 1280, height: 900 },
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  webServer: {
    command: "python -m notebook --no-browser --port 8890 --ip 127.0.0.1 --ServerApp.token= --ServerApp.password= --ServerApp.allow_root=True --ServerApp.root_dir=/tmp/nb7/root",
    url: "http://127.0.0.1:8890/tree",
    timeout: 120000,
    reuseExistingServer: false,
  },
};
