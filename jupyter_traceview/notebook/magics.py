"""IPython magics: ``%%traceprofile`` profiles a cell, ``%traceview`` shows a trace.

Load them with ``%load_ext jupyter_traceview``. This module imports IPython; torch is imported
when a cell is profiled (:mod:`jupyter_traceview.notebook.recording`).

The profiled cell runs as it would without the magic: in the user namespace, with its output,
display calls and last-expression value shown, magics and ``!`` commands inside it working,
and top-level ``await`` too (such cells are rewritten by an input transformer into an awaited
call, since a cell magic itself cannot await). Exceptions raised by the cell propagate with
their traceback once the partial trace is saved.
"""

from __future__ import annotations

import ast
import inspect
import sys
import tokenize
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..errors import TraceviewError
from . import recording
from .jax_recording import JaxMissingError, JaxProfileSession

#: A profiling session of either profiler (driven alike).
_Session = recording.ProfileSession | JaxProfileSession

__all__ = ["TraceviewMagics", "load_ipython_extension", "unload_ipython_extension"]

_TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)


def _is_async(code: Any) -> bool:
    return bool(code.co_flags & inspect.CO_COROUTINE)


class _Cell:
    """A cell body compiled once, run as IPython would run it (possibly several times).

    The values of the trailing expressions are returned rather than displayed, so that showing
    them (``Out[n]``) happens after profiling and stays out of the last ProfilerStep.
    """

    def __init__(self, shell: Any, header: str, cell: str) -> None:
        transformed = shell.transform_cell(cell)
        # Tracebacks show "Cell In[n], line k" with k counted in the visible cell (header included).
        self.filename = shell.compile.cache(
            f"{header}\n{transformed}", _cell_number(shell), raw_code=f"{header}\n{cell}"
        )
        flags = _TOP_LEVEL_AWAIT if shell.autoawait else 0
        self._codes: list[tuple[Any, bool]] = []  # (code, evaluates to a value to show)
        with shell.compile.extra_flags(flags):
            mod = shell.compile.ast_parse("\n" + transformed, filename=self.filename)
            mod = shell.transform_ast(mod)
            quiet, shown = _split_interactive(list(mod.body), shell.ast_node_interactivity)
            if quiet:
                self._codes.append((shell.compile(ast.Module(quiet, []), self.filename, "exec"), False))
            for node in shown:
                if isinstance(node, ast.Expr):
                    self._codes.append((shell.compile(ast.Expression(node.value), self.filename, "eval"), True))
                else:
                    self._codes.append((shell.compile(ast.Module([node], []), self.filename, "exec"), False))
        self.needs_await = any(_is_async(c) for c, _ in self._codes)
        self._shell = shell
        # IPython decides this from the cell in history, which for a cell magic is the magic call.
        self._quiet = _ends_with_semicolon(transformed)

    def run(self) -> list[Any]:
        """Run the cell once; the values to display."""
        __tracebackhide__ = True  # read by IPython: hides this frame in tracebacks
        ns, user_ns = self._shell.user_global_ns, self._shell.user_ns
        values = []
        for code, is_value in self._codes:
            if is_value:
                values.append(eval(code, ns, user_ns))
            else:
                exec(code, ns, user_ns)
        return values

    async def run_async(self) -> list[Any]:
        """Run the cell once, awaiting its top-level awaits; the values to display."""
        __tracebackhide__ = True  # read by IPython: hides this frame in tracebacks
        ns, user_ns = self._shell.user_global_ns, self._shell.user_ns
        values = []
        for code, is_value in self._codes:
            # eval runs "exec" code objects too; a top-level-await one gives a coroutine to await.
            out = eval(code, ns, user_ns)
            if _is_async(code):
                out = await out
            if is_value:
                values.append(out)
        return values

    def show(self, values: list[Any]) -> None:
        """Display the values as IPython displays a cell's last expression."""
        if self._quiet:
            return
        for v in values:
            self._shell.displayhook(v)


def _cell_number(shell: Any) -> int:
    """The number of the cell running now (its ``In[n]``).

    IPython 9 counts the next cell (``shell.execution_count``) before running this one (8 did
    after): the running cell's own number is that of the result it fills in.
    """
    number = getattr(getattr(shell.displayhook, "exec_result", None), "execution_count", None)
    return int(number) if isinstance(number, int) else int(shell.execution_count)


def _ends_with_semicolon(source: str) -> bool:
    from IPython.core.displayhook import DisplayHook

    try:
        return bool(DisplayHook.semicolon_at_end_of_expression(source))
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return False


