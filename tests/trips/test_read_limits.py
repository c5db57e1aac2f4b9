"""Tests of the reader's resource limits: wide headers and compressed data that expands too far."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
from pathlib import Path

import pytest

from vrvm.trips import TripFileError, read_trips
from vrvm.trips._limits import MAX_COLUMNS
from vrvm.trips.reader import ReadLimits, check_expansion, read_layout, read_rows

HEADER = (
    "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    "dropoff_latitude,dropoff_longitude\n"
)
ROW = "2016-01-01 08:00:00,600,41.88,-87.63,41.90,-87.65\n"


def wide_csv(n_columns: int) -> bytes:
    names = ",".join(f"c{i}" for i in range(n_columns))
    return (names + "\n" + ",".join("1" for _ in range(n_columns)) + "\n").encode()


def write_gzip_bomb(path: Path, n_bytes: int) -> Path:
    """A valid trip header, then ``n_bytes`` of one row repeated, gzipped in 1 MiB steps."""
    block = ROW.encode() * (2**20 // len(ROW))
    with gzip.GzipFile(path, "wb") as fh:
        fh.write(HEADER.encode())
        for _ in range(n_bytes // len(block)):
            fh.write(block)
    return path


@pytest.mark.parametrize("reader", [read_trips, read_layout, lambda d, **k: read_rows(d, [2], **k)])
def test_a_header_with_100k_columns_is_refused_before_parsing(tmp_path, reader):
    path = tmp_path / "wide.csv"
    path.write_bytes(wide_csv(100_000))
    with pytest.raises(TripFileError, match=r"wide\.csv: its header has 100,000 columns") as info:
        reader(path)
    assert f"limit of {MAX_COLUMNS:,}" in str(info.value)
    # Bytes and compressed text are checked alike.
    with pytest.raises(TripFileError, match=r"w\.csv\.gz: its header has 100,000 columns"):
        reader(gzip.compress(wide_csv(100_000)), source="w.csv.gz")


def test_the_column_limit_is_configurable_and_counts_outside_quotes():
    text = b'a,"b,c,d",e,f\n1,2,3,4\n'
    with pytest.raises(TripFileError, match=r"has 4 columns, more than the limit of 3"):
        read_rows(text, [2], limits=ReadLimits(max_columns=3))
    assert read_rows(text, [2], limits=ReadLimits(max_columns=4))["row"].tolist() == [2]


def test_a_header_without_a_line_break_in_the_first_mib_is_refused():
    long_line = b"x" * (2**20 + 10) + b"\n1\n"
    with pytest.raises(TripFileError, match=r"long\.csv: its first line \(the header\) does not "):
        read_trips(long_line, source="long.csv")
    # A header cut off in the first MiB still shows that it is too wide.
    endless = b"a," * 2**20
    with pytest.raises(TripFileError, match=r"at least 524,289 columns in its first 1 MB"):
        read_trips(endless, source="endless.csv")


def test_a_gzip_bomb_is_refused_on_a_path_and_on_bytes_naming_the_ratio(tmp_path):
    bomb = write_gzip_bomb(tmp_path / "bomb.csv.gz", 200 * 2**20)
    assert bomb.stat().st_size < 2 * 2**20  # 200 MiB of text in well under 2 MiB
    with pytest.raises(TripFileError, match=r"bomb\.csv\.gz expands \d[\d,]*-fold .* limit of 100"):
        read_trips(bomb)
    with pytest.raises(TripFileError, match=r"up\.gz expands \d[\d,]*-fold"):
        read_trips(bomb.read_bytes(), source="up.gz")
    with pytest.raises(TripFileError, match=r"-fold"):
        check_expansion(bomb)


def test_the_size_cap_names_the_size(tmp_path):
    data = gzip.compress((HEADER + ROW * 40_000).encode())  # about 2 MB of text
    limits = ReadLimits(max_expanded_bytes=2**20)
    with pytest.raises(TripFileError, match=r"t\.csv\.gz expands to more than 1 MB when"):
        read_trips(data, source="t.csv.gz", limits=limits)
    with pytest.raises(TripFileError, match=r"expands to more than 1 MB"):
        check_expansion(data, limits, name="t.csv.gz")
    assert check_expansion(data) == len(HEADER) + 40_000 * len(ROW)


@pytest.mark.parametrize("compress", ["gzip", "bz2", "xz", "zip"])
def test_normal_compressed_files_still_read(tmp_path, compress):
    text = (HEADER + ROW * 2000).encode()
    if compress == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("trips.csv", text)
        data = buffer.getvalue()
    else:
        data = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[compress](text)
    path = tmp_path / f"trips.csv.{compress}"
    path.write_bytes(data)
    # Small files compress very well (here over 100-fold for xz): the ratio is only
    # judged past the first 100 MiB.
    for source in (path, data):
        trips, report = read_trips(source)  # identical rows: kept once, as duplicates
        assert report.n_input == 2000 and len(trips) == 1
    assert check_expansion(path) == len(text)
    assert read_rows(path, [3])["trip_seconds"].tolist() == ["600"]


def test_limits_are_checked():
    with pytest.raises(ValueError, match="max_columns must be a positive integer"):
        ReadLimits(max_columns=0)
    with pytest.raises(ValueError, match="max_ratio must be a number above 1"):
        ReadLimits(max_ratio=0.5)
    with pytest.raises(TypeError, match="limits must be a ReadLimits"):
        read_trips(HEADER.encode() + ROW.encode(), limits={"max_columns": 3})
