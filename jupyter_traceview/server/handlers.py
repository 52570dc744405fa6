"""REST endpoints of the Traces sidebar, under /traceview/api/.

Every handler requires Jupyter's authentication and authorization (``@web.authenticated``
and ``@authorized``; XSRF protection applies to any non-GET method), reads only inside the
server root (see runs.resolve_run), bounds what it accepts and returns, and answers errors
as JSON ``{"message": ...}`` without stack traces.

=========================================  ==============================================
``GET runs[?roots=a,b]``                   the runs, newest first, with headline figures, the
                                           baseline and each run's verdict against it
``GET run?path=p``                         one run's dashboard data (202 while computing);
                                           p: a path, or a remote run's URL (also below)
``GET diff?a=p&b=q``                       ``tv.compare(a, b)`` (202 while computing)
``POST baseline?path=p[&name=n][&roots=]`` keep run p as baseline n ("main"; .baselines)
``POST dashboard?path=p[&baseline=q]``     one command of the dashboard's front end
body ``{command, msg}``                    (js/dashboard; 202 while computing)
``GET remote/runs[?root=u]``               the runs under the remote roots (server/remote.py)
``GET remote/run?url=u``                   one remote run, checked inside a remote root
=========================================  ==============================================

Remote roots (``c.TraceviewServer.remote_roots``) are read-only and listed by name only: no
baseline or verdict. A remote run's URL is a ``path`` (``run``, ``diff``, ``dashboard``) too:
checked inside a remote root and looked up in the store (:meth:`_Base.entry`, at most every
REMOTE_RECHECK_S seconds per URL), then loaded by the workers as a local run is. The options
reaching the store are server configuration, scrubbed from every answer.

The dashboard endpoint answers the commands that ``tv.Dashboard`` answers in a kernel
(``jupyter_traceview.dashboard.commands.answer``: the payload, a tab's content, a link, the
timeline's state and its window answers), so the run panel shows the same dashboard. A
ready answer is binary: a 4-byte big-endian length, that many bytes of JSON
``{"status": "ready", "msg": ..., "buffers": [byte lengths]}``, then the buffers.

A GET has no side effects beyond starting (and caching) analyses: where tv.load keeps its
on-disk cache is server configuration (``c.TraceviewServer.cache_dir``), never a request
parameter. Every size a client sends is bounded: query arguments (MAX_QUERY characters),
the roots of a listing (MAX_ROOTS), a command's body (MAX_BODY bytes, nested at most
MAX_DEPTH deep); the sizes inside a command (a window's width, a search pattern) are
clamped by the command's own protocol.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..dashboard.commands import ALL_COMMANDS
from ..loading.storage import is_url
from .baselines import current_baseline, find_baselines, keep_baseline
from .messages import (
    AnswerHeader,
    BaselineRef,
    BaselineSet,
    CommandPending,
    DiffAnswer,
    DiffData,
    DiffPending,
    ErrorBody,
    RemoteError,
    RemoteListing,
    RemoteRunRow,
    RunAnswer,
    RunData,
    RunFigures,
    RunPending,
    RunRow,
    RunsListing,
    RunVerdict,
    VerdictState,
)
from .remote import RemoteRun, check_inside, find_remote_runs, remote_entry, remote_run, scrubbed
from .runs import PathRefused, RunEntry, find_runs, resolve_inside, resolve_run
from .tasks import CommandResult
from .worker import Analyzer

AUTH_RESOURCE = "traceview"
#: Longest query argument accepted (characters).
MAX_QUERY = 4096
#: Most roots one listing searches.
MAX_ROOTS = 64
#: Largest dashboard command accepted (bytes of the request body).
MAX_BODY = 64 * 1024
#: Deepest nesting of lists and objects accepted in a dashboard command.
MAX_DEPTH = 32
#: Largest dashboard answer sent (bytes: JSON and buffers).
MAX_ANSWER = 256 * 1024 * 1024
#: How long a dashboard request waits for its answer before it is told to ask again (s).
LONG_POLL_S = 1.0
#: Runs of a listing (the newest) that get a verdict against the baseline: each is a comparison
#: in the worker, so a listing of thousands of runs starts at most this many.
MAX_VERDICTS = 32
#: The baseline's name when "Set as Baseline" gives none.
DEFAULT_BASELINE = "main"
#: Commands of the dashboard's front end: the one list, ``dashboard.commands.ALL_COMMANDS``.
DASHBOARD_COMMANDS = frozenset(ALL_COMMANDS)
#: How long a remote run's lookup (its objects and their versions) is used before the store is
#: asked again (s): a dashboard's commands come many a second, each naming the run.
REMOTE_RECHECK_S = 10.0
#: Remote runs' lookups kept (the most recent).
REMOTE_MEMO = 256


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    def initialize(self, analyzer: Analyzer, config: Any, remote_roots: list[str] | None = None) -> None:
        self.analyzer = analyzer
        self.tv_config = config
        self.remote_roots = list(remote_roots or [])

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # Never a traceback: the reason only.
        self.set_header("Content-Type", "application/json")
        reason = self._reason
        exc_info = kwargs.get("exc_info")
        if exc_info and isinstance(exc_info[1], web.HTTPError) and exc_info[1].log_message:
            reason = exc_info[1].log_message
        self.finish(json.dumps(ErrorBody(message=reason)))

    def fail(self, status: int, message: str) -> None:
        self.set_status(status)
        self.finish(json.dumps(ErrorBody(message=message)))

    def query(self, name: str, default: str = "") -> str:
        value = self.get_query_argument(name, default)
        if len(value) > MAX_QUERY:
            raise PathRefused(400, f"query argument {name!r} is too long")
        return value

    def roots(self) -> list[str]:
        """The listed roots: ``?roots=a,b`` or the configuration's; each checked, or PathRefused."""
        roots_arg = self.query("roots")
        roots = [r.strip() for r in roots_arg.split(",") if r.strip()] if roots_arg else list(self.tv_config.roots)
        if len(roots) > MAX_ROOTS:
            raise PathRefused(400, f"at most {MAX_ROOTS} roots are searched")
        for r in roots:
            if r not in ("", "."):
                resolve_inside(self.analyzer.root_path, r)
        return roots

    def run(self, rel: str) -> RunEntry:
        """The run at ``rel`` (relative to the root), or PathRefused."""
        return resolve_run(self.root, rel, memo=self.analyzer.sniff_memo)

    async def entry(self, rel: str) -> RunEntry:
        """The run at ``rel``: relative to the root (:meth:`run`), or the URL of a run under a
        remote root, looked up in the store off the event loop (kept REMOTE_RECHECK_S seconds);
        PathRefused otherwise."""
        if not is_url(rel):
            return self.run(rel)
        root, url = check_inside(self.remote_roots, rel)
        memo = self.analyzer.remote_memo
        known = memo.get(url)
        now = time.monotonic()
        if known is not None and now - known[0] < REMOTE_RECHECK_S:
            return known[1]
        options = self.storage_options
        found = await self.in_thread(url, lambda: remote_entry(remote_run(root, url, options)))
        memo.pop(url, None)
        memo[url] = (now, found)
        while len(memo) > REMOTE_MEMO:
            memo.pop(next(iter(memo)))
        return cast(RunEntry, found)

    @property
    def storage_options(self) -> dict[str, Any]:
        return dict(self.tv_config.remote_storage_options)

    async def in_thread(self, url: str, work: Any) -> Any:
        """``work()`` off the event loop, within ``remote_timeout_s``; the store's errors as
        PathRefused with a message naming ``url`` without secrets."""
        from ..errors import TraceFormatError

        timeout = self.tv_config.remote_timeout_s
        try:
            return await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(None, work), timeout)
        except asyncio.TimeoutError:  # (TimeoutError itself from Python 3.11)
            raise PathRefused(504, f"{url}: the store did not answer within {timeout:g} s") from None
        except PathRefused:
            raise
        except TraceFormatError as exc:
            raise PathRefused(422, scrubbed(str(exc), self.storage_options)) from None
        except (OSError, ValueError, KeyError, RuntimeError) as exc:  # a client error storage.errors passes on
            message = scrubbed(f"{url}: cannot be read ({type(exc).__name__})", self.storage_options)
            raise PathRefused(422, message) from None

    @property
    def root(self) -> str:
        return str(self.analyzer.root)


