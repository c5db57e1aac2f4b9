"""Trips in Parquet read a row group at a time: footers, pruned reads, bounded samples."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

from vrvm.trips.home import Home
from vrvm.trips.store.trip_table import TripTable, write_trips
from vrvm.trips.synthetic import synthetic_city

TZ = "Atlantic/South_Georgia"


@pytest.fixture(scope="module")
def trips():
    frame = synthetic_city(5000, seed=3)
    frame["start_time"] = frame["start_time"].dt.tz_convert(TZ)
    return frame


@pytest.fixture
def table(trips, tmp_path):
    path = write_trips(trips, tmp_path / "trips.parquet", row_group_rows=400)
    return TripTable.open(path, tz=TZ, cache_dir=tmp_path / "derived")


def test_counts_ranges_and_box_come_from_the_footers(table, trips):
    assert len(table) == table.n_trips == len(trips)
    assert table.n_groups == 13  # 5000 trips in groups of 400
    start, end = table.time_range()
    assert start == trips["start_time"].min() and end == trips["start_time"].max()
    assert str(start.tz) == TZ
    lat = np.concatenate([trips["origin_lat"], trips["dest_lat"]])
    lon = np.concatenate([trips["origin_lon"], trips["dest_lon"]])
    assert table.bbox() == (lat.min(), lon.min(), lat.max(), lon.max())
    assert table.groups_read == 0  # nothing but footers was read


def test_reads_return_the_trips_as_written(table, trips):
    whole = table.read()
    pd.testing.assert_frame_equal(whole, trips.reset_index(drop=True), check_like=True)
    some = table.read(["travel_time_s", "start_time"], groups=[2, 0])
    expected = pd.concat([trips.iloc[0:400], trips.iloc[800:1200]])
    assert some["travel_time_s"].tolist() == expected["travel_time_s"].tolist()
    assert some["start_time"].tolist() == expected["start_time"].tolist()
    assert list(some.columns) == ["travel_time_s", "start_time"]


def test_statistics_prune_row_groups_without_losing_a_row(tmp_path, trips):
    by_time = trips.sort_values("start_time").reset_index(drop=True)
    table = TripTable.open(write_trips(by_time, tmp_path / "t.parquet", row_group_rows=250))
    day = (by_time["start_time"].iloc[1000], by_time["start_time"].iloc[1400])
    groups = table.groups_overlapping("start_time", [day])
    assert 2 <= len(groups) <= 3 < table.n_groups
    read = table.read(["start_time"], groups=groups)["start_time"]
    inside = by_time["start_time"].between(*day)
    assert read.between(*day).sum() == inside.sum()


def test_a_sample_is_everything_when_small_and_bounded_when_large(table, trips):
    assert table.sample(10_000).equals(table.read())  # all 5000, in order
    before = table.groups_read
    sample = table.sample(500, seed=1, columns=["origin_lat", "origin_lon"])
    assert len(sample) == 500 and list(sample.columns) == ["origin_lat", "origin_lon"]
    assert table.groups_read - before <= 4  # 2 x 500 rows need at most 3 groups of 400 (+1)
    assert sample.equals(table.sample(500, seed=1, columns=["origin_lat", "origin_lon"]))
    assert sample["origin_lat"].isin(trips["origin_lat"]).all()


def test_a_frame_in_memory_answers_the_same_questions(table, trips):
    memory = TripTable.from_frame(trips, row_group_rows=400)
    assert len(memory) == len(table) and memory.n_groups == table.n_groups
    assert memory.time_range() == table.time_range()
    assert memory.bbox() == table.bbox()
    assert memory.groups_overlapping("origin_lat", [(-40.0, -39.99)]) == table.groups_overlapping(
        "origin_lat", [(-40.0, -39.99)]
    )
    assert memory.read(groups=[3]).equals(table.read(groups=[3]))
    assert memory.cache_path("x.json") is None


def test_a_folder_of_files_is_one_table(tmp_path, trips):
    folder = tmp_path / "parts"
    write_trips(trips.iloc[:3000], folder / "part-a.parquet", row_group_rows=1000)
    write_trips(trips.iloc[3000:], folder / "part-b.parquet", row_group_rows=1000)
    table = TripTable.open(folder, tz=TZ)
    assert len(table) == 5000 and table.n_groups == 5
    assert table.group_rows(3) == (3000, 1000)
    assert table.read(["travel_time_s"], groups=[3])["travel_time_s"].tolist() == (
        trips["travel_time_s"].iloc[3000:4000].tolist()
    )
    assert table.time_range() == (trips["start_time"].min(), trips["start_time"].max())


def test_an_empty_table_says_so(tmp_path):
    empty = TripTable.open(tmp_path)  # a folder without Parquet files
    assert len(empty) == 0 and empty.n_groups == 0
    assert empty.time_range() == (None, None)
    assert empty.bbox() is None
    assert empty.sample(10).empty


def test_what_is_derived_once_is_kept_beside_the_trips(table):
    calls = []

    def compute():
        calls.append(1)
        return {"answer": 42}

    assert table.cached_json("derived.json", compute) == {"answer": 42}
    assert table.cached_json("derived.json", compute) == {"answer": 42}
    assert len(calls) == 1
    assert json.loads(table.cache_path("derived.json").read_text()) == {"answer": 42}


def test_a_cache_that_cannot_be_written_is_computed_each_time(trips, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    path = write_trips(trips, tmp_path / "t.parquet")
    table = TripTable.open(path, cache_dir=blocker)
    assert table.cached_json("x.json", lambda: {"n": 1}) == {"n": 1}
    assert table.cached_json("x.json", lambda: {"n": 2}) == {"n": 2}


def test_a_crashed_derivation_is_cleaned_up_when_the_home_is_healed(tmp_path, trips):
    kept = Home(tmp_path).save_training_trips(trips)
    derived = kept.with_suffix(".derived")
    derived.mkdir()
    leftover = derived / ".tmp-hexagons.parquet.x1"
    leftover.write_bytes(b"half an index")
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    (derived / "area.json").write_text("{}")
    repairs = Home(tmp_path).heal()
    assert not leftover.exists() and (derived / "area.json").exists()
    assert any(".tmp-hexagons" in r for r in repairs)
    assert TripTable.open(kept).n_groups == 1  # 5000 trips: one row group of 65,536