def _split_interactive(body: list[ast.stmt], interactivity: str) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """Statements run silently and those whose value is displayed, by IPython's rules."""
    if not body:
        return [], []
    nodes = list(body)
    if interactivity == "last_expr_or_assign":
        target: ast.expr | None = None
        last = nodes[-1]
        if isinstance(last, ast.AugAssign | ast.AnnAssign):
            target = last.target
        elif isinstance(last, ast.Assign) and len(last.targets) == 1:
            target = last.targets[0]
        if isinstance(target, ast.Name):
            echo = ast.Expr(ast.Name(target.id, ast.Load()))
            ast.copy_location(echo, last)
            ast.fix_missing_locations(echo)
            nodes.append(echo)
        interactivity = "last_expr"
    if interactivity == "last_expr":
        interactivity = "last" if isinstance(nodes[-1], ast.Expr) else "none"
    if interactivity == "none":
        return nodes, []
    if interactivity == "all":
        return [], nodes
    return nodes[:-1], nodes[-1:]


def _options(args: Any, cell: str) -> recording.ProfileOptions:
    if args.o is not None and not args.o.isidentifier():
        raise UsageError(f"-o takes a variable name, got {args.o!r}")
    if args.jax and (args.record_shapes or args.memory):
        torch_only = "--record-shapes" if args.record_shapes else "--memory"
        raise UsageError(f"%%traceprofile: {torch_only} is torch.profiler's; jax.profiler (--jax) has no such option")
    try:
        return recording.ProfileOptions(
            repeat=args.repeat,
            warmup=args.warmup,
            cpu_only=args.cpu_only,
            record_shapes=args.record_shapes,
            with_stack=args.with_stack,
            memory=args.memory,
            out=Path(args.out),
            name=args.name if args.name is not None else recording.cell_name(cell),
        )
    except ValueError as exc:
        raise UsageError(f"%%traceprofile: {exc}") from None


