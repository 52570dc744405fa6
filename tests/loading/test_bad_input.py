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
    # OptionError (a ValueError) through OptionError.invalid: the option, what was got, what is accepted.
    with pytest.raises(tv.OptionError, match=r"on_error='ignore' is not accepted; use one of 'raise', 'skip'"):
        tv.load(tv.sample_path(), on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(tv.OptionError, match=r"engine='gpu' is not accepted; use one of 'auto', 'serial'"):
        tv.load(tv.sample_path(), engine="gpu")  # type: ignore[arg-type]
    with pytest.raises(tv.OptionError, match=r"bad_events='keep' is not accepted; use one of 'raise', 'drop'"):
        tv.load(tv.sample_path(), bad_events="keep")  # type: ignore[arg-type]


def test_error_pickles_across_processes() -> None:
    import pickle

    err = tv.TraceFormatError("/x/rank-0.json", "is empty (0 bytes)", "record it again")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.problem, back.hint, str(back)) == (err.path, err.problem, err.hint, str(err))


# --- Hostile input (issue 15): each a TraceFormatError naming the file, never another exception.


def _doc_text() -> str:
    return json.dumps(good_doc())


def test_corrupt_deflate_block(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_doc_text().encode()))
    data[20] ^= 0xFF  # inside the first deflate block
    data[25] ^= 0x55
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "not valid gzip")


def test_gzip_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(gzip.compress(b"[" + b" " * (8 * 2**20) + b"]"))  # 8 MiB of JSON in ~8 KB
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False, max_json_bytes=2**20)
    check(exc, p, "inflates to more than 1 MiB", "max_json_bytes")
    assert "gzip bomb" in str(exc.value)
    with pytest.raises(ValueError, match="max_json_bytes"):
        tv.load(p, cache=False, max_json_bytes=0)


def test_gzip_under_the_limit_and_concatenated_members_load(tmp_path: Path) -> None:
    text = _doc_text().encode()
    p = tmp_path / "rank-0.json.gz"
    p.write_bytes(gzip.compress(text[:100]) + gzip.compress(text[100:]))  # two gzip members: one stream
    trace = tv.load(p, cache=False, max_json_bytes=len(text))
    assert len(trace.events(0)) == 3


def test_invalid_utf8(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_bytes(_doc_text().replace('"k"', '"k\xff"').encode("latin-1"))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "not valid UTF-8", "byte ")


def test_lone_surrogate_escape(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_text(_doc_text().replace('"k"', '"k\\ud800"'))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "lone UTF-16 surrogate")
    # A surrogate pair is one valid character (U+1F600), and an escaped backslash is no escape.
    ok = tmp_path / "ok.json"
    ok.write_text(_doc_text().replace('"k"', '"k\\ud83d\\ude00 \\\\ud800"'))
    assert "k\U0001f600 \\ud800" in tv.load(ok, cache=False).events(0)["name"].tolist()


def test_deep_nesting(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_text(_doc_text().replace('"args": {', '"args": {"x": ' + "[" * 10_000 + "]" * 10_000 + ", ", 1))
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "too deep")


def test_error_messages_never_quote_file_content(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_text('{"traceEvents": [{"secret": "hunter2" oops}]}')
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "not valid JSON at line 1")
    assert "hunter2" not in str(exc.value)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("pid", 2**64 + 5, "at `$.pid`"),
        ("tid", -(2**63) - 1, "at `$.tid`"),
        ("ts", 2**64 + 5, "'ts' out of range"),
        ("ts", 1e300, "'ts' out of range"),
        ("dur", 1e300, "'dur' out of range"),
        ("dur", 2**63, "'dur' out of range"),
    ],
)
def test_out_of_range_numbers_are_malformed_events(tmp_path: Path, field: str, value: float, words: str) -> None:
    d = good_doc()
    d["traceEvents"][1][field] = value
    p = kb.write(tmp_path / "rank-0.json", d)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "1 malformed event", words, "bad_events='drop'")
    with pytest.warns(tv.TraceviewWarning, match="1 malformed events were dropped"):
        trace = tv.load(p, cache=False, bad_events="drop")
    ev = trace.events(0)
    assert len(ev) == 2 and (ev["dur_ns"] >= 0).all() and ev["ts_ns"].abs().max() < 10**12


def test_out_of_range_args_are_dropped_not_wrapped(tmp_path: Path) -> None:
    d = good_doc()
    d["traceEvents"][2]["args"]["device"] = 70_000  # beyond int16
    d["traceEvents"][1]["args"]["correlation"] = 2**64 - 1  # beyond int64
    p = kb.write(tmp_path / "rank-0.json", d)
    with pytest.warns(tv.TraceviewWarning, match="2 events had unreadable args"):
        trace = tv.load(p, cache=False)
    ev = trace.events(0)
    assert (ev["device"] < 2**15).all() and (ev["correlation"] >= -1).all()


