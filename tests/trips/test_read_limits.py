"""Tests of the reader's resource limits: wide headers, compressed data that expands too
far, the rows limit; and of reading in batches (bounded memory) with the results of a
whole-file read, ``vrvm inspect`` reading only its preview and ``vrvm predict`` streaming."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
import zipfile
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vrvm.cli import _reading as cli_reading
from vrvm.cli import main
from vrvm.services.analyst import uploads
from vrvm.trips import TimeFormatError, TripFileError, read_trips, synthetic_city
from vrvm.trips.files import _batches, _source
from vrvm.trips.files import cleaning as cleaning_module
from vrvm.trips.files._limits import MAX_COLUMNS
from vrvm.trips.files._survey import UnitStats
from vrvm.trips.files.cleaning import combine_reports
from vrvm.trips.files.formats import unix_unit
from vrvm.trips.files.reader import ReadLimits, check_expansion, iter_trips, read_layout, read_rows

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


@pytest.mark.parametrize("compress", ["gzip", "bz2", "xz"])
def test_compressed_data_damaged_after_the_header_is_a_trip_file_error(compress):
    # Cut off past the first MiB (the header check reads that much): the damage is
    # found while the rows are read, and said as for the header, naming the file.
    text = synthetic_csv(60_000)
    data = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[compress](text)
    cut = data[: len(data) // 2]
    for reader in (read_trips, lambda d, **k: read_rows(d, [59_000], **k)):
        with pytest.raises(TripFileError, match=r"^cut\.csv: the compressed data is damaged"):
            reader(cut, source="cut.csv")
    with pytest.raises(TripFileError, match=r"^cut\.csv: the compressed data is damaged"):
        check_expansion(cut, name="cut.csv")
    # Several streams one after the other are one file, as gzip and bzip2 write them.
    if compress != "xz":
        compressor = {"gzip": gzip.compress, "bz2": bz2.compress}[compress]
        two = compressor(text[:1000]) + compressor(text[1000:])
        assert read_trips(two)[1].n_input == 60_000
        assert check_expansion(two) == len(text)


def test_limits_are_checked():
    with pytest.raises(ValueError, match="max_columns must be a positive integer"):
        ReadLimits(max_columns=0)
    with pytest.raises(ValueError, match="max_ratio must be a number above 1"):
        ReadLimits(max_ratio=0.5)
    with pytest.raises(TypeError, match="limits must be a ReadLimits"):
        read_trips(HEADER.encode() + ROW.encode(), limits={"max_columns": 3})


# ---------------------------------------------------------------------------------
# Rows limit, reading in batches, vrvm inspect and vrvm predict (issue 12, part 2)
# ---------------------------------------------------------------------------------
SMALL = ReadLimits(batch_bytes=4096)  # batches of some 50 rows: many per test file
DAY_FIRST_ROLES = {
    "start_date": "pickup_date",
    "start_clock": "pickup_time",
    "origin_lat": "plat",
    "origin_lon": "plon",
    "dest_lat": "dlat",
    "dest_lon": "dlon",
    "travel_time_s": "secs",
}


def synthetic_csv(n_rows: int, seed: int = 0) -> bytes:
    return synthetic_city(n_rows, seed=seed).to_csv(index=False).encode()


def count_parsed_rows(monkeypatch) -> list[int]:
    """Rows pandas returns per batch, recorded as the reader parses them."""
    parsed: list[int] = []
    original = _batches.parse_block

    def counting(block, *args, **kwargs):
        frame = original(block, *args, **kwargs)
        parsed.append(len(frame))
        return frame

    monkeypatch.setattr(_batches, "parse_block", counting)
    return parsed


def as_compared(result):
    """What must be equal between two reads: the frame, its attrs and the report."""
    trips, report = result
    dropped = {reason: rows.tolist() for reason, rows in report.dropped_rows.items()}
    return trips, dict(trips.attrs), report.to_dict(), dropped


def assert_same_read(first, second) -> None:
    a, b = as_compared(first), as_compared(second)
    pd.testing.assert_frame_equal(a[0], b[0], check_exact=True)
    assert a[1:] == b[1:]


def test_the_rows_limit_stops_the_read_at_the_first_row_beyond_it(monkeypatch):
    # 5,000 rows, a row with too many fields at row 4,000: read whole, the file fails
    # there; with a limit of 1,000 rows the read stops long before it.
    lines = synthetic_csv(5000).decode().splitlines(keepends=True)
    lines[4000] = lines[4000].rstrip("\n") + ",1\n"
    data = gzip.compress("".join(lines).encode())
    with pytest.raises(TripFileError, match="Expected 6 fields in line 4001, saw 7"):
        read_trips(data, source="t.csv.gz")
    parsed = count_parsed_rows(monkeypatch)
    limits = ReadLimits(max_data_rows=1000, batch_bytes=4096)
    with pytest.raises(TripFileError, match=r"t\.csv\.gz has more than 1,000 data rows") as info:
        read_trips(data, source="t.csv.gz", limits=limits)
    assert info.value.limit == "max_data_rows"
    assert len(parsed) > 5 and sum(parsed) == 1001  # never a row more than the limit + 1
    # A preview within the limit reads; so does a file at the limit.
    assert len(read_trips(data, limits=limits, max_rows=1000)[0]) == 1000
    at_limit = synthetic_csv(1000)
    assert read_trips(at_limit, limits=ReadLimits(max_data_rows=1000))[1].n_input == 1000


def test_the_rows_limit_holds_for_parquet_from_its_footer(tmp_path):
    path = tmp_path / "t.parquet"
    synthetic_city(3000, seed=1).to_parquet(path)
    with pytest.raises(TripFileError, match=r"more than 2,000 data rows") as info:
        read_trips(path, limits=ReadLimits(max_data_rows=2000))
    assert info.value.limit == "max_data_rows"
    with pytest.raises(TripFileError, match=r"more than 2,000 data rows"):
        iter_trips(path, limits=ReadLimits(max_data_rows=2000), cleaning=_PER_ROW)
    assert len(read_trips(path, limits=ReadLimits(max_data_rows=3000))[0]) == 3000


def test_the_upload_rows_limit_comes_from_the_environment(monkeypatch):
    data = synthetic_csv(5000)
    monkeypatch.delenv(uploads.MAX_UPLOAD_ROWS_ENV, raising=False)
    assert uploads.upload_limits().max_data_rows == uploads.DEFAULT_MAX_UPLOAD_ROWS == 2_000_000
    assert uploads.read_upload("t.csv", data).ok
    monkeypatch.setenv("VRVM_MAX_UPLOAD_ROWS", "1000")
    assert uploads.upload_limits().max_data_rows == 1000
    refused = uploads.read_upload("t.csv", gzip.compress(data))
    assert not refused.ok and "more than 1,000 data rows" in refused.error
    monkeypatch.setenv("VRVM_MAX_UPLOAD_ROWS", "5000")
    assert uploads.read_upload("t.csv", data).ok
    monkeypatch.setenv("VRVM_MAX_UPLOAD_ROWS", "lots")
    wrong = uploads.read_upload("t.csv", data)
    assert not wrong.ok and "$VRVM_MAX_UPLOAD_ROWS must be an integer, got 'lots'" in wrong.error


def _csv_with(column: dict[str, list], n_rows: int = 3000) -> bytes:
    trips = synthetic_city(n_rows, seed=4)
    frame = pd.DataFrame(
        {
            "plat": trips["origin_lat"].round(5),
            "plon": trips["origin_lon"].round(5),
            "dlat": trips["dest_lat"].round(5),
            "dlon": trips["dest_lon"].round(5),
            "secs": trips["travel_time_s"],
            **column,
        }
    )
    return frame.to_csv(index=False).encode()


def day_first_late(n_rows: int = 3000) -> bytes:
    """Dates that read both ways, but for the very last one (a day above 12)."""
    days = [f"{i % 12 + 1}/{i % 11 + 1}/2016" for i in range(n_rows)]
    days[-1] = "25/3/2016"
    clocks = [f"{i * 7 % 24:02d}:{i * 13 % 60:02d}" for i in range(n_rows)]
    return _csv_with({"pickup_date": days, "pickup_time": clocks}, n_rows)


def test_day_first_dates_told_apart_only_by_the_last_batch_read_as_a_whole(monkeypatch):
    data = day_first_late()
    options = {"column_map": DAY_FIRST_ROLES, "tz": "Europe/Paris", "row_numbers": True}
    whole = read_trips(data, **options)
    assert whole[1].notes == {"start_date": "'pickup_date': day-first dates"}
    parsed = count_parsed_rows(monkeypatch)
    batched = read_trips(data, limits=SMALL, **options)
    assert len(parsed) > 20  # the first batches alone cannot tell day from month
    assert_same_read(whole, batched)
    assert str(batched[0]["start_time"].iloc[1]) == "2016-02-02 07:13:00+01:00"  # 2 Feb
    # Cut before the last row, the file is ambiguous, batched or not, with one message.
    head = b"".join(data.splitlines(keepends=True)[:-1])
    with pytest.raises(TimeFormatError) as whole_error:
        read_trips(head, **options)
    with pytest.raises(TimeFormatError) as batched_error:
        read_trips(head, limits=SMALL, **options)
    assert str(whole_error.value) == str(batched_error.value)
    assert "dates such as '1/1/2016' read both day-first" in str(batched_error.value)


def _tricky_files() -> dict[str, tuple[bytes, dict]]:
    trips = synthetic_city(3000, seed=3)
    base = trips.drop(columns="start_time")
    month_first = [f"{i % 12 + 1}/{i % 12 + 1}/2016 10:{i % 60:02d}" for i in range(3000)]
    month_first[-2] = "3/25/2016 11:00"
    unix_ms = (trips["start_time"].astype("int64") // 10**6).astype(str)
    unix_ms.iloc[::2] = (trips["start_time"].astype("int64") // 10**9).iloc[::2].astype(str)
    mixed = (trips["start_time"].astype("int64") // 10**9).astype(str)
    mixed.iloc[-5] = "2024-03-05 10:00:00"  # text in a column of numbers, at the end
    lat = trips["origin_lat"].astype(str)
    lat.iloc[-3] = "n/a-ish"
    hours = [f"{i * 0.37 % 24:.2f}" for i in range(3000)]
    hours[-4:] = ["10:30"] * 4
    dates = [f"2016-03-{i % 28 + 1:02d}" for i in range(3000)]
    return {
        "month_first_late": (base.assign(start_time=month_first).to_csv(index=False), {}),
        "seconds_and_milliseconds": (base.assign(start_time=unix_ms).to_csv(index=False), {}),
        "numbers_then_text": (
            base.assign(start_time=mixed, origin_lat=lat).to_csv(index=False),
            {"require_travel_time": False},
        ),
        "clock_hours_then_hh_mm": (
            _csv_with({"pickup_date": dates, "pickup_time": hours}).decode(),
            {"column_map": DAY_FIRST_ROLES},
        ),
    }


@pytest.mark.parametrize("name", list(_tricky_files()))
def test_batched_reads_equal_whole_reads_on_tricky_files(name):
    text, options = _tricky_files()[name]
    data = text.encode()
    whole = read_trips(data, row_numbers=True, **options)
    assert_same_read(whole, read_trips(data, row_numbers=True, limits=SMALL, **options))


def test_batched_reads_equal_whole_reads_on_the_shared_samples(shared_data):
    for name in ("chicago_taxi_trips.csv", "sf_bikeshare_2019-02_partial.csv"):
        path = shared_data(name)
        whole = read_trips(path, row_numbers=True)
        batched = read_trips(path, row_numbers=True, limits=ReadLimits(batch_bytes=2**16))
        assert_same_read(whole, batched)


def random_csv(rng: np.random.Generator, n_rows: int) -> bytes:
    """A CSV whose text fields hold delimiters, quotes, line breaks and stray quotes."""
    pieces = ["plain", "with, comma", "two\nlines", 'say "hi"', "x\r\ny", "", " spaced"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["a", "note", "b"])
    for i in range(n_rows):
        note = pieces[rng.integers(len(pieces))]
        writer.writerow([i, note, rng.integers(100)])
        if rng.random() < 0.05:
            out.write(f'{i},5" screen,{i}\n')  # a quote inside an unquoted field is literal
        if rng.random() < 0.03:
            out.write("\n")
    return out.getvalue().encode()


@pytest.mark.parametrize("seed", range(3))
def test_batches_are_cut_where_pandas_ends_a_record(seed):
    rng = np.random.default_rng(seed)
    data = random_csv(rng, 1500)
    whole = pd.read_csv(io.BytesIO(data), dtype=str, **_batches.CSV_OPTIONS)
    for batch_bytes in (97, 1024, 5000):
        src = _source.open_source(data, "r.csv", ReadLimits(batch_bytes=batch_bytes))
        frames = list(_batches.csv_batches(src, ",", dtype=str))
        assert len(frames) > 2
        assert frames[0][1] == 2  # the row number of the first row: line 2
        joined = pd.concat([frame for frame, _ in frames], ignore_index=True)
        pd.testing.assert_frame_equal(joined, whole)


@pytest.mark.parametrize("batch_bytes", range(200, 420, 31))
def test_a_row_with_too_many_fields_is_refused_wherever_a_batch_starts(batch_bytes):
    # pandas' own chunked reading does not check the first rows of a chunk; batches
    # here are read behind the header and the first row, so every row is checked.
    lines = (HEADER + ROW * 60).splitlines(keepends=True)
    for at in (5, 17, 33):
        bad = [*lines[:at], lines[at].rstrip("\n") + ",9\n", *lines[at + 1 :]]
        with pytest.raises(TripFileError, match=f"Expected 6 fields in line {at + 1}, saw 7"):
            read_trips("".join(bad).encode(), limits=ReadLimits(batch_bytes=batch_bytes))


def test_unit_of_unix_numbers_is_decided_exactly_without_keeping_them():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        values = rng.choice([1.4e9, 9.9e10, 1e11, 1.1e11, 1.4e12, 9.9e13, 1e14, 2e14], n)
        values = values * rng.choice([1.0, -1.0, np.nan], n, p=[0.7, 0.2, 0.1])
        stats = UnitStats()
        for part in np.array_split(values, int(rng.integers(1, 4))):
            stats.add(part)
        assert stats.unit("auto") == unix_unit(values), values


def test_duplicates_found_through_hashes_are_pandas_duplicates(monkeypatch):
    rng = np.random.default_rng(1)
    for _ in range(100):
        n = int(rng.integers(1, 200))
        columns = [rng.choice([0.0, -0.0, 1.5, np.nan, 2.25], n) for _ in range(3)]
        times = np.array(["2020-01-01", "NaT", "2020-01-02"], dtype="datetime64[ns]")
        columns.append(rng.choice(times, n))
        expected = pd.DataFrame(dict(enumerate(columns))).duplicated().to_numpy()
        assert (cleaning_module._duplicated(columns) == expected).all()
    # Every row in one hash: the collisions are settled by pandas, still exactly.
    monkeypatch.setattr(cleaning_module, "_row_keys", lambda v: np.zeros(len(v), np.uint64))
    columns = [rng.choice([0.0, 1.5, np.nan], 300) for _ in range(2)]
    expected = pd.DataFrame(dict(enumerate(columns))).duplicated().to_numpy()
    assert (cleaning_module._duplicated(columns) == expected).all()


_PER_ROW = {"max_radius_km": None, "drop_duplicates": False}


def test_iter_trips_gives_the_whole_read_batch_by_batch(monkeypatch):
    data = day_first_late()
    options = {"column_map": DAY_FIRST_ROLES, "tz": "Europe/Paris", "row_numbers": True}
    whole = read_trips(data, cleaning=_PER_ROW, **options)
    parts = list(iter_trips(data, cleaning=_PER_ROW, limits=SMALL, **options))
    assert len(parts) > 20
    trips = pd.concat([t for t, _ in parts], ignore_index=True)
    trips.attrs = parts[0][0].attrs
    assert_same_read(whole, (trips, combine_reports([r for _, r in parts])))
    with pytest.raises(ValueError, match="iter_trips cleans each batch on its own"):
        iter_trips(data, **options)  # the default cleaning looks at the whole file


def test_iter_trips_reads_parquet_in_batches(tmp_path):
    path = tmp_path / "t.parquet"
    frame = synthetic_city(150_000, seed=2)
    frame.loc[3, "travel_time_s"] = -1
    frame.to_parquet(path)
    parts = list(iter_trips(path, cleaning=_PER_ROW, row_numbers=True))
    assert len(parts) == 3  # 65,536 rows a batch
    whole = read_trips(path, cleaning=_PER_ROW, row_numbers=True)
    trips = pd.concat([t for t, _ in parts], ignore_index=True)
    trips.attrs = parts[0][0].attrs
    assert_same_read(whole, (trips, combine_reports([r for _, r in parts])))


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_inspect_reads_only_the_rows_it_shows(tmp_path):
    # 20,000 good rows, then a tail no read of the whole file survives: 300 MB of one
    # row again and again, which gzip packs 300-fold (the ratio guard refuses it).
    path = tmp_path / "big.csv.gz"
    good = synthetic_csv(20_000)
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(good)
        block = good.splitlines(keepends=True)[1] * (2**20 // 70)
        for _ in range(300):
            fh.write(block)
    assert path.stat().st_size < 4 * 2**20
    with pytest.raises(TripFileError, match="-fold"):
        read_trips(path)
    status, out, err = run_cli("inspect", path)
    assert status == 0, err
    assert (
        f"cleaning (the first {cli_reading.INSPECT_ROWS:,} rows; inspect reads no further)" in out
    )
    assert "can be trained on: 10,000 trips kept in its first 10,000 rows" in out
    # A file shorter than the preview is reported as before: all of it.
    small = tmp_path / "small.csv"
    small.write_bytes(synthetic_csv(500))
    status, out, _ = run_cli("inspect", small)
    assert status == 0 and "small.csv: kept 500 of 500 rows" in out
    assert "inspect reads no further" not in out and "in its first" not in out


@pytest.fixture
def tiny_model_dir(tiny_home):
    from vrvm.trips.home import Home

    return Home(tiny_home).models.active_path()


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet", "-"])
def test_predict_streams_batches_and_writes_what_a_whole_read_writes(
    tmp_path, monkeypatch, tiny_model_dir, suffix
):
    queries = synthetic_city(1500, seed=9)
    queries.loc[4, "travel_time_s"] = np.nan  # predicted, not scored
    queries.loc[7, "origin_lat"] = np.nan  # dropped: an empty prediction
    path = tmp_path / "q.csv"
    queries.to_csv(path, index=False)
    no_truth = tmp_path / "q_plain.csv"
    queries.assign(travel_time_s=np.nan).to_csv(no_truth, index=False)
    results = {}
    for label, batch_bytes in (("whole", 2**24), ("batched", 4096)):
        monkeypatch.setattr(cli_reading, "PREDICT_BATCH_BYTES", batch_bytes)
        for name, source in (("truth", path), ("plain", no_truth)):
            out = "-" if suffix == "-" else tmp_path / f"{label}_{name}{suffix}"
            status, stdout, err = run_cli("predict", tiny_model_dir, source, "--out", out)
            assert status == 0, err
            if suffix == "-":
                table = pd.read_csv(io.StringIO(stdout))
            elif suffix == ".parquet":
                table = pd.read_parquet(out)
            else:
                table = pd.read_csv(out)
            said = err.replace(str(out), "OUT")
            said = re.sub(r" in .+ \([\d,]+ queries/s\)$", "", said, flags=re.M)  # timing
            results[label, name] = (table, said)
    for name in ("truth", "plain"):
        whole, batched = results["whole", name], results["batched", name]
        assert list(whole[0].columns) == list(batched[0].columns)
        assert batched[1] == whole[1]  # the warning and the count, for the whole file
        assert whole[0]["row"].tolist() == list(range(2, 1502))
        assert whole[0].isna().equals(batched[0].isna())
        np.testing.assert_allclose(batched[0].to_numpy(), whole[0].to_numpy(), rtol=1e-12)
    assert "crps" in results["whole", "truth"][0].columns
    assert "crps" not in results["batched", "plain"][0].columns  # no travel time anywhere
    assert "1 of 1,500 query rows could not be used" in results["batched", "truth"][1]


def test_read_limits_fields_are_checked():
    assert {f.name for f in fields(ReadLimits)} >= {"max_data_rows", "batch_bytes"}
    with pytest.raises(ValueError, match="batch_bytes must be a positive integer"):
        ReadLimits(batch_bytes=0)
    with pytest.raises(ValueError, match="max_data_rows must be a positive integer or None"):
        ReadLimits(max_data_rows=True)


def test_a_row_that_does_not_end_is_refused_without_reading_on():
    # An unclosed quote makes the rest of the file one field: refused once it passes
    # the limit of a line, not after reading (and holding) the whole file.
    text = (HEADER + ROW * 100).encode() + b'2016-01-01 09:00:00,"600,' + b"x" * (8 * 2**20)
    with pytest.raises(TripFileError, match=r"u\.csv: a row does not end within") as info:
        read_trips(gzip.compress(text), source="u.csv")
    assert info.value.limit == "header_bytes"
    # A short file with the same fault is pandas' own error, as before.
    with pytest.raises(TripFileError, match="EOF inside string starting at row 101"):
        read_trips(text[: -8 * 2**20 + 10], source="u.csv")
