#!/usr/bin/env bash
# Install everything the tests need into ./.venv and run every test:
# lint (ruff), types (mypy), the front end (eslint + prettier, tsc, vitest), Python tests
# (pytest), the C extensions under AddressSanitizer and UBSan (scripts/sanitize.sh), the
# documentation site (scripts/docs.sh: Sphinx with warnings as errors, the
# example notebooks executed, internal links checked) and the UI tests (Galata: JupyterLab in
# Chromium).
# Usage: bash scripts/test.sh [extra pytest arguments]
# Needs Python >= 3.10 and Node.js >= 20 with npm; when /usr/bin/chromium is missing it is
# installed with apt-get (as root; otherwise install it yourself or set CHROMIUM_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
# A section's header, with the seconds since the start (where a run spends its time).
section() {
    echo "== $* (at $(($(date +%s) - started)) s)"
}

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate

# Lockfiles are the truth: an install that would change yarn.lock fails (as `jlpm install
# --immutable`), here and in the front-end build that `pip install` runs.
export YARN_ENABLE_IMMUTABLE_INSTALLS=true

section "installing the package and its test and docs dependencies (builds the front end with jlpm)"
python -m pip install --quiet --disable-pip-version-check --upgrade pip
# --no-compile: no bytecode for all ~16,000 modules installed up front (51 s of CPU on a fresh
# environment); the ones the tests import are compiled, once, as they are first imported.
# That needs Python to write bytecode: with PYTHONDONTWRITEBYTECODE set (as in some shells),
# every test process, kernel and CLI call would compile pandas, bokeh & co. from source again
# (the bytecode pip used to write up front), and pytest could not cache its rewritten tests.
unset PYTHONDONTWRITEBYTECODE
python -m pip install --quiet --disable-pip-version-check --no-compile -e ".[test,docs]"
# An editable install builds jupyter_traceview/static only when it is older than js/:
# rebuild when any front-end source is newer than any built target, so that the tests below
# always run the current sources (on a fresh clone the install has just built them).
jlpm install --immutable
stale=
for target in jupyter_traceview/static/dashboard.js jupyter_traceview/static/timeline.js \
    jupyter_traceview/labextension/package.json; do
    if [ ! -f "$target" ] || [ -n "$(find js schema package.json tsconfig.json yarn.lock -type f \
        -newer "$target" -print -quit)" ]; then
        stale=1
    fi
done
if [ -n "$stale" ]; then
    jlpm build
else
    echo "front end up to date (built by the install)"
fi

# Chromium, before any test: the report's tests (pytest) and the UI tests (Galata) drive it.
chromium=${CHROMIUM_PATH:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing Chromium (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "Chromium is missing at $chromium: 'sudo apt-get install -y chromium', or set CHROMIUM_PATH" >&2
        exit 1
    fi
fi
export CHROMIUM_PATH="$chromium"

# Jobs run beside the others: mostly one process each (mypy; the sanitizers' pytest, then
# Sphinx), they use the core that eslint and tsc, or the UI tests (which wait on the browser
# and the kernel much of the time), leave idle. A job's output is kept and printed when it is
# awaited, and its failure fails the run then.
beside_dir=$(mktemp -d)
trap 'for f in "$beside_dir"/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; rm -rf "$beside_dir"' EXIT
beside() {
    local name=$1
    shift
    "$@" >"$beside_dir/$name.log" 2>&1 &
    echo $! >"$beside_dir/$name.pid"
}
await() {
    local name=$1 status=0
    wait "$(cat "$beside_dir/$name.pid")" || status=$?
    rm "$beside_dir/$name.pid"
    cat "$beside_dir/$name.log"
    if [ "$status" != 0 ]; then
        echo "$name failed (above)" >&2
        exit "$status"
    fi
}
beside mypy mypy

section "ruff"
ruff check jupyter_traceview tests benchmarks scripts docs/*.py hatch_build.py
ruff format --check jupyter_traceview tests benchmarks scripts docs/*.py hatch_build.py

section "front end: eslint + prettier, tsc, vitest"
jlpm lint
jlpm typecheck
jlpm test

section "mypy (run beside the front end's checks)"
await mypy

section "pytest"
# The example notebooks, as tests/test_examples.py executes and checks them, are kept for the
# documentation site (docs/conf.py shows them rather than executing them a second time).
export TRACEVIEW_EXECUTED_EXAMPLES="$beside_dir/executed-examples"
mkdir -p "$TRACEVIEW_EXECUTED_EXAMPLES"
# In parallel, one worker per core (pytest-xdist; TRACEVIEW_TEST_JOBS=0 runs them in this process);
# the 25 slowest tests are listed at the end (the candidates when CI takes too long).
python -m pytest -n "${TRACEVIEW_TEST_JOBS:-auto}" --durations=25 "$@"

sanitizers_and_docs() {
    section "sanitizers: the C extensions under ASan + UBSan (scripts/sanitize.sh)" &&
        bash scripts/sanitize.sh &&
        section "documentation site (scripts/docs.sh)" &&
        bash scripts/docs.sh
}
beside sanitizers_and_docs sanitizers_and_docs

section "UI tests (Galata)"
# A free port for JupyterLab unless one is given: Playwright would reuse a server already
# listening on its port (another checkout's, with other code) and test that instead.
if [ -z "${TRACEVIEW_UI_PORT:-}" ]; then
    TRACEVIEW_UI_PORT=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    export TRACEVIEW_UI_PORT
fi
# ... and one for Notebook 7 (the "notebook7" project: the Traces sidebar there).
if [ -z "${TRACEVIEW_NB7_PORT:-}" ]; then
    TRACEVIEW_NB7_PORT=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    export TRACEVIEW_NB7_PORT
fi
(
    cd ui-tests
    # Playwright's own browser download is not used: the tests drive the system Chromium.
    # node_modules is installed again only when the lockfile differs from the one it was
    # installed from (a stamp written after `npm ci`).
    lock=$(sha256sum package-lock.json | cut -d' ' -f1)
    if [ "$(cat node_modules/.traceview-lock 2>/dev/null)" != "$lock" ]; then
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
        echo "$lock" >node_modules/.traceview-lock
    else
        echo "ui-tests/node_modules up to date (package-lock.json unchanged)"
    fi
    # Two specs at a time (TRACEVIEW_UI_WORKERS, playwright.config.js), then the draw-time
    # and frame-time benchmarks alone, so that their measurements share the CPU with no test.
    CHROMIUM_PATH="$chromium" npx playwright test --project=jupyterlab --project=notebook7
    CHROMIUM_PATH="$chromium" npx playwright test --project=benchmarks
)
echo "UI artefacts (screenshots, first paint, draw benchmark): ui-tests/artifacts/"

section "sanitizers and documentation site (run beside the UI tests)"
await sanitizers_and_docs

echo "== all tests passed in $(($(date +%s) - started)) s"
