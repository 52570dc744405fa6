"""The diagnosis benchmark: do the findings say what an expert would, on labelled scenarios?

    python benchmarks/diagnosis/run.py                    # every scenario, a table each
    python benchmarks/diagnosis/run.py --only gpu_copy_bound cpu_sleep_in_step
    python benchmarks/diagnosis/run.py --json             # machine output

Each ``scenarios/<name>/`` holds a trace (or names one with ``trace = "..."``, relative to the
repository root) and ``expected.toml``, written by an expert BEFORE running the rules on it
(see ``benchmarks/diagnosis/README.md`` for the format). For each scenario this loads the
trace with ``tv.load``, runs ``tv.findings`` and, where the package has it, ``tv.workload``,
and checks:

* every expected id is among the top 3 findings (by time at stake), with its time at stake
  within the tolerance where one is labelled;
* no forbidden advice phrase (case-insensitive) in any finding's title or detail, and no
  finding with a forbidden id;
* the workload verdict (and the ``has_backward``, ``has_optimizer``, ``graph_capture``,
  ``graph_replay`` flags where labelled) of the main rank; "n/a" when the package has no
  ``tv.workload`` yet.

Recall = expected ids found in the top 3 / expected ids; precision = top-3 findings whose id
is expected or labelled acceptable (``also_ok``) / top-3 findings; both summed over the
scenarios run. Exit code 0 only when every scenario run passes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
#: The verdicts of ``tv.workload`` (names agreed for issue 32).
WORKLOADS = ("training", "inference", "graph_capture", "graph_replay", "cpu_only", "data_loading_bound")
#: The rule ids issue 32 adds (known before the rules exist in the package).
NEW_IDS = ("unrecognised_kernels", "copy_bound", "dominant_kernel_family")
FLAGS = ("has_backward", "has_optimizer", "graph_capture", "graph_replay")
KEYS = {"trace", "rank", "workload", "top3", "also_ok", "forbidden", "forbidden_ids", "forbidden_in", "notes", *FLAGS}
TOP = 3


@dataclass(frozen=True)
class Expected:
    """One scenario's labels (``expected.toml``)."""

    name: str
    workload: str
    top3: tuple[dict[str, Any], ...]
    forbidden: tuple[str, ...]
    notes: str
    trace: str | None = None
    rank: int | None = None
    also_ok: tuple[str, ...] = ()
    forbidden_ids: tuple[str, ...] = ()
    #: Phrases a given finding must not name (in its title, detail or evidence): e.g.
    #: ``{low_occupancy = ["deep_ep"]}``, the rule may fire, but never on those kernels.
    forbidden_in: dict[str, tuple[str, ...]] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [t["id"] for t in self.top3]

    def trace_path(self) -> Path:
        """The trace to load: ``trace`` relative to the repository root, else the scenario folder."""
        return (ROOT / self.trace).resolve() if self.trace else SCENARIOS / self.name


def known_ids() -> set[str]:
    """The registry's rule ids plus the ids issue 32 adds."""
    from jupyter_traceview.analysis.findings.registry import all_rules

    return {r.id for r in all_rules()} | set(NEW_IDS)


def scenario_names() -> list[str]:
    return sorted(p.parent.name for p in SCENARIOS.glob("*/expected.toml"))


def load_expected(name: str) -> Expected:
    """Parse and validate ``scenarios/<name>/expected.toml``; ``ValueError`` says what is wrong."""
    path = SCENARIOS / name / "expected.toml"
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path}: cannot read it as TOML: {e}") from e
    problems = validate(raw, known_ids())
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return Expected(
        name=name,
        workload=raw["workload"],
        top3=tuple(raw["top3"]),
        forbidden=tuple(raw["forbidden"]),
        notes=raw["notes"],
        trace=raw.get("trace"),
        rank=raw.get("rank"),
        also_ok=tuple(raw.get("also_ok", ())),
        forbidden_ids=tuple(raw.get("forbidden_ids", ())),
        forbidden_in={k: tuple(v) for k, v in raw.get("forbidden_in", {}).items()},
        flags={k: raw[k] for k in FLAGS if k in raw},
    )


