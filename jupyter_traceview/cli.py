"""The ``traceview`` command (also ``python -m jupyter_traceview``).

Errors (a bad trace, a bad option) print one line and exit with status 2; the command never
shows a traceback (``--debug`` does, for bug reports).

Load options (every command that reads a trace): ``--ranks 0,2,4-7``, ``--pid-map
1234=0,5678=1`` (process id as written in the trace = rank), ``--on-error skip`` (or
``--skip-bad``), passed to ``tv.load``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ._version import __version__

__all__ = ["main"]


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    """A plain text table: (key, header) columns, right-aligned."""
    cells = [[h for _, h in columns]] + [[str(r[k]) for k, _ in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


#: Most ranks ``--ranks`` may list (ranges expanded) and most entries of ``--pid-map``.
MAX_LIST = 65536
#: Ranks are below this.
MAX_RANK = 2**31


class _UsageError(Exception):
    """A bad command line: one line on stderr, exit 2."""


def _parse_ranks(text: str) -> list[int]:
    """``"0,2,4-7"`` -> [0, 2, 4, 5, 6, 7]; _UsageError for anything else."""
    ranks: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo_s, dash, hi_s = part.partition("-")
        if not lo_s.isdigit() or (dash and not hi_s.isdigit()) or len(part) > 24:
            raise _UsageError(f"--ranks: {part!r} is not a rank or a range such as 4-7; give e.g. --ranks 0,2,4-7")
        lo, hi = int(lo_s), int(hi_s) if dash else int(lo_s)
        if hi < lo or hi >= MAX_RANK:
            raise _UsageError(f"--ranks: {part!r} is not a range of ranks from 0 to {MAX_RANK - 1}")
        if len(ranks) + hi - lo + 1 > MAX_LIST:
            raise _UsageError(f"--ranks: more than {MAX_LIST} ranks")
        ranks.update(range(lo, hi + 1))
    return sorted(ranks)


def _parse_pid_map(text: str) -> dict[int | str, int]:
    """``"1234=0,5678=1"`` -> {1234: 0, 5678: 1} (decimal process ids as ints, others as written)."""
    out: dict[int | str, int] = {}
    for part in text.split(","):
        pid, eq, rank = part.strip().partition("=")
        pid = pid.strip()
        if not eq or not pid or not rank.strip().isdigit() or len(pid) > 256 or int(rank) >= MAX_RANK:
            raise _UsageError(
                f"--pid-map: {part.strip()!r} is not PID=RANK; give e.g. --pid-map 1234=0,5678=1 "
                f"(ranks from 0 to {MAX_RANK - 1})"
            )
        if len(out) >= MAX_LIST:
            raise _UsageError(f"--pid-map: more than {MAX_LIST} entries")
        key: int | str = int(pid) if pid.lstrip("-").isdigit() and len(pid) <= 19 else pid
        out[key] = int(rank)
    return out


def _load_options(args: argparse.Namespace) -> dict[str, Any]:
    """tv.load's options from the command line."""
    options: dict[str, Any] = {
        "cache": not args.no_cache,
        "on_error": "skip" if args.skip_bad else args.on_error,
    }
    if args.ranks is not None:
        options["ranks"] = _parse_ranks(args.ranks)
    if args.pid_map is not None:
        options["pid_map"] = _parse_pid_map(args.pid_map)
    return options


def _load(args: argparse.Namespace, *, prepare: bool | None = None) -> Any:
    """The trace of the command line's PATH (or the sample). ``prepare``: as ``tv.load``'s
    (None, big loads prepare what findings computes per rank; False for a command that runs
    no findings, so that it does not pay for them)."""
    from .loading.loader import load
    from .samples import sample_path

    path = sample_path() if args.sample else args.path
    if path is None:
        raise _UsageError("give a PATH to a trace file or folder, or --sample")
    return load(path, progress=_progress(args), prepare=prepare, **_load_options(args))


