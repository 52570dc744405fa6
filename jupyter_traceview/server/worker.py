"""Background analysis for the server: runs in worker processes, never on the event loop.

:class:`Analyzer` schedules tasks (a run's headline figures, its dashboard data, the diff
of two runs, a run's verdict against the baseline) on a process pool, interactive tasks before background ones, and keeps their
results in memory by run signature (paths, sizes, modification times), so a changed run is
analysed again. Parsing goes through tv.load's on-disk cache; a worker process also keeps
its last loaded traces, so that the figures, the dashboard and a diff of one run load it once.

What a worker computes, and how it reads a run's files, is :mod:`.tasks`; error messages
never quote file content (:func:`_message`).

Faults: each worker process leads its own process group (its parse pool's children
included). A worker that dies (killed, out of memory) or a progress Manager that dies is
noticed on the next request or by a watchdog; the whole group is killed, a fresh pool and
Manager are started, and the tasks that were running are retried once. A crash is reported
once ("the analysis process stopped"); asking again tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import os
import re
import signal
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from .messages import TaskPending, TaskProgress
from .runs import RunEntry
from .tasks import (
    TaskResult,
    compute_command,
    compute_diff,
    compute_headline,
    compute_run_data,
    compute_verdict,
    set_storage_options,
)

__all__ = ["Analyzer", "Task"]

#: Interactive tasks (a panel waits for them) run before background ones (list figures).
#: A run's verdict against the baseline (the runs list) comes after the list's figures.
PRIORITY = {"run": 0, "diff": 0, "command": 0, "headline": 1, "verdict": 2}
#: Results kept in the server process, by kind of task (the others: DEFAULT_KEEP). A
#: dashboard command's answer is handed out once, then dropped (see Analyzer.status).
KEEP = {"headline": 4096, "verdict": 4096, "command": 8}
DEFAULT_KEEP = 16
KEEP_ERRORS = 4096
#: Characters kept of an error message.
MAX_MESSAGE = 2000
#: Times a task is run again after its worker died under it.
RETRIES = 1
#: Seconds between the watchdog's checks of the worker processes while tasks run.
WATCH_S = 1.0
#: What a task reports when its worker died twice under it.
CRASHED = "the analysis process stopped while working on this run (out of memory?); ask again to retry"


class TaskReady(TypedDict):
    """:meth:`Analyzer.status` of a finished task: its result."""

    status: Literal["ready"]
    result: TaskResult


class TaskError(TypedDict):
    """:meth:`Analyzer.status` of a failed task: why, in one line."""

    status: Literal["error"]
    message: str


#: :meth:`Analyzer.status`: ready, failed, or still computing (queued or running).
TaskStatus = TaskReady | TaskError | TaskPending


# ---------------------------------------------------------------------------------------
# The scheduler, in the server process


@dataclass(frozen=True)
class Task:
    """One computation: ``what`` ("headline", "run", "diff", "verdict" or "command") over one or two runs.

    ``args`` are a command's name and JSON message (``what == "command"``).
    """

    what: str
    entries: tuple[RunEntry, ...]
    args: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...], tuple[str, ...]]:
        return (self.what, tuple((e.path, e.signature) for e in self.entries), self.args)

    @property
    def label(self) -> str:
        """Its name in the progress table (shared with the workers)."""
        return (
            f"{self.what}:" + "|".join(e.path for e in self.entries) + ("|" + "|".join(self.args) if self.args else "")
        )


@dataclass
class Job:
    task: Task
    cache: str | bool
    queued: float = field(default_factory=time.time)
    future: Future[TaskResult] | None = None
    started: float | None = None
    #: (priority, sequence number, key): its place in the queue.
    order: tuple[int, int, Any] = (0, 0, None)
    #: Set when the job finishes (created by Analyzer.wait).
    event: asyncio.Event | None = None
    #: Times its worker died under it.
    crashes: int = 0


_FUNCTIONS: dict[str, Callable[..., TaskResult]] = {
    "headline": compute_headline,
    "run": compute_run_data,
    "diff": compute_diff,
    "verdict": compute_verdict,
}


def _worker_init(storage_options: dict[str, Any] | None = None) -> None:
    """A worker process leads its own process group, so that killing the group kills its parse pool too.

    ``storage_options``: how it reads runs in object storage (:func:`.tasks.set_storage_options`).

    Out of the server's group, it no longer gets the signals sent to that group: so that it
    never outlives the server (killed with SIGKILL, say), it asks Linux for a SIGTERM when
    the server exits and then kills its whole group.
    """
    set_storage_options(storage_options or {})
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import multiprocessing

    def parent_gone(*_: Any) -> None:
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)
        os._exit(1)

    signal.signal(signal.SIGTERM, parent_gone)
    with contextlib.suppress(Exception):  # no prctl (an odd libc): the server's close() still kills the group
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        parent_gone()  # the server died before the request took effect


def _exit_with_parent() -> None:
    """In the progress Manager: a SIGTERM (the default: exit) when the server exits (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (a worker and the children it started), and ``pid``."""
    for kill, target in ((getattr(os, "killpg", None), pid), (os.kill, pid)):
        if kill is not None:
            with contextlib.suppress(OSError):
                kill(target, getattr(signal, "SIGKILL", signal.SIGTERM))


class Analyzer:
    """Runs tasks in a process pool, interactive ones first, and reports their progress.

    Every method is called on the server's event loop; finished futures come back to it
    through ``call_soon_threadsafe``. Dead workers and a dead progress Manager are replaced
    (see the module's docstring).
    """

    def __init__(
        self, root: Path, *, workers: int = 1, cache: str | bool = True, storage_options: dict[str, Any] | None = None
    ) -> None:
        self.root_path = root
        self.root = str(root)
        self.cache = cache
        #: fsspec options of the remote roots: handed to each worker process at its start, and
        #: scrubbed from every error message.
        self.storage_options = dict(storage_options or {})
        self._workers = max(1, workers)
        self._pool: ProcessPoolExecutor | None = None
        self._manager: Any = None
        self._progress: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seq = itertools.count()
        self._queue: list[tuple[int, int, Any]] = []  # (priority, seq, key), a heap
        self._jobs: dict[Any, Job] = {}  # queued or running
        self._running = 0
        self._results: dict[str, OrderedDict[Any, TaskResult]] = {}
        self._errors: OrderedDict[Any, str] = OrderedDict()
        #: Errors handed out once whatever the task (a crash: asking again retries).
        self._once: set[Any] = set()
        self._watching: asyncio.TimerHandle | None = None
        #: Pools and Managers replaced after a fault (for tests and logs).
        self.restarts = 0
        #: Sniff results of runs.find_runs, kept between listings.
        self.sniff_memo: dict[tuple[str, int, int], bool] = {}
        #: Runs in object storage looked up lately: URL -> (monotonic time, entry) (handlers.py).
        self.remote_memo: dict[str, tuple[float, RunEntry]] = {}

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            self._ensure_manager()
            self._pool = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=ctx,
                initializer=_worker_init,
                initargs=(self.storage_options,),
            )
        return self._pool

    def _ensure_manager(self) -> None:
        """A live progress Manager (a dead one is replaced; its table is lost)."""
        if self._manager is not None and self._alive(getattr(self._manager, "_process", None)):
            return
        import multiprocessing

        self._stop_manager()
        try:
            from multiprocessing.managers import SyncManager

            manager = SyncManager(ctx=multiprocessing.get_context("spawn"))
            manager.start(initializer=_exit_with_parent)
            self._manager = manager
            self._progress = manager.dict()
        except Exception:  # noqa: BLE001 - progress is optional; the tasks run without it
            self._manager = self._progress = None

    def _stop_manager(self) -> None:
        manager, self._manager, self._progress = self._manager, None, None
        if manager is None:
            return
        process = getattr(manager, "_process", None)
        if process is not None and process.pid:
            _kill_group_member(process.pid)
        with contextlib.suppress(Exception):
            manager.shutdown()

    @staticmethod
    def _alive(process: Any) -> bool:
        """Whether a child process runs (``waitpid``, not its sentinel: a forked grandchild keeps that open)."""
        if process is None:
            return False
        try:
            return bool(process.is_alive())
        except (OSError, ValueError, AssertionError):
            return False

    def _worker_processes(self) -> list[Any]:
        pool = self._pool
        if pool is None:
            return []
        return list((getattr(pool, "_processes", None) or {}).values())

    def check(self) -> bool:
        """Replace dead workers and a dead Manager; True if something had died.

        Called on every status request and by the watchdog while tasks run.
        """
        died = False
        if self._manager is not None and not self._alive(getattr(self._manager, "_process", None)):
            died = True
            self._stop_manager()
            self.restarts += 1
            if self._pool is not None:
                self._ensure_manager()
        if self._pool is not None and (
            getattr(self._pool, "_broken", False) or not all(self._alive(p) for p in self._worker_processes())
        ):
            died = True
            self._recover()
        return died

    def _recover(self) -> None:
        """Kill the pool's process groups, start afresh, and retry the tasks that were running once."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        self.restarts += 1
        for process in self._worker_processes_of(pool):
            if process.pid:
                _kill_group(process.pid)
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False, cancel_futures=True)
        for key, job in list(self._jobs.items()):
            if job.future is None:
                continue  # queued: not in the dead pool
            job.future = None
            job.started = None
            self._running -= 1
            if self._progress is not None:
                with contextlib.suppress(Exception):
                    self._progress.pop(job.task.label, None)
            job.crashes += 1
            if job.crashes > RETRIES:
                self._fail(key, job, CRASHED)
            else:
                heapq.heappush(self._queue, job.order)
        self._pump()

    @staticmethod
    def _worker_processes_of(pool: ProcessPoolExecutor) -> list[Any]:
        return list((getattr(pool, "_processes", None) or {}).values())

    def _fail(self, key: Any, job: Job, message: str) -> None:
        del self._jobs[key]
        self._errors[key] = message
        self._once.add(key)
        if job.event is not None:
            job.event.set()

    def _watch(self) -> None:
        """The watchdog: check the processes every WATCH_S seconds while tasks run."""
        self._watching = None
        self.check()
        if self._running and self._loop is not None and not self._loop.is_closed():
            self._watching = self._loop.call_later(WATCH_S, self._watch)

    def _progress_of(self, label: str) -> TaskProgress:
        if self._progress is None:
            return {}
        try:
            progress: TaskProgress = dict(self._progress.get(label, {}))  # type: ignore[assignment]  # a Manager proxy: untyped
            return progress
        except Exception:  # noqa: BLE001 - a dead Manager: replaced, progress lost
            self._stop_manager()
            self.restarts += 1
            if self._pool is not None:
                self._ensure_manager()
            return {}

    def status(self, what: str, *entries: RunEntry, args: tuple[str, ...] = ()) -> TaskStatus:
        """{"status": "ready"|"queued"|"running"|"error", ...} of a task, starting it if needed.

        ``args``: a command's name and JSON message (``what == "command"``); a command's
        answer is handed out once.
        """
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self.check()
        task = Task(what, entries, args)
        key = task.key
        done = self._results.get(what)
        if done is not None and key in done:
            if what == "command":
                return {"status": "ready", "result": done.pop(key)}
            done.move_to_end(key)
            return {"status": "ready", "result": done[key]}
        if key in self._errors:
            once = what == "command" or key in self._once
            message = self._errors.pop(key) if once else self._errors[key]
            self._once.discard(key)
            return {"status": "error", "message": message}
        job = self._jobs.get(key)
        if job is None:
            job = self._jobs[key] = Job(task, self.cache)
            job.order = (PRIORITY.get(what, 1), next(self._seq), key)
            heapq.heappush(self._queue, job.order)
            self._pump()
        if job.future is not None and job.future.done():
            self._finished(key, job.future)  # done before its callback reached the loop
            return self.status(what, *entries, args=args)
        elapsed = round(time.time() - job.queued, 1)
        if job.future is None:
            position = 1 + sum(1 for item in self._queue if item < job.order and self._jobs.get(item[2]) is not None)
            return {"status": "queued", "position": position, "progress": {"stage": "queued"}, "elapsed_s": elapsed}
        progress = self._progress_of(task.label)
        return {"status": "running", "progress": progress or {"stage": "starting"}, "elapsed_s": elapsed}

    async def wait(self, what: str, *entries: RunEntry, args: tuple[str, ...] = (), timeout: float = 1.0) -> None:
        """Wait (at most ``timeout`` seconds) for a queued or running task to finish."""
        job = self._jobs.get(Task(what, entries, args).key)
        if job is None:
            return
        if job.event is None:
            job.event = asyncio.Event()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(job.event.wait(), timeout)

    def _pump(self) -> None:
        """Hand queued jobs to the pool while workers are free, highest priority first."""
        while self._queue and self._running < self._workers:
            _, _, key = heapq.heappop(self._queue)
            job = self._jobs.get(key)
            if job is None or job.future is not None:
                continue
            pool = self._ensure_pool()
            task = job.task
            future: Future[TaskResult]
            try:
                if task.what == "command":
                    command, msg = task.args
                    future = pool.submit(
                        compute_command, self.root, task.entries, job.cache, self._progress, task.label, command, msg
                    )
                else:
                    fn = _FUNCTIONS[task.what]
                    future = pool.submit(fn, self.root, *task.entries, job.cache, self._progress, task.label)
            except BrokenProcessPool:
                # The pool broke under us (before the watchdog saw it): start afresh; this job
                # stays queued and goes to the fresh pool.
                heapq.heappush(self._queue, job.order)
                self._recover()
                return
            job.future = future
            job.started = time.time()
            self._running += 1
            future.add_done_callback(functools.partial(self._done_soon, key))
        if self._running and self._watching is None and self._loop is not None and not self._loop.is_closed():
            self._watching = self._loop.call_later(WATCH_S, self._watch)

    def _done_soon(self, key: Any, future: Future[TaskResult]) -> None:
        """Future callback (a pool thread): finish the job on the event loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (server shutdown)
            loop.call_soon_threadsafe(self._finished, key, future)

    def _finished(self, key: Any, future: Future[TaskResult] | None = None) -> None:
        job = self._jobs.get(key)
        if job is None or job.future is None or not job.future.done():
            return
        if future is not None and future is not job.future:
            return  # a future of a pool replaced since: the job was queued again
        try:
            result = job.future.result()
        except BrokenProcessPool:
            # A worker died (killed, out of memory): kill what is left, retry the running jobs once.
            self._recover()
            return
        except Exception as exc:  # noqa: BLE001 - reported to the client as a message
            error: str | None = _message(exc, self.root, self.storage_options)
        else:
            error = None
        del self._jobs[key]
        self._running -= 1
        if job.event is not None:
            job.event.set()
        if self._progress is not None:
            with contextlib.suppress(Exception):
                self._progress.pop(job.task.label, None)
        if error is not None:
            self._errors[key] = error
        else:
            what = job.task.what
            done = self._results.setdefault(what, OrderedDict())
            done[key] = result
            while len(done) > KEEP.get(what, DEFAULT_KEEP):
                done.popitem(last=False)
        while len(self._errors) > KEEP_ERRORS:
            old, _ = self._errors.popitem(last=False)
            self._once.discard(old)
        self._pump()

    def close(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
        pool, self._pool = self._pool, None
        if pool is not None:
            for process in self._worker_processes_of(pool):
                if process.pid:
                    _kill_group(process.pid)
            with contextlib.suppress(Exception):
                pool.shutdown(wait=False, cancel_futures=True)
        self._stop_manager()


def _kill_group_member(pid: int) -> None:
    """SIGKILL one process (the Manager: it starts no children)."""
    with contextlib.suppress(OSError):
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


_NEAR = re.compile(r",? near (?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def _message(exc: BaseException, root: str, storage_options: dict[str, Any] | None = None) -> str:
    """A one-line message (no traceback, no server paths, no value of ``storage_options``) for an analysis failure."""
    from ..errors import TraceviewError
    from .remote import scrubbed

    text = str(exc) if isinstance(exc, TraceviewError) else f"{type(exc).__name__}: {exc}"
    # Never a quote of the file's content (a reader's "near '...'" snippet).
    text = _NEAR.sub("", text)
    # Paths relative to the server root, as the client knows them; one line, bounded.
    text = " ".join(scrubbed(text, storage_options).replace(root.rstrip("/") + "/", "").split())
    return text[:MAX_MESSAGE] if text else type(exc).__name__
