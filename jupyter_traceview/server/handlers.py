"""REST endpoints of the Traces sidebar, under /traceview/api/.

Every handler requires Jupyter's authentication and authorization (``@web.authenticated``
and ``@authorized``; XSRF protection applies to any non-GET method), reads only inside the
server root (see runs.resolve_run), bounds what it accepts and returns, and answers errors
as JSON ``{"message": ...}`` without stack traces.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from .runs import PathRefused, find_runs, resolve_inside, resolve_run
from .worker import Analyzer

AUTH_RESOURCE = "traceview"
MAX_QUERY = 4096


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
            roots = [r for r in roots_arg.split(",") if r.strip()] if roots_arg else list(self.tv_config.roots)
            for r in roots:
                if r not in ("", "."):
                    resolve_inside(self.analyzer.root_path, r)
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        runs = find_runs(self.root, roots, max_depth=self.tv_config.max_depth, max_runs=self.tv_config.max_runs)
        out = []
        for entry in runs:
            state = self.analyzer.status("headline", entry)
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
            out.append(row)
        self.finish(json.dumps({"runs": out}))


class RunHandler(_Base):
    """GET /traceview/api/run?path=<relative path>: one run's dashboard data (202 while computing)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            entry = resolve_run(self.root, self.query("path"))
        except PathRefused as exc:
            self.fail(exc.status, exc.message)
            return
        state = self.analyzer.status("run", entry)
        if state["status"] == "ready":
            self.finish(json.dumps({"path": entry.path, "status": "ready", "data": state["result"]}))
        elif state["status"] == "error":
            self.fail(422, state["message"])
        else:
            self.set_status(202)
            self.finish(json.dumps({"path": entry.path, **state}))