#: The warning lines printed on stderr in this run (kept with a summary, printed again with it).
_WARNED: list[str] = []
#: The modules a command's output depends on (besides the analysis, model and loading
#: packages), relative to the package folder: part of :func:`_code_key`.
_CODE_FILES = ("__init__.py", "_version.py", "cli.py", "errors.py", "format.py", "progress.py", "samples/__init__.py")
#: The packages whose versions are part of :func:`_code_key`.
_CODE_PACKAGES = ("numpy", "pandas", "pyarrow", "msgspec", "isal", "platformdirs")


def _kept(args: argparse.Namespace, command: str, code_key: Callable[[], str | None] | None = None) -> Any:
    """Where ``command``'s output for this trace and these options is kept (a
    :class:`~.loading.kept.Kept`), or None: ``--no-cache``, ``--pid-map`` (not kept), a path
    that is not there (the load reports it), code whose sources cannot be read.

    ``code_key``: what gives :func:`_code_key` (default: that function; a command asking twice
    passes one memoised call, so that the sources are hashed once)."""
    if args.no_cache or args.pid_map is not None:
        return None
    from .errors import TraceviewError
    from .loading.cache_key import ReadOptions, default_cache_dir
    from .loading.kept import Kept
    from .loading.readers.files import discover
    from .samples import sample_path

    try:
        path = sample_path() if args.sample else args.path
        if path is None:
            return None
        files, skipped = discover(path)
        code = (code_key or _code_key)()
        if code is None or not files:
            return None
        options = _load_options(args)
        key = json.dumps(
            {
                "command": command,
                "json": bool(getattr(args, "json", False)),
                "source": str(path),  # what the load names the trace (its ``source``)
                "ranks": options.get("ranks"),
                "on_error": options["on_error"],
                "code": code,
            }
        )
        # The reader options of the cache's keys for a CLI load (tv.load's default bad_events;
        # no pid map: a --pid-map run keeps nothing, above).
        read_options = ReadOptions(bad_events="raise", pid_map=None).cache_key_fields()
        return Kept(default_cache_dir(), files, read_options, command, key, skipped)
    except (OSError, ValueError, TraceviewError, _UsageError):
        return None  # the command itself reports what is wrong


