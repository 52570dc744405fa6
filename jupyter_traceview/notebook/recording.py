"""Recording a profiled run: torch.profiler control, run folders, atomic trace files, run records.

Used by the ``%%traceprofile`` magic (:mod:`jupyter_traceview.notebook.magics`), and free of IPython so
that it can be driven from any loop. torch is imported only when a session starts.

A run is ``OUT/NAME/<timestamp>/`` holding ``rank-<r>.pt.trace.json.gz`` (one per rank) and
``.traceview-run.json``, the run record described in ``docs/runs.md``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import datetime as _dt
import errno
import getpass
import glob
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from .._version import __version__
from ..errors import TraceviewError
from ..loading.readers.files import rank_from_name
from ..loading.run_notes import RUN_RECORD

__all__ = [
    "RUN_RECORD",
    "RUN_RECORD_FORMAT",
    "ProfileOptions",
    "ProfileSession",
    "RunOutcome",
    "TorchMissingError",
    "cell_name",
    "cell_title",
    "describe_error",
    "import_torch",
    "list_runs",
    "new_run_dir",
    "now_iso",
    "read_run_record",
    "write_atomic",
]

#: Value of the record's ``format`` field; bumped when a field changes meaning.
RUN_RECORD_FORMAT = "jupyter_traceview.run/1"
#: How long rank 0 waits for the other ranks' files in a distributed run (seconds).
_RANK_WAIT_S = 60.0
#: ... and when this rank failed (the others may be stuck waiting for it).
_RANK_WAIT_FAILED_S = 5.0

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


class TorchMissingError(TraceviewError, ImportError):
    """PyTorch is needed (to profile) and cannot be imported."""


def import_torch() -> Any:
    """``import torch``, or a :class:`TorchMissingError` that says how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise TorchMissingError(
            f"profiling needs PyTorch, which cannot be imported here ({exc}). "
            "Install it with `pip install torch` (see https://pytorch.org for CUDA/ROCm builds), "
            "then restart the kernel"
        ) from None
    return torch


@dataclass(frozen=True)
class ProfileOptions:
    """What to record and where (the ``%%traceprofile`` options)."""

    #: Profiled runs of the cell (each is one ProfilerStep in the trace).
    repeat: int = 1
    #: Runs before the profiled ones, left out of the trace.
    warmup: int = 0
    #: Record CPU activity only, even where a GPU is present.
    cpu_only: bool = False
    #: Record operator input shapes (``record_shapes``).
    record_shapes: bool = False
    #: Record Python call stacks of operators (``with_stack``).
    with_stack: bool = False
    #: Record tensor memory allocations (``profile_memory``).
    memory: bool = False
    #: Folder holding the runs.
    out: Path = Path("traceview-runs")
    #: Sub-folder of ``out`` for this cell's runs.
    name: str = "cell"

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ValueError(f"repeat must be at least 1, got {self.repeat}")
        if self.warmup < 0:
            raise ValueError(f"warmup must be 0 or more, got {self.warmup}")
        clean = _NAME_CHARS.sub("-", self.name).strip("-.")
        if not clean:
            raise ValueError(f"name {self.name!r} has no usable characters (letters, digits, _ . -)")
        object.__setattr__(self, "name", clean)
        object.__setattr__(self, "out", Path(self.out).expanduser())


@dataclass
class RunOutcome:
    """What a finished (or failed) profiling session left behind."""

    run_dir: Path
    #: This rank's trace file, or None when nothing was recorded (a failure during warm-up).
    trace_file: Path | None
    rank: int
    world_size: int
    #: ``"ok"``, ``"error"`` (the cell raised) or ``"interrupted"`` (KeyboardInterrupt).
    status: str
    #: ``"ZeroDivisionError: division by zero"`` for a failed run, else None.
    error: str | None
    #: Runs of the cell that completed (warm-up included).
    runs_completed: int
    activities: list[str]
    started_at: str
    ended_at: str
    duration_s: float
    options: ProfileOptions
    torch_version: str
    #: Rank files present in the run folder when this rank finished waiting (rank 0 waits for all).
    rank_files: list[Path] = field(default_factory=list)


