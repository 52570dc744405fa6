"""Per-rank results computed by worker processes, for the first findings call on a big cached trace.

:func:`._memo.per_rank` keeps an analysis' per-rank results with the ranks' cache entries;
the first call after a load (or after the analysis code changed) computes them, one rank
after another, on one core. Inside a scope given a :class:`RankWorkers` (``findings`` opens
one), the ranks to compute are shared between this process and worker processes: a rank
goes to process ``rank % (workers + 1)``, 0 being this one, so that a rank is computed by
the same process call after call and its shared per-rank facts (:mod:`._memo`: GPU
activities, unions, eid tables) are computed once per findings call, as in one process.
Once this process is done with its share of a call, it takes over the big ranks a worker
has not started yet (:meth:`RankWorkers.collect`, :data:`STEAL_MIN_EVENTS`) rather than
wait for them: the processes do not go at the same pace (a worker first reads its ranks),
and every per-rank call would otherwise end when the slower one is done.

A worker reads its ranks' tables from the cache entry itself (:func:`..loading.cache.read_rank`:
memory-mapped Arrow files, checked against their CRC-32s) instead of receiving pickled
frames, keeps them (and their shared facts) for the scope's later calls, runs the same
module-level function on the same one-rank trace as :meth:`Trace.map_ranks` would, and
sends back the pickled result, which :func:`._memo.per_rank` keeps as it is and unpickles
for the caller: the values are those of the in-process computation, as a later call reads
them back. Warnings a worker's computation emits are emitted again here.

Used only where it pays: ranks read through the cache (they have tables a worker can
read), at least :data:`MIN_EVENTS` events to compute in the workers' share, more than one
core, and one of them idle when the first call asks (:func:`idle_cores`: on a machine whose
cores other programs keep busy, a worker only shares this process's core, and the call
takes longer than alone, measured on the 64 x 1M set). Anything a worker cannot do (an unreadable entry, an exception, a result that does
not pickle) is computed here instead, where the same exception is raised; a worker that
dies (out of memory) makes this scope compute everything here from then on, with a
:class:`TraceviewWarning`. ``RankWorkers.close`` stops the processes (their memory with them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import time
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as mp_wait
from typing import Any

from ..errors import TraceviewWarning
from ..model.classify import Classifier
from ..model.rank_data import RankMeta
from ..model.trace import Trace
from ._memo import worker_scope

__all__ = ["MIN_EVENTS", "STEAL_MIN_EVENTS", "RankWorkers", "idle_cores"]

#: Below this many events in the workers' share of a call, the ranks are computed here
#: (a worker's start and its reading of the ranks cost more than it saves).
MIN_EVENTS = 2_000_000

#: A rank a worker has not started when this process is done with its own share is taken
#: over by this process (:meth:`RankWorkers.collect`) if it has at least this many events:
#: the share each process computes follows how fast each goes (a worker first reads its
#: ranks; this process has them), instead of waiting for the slower one at every call.
#: Smaller ranks stay where they were sent (their shared facts computed in one process).
STEAL_MIN_EVENTS = 100_000

#: One rank for a worker: (rank, the entry's folder, the rank's index there, its metadata,
#: whether the caller may take it over: :data:`STEAL_MIN_EVENTS`).
Item = tuple[int, str, int, RankMeta, bool]
#: A worker's answer for one rank: (rank, the pickled result or None if it could not,
#: the warnings emitted as (category, message)).
Answer = tuple[int, bytes | None, list[tuple[type[Warning], str]]]


class RankWorkers:
    """Worker processes computing per-rank results for one scope (see the module docstring).

    ``workers``: how many (default: one fewer than the cores, so none on one core; this
    process computes a share too). ``min_events``: the threshold of :data:`MIN_EVENTS`.
    The processes start together at the first call that uses them (forked from here, or
    from a forkserver in a threaded process, as the loader's pool); :meth:`close` stops them.
    """

    def __init__(self, workers: int | None = None, *, min_events: int | None = None) -> None:
        cores = os.cpu_count() or 1
        self.workers = cores - 1 if workers is None else max(0, int(workers))
        self.min_events = MIN_EVENTS if min_events is None else int(min_events)
        self._procs: list[_Worker] = []
        self._broken = False
        #: Whether a core was idle when the first call asked (None: not asked yet).
        self._idle: bool | None = None

    def far(self, trace: Trace, ranks: list[int], tables: dict[int, tuple[str, int]]) -> list[int]:
        """The ranks among ``ranks`` (those with ``tables``) that workers should compute: none
        unless their events reach ``min_events``, or if a worker died."""
        if self._broken or self.workers < 1:
            return []
        far = [r for r in ranks if r in tables and r % (self.workers + 1) != 0]
        if sum(len(trace.rank_data(r).events) for r in far) < self.min_events:
            return []
        if self._idle is None:
            # Decided once per scope, before any worker starts: with no idle core (other
            # programs keep them busy) a worker would only share this process's core.
            self._idle = idle_cores() >= 1
        return far if self._idle else []

    def submit(
        self, trace: Trace, fn: Callable[..., Any], args: tuple[Any, ...], far: dict[int, tuple[str, int]]
    ) -> list[tuple[int, list[int]]]:
        """Start computing ``fn(one_rank_trace, *args)`` for the ranks of ``far`` (rank -> where its
        tables are) in the workers; :meth:`collect` gets the results."""
        classifier = dataclasses.replace(trace.classifier)  # the patterns only (as the loader's pool)
        origin = trace.t0_ns  # as trace.select(ranks=...) gives its one-rank traces
        by_worker: dict[int, list[Item]] = {}
        for r, (entry, index) in far.items():
            takeable = len(trace.rank_data(r).events) >= STEAL_MIN_EVENTS
            by_worker.setdefault(r % (self.workers + 1) - 1, []).append((r, entry, index, trace.meta(r), takeable))
        sent: list[tuple[int, list[int]]] = []
        unsent: list[int] = []
        if not self._broken:
            try:
                self._start()
            except OSError:
                self._broke()
        for w, items in sorted(by_worker.items()):
            ranks = [it[0] for it in items]
            try:
                if self._broken:
                    raise _Died
                self._procs[w].send((fn, args, items, classifier, trace.source, origin))
                sent.append((w, ranks))
            except (_Died, OSError, pickle.PicklingError, AttributeError, TypeError):
                unsent.extend(ranks)
        if unsent:
            sent.append((-1, unsent))
        return sent

    def collect(
        self, handles: list[tuple[int, list[int]]], here: Callable[[list[int]], dict[int, Any]] | None = None
    ) -> tuple[dict[int, bytes], list[int], dict[int, Any]]:
        """The pickled results of :meth:`submit`'s ranks, the ranks to compute here instead, and
        the results of the ranks this process took over from the workers.

        ``here(ranks)`` computes ranks in this process. Called once this process has done its
        own share, it takes over the ranks a worker has not started yet, from the end of the
        worker's list (see :data:`STEAL_MIN_EVENTS`), instead of waiting for them.
        """
        done: dict[int, bytes] = {}
        failed: list[int] = []
        taken: dict[int, Any] = {}
        procs = list(self._procs)  # as submitted (a worker that died stops them all: _broke)
        for w, ranks in handles:
            if w < 0:
                failed.extend(ranks)
                continue
            proc = procs[w]
            while here is not None and (r := proc.take_last()) is not None:
                taken.update(here([r]))
            try:
                answers: list[Answer] = proc.receive()
            except _Died:
                self._broke()
                failed.extend(r for r in ranks if r not in taken)
                continue
            for r, data, caught in answers:
                if data is None:
                    failed.append(r)
                    continue
                for category, message in caught:
                    warnings.warn(message, category, stacklevel=2)
                done[r] = data
        return done, sorted(failed), taken

    def abandon(self) -> None:
        """Forget what was submitted (the caller failed or was interrupted): the processes are
        stopped (killed if computing), and the next call starts new ones."""
        self.close()

    def _start(self) -> None:
        if any(p.busy for p in self._procs):
            self.close()  # an answer nobody collected must not answer the next task
        if self._procs:
            return
        from ..loading.loader import pool_context  # fork, or forkserver in a threaded process

        ctx = pool_context()
        # All at once: a process forked after another one's pipes exist still works, but
        # none is forked once a thread of ours runs (there is none).
        self._procs = [_Worker(ctx) for _ in range(self.workers)]

    def _broke(self) -> None:
        if not self._broken:
            self._broken = True
            warnings.warn(
                "a worker process computing per-rank results died (out of memory?); "
                "the rest is computed in this process",
                TraceviewWarning,
                stacklevel=4,
            )
        self.close()

    def close(self) -> None:
        """Stop the worker processes (idempotent)."""
        procs, self._procs = self._procs, []
        for p in procs:
            p.stop()


def idle_cores() -> int:
    """Cores not busy now: the cores minus the runnable threads (this one included), the
    fewest of three looks 5 ms apart (``/proc/loadavg``'s running count, Linux); where it
    cannot be read, all cores but this process's."""
    cores = os.cpu_count() or 1
    running: list[int] = []
    for i in range(3):
        if i:
            time.sleep(0.005)
        try:
            with open("/proc/loadavg", "rb") as fh:
                running.append(int(fh.read().split()[3].split(b"/")[0]))
        except (OSError, ValueError, IndexError):
            return cores - 1
    return cores - min(running)


class _Died(Exception):
    """A worker process ended (or its pipe broke) before answering."""


class _Worker:
    """One worker process and its pipe; a task is sent, then its answer received."""

    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe()
        #: The items of the task in hand still to compute: [first, end), shared with the
        #: process (which takes them from the front; :meth:`take_last` from the end).
        self.claims = ctx.Array("q", 2)
        self.proc = ctx.Process(target=_serve, args=(child, self.claims), daemon=True, name="traceview-rank-worker")
        self.proc.start()
        child.close()
        #: A task was sent and its answer not received (e.g. the caller was interrupted).
        self.busy = False
        #: The task's ranks (in its order) and which of them may be taken over (:meth:`take_last`).
        self._ranks: list[int] = []
        self._takeable: list[bool] = []

    def send(self, task: tuple[Any, ...]) -> None:
        if not self.proc.is_alive():
            raise _Died
        items: list[Item] = task[2]
        if not self._lock():
            raise _Died
        try:
            self.claims[0], self.claims[1] = 0, len(items)
        finally:
            self.claims.get_lock().release()
        try:
            self.conn.send(task)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise _Died from None
        self.busy = True
        self._ranks = [it[0] for it in items]
        self._takeable = [it[4] for it in items]

    def take_last(self) -> int | None:
        """The last rank of the task in hand that the process has not started, taken from it
        (it will not compute it); None when there is none, or that one may not be taken."""
        if not self._lock():
            return None  # the process died holding the lock: its ranks are computed here (collect)
        try:
            first, end = int(self.claims[0]), int(self.claims[1])
            if end <= first or not self._takeable[end - 1]:
                return None
            self.claims[1] = end - 1
        finally:
            self.claims.get_lock().release()
        return self._ranks[end - 1]

    def _lock(self) -> bool:
        """Acquire the claims' lock; False if the process ended (it may have held it)."""
        lock = self.claims.get_lock()
        while not lock.acquire(timeout=0.5):
            if not self.proc.is_alive():
                return False
        return True

    def receive(self) -> Any:
        # Whichever comes first: the answer, or the end of the process (then no answer).
        ready = mp_wait([self.conn, self.proc.sentinel])
        if self.conn not in ready and not self.conn.poll():
            raise _Died
        try:
            answer = self.conn.recv()
        except (EOFError, OSError):
            raise _Died from None
        self.busy = False
        return answer

    def stop(self) -> None:
        """End the process: asked to when idle, killed when still computing (nobody wants its answer)."""
        if not self.busy:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


# --------------------------------------------------------------------------- in the worker
#: The ranks this worker has read: (entry, index, rank) -> the one-rank trace.
_RANKS: dict[tuple[str, int, int], Trace | None] = {}
#: The worker's shared per-rank facts (:mod:`._memo`), for all its ranks and calls.
_MEMO: dict[Any, Any] = {}


def _one_rank(item: Item, classifier: Classifier, source: str | None, origin: int | None) -> Trace | None:
    """The one-rank trace ``Trace.map_ranks`` would pass for this rank, from its cache entry."""
    from ..loading.cache import read_rank

    rank, entry, index, meta, _ = item
    key = (entry, index, rank)
    if key not in _RANKS:
        d = read_rank(entry, index, meta, classifier=classifier)
        one = None
        if d is not None:
            one = Trace([d], classifier=classifier, source=source, _classified=True)
            one._origin = origin
        _RANKS[key] = one
    return _RANKS[key]


def _compute(
    claims: Any,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    items: list[Item],
    classifier: Classifier,
    source: str | None,
    origin: int | None,
) -> list[Answer]:
    """A worker's task: ``fn(one_rank_trace, *args)`` pickled for each rank of ``items`` that
    the caller has not taken over (``claims``: see ``_Worker``), in order (None where the rank's
    tables cannot be read or ``fn`` raises: computed by the caller instead)."""
    out: list[Answer] = []
    while True:
        with claims.get_lock():
            i = claims[0]
            if i >= claims[1]:
                break
            claims[0] = i + 1
        item = items[i]
        try:
            one = _one_rank(item, classifier, source, origin)
            if one is None:
                out.append((item[0], None, []))
                continue
            with warnings.catch_warnings(record=True) as caught, worker_scope(_MEMO):
                warnings.simplefilter("always")
                value = fn(one, *args)
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            out.append((item[0], data, [(w.category, str(w.message)) for w in caught]))
        except Exception:  # noqa: BLE001 - the caller computes it, and raises what it raises
            out.append((item[0], None, []))
    return out


def _serve(conn: Connection, claims: Any) -> None:
    """A worker's loop: tasks (:func:`_compute`'s arguments) in, answers out, until None."""
    _keep_freed_memory()
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return  # the caller went away
        if task is None:
            return
        answers = _compute(claims, *task)
        try:
            conn.send(answers)
        except (pickle.PicklingError, AttributeError, TypeError):
            conn.send([(r, None, []) for r, _, _ in answers])  # a warning that would not pickle
        except (BrokenPipeError, OSError):
            return


def _keep_freed_memory() -> None:
    """glibc: keep freed memory in this process instead of giving it back to the system at once
    (the analyses allocate and free arrays of a few MB each, again and again: given back, each
    is faulted in again, a quarter of a worker's CPU time on the 64 x 1M set; kept, ~20 % less
    CPU). A worker's own setting, for its short life; elsewhere (another C library) nothing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: trim the heap's top only beyond 1 GiB free
    mallopt(-2, 1 << 28)  # M_TOP_PAD: grow the heap 256 MiB at a time
    mallopt(-3, 1 << 25)  # M_MMAP_THRESHOLD: blocks up to 32 MiB from the heap (glibc's maximum)
