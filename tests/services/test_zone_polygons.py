"""A planner's polygons as the map's zones: Chicago community areas, NYC taxi zones.

Real trips and real zone files (``shared_data``); every count is checked against a
brute-force point-in-polygon lookup (:meth:`ZoneFile.zone_of`) of each trip end.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import shapely

from tests.conftest import PLACES_ONLY
from vrvm import TravelTimeModel, read_trips
from vrvm.services.answers.forecast import answer_od
from vrvm.services.map.area import build_service_area, set_zone_choice, zone_choice
from vrvm.services.map.map_layers import zone_features, zone_layer_data
from vrvm.services.map.places import (
    ODState,
    apply_map_selection,
    place_from_label,
    place_from_latlon,
)
from vrvm.services.map.support import minute_of_day, origin_support, pair_support
from vrvm.services.planning.coverage import (
    coverage_csv,
    coverage_geojson,
    coverage_grid,
    coverage_map,
)
from vrvm.services.planning.url_state import from_query_params, to_query_params
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile

DEPARTURE = "2016-03-08 08:15"


_BUILT: dict[str, tuple] = {}


@pytest.fixture
def chicago(shared_data):
    """Chicago taxi trips, a small model, the community areas and their service area.

    Built once per module run (``shared_data`` skips or fails first when the data are
    missing).
    """
    trips_path = shared_data("chicago_taxi_trips.csv")
    if "chicago" in _BUILT:
        return _BUILT["chicago"]
    trips, _ = read_trips(trips_path)
    zones = ZoneFile.read(shared_data("chicago_community_areas.geojson"), id_property="area_numbe")
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=80, **PLACES_ONLY)
    model.fit(trips)
    area = build_service_area(model, trips=trips, zones=zones)
    _BUILT["chicago"] = (trips, zones, model, area)
    return _BUILT["chicago"]


def brute_force_ends(zones: ZoneFile, trips: pd.DataFrame):
    """The community area of every trip end, one point at a time (no STRtree batching)."""
    key = f"ends-{id(zones)}"
    if key not in _BUILT:
        ends = []
        for lat, lon in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
            points = zip(trips[lat], trips[lon], strict=True)
            ends.append(np.array([zones.zone_of([a], [b])[0] for a, b in points], dtype=object))
        _BUILT[key] = tuple(ends)
    return _BUILT[key]


def test_the_zones_are_the_community_areas_holding_trip_ends(chicago):
    trips, zones, _, area = chicago
    origin, dest = brute_force_ends(zones, trips)
    ends = pd.Series(np.concatenate([origin, dest])).dropna()
    assert area.kind == "polygons" and len(zones) == 77
    assert set(area.grid["zone"]) == set(ends)
    assert 60 <= len(area.grid) < 77  # a few areas hold no trip end: not clickable
    counts = ends.value_counts()
    assert area.grid.set_index("zone")["n_points"].to_dict() == counts.to_dict()
    loop = area.grid.loc[area.grid["zone"] == "32"].iloc[0]
    assert loop["label"] == "32 · Loop" and loop["place"] == "Loop"
    assert area.grid["label"].is_unique
    assert area.grid["zone"].tolist()[:3] == ["1", "2", "3"]  # numbers in number order
    # the others are drawn faintly under the zones, never picked
    idle = [f for f in area.boundaries["features"] if f["properties"]["kind"] == "idle_zone"]
    assert len(idle) == 77 - len(area.grid)
    # each zone stands for a point inside its polygon
    inside = shapely.contains_xy(
        zones.geometries[zones.positions(area.grid["zone"])], area.grid["lon"], area.grid["lat"]
    )
    assert inside.all()
    # the map opens on the dense part of the trips, the Loop in view
    assert 41.8 < area.view.latitude < 42.0 and area.view.zoom >= 10


def test_clicks_and_typed_points_find_the_polygon(chicago):
    trips, zones, _, area = chicago
    lat, lon = trips["origin_lat"].to_numpy()[:300], trips["origin_lon"].to_numpy()[:300]
    rows = area.zone_rows(lat, lon)
    expected = zones.zone_of(lat, lon)
    np.testing.assert_array_equal(area.grid["zone"].to_numpy()[rows], expected)
    # a click on the polygon layer: the picked GeoJSON feature names its zone
    data = zone_layer_data(area)
    features = zone_features(area, data)
    assert len(features) == len(area.grid) and features[5]["properties"]["zone"] == "6"
    payload = {"selection": {"indices": {"zones": [5]}, "objects": {"zones": [features[5]]}}}
    state = apply_map_selection(ODState(), payload, area)
    assert state.origin.zone == area.grid["zone"][5] and state.origin.kind == "zone"
    # typed: the representative point is the zone itself, another point inside is a point
    row = area.grid.iloc[10]
    assert place_from_latlon(area, row["lat"], row["lon"]) == place_from_label(area, row["label"])
    point = place_from_latlon(area, lat[0], lon[0])
    assert point.zone == expected[0] and "(in " in point.label


def test_a_point_in_the_lake_names_the_nearest_zone(chicago):
    _, _, _, area = chicago
    with pytest.raises(ValueError) as error:
        place_from_latlon(area, 41.88, -87.55)  # Lake Michigan, off the Loop
    message = str(error.value)
    assert "not near any training trips" in message and "latitudes" not in message
    assert "The nearest zone is " in message and " km away" in message
    nearest = message.split("The nearest zone is ")[1].split(",")[0]
    assert nearest in {"8 · Near North Side", "32 · Loop", "33 · Near South Side"}


def test_an_answer_between_two_community_areas(chicago):
    trips, zones, model, area = chicago
    a = place_from_label(area, "8 · Near North Side")
    b = place_from_label(area, "76 · Ohare")
    for place, zone in ((a, "8"), (b, "76")):
        polygon = zones.geometries[zones.positions([zone])[0]]
        assert shapely.contains_xy(polygon, place.lon, place.lat)  # the query point
    departure = pd.Timestamp(DEPARTURE, tz=model.tz_)
    answer = answer_od(model, a, b, departure, 30, trips=None, resolution=8, area=area)
    assert answer.forecast.origin == a and answer.forecast.dest == b
    assert 5 < answer.forecast.median_min < 120
    # support: the training trips from exactly the one area to the other
    origin, dest = brute_force_ends(zones, trips)
    local = trips["start_time"].dt.tz_convert(model.tz_)
    minutes = (local.dt.hour * 60 + local.dt.minute + local.dt.second / 60).to_numpy()
    between = (origin == "8") & (dest == "76")
    gap = np.abs(minutes - 8 * 60 - 15) % 1440
    at_time = between & (np.minimum(gap, 1440 - gap) <= 60)
    support = answer.support
    assert support.n_near == support.n_zone_pair == int(between.sum()) > 5
    assert support.n_near_at_time == int(at_time.sum())
    assert "between these two zones" in support.sentence()
    observed = area.observed_between(trips, "8", "76", model.tz_)
    assert len(observed) == int(between.sum())
    np.testing.assert_allclose(
        np.sort(observed["minutes"]), np.sort(trips.loc[between, "travel_time_s"] / 60)
    )


def test_support_counts_equal_a_brute_force_count_per_polygon_pair(chicago):
    trips, zones, model, area = chicago
    origin, dest = brute_force_ends(zones, trips)
    departure = pd.Timestamp(DEPARTURE, tz=model.tz_)
    minute = minute_of_day(departure, model.tz_)
    pairs = pd.crosstab(pd.Series(origin, name="o"), pd.Series(dest, name="d"))
    zone = area.grid["zone"].tolist()
    for o in range(0, len(zone), 7):
        table = origin_support(area.support, o, minute)["support_trips"].to_numpy()
        expected = pairs.reindex(index=[zone[o]], columns=zone, fill_value=0).to_numpy()[0]
        np.testing.assert_array_equal(table, expected)
        for d in range(0, len(zone), 11):
            assert pair_support(area.support, o, d, minute).n_zone_pair == expected[d]


def test_reach_map_by_polygon_and_its_downloads(chicago):
    _, zones, model, area = chicago
    origin = place_from_label(area, "32 · Loop")
    departure = pd.Timestamp(DEPARTURE, tz=model.tz_)
    grid = coverage_grid(model, area, origin, departure, threshold_min=20)
    assert len(grid) == len(area.grid) and grid["name"][0] == "Rogers Park"
    fill, tips, _ = coverage_map(grid, "probability", 20, near=False)
    assert fill.shape == (len(grid), 4) and "from the origin's zone to here" in tips[0]
    table = pd.read_csv(
        pd.io.common.BytesIO(coverage_csv(grid, origin, departure, 20)), dtype={"zone": str}
    )
    assert table["zone"].tolist() == area.grid["zone"].tolist()
    assert table["name"].tolist() == area.grid["place"].tolist()
    document = json.loads(coverage_geojson(grid, origin, departure, 20))
    assert len(document["features"]) == len(area.grid)
    for feature in document["features"][::9]:
        props = feature["properties"]
        polygon = zones.geometries[zones.positions([props["zone"]])[0]]
        shape = shapely.geometry.shape(feature["geometry"])
        assert shape.geom_type in ("Polygon", "MultiPolygon")
        # the zone polygon itself, to 6 decimals (0.1 m), not a hexagon
        assert shapely.hausdorff_distance(shape, polygon) < 1e-6
        assert props["name"] == zones.names[zones.positions([props["zone"]])[0]]
        assert 0 <= props["p_within_20min"] <= 1


def test_shared_links_restore_polygon_places(chicago):
    _, _, model, area = chicago
    a = place_from_label(area, "8 · Near North Side")
    b = place_from_label(area, "32 · Loop")
    departure = pd.Timestamp(DEPARTURE, tz=model.tz_)
    params = to_query_params(ODState(a, b), departure, threshold_min=20)
    view, warnings = from_query_params(params, area, model.tz_)
    assert not warnings
    assert view.state.origin == a and view.state.dest == b


def test_nyc_taxi_zones(shared_data):
    trips, _ = read_trips(shared_data("nyc_taxi_2016_sample.csv"))
    zones = ZoneFile.read(shared_data("nyc_taxi_zones.geojson"), id_property="LocationID")
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60, **PLACES_ONLY)
    model.fit(trips)
    area = build_service_area(model, trips=trips, zones=zones)
    assert len(zones) == 263 and 100 < len(area.grid) < 263
    ends = zones.zone_of(
        np.concatenate([trips["origin_lat"], trips["dest_lat"]]),
        np.concatenate([trips["origin_lon"], trips["dest_lon"]]),
    )
    assert set(area.grid["zone"]) == set(ends[ends != None])  # noqa: E711 (object array)
    assert "132 · JFK Airport" in area.labels
    assert area.support.dest.size == int((ends[: len(trips)] != None).sum())  # noqa: E711
    with pytest.raises(ValueError, match="not near any training trips"):
        place_from_latlon(area, 40.70, -74.03)  # New York Harbor


def test_the_choice_of_zones_is_kept_in_the_home(tmp_path, shared_data):
    data = shared_data("chicago_community_areas.geojson").read_bytes()
    assert zone_choice(tmp_path) is None
    Home(tmp_path).zones.add("community-areas", data, id_property="area_numbe")
    set_zone_choice(tmp_path, "community-areas")
    assert zone_choice(tmp_path).name == "community-areas"
    with pytest.raises(KeyError):
        set_zone_choice(tmp_path, "nowhere")
    Home(tmp_path).zones.remove("community-areas")
    assert zone_choice(tmp_path) is None
