"""The dashboard's questions of kept training trips: the same answers as in memory, bounded reads.

The tiny demo model's training trips are read three ways: as a DataFrame (everything in
memory, the reference), as a :class:`TripTable` over the kept Parquet file (zones and
index derived once, kept beside the file) and again from that cache. Every answer must
be the same; the cached start must read no trip, and an answer only a few row groups.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from vrvm.services.analyst.area_check import model_area
from vrvm.services.answers.forecast import answer_od, observed_pair_trips
from vrvm.services.map import trip_index
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import place_from_zone
from vrvm.services.map.support import origin_support, pair_support
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.store import zone_index

DEPARTURE = "2024-03-05 08:15"


@pytest.fixture
def home(tiny_home, tmp_path):
    copy = tmp_path / "home"
    shutil.copytree(tiny_home, copy)
    return copy


@pytest.fixture
def small_groups(monkeypatch):
    """Index files of 64-trip row groups, so that the 3,000 tiny trips span many."""
    monkeypatch.setattr(zone_index, "INDEX_ROW_GROUP_ROWS", 64)


def _same_area(a, b):
    pd.testing.assert_frame_equal(a.grid, b.grid)
    assert (a.resolution, a.bbox, a.view, a.median_trip_km) == (
        b.resolution,
        b.bbox,
        b.view,
        b.median_trip_km,
    )
    assert a.boundaries == b.boundaries
    assert a.support.n_trips == b.support.n_trips
    assert np.array_equal(a.support.offsets, b.support.offsets)
    assert np.array_equal(a.support.dest, b.support.dest)
    assert np.array_equal(a.support.minute, b.support.minute)
    assert np.array_equal(a.support.trip_row, b.support.trip_row)


def test_kept_trips_give_the_area_of_the_trips_in_memory(home, tiny_model, tiny_area, small_groups):
    table = Home(home).training_trip_table(tiny_model)
    assert table is not None and len(table) == 3000
    built = build_service_area(tiny_model, trips=table)
    _same_area(built, tiny_area)
    kept = sorted(p.name for p in table.cache_dir.iterdir())
    assert any(n.startswith("hexagons-") and n.endswith(".parquet") for n in kept)
    # a later start (a new process) reads the kept zones, not the trips
    fresh = Home(home).training_trip_table(tiny_model)
    again = build_service_area(tiny_model, trips=fresh)
    assert fresh.groups_read == 0
    _same_area(again, tiny_area)


def test_an_index_kept_before_the_day_counts_is_built_again(home, tiny_model, tiny_area):
    """Homes kept indexes before they counted the trips by kind of day: such an index
    is built again (in place), not read as if no trip were on a weekend or a weekday."""
    import json

    import pyarrow.parquet as pq

    table = Home(home).training_trip_table(tiny_model)
    area = build_service_area(tiny_model, trips=table)
    counts = {k: area.support.day_kind_trips(k) for k in ("weekday", "weekend")}
    assert sum(counts.values()) == len(table) and min(counts.values()) > 0
    path = area.support.index.path
    old = pq.read_table(path)
    document = json.loads(old.schema.metadata[zone_index._META_KEY])
    del document["meta"]["day_kind_trips"]  # as an index from before the counts
    metadata = {**old.schema.metadata, zone_index._META_KEY: json.dumps(document).encode()}
    pq.write_table(old.replace_schema_metadata(metadata), path)
    assert zone_index.ZoneIndex.open(path).meta.get("day_kind_trips") is None
    fresh = build_service_area(tiny_model, trips=Home(home).training_trip_table(tiny_model))
    assert {k: fresh.support.day_kind_trips(k) for k in counts} == counts
    assert zone_index.ZoneIndex.open(path).meta["day_kind_trips"] == counts
    _same_area(fresh, tiny_area)


def test_support_counts_match_for_every_pair(home, tiny_model, tiny_area, small_groups):
    area = build_service_area(tiny_model, trips=Home(home).training_trip_table(tiny_model))
    n = len(area.grid)
    for origin in range(0, n, max(1, n // 25)):
        for minute in (0.0, 8 * 60 + 15):
            got = origin_support(area.support, origin, minute)
            pd.testing.assert_frame_equal(got, origin_support(tiny_area.support, origin, minute))
            for dest in range(0, n, max(1, n // 10)):
                assert pair_support(area.support, origin, dest, minute) == pair_support(
                    tiny_area.support, origin, dest, minute
                )


def test_observed_trips_match_the_scan_of_every_trip(home, tiny_model, small_groups):
    trips = Home(home).load_training_trips(tiny_model)
    table = Home(home).training_trip_table(tiny_model)
    area = build_service_area(tiny_model, trips=table)
    table.groups_read = 0  # deriving the zones read the trips once; answers read none
    busy = area.grid.sort_values("n_points", ascending=False)["zone"].to_numpy()
    rng = np.random.default_rng(0)
    pairs = [(busy[0], busy[0]), (busy[0], busy[1]), (busy[-1], busy[0])]
    pairs += [tuple(rng.choice(busy, 2, replace=False)) for _ in range(30)]
    for o, d in pairs:
        origin, dest = place_from_zone(area, o), place_from_zone(area, d)
        for min_trips in (1, 3, 10**6):
            kwargs = {"tz": tiny_model.tz_, "min_trips": min_trips}
            scan = observed_pair_trips(trips, origin, dest, area.resolution, **kwargs)
            indexed = observed_pair_trips(table, origin, dest, area.resolution, area=area, **kwargs)
            assert indexed[1] == scan[1]
            pd.testing.assert_frame_equal(indexed[0], scan[0])
    assert table.groups_read == 0  # the index answered, not a scan of the trips


def test_an_answer_reads_a_few_row_groups_of_the_index(home, tiny_model, small_groups):
    table = Home(home).training_trip_table(tiny_model)
    area = build_service_area(tiny_model, trips=table)
    index = area.support.index
    assert index.path is not None and index.path.parent == table.cache_dir
    n_groups = -(-index.n_trips // 64)
    row = int(area.grid["n_points"].idxmax())
    origin = place_from_zone(area, area.grid["zone"][row])
    dest = place_from_zone(area, area.grid["zone"][(row + 5) % len(area.grid)])
    index.groups_read = table.groups_read = 0
    answer = answer_od(
        tiny_model, origin, dest, DEPARTURE, 15, trips=table, resolution=area.resolution, area=area
    )
    near = area.support.near(row)
    near_trips = int(sum(area.support.offsets[z + 1] - area.support.offsets[z] for z in near))
    assert answer.support is not None and answer.support.n_near <= near_trips
    # the trips from the origin's zone and its neighbours (contiguous in the index),
    # read once for the counts and the observed trips together
    assert index.groups_read <= near_trips // 64 + 2 * len(near) + 1 < n_groups
    assert table.groups_read == 0  # not one training trip was read


def test_polygons_give_the_same_answers_from_kept_trips(home, tiny_model, small_groups):
    squares = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"id": f"{i}-{j}", "name": f"square {i} {j}"},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [
                        [
                            [-30.2 + 0.05 * i, -40.1 + 0.05 * j],
                            [-30.15 + 0.05 * i, -40.1 + 0.05 * j],
                            [-30.15 + 0.05 * i, -40.05 + 0.05 * j],
                            [-30.2 + 0.05 * i, -40.05 + 0.05 * j],
                            [-30.2 + 0.05 * i, -40.1 + 0.05 * j],
                        ]
                    ],
                },
            }
            for i in range(8)
            for j in range(6)
        ],
    }
    zones = ZoneFile.from_geojson(squares)
    trips = Home(home).load_training_trips(tiny_model)
    memory = build_service_area(tiny_model, trips=trips, zones=zones)
    kept = build_service_area(
        tiny_model, trips=Home(home).training_trip_table(tiny_model), zones=zones
    )
    again = build_service_area(
        tiny_model, trips=Home(home).training_trip_table(tiny_model), zones=zones
    )
    for area in (kept, again):
        pd.testing.assert_frame_equal(area.grid, memory.grid)
        assert (area.view, area.resolution) == (memory.view, memory.resolution)
        for o in range(len(memory.grid)):
            pd.testing.assert_frame_equal(
                origin_support(area.support, o, 500.0), origin_support(memory.support, o, 500.0)
            )
            for d in range(0, len(memory.grid), 3):
                o_zone, d_zone = memory.grid["zone"][o], memory.grid["zone"][d]
                pd.testing.assert_frame_equal(
                    area.observed_between(True, o_zone, d_zone, tiny_model.tz_),
                    memory.observed_between(trips, o_zone, d_zone, tiny_model.tz_),
                )


def test_the_model_area_from_kept_trips_is_kept_too(home, tiny_model):
    trips = Home(home).load_training_trips(tiny_model)
    table = Home(home).training_trip_table(tiny_model)
    assert model_area(tiny_model, table) == model_area(tiny_model, trips)
    fresh = Home(home).training_trip_table(tiny_model)
    assert model_area(tiny_model, fresh) == model_area(tiny_model, trips)
    assert fresh.groups_read == 0


def test_a_model_without_kept_trips(home, tiny_model, tiny_area):
    for path in (home / "training").glob("*.parquet"):
        path.unlink()
    assert Home(home).training_trip_table(tiny_model) is None
    area = build_service_area(tiny_model, trips=None)
    assert area.support is None
    origin = place_from_zone(area, area.grid["zone"][0])
    dest = place_from_zone(area, area.grid["zone"][3])
    answer = answer_od(
        tiny_model, origin, dest, DEPARTURE, 15, trips=None, resolution=area.resolution, area=area
    )
    assert answer.support is None and answer.observed.empty


def test_no_trips_is_no_table():
    assert trip_index.as_trip_table(None) is None
    assert trip_index.as_trip_table(pd.DataFrame({"origin_lat": []})) is None
