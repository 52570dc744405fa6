"""REST endpoints of the Traces sidebar, under /traceview/api/.

Every handler requires Jupyter's authentication and authorization (``@web.authenticated``
and ``@authorized``; XSRF protection applies to any non-GET method), reads only inside the
server root (see runs.resolve_run), bounds what it accepts and returns, and answers errors
as JSON ``{"message": ...}`` without stack traces.

=========================================  ==============================================
``GET runs[?roots=a,b][&cache=dir]``       the runs, newest first, with headline figures
``GET run?path=p[&cache=dir]``             one run's dashboard data (202 while computing)
``GET diff?a=p&b=q[&cache=dir]``           ``tv.trace_diff(a, b)`` (202 while computing)
=========================================  ==============================================

``cache`` is a folder relative to the server root for tv.load's on-disk cache (created if
missing); without it the server's ``c.TraceviewServer.cache_dir`` (or the user cache) is used.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from .runs import PathRefused, RunEntry, find_runs, resolve_cache_dir, resolve_inside, resolve_run
from .worker import Analyzer

AUTH_RESOURCE = "traceview"
#: Longest query argument accepted (characters).
MAX_QUERY = 4096
#: Most roots one listing searches.
MAX_ROOTS = 64


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    def initialize(self, analyzer: Analyzer, config: Any) -> None:
        self.analyzer = analyzer
        self.tv_config = config

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # Never a traceback: the reason only.
        self.set_header("Content-Type", "application/json")
        reason = self._reason
        exc_info = kwargs.get("exc_info")
        if exc_info and isinstance(exc_info[1], web.HTTPError) and exc_info[1].log_message:
            reason = exc_info[1].log_message
        self.finish(json.dumps({"message": reason}))

    def fail(self, status: int, message: str) -> None:
        self.set_status(status)
        self.finish(json.dumps({"message": message}))

    def query(self, name: str, default: str = "") -> str:
        value = self.get_query_argument(name, default)
        if len(value) > MAX_QUERY:
            raise PathRefused(400, f"query argument {name!r} is too long")
        return value

    def cache(self) -> str | bool | None:
        """The ``cache`` argument, resolved inside the root (None: the server's setting)."""
        rel = self.query("cache").strip()
        if not rel:
            return None
        return str(resolve_cache_dir(self.analyzer.root_path, rel))

    def run(self, rel: str) -> RunEntry:
        """The run at ``rel`` (relative to the root), or PathRefused."""
        return resolve_run(self.root, rel, memo=self.analyzer.sniff_memo)

    def answer(self, state: dict[str, Any], **extra: Any) -> None:
        """A task's state: 200 with ``data`` when ready, 202 with progress, 422 with the error."""
        if state["status"] == "ready":
            self.finish(json.dumps({**extra, "status": "ready", "data": state["result"]}))
        elif state["status"] == "error":
            self.fail(422, state["message"])
        else:
            self.set_status(202)
            self.finish(json.dumps({**extra, **state}))

    @property
    def root(self) -> str:
        return str(self.analyzer.root)


class RunsHandler(_Base):
    """GET /traceview/api/runs[?roots=a,b]: the runs, newest first, with headline figures."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            roots_arg = self.query("roots")
            roots = [r.strip() for r in roots_arg.split(",") if r.strip()] if roots_arg else list(self.tv_config.roots)
            if len(roots) > MAX_ROOTS:
                raise PathRefused(400, f"at most {MAX_ROOTS} roots are searched")
            for r in roots:
                if r not in ("", "."):
                    resolve_inside(self.analyzer.root_path, r)
            cache = self.cache()
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        # Walking folders touches the disk: off the event loop.
        runs = await asyncio.get_running_loop().run_in_executor(
            None,
            lambda: find_runs(
                self.root,
                roots,
                max_depth=self.tv_config.max_depth,
                max_runs=self.tv_config.max_runs,
                memo=self.analyzer.sniff_memo,
            ),
        )
        out = [self._row(entry, cache) for entry in runs]
        self.finish(json.dumps({"runs": out, "truncated": len(runs) >= self.tv_config.max_runs}))

    def _row(self, entry: RunEntry, cache: str | bool | None) -> dict[str, Any]:
        state = self.analyzer.status("headline", entry, cache=cache)
        row: dict[str, Any] = {
            "path": entry.path,
            "name": entry.path.rsplit("/", 1)[-1],
            "kind": entry.kind,
            "files": len(entry.files),
            "mtime": entry.mtime,
            "size": entry.size,
            "status": state["status"],
        }
        if state["status"] == "ready":
            row["figures"] = state["result"]
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
            entry = self.run(self.query("path"))
            cache = self.cache()
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        self.answer(self.analyzer.status("run", entry, cache=cache), path=entry.path)


class DiffHandler(_Base):
    """GET /traceview/api/diff?a=<baseline>&b=<other>: ``tv.trace_diff(a, b)`` (202 while computing)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            a = self.run(self.query("a"))
            b = self.run(self.query("b"))
            cache = self.cache()
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        self.answer(self.analyzer.status("diff", a, b, cache=cache), a=a.path, b=b.path)
