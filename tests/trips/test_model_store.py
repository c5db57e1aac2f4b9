"""Tests for vrvm.trips.model_store: numbered versions and the active pointer."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

import vrvm
from tests.trips.model_helpers import FORMAT, _raises_format_error, _save, _tag
from vrvm.trips.model_dir import (
    read_model_manifest,
)
from vrvm.trips.model_store import ModelStore


def _writer(tag: str = "a"):
    def write(model_dir: Path) -> None:
        _save(model_dir, tag=tag)

    return write


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with the content of files (directories map to None)."""
    result: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            result[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            result[os.path.relpath(full, root)] = Path(full).read_bytes()
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


def test_concurrent_adds_get_distinct_numbers(tmp_path):
    # Both writers wait for each other, so both numbers are reserved at the same time.
    barrier = threading.Barrier(2, timeout=10)
    results: list[int] = []

    def writer(model_dir: Path) -> None:
        barrier.wait()
        _save(model_dir)

    def add() -> None:
        results.append(ModelStore(tmp_path).add(writer))

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert sorted(results) == [1, 2]
    assert [v.version for v in ModelStore(tmp_path).versions()] == [1, 2]


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