def validate(raw: dict[str, Any], ids: set[str]) -> list[str]:
    """What is wrong with one parsed ``expected.toml`` (empty when it is well-formed)."""
    out = [f"unknown key {k!r} (known: {', '.join(sorted(KEYS))})" for k in raw if k not in KEYS]
    for k in ("workload", "top3", "forbidden", "notes"):
        if k not in raw:
            out.append(f"missing {k!r}")
    if "workload" in raw and raw["workload"] not in WORKLOADS:
        out.append(f"workload {raw['workload']!r} is not one of {', '.join(WORKLOADS)}")
    if not isinstance(raw.get("notes", ""), str) or not str(raw.get("notes", "")).strip():
        out.append("notes must say the expert reasoning and the source")
    top3 = raw.get("top3", [])
    if not isinstance(top3, list) or len(top3) > TOP:
        out.append(f"top3 must be a list of at most {TOP} tables")
        top3 = []
    for t in top3:
        if not isinstance(t, dict) or "id" not in t:
            out.append(f"top3 entry {t!r} needs an id")
            continue
        if t["id"] not in ids:
            out.append(f"top3 id {t['id']!r} is not a known finding id")
        extra = set(t) - {"id", "time_at_stake_ms", "tolerance_pct"}
        if extra:
            out.append(f"top3 entry {t['id']!r} has unknown keys {sorted(extra)}")
        if ("time_at_stake_ms" in t) != ("tolerance_pct" in t):
            out.append(f"top3 entry {t['id']!r}: time_at_stake_ms and tolerance_pct go together")
        for k in ("time_at_stake_ms", "tolerance_pct"):
            if k in t and (not isinstance(t[k], (int, float)) or isinstance(t[k], bool) or t[k] <= 0):
                out.append(f"top3 entry {t['id']!r}: {k} must be a positive number, got {t[k]!r}")
    for k in ("also_ok", "forbidden_ids"):
        for i in raw.get(k, []):
            if i not in ids:
                out.append(f"{k} id {i!r} is not a known finding id")
    if not all(isinstance(p, str) and p for p in raw.get("forbidden", [])):
        out.append("forbidden must be a list of non-empty phrases")
    within = raw.get("forbidden_in", {})
    if not isinstance(within, dict):
        out.append("forbidden_in must be a table: finding id = [phrases]")
        within = {}
    for i, phrases in within.items():
        if i not in ids:
            out.append(f"forbidden_in id {i!r} is not a known finding id")
        if not isinstance(phrases, list) or not all(isinstance(p, str) and p for p in phrases):
            out.append(f"forbidden_in.{i} must be a list of non-empty phrases")
    for k in FLAGS:
        if k in raw and not isinstance(raw[k], bool):
            out.append(f"{k} must be true or false")
    if "trace" in raw and not isinstance(raw["trace"], str):
        out.append("trace must be a path relative to the repository root")
    return out


@dataclass
class Result:
    """What one scenario got and whether it passed."""

    name: str
    status: str  # "pass", "fail" or "skip"
    reason: str = ""
    expected_top3: list[str] = field(default_factory=list)
    got_top3: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    time_misses: list[str] = field(default_factory=list)
    forbidden_hits: list[str] = field(default_factory=list)
    workload_expected: str = ""
    workload_got: str = "n/a"
    workload_ok: bool | None = None
    flag_misses: list[str] = field(default_factory=list)
    true_positives: int = 0
    acceptable: int = 0
    seconds: float = 0.0


def check(name: str) -> Result:
    """Run the rules (and ``tv.workload`` where it exists) on one scenario and compare with its labels."""
    import jupyter_traceview as tv

    exp = load_expected(name)
    res = Result(name=name, status="fail", expected_top3=exp.ids, workload_expected=exp.workload)
    path = exp.trace_path()
    if not path.exists():
        res.status, res.reason = "skip", f"trace {path} is absent (a shared trace not checked out here)"
        return res
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = tv.load(path, cache=False)
        found = tv.findings(trace)
        workload = getattr(tv, "workload", None)
        verdicts = workload(trace) if workload is not None else None
    res.seconds = time.perf_counter() - t0
    # The top 3 by time at stake, as labelled (findings rank by what the fix saves first, since
    # issue 33; a stable sort keeps their order among equal times at stake).
    top = found.sort_values("time_at_stake_ns", ascending=False, kind="stable").head(TOP)
    res.got_top3 = [
        {"id": r.id, "time_at_stake_ms": round(r.time_at_stake_ns / 1e6, 3), "severity": r.severity}
        for r in top.itertuples()
    ]
    got_ids = [g["id"] for g in res.got_top3]
    res.missing = [i for i in exp.ids if i not in got_ids]
    for t in exp.top3:
        if t["id"] in got_ids and "time_at_stake_ms" in t:
            got = max(g["time_at_stake_ms"] for g in res.got_top3 if g["id"] == t["id"])
            want, tol = float(t["time_at_stake_ms"]), float(t["tolerance_pct"])
            if abs(got - want) > tol / 100 * want:
                res.time_misses.append(f"{t['id']}: {got:g} ms, expected {want:g} ms +- {tol:g} %")
    res.true_positives = sum(1 for i in got_ids if i in exp.ids)
    res.acceptable = sum(1 for i in got_ids if i in exp.ids or i in exp.also_ok)
    for row in found.itertuples():
        text = f"{row.title}\n{row.detail}".lower()
        res.forbidden_hits += [f"{row.id}: {p!r}" for p in exp.forbidden if p.lower() in text]
        if row.id in exp.forbidden_ids:
            res.forbidden_hits.append(f"{row.id}: forbidden finding")
        named = f"{text}\n{row.evidence}".lower()
        res.forbidden_hits += [f"{row.id} names {p!r}" for p in exp.forbidden_in.get(row.id, ()) if p.lower() in named]
    if verdicts is not None:
        rank = exp.rank if exp.rank is not None else int(verdicts["rank"].min())
        row = verdicts.loc[verdicts["rank"] == rank].iloc[0]
        res.workload_got = str(row["workload"])
        res.workload_ok = res.workload_got == exp.workload
        res.flag_misses = [
            f"{k}: got {bool(row[k])}, expected {v}" for k, v in exp.flags.items() if k in row and bool(row[k]) != v
        ]
    failed = res.missing or res.time_misses or res.forbidden_hits or res.workload_ok is False or res.flag_misses
    res.status = "fail" if failed else "pass"
    return res


