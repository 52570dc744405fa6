"""``traceview summary`` keeps its output beside the trace's cache entry and prints it again,
byte for byte, while the files, the options and the code are unchanged (loading/kept.py)."""

from __future__ import annotations

import gzip
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_traceview import cli
from jupyter_traceview.loading import cache_key, kept
from jupyter_traceview.loading.loader import load
from tests.conftest import KINETO_FOLDERS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A two-rank trace folder of our own (plain JSON we may change), with a file that is not a trace."""
    out = tmp_path / "run"
    out.mkdir()
    for gz in sorted(KINETO_FOLDERS["hta_dlrm_2of128_ranks"].glob("*.json.gz")):
        (out / gz.name.removesuffix(".gz")).write_bytes(gzip.decompress(gz.read_bytes()))
    (out / "notes.txt").write_text("not a trace\n")  # discovery skips it: a warning on stderr
    return out


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    assert cli.main(["summary", *args]) == 0
    got = capsys.readouterr()
    return got.out, got.err


def _kept_files() -> list[Path]:
    return sorted(Path(cache_key.default_cache_dir()).glob("*/kept.summary.*.json"))


class _Computed:
    """Counts the runs that compute the summary (a hit computes nothing)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = cli._summary_text

        def counted(args: object) -> str:
            self.calls += 1
            return original(args)

        monkeypatch.setattr(cli, "_summary_text", counted)


def test_the_cache_key_options_are_the_clis_reader_options() -> None:
    # cli._kept finds the entries the load writes: it names the reader options of a CLI
    # load, which passes no bad_events (tv.load's default, which it assumes) and no pid map.
    assert inspect.signature(load).parameters["bad_events"].default == "raise"
    assert "bad_events" not in cli._load_options(cli._parser().parse_args(["summary", "--sample"]))