@pytest.mark.parametrize(
    ("rank", "why"), [(-1, "negative"), (1.5, "not a whole number"), ("abc", "a str"), (2**64, "larger")]
)
def test_bad_distributed_rank(tmp_path: Path, rank: object, why: str) -> None:
    d = good_doc()
    d["distributedInfo"]["rank"] = rank
    p = kb.write(tmp_path / "trace.json", d)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "distributedInfo.rank", why, "bad_events='drop'")
    with pytest.warns(tv.TraceviewWarning, match="distributedInfo.rank"):
        trace = tv.load(p, cache=False, bad_events="drop")
    assert trace.ranks == (0,) and trace.meta(0).rank_source == "default"


def test_base_time_out_of_range(tmp_path: Path) -> None:
    d = good_doc()
    d["baseTimeNanoseconds"] = 2**63 - 1
    p = kb.write(tmp_path / "rank-0.json", d)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "baseTimeNanoseconds is out of range")


@pytest.mark.parametrize("engine", ["serial", "dask"])
def test_the_loads_warnings_name_the_callers_line(tmp_path: Path, engine: str) -> None:
    """Files skipped and events dropped are warned about at the line that called tv.load,
    however deep in the loader (or its dask engine) the warning is raised."""
    if engine == "dask":
        pytest.importorskip("distributed")
    d = good_doc()
    d["traceEvents"][1]["dur"] = -5
    kb.write(tmp_path / "rank-0.json", d)
    (tmp_path / "notes.txt").write_text("not a trace")
    with pytest.warns(tv.TraceviewWarning) as caught:
        tv.load(tmp_path, cache=False, bad_events="drop", engine=engine)  # type: ignore[arg-type]
    messages = {str(w.message).split(" (")[0] for w in caught}
    assert messages >= {"skipped 1 file(s) that are not traces: notes.txt", "1 malformed events were dropped"}
    assert all(Path(w.filename) == Path(__file__) for w in caught), [w.filename for w in caught]


@pytest.mark.parametrize("native_on", [True, False], ids=["native", "msgspec"])
@pytest.mark.parametrize("where", ["name", "arg"])
@pytest.mark.parametrize("gz", [False, True], ids=["json", "gz"])
@pytest.mark.parametrize("piece_bytes", [None, 2048], ids=["whole", "pieces"])
def test_encoded_surrogate_is_a_trace_format_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native_on: bool, where: str, gz: bool, piece_bytes: int | None
) -> None:
    """A UTF-16 surrogate encoded as UTF-8 bytes (ED A0 80) is not UTF-8: both readers, whole
    or in pieces, refuse it naming the file and the byte offset (issue 37)."""
    from jupyter_traceview.loading import ingest
    from jupyter_traceview.loading.readers.kineto import native

    if not native_on:
        monkeypatch.setattr(native, "SCANNER", None)
    if piece_bytes is not None:
        monkeypatch.setattr(ingest, "PIECE_BYTES", piece_bytes)
    events = [kb.step(1, 0, 10_000)]
    for i in range(60):
        events.append(kb.cpu_op("aten::mm", 10 + 100 * i, 50))
    events.append(kb.cpu_op("MARK", 9000, 5) if where == "name" else kb.cpu_op("aten::x", 9000, 5, tag="MARK"))
    raw = json.dumps(kb.doc(events)).encode()
    bad = raw.replace(b"MARK", b"ab\xed\xa0\x80cd")
    offset = bad.index(b"\xed")
    p = tmp_path / ("rank-0.json.gz" if gz else "rank-0.json")
    p.write_bytes(gzip.compress(bad) if gz else bad)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "not valid UTF-8", f"(byte {offset:,}")


@pytest.mark.parametrize("native_on", [True, False], ids=["native", "msgspec"])
@pytest.mark.parametrize("bad", [b"\xed\xbf\xbf", b"\xff", b"\xc0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"\xc3"])
def test_any_invalid_utf8_names_the_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native_on: bool, bad: bytes
) -> None:
    """Every other invalid UTF-8 sequence (a low surrogate, a byte never in UTF-8, overlong
    forms, beyond U+10FFFF, a cut-off sequence): the same error, with the offset."""
    from jupyter_traceview.loading.readers.kineto import native

    if not native_on:
        monkeypatch.setattr(native, "SCANNER", None)
    raw = json.dumps(kb.doc([kb.step(1, 0, 1000), kb.cpu_op("MARK", 10, 5)])).encode()
    data = raw.replace(b"MARK", b"ab" + bad + b"cd")
    p = tmp_path / "rank-0.json"
    p.write_bytes(data)
    with pytest.raises(tv.TraceFormatError) as exc:
        tv.load(p, cache=False)
    check(exc, p, "not valid UTF-8", f"(byte {data.index(bad):,}")
