"""``%%traceprofile --jax``: a profiling session driven by ``jax.profiler`` instead of torch's.

:class:`JaxProfileSession` is driven as :class:`.recording.ProfileSession` is (``start``,
``run_completed(k)`` after each run, ``finish(error)``) and leaves the same
:class:`.recording.RunOutcome`. ``jax.profiler.start_trace(run_dir)`` starts once the warm-up
runs are done, each profiled run is a ``jax.profiler.StepTraceAnnotation`` (step 0, 1, ...:
the iterations of the loaded trace), and ``stop_trace`` writes
``run_dir/plugins/profile/<time>/<host>.xplane.pb`` and ``<host>.trace.json.gz``; the one
``tv.load(run_dir)`` reads is loaded (the XSpace where xprof is installed; docs/jax.md).
jax is imported only when a session starts.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from ..errors import TraceviewError
from ..loading.readers.files import discover
from .recording import ProfileOptions, RunOutcome, describe_error, new_run_dir, now_iso

__all__ = ["JaxMissingError", "JaxProfileSession", "import_jax"]


class JaxMissingError(TraceviewError, ImportError):
    """``%%traceprofile --jax`` was asked for, but jax is not installed."""


def import_jax() -> Any:
    """``import jax``, or a :class:`JaxMissingError` that says how to install it."""
    try:
        import jax
    except ImportError:
        raise JaxMissingError(
            "--jax needs jax, which is not installed. Install it with `pip install jax` "
            "(see https://docs.jax.dev for GPU and TPU builds), then restart the kernel"
        ) from None
    return jax


class JaxProfileSession:
    """One profiled run of a cell under ``jax.profiler`` (see the module docstring).

    ``options.with_stack`` turns JAX's Python tracer on (one event per Python call: large
    traces); ``options.cpu_only`` turns its device tracer off. ``record_shapes`` and
    ``memory`` are torch's: the magic refuses them with ``--jax``.
    """

    rank = 0
    world_size = 1

    def __init__(self, options: ProfileOptions) -> None:
        self.options = options
        self._jax = import_jax()
        self.run_dir = new_run_dir(options.out / options.name)
        self.total_runs = options.warmup + options.repeat
        self._runs_done = 0
        self._tracing = False
        self._step: Any = None
        self._t0 = time.perf_counter()
        self.started_at = now_iso()
        backend = str(self._jax.default_backend())  # "cpu", "gpu" or "tpu"
        self.activities = ["cpu"] if options.cpu_only or backend == "cpu" else ["cpu", backend]

    def start(self) -> None:
        """Start (after the warm-up runs) recording; the next profiled run is step 0."""
        if self.options.warmup == 0:
            self._begin(0)

    def _begin(self, k: int) -> None:
        """Run ``k`` is about to start: start tracing at the first profiled run, open its step."""
        jax = self._jax
        step = k - self.options.warmup
        if step < 0:
            return
        if not self._tracing:
            opts = jax.profiler.ProfileOptions()
            opts.python_tracer_level = 1 if self.options.with_stack else 0
            if self.options.cpu_only:
                opts.device_tracer_level = 0
            jax.profiler.start_trace(str(self.run_dir), profiler_options=opts)
            self._tracing = True
        self._step = jax.profiler.StepTraceAnnotation("traceprofile", step_num=step)
        self._step.__enter__()

    def _end_step(self) -> None:
        step, self._step = self._step, None
        if step is not None:
            step.__exit__(None, None, None)

    def discard(self) -> None:
        """Remove the run folder if nothing was written to it (the profiler failed to start)."""
        with contextlib.suppress(OSError):
            self.run_dir.rmdir()

    def run_completed(self, k: int) -> None:
        """Run ``k`` (0-based) of the code finished: close its step, open the next."""
        self._runs_done = k + 1
        self._end_step()
        if k + 1 < self.total_runs:
            self._begin(k + 1)

    def _trace_file(self) -> Path | None:
        """The file ``tv.load(run_dir)`` reads: the run's ``<host>.xplane.pb`` where xprof is
        installed, else its ``<host>.trace.json.gz`` (both are kept; docs/jax.md)."""
        if not any(self.run_dir.glob("plugins/profile/*/*")):
            return None
        try:
            found, _ = discover(self.run_dir)
        except TraceviewError:
            return None
        return Path(found[-1].path) if found else None

    def finish(self, error: BaseException | None = None) -> RunOutcome:
        """Stop the profiler (which writes the trace), also after an error or interrupt."""
        self._end_step()
        if self._tracing:
            self._tracing = False
            self._jax.profiler.stop_trace()
        status = "ok" if error is None else "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
        trace_file = self._trace_file()
        return RunOutcome(
            run_dir=self.run_dir,
            trace_file=trace_file,
            rank=0,
            world_size=1,
            status=status,
            error=None if error is None else describe_error(error),
            runs_completed=self._runs_done,
            activities=list(self.activities),
            started_at=self.started_at,
            ended_at=now_iso(),
            duration_s=round(time.perf_counter() - self._t0, 6),
            options=self.options,
            torch_version="",
            rank_files=[trace_file] if trace_file is not None else [],
        )
