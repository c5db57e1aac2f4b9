"""Trips sorted by origin zone: the same answers in memory and on disk, few row groups read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vrvm.trips.store.zone_index import ZoneIndex

N_ZONES = 40


@pytest.fixture(scope="module")
def columns():
    rng = np.random.default_rng(0)
    n = 20_000
    origin = rng.integers(-1, N_ZONES, n)  # -1: in no zone
    return {
        "origin": origin,
        "dest": rng.integers(-1, N_ZONES, n),
        "minute": rng.uniform(0, 1440, n),
        "start_time": (
            pd.Timestamp("2024-03-04").to_datetime64() + rng.integers(0, 10**15, n).astype("m8[ns]")
        ),
        "cell": rng.integers(0, 2**63, n).astype(np.uint64),
    }


@pytest.fixture
def on_disk(columns, tmp_path):
    return ZoneIndex.build(
        columns,
        n_zones=N_ZONES,
        meta={"tz": "UTC"},
        path=tmp_path / "i.parquet",
        row_group_rows=500,
    )


def test_trips_from_a_zone_are_those_starting_there_in_table_order(columns, on_disk):
    memory = ZoneIndex.build(columns, n_zones=N_ZONES)
    for index in (memory, on_disk):
        assert index.n_trips == 20_000 and index.n_zones == N_ZONES
        for zone in (0, 7, N_ZONES - 1, -1):
            found = index.trips_from([zone], ["dest", "minute", "row", "start_time", "cell"])
            rows = np.flatnonzero(columns["origin"] == zone)
            assert found["row"].tolist() == rows.tolist()
            assert (found["origin"] == zone).all()
            for name in ("dest", "minute", "start_time", "cell"):
                assert np.array_equal(found[name], columns[name][rows]), name
    assert on_disk.meta == {"tz": "UTC"}


def test_several_zones_at_once(columns, on_disk):
    found = on_disk.trips_from([3, 12, 4], ["row"])
    expected = np.concatenate([np.flatnonzero(columns["origin"] == z) for z in (3, 12, 4)])
    assert found["row"].tolist() == expected.tolist()
    assert on_disk.trips_from([], ["dest"])["dest"].size == 0


def test_only_the_row_groups_of_the_zones_asked_for_are_read(columns, on_disk):
    n_groups = -(-20_000 // 500)
    zone_trips = int((columns["origin"] == 5).sum())  # about 490
    on_disk.trips_from([5], ["dest", "minute"])
    assert on_disk.groups_read <= zone_trips // 500 + 2 < n_groups
    on_disk.groups_read = 0
    on_disk.trips_from([5, 6, 7], ["dest"])  # neighbouring zones: contiguous rows
    assert on_disk.groups_read <= 3 * zone_trips // 500 + 3


def test_an_index_is_reopened_from_its_file(columns, on_disk):
    again = ZoneIndex.open(on_disk.path)
    assert np.array_equal(again.offsets, on_disk.offsets)
    assert again.column("dest").tolist() == on_disk.column("dest").tolist()
    inside = again.column("origin", inside_only=True)
    assert inside.size == int((columns["origin"] >= 0).sum()) and (inside >= 0).all()


def test_a_file_that_is_no_index_is_refused(tmp_path):
    path = tmp_path / "other.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(path)
    with pytest.raises(ValueError, match="not a zone index"):
        ZoneIndex.open(path)


def test_no_trips(tmp_path):
    empty = {"origin": np.zeros(0, int), "dest": np.zeros(0, int), "minute": np.zeros(0)}
    for path in (None, tmp_path / "e.parquet"):
        index = ZoneIndex.build(empty, n_zones=3, path=path)
        assert index.n_trips == 0
        assert index.trips_from([0, 1, -1], ["dest", "minute"])["dest"].size == 0