@magics_class
class TraceviewMagics(Magics):
    """``%%traceprofile`` and ``%traceview``."""

    @magic_arguments()
    @argument("--jax", action="store_true", help="Profile with jax.profiler instead of torch.profiler.")
    @argument("--cpu-only", action="store_true", help="Record CPU activity only, even where a GPU is present.")
    @argument("--record-shapes", action="store_true", help="Record operator input shapes.")
    @argument("--with-stack", action="store_true", help="Record Python stacks of operators.")
    @argument("--memory", action="store_true", help="Record tensor memory allocations.")
    @argument("--repeat", type=int, default=1, metavar="N", help="Profiled runs of the cell (default 1).")
    @argument(
        "--warmup", type=int, default=0, metavar="W", help="Runs before the profiled ones, not recorded (default 0)."
    )
    @argument("--out", default="traceview-runs", metavar="DIR", help="Folder of the runs (default ./traceview-runs).")
    @argument(
        "--name",
        default=None,
        help="Sub-folder and title of this cell's runs (default: the first function it calls; "
        "the title: the cell's first meaningful line).",
    )
    @argument("--no-show", action="store_true", help="Print one summary line instead of the inline view.")
    @argument("-o", default=None, metavar="VAR", help="Bind the loaded Trace to this variable.")
    @cell_magic
    def traceprofile(self, line: str, cell: str) -> None:
        """Run the cell under torch.profiler, save the trace, show it.

        The cell runs ``W + N`` times (``--warmup W --repeat N``) in the user namespace; state
        changes accumulate as if it were run that many times. Only the last ``N`` runs are
        recorded, one ProfilerStep each. The trace is written to
        ``DIR/NAME/<timestamp>/rank-<r>.pt.trace.json.gz`` with a run record
        (``.traceview-run.json``) beside it. With ``--jax`` the cell runs under
        ``jax.profiler`` instead (each profiled run a ``StepTraceAnnotation``), which writes
        ``DIR/NAME/<timestamp>/plugins/profile/<time>/<host>.trace.json.gz``.
        """
        __tracebackhide__ = True  # read by IPython: hides this frame in tracebacks
        args = parse_argstring(self.traceprofile, line)
        options = _options(args, cell)
        code = _Cell(self.shell, f"%%traceprofile {line}".rstrip(), cell)
        if code.needs_await:
            raise UsageError(
                "%%traceprofile: this cell uses top-level await; load the magics with "
                "`%load_ext jupyter_traceview` (which handles such cells) and keep autoawait on"
            )
        session = self._session(options, jax=args.jax)
        if session is None:  # no run folder: the cell runs once, unprofiled (see _session)
            code.show(code.run())
            return
        try:
            for k in range(session.total_runs):
                values = code.run()
                session.run_completed(k)
        except BaseException as exc:
            self._report_failure(session, exc, args, cell)
            raise
        outcome = self._stop(session, None)
        code.show(values)
        self._report(session, outcome, args, cell)

    async def _traceprofile_async(self, line: str, cell: str) -> None:
        """``%%traceprofile`` for a cell with top-level await (called by the input transformer)."""
        __tracebackhide__ = True  # read by IPython: hides this frame in tracebacks
        args = parse_argstring(self.traceprofile, line)
        options = _options(args, cell)
        code = _Cell(self.shell, f"%%traceprofile {line}".rstrip(), cell)
        session = self._session(options, jax=args.jax)
        if session is None:
            code.show(await code.run_async())
            return
        try:
            for k in range(session.total_runs):
                values = await code.run_async()
                session.run_completed(k)
        except BaseException as exc:
            self._report_failure(session, exc, args, cell)
            raise
        outcome = self._stop(session, None)
        code.show(values)
        self._report(session, outcome, args, cell)

    def _session(self, options: recording.ProfileOptions, *, jax: bool = False) -> _Session | None:
        """A started profiling session; None when no run folder can be created.

        The user's work comes first: without a folder to save into (a read-only or full
        disk, a file in the way) the cell still runs, once and unprofiled, after a warning.
        """
        try:
            session: _Session = JaxProfileSession(options) if jax else recording.ProfileSession(options)
        except (recording.TorchMissingError, JaxMissingError) as exc:
            raise UsageError(f"%%traceprofile: {exc}") from None
        except OSError as exc:
            where = options.out / options.name
            why = "disk full (ENOSPC)" if recording.disk_full(exc) else exc.strerror or str(exc)
            print(
                f"traceview: cannot create a run folder in {where} ({why}); running the cell once without profiling",
                file=sys.stderr,
            )
            return None
        try:
            session.start()
        except BaseException:
            session.discard()
            raise
        return session

    @staticmethod
    def _stop(session: _Session, error: BaseException | None) -> recording.RunOutcome | None:
        """Stop profiling and save the trace; None (with a message, the empty run folder removed) if that failed."""
        try:
            return session.finish(error)
        except Exception as exc:  # noqa: BLE001 - the cell's own error (if any) must still propagate
            print(f"traceview: could not save the trace to {session.run_dir}: {exc}", file=sys.stderr)
            if session.world_size <= 1:
                session.discard()  # only if empty: a failed save leaves no empty run folder
            return None

    def _report_failure(self, session: _Session, error: BaseException, args: Any, cell: str) -> None:
        """Save and report what was recorded before ``error``; never hides ``error`` behind another."""
        try:
            self._report(session, self._stop(session, error), args, cell)
        except Exception as exc:  # noqa: BLE001 - the cell's exception is what the user must see
            print(f"traceview: could not report on the failed run in {session.run_dir}: {exc}", file=sys.stderr)

    def _report(self, session: _Session, outcome: recording.RunOutcome | None, args: Any, cell: str) -> None:
        """Load the saved trace, write the run record, bind ``-o``, show the result."""
        from ..analysis.headline import headline
        from ..analysis.summary import summary
        from ..loading import loader
        from ..model.trace import Trace
        from ..widgets.display import show, summary_line

        if outcome is None:
            return
        files: list[Path] = (
            outcome.rank_files if outcome.rank == 0 else [outcome.trace_file] if outcome.trace_file else []
        )
        trace = None
        load_error = None
        if files:
            try:
                trace = loader.load(files[0] if len(files) == 1 else files)
            except TraceviewError as exc:
                load_error = str(exc)
        if trace is not None and outcome.status != "ok":
            # The run record (which tv.load reads the status from) is written below.
            trace = Trace(
                [trace.rank_data(r) for r in trace.ranks],
                classifier=trace.classifier,
                source=trace.source,
                skipped_files=trace.skipped_files,
                run_status=outcome.status,
                _classified=True,
            )
        if outcome.rank == 0:
            rows = figures = None
            if trace is not None:
                rows = summary(trace).to_dict("records")
                figures = headline(trace)
            record = recording.run_record(
                outcome, source=cell, summary_rows=rows, headline=figures, load_error=load_error, title=args.name
            )
            try:
                recording.write_json_atomic(outcome.run_dir / recording.RUN_RECORD, record)
            except OSError as exc:
                print(f"traceview: could not write the run record: {exc}", file=sys.stderr)
        if trace is not None and args.o is not None:
            self._user_ns()[args.o] = trace
        where = _shown_path(outcome.run_dir)
        if outcome.status != "ok":
            what = "was interrupted" if outcome.status == "interrupted" else f"raised {outcome.error}"
            warmup = session.options.warmup
            if outcome.trace_file is None:
                print(
                    f"traceview: the cell {what} in warm-up run {outcome.runs_completed + 1} of {warmup}; "
                    "nothing was recorded (warm-up runs are not traced)",
                    file=sys.stderr,
                )
            else:
                print(
                    f"traceview: the cell {what} in profiled run {outcome.runs_completed - warmup + 1} of "
                    f"{session.options.repeat}; partial trace saved to {where}",
                    file=sys.stderr,
                )
            return
        if trace is None:
            print(f"traceview: trace saved to {where} but could not be loaded: {load_error}", file=sys.stderr)
            return
        if args.no_show or outcome.rank != 0:
            rank = f"rank {outcome.rank}: " if outcome.world_size > 1 else ""
            print(f"traceview: {rank}{summary_line(trace)} · saved to {where}")
            return
        missing = outcome.world_size - len(outcome.rank_files)
        note = f" ({missing} of {outcome.world_size} rank files not there yet)" if missing > 0 else ""
        print(f"traceview: saved to {where}{note}")
        show(trace)

    def _user_ns(self) -> dict[str, Any]:
        assert self.shell is not None  # set by load_ipython_extension
        ns: dict[str, Any] = self.shell.user_ns
        return ns

    @magic_arguments()
    @argument(
        "path", nargs="?", default=None, help="A trace file or folder (default: the latest run in ./traceview-runs)."
    )
    @argument("-o", default=None, metavar="VAR", help="Bind the loaded Trace to this variable.")
    @line_magic
    def traceview(self, line: str) -> None:
        """Show a saved trace (a file, or a folder with one file per rank) inline."""
        from ..loading import loader
        from ..widgets.display import show

        args = parse_argstring(self.traceview, line)
        if args.o is not None and not args.o.isidentifier():
            raise UsageError(f"-o takes a variable name, got {args.o!r}")
        path = args.path
        if path is None:
            runs = recording.list_runs("traceview-runs")
            if not runs:
                raise UsageError(
                    "%traceview: no run under ./traceview-runs; pass a trace file or folder: %traceview PATH"
                )
            path = runs[0]["run_dir"]
        try:
            trace = loader.load(path)
        except TraceviewError as exc:
            raise UsageError(f"%traceview: {exc}") from None
        if args.o is not None:
            self._user_ns()[args.o] = trace
        show(trace)


