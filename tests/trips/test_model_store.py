"""Tests for vrvm.trips.store.model_store: numbered versions and the active pointer."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import vrvm
from tests._waiting import START_S
from tests.trips.model_helpers import FORMAT, _raises_format_error, _save, _tag
from vrvm.trips.store.model_dir import (
    read_model_manifest,
)
from vrvm.trips.store.model_store import LOCK_FILE, ModelStore, StoreConflictError


def _writer(tag: str = "a"):
    def write(model_dir: Path) -> None:
        _save(model_dir, tag=tag)

    return write


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with the content of files (directories map to None).

    The lock file's content names its latest holder and the time it took the lock (to
    the second): only its presence is compared, never that text.
    """
    result: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            result[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            content = None if name == LOCK_FILE else Path(full).read_bytes()
            result[os.path.relpath(full, root)] = content
    return result


def test_empty_store(tmp_path):
    store = ModelStore(tmp_path / "store")
    assert store.versions() == []
    assert store.active_version() is None
    assert store.active_path() is None
    assert store.latest_version() is None
    with pytest.raises(ValueError, match="no version 1"):
        store.path(1)


def test_add_activate_reactivate_and_list(tmp_path):
    store = ModelStore(tmp_path / "store")
    first = store.add(_writer("a"), info={"kind": "train", "data": "trips.parquet"})
    second = store.add(
        _writer("b"),
        info={"kind": "update", "parent": first, "metrics": {"crps": np.float64(0.3)}},
        activate=False,
    )
    assert (first, second) == (1, 2)
    assert store.active_version() == 1
    assert store.latest_version() == 2

    listing = store.versions()
    assert [(v.version, v.is_active) for v in listing] == [(1, True), (2, False)]
    assert listing[1].info == {"kind": "update", "parent": 1, "metrics": {"crps": 0.3}}
    assert listing[1].path == tmp_path / "store" / "versions" / "v0002"
    assert listing[0].created.tzinfo is not None
    assert listing[0].created <= listing[1].created
    assert listing[0].vrvm_version == vrvm.__version__

    store.activate(2)
    assert store.active_version() == 2
    assert _tag(store.active_path()) == "b"
    store.activate(1)  # re-activating an older version is a rollback
    assert store.active_version() == 1
    assert _tag(store.active_path()) == "a"
    assert _tag(store.path(2)) == "b"
    assert [p for p in os.listdir(tmp_path / "store") if p.startswith(".tmp-")] == []
    assert sorted(os.listdir(tmp_path / "store" / "versions")) == ["v0001", "v0002"]


def test_store_persists_across_instances(tmp_path):
    ModelStore(tmp_path).add(_writer("a"), info={"note": "first"})
    ModelStore(tmp_path).add(_writer("b"), activate=False)
    reopened = ModelStore(str(tmp_path))
    assert reopened.active_version() == 1
    assert [v.info for v in reopened.versions()] == [{"note": "first"}, {}]
    assert reopened.add(_writer("c")) == 3
    assert ModelStore(tmp_path).active_version() == 3


@pytest.mark.parametrize("error", [RuntimeError("training diverged"), KeyboardInterrupt()])
def test_writer_failure_leaves_the_store_untouched(tmp_path, error):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    before = _snapshot(tmp_path)

    def failing_writer(model_dir: Path) -> None:
        (model_dir / "arrays.npz").write_bytes(b"half")
        raise error

    with pytest.raises(type(error)):
        store.add(failing_writer, info={"kind": "update"})
    assert _snapshot(tmp_path) == before
    assert store.add(_writer("b")) == 2  # the number was released


def test_writer_that_writes_nothing_is_refused(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    before = _snapshot(tmp_path)
    with _raises_format_error(tmp_path, "wrote no model"):
        store.add(lambda model_dir: None)
    assert _snapshot(tmp_path) == before


def test_info_that_json_cannot_hold_is_refused_before_writing(tmp_path):
    store = ModelStore(tmp_path)
    calls = []
    with _raises_format_error(tmp_path, "is nan"):
        store.add(calls.append, info={"metrics": {"crps": float("nan")}})
    assert calls == []
    assert store.versions() == []


def test_nested_adds_get_distinct_numbers(tmp_path):
    store = ModelStore(tmp_path)
    inner = []

    def writer_that_adds_another_version(model_dir: Path) -> None:
        inner.append(store.add(_writer("b"), info={"order": "inner"}))
        _save(model_dir, tag="a")

    outer = store.add(writer_that_adds_another_version)
    assert sorted([outer, *inner]) == [1, 2]
    assert outer != inner[0]
    assert {v.version: _tag(v.path) for v in store.versions()} == {outer: "a", inner[0]: "b"}


def test_concurrent_publishes_are_ordered_and_the_newest_stays_active(tmp_path):
    # Four threads publish ten versions each: activation is part of the locked publish,
    # so the pointer ends on the newest version (it was last-writer-wins before).
    errors: list[BaseException] = []

    def publish() -> None:
        try:
            for _ in range(10):
                ModelStore(tmp_path).add(_writer())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=publish) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    store = ModelStore(tmp_path)
    assert errors == []
    assert [v.version for v in store.versions()] == list(range(1, 41))
    assert store.active_version() == store.latest_version() == 40


def test_a_writer_waits_for_the_lock_then_gives_up_with_a_clear_error(tmp_path):
    store = ModelStore(tmp_path, wait_s=0.2)
    store.add(_writer("a"))
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with ModelStore(tmp_path).lock():
            holding.set()
            release.wait(timeout=START_S)  # held until the checks below are done

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=START_S)
        with pytest.raises(vrvm.StoreBusyError, match=r"is busy: another process \(pid \d+"):
            store.add(_writer("b"))
        with pytest.raises(vrvm.StoreBusyError):
            store.activate(1)
    finally:
        release.set()
        holder.join(timeout=START_S)
    assert [v.version for v in store.versions()] == [1]
    assert store.add(_writer("b")) == 2  # free again


