"""Fuzzing the reader with mutated real traces (issue 15).

Every case is a small real trace (from ``tests/data``, trimmed) with one seeded mutation: a
hostile value in an event field or the header, a key removed, bytes flipped, inserted or
cut off, a corrupt gzip stream. Whatever the mutation, ``tv.load`` either returns a trace
or raises :class:`TraceFormatError`; what loads holds no wrapped number (no negative
duration, no timestamp beyond int64 nanoseconds) and every public analysis returns a frame
on it; the CLI exits 2 with one line on stderr for what does not load. Each case runs under
a time limit (a hang fails the case instead of stalling the suite).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import random
import signal
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_traceview as tv
from jupyter_traceview import analysis
from jupyter_traceview.cli import main as cli_main

DATA = Path(__file__).parents[1] / "data"
SEEDS = {
    "triton": DATA / "hta_triton" / "triton_example.json.gz",
    "cpu_only": DATA / "hta_cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "rocm": DATA / "hta_mi250_rocm" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "alexnet": DATA / "hta_alexnet" / "alexnet_trace.json.gz",
    "dlrm": DATA / "hta_dlrm_2of128_ranks" / "rank-0.json.gz",
}
#: Events kept per seed trace (the first ones, metadata included): small cases, fast runs.
MAX_EVENTS = 250
N_CASES = 300
#: Seconds one case may take (load, checks and analyses) before it fails as a hang.
TIME_LIMIT_S = 20

HOSTILE_VALUES: list[Any] = [
    2**63,
    2**64 + 5,
    -(2**63) - 1,
    -1,
    0,
    1e300,
    -1e300,
    1.5,
    "abc",
    "",
    "7",
    None,
    [],
    {},
    True,
    "\ud800",  # json.dumps writes a lone surrogate escape
    "x" * 5_000,
    [[[[[[[[[[1]]]]]]]]]],
]
EVENT_FIELDS = ["ts", "dur", "pid", "tid", "ph", "cat", "name", "args", "id", "s"]
ARG_FIELDS = [
    "correlation",
    "External id",
    "device",
    "stream",
    "grid",
    "block",
    "registers per thread",
    "bytes",
    "rank",
    "Collective name",
    "In msg nelems",
    "Group size",
    "Process Group Name",
    "Input Dims",
    "Input type",
    "name",
    "labels",
]
DEEP = "@@deep@@"
HEADER_FIELDS = ["distributedInfo", "baseTimeNanoseconds", "deviceProperties", "traceEvents", "schemaVersion"]


class CaseTimeout(Exception):
    """A fuzz case ran past TIME_LIMIT_S."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"the case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@cache