class RunsHandler(_Base):
    """GET /traceview/api/runs[?roots=a,b]: the runs, newest first, with headline figures."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            roots = self.roots()
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        # Walking folders touches the disk: off the event loop.
        runs, baseline, base_entry = await asyncio.get_running_loop().run_in_executor(
            None, lambda: self._listing(roots)
        )
        out = [self._row(entry) for entry in runs]
        if baseline is not None and base_entry is not None:
            base_ready = self.analyzer.status("headline", base_entry)["status"] == "ready"
            others = sorted((e for e in runs if e.path != base_entry.path), key=lambda e: (-e.mtime, e.path))
            wanted = {e.path for e in others[:MAX_VERDICTS]}
            for entry, row in zip(runs, out, strict=True):
                if entry.path in wanted:
                    row["verdict"] = self._verdict(base_entry, entry, row, base_ready)
        listing = RunsListing(runs=out, truncated=len(runs) >= self.tv_config.max_runs)
        if baseline is not None:
            listing["baseline"] = baseline
        self.finish(json.dumps(listing))

    def _listing(self, roots: list[str]) -> tuple[list[RunEntry], BaselineRef | None, RunEntry | None]:
        """The runs; the baseline kept beside them, and its run (None when it cannot be read)."""
        runs = find_runs(
            self.root,
            roots,
            max_depth=self.tv_config.max_depth,
            max_runs=self.tv_config.max_runs,
            memo=self.analyzer.sniff_memo,
        )
        baseline = current_baseline(find_baselines(self.analyzer.root_path, roots, [e.path for e in runs]))
        if baseline is None:
            return runs, None, None
        try:
            return runs, baseline, self.run(baseline["path"])
        except PathRefused:
            return runs, baseline, None

    def _verdict(self, base: RunEntry, entry: RunEntry, row: RunRow, base_ready: bool) -> VerdictState:
        """The run against the baseline: compared once both have their figures (both readable)."""
        state = VerdictState(status="queued", baseline=base.path)
        if row["status"] == "error":
            return VerdictState(status="error", baseline=base.path, message="this run cannot be read")
        if row["status"] != "ready" or not base_ready:
            state["progress"] = {"stage": "waiting for the runs' figures"}
            return state
        task = self.analyzer.status("verdict", base, entry)
        state["status"] = task["status"]
        if task["status"] == "ready":
            state["result"] = cast(RunVerdict, task["result"])  # a "verdict" task's result
        elif task["status"] == "error":
            state["message"] = task["message"]
        else:
            state["progress"] = task.get("progress", {})
        return state

    def _row(self, entry: RunEntry) -> RunRow:
        state = self.analyzer.status("headline", entry)
        row = RunRow(
            path=entry.path,
            name=entry.path.rsplit("/", 1)[-1],
            title=entry.title,
            kind=entry.kind,
            files=len(entry.files),
            mtime=entry.mtime,
            size=entry.size,
            status=state["status"],
        )
        if state["status"] == "ready":
            row["figures"] = cast(RunFigures, state["result"])  # a "headline" task's result
        elif state["status"] == "error":
            row["message"] = state["message"]
        else:
            row["progress"] = state.get("progress", {})
        return row


class RunHandler(_Base):
    """GET /traceview/api/run?path=<relative path>: one run's dashboard data (202 while computing)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            entry = await self.entry(self.query("path"))
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        state = self.analyzer.status("run", entry)
        if state["status"] == "ready":
            data = cast(RunData, state["result"])  # a "run" task's result
            self.finish(json.dumps(RunAnswer(path=entry.path, status="ready", data=data)))
        elif state["status"] == "error":
            self.fail(422, state["message"])
        else:
            self.set_status(202)
            self.finish(json.dumps(RunPending(**state, path=entry.path)))


