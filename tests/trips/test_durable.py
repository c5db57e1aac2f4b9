"""Tests for vrvm.trips.store.durable: atomic, durable writes and the cross-process lock."""

from __future__ import annotations

import errno
import json
import os
import pickle
import re

import pytest

from vrvm.trips.store.durable import (
    HOLDER_RECORD_BYTES,
    StorageError,
    atomic_write,
    atomic_write_json,
    exclusive_lock,
)


def test_atomic_write_replaces_the_file_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "deep" / "file.txt"
    assert atomic_write(target, lambda tmp: tmp.write_text("one")) == target
    atomic_write(target, lambda tmp: tmp.write_text("two"))
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.txt"]


def test_a_failing_writer_leaves_the_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("previous")

    def half_then_crash(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, half_then_crash)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_the_content_is_synced_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(
        os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1]
    )
    atomic_write(tmp_path / "f", lambda tmp: tmp.write_bytes(b"x"))
    # the file's fsync, the rename, then the directory's fsync
    assert events == ["fsync", "replace", "fsync"]


def test_atomic_write_json_refuses_nan(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_json(target, {"version": 3})
    assert json.loads(target.read_text()) == {"version": 3}
    with pytest.raises(ValueError):
        atomic_write_json(target, {"x": float("nan")})
    assert json.loads(target.read_text()) == {"version": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_exclusive_lock_excludes_other_holders_and_creates_its_file(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "new" / ".lock"
    with exclusive_lock(path), open(path, "a+b") as other:
        with pytest.raises(BlockingIOError):
            fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path, "a+b") as other:  # released on exit
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_the_lock_file_names_its_holder_in_place(tmp_path):
    # Written over the start of the file, never truncated (a truncated and rewritten file
    # is flushed on close by ext4): one fixed-size record, whatever was there before.
    path = tmp_path / ".lock"
    path.write_text("not a holder record " * 20)
    for _ in range(2):
        with exclusive_lock(path):
            text = path.read_text()
        assert len(text) == HOLDER_RECORD_BYTES and text.endswith("\n")
        assert re.fullmatch(rf"pid {os.getpid()} since \d{{4}}-\d\d-\d\dT[\d:]+Z *\n", text)


# ------------------------------------------------------------ storage errors
# The tests run as root, which ignores permission bits: a place that cannot be written
# is a path under a regular file; other errors are raised by a patched fsync.


def _fail_with(monkeypatch, code: int, text: str) -> None:
    def fail(path):
        raise OSError(code, text, str(path))

    monkeypatch.setattr("vrvm.trips.store.durable._fsync_file", fail)


@pytest.mark.parametrize(
    ("code", "text", "why", "advice"),
    [
        (errno.ENOSPC, "No space left on device", "no space left on device", "free some space"),
        (errno.EROFS, "Read-only file system", "read-only file system", "choose a writable"),
        (errno.EACCES, "Permission denied", "permission denied", "choose a writable"),
        (errno.EIO, "Input/output error", "input/output error", "check the folder"),
    ],
)
def test_a_refused_write_names_the_target_why_and_what_to_do(
    tmp_path, monkeypatch, code, text, why, advice
):
    target = tmp_path / "file.txt"
    target.write_text("previous")
    _fail_with(monkeypatch, code, text)
    with pytest.raises(StorageError) as caught:
        atomic_write(target, lambda tmp: tmp.write_text("new"))
    exc = caught.value
    assert isinstance(exc, OSError) and exc.errno == code
    assert exc.filename == str(target)  # the target, never the temporary file
    assert str(exc).startswith(f"cannot write {target}: {why}; {advice}")
    assert isinstance(exc.__cause__, OSError)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_a_file_in_the_way_of_the_folder_is_named(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for target in (afile / "f.json", afile / "deep" / "f.json"):
        with pytest.raises(StorageError) as caught:
            atomic_write_json(target, {"a": 1})
        assert str(caught.value) == (
            f"cannot write {target}: {afile} is a file, not a folder; "
            "move that file or choose another folder"
        )
    assert afile.read_text() == "x"


def test_the_lock_under_a_file_is_a_storage_error(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(StorageError, match=f"cannot write {afile / '.lock'}: {afile} is a file"):
        with exclusive_lock(afile / ".lock"):
            pass  # pragma: no cover
    # what the block raises passes unchanged
    with pytest.raises(OSError, match="Input/output error") as caught:
        with exclusive_lock(tmp_path / ".lock"):
            raise OSError(errno.EIO, "Input/output error")
    assert not isinstance(caught.value, StorageError)


def test_storage_errors_keep_their_fields_across_processes():
    exc = StorageError(errno.ENOSPC, "/srv/out", advice="free space or choose another --out")
    copy = pickle.loads(pickle.dumps(exc))
    assert (copy.errno, copy.filename, str(copy)) == (exc.errno, exc.filename, str(exc))
    assert str(copy) == (
        "cannot write /srv/out: no space left on device; free space or choose another --out"
    )
