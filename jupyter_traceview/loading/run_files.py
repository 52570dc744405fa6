"""Names of the files a run folder holds beside its traces (docs/runs.md).

No imports: the Jupyter server's run listing (``server/runs.py``) reads these names without
loading anything a load needs.
"""

from __future__ import annotations

__all__ = ["RUN_RECORD"]

#: File name of the run record inside a run folder (hidden: ``tv.load`` ignores it).
RUN_RECORD = ".traceview-run.json"
