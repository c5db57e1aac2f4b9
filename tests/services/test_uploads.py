"""Uploads: reading, cleaning reports, the column-mapping form, size guards."""

from __future__ import annotations

import gzip
import io
import re

import pandas as pd
import pytest

from vrvm import synthetic_city
from vrvm.services.analyst import uploads
from vrvm.services.analyst.uploads import (
    UploadError,
    check_upload,
    example_rows,
    guess_column_map,
    read_upload,
    report_table,
)


def _csv_bytes(trips: pd.DataFrame) -> bytes:
    return trips.to_csv(index=False).encode()


def test_read_upload_of_a_good_csv_and_parquet():
    trips = synthetic_city(200, seed=11)
    dirty = pd.concat([trips, trips.iloc[:3]], ignore_index=True)  # 3 duplicates
    dirty.loc[5, "travel_time_s"] = -1
    outcome = read_upload("trips.csv", _csv_bytes(dirty))
    assert outcome.ok and outcome.report.n_kept == 199
    assert outcome.report.counts["duplicate"] == 3
    table = report_table(outcome.report)
    assert table["reason"].tolist() == ["non_positive_duration", "duplicate"]
    examples = example_rows(_csv_bytes(dirty), outcome.report)
    assert examples["row"].tolist() == sorted(examples["row"].tolist())
    assert examples.loc[
        examples["reason"] == "non_positive_duration", "travel_time_s"
    ].tolist() == ["-1.0"]
    buffer = io.BytesIO()
    dirty.to_parquet(buffer)
    parquet = read_upload("trips.parquet", buffer.getvalue())
    assert parquet.ok and len(parquet.trips) == 199
    rows = example_rows(buffer.getvalue(), parquet.report)
    assert rows.loc[rows["reason"] == "non_positive_duration", "row"].tolist() == [7]  # 5 + 2
    assert rows.loc[rows["reason"] == "duplicate", "row"].tolist() == [202, 203, 204]
    gz = read_upload("trips.csv.gz", gzip.compress(_csv_bytes(trips)))
    assert gz.ok and len(gz.trips) == 200


def test_unknown_schema_asks_for_a_column_map():
    trips = synthetic_city(50, seed=2)
    renamed = trips.rename(
        columns={
            "origin_lat": "plat",
            "origin_lon": "plon",
            "dest_lat": "dlat",
            "dest_lon": "dlon",
            "start_time": "pickup_time",
            "travel_time_s": "duration_s",
        }
    )
    data = _csv_bytes(renamed)
    outcome = read_upload("mine.csv", data)
    assert not outcome.ok and outcome.needs_mapping
    assert outcome.columns == list(renamed.columns)
    assert "Columns found" in outcome.error
    guess = guess_column_map(outcome.columns)
    assert guess == {"start_time": "pickup_time", "travel_time_s": "duration_s"}
    column_map = {
        **guess,
        "origin_lat": "plat",
        "origin_lon": "plon",
        "dest_lat": "dlat",
        "dest_lon": "dlon",
    }
    mapped = read_upload("mine.csv", data, column_map=column_map)
    assert mapped.ok and len(mapped.trips) == 50


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02binary\x00", "binary"),
        (b"PAR1 not really parquet", "could not be read|Parquet"),
        (b"a,b\n1,2\n", "could not recognise"),
        (b"PK\x03\x04garbage", "zip|damaged"),
    ],
)
def test_bad_uploads_give_a_clear_message(data, message):
    outcome = read_upload("upload.csv", data)
    assert not outcome.ok and outcome.trips is None
    assert outcome.error and re.search(message, outcome.error)


def test_upload_size_limits(monkeypatch):
    with pytest.raises(UploadError, match=r"above the 0\.001 MB upload limit"):
        check_upload("big.csv", b"x" * 5000, max_mb=0.001)
    bomb = gzip.compress(b"0" * (3 * 2**20))
    assert len(bomb) < 2**20
    monkeypatch.setattr(uploads, "MAX_DECOMPRESSED_MB", 1)
    with pytest.raises(UploadError, match="expands to more than 1 MB"):
        check_upload("bomb.csv.gz", bomb)
    outcome = read_upload("bomb.csv.gz", bomb)
    assert "expands" in outcome.error


def test_a_real_bike_share_upload_needs_no_column_map(shared_data):
    path = shared_data("sf_bikeshare_2019-02_partial.csv")
    outcome = read_upload(path.name, path.read_bytes())
    assert outcome.ok and not outcome.needs_mapping
    assert outcome.trips.attrs["tz"] == "America/Los_Angeles"
    assert outcome.report.tz_inferred and len(outcome.trips) > 14_500


def test_an_upload_beyond_the_rows_limit_says_which_limit_and_how_to_raise_it(monkeypatch):
    monkeypatch.setenv(uploads.MAX_UPLOAD_ROWS_ENV, "2000")
    data = gzip.compress(_csv_bytes(synthetic_city(6000, seed=3)))
    outcome = read_upload("big trips.csv.gz", data)
    assert not outcome.ok and outcome.trips is None and not outcome.needs_mapping
    assert outcome.error == (
        "big trips.csv.gz has more than 2,000 data rows, the limit for an upload; it was "
        "not read further. Split the file, or raise the limit with the environment "
        "variable VRVM_MAX_UPLOAD_ROWS (now 2,000) and restart the dashboard"
    )
    # A live preview of the first rows is within the limit; so is a smaller file.
    preview = read_upload("big trips.csv.gz", data, max_rows=uploads.PREVIEW_READ_ROWS)
    assert preview.ok and preview.report.n_input == uploads.PREVIEW_READ_ROWS
    assert read_upload("small.csv", _csv_bytes(synthetic_city(2000, seed=3))).ok