def test_a_publish_built_on_a_stale_active_version_is_refused(tmp_path):
    store = ModelStore(tmp_path)
    base = store.add(_writer("a"))
    store.add(_writer("b"))  # a concurrent publish moved the pointer to 2
    with pytest.raises(StoreConflictError, match=r"built on version 1.*now 2") as caught:
        store.add(_writer("c"), parent=base, expect_active=base)
    assert (caught.value.expected, caught.value.active) == (1, 2)
    assert store.latest_version() == 2
    assert store.add(_writer("c"), parent=2, expect_active=2) == 3


def test_parents_are_recorded_and_the_lineage_follows_them(tmp_path):
    store = ModelStore(tmp_path)
    first = store.add(_writer(), info={"kind": "train"})
    second = store.add(_writer(), info={"kind": "update"}, parent=first)
    other = store.add(_writer(), info={"kind": "train"})  # a new model: no parent
    third = store.add(_writer(), info={"kind": "update"}, parent=second)
    assert [(v.version, v.parent) for v in store.versions()] == [
        (1, None),
        (2, 1),
        (3, None),
        (4, 2),
    ]
    assert store.lineage(third) == [4, 2, 1]
    assert store.lineage() == [4, 2, 1]  # the active version's
    assert store.lineage(other) == [3]
    with pytest.raises(ValueError, match="no version 9"):
        store.lineage(9)


def test_records_written_before_parents_had_their_own_field_still_give_a_lineage(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer())
    store.add(_writer(), info={"kind": "update", "parent": 1})
    record = tmp_path / "versions" / "v0002" / "version.json"
    document = json.loads(record.read_text())
    del document["parent"]
    record.write_text(json.dumps(document))
    assert store.versions()[1].parent == 1
    assert store.lineage(2) == [2, 1]


def test_retention_keeps_the_newest_the_active_and_those_activated_by_hand(tmp_path):
    store = ModelStore(tmp_path, keep_last=3)
    parent = None
    for _ in range(4):
        parent = store.add(_writer(), parent=parent)
    store.activate(2)  # by hand: kept for good
    for _ in range(5):
        store.add(_writer(), parent=store.active_version(), expect_active=store.active_version())
    kept = [v.version for v in store.versions()]
    assert kept == [2, 7, 8, 9]
    assert [v.by_hand for v in store.versions()] == [True, False, False, False]
    assert sorted(store.pruned()) == [1, 3, 4, 5, 6]
    # the lineage walks through removed versions' records
    assert store.lineage(9) == [9, 8, 7, 6, 5, 2, 1]
    assert store.add(_writer()) == 10  # removed numbers are never reused
    assert [p for p in os.listdir(tmp_path / "versions") if p.startswith(".tmp-")] == []
    with pytest.raises(ValueError, match="positive integer"):
        store.prune(0)


