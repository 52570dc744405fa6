"""model/own_files: what the cache keeps beside its entries is read only from this user's own regular files."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from jupyter_traceview.model.own_files import read_own, write_own

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")


def test_written_file_is_read_back_and_private(tmp_path):
    path = str(tmp_path / "doc.json")
    write_own(path, b"{}")
    assert read_own(path) == b"{}"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(tmp_path) == ["doc.json"]  # nothing left aside


def test_size_limit(tmp_path):
    path = str(tmp_path / "doc.json")
    write_own(path, b"x" * 11)
    assert read_own(path, 11) == b"x" * 11
    with pytest.raises(OSError, match="more than 10 bytes"):
        read_own(path, 10)


@posix_only
def test_group_writable_refused(tmp_path):
    path = str(tmp_path / "doc.json")
    write_own(path, b"{}")
    os.chmod(path, 0o620)
    with pytest.raises(OSError, match="not this user's alone"):
        read_own(path)


@posix_only
def test_symlink_refused(tmp_path):
    target = tmp_path / "real.json"
    write_own(str(target), b"{}")
    link = tmp_path / "doc.json"
    link.symlink_to(target)
    with pytest.raises(OSError):
        read_own(str(link))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_fifo_refused_without_waiting_for_a_writer(tmp_path):
    # Someone who can write to a shared cache folder plants a named pipe under the name: a
    # blocking open would wait for a writer for ever (a hung CLI or kernel).
    path = str(tmp_path / "doc.json")
    os.mkfifo(path, 0o600)
    with pytest.raises(OSError, match="not a regular file"):
        read_own(path)


def test_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_own(str(tmp_path / "none.json"))
