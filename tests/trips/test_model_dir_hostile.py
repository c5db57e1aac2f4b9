"""Hostile model directories are refused, naming the file, before they cost time or memory.

Issue 32, item 10: a deflate bomb in ``arrays.npz``, files that are symbolic links to
``/dev/zero`` or FIFOs, a ``.npy`` header claiming 10^12 elements, and weights of 1e300
with a matching checksum. Each directory is built for real in ``tmp_path`` (small
versions: a member of a few KB that claims megabytes proves the same refusal as one that
claims gigabytes); the figures at full size are in BENCHMARKS.md
(``benchmarks/bench_hostile_model.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.trips.model_helpers import _load, _raises_format_error, _save
from vrvm import TravelTimeModel
from vrvm.cli import main
from vrvm.trips.model.model_format import FORMAT_NAME, FORMAT_VERSION
from vrvm.trips.store.model_dir import MAX_MANIFEST_BYTES, save_model_dir
from vrvm.trips.synthetic import synthetic_city

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and symlinks: POSIX")
FIFO_DEADLINE_S = 60.0  # a reader that blocked is released after this, failing the test


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _npy_claiming(shape: tuple[int, ...], data: bytes, descr: str = "<f8") -> bytes:
    """A .npy member whose header claims ``shape`` but which holds only ``data``."""
    buffer = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


def _npz(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def _plant_npz(model_dir: Path, payload: bytes, arrays: dict | None = None) -> None:
    """Replace arrays.npz and fix the manifest's checksum, as a deliberate attacker would."""
    (model_dir / "arrays.npz").write_bytes(payload)
    manifest_path = model_dir / "model.json"
    document = json.loads(manifest_path.read_text())
    document["arrays_sha256"] = hashlib.sha256(payload).hexdigest()
    if arrays is not None:
        document["arrays"] = arrays
    manifest_path.write_text(json.dumps(document))


# ---------------------------------------------------------------------- arrays.npz


def test_a_deflate_bomb_is_refused_without_decompressing(tmp_path):
    # 16 MiB of zeros compress to about 16 KB; the manifest agrees with the claim
    target = _save(tmp_path / "model")
    n = 2**21
    bomb = _npz({"w": _npy(np.zeros(n))}, compression=zipfile.ZIP_DEFLATED)
    assert len(bomb) < 100_000
    _plant_npz(target, bomb, {"w": {"shape": [n], "dtype": "<f8"}})
    with _raises_format_error(target / "arrays.npz", "compressed"):
        _load(target)


def test_a_header_claiming_more_elements_than_the_file_holds_is_refused(tmp_path):
    target = _save(tmp_path / "model")
    huge = _npz({"w": _npy_claiming((10**12,), b"\0" * 24)})
    # the manifest says 3 values: the header disagrees before anything is allocated
    _plant_npz(target, huge)
    with _raises_format_error(target / "arrays.npz", r"shape \(1000000000000,\)"):
        _load(target)
    # both claim 10^12 values: more than any machine's memory, refused from the manifest
    _plant_npz(target, huge, {"w": {"shape": [10**12], "dtype": "<f8"}})
    with _raises_format_error(target / "model.json", "more than this machine's memory"):
        _load(target)


def test_element_counts_are_checked_against_the_bytes_held(tmp_path):
    # header and manifest agree on 1,000 values, the member holds 3
    target = _save(tmp_path / "model")
    short = _npz({"w": _npy_claiming((1000,), np.zeros(3).tobytes())})
    _plant_npz(target, short, {"w": {"shape": [1000], "dtype": "<f8"}})
    with _raises_format_error(target / "arrays.npz", "holds 24 bytes of data"):
        _load(target)


def test_an_archive_larger_than_its_arrays_need_is_refused_before_hashing(tmp_path):
    target = _save(tmp_path / "model")
    padded = (target / "arrays.npz").read_bytes() + b"\0" * 2**20
    _plant_npz(target, padded)
    with _raises_format_error(target / "arrays.npz", "more than the"):
        _load(target)


def test_a_saved_model_still_loads(tmp_path):
    target = _save(tmp_path / "model")
    metadata, arrays = _load(target)
    assert metadata == {"tag": "a"}
    np.testing.assert_array_equal(arrays["w"], np.full(3, ord("a"), dtype=np.float64))


# ---------------------------------------------------------------------- file types


@posix_only
@pytest.mark.parametrize("name", ["arrays.npz", "model.json"])
def test_a_symbolic_link_to_dev_zero_is_refused(tmp_path, name):
    target = _save(tmp_path / "model")
    (target / name).unlink()
    (target / name).symlink_to("/dev/zero")
    with _raises_format_error(target / name, "symbolic link"):
        _load(target)