def cell_name(source: str) -> str:
    """A folder name for a cell: the first non-builtin function it calls by name, else ``"cell"``.

    Method calls (``opt.step()``) are passed over: their names say little about the cell.

    >>> cell_name("loss = train_step(model, batch)")
    'train_step'
    >>> cell_name("for _ in range(3):\\n    opt.zero_grad()\\n    run(model)")
    'run'
    >>> cell_name("x = torch.ones(3)")
    'cell'
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "cell"
    for stmt in tree.body:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else ""
            if name and not hasattr(builtins, name):
                clean = _NAME_CHARS.sub("-", name).strip("-.")
                if clean:
                    return clean
    return "cell"


#: Longest run title kept (characters): the sidebar shows it whole on hover.
_TITLE_CHARS = 120


def cell_title(source: str) -> str:
    """A run's title from its cell: the first meaningful line, "cell" when there is none.

    Blank lines, comments, imports, magics (``%``) and shell lines (``!``) are passed over:
    they say nothing about what the cell runs. Long lines are cut to 120 characters.

    >>> cell_title("import torch\n# warm\nloss = loss_fn(model(x), y)\nloss.backward()")
    'loss = loss_fn(model(x), y)'
    >>> cell_title("%time\n\n")
    'cell'
    """
    for line in source.splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "%", "!")) or re.match(r"(import|from)\s", text):
            continue
        return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"
    return "cell"


# ---------------------------------------------------------------------- files
#: Less free space than this after a failed save: the disk is full, whatever the error said.
_FULL_BYTES = 1 << 20


def _errnos(exc: BaseException) -> set[int]:
    """The errno of ``exc`` and of the exceptions it was raised from."""
    out: set[int] = set()
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno is not None:
            out.add(seen.errno)
        seen = seen.__cause__ or seen.__context__
    return out


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is ENOSPC or EDQUOT (quota exceeded)."""
    return bool({errno.ENOSPC, errno.EDQUOT} & _errnos(exc))


