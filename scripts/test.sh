#!/usr/bin/env bash
# Install everything the tests need into ./.venv and run every test:
# lint (ruff), types (mypy), Python tests (pytest).
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate

echo "== installing the package and its test dependencies"
python -m pip install --quiet --disable-pip-version-check --upgrade pip
python -m pip install --quiet --disable-pip-version-check -e ".[test]"

echo "== ruff"
ruff check jupyter_traceview tests benchmarks scripts
ruff format --check jupyter_traceview tests benchmarks scripts

echo "== mypy"
mypy

echo "== pytest"
python -m pytest "$@"
