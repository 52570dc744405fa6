"""JupyterLab server for the Galata tests, started by Playwright's webServer (playwright.config.js).

``configure_jupyter_server`` serves a temporary root folder without a token and enables
Galata's helpers; machines of this project run as root, which plain ``jupyter lab`` refuses.
"""

import os

from jupyterlab.galata import configure_jupyter_server

c = get_config()  # type: ignore[name-defined]  # noqa: F821
configure_jupyter_server(c)
c.ServerApp.allow_root = True
# TRACEVIEW_UI_PORT: another port when 8888 is taken (several checkouts testing at once).
c.ServerApp.port = int(os.environ.get("TRACEVIEW_UI_PORT", "8888"))
c.ServerApp.ip = "127.0.0.1"
# The tests write runs' hidden files (.traceview-run.json, .traceview-load.json) through the contents API.
c.ContentsManager.allow_hidden = True
# Notebook 7 (``python -m notebook`` with this file): window.jupyterapp, as JupyterLab's galata setup gives.
c.JupyterNotebookApp.expose_app_in_browser = True
