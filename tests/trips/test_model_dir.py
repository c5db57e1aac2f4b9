"""Tests for vrvm.trips.store.model_dir: atomic, pickle-free model directories."""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import zipfile
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest

import vrvm
from tests.trips.model_helpers import FORMAT, _load, _raises_format_error, _save, _tag
from vrvm.trips.store import model_dir as storage
from vrvm.trips.store.model_dir import (
    load_model_dir,
    read_model_manifest,
    recover_model_dir,
    save_model_dir,
)


def _arrays() -> dict[str, np.ndarray]:
    return {
        "weights": np.linspace(0.0, 1.0, 12).reshape(3, 4),
        "counts": np.array([1, 2, 3], dtype=np.int64),
        "mask": np.array([True, False, True]),
        "scale": np.array(2.5),  # 0-d float
        "n_members": np.array(7, dtype=np.int64),  # 0-d int
        "features": np.array(["hour", "h3_cell"]),
        "transposed": np.arange(6.0).reshape(2, 3).T,  # not C-contiguous
        "big_endian": np.arange(3, dtype=">f8"),
        "empty": np.zeros((0, 5)),
    }


def _edit_manifest(model_dir: Path, edit) -> None:
    manifest_path = model_dir / "model.json"
    document = json.loads(manifest_path.read_text())
    edit(document)
    manifest_path.write_text(json.dumps(document))


def _replace_npz(model_dir: Path, payload: bytes, entries: dict | None = None) -> None:
    """Swap arrays.npz for ``payload`` and fix the manifest, as a deliberate attacker would."""
    (model_dir / "arrays.npz").write_bytes(payload)

    def edit(document):
        document["arrays_sha256"] = hashlib.sha256(payload).hexdigest()
        if entries is not None:
            document["arrays"] = entries

    _edit_manifest(model_dir, edit)


def _npz_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def _npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


_UNPICKLED: list[str] = []


def _record_unpickle(tag: str) -> str:
    _UNPICKLED.append(tag)
    return tag


class _Canary:
    """Unpickling this object calls ``_record_unpickle``: evidence that pickle ran."""

    def __reduce__(self):
        return (_record_unpickle, ("canary",))


# ------------------------------------------------------------------------ round trip
def test_round_trip_preserves_metadata_and_arrays(tmp_path):
    arrays = _arrays()
    metadata = {
        "features": {"hour": True, "h3_resolution": np.int64(8)},
        "kernel_widths": (np.float64(0.5), 1.5),
        "training_data": {"rows": 1200, "sha256": "ab" * 32, "source": None},
        "metrics": {"crps": np.float32(0.25), "coverage_90": 0.91},
        "flag": np.bool_(False),
        "name": np.str_("ensemble"),
    }
    target = save_model_dir(
        tmp_path / "model", metadata=metadata, arrays=arrays, format_name=FORMAT, format_version=1
    )
    assert target == tmp_path / "model"

    loaded_metadata, loaded_arrays = _load(target)

    assert loaded_metadata == {
        "features": {"hour": True, "h3_resolution": 8},
        "kernel_widths": [0.5, 1.5],
        "training_data": {"rows": 1200, "sha256": "ab" * 32, "source": None},
        "metrics": {"crps": 0.25, "coverage_90": 0.91},
        "flag": False,
        "name": "ensemble",
    }
    assert type(loaded_metadata["features"]["h3_resolution"]) is int
    assert loaded_arrays.keys() == arrays.keys()
    for name, array in arrays.items():
        assert loaded_arrays[name].dtype == array.dtype, name
        assert loaded_arrays[name].shape == array.shape, name
        np.testing.assert_array_equal(loaded_arrays[name], array)