def _shown_path(path: Path) -> str:
    """``path`` relative to the working folder when inside it (shorter in messages)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------- await support
class _AwaitTransformer:
    """Rewrites a ``%%traceprofile`` cell with top-level await into an awaited call.

    A cell magic is a plain function call and cannot await; IPython (and ipykernel) run a cell
    on the event loop only when its transformed source has a top-level await. Cells without
    await are left alone for the ordinary cell-magic path.
    """

    def __init__(self, shell: Any, magics: TraceviewMagics) -> None:
        self.shell = shell
        self.magics = magics

    def __call__(self, lines: list[str]) -> list[str]:
        if not lines or not self.shell.autoawait:
            return lines
        first = lines[0].rstrip("\n")
        word, _, line = first.partition(" ")
        if word.strip() != "%%traceprofile":
            return lines
        body = "".join(lines[1:])
        from IPython.core.async_helpers import _should_be_async

        try:
            needs_await = _should_be_async(self.shell.transform_cell(body))
        except Exception:  # noqa: BLE001 - leave odd cells to the ordinary path, which reports errors
            return lines
        if not needs_await:
            return lines
        name = type(self.magics).__name__
        line = self.shell.var_expand(line.strip())
        return [f"await get_ipython().magics_manager.registry[{name!r}]._traceprofile_async({line!r}, {body!r})\n"]


def load_ipython_extension(ip: Any) -> None:
    """Register ``%%traceprofile`` and ``%traceview`` (``%load_ext jupyter_traceview``)."""
    magics = TraceviewMagics(ip)
    ip.register_magics(magics)
    cleanup = ip.input_transformers_cleanup
    cleanup[:] = [t for t in cleanup if not isinstance(t, _AwaitTransformer)]
    cleanup.append(_AwaitTransformer(ip, magics))


def unload_ipython_extension(ip: Any) -> None:
    """Remove the input transformer added by :func:`load_ipython_extension`."""
    cleanup = ip.input_transformers_cleanup
    cleanup[:] = [t for t in cleanup if not isinstance(t, _AwaitTransformer)]
