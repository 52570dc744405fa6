#!/usr/bin/env bash
# The C extensions (_kscan, _sweep, _loops; see hatch_build.py) built with AddressSanitizer and
# UndefinedBehaviorSanitizer, and the hostile-input tests run against them: the fuzz suite's
# loads, the native reader's comparisons with msgspec, the bad-input tests and the compiled
# loops' tests. Any out-of-bounds access, use after free or undefined behaviour aborts the run.
#
# The package and tests are copied (hard links) into a scratch folder under build/, where the
# sanitized modules replace the built ones: the checkout's own modules stay as they are.
# Usage: bash scripts/sanitize.sh [extra pytest arguments]   (PYTHON: the interpreter, default
# .venv/bin/python). scripts/test.sh runs it; budget: about 90 s on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
PYTHON=${PYTHON:-.venv/bin/python}
PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")
CC=${CC:-gcc}
asan=$("$CC" -print-file-name=libasan.so)
if [ ! -e "$asan" ] || [ "$asan" = libasan.so ]; then
    echo "sanitize: $CC has no AddressSanitizer runtime (libasan); install it (Debian: gcc)" >&2
    exit 1
fi

mkdir -p build
scratch=$(mktemp -d "$PWD/build/sanitize.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp -al jupyter_traceview tests pyproject.toml "$scratch"/
find "$scratch" \( -name '*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +

include=$("$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
suffix=$("$PYTHON" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
flags=(-shared -fPIC -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
for source in jupyter_traceview/loading/readers/_kscan.c jupyter_traceview/model/_sweep.c \
    jupyter_traceview/analysis/_loops.c; do
    digest=$("$PYTHON" -c 'import sys, pathlib, hatch_build; print(hatch_build.source_digest(pathlib.Path(sys.argv[1])))' "$source")
    "$CC" "${flags[@]}" -DTRACEVIEW_SOURCE_SHA256="\"$digest\"" -I"$include" \
        "$source" -o "$scratch/${source%.c}$suffix"
done
echo "sanitize: built with -fsanitize=address,undefined in $(($(date +%s) - started)) s"

cd "$scratch"
export LD_PRELOAD="$asan"
# CPython's own allocations are never freed at exit: leaks are not what this looks for.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$PYTHON" - <<'PY'
from jupyter_traceview.loading.readers import build
from jupyter_traceview.model import native_ext

for name in ("jupyter_traceview.loading.readers._kscan", "jupyter_traceview.model._sweep", "jupyter_traceview.analysis._loops"):
    module = native_ext.find(name, lambda m: True)
    assert module is not None and "/build/sanitize." in module.__file__, f"{name}: not the sanitized build ({module})"
assert build.SCANNER is not None
PY
# A sample of the fuzz suite's cases (every 5th: 60 of 300 mutated traces), the native reader
# against msgspec (real traces at three piece sizes, long numbers, the hash key), every
# bad-input case and the compiled loops' tests: about a minute on two cores. Not the dask
# engine's variants: the scanner reads the same bytes there as in process, only in a worker
# that a local cluster takes seconds to start (14 s of 360 under ASan).
fuzz=()
for i in $(seq 0 5 299); do
    fuzz+=("tests/loading/test_fuzz.py::test_load_raises_only_trace_format_error[$i]")
done
"$PYTHON" -m pytest -q -p no:cacheprovider -x "${fuzz[@]}" \
    tests/loading/readers/test_native.py -k "not shared_traces and not mutated and not dask" \
    tests/loading/test_bad_input.py \
    tests/analysis/test_loops.py \
    "$@"
echo "== sanitizer job passed in $(($(date +%s) - started)) s"
