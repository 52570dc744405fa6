"""JupyterLab server for the Galata tests, started by Playwright's webServer (playwright.config.js).

``configure_jupyter_server`` serves a temporary root folder without a token and enables
Galata's helpers; machines of this project run as root, which plain ``jupyter lab`` refuses.
"""

import importlib.util
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

# Runs in object storage (tests/remote.spec.ts): a remote root on a local S3 emulator that the
# spec starts itself, on TRACEVIEW_S3_PORT (the server's port + 2 by default), so that the
# sidebar first meets a store that cannot be reached. Only where the emulator and s3fs are
# installed (the test extra); one attempt per request, not botocore's five (~11 s refused).
if importlib.util.find_spec("moto") is not None and importlib.util.find_spec("s3fs") is not None:
    _endpoint = f"http://127.0.0.1:{int(os.environ.get('TRACEVIEW_S3_PORT', c.ServerApp.port + 2))}"
    c.TraceviewServer.remote_roots = ["s3://tv-ui/runs"]
    # The server's credentials: configuration only (the spec checks that none is ever shown).
    c.TraceviewServer.remote_storage_options = {
        "key": "tv-ui-server-key",
        "secret": "tv-ui-server-secret",
        "client_kwargs": {"endpoint_url": _endpoint, "region_name": "us-east-1"},
        "config_kwargs": {"retries": {"max_attempts": 1}},
    }
    # The kernels' own, from their environment (inherited from the server's), as a user's.
    os.environ.update(
        AWS_ACCESS_KEY_ID="tv-ui-kernel-key",
        AWS_SECRET_ACCESS_KEY="tv-ui-kernel-secret",
        AWS_ENDPOINT_URL=_endpoint,
        AWS_DEFAULT_REGION="us-east-1",
    )