def summary(results: list[Result]) -> dict[str, Any]:
    run = [r for r in results if r.status != "skip"]
    expected = sum(len(r.expected_top3) for r in run)
    got = sum(len(r.got_top3) for r in run)
    found = sum(len(r.expected_top3) - len(r.missing) for r in run)
    return {
        "scenarios": len(results),
        "passed": sum(r.status == "pass" for r in results),
        "failed": sum(r.status == "fail" for r in results),
        "skipped": sum(r.status == "skip" for r in results),
        "recall": found / expected if expected else 1.0,
        "precision": sum(r.acceptable for r in run) / got if got else 1.0,
        "strict_precision": sum(r.true_positives for r in run) / got if got else 1.0,
        "time_at_stake_misses": sum(len(r.time_misses) for r in run),
        "forbidden_advice_hits": sum(len(r.forbidden_hits) for r in run),
        "workload_mismatches": sum(r.workload_ok is False for r in run),
        "workload_checked": sum(r.workload_ok is not None for r in run),
        "flag_mismatches": sum(len(r.flag_misses) for r in run),
    }


def _table(r: Result) -> str:
    lines = [f"== {r.name}: {r.status.upper()}" + (f" ({r.reason})" if r.reason else f" ({r.seconds:.1f} s)")]
    if r.status == "skip":
        return "\n".join(lines)
    got = ", ".join(f"{g['id']} {g['time_at_stake_ms']:g} ms" for g in r.got_top3) or "(no finding)"
    lines.append(f"   expected top 3 : {', '.join(r.expected_top3) or '(nothing required)'}")
    lines.append(f"   got top 3      : {got}")
    if r.missing:
        lines.append(f"   missing        : {', '.join(r.missing)}")
    for m in r.time_misses:
        lines.append(f"   time at stake  : {m}")
    for h in r.forbidden_hits:
        lines.append(f"   forbidden      : {h}")
    mark = {True: "ok", False: "MISMATCH", None: ""}[r.workload_ok]
    lines.append(f"   workload       : expected {r.workload_expected}, got {r.workload_got} {mark}".rstrip())
    for m in r.flag_misses:
        lines.append(f"   flag           : {m}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these scenarios")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    args = p.parse_args(argv)
    names = scenario_names()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            p.error(f"unknown scenario(s) {', '.join(unknown)}; the scenarios are: {', '.join(names)}")
        names = [n for n in names if n in args.only]
    results = []
    for n in names:
        r = check(n)
        results.append(r)
        if not args.json:
            print(_table(r), flush=True)
    s = summary(results)
    if args.json:
        print(json.dumps({"summary": s, "scenarios": [asdict(r) for r in results]}, indent=1))
    else:
        print(
            f"\n{s['passed']}/{s['scenarios']} scenarios pass ({s['failed']} fail, {s['skipped']} skipped); "
            f"recall {s['recall']:.2f}, precision {s['precision']:.2f} (strict {s['strict_precision']:.2f}); "
            f"time-at-stake misses {s['time_at_stake_misses']}, forbidden-advice hits {s['forbidden_advice_hits']}, "
            f"workload mismatches {s['workload_mismatches']} of {s['workload_checked']} checked"
            + ("" if s["workload_checked"] else " (tv.workload not in this package: n/a)")
            + f", flag mismatches {s['flag_mismatches']}"
        )
    return 0 if s["failed"] == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