def test_heal_finishes_a_publish_killed_between_commit_and_activation(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    store.add(_writer("b"), activate=False)
    # what a writer killed after committing v2 leaves: its journal entry
    (tmp_path / "journal").mkdir(exist_ok=True)
    (tmp_path / "journal" / "v0002.json").write_text('{"version": 2, "activate": true}')
    # and what writers killed earlier leave
    (tmp_path / "journal" / "v0003.json").write_text('{"version": 3, "activate": true}')
    (tmp_path / "versions" / "v0003").mkdir()
    (tmp_path / "versions" / ".tmp-v0003-0badcafe" / "model").mkdir(parents=True)
    (tmp_path / "versions" / ".tmp-pruned-v0001").mkdir()
    (tmp_path / ".tmp-active.json.x1y2").write_text("{")
    assert store.versions()[1].never_activated
    repairs = store.heal()
    assert store.active_version() == 2
    assert any("activated version 2" in r for r in repairs)
    assert any("rolled back the unfinished publish of version 3" in r for r in repairs)
    assert sorted(os.listdir(tmp_path / "versions")) == ["v0001", "v0002"]
    assert sorted(os.listdir(tmp_path / "journal")) == []
    assert not list(tmp_path.glob(".tmp-*"))
    assert store.heal() == []  # nothing left to repair
    assert _tag(store.active_path()) == "b"


def test_heal_does_not_activate_what_a_user_replaced_or_never_wanted(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    store.add(_writer("b"), activate=False)
    store.add(_writer("c"))
    (tmp_path / "journal").mkdir(exist_ok=True)
    # v2's publish did not ask for activation; a newer version is active anyway
    (tmp_path / "journal" / "v0002.json").write_text('{"version": 2, "activate": false}')
    assert store.heal() == []
    assert store.active_version() == 3
    assert ModelStore(tmp_path / "absent").heal() == []


def test_a_reservation_left_by_a_killed_add_is_skipped(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    (tmp_path / "versions" / "v0002").mkdir()  # reserved, never committed
    (tmp_path / "versions" / ".tmp-v0002-deadbeef").mkdir()
    assert [v.version for v in store.versions()] == [1]
    assert store.latest_version() == 1
    with pytest.raises(ValueError, match="no version 2"):
        store.activate(2)
    assert store.add(_writer("b")) == 3


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"version": "2"}', b'{"version": 0}', b"{}", b"\xff"],
)
def test_corrupt_active_pointer(tmp_path, content):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    store.add(_writer("b"))
    (tmp_path / "active.json").write_bytes(content)

    for query in (store.active_version, store.active_path):
        with _raises_format_error(tmp_path / "active.json", "damaged") as info:
            query()
        assert ".activate(version)" in str(info.value)
    assert [(v.version, v.is_active) for v in store.versions()] == [(1, False), (2, False)]

    store.activate(1)
    assert store.active_version() == 1


def test_active_pointer_to_a_missing_version(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    (tmp_path / "active.json").write_text('{"version": 7}')
    with _raises_format_error(tmp_path / "active.json", "points to version 7"):
        store.active_version()
    assert [v.version for v in store.versions()] == [1]


def test_activate_refuses_unknown_versions(tmp_path):
    store = ModelStore(tmp_path)
    store.add(_writer("a"))
    with pytest.raises(ValueError, match=r"no version 5; available versions: \[1\]"):
        store.activate(5)
    with pytest.raises(ValueError, match=">= 1"):
        store.activate(0)
    with pytest.raises(TypeError):
        store.activate("1")
    assert store.active_version() == 1


def test_store_versions_are_loadable_model_directories(tmp_path):
    store = ModelStore(tmp_path)
    version = store.add(_writer("z"), info={"kind": "train"})
    assert sorted(os.listdir(store.path(version))) == ["arrays.npz", "model.json", "version.json"]
    manifest = read_model_manifest(store.path(version), format_name=FORMAT, max_format_version=1)
    assert manifest.metadata == {"tag": "z"}
    assert repr(store) == f"ModelStore({str(tmp_path)!r})"