def seed_doc(name: str) -> dict[str, Any]:
    doc = json.loads(gzip.decompress(SEEDS[name].read_bytes()))
    events = doc["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("ph") != "M"]
    doc["traceEvents"] = meta + rest[:MAX_EVENTS]
    return doc


def _event(rng: random.Random, doc: dict[str, Any]) -> dict[str, Any]:
    events = doc.get("traceEvents")
    if not isinstance(events, list) or not events:
        doc["traceEvents"] = events = [{}]  # an earlier mutation replaced the list
    if not isinstance(events[0], dict):
        events[0] = {}
    ev = rng.choice(events)
    return ev if isinstance(ev, dict) else events[0]


def _set_event_field(rng: random.Random, doc: dict[str, Any]) -> str:
    ev = _event(rng, doc)
    field = rng.choice(EVENT_FIELDS)
    value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    ev[field] = value
    return f"event.{field}={value!r:.40}"


def _set_arg(rng: random.Random, doc: dict[str, Any]) -> str:
    ev = _event(rng, doc)
    args = ev.setdefault("args", {})
    if not isinstance(args, dict):
        ev["args"] = args = {}
    field = rng.choice(ARG_FIELDS)
    value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    args[field] = value
    return f"args.{field}={value!r:.40}"


def _delete_key(rng: random.Random, doc: dict[str, Any]) -> str:
    ev = _event(rng, doc)
    if not ev:
        return "nothing"
    key = rng.choice(sorted(ev))
    del ev[key]
    return f"del event.{key}"


def _set_header(rng: random.Random, doc: dict[str, Any]) -> str:
    field = rng.choice(HEADER_FIELDS)
    if field == "distributedInfo" and rng.random() < 0.7:
        if not isinstance(doc.get("distributedInfo"), dict):
            doc["distributedInfo"] = {}
        doc["distributedInfo"]["rank"] = value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
        return f"distributedInfo.rank={value!r:.40}"
    doc[field] = value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return f"{field}={value!r:.40}"


def _same_ts(rng: random.Random, doc: dict[str, Any]) -> str:
    _event(rng, doc)
    for ev in doc["traceEvents"]:
        if isinstance(ev, dict) and "ts" in ev:
            ev["ts"] = 1000
    return "every ts equal"


def _deep_args(rng: random.Random, doc: dict[str, Any]) -> str:
    ev = _event(rng, doc)
    depth = rng.choice([50, 2_000, 10_000])
    ev["args"] = {"Input Dims": DEEP}  # written as text (json.dumps would recurse)
    doc[DEEP] = depth
    return f"args nested {depth} deep"


def _shuffle(rng: random.Random, doc: dict[str, Any]) -> str:
    _event(rng, doc)
    rng.shuffle(doc["traceEvents"])
    return "shuffled"


def _global_instants(rng: random.Random, doc: dict[str, Any]) -> str:
    _event(rng, doc)
    doc["traceEvents"].append(
        {"ph": "i", "s": "g", "pid": rng.choice(["", "x", 3]), "tid": "", "ts": 5, "name": "g", "args": {"rank": 0}}
    )
    return "global instant"


STRUCTURED: list[Callable[[random.Random, dict[str, Any]], str]] = [
    _set_event_field,
    _set_event_field,
    _set_arg,
    _set_arg,
    _delete_key,
    _set_header,
    _same_ts,
    _deep_args,
    _shuffle,
    _global_instants,
]


def _flip(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 5)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(1, len(data))]


def _insert(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    junk = rng.choice([b"\xff\xfe", b"\x00", b"\\ud800", b"[[[[", b'"', b"NaN", b"1e999", b"}", b",,"])
    return data[:at] + junk + data[at:]


def _cut(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, 200) :]


BYTES: list[Callable[[random.Random, bytes], bytes]] = [_flip, _truncate, _insert, _cut]


def make_case(i: int) -> tuple[str, bytes, str]:
    """The i-th case: (file name, content, what was done). Seeded by i alone."""
    rng = random.Random(1_000_003 * i + 17)
    seed = rng.choice(sorted(SEEDS))
    doc = copy.deepcopy(seed_doc(seed))
    what = [seed]
    for _ in range(rng.choice([1, 1, 2, 3])):
        what.append(rng.choice(STRUCTURED)(rng, doc))
    depth = doc.pop(DEEP, 0)
    data = json.dumps(doc).encode()
    if depth:
        data = data.replace(json.dumps(DEEP).encode(), b"[" * depth + b"1" + b"]" * depth)
    if rng.random() < 0.35:
        mutate = rng.choice(BYTES)
        data = mutate(rng, data)
        what.append(mutate.__name__.strip("_"))
    name = "rank-0.json"
    if rng.random() < 0.2:
        data = gzip.compress(data, compresslevel=1)
        name += ".gz"
        if rng.random() < 0.5:
            mutate = rng.choice([_flip, _truncate, _cut])
            data = mutate(rng, data)
            what.append(f"gz-{mutate.__name__.strip('_')}")
    return name, data, ", ".join(what)


def _some_name(trace: tv.Trace, kinds: tuple[str, ...]) -> str:
    """The most frequent event name of these kinds (an option the analysis needs), or "none"."""
    ev = trace.events(trace.ranks[0])
    names = ev.loc[ev["kind"].isin(kinds), "name"].astype(str)
    return str(names.value_counts().index[0]) if len(names) else "none"


#: Public analyses and how to call them on any trace (compare compares the trace with itself).
def analysis_calls(tmp: Path) -> dict[str, Callable[[tv.Trace], Any]]:
    calls: dict[str, Callable[[tv.Trace], Any]] = {}
    for name in analysis.__all__:
        fn = getattr(analysis, name)
        if isinstance(fn, type) or name == "peaks_table":
            continue  # FindingRules, DevicePeaks and the device table take no trace
        if name == "compare":
            calls[name] = lambda t, fn=fn: fn(t, t).causes
        elif name == "frequent_kernel_sequences":
            calls[name] = lambda t, fn=fn: fn(t, operator=_some_name(t, ("cpu_op", "user_annotation")))
        elif name == "kernel_pace":
            calls[name] = lambda t, fn=fn: fn(t, name=_some_name(t, ("kernel",)))
        elif name == "write_counters_trace":
            calls[name] = lambda t, fn=fn: fn(t, tmp / "counters")
        else:
            calls[name] = fn
    return calls