@posix_only
def test_a_symbolic_link_to_a_regular_file_is_refused_too(tmp_path):
    target = _save(tmp_path / "model")
    elsewhere = tmp_path / "elsewhere.npz"
    (target / "arrays.npz").rename(elsewhere)
    (target / "arrays.npz").symlink_to(elsewhere)
    with _raises_format_error(target / "arrays.npz", "symbolic link"):
        _load(target)


@posix_only
@pytest.mark.parametrize("name", ["arrays.npz", "model.json"])
def test_a_fifo_is_refused_without_blocking(tmp_path, name):
    target = _save(tmp_path / "model")
    fifo = target / name
    fifo.unlink()
    os.mkfifo(fifo)
    loaded = threading.Event()
    rescued = []

    def rescue():
        # Should the reader block on the FIFO, open its other end after the deadline:
        # the reader then returns and the test fails instead of hanging.
        if not loaded.wait(FIFO_DEADLINE_S):
            rescued.append(True)
            with open(fifo, "wb"):
                pass

    rescuer = threading.Thread(target=rescue, daemon=True)
    rescuer.start()
    try:
        with _raises_format_error(fifo, "FIFO"):
            _load(target)
    finally:
        loaded.set()
        rescuer.join()
    assert not rescued, "reading the model blocked on the FIFO"


def test_a_directory_in_place_of_a_file_is_refused(tmp_path):
    target = _save(tmp_path / "model")
    (target / "arrays.npz").unlink()
    (target / "arrays.npz").mkdir()
    with _raises_format_error(target / "arrays.npz", "a directory, not a regular file"):
        _load(target)


def test_an_oversized_manifest_is_refused_unread(tmp_path):
    target = _save(tmp_path / "model")
    with open(target / "model.json", "r+b") as f:  # sparse: takes no disk space
        f.truncate(MAX_MANIFEST_BYTES + 1)
    with _raises_format_error(target / "model.json", "more than"):
        _load(target)


# ---------------------------------------------------------------------- parameters


@pytest.fixture(scope="module")
def travel_model_dir(tmp_path_factory):
    model = TravelTimeModel(n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0)
    model.fit(synthetic_city(800, seed=0))
    return model.save(tmp_path_factory.mktemp("travel") / "model")


def _tampered(travel_model_dir: Path, target: Path, edit) -> Path:
    """The model with ``edit(arrays)`` applied, saved with a matching checksum."""
    from vrvm.trips.store.model_dir import load_model_dir

    metadata, arrays = load_model_dir(
        travel_model_dir, format_name=FORMAT_NAME, max_format_version=FORMAT_VERSION
    )
    edit(arrays)
    return save_model_dir(
        target,
        metadata=metadata,
        arrays=arrays,
        format_name=FORMAT_NAME,
        format_version=FORMAT_VERSION,
    )


def test_weights_that_overflow_are_refused(travel_model_dir, tmp_path):
    def huge_weights(arrays):
        arrays["m000__mean"] = np.full_like(arrays["m000__mean"], 1e300)

    target = _tampered(travel_model_dir, tmp_path / "model", huge_weights)
    with _raises_format_error(target, "does not hold a usable TravelTimeModel"):
        TravelTimeModel.load(target)


def test_weights_that_predict_absurd_times_are_refused(travel_model_dir, tmp_path):
    # finite, no overflow: log-seconds of 40 are 7e17 s, beyond 1000 x any trip seen
    def absurd_weights(arrays):
        arrays["m001__mean"] = arrays["m001__mean"] + 40.0 / len(arrays["m001__mean"])
        arrays["m001__mean"][0] += 40.0

    target = _tampered(travel_model_dir, tmp_path / "model", absurd_weights)
    with _raises_format_error(target, "predicts medians"):
        TravelTimeModel.load(target)


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_non_finite_parameters_are_refused(travel_model_dir, tmp_path, value):
    def poison(arrays):
        arrays["m000__coef_"][3] = value

    target = _tampered(travel_model_dir, tmp_path / "model", poison)
    with _raises_format_error(target / "arrays.npz", "'m000__coef_' holds 1 non-finite"):
        TravelTimeModel.load(target)


def test_an_untampered_model_loads_and_predicts(travel_model_dir):
    model = TravelTimeModel.load(travel_model_dir)
    assert np.all(np.isfinite(model.predict(synthetic_city(20, seed=1))))


# ---------------------------------------------------------------------- command line


def test_the_cli_names_the_file_without_a_traceback(travel_model_dir, tmp_path):
    target = _tampered(travel_model_dir, tmp_path / "model", lambda a: a["m000__mean"].fill(1e300))
    queries = tmp_path / "queries.csv"
    synthetic_city(5, seed=1).to_csv(queries, index=False)
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(
        ["predict", str(target), str(queries), "--out", "-"], stdout=stdout, stderr=stderr
    )
    assert status == 1
    message = stderr.getvalue()
    assert message.startswith("vrvm: error: ") and str(target) in message, message
    assert "Traceback" not in message and stdout.getvalue() == ""
