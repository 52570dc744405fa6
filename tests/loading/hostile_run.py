"""Run every public analysis on one trace file under an address-space limit (a subprocess's body).

``python -m tests.loading.hostile_run PATH LIMIT_BYTES [SKIP,SKIP...]`` loads ``PATH`` (no cache), runs each
public analysis (the fuzz suite's list) and prints one line per analysis that raised or warned
of a ``MemoryError`` (``findings`` reports a failed rule as a warning and goes on); exit 0
when all returned cleanly, 1 otherwise, and Python's own exit (a MemoryError traceback) when
the limit was hit outside an analysis. :mod:`tests.loading.test_hostile_sizes` runs it.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import warnings
from pathlib import Path


def main(path: str, limit: int, skip: tuple[str, ...] = ()) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import jupyter_traceview as tv
    from tests.loading.test_fuzz import analysis_calls

    failures = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        trace = tv.load(path, cache=False)
        for name, call in analysis_calls(Path(tmp)).items():
            if name in skip:
                continue
            del said[:]
            try:
                call(trace)
            except Exception as exc:  # noqa: BLE001 - each failure is reported, all run
                failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            failures += [f"{name} warned: {str(w.message)[:200]}" for w in said if "MemoryError" in str(w.message)]
    print("\n".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else ()))