def test_manifest_records_versions_checksum_and_array_layout(tmp_path):
    target = save_model_dir(
        tmp_path / "model",
        metadata={"k": 1},
        arrays={"w": np.zeros((2, 3)), "flag": np.array(True)},
        format_name=FORMAT,
        format_version=4,
    )
    document = json.loads((target / "model.json").read_text())
    digest = hashlib.sha256((target / "arrays.npz").read_bytes()).hexdigest()

    assert document["format_name"] == FORMAT
    assert document["format_version"] == 4
    assert document["vrvm_version"] == vrvm.__version__
    assert document["arrays_sha256"] == digest
    assert document["arrays"] == {
        "w": {"shape": [2, 3], "dtype": "<f8"},
        "flag": {"shape": [], "dtype": "|b1"},
    }
    manifest = read_model_manifest(target, format_name=FORMAT, max_format_version=4)
    assert manifest.created.tzinfo is not None
    assert manifest.created.utcoffset() == UTC.utcoffset(None)
    assert manifest.arrays == {"w": ((2, 3), "<f8"), "flag": ((), "|b1")}
    assert manifest.metadata == {"k": 1}


def test_save_creates_parents_and_leaves_no_temporaries(tmp_path):
    _save(tmp_path / "deep" / "er" / "model")
    assert sorted(os.listdir(tmp_path / "deep" / "er")) == ["model"]
    assert sorted(os.listdir(tmp_path / "deep" / "er" / "model")) == ["arrays.npz", "model.json"]


def test_same_arrays_give_identical_archives(tmp_path):
    _save(tmp_path / "one")
    _save(tmp_path / "two")
    assert (tmp_path / "one" / "arrays.npz").read_bytes() == (
        tmp_path / "two" / "arrays.npz"
    ).read_bytes()


def test_array_names_that_clash_with_savez_keywords_are_fine(tmp_path):
    arrays = {"file": np.ones(2), "allow_pickle": np.zeros(1)}
    target = save_model_dir(
        tmp_path / "m", metadata={}, arrays=arrays, format_name=FORMAT, format_version=1
    )
    assert sorted(_load(target)[1]) == ["allow_pickle", "file"]


# ----------------------------------------------------------------- refused on save
@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({"metrics": {"crps": float("nan")}}, r"metadata\['metrics'\]\['crps'\] is nan"),
        ({"widths": [1.0, np.float64(np.inf)]}, r"metadata\['widths'\]\[1\] is inf"),
        ({1: "x"}, "keys must be strings"),
        ({"w": np.zeros(2)}, "numpy array"),
        ({"when": object()}, "not JSON-serialisable"),
        ({"c": 1j}, "not JSON-serialisable"),
    ],
)
def test_metadata_that_json_cannot_hold_is_refused(tmp_path, metadata, match):
    target = tmp_path / "model"
    with _raises_format_error(target, match):
        save_model_dir(target, metadata=metadata, arrays={}, format_name=FORMAT, format_version=1)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("array", "match"),
    [
        (np.array([1, "a", None], dtype=object), "holds Python objects"),
        (np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]), "structured dtype"),
        (np.array([b"ab"], dtype="V2"), "not supported"),
    ],
)
def test_object_and_structured_arrays_are_refused_on_save(tmp_path, array, match):
    target = tmp_path / "model"
    with _raises_format_error(target, match):
        save_model_dir(
            target, metadata={}, arrays={"bad": array}, format_name=FORMAT, format_version=1
        )
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["", "a/b", "../x", ".hidden", "x" * 201, 3])
def test_invalid_array_names_are_refused(tmp_path, name):
    with _raises_format_error(tmp_path / "m", "invalid array name"):
        save_model_dir(
            tmp_path / "m",
            metadata={},
            arrays={name: np.ones(1)},
            format_name=FORMAT,
            format_version=1,
        )


@pytest.mark.parametrize(("name", "version"), [("", 1), (FORMAT, 0), (FORMAT, True)])
def test_invalid_format_arguments_are_refused(tmp_path, name, version):
    with pytest.raises(ValueError, match="format"):
        save_model_dir(
            tmp_path / "m", metadata={}, arrays={}, format_name=name, format_version=version
        )


def test_refuses_to_replace_something_that_is_not_a_model(tmp_path):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match="not a model directory"):
        _save(precious)
    assert (precious / "thesis.tex").read_text() == "years of work"

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"):
        _save(a_file)
    assert sorted(os.listdir(tmp_path)) == ["file", "home"]


