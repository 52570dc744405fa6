"""Every bad input gets a TraceFormatError naming the file, what is wrong and what to do."""

from __future__ import annotations

import builtins
import gzip
import json
from pathlib import Path

import pytest

import jupyter_traceview as tv
from tests import kineto_builder as kb


def good_doc(rank: int = 0) -> dict:
    return kb.doc([kb.step(1, 0, 100), *kb.launch("k", 10, 20, 30, corr=1)], rank=rank)


def check(exc: pytest.ExceptionInfo[tv.TraceFormatError], path: Path, *words: str) -> None:
    msg = str(exc.value)
    assert str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    assert exc.value.hint, "every error says what to do"


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(tmp_path / "nope")
    check(exc, tmp_path / "nope", "no such file or folder")


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(tmp_path)
    check(exc, tmp_path, "empty")


def test_folder_with_only_subfolders_of_traces(tmp_path: Path) -> None:
    kb.write(tmp_path / "run1" / "rank-0.json", good_doc())
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(tmp_path)
    check(exc, tmp_path, "run1/")


def test_zero_byte_file(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_bytes(b"")
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "empty (0 bytes)")


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(good_doc()).encode())
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "gzip data is truncated")


def test_gz_name_but_not_gzip(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(json.dumps(good_doc()).encode())
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "not gzip-compressed")


def test_truncated_json(tmp_path: Path) -> None:
    text = json.dumps(good_doc())
    p = tmp_path / "rank-0.json"
    p.write_text(text[: len(text) - 40])
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "truncated")


def test_invalid_json_names_line_and_byte(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_text('{"traceEvents": [\n {"ph": "X", "name": "a",, "ts": 1}\n]}')
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "not valid JSON", "line 2")


def test_not_json_at_all(tmp_path: Path) -> None:
    p = tmp_path / "trace.json"
    p.write_text("hello, I am a text file")
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "is not JSON")


def test_json_that_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"lr": 0.1, "layers": [1, 2]}))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p)
    check(exc, p, "not a trace")


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = kb.write(tmp_path / "rank-0.json", good_doc())
    real_open = builtins.open

    def deny(file, *args, **kwargs):  # root ignores chmod, so deny the read itself
        if str(file) == str(p):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "permission denied")


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ({"ph": "X", "cat": "cpu_op", "name": "nodur", "pid": 1, "tid": 1, "ts": 5}, ["without 'dur'", "event #3"]),
        (
            {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": 5, "dur": -3},
            ["negative 'dur'", "event #3"],
        ),
        (
            {"ph": "X", "cat": "cpu_op", "name": "nan", "pid": 1, "tid": 1, "ts": float("nan"), "dur": 3},
            ["NaN or infinite 'ts'"],
        ),
        (
            {"ph": "X", "cat": "cpu_op", "name": "inf", "pid": 1, "tid": 1, "ts": float("inf"), "dur": 3},
            ["NaN or infinite 'ts'"],
        ),
        (
            {"ph": "X", "cat": "cpu_op", "name": "nullts", "pid": 1, "tid": 1, "ts": None, "dur": 3},
            ["NaN or infinite 'ts'"],
        ),
    ],
)
def test_malformed_events(tmp_path: Path, event: dict, words: list[str]) -> None:
    d = good_doc()
    d["traceEvents"].append(event)
    p = tmp_path / "rank-0.json"
    p.write_text(json.dumps(d))  # json.dumps writes NaN/Infinity tokens, as Python exporters do
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "1 malformed event", "bad_events='drop'", *words)
    with pytest.warns(tv.TraceviewWarning, match="dropped"):
        trace = tv.load(p, cache=False, bad_events="drop")
    assert len(trace.events(0)) == len(d["traceEvents"]) - 1


def test_two_files_claiming_one_rank(tmp_path: Path) -> None:
    a = kb.write(tmp_path / "a.json", good_doc(rank=3))
    b = kb.write(tmp_path / "b.json", good_doc(rank=3))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(tmp_path)
    msg = str(exc.value)
    assert "a.json" in msg and "b.json" in msg and "rank 3" in msg
    del a, b


def test_skip_loads_the_good_ranks_and_lists_the_bad(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", good_doc(0))
    kb.write(tmp_path / "rank-1.json", good_doc(1))
    (tmp_path / "rank-2.json").write_text('{"traceEvents": [')
    (tmp_path / "rank-3.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}')[:10])
    with pytest.raises(tv.TraceFormatError, match=r"rank-2\.json"):
        tv.load(tmp_path)
    with pytest.warns(
        tv.TraceviewWarning, match=r"skipped 2 unreadable trace file\(s\): rank-2.json: .*rank-3.json.gz"
    ):
        trace = tv.load(tmp_path, on_error="skip")
    assert trace.ranks == (0, 1)


def test_non_trace_files_in_a_folder_are_skipped_with_a_warning(tmp_path: Path) -> None:
    kb.write(tmp_path / "rank-0.json", good_doc(0))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1}))
    (tmp_path / ".hidden.json").write_text("ignored silently")
    with pytest.warns(tv.TraceviewWarning) as record:
        trace = tv.load(tmp_path)
    messages = " | ".join(str(w.message) for w in record)
    assert "notes.txt" in messages and "config.json" in messages and ".hidden" not in messages
    assert trace.ranks == (0,)


def test_all_files_bad_with_skip_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "rank-0.json").write_text("{")
    with pytest.warns(tv.TraceviewWarning), pytest.raises(tv.TraceFormatError, match="no readable trace"):
        tv.load(tmp_path, on_error="skip")


def test_bad_options_are_clear() -> None:
    with pytest.raises(ValueError, match="on_error must be"):
        tv.load(tv.sample_path(), on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="engine must be one of"):
        tv.load(tv.sample_path(), engine="gpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad_events must be"):
        tv.load(tv.sample_path(), bad_events="keep")  # type: ignore[arg-type]


def test_error_pickles_across_processes() -> None:
    import pickle

    err = tv.TraceFormatError("/x/rank-0.json", "is empty (0 bytes)", "record it again")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.problem, back.hint, str(back)) == (err.path, err.problem, err.hint, str(err))