def save_error(folder: Path, exc: BaseException) -> Exception:
    """What to tell the user when saving into ``folder`` failed with ``exc``.

    A full disk (ENOSPC, or hardly any space left: the profiler then reports a misleading
    "No such file or directory") says so plainly; other errors are returned as they are.
    """
    full = disk_full(exc)
    if not full:
        try:
            full = shutil.disk_usage(folder).free < _FULL_BYTES
        except OSError:
            full = False
    if full:
        return TraceviewError(
            f"disk full (ENOSPC): no space left to save the trace in {folder}; "
            "free some space (or pass --out to a folder on another disk) and run the cell again"
        )
    return exc if isinstance(exc, Exception) else TraceviewError(str(exc))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` so that it appears whole or not at all.

    ``write`` fills a hidden temporary file in the same folder, which is flushed, fsynced
    and renamed over ``path``; on any failure (KeyboardInterrupt included) it is removed.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _gzip_into(src: Path) -> Callable[[IO[bytes]], None]:
    def write(fh: IO[bytes]) -> None:
        from isal import igzip

        with open(src, "rb") as fin, igzip.IGzipFile(filename="", mode="wb", fileobj=fh) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)

    return write


def write_json_atomic(path: Path, obj: Any) -> None:
    """``obj`` as indented JSON at ``path``, written atomically."""
    data = (json.dumps(_no_nan(obj), indent=2, default=_json_default, allow_nan=False) + "\n").encode()
    write_atomic(path, lambda fh: fh.write(data))


def _no_nan(obj: Any) -> Any:
    """``obj`` with NaN and infinite floats (numpy's too) as None: JSON has no NaN."""
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_no_nan(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str | bytes):  # numpy scalars
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def read_run_record(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The run record of a run folder (see ``docs/runs.md``)."""
    path = Path(run_dir) / RUN_RECORD
    with open(path, encoding="utf-8") as fh:
        out: dict[str, Any] = json.load(fh)
    return out


def list_runs(root: str | os.PathLike[str] = "traceview-runs") -> list[dict[str, Any]]:
    """The run records under ``root`` (``root/NAME/<timestamp>/.traceview-run.json``), newest first.

    Each is the record as written (see ``docs/runs.md``), with ``run_dir`` set to the folder it
    was found in (runs move with their folders). Unreadable records are skipped.
    """
    out = []
    for path in Path(root).expanduser().glob(f"*/*/{RUN_RECORD}"):
        try:
            with open(path, encoding="utf-8") as fh:
                rec = json.load(fh)
        except (OSError, ValueError):
            continue
        if not isinstance(rec, dict) or rec.get("format") != RUN_RECORD_FORMAT:
            continue
        rec["run_dir"] = str(path.parent)
        out.append(rec)
    out.sort(key=lambda r: (str(r.get("started_at", "")), r["run_dir"]), reverse=True)
    return out


def new_run_dir(parent: Path) -> Path:
    """A fresh ``parent/<YYYYmmdd-HHMMSS>[-k]`` folder, created (never reused)."""
    parent.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for k in range(1, 10_000):
        candidate = parent / (stamp if k == 1 else f"{stamp}-{k}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise TraceviewError(f"{parent}: cannot create a new run folder for {stamp} (too many runs in one second)")


def now_iso() -> str:
    """Now, as ISO 8601 local time with its UTC offset and milliseconds (the run record's times)."""
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="milliseconds")


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers: record none
        return ""


# ---------------------------------------------------------------------- the session
class ProfileSession:
    """One profiled run of a piece of code, executed ``warmup + repeat`` times by the caller.

    Drive it as::

        session = ProfileSession(options)      # imports torch, creates the run folder
        session.start()
        error = None
        try:
            for k in range(session.total_runs):
                run_the_code()
                session.run_completed(k)
        except BaseException as exc:
            error = exc
        outcome = session.finish(error)          # always: stops the profiler, writes the file

    Each run is a ``ProfilerStep#k`` (schedule: wait 0, warmup ``options.warmup``, active
    ``options.repeat``), so the trace holds ``repeat`` iterations. In a distributed job
    (``torch.distributed`` initialised) the constructor is a collective: rank 0 creates the run
    folder and broadcasts its name, every rank writes ``rank-<r>.pt.trace.json.gz`` into it.
    """

    def __init__(self, options: ProfileOptions) -> None:
        self.options = options
        torch = import_torch()
        self._torch = torch
        self.rank, self.world_size = _dist_rank_world(torch)
        self.run_dir = self._make_run_dir()
        self.total_runs = options.warmup + options.repeat
        self._runs_done = 0
        self._ready = False
        self._prof: Any = None
        self._t0 = time.perf_counter()
        self.started_at = now_iso()
        acts = [torch.profiler.ProfilerActivity.CPU]
        self.activities = ["cpu"]
        if not options.cpu_only and torch.cuda.is_available():
            # ROCm builds of torch report their GPUs through the CUDA activity too.
            acts.append(torch.profiler.ProfilerActivity.CUDA)
            self.activities.append("cuda")
        self._acts = acts

    def _make_run_dir(self) -> Path:
        parent = self.options.out / self.options.name
        if self.world_size <= 1:
            return new_run_dir(parent)
        import torch.distributed as dist

        box: list[Any] = [None]
        if self.rank == 0:
            box[0] = new_run_dir(parent).name
        dist.broadcast_object_list(box, src=0)
        run_dir = parent / str(box[0])
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir

    @property
    def trace_path(self) -> Path:
        """Where this rank's trace goes."""
        return self.run_dir / f"rank-{self.rank}.pt.trace.json.gz"

    def start(self) -> None:
        """Start the profiler; the next run of the code is ProfilerStep#0."""
        torch = self._torch
        with warnings.catch_warnings():
            # torch warns that warmup=0 "can skew results": the user chose it, knowingly or by default.
            warnings.filterwarnings("ignore", message=".*warmup.*")
            sched = torch.profiler.schedule(wait=0, warmup=self.options.warmup, active=self.options.repeat, repeat=1)
        self._prof = torch.profiler.profile(
            activities=self._acts,
            schedule=sched,
            on_trace_ready=self._on_ready,
            record_shapes=self.options.record_shapes,
            with_stack=self.options.with_stack,
            profile_memory=self.options.memory,
        )
        with _native_stderr_filtered():
            self._prof.__enter__()

    def discard(self) -> None:
        """Remove the run folder if nothing was written to it (the profiler failed to start)."""
        with contextlib.suppress(OSError):
            self.run_dir.rmdir()

    def _on_ready(self, prof: Any) -> None:
        self._ready = True

    def run_completed(self, k: int) -> None:
        """Run ``k`` (0-based) of the code finished: advance to the next ProfilerStep."""
        self._runs_done = k + 1
        if k + 1 < self.total_runs:
            with _native_stderr_filtered():
                self._prof.step()

    def finish(self, error: BaseException | None = None) -> RunOutcome:
        """Stop the profiler and write this rank's trace (also after an error or interrupt).

        Returns what was written. The caller re-raises ``error`` afterwards.
        """
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                with _native_stderr_filtered():
                    prof.__exit__(None, None, None)
            finally:
                if self._ready:
                    self._export(prof)
        status = "ok" if error is None else "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
        if self.world_size > 1:
            rank_files = self._gather_ranks(failed=error is not None)
        else:
            rank_files = [self.trace_path] if self.trace_path.exists() else []
        return RunOutcome(
            run_dir=self.run_dir,
            trace_file=self.trace_path if self.trace_path.exists() else None,
            rank=self.rank,
            world_size=self.world_size,
            status=status,
            error=None if error is None else describe_error(error),
            runs_completed=self._runs_done,
            activities=list(self.activities),
            started_at=self.started_at,
            ended_at=now_iso(),
            duration_s=round(time.perf_counter() - self._t0, 6),
            options=self.options,
            torch_version=str(self._torch.__version__),
            rank_files=rank_files,
        )

    def _export(self, prof: Any) -> None:
        raw = self.run_dir / f".rank-{self.rank}.{os.getpid()}.json.tmp"
        try:
            prof.export_chrome_trace(str(raw))
            write_atomic(self.trace_path, _gzip_into(raw))
        except Exception as exc:
            err = save_error(self.run_dir, exc)
            if err is exc:
                raise
            raise err from exc
        finally:
            # The raw export and whatever the profiler left beside it (Kineto writes
            # "<name>.tmp" and renames it; on a full disk that rename fails and it stays).
            for leftover in [raw, *self.run_dir.glob(f"{glob.escape(raw.name)}*")]:
                with contextlib.suppress(OSError):
                    leftover.unlink(missing_ok=True)

    def _gather_ranks(self, *, failed: bool) -> list[Path]:
        """Tell the others this rank is done; rank 0 waits (bounded) for every rank's file."""
        key = f"traceview/{self.options.name}/{self.run_dir.name}/done"
        store = _default_store(self._torch)
        if store is not None:
            try:
                store.add(key, 1)
            except Exception:  # noqa: BLE001 - a broken store only costs the wait below
                store = None
        if self.rank == 0:
            deadline = time.monotonic() + (_RANK_WAIT_FAILED_S if failed else _RANK_WAIT_S)
            while time.monotonic() < deadline:
                if store is not None:
                    try:
                        if int(store.add(key, 0)) >= self.world_size:
                            break
                    except Exception:  # noqa: BLE001
                        store = None
                elif len(self._present_files()) >= self.world_size:
                    break
                time.sleep(0.05)
        return self._present_files()

    def _present_files(self) -> list[Path]:
        files = self.run_dir.glob("rank-*.pt.trace.json.gz")
        return sorted(files, key=lambda p: (rank_from_name(p.name) or 0, p.name))


#: Kineto's progress lines, written by the C++ library straight to file descriptor 2.
_KINETO_CHATTER = re.compile(rb"^(?:STAGE|USDT):\d{4}-\d\d-\d\d [^\]]*\] ")


@contextlib.contextmanager
def _native_stderr_filtered() -> Iterator[None]:
    """Drop Kineto's ``STAGE:``/``USDT:`` progress lines; everything else on fd 2 passes through.

    The C++ profiler prints them on every start and stop; Jupyter kernels forward file
    descriptor 2 into the notebook, where they would sit in red above every profiled cell.
    Other output written meanwhile is replayed, in order, when the block ends.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (some embedded interpreters): filter nothing
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().splitlines(keepends=True) if not _KINETO_CHATTER.match(ln)]
            if kept:
                os.write(2, b"".join(kept))


def describe_error(error: BaseException) -> str:
    """``"ValueError: message"`` (the run record's ``error``)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _dist_rank_world(torch: Any) -> tuple[int, int]:
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return 0, 1


def _default_store(torch: Any) -> Any:
    try:
        from torch.distributed import distributed_c10d

        return distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - private API: without it rank 0 polls the folder instead
        return None


# ---------------------------------------------------------------------- the record
def run_record(
    outcome: RunOutcome,
    *,
    source: str,
    summary_rows: Sequence[Mapping[str, Any]] | None,
    headline: Mapping[str, Any] | None,
    load_error: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The run record (``.traceview-run.json``) of ``outcome``; see ``docs/runs.md``.

    ``headline`` is ``tv.headline(trace)`` of the loaded trace (None if none was loaded);
    ``title`` names the run in lists (default: :func:`cell_title` of ``source``).
    """
    options = asdict(outcome.options)
    options["out"] = str(outcome.options.out)
    return {
        "format": RUN_RECORD_FORMAT,
        "name": outcome.options.name,
        "title": title if title else cell_title(source),
        "run_dir": str(outcome.run_dir.resolve()),
        "status": outcome.status,
        "error": outcome.error,
        "started_at": outcome.started_at,
        "ended_at": outcome.ended_at,
        "duration_s": outcome.duration_s,
        "user": _user(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "source": source,
        "options": options,
        "activities": outcome.activities,
        "runs_completed": outcome.runs_completed,
        "world_size": outcome.world_size,
        "files": [p.name for p in outcome.rank_files],
        "torch_version": outcome.torch_version,
        "traceview_version": __version__,
        "headline": dict(headline) if headline is not None else None,
        "summary": [dict(r) for r in summary_rows] if summary_rows is not None else None,
        "load_error": load_error,
    }