def test_an_empty_directory_is_replaced(tmp_path):
    (tmp_path / "model").mkdir()
    _save(tmp_path / "model", tag="new")
    assert _tag(tmp_path / "model") == "new"


# ----------------------------------------------------------------------- overwrite
def test_overwrite_replaces_the_model_and_cleans_up(tmp_path):
    target = tmp_path / "model"
    _save(target, tag="old")
    _save(target, tag="new")
    assert _tag(target) == "new"
    assert os.listdir(tmp_path) == ["model"]


def _loadable_or_recoverable(target: Path) -> str:
    """The tag of the model a user can get at ``target`` right now (maybe by recovery)."""
    if target.exists():
        return _tag(target)
    # (not loaded here: a load would roll the save back, see the crash test below)
    (aside,) = [p for p in target.parent.iterdir() if p.name.startswith(".old-model-")]
    return _tag(aside)


def test_overwrite_keeps_a_loadable_model_at_every_step(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    real_rename = os.rename
    seen = []

    def checking_rename(src, dst):
        seen.append(_loadable_or_recoverable(target))
        real_rename(src, dst)
        seen.append(_loadable_or_recoverable(target))

    monkeypatch.setattr(storage.os, "rename", checking_rename)
    _save(target, tag="new")
    monkeypatch.undo()

    # Two renames: old aside, new in. The old model is reachable until the new one is in.
    assert seen == ["old", "old", "old", "new"]
    assert _tag(target) == "new"
    assert os.listdir(tmp_path) == ["model"]


def test_a_failing_rename_rolls_back_to_the_previous_model(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    real_rename = os.rename

    def failing_rename(src, dst):
        if Path(src).name.startswith(".tmp-") and Path(dst) == target:
            raise OSError("disk on fire")
        real_rename(src, dst)

    monkeypatch.setattr(storage.os, "rename", failing_rename)
    with pytest.raises(OSError, match="disk on fire"):
        _save(target, tag="new")
    monkeypatch.undo()

    assert _tag(target) == "old"
    assert os.listdir(tmp_path) == ["model"]


def _crash_between_the_renames(target: Path, monkeypatch) -> Path:
    """Leave ``target`` as a process killed between the two renames of a save does."""
    real_rename = os.rename

    def crashing_rename(src, dst):
        # Every rename onto the target fails, including the rollback: from then on the
        # directory is exactly as a process killed between the two renames leaves it.
        if Path(dst) == target:
            raise OSError("killed")
        real_rename(src, dst)

    monkeypatch.setattr(storage.os, "rename", crashing_rename)
    with pytest.raises(OSError, match="killed") as info:
        _save(target, tag="new")
    monkeypatch.undo()
    assert "recover_model_dir" in "".join(getattr(info.value, "__notes__", []))
    assert not target.exists()
    (aside,) = [p for p in target.parent.iterdir() if p.name != target.name]
    assert aside.name.startswith(".old-model-")
    return aside


def test_a_crash_between_the_renames_is_rolled_back_by_the_next_load(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    _crash_between_the_renames(target, monkeypatch)
    assert _tag(target) == "old"  # the load restored the previous model
    assert os.listdir(tmp_path) == ["model"]


def test_recover_model_dir_rolls_back_on_demand(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    _crash_between_the_renames(target, monkeypatch)
    assert recover_model_dir(target) == target
    assert _tag(target) == "old"
    assert os.listdir(tmp_path) == ["model"]


def test_a_crash_in_a_read_only_folder_is_reported_with_the_copy(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    aside = _crash_between_the_renames(target, monkeypatch)

    def refused(src, dst):  # a read-only folder (chmod does not stop root, who runs CI)
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr(storage.os, "rename", refused)
    with _raises_format_error(target, "interrupted") as error:
        _load(target)
    assert str(aside) in str(error.value)


def test_the_next_save_removes_what_interrupted_saves_left(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    (tmp_path / ".tmp-model-0badcafe").mkdir()  # a save killed while writing
    (tmp_path / ".old-model-20240101T000000000000Z-0123abcd").mkdir()  # killed after
    (tmp_path / ".tmp-model-v2-0badcafe").mkdir()  # another model's: not touched
    _save(target, tag="new")
    assert sorted(os.listdir(tmp_path)) == [".tmp-model-v2-0badcafe", "model"]


def test_recover_without_anything_to_recover(tmp_path):
    _save(tmp_path / "model")
    assert recover_model_dir(tmp_path / "model") == tmp_path / "model"  # exists: no-op
    with _raises_format_error(tmp_path / "other", "no interrupted save"):
        recover_model_dir(tmp_path / "other")


def test_aside_copies_of_similarly_named_models_are_not_confused(tmp_path):
    (tmp_path / ".old-model-v2-20240101T000000000000Z-0123abcd").mkdir()
    with _raises_format_error(tmp_path / "model", "does not exist$"):
        _load(tmp_path / "model")


def test_a_reader_racing_a_save_gets_one_consistent_model(tmp_path, monkeypatch):
    target = tmp_path / "model"
    _save(target, tag="old")
    real_read_arrays = storage._read_arrays
    calls = []

    def read_arrays_during_a_save(path, manifest):
        if not calls:  # the old manifest was read; now the model is replaced
            _save(target, tag="new")
        calls.append(manifest.metadata["tag"])
        return real_read_arrays(path, manifest)

    monkeypatch.setattr(storage, "_read_arrays", read_arrays_during_a_save)
    assert _tag(target) == "new"
    assert calls == ["old", "new"]


def test_a_reader_between_the_two_renames_waits_for_the_new_model(tmp_path, monkeypatch):
    # The save stops between its renames until a reader has found the model set aside;
    # the reader goes on once the second rename is done: no timing decides the order.
    target = tmp_path / "model"
    _save(target, tag="old")
    real_rename, real_find_aside = os.rename, storage.find_aside_copies
    results: list[str] = []
    threads: list[threading.Thread] = []
    found_aside, renamed = threading.Event(), threading.Event()

    def find_aside_in_the_gap(path):
        found = real_find_aside(path)
        if threading.current_thread().name == "reader":
            found_aside.set()
            assert renamed.wait(timeout=60), "the save never made its second rename"
        return found

    def rename_with_a_reader(src, dst):
        real_rename(src, dst)
        if Path(src) == target:  # the old model was just set aside: start a reader now
            reader = threading.Thread(target=lambda: results.append(_tag(target)), name="reader")
            reader.start()
            threads.append(reader)
            assert found_aside.wait(timeout=60), "the reader never found the model set aside"
        elif Path(dst) == target:
            renamed.set()

    monkeypatch.setattr(storage, "find_aside_copies", find_aside_in_the_gap)
    monkeypatch.setattr(storage.os, "rename", rename_with_a_reader)
    _save(target, tag="new")
    for thread in threads:
        thread.join(timeout=60)
    assert found_aside.is_set() and results == ["new"]


# ----------------------------------------------------------------- refused on load
def test_missing_directory_and_files(tmp_path):
    with _raises_format_error(tmp_path / "nope", "does not exist"):
        _load(tmp_path / "nope")

    (tmp_path / "file").write_text("x")
    with _raises_format_error(tmp_path / "file", "not a model directory"):
        _load(tmp_path / "file")

    (tmp_path / "empty").mkdir()
    with _raises_format_error(tmp_path / "empty", "model.json is missing"):
        _load(tmp_path / "empty")

    target = _save(tmp_path / "model")
    (target / "arrays.npz").unlink()
    with _raises_format_error(target, "arrays.npz is missing"):
        _load(target)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b'{"format_name": "test-model", "format_', "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
        (b'{"format_name": "test-model", "format_version": NaN}', "not valid JSON"),
        (b"[1, 2]", "does not hold a JSON object"),
        (b'{"format_name": "test-model"}', "'format_version' is missing"),
    ],
)
def test_malformed_manifest(tmp_path, content, match):
    target = _save(tmp_path / "model")
    (target / "model.json").write_bytes(content)
    with _raises_format_error(target, match):
        _load(target)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.update(format_version=True), "'format_version' is missing or not"),
        (lambda d: d.update(created_utc="yesterday"), "invalid created_utc"),
        (lambda d: d.update(arrays_sha256="abc"), "not a SHA-256"),
        (lambda d: d.update(arrays_sha256="0" * 64), "does not match the checksum"),
        (lambda d: d["arrays"]["w"].update(shape=[4]), r"manifest says \(4,\)"),
        (lambda d: d["arrays"]["w"].update(shape=[-1]), "non-negative"),
        (lambda d: d["arrays"]["w"].update(dtype="<i8"), "manifest says"),
        (lambda d: d["arrays"]["w"].update(dtype="|O"), "holds Python objects"),
        (lambda d: d["arrays"]["w"].update(dtype="f8,i4"), "structured dtype"),
        (lambda d: d["arrays"]["w"].update(dtype="no-such-type"), "invalid dtype"),
        (
            lambda d: d["arrays"].update(extra={"shape": [], "dtype": "<f8"}),
            "missing: \\['extra'\\]",
        ),
        (lambda d: d.update(arrays={}), "unexpected: \\['w'\\]"),
        (lambda d: d.update(metadata=[1]), "'metadata' is missing or not"),
    ],
)
def test_tampered_manifest(tmp_path, edit, match):
    target = _save(tmp_path / "model")
    _edit_manifest(target, edit)
    with _raises_format_error(target, match):
        _load(target)


def test_wrong_format_name(tmp_path):
    target = _save(tmp_path / "model")
    with _raises_format_error(target, "format 'test-model', not 'other'"):
        load_model_dir(target, format_name="other", max_format_version=1)


def test_newer_format_version_asks_for_an_upgrade(tmp_path):
    target = _save(tmp_path / "model", version=3)
    with _raises_format_error(target) as info:
        _load(target, max_version=2)
    assert str(info.value) == (
        f"{target} was written by vrvm {vrvm.__version__} with format version 3 of "
        f"'{FORMAT}'; this vrvm ({vrvm.__version__}) reads versions up to 2: upgrade vrvm"
    )
    assert _load(target, max_version=3)[0] == {"tag": "a"}


def test_truncated_npz(tmp_path):
    target = _save(tmp_path / "model")
    data = (target / "arrays.npz").read_bytes()
    (target / "arrays.npz").write_bytes(data[: len(data) // 2])
    with _raises_format_error(target, "truncated, damaged or was modified"):
        _load(target)

    # Even with a matching checksum, a truncated archive is reported, not crashed on.
    _replace_npz(target, data[: len(data) // 2])
    with _raises_format_error(target, "cannot be read"):
        _load(target)


def test_tampered_npz_bytes(tmp_path):
    target = _save(tmp_path / "model")
    data = bytearray((target / "arrays.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (target / "arrays.npz").write_bytes(bytes(data))
    with _raises_format_error(target, "checksum"):
        _load(target)


@pytest.mark.parametrize("claimed_dtype", ["<f8", "|O"])
def test_pickle_bearing_npz_is_refused_without_unpickling(tmp_path, claimed_dtype):
    target = _save(tmp_path / "model")
    payload = np.empty(1, dtype=object)
    payload[0] = _Canary()
    malicious = _npz_bytes({"w": _npy_bytes(payload, allow_pickle=True)})
    _replace_npz(target, malicious, {"w": {"shape": [1], "dtype": claimed_dtype}})
    _UNPICKLED.clear()

    with _raises_format_error(target):
        _load(target)
    assert _UNPICKLED == []


def test_structured_array_in_npz_is_refused(tmp_path):
    target = _save(tmp_path / "model")
    structured = np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")])
    _replace_npz(
        target,
        _npz_bytes({"w": _npy_bytes(structured)}),
        {"w": {"shape": [3], "dtype": "<f8"}},
    )
    with _raises_format_error(target, "structured dtype"):
        _load(target)


def test_npy_instead_of_npz_is_refused(tmp_path):
    target = _save(tmp_path / "model")
    _replace_npz(target, _npy_bytes(np.zeros(3)))
    with _raises_format_error(target, "not an .npz archive"):
        _load(target)
