"""Tests for vrvm.trips.durable: atomic, durable writes and the cross-process lock."""

from __future__ import annotations

import json
import os

import pytest

from vrvm.trips.durable import atomic_write, atomic_write_json, exclusive_lock


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