def _code_key() -> str | None:
    """SHA-256 of the code a command's output depends on: the sources of the analysis, model
    and loading packages and of :data:`_CODE_FILES`, the compiled scanner, the package's and
    Python's versions, and the files of :data:`_CODE_PACKAGES` that carry their versions.
    None if a source cannot be read (nothing is kept then)."""
    import hashlib

    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(f"{__version__}|{sys.version}|{sys.platform}".encode())
    found: list[str] = [os.path.join(root, name) for name in _CODE_FILES]
    for sub in ("analysis", "model", "loading"):
        for folder, dirs, names in os.walk(os.path.join(root, sub)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            found += [os.path.join(folder, n) for n in names if n.endswith((".py", ".so", ".pyd"))]
    try:
        for path in sorted(found):
            with open(path, "rb") as fh:
                data = fh.read()
            h.update(f"{os.path.relpath(path, root)}\0{len(data)}\0".encode())
            h.update(data)
    except OSError:
        return None
    for name in _CODE_PACKAGES:  # a package's version: its dist-info folder's name, where it was found
        h.update(f"{name}={_installed(name)}\0".encode())
    return h.hexdigest()


def _installed(package: str) -> str:
    """Where ``package`` would be imported from and its version, without importing it: the
    first folder of ``sys.path`` holding it, and the dist-info folders there of its name."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", package)
        if os.path.isdir(folder) or os.path.isfile(folder + ".py"):
            try:
                infos = sorted(n for n in os.listdir(entry or ".") if n.lower().startswith(f"{package.lower()}-"))
            except OSError:
                infos = []
            st = os.stat(folder)
            return f"{os.path.abspath(folder)}|{st.st_mtime_ns}|{'|'.join(infos)}"
    return "-"


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _progress(args: argparse.Namespace) -> bool | None:
    """The loader's progress bar: off for --json and --quiet (stderr then holds only errors)."""
    return False if getattr(args, "json", False) or getattr(args, "quiet", False) else None


def _cmd_summary(args: argparse.Namespace) -> int:
    # The output of an earlier run on the same files, options and code, kept beside the
    # trace's cache entry, is printed as it was, without loading the trace (nor pandas).
    code_key = functools.cache(_code_key)  # the sources hashed once for both looks (~10 ms)
    kept = _kept(args, "summary", code_key)
    doc = kept.read() if kept is not None else None
    if isinstance(doc, dict) and isinstance(doc.get("stdout"), str) and _is_texts(doc.get("stderr")):
        for line in doc["stderr"]:
            print(line, file=sys.stderr)
        sys.stdout.write(doc["stdout"])
        return 0
    _WARNED.clear()
    text = _summary_text(args)
    sys.stdout.write(text)
    if kept is not None:
        after = _kept(args, "summary", code_key)  # the files as they are now: kept only if none changed during the load
        if after is not None and after.digest == kept.digest:
            after.write({"stdout": text, "stderr": list(_WARNED)})
    return 0


def _summary_text(args: argparse.Namespace) -> str:
    """What ``traceview summary`` prints (stdout)."""
    import math

    from . import format as fmt
    from .analysis.headline import headline_with_ranks

    trace = _load(args, prepare=False)  # (no findings here)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h, per_rank = headline_with_ranks(trace)  # headline(trace) and headline(trace, per_rank=True)
    if args.json:
        out = {
            "source": trace.source,
            "headline": h,
            "ranks": [
                {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
                for row in per_rank.to_dict(orient="records")
            ],
        }
        return json.dumps(out, indent=2, default=int) + "\n"

    rows = [
        {
            "rank": row["rank"],
            "events": fmt.count(row["events"]),
            "kernels": fmt.count(row["kernels"]),
            "iters": fmt.count(row["iterations"]),
            "span": fmt.duration(row["span_ns"]) if row["span_ns"] else fmt.MISSING,
            "trace_span": fmt.duration(row["trace_span_ns"]),
            "busy": fmt.percent(row["gpu_busy_pct"]),
            "compute": fmt.percent(row["compute_pct"]),
            "exposed": fmt.percent(row["exposed_comm_pct"]),
            "overlap": fmt.percent(row["overlap_pct"]),
        }
        for row in per_rank.to_dict(orient="records")
    ]
    lines = [f"{trace.source}: {len(trace.ranks)} rank(s)"]
    lines.append(
        _table(
            rows,
            [
                ("rank", "rank"),
                ("events", "events"),
                ("kernels", "kernels"),
                ("iters", "iterations"),
                ("span", "span"),
                ("trace_span", "trace span"),
                ("busy", "GPU busy"),
                ("compute", "compute"),
                ("exposed", "exposed comm"),
                ("overlap", "comm overlap"),
            ],
        )
    )
    lines.append("")
    width = max(len(label) for label, _, _ in fmt.headline_items(h))
    for label, value, hint in fmt.headline_items(h):
        lines.append(f"{label.ljust(width)}  {value}" + (f"  ({hint})" if hint else ""))
    return "".join(f"{line}\n" for line in lines)


def _cmd_findings(args: argparse.Namespace) -> int:
    import textwrap

    from . import format as fmt
    from .analysis import findings

    trace = _load(args)
    df = findings(trace)
    if args.json:
        out = {"source": trace.source, "findings": json.loads(df.to_json(orient="records"))}
        print(json.dumps(out, indent=2))
        return 0
    print(f"{trace.source}: {len(trace.ranks)} rank(s), {len(df)} finding(s)")
    if df.empty:
        print("nothing to report")
        return 0
    for i, row in enumerate(df.to_dict(orient="records"), start=1):
        stake = (
            f"{fmt.duration(row['time_at_stake_ns'])} at stake ({fmt.percent(row['time_at_stake_pct'])} of the job span)"
            if row["severity"] != "info"
            else "no time at stake estimated"
        )
        print()
        print(f"{i}. [{row['severity']}] {row['title']}")
        ranks = f"rank {row['ranks'][0]}" if len(row["ranks"]) == 1 else f"ranks {fmt.ranges(row['ranks'])}"
        print(f"   {row['id']}: {stake}; {ranks}")
        fix = fmt.saving(row["saving_ns"], row["saving_pct"], row["change"])
        if fix:
            print(textwrap.fill(fix, width=100, initial_indent="   ", subsequent_indent="   "))
        print(textwrap.fill(row["detail"], width=100, initial_indent="   ", subsequent_indent="   "))
        print(textwrap.fill(f"Rule: {row['rule']}", width=100, initial_indent="   ", subsequent_indent="   "))
        print(f"   More: {row['analysis']}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .errors import TraceviewError
    from .loading.loader import load

    out = Path(args.output)
    if out.is_dir():
        raise TraceviewError(f"cannot write the report to {out}: it is a folder; give a file name such as report.html")
    if not out.parent.exists():
        raise TraceviewError(f"cannot write the report to {out}: the folder {out.parent} does not exist")
    trace = _load(args)
    baseline = load(args.baseline, progress=_progress(args), **_load_options(args)) if args.baseline else None
    from .report.html import write_report

    def progress(done: int, total: int, label: str) -> None:
        if not args.quiet and label != "done":
            print(f"traceview: report: {label} ({done + 1}/{total})", file=sys.stderr, flush=True)

    path = write_report(trace, out, baseline=baseline, theme=args.theme, progress=progress)
    print(f"{path} ({path.stat().st_size / 2**20:.1f} MiB): open it in a browser; it needs no network")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .loading.dataset import export

    trace = _load(args, prepare=False)
    dest = export(trace, args.dest, overwrite=args.overwrite)
    if not args.quiet:
        print(f"{dest}: {len(trace.ranks)} rank(s) as a Parquet dataset; read it with tv.load, DuckDB or polars")
    return 0


#: Where ``traceview compare`` looks for run names (``%%traceprofile``'s default ``--out``).
RUNS_DIR = "traceview-runs"


def _run_path(text: str, runs_dir: str) -> Path:
    """A run given as a trace file or folder, a baseline name (``traceview baseline set``), or a
    run name under ``runs_dir``: ``NAME`` (its latest run, ``<runs_dir>/NAME/<timestamp>``) or
    ``NAME/TIMESTAMP`` (docs/runs.md), in that order."""
    from .errors import TraceFormatError
    from .loading.baselines import resolve_baseline

    given = Path(text)
    if given.exists():
        return given
    baseline = resolve_baseline(runs_dir, text) if _plain_name(text) else None
    if baseline is not None:
        return baseline
    folder = Path(runs_dir) / text
    if folder.is_dir():
        stamps = sorted((p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")), key=_stamp_key)
        return stamps[-1] if stamps and not any(folder.glob("*.json*")) else folder
    raise TraceFormatError(
        text,
        f"no such file or folder, and no run of that name under {runs_dir}/",
        "give a trace file, a folder of rank traces, or a run name (NAME or NAME/TIMESTAMP, --runs DIR)",
    )


def _plain_name(text: str) -> bool:
    return bool(text) and "/" not in text and "\\" not in text


def _cmd_baseline(args: argparse.Namespace) -> int:
    from .loading import baselines

    if args.action == "set":
        path = baselines.set_baseline(args.runs, args.name, _run_path(args.run, args.runs))
        print(f"baseline {args.name}: {path}")
    elif args.action == "rm":
        baselines.remove_baseline(args.runs, args.name)
        print(f"baseline {args.name} removed (the run itself is kept)")
    else:
        rows = baselines.list_baselines(args.runs)
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(f"no baselines under {args.runs}/ (traceview baseline set NAME RUN)")
        else:
            print(_table(rows, [("name", "name"), ("path", "path"), ("set_at", "set at")]))
    return 0


def _stamp_key(p: Path) -> tuple[str, int]:
    """``20250301-141502-2`` sorts after ``20250301-141502`` (docs/runs.md's folder names)."""
    head, _, tail = p.name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() and len(tail) < 4 and head.count("-") == 1 else (p.name, 0)


def _cmd_compare(args: argparse.Namespace) -> int:
    from . import format as fmt
    from .analysis.compare import compare, markdown
    from .loading.loader import load

    if args.fail_above is not None and not args.fail_above >= 0:
        raise _UsageError(f"--fail-above {args.fail_above}: give a percentage >= 0")
    paths = [_run_path(args.base, args.runs), _run_path(args.new, args.runs)]
    options = _load_options(args)
    base, new = (load(p, progress=_progress(args), prepare=False, **options) for p in paths)
    c = compare(base, new)
    slower = c.verdict == "slower" and (args.fail_above is None or c.delta_pct > args.fail_above)
    if args.markdown:
        Path(args.markdown).write_text(markdown(c, base=args.base, new=args.new), encoding="utf-8")
    if args.json:
        print(json.dumps({"base": str(paths[0]), "new": str(paths[1]), "fails": slower, **c.to_dict()}, indent=2))
    else:
        print(c.headline())
        rows = [
            {
                "cause": fmt.short_name(r["cause"], 60),
                "status": r["status"],
                "base": fmt.duration(r["base_ns"]),
                "new": fmt.duration(r["new_ns"]),
                "change": ("+" if r["delta_ns"] >= 0 else "-") + fmt.duration(abs(r["delta_ns"])),
                "share": fmt.percent(r["share_pct"]),
                "noise": "within" if r["within_noise"] else "",
            }
            for r in c.causes.head(args.top).to_dict(orient="records")
        ]
        if rows:
            cols = [(k, k) for k in ("cause", "status", "base", "new", "change", "share", "noise")]
            print(_table(rows, cols))
        for w in c.warnings:
            print(f"note: {w}")
    return 1 if slower else 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="traceview",
        description="Understand the GPU performance of (distributed) PyTorch jobs from profiler traces.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        help="show the version, the Kineto reader in use and whether the analysis loops are compiled, then exit",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks (for bug reports)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add_trace_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("path", nargs="?", metavar="PATH", help="a trace file or a folder of rank traces")
        p.add_argument("--sample", action="store_true", help="use the bundled 8-rank DLRM sample")
        p.add_argument("--ranks", metavar="RANKS", help="only these ranks (e.g. 0,1,7 or 0-3,8)")
        p.add_argument(
            "--pid-map",
            metavar="PID=RANK,...",
            help="for files holding several ranks: process id (as written in the trace) = rank, e.g. 1234=0,5678=1",
        )
        p.add_argument(
            "--on-error",
            choices=["raise", "skip"],
            default="raise",
            help="skip: load the readable rank files and warn about the others (default: raise)",
        )
        p.add_argument("--no-cache", action="store_true", help="parse again instead of using the cache")
        p.add_argument("--skip-bad", action="store_true", help="the same as --on-error skip")

    p = sub.add_parser(
        "summary", help="headline figures per rank (events, kernels, span, GPU busy, compute, exposed communication)"
    )
    add_trace_args(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser(
        "findings",
        help="plain-language findings with their evidence, ranked by what fixing each saves per step, then the time at stake",
    )
    add_trace_args(p)
    p.add_argument("--json", action="store_true", help="print JSON (every column, the evidence included)")
    p.set_defaults(func=_cmd_findings)

    p = sub.add_parser(
        "report",
        help="the dashboard as one self-contained HTML file (charts, figures, findings, a timeline overview)",
    )
    add_trace_args(p)
    p.add_argument("-o", "--output", default="report.html", metavar="FILE", help="the HTML file (default report.html)")
    p.add_argument("--baseline", metavar="PATH", help="another trace to compare with (adds a Diff section)")
    p.add_argument("--theme", choices=["light", "dark"], default="light", help="colours of the report")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "export",
        help="write a run as a Parquet dataset (events by rank, GPU args, op args, memory, collectives, metadata)",
    )
    add_trace_args(p)
    p.add_argument("dest", metavar="DEST", help="the dataset's folder or URL (s3://bucket/run); created if missing")
    p.add_argument("--overwrite", action="store_true", help="replace a dataset already in DEST")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "compare",
        help="why NEW's steps are slower or faster than BASE's, in causes that add up; exit 1 when slower (a CI gate)",
        description="Exit status: 0 when NEW is not slower (or only within noise, or by at most --fail-above %%), "
        "1 when it is slower, 2 on bad input (and on an internal error).",
    )
    p.add_argument(
        "base", metavar="BASE", help=f"a trace file or folder, a baseline name, or a run name under --runs ({RUNS_DIR})"
    )
    p.add_argument("new", metavar="NEW", help="the run compared with BASE (the same forms)")
    p.add_argument("--runs", default=RUNS_DIR, metavar="DIR", help=f"folder of named runs (default ./{RUNS_DIR})")
    p.add_argument("--fail-above", type=float, metavar="PCT", help="exit 1 only when slower by more than PCT %%")
    p.add_argument("--markdown", metavar="FILE", help="write a summary for a pull-request comment (<= 60 lines)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--top", type=int, default=10, metavar="N", help="causes shown (default 10)")
    p.add_argument("--ranks", metavar="RANKS", help="only these ranks (e.g. 0,1,7 or 0-3,8)")
    p.add_argument("--on-error", choices=["raise", "skip"], default="raise", help="as for the other commands")
    p.add_argument("--no-cache", action="store_true", help="parse again instead of using the cache")
    p.set_defaults(func=_cmd_compare, pid_map=None, skip_bad=False, internal_error_status=2)

    p = sub.add_parser(
        "baseline", help="name runs to compare with: baseline set NAME RUN, baseline list, baseline rm NAME"
    )
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = acts.add_parser("set", help="keep RUN (a trace file, folder or run name) as baseline NAME")
    a.add_argument("name", metavar="NAME")
    a.add_argument("run", metavar="RUN")
    a = acts.add_parser("list", help="the baselines")
    a.add_argument("--json", action="store_true", help="print JSON")
    a = acts.add_parser("rm", help="forget baseline NAME (the run stays)")
    a.add_argument("name", metavar="NAME")
    for a in acts.choices.values():
        a.add_argument("--runs", default=RUNS_DIR, metavar="DIR", help=f"folder of the runs (default ./{RUNS_DIR})")
    p.set_defaults(func=_cmd_baseline)
    return parser


#: The analyses' compiled loops as --version finds them: ``analysis.loops``' NAME and VERSION
#: (that module imports the analyses; tests/test_cli.py checks that the two agree).
ANALYSIS_LOOPS = ("jupyter_traceview.analysis._loops", 5)


class _Version(argparse.Action):
    """--version: the package's version, which Kineto reader this install runs and whether the
    interval algebra's and the analyses' loops are compiled.

    Neither the reader, the analyses nor numpy or pandas is imported
    (:mod:`.loading.readers.build` knows which reader runs, :mod:`.model.sweep_build` whether
    the interval loops are compiled, :mod:`.model.native_ext` finds the analyses' without
    importing them: their name and version are :data:`ANALYSIS_LOOPS`), so that --version is
    as quick as --help."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from .loading.readers import build
        from .model import native_ext, sweep_build

        print(
            f"{parser.prog} {__version__}\nKineto reader: {build.describe()}\n"
            f"Interval loops: {sweep_build.describe()}\nAnalysis loops: {native_ext.describe(*ANALYSIS_LOOPS)}"
        )
        raise SystemExit(0)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from .errors import TraceviewError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if getattr(args, "json", False) else "default")
            warnings.showwarning = _show_warning
            return int(args.func(args))
    except (TraceviewError, _UsageError) as exc:
        if args.debug:
            raise
        print(f"traceview: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except MemoryError:
        # Out of memory outside a file's reading (which names the file: a TraceFormatError
        # above), e.g. while a large trace is analysed: bad input for this machine, not a bug.
        if args.debug:
            raise
        read = [str(getattr(args, a)) for a in ("path", "base", "new", "run") if getattr(args, a, None)]
        print(
            f"traceview: error: {', '.join(read) + ': ' if read else ''}ran out of memory; read fewer "
            "ranks (--ranks), a lower max_json_bytes, or use a machine with more memory",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("traceview: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"traceview: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
            "(run again with --debug and report it)",
            file=sys.stderr,
        )
        return int(getattr(args, "internal_error_status", 1))


def _one_line(text: str) -> str:
    """A message on one line, at most 2000 characters."""
    text = " ".join(text.split())
    return text if len(text) <= 2000 else text[:1999] + "…"


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    line = f"traceview: warning: {message}"
    _WARNED.append(line)
    print(line, file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