class DiffHandler(_Base):
    """GET /traceview/api/diff?a=<baseline>&b=<other>: ``tv.compare(a, b)`` (202 while computing)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            a = await self.entry(self.query("a"))
            b = await self.entry(self.query("b"))
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        state = self.analyzer.status("diff", a, b)
        if state["status"] == "ready":
            data = cast(DiffData, state["result"])  # a "diff" task's result
            self.finish(json.dumps(DiffAnswer(a=a.path, b=b.path, status="ready", data=data)))
        elif state["status"] == "error":
            self.fail(422, state["message"])
        else:
            self.set_status(202)
            self.finish(json.dumps(DiffPending(**state, a=a.path, b=b.path)))


class BaselineHandler(_Base):
    """POST /traceview/api/baseline?path=<run>[&name=<name>][&roots=a,b]: keep a run as baseline.

    Writes the baselines file ``traceview baseline set`` writes (server/baselines.py says
    which); answers the baseline as kept (:class:`BaselineSet`), 400 for a bad name, 409 when
    the baselines file is not a regular file.
    """

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from ..errors import OptionError, TraceFormatError

        try:
            if is_url(self.query("path")):
                raise PathRefused(400, "runs in object storage are read-only: a baseline is a local run")
            entry = self.run(self.query("path"))
            roots = self.roots()
            name = self.query("name") or DEFAULT_BASELINE
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        try:
            kept = await asyncio.get_running_loop().run_in_executor(
                None, lambda: keep_baseline(self.analyzer.root_path, roots, entry.path, name)
            )
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        except (OptionError, TraceFormatError) as exc:
            self.fail(400, str(exc).replace(self.root.rstrip("/") + "/", ""))
            return
        self.finish(json.dumps(BaselineSet(baseline=kept)))


class DashboardHandler(_Base):
    """POST /traceview/api/dashboard?path=<run>[&baseline=<run>]: one command of the dashboard's front end.

    Body: ``{"command": "_tab", "msg": {...}}`` (js/dashboard/protocol.ts). Answers 200
    with the binary answer (see the module's docstring), 202 with progress while the worker
    computes (ask again with the same body), 422 when the run cannot be read.
    """

    @web.authenticated
    @authorized
    async def post(self) -> None:
        try:
            command, msg = self._command()
            entry = await self.entry(self.query("path"))
            baseline_rel = self.query("baseline")
            entries = (entry, await self.entry(baseline_rel)) if baseline_rel else (entry,)
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        if command == "_bokehjs":
            # The bokeh package's own BokehJS: no trace needed, no worker.
            from ..dashboard.data import bokehjs_source

            version, js = await asyncio.get_running_loop().run_in_executor(None, bokehjs_source)
            self._send_answer({"version": version, "bytes": len(js)}, [js])
            return
        args = (command, msg)
        state = self.analyzer.status("command", *entries, args=args)
        if state["status"] in ("queued", "running"):
            await self.analyzer.wait("command", *entries, args=args, timeout=LONG_POLL_S)
            state = self.analyzer.status("command", *entries, args=args)
        if state["status"] == "ready":
            result = cast(CommandResult, state["result"])  # a "command" task's result
            self._send_answer(result["msg"], result["buffers"])
        elif state["status"] == "error":
            self.fail(422, state["message"])
        else:
            self.set_status(202)
            self.finish(json.dumps(CommandPending(**state, command=command)))

    def _command(self) -> tuple[str, str]:
        """The request's command and its message (canonical JSON), or PathRefused."""
        body = self.request.body or b""
        if len(body) > MAX_BODY:
            raise PathRefused(413, f"the request is larger than {MAX_BODY} bytes")
        try:
            request = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise PathRefused(400, 'the body must be JSON: {"command": ..., "msg": {...}}') from None
        except RecursionError:
            raise PathRefused(400, f"the body is nested too deeply (at most {MAX_DEPTH} levels)") from None
        if _depth(request) > MAX_DEPTH:
            raise PathRefused(400, f"the body is nested too deeply (at most {MAX_DEPTH} levels)")
        if not isinstance(request, dict):
            raise PathRefused(400, 'the body must be a JSON object: {"command": ..., "msg": {...}}')
        command = request.get("command")
        if command not in DASHBOARD_COMMANDS:
            raise PathRefused(400, f"unknown command {command!r}; commands are {', '.join(sorted(DASHBOARD_COMMANDS))}")
        msg = request.get("msg", {})
        if not isinstance(msg, dict):
            raise PathRefused(400, "msg must be a JSON object")
        return command, json.dumps(msg, sort_keys=True, separators=(",", ":"))

    def _send_answer(self, msg: Any, buffers: list[bytes]) -> None:
        head = AnswerHeader(status="ready", msg=msg, buffers=[len(b) for b in buffers])
        try:
            header = json.dumps(head, allow_nan=False).encode()
        except ValueError:  # a NaN or an infinity somewhere: null, as JSON has no such numbers
            header = json.dumps(_finite(head)).encode()
        if len(header) + sum(len(b) for b in buffers) > MAX_ANSWER:
            self.fail(422, f"the answer is larger than {MAX_ANSWER >> 20} MiB: ask for a smaller window")
            return
        self.set_header("Cache-Control", "no-store")
        self.write(len(header).to_bytes(4, "big"))
        self.write(header)
        for b in buffers:
            self.write(b)
        self.finish(set_content_type="application/octet-stream")


def _remote_row(run: RemoteRun) -> RemoteRunRow:
    return RemoteRunRow(
        url=run.url,
        root=run.root,
        name=run.url.rstrip("/").rsplit("/", 1)[-1],
        kind=run.kind,
        files=run.files,
        size=run.size,
        mtime=run.mtime,
    )


class RemoteRunsHandler(_Base):
    """GET /traceview/api/remote/runs[?root=<url>]: the runs under the remote roots (or under
    ``root``, a URL inside one of them), newest first; a root that cannot be listed is one of
    ``errors``."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            asked = self.query("root")
            starts = [check_inside(self.remote_roots, asked)] if asked else [(r, r) for r in self.remote_roots]
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        cfg = self.tv_config
        runs: list[RemoteRunRow] = []
        failed: list[RemoteError] = []
        truncated = False
        for root, url in starts:
            options = self.storage_options
            try:
                found, cut = await self.in_thread(
                    url,
                    lambda url=url, root=root, options=options: find_remote_runs(
                        url, options, max_depth=cfg.max_depth, max_runs=cfg.max_runs, max_entries=cfg.remote_max_entries
                    ),
                )
            except PathRefused as exc:
                failed.append(RemoteError(root=url, message=exc.message))
                continue
            truncated = truncated or cut
            runs.extend(_remote_row(RemoteRun(r.url, root, r.kind, r.files, r.size, r.mtime)) for r in found)
        runs.sort(key=lambda r: (-r["mtime"], r["url"]))
        if len(runs) > cfg.max_runs:
            runs, truncated = runs[: cfg.max_runs], True
        self.finish(json.dumps(RemoteListing(runs=runs, truncated=truncated, errors=failed)))


class RemoteRunHandler(_Base):
    """GET /traceview/api/remote/run?url=<url>: one run in object storage (403 outside the
    remote roots, 400 when it is no run, 422 when the store refuses it, 504 on timeout)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            root, url = check_inside(self.remote_roots, self.query("url"))
            options = self.storage_options
            run = await self.in_thread(url, lambda: remote_run(root, url, options))
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        self.finish(json.dumps(_remote_row(run)))


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in a JSON value (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