@pytest.mark.parametrize("as_json", [False, True])
def test_a_repeat_run_prints_the_same_without_computing(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    computed = _Computed(monkeypatch)
    flags = ["--json"] if as_json else []
    first = _run(capsys, str(folder), *flags)
    assert computed.calls == 1
    (path,) = _kept_files()
    assert path.stat().st_mode & 0o777 == 0o600
    second = _run(capsys, str(folder), *flags)
    assert computed.calls == 1  # printed from the kept file
    assert second == first
    if not as_json:
        assert "skipped 1 file(s) that are not traces: notes.txt" in first[1]  # the warning, again
    # The same output as a run that parses and keeps nothing.
    assert _run(capsys, str(folder), "--no-cache", *flags)[0] == first[0]
    assert computed.calls == 2


def test_the_table_and_json_are_kept_apart(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, as_json = _run(capsys, str(folder)), _run(capsys, str(folder), "--json")
    assert len(_kept_files()) == 2
    assert _run(capsys, str(folder)) == table and _run(capsys, str(folder), "--json") == as_json
    json.loads(as_json[0])


@pytest.mark.parametrize(
    "change",
    [
        "rewrite a rank file",
        "touch a rank file",
        "add a rank file",
        "remove the skipped file",
        "other code",
        "other ranks",
    ],
)
def test_a_change_is_a_miss(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    computed = _Computed(monkeypatch)
    first = _run(capsys, str(folder))
    rank0 = sorted(folder.glob("*.json*"))[0]
    args = [str(folder)]
    if change == "rewrite a rank file":  # same size and modification time, other content
        st = rank0.stat()
        data = rank0.read_bytes()
        last = list(re.finditer(rb'"dur": ([1-8])', data))[-1]  # the last duration (in the hashed end)
        at = last.start(1)
        rank0.write_bytes(data[:at] + bytes([data[at] + 1]) + data[at + 1 :])
        os.utime(rank0, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "touch a rank file":
        os.utime(rank0, ns=(rank0.stat().st_atime_ns, rank0.stat().st_mtime_ns + 10**9))
    elif change == "add a rank file":  # (no distributedInfo: rank 5 by its name)
        shutil.copy(KINETO_FOLDERS["hta_triton"] / "triton_example.json.gz", folder / "rank-5.json.gz")
    elif change == "remove the skipped file":
        (folder / "notes.txt").unlink()
    elif change == "other code":
        monkeypatch.setattr(cli, "_code_key", lambda: "another version of the code")
    elif change == "other ranks":
        args += ["--ranks", "0"]
    second = _run(capsys, *args)
    assert computed.calls == 2
    if change in ("touch a rank file", "other code"):
        assert second == first  # recomputed: the same figures
    third = _run(capsys, *args)
    assert computed.calls == 2 and third == second  # and kept again


def test_the_code_key_follows_the_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = cli._code_key()
    assert key is not None and len(key) == 64 and cli._code_key() == key
    # Another copy of the package with one analysis changed has another key.
    copy = tmp_path / "jupyter_traceview"
    src = Path(cli.__file__).parent
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("static", "labextension", "__pycache__", "*.c"))
    monkeypatch.setattr(cli, "__file__", str(copy / "cli.py"))
    assert cli._code_key() == key
    with open(copy / "analysis" / "summary.py", "a") as fh:
        fh.write("\n# changed\n")
    assert cli._code_key() not in (None, key)
    (copy / "format.py").unlink()
    assert cli._code_key() is None  # a source that cannot be read: nothing kept


@pytest.mark.parametrize(
    "damage", ["group-writable", "a link", "not JSON", "edited output", "another digest", "too big", "another owner"]
)
def test_a_foreign_or_damaged_file_is_ignored(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, damage: str
) -> None:
    computed = _Computed(monkeypatch)
    first = _run(capsys, str(folder))
    (path,) = _kept_files()
    doc = json.loads(path.read_text())
    if damage == "group-writable":
        path.chmod(0o620)
    elif damage == "a link":
        elsewhere = tmp_path / "planted.json"
        shutil.copy(path, elsewhere)
        elsewhere.chmod(0o600)
        path.unlink()
        path.symlink_to(elsewhere)
    elif damage == "not JSON":
        path.write_text("{")
    elif damage == "edited output":
        doc["body"] = doc["body"].replace("rank(s)", "rank(z)")
        path.write_text(json.dumps(doc))
    elif damage == "another digest":
        doc["digest"] = "0" * 64
        path.write_text(json.dumps(doc))
    elif damage == "too big":
        monkeypatch.setattr(kept, "MAX_KEPT_BYTES", 100)
    elif damage == "another owner":
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("changing a file's owner needs root")
        os.chown(path, os.geteuid() + 4242, -1)
    second = _run(capsys, str(folder))
    assert computed.calls == 2 and second == first
    if damage != "too big":  # written again, as this user's alone
        assert not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600
        assert _run(capsys, str(folder)) == first and computed.calls == 2


def test_nothing_is_kept_without_the_cache_or_with_a_pid_map(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, str(folder), "--no-cache")
    _run(capsys, str(sorted(folder.glob("*.json"))[0]), "--pid-map", "0=0,4037=0")  # its processes
    assert _kept_files() == []


def test_nothing_is_kept_when_a_file_changes_during_the_load(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = cli._summary_text
    rank0 = sorted(folder.glob("*.json*"))[0]

    def changing(args: object) -> str:
        out = original(args)
        os.utime(rank0, ns=(rank0.stat().st_atime_ns, rank0.stat().st_mtime_ns + 10**9))
        return out

    monkeypatch.setattr(cli, "_summary_text", changing)
    _run(capsys, str(folder))
    assert _kept_files() == []


def test_an_error_keeps_nothing_and_prints_no_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text('{"traceEvents": [')
    assert cli.main(["summary", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("traceview: error:") and "Traceback" not in err
    assert _kept_files() == []


def test_a_repeat_run_imports_neither_pandas_nor_numpy(folder: Path, tmp_path: Path) -> None:
    # The cache folder set in the child itself (XDG_CACHE_HOME is Linux's only).
    code = (
        "import pathlib, sys; import jupyter_traceview.loading.cache_key as k; "
        "k.default_cache_dir = lambda: pathlib.Path(sys.argv[2]); "
        "from jupyter_traceview.cli import main; main(['summary', sys.argv[1]]); "
        "print(','.join(m for m in ('pandas', 'numpy', 'pyarrow') if m in sys.modules), file=sys.stderr)"
    )
    cache = str(tmp_path / "cache")
    runs = [
        subprocess.run([sys.executable, "-c", code, str(folder), cache], capture_output=True, text=True, cwd=ROOT)
        for _ in range(2)
    ]
    assert runs[0].returncode == 0 and runs[1].returncode == 0
    assert runs[0].stderr.splitlines()[-1] == "pandas,numpy,pyarrow"  # computed
    assert runs[1].stderr.splitlines()[-1] == ""  # printed from the kept file
    assert runs[1].stdout == runs[0].stdout
    assert runs[1].stderr.splitlines()[:-1] == runs[0].stderr.splitlines()[:-1]
    assert list(Path(cache).glob("*/kept.summary.*.json"))
