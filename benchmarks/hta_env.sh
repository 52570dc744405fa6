#!/usr/bin/env bash
# Make (once) a separate virtual environment with Holistic Trace Analysis, for the
# comparisons and benchmarks: benchmarks/.venv-hta. HTA 0.5.0 (the newest on PyPI)
# misbehaves on pandas 3, hence the pins.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv-hta/bin/python ]; then
    python3 -m venv .venv-hta
fi
.venv-hta/bin/python -m pip install --quiet --disable-pip-version-check \
    "holistictraceanalysis==0.5.0" "pandas==2.2.3" "numpy==2.2.6" "psutil>=5.9"
.venv-hta/bin/python -c "import hta; print('HTA ready in', __import__('sys').prefix)"
