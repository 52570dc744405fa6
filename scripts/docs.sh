#!/usr/bin/env bash
# Build the documentation site: docs/ (Sphinx, MyST Markdown, numpydoc, the example notebooks
# executed) -> docs/_build/html, with warnings as errors; then check its internal links and
# anchors offline (scripts/check_links.py). Open docs/_build/html/index.html.
# Usage: bash scripts/docs.sh [extra sphinx-build arguments]
# Python: $PYTHON, else the active virtual environment, else ./.venv (made here with python3
# when missing, as scripts/test.sh does). Installs the `docs` extra of pyproject.toml into it,
# and the package in editable mode when it is not installed (which builds the front end: Node.js
# >= 20, as for scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

if [ -z "${PYTHON:-}" ]; then
    if [ -n "${VIRTUAL_ENV:-}" ]; then
        PYTHON=python
    else
        [ -x .venv/bin/python ] || python3 -m venv .venv
        PYTHON=.venv/bin/python
    fi
fi

echo "== docs: installing the docs extra"
# (installed, not merely importable from this folder: its dependencies come with the install)
if ! "$PYTHON" -c "import importlib.metadata as m; m.version('jupyter_traceview')" 2>/dev/null; then
    "$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[docs]"
else
    # The package is installed (scripts/test.sh installs it editable): only the extra's
    # requirements, read from pyproject.toml, so that the front end is not rebuilt.
    mapfile -t requirements < <("$PYTHON" - <<'PY'
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
