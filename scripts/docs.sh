#!/usr/bin/env bash
# Build the documentation site: docs/ (Sphinx, MyST Markdown, numpydoc, the example notebooks
# executed) -> docs/_build/html, with warnings as errors; then check its internal links and
# anchors offline (scripts/check_links.py). Open docs/_build/html/index.html.
# Usage: bash scripts/docs.sh [extra sphinx-build arguments]
# Python: $PYTHON, else the active virtual environment, else ./.venv (as scripts/test.sh makes
# it), else python3. Installs the `docs` extra of pyproject.toml into it (and the package in
# editable mode when it is not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

if [ -z "${PYTHON:-}" ]; then
    if [ -n "${VIRTUAL_ENV:-}" ]; then
        PYTHON=python
    elif [ -x .venv/bin/python ]; then
        PYTHON=.venv/bin/python
    else
        PYTHON=python3
    fi
fi

echo "== docs: installing the docs extra"
if ! "$PYTHON" -c "import jupyter_traceview" 2>/dev/null; then
    "$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[docs]"
else
    # The package is installed (scripts/test.sh installs it editable): only the extra's
    # requirements, read from pyproject.toml, so that the front end is not rebuilt.
    mapfile -t requirements < <("$PYTHON" - <<'PY'
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip's copy of tomli
    from pip._vendor import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
)
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
fi

echo "== docs: sphinx-build (warnings are errors)"
# The checkout's package, whatever else is installed (docs/conf.py passes it to the notebooks' kernels).
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$PYTHON" -m sphinx -b html -W --keep-going -q docs docs/_build/html "$@"

echo "== docs: internal links and anchors"
"$PYTHON" scripts/check_links.py docs/_build/html

echo "== docs built in $(($(date +%s) - started)) s: docs/_build/html/index.html"
