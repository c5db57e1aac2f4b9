"""The audit log: append-only, durable appends, a torn line from a killed writer never
costs an earlier entry, concurrent writers never interleave, edits break the chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from vrvm.trips.home import Home
from vrvm.trips.store._faults import CRASH_ENV
from vrvm.trips.store.audit import AuditLog

_APPEND = """
import sys
from vrvm.trips.home import Home
for i in range(int(sys.argv[2])):
    Home(sys.argv[1]).audit.append("upload", who=f"writer {sys.argv[3]}", how="os", via="cli", i=i)
"""


def _append_in_process(home, n: int, name: str, crash_at: str | None = None):
    environ = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        environ[CRASH_ENV] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", _APPEND, str(home), str(n), name],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_entries_keep_their_order_fields_and_chain(tmp_path):
    log = Home(tmp_path).audit
    assert log.entries() == [] and log.check().ok
    log.append("upload", who="ana", how="passphrase", via="dashboard", file="w1.csv", kept=3)
    log.append("delete", who="bo", how="oidc", via="dashboard", trips=3)
    first, second = log.entries()
    assert (first["who"], first["action"], first["file"], first["prev"]) == (
        "ana",
        "upload",
        "w1.csv",
        None,
    )
    assert second["prev"] is not None and log.check().ok
    assert [e["action"] for e in log.entries(last=1)] == ["delete"]
    assert oct(log.path.stat().st_mode & 0o777) == "0o640"  # not readable by everyone


def test_bad_entries_are_refused(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    with pytest.raises(ValueError, match="unknown audit action"):
        log.append("format disk", who="x", how="os", via="cli")
    with pytest.raises(ValueError, match="may not be named"):
        log.append("upload", who="x", how="os", via="cli", time="yesterday")
    with pytest.raises(ValueError, match="must be JSON"):
        log.append("upload", who="x", how="os", via="cli", rows=float("nan"))
    assert not log.path.exists()


def test_a_writer_killed_mid_line_costs_no_earlier_entry(tmp_path):
    log = Home(tmp_path).audit
    log.append("upload", who="ana", how="os", via="cli", n=1)
    killed = _append_in_process(tmp_path, 1, "killed", crash_at="audit.torn")
    assert killed.wait(timeout=60) == -9
    assert not log.path.read_bytes().endswith(b"\n")  # half a line was written
    assert [e["who"] for e in log.entries()] == ["ana"]  # readers skip it
    log.append("publish", who="bo", how="os", via="cli", version=2)
    assert [e["who"] for e in log.entries()] == ["ana", "bo"]
    check = log.check()
    assert check.torn == [2] and check.broken == [] and check.n_entries == 2
    # the torn line was closed off, never continued: every other line is whole JSON
    lines = log.path.read_bytes().split(b"\n")
    assert json.loads(lines[2])["who"] == "bo"


def test_concurrent_writers_never_interleave(tmp_path):
    writers = [_append_in_process(tmp_path, 15, str(i)) for i in range(2)]
    threads = [
        threading.Thread(
            target=lambda k=k: [
                Home(tmp_path).audit.append("train", who=f"thread {k}", how="library", via="python")
                for _ in range(10)
            ]
        )
        for k in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    log = Home(tmp_path).audit
    entries = log.entries()
    assert len(entries) == 2 * 15 + 2 * 10
    for i in range(2):  # each process's entries in its own order
        assert [e["i"] for e in entries if e["who"] == f"writer {i}"] == list(range(15))
    assert log.check().ok


def test_an_edited_or_removed_line_breaks_the_chain(tmp_path):
    log = Home(tmp_path).audit
    for n in range(4):
        log.append("upload", who="ana", how="os", via="cli", n=n)
    lines = log.path.read_text().splitlines()
    lines[1] = lines[1].replace('"ana"', '"eve"')
    log.path.write_text("\n".join(lines) + "\n")
    assert log.check().broken == [3]  # the line after the edited one no longer chains
    del lines[1]
    log.path.write_text("\n".join(lines) + "\n")
    assert log.check().broken == [2]


def test_has_entry_finds_a_commit_token_and_skips_torn_lines(tmp_path):
    log = Home(tmp_path).audit
    assert not log.has_entry(commit="0123456789abcdef")  # no log yet
    log.append("publish", who="ana", how="os", via="cli", version=2, commit="0123456789abcdef")
    with open(log.path, "ab") as handle:  # a torn line holding another token
        handle.write(b'{"time": "x", "commit": "fedcba9876543210"')
    assert log.has_entry(commit="0123456789abcdef")
    assert log.has_entry(commit="0123456789abcdef", version=2)
    assert not log.has_entry(commit="0123456789abcdef", version=3)
    assert not log.has_entry(commit="fedcba9876543210")


def _write_model(path):
    from vrvm.trips.store.model_dir import save_model_dir

    save_model_dir(
        path, metadata={"a": 1}, arrays={"w": np.zeros(2)}, format_name="t", format_version=1
    )


def test_a_publish_whose_log_cannot_be_written_is_audited_by_the_next_heal(tmp_path, caplog):
    home = tmp_path
    log = Home(home).audit
    log.path.mkdir()  # the log cannot be written (as a full disk)
    store = Home(home).models
    who = {"who": "ana", "how": "os", "via": "cli"}
    assert store.add(_write_model, audit={**who, "kind": "train"}) == 1
    assert store.active_version() == 1  # the publish stands
    assert "not written yet" in caplog.text
    assert [p.name for p in (home / "models" / "journal").iterdir()] == ["v0001.json"]
    log.path.rmdir()
    repairs = Home(home).models.heal()
    assert repairs == [
        "wrote the audit entry of the publish of version 1: the process making it stopped "
        "before writing it"
    ]
    (entry,) = log.entries()
    assert (entry["action"], entry["version"], entry["kind"], entry["healed"]) == (
        "publish",
        1,
        "train",
        True,
    )
    assert Home(home).models.heal() == [] and len(log.entries()) == 1  # never twice
    assert Home(home).models.unaudited_versions() == []
    with pytest.raises(ValueError, match="audit needs who, how and via"):
        store.add(_write_model, audit={"who": "ana"})
    assert store.latest_version() == 1  # refused before anything was written
