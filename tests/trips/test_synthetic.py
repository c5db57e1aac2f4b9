"""Tests for vrvm.trips.synthetic: the synthetic city has the structure its docs promise."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests._counting import python_calls
from vrvm.trips import CANONICAL_COLUMNS, clean_trips, read_trips
from vrvm.trips.synthetic import (
    SYNTHETIC_CITY_CENTER,
    SYNTHETIC_CITY_NAME,
    synthetic_city,
    synthetic_city_geojson,
)

EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1, lon1, lat2, lon2):
    lat1, lon1, lat2, lon2 = (
        np.radians(np.asarray(v, dtype=float)) for v in (lat1, lon1, lat2, lon2)
    )
    a = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(a))


@pytest.fixture(scope="module")
def trips() -> pd.DataFrame:
    return synthetic_city(n_trips=60_000, seed=7)


@pytest.fixture(scope="module")
def layers() -> dict:
    return synthetic_city_geojson()


def feature(layers: dict, kind: str) -> list[dict]:
    return [f for f in layers["features"] if f["properties"]["kind"] == kind]


def distance_km(trips: pd.DataFrame) -> np.ndarray:
    return haversine_km(
        trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"]
    )


def test_deterministic_for_a_seed():
    a = synthetic_city(n_trips=3000, seed=11)
    b = synthetic_city(n_trips=3000, seed=11)
    c = synthetic_city(n_trips=3000, seed=12)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs
    assert not a["travel_time_s"].equals(c["travel_time_s"])


def test_canonical_schema_and_synthetic_labels(trips):
    assert tuple(trips.columns) == CANONICAL_COLUMNS
    for column in ("origin_lat", "origin_lon", "dest_lat", "dest_lon", "travel_time_s"):
        assert trips[column].dtype == np.float64
    assert str(trips["start_time"].dtype) == "datetime64[ns, UTC]"
    assert trips["start_time"].is_monotonic_increasing
    assert isinstance(trips.index, pd.RangeIndex) and len(trips) == 60_000
    assert not trips.isna().any().any()
    assert trips.attrs["synthetic"] is True
    assert trips.attrs["city"] == SYNTHETIC_CITY_NAME == "Synthetica (synthetic city)"
    assert trips.attrs["tz"] == "UTC" and trips.attrs["schema"] == "canonical"
    assert "synthetic" in trips.attrs["source"]


def test_located_in_open_ocean(trips):
    lat0, lon0 = SYNTHETIC_CITY_CENTER
    assert (lat0, lon0) == (-40.0, -30.0)
    for lat, lon in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        assert trips[lat].between(lat0 - 0.5, lat0 + 0.5).all()
        assert trips[lon].between(lon0 - 0.5, lon0 + 0.5).all()


def test_every_trip_passes_default_cleaning(trips):
    kept, report = clean_trips(trips)
    assert report.dropped == 0, report.summary()
    assert len(kept) == len(trips)
    assert kept.attrs["synthetic"] is True  # labels survive cleaning


def test_travel_times_are_right_skewed(trips):
    t = trips["travel_time_s"]
    assert t.min() >= 120  # the fixed pickup overhead
    assert t.mean() > t.median() and t.skew() > 0.5
    # Skewed given the trip too, not only through the mix of distances: relative to
    # the median of trips of similar straight-line length, the upper tail is longer.
    band = pd.cut(distance_km(trips), np.arange(0.0, 30.0, 0.5))
    ratio = t / t.groupby(band, observed=True).transform("median")
    assert ratio.skew() > 1.0
    assert ratio.quantile(0.99) - 1 > 2 * (1 - ratio.quantile(0.01))
    # and even in log scale (log-normal noise plus additive delays)
    assert np.log(ratio).skew() > 0.1


def river_side(lat, lon, layers) -> np.ndarray:
    river = np.asarray(feature(layers, "river")[0]["geometry"]["coordinates"])
    assert np.all(np.diff(river[:, 0]) > 0)  # a function of longitude: west to east
    return np.asarray(lat) > np.interp(lon, river[:, 0], river[:, 1])


def test_crossing_the_river_is_slower_at_equal_straight_line_distance(trips, layers):
    north_o = river_side(trips["origin_lat"], trips["origin_lon"], layers)
    north_d = river_side(trips["dest_lat"], trips["dest_lon"], layers)
    crosses = north_o != north_d
    dist = distance_km(trips)
    t = trips["travel_time_s"].to_numpy()
    assert 0.1 < crosses.mean() < 0.6
    for lo, hi in ((2, 4), (4, 6), (6, 9)):
        band = (dist >= lo) & (dist < hi)
        same, cross = t[band & ~crosses].mean(), t[band & crosses].mean()
        print(f"{lo}-{hi} km: same bank {same:.0f} s, crossing {cross:.0f} s")
        assert (band & crosses).sum() > 200
        assert cross > 1.05 * same


def test_weekday_peak_is_slower_than_night(trips):
    start = trips["start_time"]
    hour = start.dt.hour + start.dt.minute / 60
    weekday = start.dt.dayofweek < 5
    dist = distance_km(trips)
    pace = trips["travel_time_s"] / dist  # seconds per straight-line km
    longish = dist > 2
    morning = pace[longish & weekday & (hour >= 7.5) & (hour < 8.5)].median()
    evening = pace[longish & weekday & (hour >= 17) & (hour < 18)].median()
    night = pace[longish & (hour < 5)].median()
    weekend_morning = pace[longish & ~weekday & (hour >= 7.5) & (hour < 8.5)].median()
    print(f"s/km: morning {morning:.0f}, evening {evening:.0f}, night {night:.0f}")
    assert morning > 1.3 * night
    assert evening > 1.3 * night
    assert morning > 1.15 * weekend_morning
    # and demand peaks too: more trips start at 8:00 than at 4:00 on weekdays
    counts = hour[weekday].astype(int).value_counts()
    assert counts[8] > 3 * counts[4] and counts[17] > 3 * counts[4]


def test_start_times_span_several_weeks(trips):
    span = trips["start_time"].max() - trips["start_time"].min()
    assert pd.Timedelta(days=35) < span <= pd.Timedelta(days=42)
    assert trips["start_time"].dt.dayofweek.nunique() == 7


def test_airport_trips_present_and_use_the_highway(trips, layers):
    lon, lat = feature(layers, "airport")[0]["geometry"]["coordinates"]
    to_airport = haversine_km(trips["dest_lat"], trips["dest_lon"], lat, lon) < 1.0
    from_airport = haversine_km(trips["origin_lat"], trips["origin_lon"], lat, lon) < 1.0
    assert 0.05 < to_airport.mean() < 0.15 and 0.05 < from_airport.mean() < 0.15
    assert not (to_airport & from_airport).any()
    dist = distance_km(trips)
    speed = dist / (trips["travel_time_s"] / 3600)
    # the highway makes airport trips the fastest in straight-line terms
    assert speed[to_airport].median() > 1.3 * speed[~to_airport & ~from_airport].median()
    assert speed.max() < 100


def test_round_trip_through_csv_and_read_trips(tmp_path):
    trips = synthetic_city(n_trips=2000, seed=3)
    path = tmp_path / "synthetica.csv"
    trips.to_csv(path, index=False)
    again, report = read_trips(path)
    assert report.dropped == 0 and report.n_input == 2000
    assert again.attrs["schema"] == "canonical" and again.attrs["tz"] == "UTC"
    pd.testing.assert_frame_equal(
        again, trips, check_like=False, check_exact=True, check_flags=False
    )


def test_geojson_layers(layers):
    json.dumps(layers)  # serialisable as is
    assert layers["type"] == "FeatureCollection"
    assert layers["synthetic"] is True and layers["name"] == SYNTHETIC_CITY_NAME
    kinds = [f["properties"]["kind"] for f in layers["features"]]
    assert kinds.count("bridge") == 3
    for kind, geometry in (
        ("river", "LineString"),
        ("downtown", "Polygon"),
        ("airport", "Point"),
        ("highway", "LineString"),
        ("city_limits", "Polygon"),
    ):
        (f,) = feature(layers, kind)
        assert f["geometry"]["type"] == geometry
    for f in layers["features"]:
        assert f["type"] == "Feature"
        assert f["properties"]["synthetic"] is True
        assert "synthetic" in f["properties"]["name"]
    # the airport lies outside the city limits, downtown inside
    limits = np.asarray(feature(layers, "city_limits")[0]["geometry"]["coordinates"][0])
    lon, lat = feature(layers, "airport")[0]["geometry"]["coordinates"]
    assert not (
        limits[:, 0].min() <= lon <= limits[:, 0].max()
        and limits[:, 1].min() <= lat <= limits[:, 1].max()
    )
    downtown = np.asarray(feature(layers, "downtown")[0]["geometry"]["coordinates"][0])
    assert downtown[:, 0].min() > limits[:, 0].min() and downtown[:, 1].max() < limits[:, 1].max()


def test_bridges_sit_on_the_river(layers):
    river = np.asarray(feature(layers, "river")[0]["geometry"]["coordinates"])
    for bridge in feature(layers, "bridge"):
        (lon0, lat0), (_, lat1) = bridge["geometry"]["coordinates"]
        river_lat = np.interp(lon0, river[:, 0], river[:, 1])
        assert lat0 < river_lat < lat1


def test_downtown_is_where_many_trips_start(trips, layers):
    downtown = np.asarray(feature(layers, "downtown")[0]["geometry"]["coordinates"][0])
    inside = trips["origin_lon"].between(downtown[:, 0].min(), downtown[:, 0].max()) & trips[
        "origin_lat"
    ].between(downtown[:, 1].min(), downtown[:, 1].max())
    # downtown is ~6% of the city's area but the origin of about a third of trips
    assert 0.25 < inside.mean() < 0.5


def test_trips_are_drawn_without_a_loop_over_trips():
    # what makes 200,000 trips take well under a second: every draw is vectorised, so
    # the Python work does not grow with the number of trips (no call per trip)
    synthetic_city(n_trips=1000)  # lazy imports and caches
    n_small = python_calls(lambda: synthetic_city(n_trips=2_000, seed=1))
    n_large = python_calls(lambda: synthetic_city(n_trips=200_000, seed=1))
    assert n_large - n_small < (200_000 - 2_000) / 100, (n_small, n_large)


@pytest.mark.parametrize("n_trips", [0, -5, 2.5, True, "100"])
def test_rejects_bad_sizes(n_trips):
    with pytest.raises(ValueError, match="n_trips must be a positive integer"):
        synthetic_city(n_trips=n_trips)


def test_rejects_bad_seed():
    with pytest.raises(ValueError, match="seed must be an integer"):
        synthetic_city(n_trips=10, seed="zero")


def test_single_trip():
    one = synthetic_city(n_trips=1, seed=0)
    assert len(one) == 1 and one["travel_time_s"].iloc[0] >= 120
