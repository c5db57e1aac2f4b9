"""Tests for vrvm.trips: schemas, time zones, clear errors and the cleaning report."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vrvm.trips import (
    CANONICAL_COLUMNS,
    CLEANING_REASONS,
    SCHEMAS,
    CleaningConfig,
    CleaningReport,
    TripFileError,
    UnknownLayoutError,
    clean_trips,
    detect_schema,
    read_trips,
)
from vrvm.trips.files.formats import TimeFormatError
from vrvm.trips.files.reader import expanded_size, read_rows


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_canonical(df: pd.DataFrame) -> None:
    assert tuple(df.columns) == CANONICAL_COLUMNS
    for column in ("origin_lat", "origin_lon", "dest_lat", "dest_lon", "travel_time_s"):
        assert df[column].dtype == np.float64
    assert isinstance(df["start_time"].dtype, pd.DatetimeTZDtype)
    assert str(df["start_time"].dt.tz) == df.attrs["tz"]
    assert isinstance(df.index, pd.RangeIndex)


def assert_consistent(report: CleaningReport) -> None:
    assert report.n_input == report.n_kept + sum(report.counts.values())
    assert report.dropped == sum(report.counts.values())
    assert list(report.counts) == list(CLEANING_REASONS)
    for reason in CLEANING_REASONS:
        assert len(report.examples[reason]) == min(report.counts[reason], 5)


# A pair of Chicago points 2.4 km apart, plausible for a 10-minute trip.
LOOP = "41.88,-87.63"
NORTH = "41.90,-87.65"
POINT = '"POINT (-87.63 41.88)"'
# Manhattan: Times Square -> Union Square, about 2.9 km.
TIMES_SQ = (-73.9855, 40.7580)
UNION_SQ = (-73.9903, 40.7359)


# ---------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------


def test_canonical_csv_round_trip(tmp_path):
    df = pd.DataFrame(
        {
            "origin_lat": [41.88, 41.89],
            "origin_lon": [-87.63, -87.64],
            "dest_lat": [41.90, 41.91],
            "dest_lon": [-87.65, -87.66],
            "start_time": pd.to_datetime(["2016-01-01 08:00:00", "2016-01-02 09:30:15"]),
            "travel_time_s": [600.0, 720.5],
        }
    )
    df["start_time"] = df["start_time"].dt.tz_localize("UTC")
    path = tmp_path / "canonical.csv"
    df.to_csv(path, index=False)
    trips, report = read_trips(path)
    assert_canonical(trips)
    assert trips.attrs["schema"] == "canonical"
    assert trips.attrs["tz"] == "UTC"
    assert report.n_kept == 2 and report.dropped == 0
    pd.testing.assert_frame_equal(trips, df, check_dtype=False)


def test_chicago_portal_text_timestamps_are_local_chicago_time(tmp_path):
    text = (
        "Trip ID,Taxi ID,Trip Start Timestamp,Trip End Timestamp,Trip Seconds,Trip Miles,"
        "Pickup Centroid Latitude,Pickup Centroid Longitude,Pickup Centroid Location,"
        "Dropoff Centroid Latitude,Dropoff Centroid Longitude\n"
        f"a1,t1,01/01/2016 12:00:00 AM,01/01/2016 12:15:00 AM,600,1.5,{LOOP},{POINT},{NORTH}\n"
        f"a2,t2,07/04/2016 12:30:00 PM,07/04/2016 12:45:00 PM,720,1.5,{LOOP},{POINT},{NORTH}\n"
        f'a3,t3,07/04/2016 01:15:00 PM,07/04/2016 01:30:00 PM,"1,080",1.5,{LOOP},{POINT},{NORTH}\n'
        # 01:30 happens twice on 2016-11-06 in Chicago: read as the first (CDT) one.
        f"a4,t4,11/06/2016 01:30:00 AM,11/06/2016 01:45:00 AM,600,1.5,{LOOP},{POINT},{NORTH}\n"
    )
    trips, report = read_trips(write(tmp_path, "Taxi_Trips.csv", text))
    assert_canonical(trips)
    assert trips.attrs["schema"] == "chicago"
    assert trips.attrs["tz"] == "America/Chicago"
    assert report.n_kept == 4
    assert [str(t) for t in trips["start_time"]] == [
        "2016-01-01 00:00:00-06:00",
        "2016-07-04 12:30:00-05:00",
        "2016-07-04 13:15:00-05:00",
        "2016-11-06 01:30:00-05:00",
    ]
    assert trips["travel_time_s"].tolist() == [600.0, 720.0, 1080.0, 600.0]
    assert trips["origin_lat"].iloc[0] == 41.88 and trips["dest_lon"].iloc[0] == -87.65


def test_chicago_snake_case_numbers_are_local_wall_clock(tmp_path):
    text = (
        "fare,trip_start_timestamp,pickup_latitude,pickup_longitude,dropoff_latitude,"
        "dropoff_longitude,trip_seconds,company\n"
        f"12.5,1451606400,{LOOP},{NORTH},600,Acme\n"
        f"12.5,1467331200,{LOOP},{NORTH},600,Acme\n"
    )
    trips, _ = read_trips(write(tmp_path, "sample.csv", text))
    assert trips.attrs["schema"] == "chicago"
    # 1451606400 is 2016-01-01 00:00 "UTC": in these exports that is Chicago wall-clock.
    assert [str(t) for t in trips["start_time"]] == [
        "2016-01-01 00:00:00-06:00",
        "2016-07-01 00:00:00-05:00",
    ]


def test_unix_seconds_are_utc_outside_chicago(tmp_path):
    text = f"{','.join(CANONICAL_COLUMNS)}\n41.88,-87.63,41.90,-87.65,1451606400,600\n"
    path = write(tmp_path, "canonical.csv", text)
    utc, _ = read_trips(path)
    chicago, _ = read_trips(path, tz="America/Chicago")
    assert str(utc["start_time"].iloc[0]) == "2016-01-01 00:00:00+00:00"
    # the same instant, shown in another zone
    assert str(chicago["start_time"].iloc[0]) == "2015-12-31 18:00:00-06:00"


def test_chicago_snake_case_iso_text_is_local(tmp_path):
    text = (
        "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
        "dropoff_latitude,dropoff_longitude\n"
        f"2016-07-01 08:15:00,600,{LOOP},{NORTH}\n"
        f"2016-07-01T08:15:00Z,600,{LOOP},{NORTH}\n"
        f"2016-07-01T08:15:00+02:00,600,{LOOP},{NORTH}\n"
        f"2016-07-01 08:15:00 UTC,600,{LOOP},{NORTH}\n"
        f"07/01/2016 08:15 PM,600,{LOOP},{NORTH}\n"
        f"1467331200,600,{LOOP},{NORTH}\n"  # a number among text: wall-clock seconds
    )
    trips, report = read_trips(
        write(tmp_path, "iso.csv", text), cleaning={"drop_duplicates": False}
    )
    assert report.n_kept == 6
    assert [str(t) for t in trips["start_time"]] == [
        "2016-07-01 08:15:00-05:00",
        "2016-07-01 03:15:00-05:00",
        "2016-07-01 01:15:00-05:00",
        "2016-07-01 03:15:00-05:00",
        "2016-07-01 20:15:00-05:00",
        "2016-07-01 00:00:00-05:00",
    ]


def test_nyc_kaggle(tmp_path):
    text = (
        "id,vendor_id,pickup_datetime,dropoff_datetime,passenger_count,pickup_longitude,"
        "pickup_latitude,dropoff_longitude,dropoff_latitude,store_and_fwd_flag,trip_duration\n"
        f"id2875421,2,2016-03-14 17:24:55,2016-03-14 17:32:30,1,{TIMES_SQ[0]},{TIMES_SQ[1]},"
        f"{UNION_SQ[0]},{UNION_SQ[1]},N,455\n"
    )
    trips, report = read_trips(write(tmp_path, "train.csv", text))
    assert_canonical(trips)
    assert trips.attrs["schema"] == "nyc_kaggle"
    assert trips.attrs["tz"] == "America/New_York"
    assert str(trips["start_time"].iloc[0]) == "2016-03-14 17:24:55-04:00"
    assert trips["travel_time_s"].iloc[0] == 455.0
    assert trips["origin_lon"].iloc[0] == TIMES_SQ[0]
    assert trips["origin_lat"].iloc[0] == TIMES_SQ[1]
    assert report.n_kept == 1


TLC_ROW = "{pu},{do},{lon0},{lat0},{lon1},{lat1}"


@pytest.mark.parametrize(
    ("header", "sep"),
    [
        # 2009
        ("Trip_Pickup_DateTime,Trip_Dropoff_DateTime,Start_Lon,Start_Lat,End_Lon,End_Lat", ","),
        # 2010-2013
        ("pickup_datetime,dropoff_datetime,pickup_longitude,pickup_latitude,"
         "dropoff_longitude,dropoff_latitude", ","),
        # 2014: leading spaces in the header (and after separators)
        (" pickup_datetime, dropoff_datetime, pickup_longitude, pickup_latitude,"
         " dropoff_longitude, dropoff_latitude", ", "),
        # 2015-2016
        ("tpep_pickup_datetime,tpep_dropoff_datetime,pickup_longitude,pickup_latitude,"
         "dropoff_longitude,dropoff_latitude", ","),
    ],
    ids=["2009", "2010-2013", "2014", "2015-2016"],
)  # fmt: skip
def test_nyc_tlc_variants(tmp_path, header, sep):
    values = ["2014-01-09 20:45:25", "2014-01-09 20:52:31", *TIMES_SQ, *UNION_SQ]
    text = "vendor_id," + header + "\n" + "CMT," + sep.join(map(str, values)) + "\n"
    trips, report = read_trips(write(tmp_path, "yellow.csv", text))
    assert_canonical(trips)
    assert trips.attrs["schema"] == "nyc_tlc"
    assert report.n_kept == 1
    assert trips["travel_time_s"].iloc[0] == 426.0
    assert str(trips["start_time"].iloc[0]) == "2014-01-09 20:45:25-05:00"
    assert trips["dest_lat"].iloc[0] == UNION_SQ[1]


def test_nyc_tlc_unreadable_dropoff_is_a_time_problem_empty_one_a_missing_duration(tmp_path):
    where = ",".join(map(str, (*TIMES_SQ, *UNION_SQ)))
    text = (
        "tpep_pickup_datetime,tpep_dropoff_datetime,pickup_longitude,pickup_latitude,"
        "dropoff_longitude,dropoff_latitude\n"
        f"2015-01-01 10:00:00,not a time,{where}\n"
        f"2015-01-01 10:00:00,,{where}\n"
        f"2015-01-01 10:00:00,2015-01-01 09:50:00,{where}\n"
    )
    _, report = read_trips(write(tmp_path, "tlc.csv", text))
    assert report.examples["unparseable_time"] == [2]
    assert report.examples["missing_duration"] == [3]
    assert report.examples["non_positive_duration"] == [4]


def test_parquet_by_extension_and_by_magic_bytes(tmp_path):
    df = pd.DataFrame(
        {
            "pickup_datetime": pd.to_datetime(["2016-03-14 17:24:55", "2016-03-15 08:00:00"]),
            "pickup_longitude": [TIMES_SQ[0]] * 2,
            "pickup_latitude": [TIMES_SQ[1]] * 2,
            "dropoff_longitude": [UNION_SQ[0]] * 2,
            "dropoff_latitude": [UNION_SQ[1]] * 2,
            "trip_duration": [455, 600],
        }
    )
    path = tmp_path / "kaggle.parquet"
    df.to_parquet(path)
    trips, report = read_trips(path)
    assert trips.attrs["schema"] == "nyc_kaggle"
    # Naive datetimes from Parquet are local New York time, like naive text.
    assert str(trips["start_time"].iloc[0]) == "2016-03-14 17:24:55-04:00"
    assert report.n_kept == 2

    data = path.read_bytes()
    for source in (data, io.BytesIO(data)):
        again, _ = read_trips(source)
        pd.testing.assert_frame_equal(again, trips)
    odd_name = tmp_path / "upload.bin"
    odd_name.write_bytes(data)
    again, _ = read_trips(odd_name)
    pd.testing.assert_frame_equal(again, trips)


def test_canonical_parquet_keeps_its_time_zone(tmp_path):
    df = pd.DataFrame(
        {
            "origin_lat": [41.88],
            "origin_lon": [-87.63],
            "dest_lat": [41.90],
            "dest_lon": [-87.65],
            "start_time": pd.to_datetime(["2016-01-01 08:00"]).tz_localize("America/Chicago"),
            "travel_time_s": [600.0],
        }
    )
    path = tmp_path / "trips.parquet"
    df.to_parquet(path)
    trips, _ = read_trips(path)
    assert trips.attrs["tz"] == "America/Chicago"
    pd.testing.assert_frame_equal(trips, df, check_dtype=False)
    utc, _ = read_trips(path, tz="UTC")
    assert str(utc["start_time"].iloc[0]) == "2016-01-01 14:00:00+00:00"


# ---------------------------------------------------------------------------------------
# Inputs, time zones, column_map
# ---------------------------------------------------------------------------------------

HEADER_LINE = (
    "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    "dropoff_latitude,dropoff_longitude"
)
CHICAGO_CSV = (
    "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    "dropoff_latitude,dropoff_longitude\n"
    f"2016-01-01 08:00:00,600,{LOOP},{NORTH}\n"
    f"2016-01-01T08:00:00Z,600,{LOOP},{NORTH}\n"
)


def test_accepts_path_str_bytes_and_file_likes(tmp_path):
    path = write(tmp_path, "chicago.csv", CHICAGO_CSV)
    expected, _ = read_trips(path)
    sources = [
        str(path),
        CHICAGO_CSV.encode(),
        io.BytesIO(CHICAGO_CSV.encode()),
        io.StringIO(CHICAGO_CSV),
        gzip.compress(CHICAGO_CSV.encode()),
    ]
    for source in sources:
        trips, _ = read_trips(source)
        pd.testing.assert_frame_equal(trips, expected, check_like=False)
    _, report = read_trips(CHICAGO_CSV.encode(), source="upload.csv")
    assert report.source == "upload.csv"
    # an upload object read twice (as on a Streamlit rerun) is read from its start
    upload = io.BytesIO(CHICAGO_CSV.encode())
    upload.name = "upload.csv"
    for _ in range(2):
        trips, report = read_trips(upload)
        assert len(trips) == 2 and report.source == "upload.csv"


def test_compressed_and_non_utf8_files(tmp_path):
    path = tmp_path / "chicago.csv.gz"
    path.write_bytes(gzip.compress(CHICAGO_CSV.encode()))
    trips, _ = read_trips(path)
    assert len(trips) == 2
    # a Latin-1 company name in a column we do not use must not break reading
    text = HEADER_LINE + ",company\n" + f"2016-01-01 08:00:00,600,{LOOP},{NORTH},Taxi Ñandú\n"
    path = tmp_path / "latin1.csv"
    path.write_bytes(text.encode("latin-1"))
    trips, _ = read_trips(path)
    assert len(trips) == 1


def test_semicolon_delimited_file(tmp_path):
    text = CHICAGO_CSV.replace(",", ";")
    trips, _ = read_trips(write(tmp_path, "semi.csv", text))
    assert len(trips) == 2


def test_naive_times_follow_tz_argument_offset_times_stay_exact(tmp_path):
    path = write(tmp_path, "chicago.csv", CHICAGO_CSV)
    default, _ = read_trips(path)
    tokyo, _ = read_trips(path, tz="Asia/Tokyo")
    assert default.attrs["tz"] == "America/Chicago" and tokyo.attrs["tz"] == "Asia/Tokyo"
    # naive text: same wall-clock time, read in the given zone
    assert str(default["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"
    assert str(tokyo["start_time"].iloc[0]) == "2016-01-01 08:00:00+09:00"
    # explicit offsets: the same instant, only displayed in another zone
    assert default["start_time"].iloc[1] == tokyo["start_time"].iloc[1]
    assert str(tokyo["start_time"].iloc[1]) == "2016-01-01 17:00:00+09:00"
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        read_trips(path, tz="Mars/Olympus")


def test_custom_schema_is_read_where_its_trips_are(tmp_path):
    text = f"when,secs,a_lat,a_lon,b_lat,b_lon\n2016-01-01 08:00,600,{LOOP},{NORTH}\n"
    column_map = {
        "start_time": "when",
        "travel_time_s": "secs",
        "origin_lat": "a_lat",
        "origin_lon": "a_lon",
        "dest_lat": "B_LAT ",  # matched like schema columns: case and spaces ignored
        "dest_lon": "b_lon",
    }
    trips, report = read_trips(write(tmp_path, "mine.csv", text), column_map=column_map)
    # a file that names no city is read in the zone where its trips are (issue 31)
    assert trips.attrs["schema"] == "custom" and trips.attrs["tz"] == "America/Chicago"
    assert report.tz_inferred
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"
    assert report.n_kept == 1 and trips["dest_lat"].iloc[0] == 41.90
    # naming the schema as well gives its city's zone
    path = tmp_path / "mine.csv"
    trips, _ = read_trips(path, schema="chicago", column_map=column_map)
    assert trips.attrs["schema"] == "chicago"
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"


def test_column_map_end_time_and_override_of_detected_schema(tmp_path):
    text = (
        "trip_start_timestamp,trip_end_timestamp,trip_seconds,pickup_latitude,"
        "pickup_longitude,dropoff_latitude,dropoff_longitude\n"
        f"2016-01-01 08:00:00,2016-01-01 08:12:00,600,{LOOP},{NORTH}\n"
    )
    path = write(tmp_path, "chicago.csv", text)
    trips, _ = read_trips(path, column_map={"end_time": "trip_end_timestamp"})
    assert trips.attrs["schema"] == "chicago"
    assert trips["travel_time_s"].iloc[0] == 720.0


def test_column_map_completes_a_partial_schema(tmp_path):
    text = (
        "start,trip_seconds,pickup_latitude,pickup_longitude,dropoff_latitude,"
        f"dropoff_longitude\n01/01/2016 08:00:00 AM,600,{LOOP},{NORTH}\n"
    )
    path = write(tmp_path, "partial.csv", text)
    # The map supplies the start chicago's API layout lacks, but the header alone does
    # not hold chicago: the file is custom (a map never picks a city, issue 31), its
    # other roles guessed as the upload form guesses them, read where its trips are.
    with pytest.raises(TimeFormatError, match="date_format='dayfirst' or 'monthfirst'"):
        read_trips(path, column_map={"start_time": "start"})
    trips, report = read_trips(path, column_map={"start_time": "start"}, date_format="monthfirst")
    assert trips.attrs["schema"] == "custom" and report.tz_inferred
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"
    # naming the schema says it: its month-first US dates and its city's zone
    trips, report = read_trips(path, schema="chicago", column_map={"start_time": "start"})
    assert trips.attrs["schema"] == "chicago" and not report.tz_inferred
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"


def test_column_map_errors(tmp_path):
    path = write(tmp_path, "chicago.csv", CHICAGO_CSV)
    with pytest.raises(ValueError, match="column_map keys must be among"):
        read_trips(path, column_map={"pickup": "trip_start_timestamp"})
    with pytest.raises(ValueError, match="'nope', which is not a column of the file"):
        read_trips(path, column_map={"start_time": "nope"})
    with pytest.raises(ValueError, match=r"\['travel_time_s', 'end_time'\]: give one travel"):
        read_trips(path, column_map={"travel_time_s": "trip_seconds", "end_time": "x"})
    with pytest.raises(ValueError, match="schema must be 'auto' or one of"):
        read_trips(path, schema="paris")


def test_explicit_schema_that_does_not_fit(tmp_path):
    path = write(tmp_path, "chicago.csv", CHICAGO_CSV)
    with pytest.raises(ValueError, match="nyc_tlc") as info:
        read_trips(path, schema="nyc_tlc")
    assert "chicago (" not in str(info.value)


def test_unknown_schema_message_explains_what_to_do(tmp_path):
    text = "fecha,duracion,lat1,lon1,lat2,lon2\n2016-01-01,600,1,2,3,4\n"
    with pytest.raises(ValueError) as info:
        read_trips(write(tmp_path, "viajes.csv", text))
    message = str(info.value)
    print(message)
    assert "viajes.csv" in message
    assert "'fecha', 'duracion', 'lat1'" in message  # the columns found
    for schema in SCHEMAS:
        assert f"  {schema}" in message
    assert "Trip Start Timestamp" in message and "tpep_pickup_datetime" in message
    assert "Trip_Pickup_DateTime" in message and "trip_duration" in message
    assert "column_map={'start_time':" in message


def test_errors_are_typed_so_callers_never_match_message_text(tmp_path):
    text = "fecha,duracion,lat1,lon1,lat2,lon2\n2016-01-01,600,1,2,3,4\n"
    with pytest.raises(UnknownLayoutError) as info:
        read_trips(write(tmp_path, "viajes.csv", text))
    assert info.value.columns == ["fecha", "duracion", "lat1", "lon1", "lat2", "lon2"]
    assert isinstance(info.value, ValueError)  # callers catching ValueError still work
    with pytest.raises(TripFileError, match=r"empty\.csv is empty") as empty:
        read_trips(write(tmp_path, "empty.csv", ""))
    assert not isinstance(empty.value, UnknownLayoutError)
    damaged = gzip.compress(CHICAGO_CSV.encode())[:40]
    with pytest.raises(TripFileError, match=r"cut\.csv\.gz"):
        read_trips(damaged, source="cut.csv.gz")


def test_expanded_size_stops_at_the_cap_and_names_damaged_files():
    bomb = gzip.compress(b"0" * 50_000_000)  # 50 MB of zeros in about 50 kB
    assert len(bomb) < 100_000
    assert 1_000 < expanded_size(bomb, cap=1_000) <= 1_000 + 2**20  # one chunk past the cap
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("trips.csv", CHICAGO_CSV)
    assert expanded_size(zipped.getvalue(), cap=10**6) == len(CHICAGO_CSV.encode())
    assert expanded_size(CHICAGO_CSV.encode(), cap=1) == len(CHICAGO_CSV.encode())
    with pytest.raises(TripFileError, match=r"up\.gz: the compressed data is damaged"):
        expanded_size(bomb[:1000], cap=10**9, name="up.gz")


def test_read_rows_returns_the_raw_text_of_csv_and_parquet_rows(tmp_path):
    csv_path = write(tmp_path, "t.csv", CHICAGO_CSV)
    raw = read_rows(csv_path, [3, 2, 99, 1])
    assert raw["row"].tolist() == [2, 3]  # header (1) and rows past the end are skipped
    assert raw.columns[0] == "row"
    assert all(isinstance(v, str) for v in raw.drop(columns="row").to_numpy().ravel())
    trips, _ = read_trips(csv_path)
    trips.to_parquet(tmp_path / "t.parquet")
    from_parquet = read_rows(tmp_path / "t.parquet", [2])
    assert from_parquet["row"].tolist() == [2] and "travel_time_s" in from_parquet.columns
    assert read_rows(csv_path, []).columns.tolist() == ["row"]


def test_unknown_schema_message_names_the_closest_schema(tmp_path):
    text = (
        "trip_start_timestamp,pickup_latitude,pickup_longitude,dropoff_latitude,"
        f"dropoff_longitude\n1451606400,{LOOP},{NORTH}\n"
    )
    with pytest.raises(ValueError, match=r"Closest match: chicago \(API / sample\), which lacks"):
        read_trips(write(tmp_path, "nosecs.csv", text))


def test_detect_schema():
    assert detect_schema(CANONICAL_COLUMNS) == "canonical"
    coords = ["pickup_longitude", "pickup_latitude", "dropoff_longitude", "dropoff_latitude"]
    kaggle = ["id", "pickup_datetime", "dropoff_datetime", *coords, "trip_duration"]
    assert detect_schema(kaggle) == "nyc_kaggle"
    assert detect_schema(kaggle[:-1]) == "nyc_tlc"
    assert detect_schema(["TRIP_START_TIMESTAMP", "Trip Seconds", *coords]) == "chicago"
    assert detect_schema([]) is None


# ---------------------------------------------------------------------------------------
# Bad files: always a ValueError that names the file, never a pandas traceback
# ---------------------------------------------------------------------------------------


class _Booby:
    """Unpickling this would create a file: proves input is never unpickled."""

    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


BAD_FILES = [
    pytest.param(b"", "is empty", id="empty"),
    pytest.param(b"\n\n  \n", "is empty", id="blank"),
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "looks like binary", id="png"),
    pytest.param(b"PAR1 not really parquet", "could not be read as Parquet", id="fake-parquet"),
    pytest.param(b"one line of prose\nand another\n", "does not look like a table", id="prose"),
    pytest.param(b"<!DOCTYPE html>\n<html>Error 500</html>\n", "not look like a table", id="html"),
    pytest.param((HEADER_LINE + "\n").encode(), "no data rows", id="header-only"),
    pytest.param(
        CHICAGO_CSV.encode() + b"1451606400,600,41.88,-87.63,41.90,-87.65,1,2,3\n",
        r"could not be read as CSV \(.*Expected 6 fields in line 4, saw 9",
        id="ragged",
    ),
    pytest.param(
        # every row has one field too many: values shifted against the names
        (HEADER_LINE + "\nx,1451606400,600,41.88,-87.63,41.90,-87.65\n").encode(),
        "rows have more fields than the header",
        id="shifted",
    ),
    pytest.param(CHICAGO_CSV.encode() + b'1451606400,"600\n', "EOF inside string", id="quote"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_FILES)
def test_bad_files_raise_clear_value_errors(tmp_path, content, expected):
    path = tmp_path / "upload.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=expected) as info:
        read_trips(path)
    assert "upload.csv" in str(info.value)
    assert "Traceback" not in str(info.value)


def test_wrong_extension_parquet(tmp_path):
    path = write(tmp_path, "trips.parquet", CHICAGO_CSV)
    with pytest.raises(ValueError, match=r"trips\.parquet has a Parquet file extension but"):
        read_trips(path)


@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_pickles_are_never_unpickled(tmp_path, protocol):
    target = tmp_path / "pwned"
    data = pickle.dumps(_Booby(str(target)), protocol=protocol)
    for name in ("evil.pkl", "evil.parquet", "evil.csv"):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ValueError, match=name):
            read_trips(path)
    with pytest.raises(ValueError):
        read_trips(io.BytesIO(data))
    assert not target.exists()


def test_missing_file_and_wrong_types(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        read_trips(tmp_path / "nope.csv")
    with pytest.raises(TypeError, match="path_or_buffer"):
        read_trips(12345)
    with pytest.raises(TypeError, match="cleaning"):
        read_trips(CHICAGO_CSV.encode(), cleaning=5)


# ---------------------------------------------------------------------------------------
# Cleaning and its report
# ---------------------------------------------------------------------------------------

HEADER = (
    "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    "dropoff_latitude,dropoff_longitude"
)
# One line per reason, in file order; the comment is the reason each row must get.
MESSY_LINES = [
    (f"2016-01-01 08:00,600,{LOOP},{NORTH}", "kept"),
    (f"yesterday,600,{LOOP},{NORTH}", "unparseable_time"),
    (f",0,{LOOP},{NORTH}", "unparseable_time"),  # also zero duration: first reason wins
    (f"2016-01-01 08:01,600,,-87.63,{NORTH}", "missing_coordinates"),
    (f"2016-01-01 08:02,600,abc,-87.63,{NORTH}", "missing_coordinates"),
    (f"2016-01-01 08:03,600,0,0,{NORTH}", "invalid_coordinates"),
    (f"2016-01-01 08:04,600,95.0,-87.63,{NORTH}", "invalid_coordinates"),
    (f"2016-01-01 08:05,600,41.88,87.63,{NORTH}", "invalid_coordinates"),  # sign lost
    (f"2016-01-01 08:06,,{LOOP},{NORTH}", "missing_duration"),
    (f"2016-01-01 08:07,0,{LOOP},{NORTH}", "non_positive_duration"),
    (f"2016-01-01 08:08,-60,{LOOP},{NORTH}", "non_positive_duration"),
    (f"2016-01-01 08:09,30,{LOOP},{NORTH}", "too_short"),
    (f"2016-01-01 08:10,20000,{LOOP},{NORTH}", "too_long"),
    (f"2016-01-01 08:11,60,{LOOP},42.30,-87.65", "too_fast"),  # 47 km in a minute
    (f"2016-01-01 08:00,600,{LOOP},{NORTH}", "duplicate"),
    (f"2016-01-01 08:12,900,{LOOP},{NORTH}", "kept"),
]


def messy_csv() -> str:
    return HEADER + "\n" + "\n".join(line for line, _ in MESSY_LINES) + "\n"


def test_every_reason_with_exact_line_numbers(tmp_path):
    path = write(tmp_path, "messy.csv", messy_csv())
    trips, report = read_trips(path)
    assert_consistent(report)
    file_lines = path.read_text().splitlines()
    expected: dict[str, list[int]] = {reason: [] for reason in CLEANING_REASONS}
    for i, (line, reason) in enumerate(MESSY_LINES):
        if reason != "kept":
            expected[reason].append(i + 2)  # header is line 1
            # the row number points at the line an editor shows
            assert file_lines[i + 1] == line
    assert report.examples == expected
    assert report.counts == {r: len(v) for r, v in expected.items()}
    assert report.n_input == len(MESSY_LINES)
    assert report.n_kept == len(trips) == 2
    assert trips["travel_time_s"].tolist() == [600.0, 900.0]


def test_blank_lines_keep_line_numbers_exact(tmp_path):
    text = HEADER + "\n" + f"2016-01-01 08:00,600,{LOOP},{NORTH}\n\n\n" + "bad,600,1,2,3,4\n\n"
    _, report = read_trips(write(tmp_path, "blank.csv", text))
    assert report.examples["unparseable_time"] == [5]
    assert report.n_input == 2 and report.n_kept == 1
    assert report.n_empty_rows == 3
    assert "3 empty rows skipped" in report.summary()


def test_examples_are_capped_at_five_and_counts_add_up(tmp_path):
    lines = [f"2016-01-01 08:{m:02d},0,{LOOP},{NORTH}" for m in range(12)]
    _, report = read_trips(write(tmp_path, "zeros.csv", HEADER + "\n" + "\n".join(lines)))
    assert report.counts["non_positive_duration"] == 12
    assert report.examples["non_positive_duration"] == [2, 3, 4, 5, 6]
    assert_consistent(report)


def test_duplicates_can_be_kept(tmp_path):
    line = f"2016-01-01 08:00,600,{LOOP},{NORTH}"
    path = write(tmp_path, "dups.csv", "\n".join([HEADER, line, line, line]))
    trips, report = read_trips(path)
    assert len(trips) == 1 and report.examples["duplicate"] == [3, 4]
    trips, report = read_trips(path, cleaning=CleaningConfig(drop_duplicates=False))
    assert len(trips) == 3 and report.counts["duplicate"] == 0


def test_bbox_and_radius(tmp_path):
    far = "2016-01-01 08:30,36000,41.88,-87.63,40.71,-74.00"  # New York, 10 h later
    lines = [f"2016-01-01 08:{m:02d},600,{LOOP},{NORTH}" for m in range(5)] + [far]
    path = write(tmp_path, "far.csv", HEADER + "\n" + "\n".join(lines))
    _, report = read_trips(path, cleaning={"max_duration_s": 50000})
    assert report.examples["invalid_coordinates"] == [7]
    assert report.center == pytest.approx((41.88, -87.63))  # median of 6 origins + 6 dests
    _, report = read_trips(path, cleaning={"max_duration_s": 50000, "max_radius_km": None})
    assert report.counts["invalid_coordinates"] == 0
    bbox = (41.0, -88.0, 42.0, -87.0)
    _, report = read_trips(path, cleaning={"bbox": bbox, "max_radius_km": None})
    assert report.examples["invalid_coordinates"] == [7]
    _, report = read_trips(path, cleaning={"bbox": (41.885, -88.0, 42.0, -87.0)})
    assert report.counts["invalid_coordinates"] == 6


def test_report_outputs(tmp_path):
    _, report = read_trips(write(tmp_path, "messy.csv", messy_csv()))
    frame = report.to_frame()
    assert list(frame.columns) == ["reason", "count", "share", "example_rows", "description"]
    assert frame["reason"].tolist() == list(CLEANING_REASONS)
    assert frame["count"].sum() == report.dropped
    assert frame["share"].sum() == pytest.approx(report.dropped / report.n_input)
    row = frame.set_index("reason").loc["too_short"]
    assert row["example_rows"] == "13" and "60 s" in row["description"]

    as_dict = json.loads(json.dumps(report.to_dict()))
    assert as_dict["n_input"] == report.n_input and as_dict["n_dropped"] == report.dropped
    assert as_dict["config"]["max_speed_kmh"] == 120
    assert [r["reason"] for r in as_dict["reasons"]] == list(CLEANING_REASONS)
    reasons = {r["reason"]: r for r in as_dict["reasons"]}
    assert reasons["missing_coordinates"]["example_rows"] == [5, 6]

    text = report.summary()
    assert str(report) == text
    assert text.startswith(str(tmp_path / "messy.csv"))
    assert "messy.csv: kept 2 of 16 rows (12.5%), dropped 14\n" in text
    assert "unparseable_time: 2 (12.5%), e.g. rows 3, 4" in text
    assert "duplicate: 1" in text
    assert len(text.splitlines()) == 1 + len(report.notes) + sum(
        1 for c in report.counts.values() if c
    )


def test_cleaning_config_validation():
    assert CleaningConfig().max_duration_s == 3 * 3600
    with pytest.raises(ValueError, match="must be below max_duration_s"):
        CleaningConfig(min_duration_s=100, max_duration_s=50)
    with pytest.raises(ValueError, match="max_speed_kmh must be a positive number"):
        CleaningConfig(max_speed_kmh=0)
    with pytest.raises(ValueError, match="bbox must be"):
        CleaningConfig(bbox=(42.0, -88.0, 41.0, -87.0))
    with pytest.raises(TypeError):
        CleaningConfig(max_speed=100)  # type: ignore[call-arg]
    assert CleaningConfig(bbox=[41, -88, 42, -87]).bbox == (41.0, -88.0, 42.0, -87.0)


def test_clean_trips_on_a_frame():
    df = pd.DataFrame(
        {
            "origin_lat": [41.88, 41.88, 41.88, 41.88],
            "origin_lon": [-87.63] * 4,
            "dest_lat": [41.90] * 4,
            "dest_lon": [-87.65] * 4,
            "start_time": ["2016-01-01 08:00", "2016-01-01 09:00", "not a time", None],
            "travel_time_s": [600, 30, 600, 600],
            "extra": 1,
        },
        index=[10, 11, 12, 13],
    )
    df.attrs.update({"tz": "America/Chicago", "city": "Chicago"})
    trips, report = clean_trips(df, source="frame")
    assert_canonical(trips)
    assert trips.attrs["tz"] == "America/Chicago" and trips.attrs["city"] == "Chicago"
    assert trips.attrs["schema"] == "canonical" and trips.attrs["source"] == "frame"
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"
    assert report.examples["too_short"] == [3]
    assert report.examples["unparseable_time"] == [4, 5]
    assert_consistent(report)
    with pytest.raises(ValueError, match=r"missing canonical columns \['travel_time_s'\]"):
        clean_trips(df.drop(columns="travel_time_s"))


def test_clean_trips_is_idempotent_on_read_output(tmp_path):
    trips, _ = read_trips(write(tmp_path, "messy.csv", messy_csv()))
    again, report = clean_trips(trips)
    pd.testing.assert_frame_equal(again, trips, check_like=False)
    assert report.dropped == 0 and again.attrs["tz"] == trips.attrs["tz"]


# ---------------------------------------------------------------------------------------
# The real Chicago sample
# ---------------------------------------------------------------------------------------


def test_real_chicago_sample(shared_data):
    path = shared_data("chicago_taxi_trips.csv")
    # its time (0.07 s) is measured by benchmarks/bench_read_memory.py, not asserted here
    trips, report = read_trips(path)
    print(report.summary())
    print(report.to_frame().to_string())

    assert report.n_input == 15_002
    assert_consistent(report)
    assert_canonical(trips)
    assert trips.attrs["schema"] == "chicago" and trips.attrs["tz"] == "America/Chicago"
    # What PROVENANCE.md documents: 483 rows without drop-off coordinates, 490 durations
    # that are 0 or empty (some of them also lack coordinates, which is checked first).
    assert report.counts["missing_coordinates"] == 483
    zero_or_empty = report.counts["missing_duration"] + report.counts["non_positive_duration"]
    assert 400 <= zero_or_empty <= 490
    assert report.counts["unparseable_time"] == 0
    assert 1 <= report.counts["too_long"] <= 20
    # The sample is clean apart from that: about 94% survive.
    assert 13_500 <= report.n_kept <= 14_500
    assert trips["travel_time_s"].between(60, 3 * 3600).all()
    assert trips["start_time"].min() >= pd.Timestamp("2013-01-01", tz="America/Chicago")
    assert trips["start_time"].max() < pd.Timestamp("2017-01-01", tz="America/Chicago")
    # Unix seconds rounded to 15 minutes stay on the quarter hour in local time.
    assert (trips["start_time"].dt.minute % 15 == 0).all()

    # Example row numbers are line numbers: look the lines up in the raw file.
    raw = pd.read_csv(path)
    line = {n: raw.iloc[n - 2] for rows in report.examples.values() for n in rows}
    for n in report.examples["missing_coordinates"]:
        assert line[n][["pickup_latitude", "dropoff_latitude"]].isna().any()
    for n in report.examples["non_positive_duration"]:
        assert line[n]["trip_seconds"] == 0
    for n in report.examples["too_long"]:
        assert line[n]["trip_seconds"] > 3 * 3600

    # The numbers are Chicago wall-clock time (see vrvm.trips): read that way, demand
    # has its known daily shape, quietest before dawn and busiest in the evening, and
    # the hour histogram matches the sample's own trip_start_hour column.
    hours = trips["start_time"].dt.hour.value_counts(normalize=True).sort_index()
    assert hours.idxmin() in (3, 4, 5, 6)
    assert hours.idxmax() in (17, 18, 19, 20, 21)
    raw_hours = raw["trip_start_hour"].value_counts(normalize=True).sort_index()
    assert np.abs(hours - raw_hours).max() < 0.01


# ---------------------------------------------------------------------------------------
# Row numbers of every row, and queries without travel times
# ---------------------------------------------------------------------------------------


def test_row_numbers_account_for_every_input_row(tmp_path):
    path = write(tmp_path, "messy.csv", messy_csv())
    trips, report = read_trips(path, row_numbers=True)
    assert list(trips.columns) == ["row", *CANONICAL_COLUMNS]
    assert trips["row"].dtype == np.int64 and trips["row"].tolist() == [2, 17]
    for reason in CLEANING_REASONS:
        expected = [i + 2 for i, (_, r) in enumerate(MESSY_LINES) if r == reason]
        assert report.dropped_rows[reason].tolist() == expected
        assert report.examples[reason] == expected[:5]
    every = np.concatenate([trips["row"], *report.dropped_rows.values()])
    assert sorted(every) == list(range(2, len(MESSY_LINES) + 2))
    # the default table is unchanged
    plain, _ = read_trips(path)
    assert_canonical(plain)
    pd.testing.assert_frame_equal(plain, trips.drop(columns="row"))


def test_dropped_rows_are_complete_read_only_and_not_serialised(tmp_path):
    lines = [f"2016-01-01 08:{m:02d},0,{LOOP},{NORTH}" for m in range(12)]
    _, report = read_trips(write(tmp_path, "zeros.csv", HEADER + "\n" + "\n".join(lines)))
    rows = report.dropped_rows["non_positive_duration"]
    assert rows.tolist() == list(range(2, 14))
    assert report.examples["non_positive_duration"] == [2, 3, 4, 5, 6]
    with pytest.raises(ValueError):
        rows[0] = 99
    assert "dropped_rows" not in report.to_dict()
    assert "dropped_rows=" not in repr(report)
    # not part of equality: a report rebuilt from its dict-level fields compares equal
    assert report == CleaningReport(
        source=report.source,
        n_input=report.n_input,
        n_kept=report.n_kept,
        counts=report.counts,
        examples=report.examples,
        schema=report.schema,
        tz=report.tz,
        center=report.center,
    )


def test_queries_without_a_travel_time_column(tmp_path):
    text = (
        "origin_lat,origin_lon,dest_lat,dest_lon,start_time\n"
        f"{LOOP},{NORTH},2016-01-01 08:00\n"
        f"{LOOP},,-87.65,2016-01-01 09:00\n"
        f"{LOOP},{NORTH},2016-01-01 08:00\n"  # a repeated query is not a duplicate trip
    )
    path = write(tmp_path, "queries.csv", text)
    with pytest.raises(ValueError, match="could not recognise the trip schema"):
        read_trips(path)  # a training file needs travel times
    trips, report = read_trips(
        path,
        tz="America/Chicago",
        require_travel_time=False,
        row_numbers=True,
        cleaning={"drop_duplicates": False},
    )
    assert_canonical(trips.drop(columns="row"))
    assert trips.attrs["schema"] == "canonical"
    assert trips["row"].tolist() == [2, 4]
    assert trips["travel_time_s"].isna().all()
    assert str(trips["start_time"].iloc[0]) == "2016-01-01 08:00:00-06:00"
    assert report.counts["missing_coordinates"] == 1 and report.counts["missing_duration"] == 0
    assert_consistent(report)


def test_queries_duration_checks_apply_only_to_rows_with_a_travel_time(tmp_path):
    trips, report = read_trips(
        write(tmp_path, "messy.csv", messy_csv()), require_travel_time=False, row_numbers=True
    )
    assert_consistent(report)
    # The row without a travel time is kept; every other reason still applies.
    kept = [i + 2 for i, (_, r) in enumerate(MESSY_LINES) if r in ("kept", "missing_duration")]
    assert trips["row"].tolist() == kept == [2, 10, 17]
    assert np.isnan(trips["travel_time_s"].iloc[1])
    assert report.counts["missing_duration"] == 0
    for reason in ("non_positive_duration", "too_short", "too_long", "too_fast", "duplicate"):
        assert report.counts[reason] == sum(r == reason for _, r in MESSY_LINES)


def test_queries_in_a_known_schema_with_blank_lines(tmp_path):
    text = (
        "Trip Start Timestamp,Pickup Centroid Latitude,Pickup Centroid Longitude,"
        "Dropoff Centroid Latitude,Dropoff Centroid Longitude,Fare\n"
        "01/01/2016 12:00:00 AM,41.88,-87.63,41.90,-87.65,10.5\n"
        "\n"
        "01/01/2016 08:30:00 AM,41.88,-87.63,41.95,-87.65,12.0\n"
    )
    path = write(tmp_path, "chicago.csv", text)
    trips, report = read_trips(path, require_travel_time=False, row_numbers=True)
    assert trips.attrs["schema"] == "chicago" and trips.attrs["tz"] == "America/Chicago"
    assert trips["row"].tolist() == [2, 4]  # the blank line 3 is skipped
    assert report.n_empty_rows == 1 and report.n_input == 2 and report.dropped == 0
    assert str(trips["start_time"].iloc[1]) == "2016-01-01 08:30:00-06:00"
    assert trips["travel_time_s"].isna().all()


def test_queries_prefer_a_schema_with_travel_times(tmp_path):
    # pickup_datetime + NYC coordinates is also Kaggle's layout without trip_duration;
    # the drop-off column makes it TLC, whose travel times must not be lost.
    text = (
        "pickup_datetime,dropoff_datetime,pickup_latitude,pickup_longitude,"
        "dropoff_latitude,dropoff_longitude\n"
        "2016-01-01 00:00:00,2016-01-01 00:10:00,40.75,-73.99,40.76,-73.98\n"
        "2016-01-01 01:00:00,,40.75,-73.99,40.76,-73.98\n"
        "2016-01-01 02:00:00,2016-01-01 02:05:00,40.75,-73.99,40.76,-73.98\n"
        "2016-01-01 03:00:00,2016-01-01 02:55:00,40.75,-73.99,40.76,-73.98\n"
    )
    trips, report = read_trips(
        write(tmp_path, "tlc.csv", text), require_travel_time=False, row_numbers=True
    )
    assert trips.attrs["schema"] == "nyc_tlc"
    assert trips["row"].tolist() == [2, 3, 4]
    np.testing.assert_array_equal(trips["travel_time_s"], [600.0, np.nan, 300.0])
    assert trips["dest_lat"].tolist() == [40.76] * 3
    assert report.dropped_rows["non_positive_duration"].tolist() == [5]


def test_queries_with_a_column_map_and_no_travel_time(tmp_path):
    text = "when,a,b,c,d\n2016-01-01 08:00,41.88,-87.63,41.90,-87.65\n"
    trips, _ = read_trips(
        write(tmp_path, "custom.csv", text),
        column_map={
            "start_time": "when",
            "origin_lat": "a",
            "origin_lon": "b",
            "dest_lat": "c",
            "dest_lon": "d",
        },
        require_travel_time=False,
    )
    assert trips.attrs["schema"] == "custom" and len(trips) == 1
    assert np.isnan(trips["travel_time_s"].iloc[0])


def test_queries_unknown_schema_says_travel_time_is_optional(tmp_path):
    text = (
        "Trip Start Timestamp,Pickup Centroid Latitude,Pickup Centroid Longitude,x\n"
        "01/01/2016 12:00:00 AM,41.88,-87.63,1\n"
    )
    with pytest.raises(ValueError) as info:
        read_trips(write(tmp_path, "q.csv", text), require_travel_time=False)
    message = str(info.value)
    assert "a travel time is optional" in message.splitlines()[0]
    assert (
        "  chicago (portal export): Trip Start Timestamp, Pickup Centroid Latitude, Pickup "
        "Centroid Longitude, Dropoff Centroid Latitude, Dropoff Centroid Longitude "
        "(optional: Trip Seconds)\n" in message
    )
    assert (
        "Closest match: chicago (portal export), which lacks Dropoff Centroid Latitude, "
        "Dropoff Centroid Longitude.\n" in message
    )


def test_flags_must_be_booleans():
    with pytest.raises(TypeError, match="require_travel_time"):
        read_trips(CHICAGO_CSV.encode(), require_travel_time="no")
    with pytest.raises(TypeError, match="row_numbers"):
        clean_trips(pd.DataFrame(), row_numbers=1)


def test_clean_trips_without_travel_times_and_with_row_numbers():
    df = pd.DataFrame(
        {
            "origin_lat": [41.88, np.nan, 41.88],
            "origin_lon": [-87.63] * 3,
            "dest_lat": [41.90] * 3,
            "dest_lon": [-87.65] * 3,
            "start_time": pd.to_datetime(["2016-01-01 08:00"] * 3).tz_localize("UTC"),
        }
    )
    with pytest.raises(ValueError, match="travel_time_s"):
        clean_trips(df)
    kept, report = clean_trips(
        df, require_travel_time=False, row_numbers=True, cleaning={"drop_duplicates": False}
    )
    assert kept["row"].tolist() == [2, 4] and kept["travel_time_s"].isna().all()
    assert report.dropped_rows["missing_coordinates"].tolist() == [3]
    # A `row` column from read_trips is kept through re-cleaning, in table and report.
    df["row"] = [10, 20, 30]
    kept, report = clean_trips(df, require_travel_time=False, row_numbers=True)
    assert kept["row"].tolist() == [10] and report.examples["missing_coordinates"] == [20]
    assert report.examples["duplicate"] == [30]
    plain, _ = clean_trips(df, require_travel_time=False)
    assert "row" not in plain.columns


# --------------------------------------------------------------------------- bike share
BIKESHARE_LAYOUTS = [
    pytest.param(
        '"duration_sec","start_time","end_time","start_station_latitude",'
        '"start_station_longitude","end_station_latitude","end_station_longitude"\n'
        '611,"2019-02-28 17:32:10.1450","2019-02-28 17:42:21.9750",'
        "37.7896254,-122.400811,37.794231,-122.402923\n",
        "America/Los_Angeles",
        611.0,
        id="gobike",
    ),
    pytest.param(
        '"tripduration","starttime","stoptime","start station latitude",'
        '"start station longitude","end station latitude","end station longitude"\n'
        '611,"2019-02-28 17:32:10.1450","2019-02-28 17:42:21.9750",'
        "40.7420,-73.9898,40.7589,-73.9851\n",
        "America/New_York",
        611.0,
        id="citibike",
    ),
    pytest.param(
        "ride_id,started_at,ended_at,start_lat,start_lng,end_lat,end_lng\n"
        "A1,2019-02-28 17:32:10,2019-02-28 17:42:21,41.8819,-87.6278,41.8990,-87.6410\n",
        "America/Chicago",
        611.0,
        id="2020-on",
    ),
]


@pytest.mark.parametrize(("text", "zone", "seconds"), BIKESHARE_LAYOUTS)
def test_bike_share_layouts_are_read_in_the_zone_where_the_trips_are(tmp_path, text, zone, seconds):
    trips, report = read_trips(write(tmp_path, "bikes.csv", text))
    assert_canonical(trips)
    assert trips.attrs["schema"] == "bikeshare" and trips.attrs["tz"] == zone
    assert report.tz_inferred and f"local times read in {zone}" in report.summary()
    # the wall clock in the file is the wall clock of the result (ten-thousandths kept)
    start = trips["start_time"].iloc[0]
    assert (start.hour, start.minute, start.second) == (17, 32, 10)
    assert trips["travel_time_s"].iloc[0] == pytest.approx(seconds)
    # a given tz wins over the inferred one
    given, report = read_trips(write(tmp_path, "bikes.csv", text), tz="UTC")
    assert given.attrs["tz"] == "UTC" and not report.tz_inferred
    assert given["start_time"].iloc[0].hour == 17


def test_bike_share_header_is_detected():
    assert detect_schema(["tripduration", "starttime", "stoptime", "start station latitude",
                          "start station longitude", "end station latitude",
                          "end station longitude", "bikeid"]) == "bikeshare"  # fmt: skip


def test_real_sf_bike_share_file_needs_no_help(shared_data):
    trips, report = read_trips(shared_data("sf_bikeshare_2019-02_partial.csv"))
    assert trips.attrs["schema"] == "bikeshare"
    assert trips.attrs["tz"] == "America/Los_Angeles" and report.tz_inferred
    assert report.n_input == 14_647 and len(trips) > 14_500  # the truncated last line too
    local_hours = trips["start_time"].dt.hour
    # commuting peaks at 8 and 17 local time, the night is quiet: the zone is right
    by_hour = local_hours.value_counts()
    assert by_hour[8] > 5 * by_hour[3] and by_hour[17] > 5 * by_hour[3]