_LIMIT = float(2**62)


def check_no_wrapped_numbers(df: pd.DataFrame, where: str) -> None:
    for col in df.columns:
        values = df[col]
        if not (pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)):
            continue
        arr = np.asarray(values, dtype=np.float64)
        finite = arr[~np.isnan(arr)]
        assert np.isfinite(finite).all(), f"{where}: column {col!r} holds an infinity"
        assert (np.abs(finite) < _LIMIT).all(), f"{where}: column {col!r} holds an absurd value {finite.max()}"
        if "dur" in str(col) or str(col).endswith("_time_ns"):
            assert (finite >= 0).all(), f"{where}: column {col!r} holds a negative duration"


def load_case(path: Path) -> tv.Trace | None:
    """The trace, or None for a TraceFormatError; any other exception fails the case."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return tv.load(path, cache=False)
        except tv.TraceFormatError as exc:
            assert str(path) in str(exc), f"the error names the file: {exc}"
            return None


@pytest.mark.parametrize("i", range(N_CASES))
def test_load_raises_only_trace_format_error(tmp_path: Path, i: int) -> None:
    name, data, what = make_case(i)
    path = tmp_path / name
    path.write_bytes(data)
    with time_limit(TIME_LIMIT_S):
        trace = load_case(path)
        if trace is None:
            return
        for r in trace.ranks:
            ev = trace.events(r)
            check_no_wrapped_numbers(ev[["ts_ns", "dur_ns"]], f"case {i} ({what}) events")
            assert (ev["dur_ns"] >= 0).all()
            # Tables a load builds when first read (the batched small files') build here too.
            data = trace.rank_data(r)
            for table in ("gpu_args", "comms", "memory", "op_args"):
                assert isinstance(getattr(data, table), pd.DataFrame)


#: Cases that run every analysis (and the CLI): every 10th case (analyses are the slow part).
ANALYSIS_CASES = range(0, N_CASES, 10)


@pytest.mark.parametrize("i", ANALYSIS_CASES)
def test_every_analysis_returns_a_frame(tmp_path: Path, i: int) -> None:
    name, data, what = make_case(i)
    path = tmp_path / name
    path.write_bytes(data)
    with time_limit(TIME_LIMIT_S):
        trace = load_case(path)
        if trace is None:
            pytest.skip("does not load (checked by test_load_raises_only_trace_format_error)")
        failures = []
        for fname, call in analysis_calls(tmp_path).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    out = call(trace)
                except Exception as exc:  # noqa: BLE001 - any exception is a finding, recorded
                    failures.append(f"{fname}: {type(exc).__name__}: {str(exc)[:120]}")
                    continue
            if isinstance(out, dict):  # headline: JSON-ready figures, checked as a one-row frame
                json.dumps(out, allow_nan=False)
                out = pd.DataFrame([{k: v for k, v in out.items() if isinstance(v, int | float)}])
            frames = [out] if isinstance(out, pd.DataFrame) else []
            if fname != "write_counters_trace":
                assert frames, f"{fname} returned {type(out).__name__}, not a DataFrame"
            for df in frames:
                check_no_wrapped_numbers(df, f"case {i} ({what}) {fname}")
    assert not failures, f"case {i} ({what}): " + "; ".join(failures)


@pytest.mark.parametrize("i", ANALYSIS_CASES)
def test_cli_exits_2_with_one_line(tmp_path: Path, i: int, capsys: pytest.CaptureFixture[str]) -> None:
    name, data, what = make_case(i)
    path = tmp_path / name
    path.write_bytes(data)
    with time_limit(TIME_LIMIT_S):
        loads = load_case(path) is not None
        capsys.readouterr()
        rc = cli_main(["summary", str(path), "--no-cache", "--json"])
    err = capsys.readouterr().err
    if loads:
        assert rc == 0, f"case {i} ({what}): {err}"
    else:
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1, f"case {i} ({what}): exit {rc}, stderr {err!r}"
        assert lines[0].startswith("traceview: error: ") and str(path) in lines[0]
