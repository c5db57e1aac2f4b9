"""The command line when it cannot write: one line naming the path, why and what to do.

The tests run as root, which ignores permission bits: an unwritable place is a path
under a regular file, a full disk an fsync that raises ENOSPC.
"""

from __future__ import annotations

import errno
import io

import pytest

from vrvm.cli import _one_line, main
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store import durable

TRAIN_FAST = ["--members", "1", "--widths", "1.5", "--max-basis", "50", "--seed", "0", "-q"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def the_error(status: int, out: str, err: str) -> str:
    """The one error line, checked: exit status 1, no traceback."""
    assert status == 1 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("vrvm: error: cannot write ")
    return lines[0]


@pytest.fixture
def afile(tmp_path):
    path = tmp_path / "afile"
    path.write_text("not a folder")
    return path


@pytest.fixture(scope="module")
def trips_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("trips") / "trips.csv"
    status, _, err = run("demo-data", "--out", str(path), "--n", "400")
    assert status == 0, err
    return path


@pytest.fixture
def full_disk(monkeypatch):
    """Every atomic write fails as on a full disk (when its content is flushed)."""

    def no_space(path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(durable, "_fsync_file", no_space)


def test_demo_data_into_a_folder_that_is_a_file(afile):
    out = afile / "trips.csv"
    line = the_error(*run("demo-data", "--out", str(out), "--n", "50"))
    assert line == (
        f"vrvm: error: cannot write {out}: {afile} is a file, not a folder; choose another --out"
    )
    assert afile.read_text() == "not a folder"


def test_demo_data_deeper_under_a_file(afile):
    out = afile / "a" / "b" / "trips.parquet"
    line = the_error(*run("demo-data", "--out", str(out), "--n", "50"))
    assert line == (
        f"vrvm: error: cannot write {out}: {afile} is a file, not a folder; choose another --out"
    )


def test_train_into_a_folder_under_a_file(trips_csv, afile):
    out = afile / "model"
    line = the_error(*run("train", str(trips_csv), "--out", str(out), *TRAIN_FAST))
    assert line == (
        f"vrvm: error: cannot write {out}: {afile} is a file, not a folder; choose another --out"
    )
    assert afile.read_text() == "not a folder"


def test_train_refuses_an_impossible_out_before_fitting(trips_csv, afile, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the model was fitted before --out was checked")

    monkeypatch.setattr(TravelTimeModel, "fit", no_fit)
    out = afile / "deeper" / "model"
    line = the_error(*run("train", str(trips_csv), "--out", str(out), *TRAIN_FAST))
    assert line.startswith(f"vrvm: error: cannot write {out}: ")
    assert line.endswith("choose another --out")


def test_demo_data_on_a_full_disk_names_the_file(tmp_path, full_disk):
    out = tmp_path / "trips.csv"
    line = the_error(*run("demo-data", "--out", str(out), "--n", "50"))
    assert line == (
        f"vrvm: error: cannot write {out}: no space left on device; "
        "free space or choose another --out"
    )
    assert list(tmp_path.iterdir()) == []  # no partial file, no temporary


def test_train_on_a_full_disk_names_the_model_directory(trips_csv, tmp_path, full_disk):
    out = tmp_path / "model"
    line = the_error(*run("train", str(trips_csv), "--out", str(out), *TRAIN_FAST))
    # the failing write was inside a temporary sibling: the line names --out instead
    assert line == (
        f"vrvm: error: cannot write {out}: no space left on device; "
        "free space or choose another --out"
    )
    assert list(tmp_path.iterdir()) == []


def test_permission_denied_says_so(tmp_path, monkeypatch):
    def denied(path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(durable, "_fsync_file", denied)
    out = tmp_path / "trips.csv"
    line = the_error(*run("demo-data", "--out", str(out), "--n", "50"))
    assert line == f"vrvm: error: cannot write {out}: permission denied; choose another --out"


def test_debug_shows_the_traceback_and_ends_with_the_line(afile):
    out = afile / "trips.csv"
    status, _, err = run("--debug", "demo-data", "--out", str(out), "--n", "50")
    assert status == 1
    assert "Traceback" in err and "StorageError" in err
    assert err.strip().splitlines()[-1] == (
        f"vrvm: error: cannot write {out}: {afile} is a file, not a folder; choose another --out"
    )


def test_one_line_of_storage_and_of_read_errors():
    read_only = OSError(errno.EROFS, "Read-only file system", "/mnt/ro/models")
    assert _one_line(read_only) == (
        "cannot write /mnt/ro/models: read-only file system; choose a writable folder"
    )
    assert _one_line(read_only, "/mnt/ro/models/m") == (
        "cannot write /mnt/ro/models/m: read-only file system; choose another --out"
    )
    io_error = OSError(errno.EIO, "Input/output error", "out/m/arrays.npz")
    assert _one_line(io_error, "out/m") == (
        "cannot write out/m: input/output error; choose another --out"
    )
    # reading is not writing: a missing input keeps its plain message
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "in.csv")
    assert _one_line(missing, "out.csv") == "in.csv: No such file or directory"
    missing_model = FileNotFoundError(errno.ENOENT, "No such file or directory", "m/model.json")
    assert _one_line(missing_model, "m") == "m/model.json: No such file or directory"
