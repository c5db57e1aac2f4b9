"""Service layer of the dashboard (vrvm/dashboard.py): every computation a page shows."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import shutil

import h3
import numpy as np
import pandas as pd
import pytest

from vrvm import TravelTimeModel, dashboard, synthetic_city, trips_sha256
from vrvm.datasets import synthetic_city_geojson
from vrvm.storage import ModelStore
from vrvm.zones import latlng_to_zone

# ------------------------------------------------------------------- data home, first start


def test_data_home_defaults_to_dot_vrvm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert dashboard.data_home({}) == tmp_path / ".vrvm"
    assert dashboard.data_home({"VRVM_HOME": str(tmp_path / "x")}) == tmp_path / "x"
    assert dashboard.data_home({"VRVM_HOME": "  "}) == tmp_path / ".vrvm"


def test_demo_settings_from_environment():
    default = dashboard.demo_settings({})
    assert (default.n_trips, default.n_members, default.kernel_widths) == (20_000, 8, "auto")
    small = dashboard.demo_settings({"VRVM_DEMO_TRIPS": "500", "VRVM_DEMO_MEMBERS": "3"})
    assert (small.n_trips, small.n_members) == (500, 3)
    assert small.model_params()["n_members"] == 3
    with pytest.raises(ValueError, match="VRVM_DEMO_MEMBERS"):
        dashboard.demo_settings({"VRVM_DEMO_MEMBERS": "many"})
    with pytest.raises(ValueError, match="VRVM_DEMO_TRIPS"):
        dashboard.demo_settings({"VRVM_DEMO_TRIPS": "5"})


def test_first_start_trains_once_and_records_the_demo(tiny_home):
    store = dashboard.model_store(tiny_home)
    assert store.active_version() == 1
    info = store.versions()[0].info
    assert info["kind"] == "demo" and info["synthetic"] is True
    assert info["n_trips"] == 3000 and info["metrics"]["crps_s"] > 0
    # a second start finds the model and trains nothing
    version, trained = dashboard.ensure_demo_model(tiny_home, progress=pytest.fail)
    assert (version, trained) == (1, False)


def test_store_without_active_pointer_gets_latest_activated(tiny_home, tmp_path):
    home = tmp_path / "h"
    shutil.copytree(tiny_home, home)
    (home / "models" / "active.json").unlink()
    assert dashboard.model_store(home).active_version() is None
    assert dashboard.ensure_demo_model(home, progress=pytest.fail) == (1, False)
    assert dashboard.model_store(home).active_version() == 1


def test_training_trips_are_kept_by_content_hash(tmp_path, tiny_model, tiny_home):
    trips = synthetic_city(50, seed=3)
    path = dashboard.save_training_trips(tmp_path, trips)
    assert path.name == f"{trips_sha256(trips)}.parquet"
    assert dashboard.save_training_trips(tmp_path, trips) == path  # idempotent
    kept = dashboard.load_training_trips(tiny_home, tiny_model)
    assert len(kept) == 3000
    assert str(kept["start_time"].dt.tz) == "UTC"
    with pytest.raises(ValueError):
        dashboard.training_trips_path(tmp_path, "../../etc/passwd")


def test_data_description_says_synthetic(tiny_model):
    assert dashboard.is_synthetic(tiny_model)
    text = dashboard.data_description(tiny_model)
    assert "SYNTHETIC" in text and "3,000 trips" in text


# ------------------------------------------------------------------- service area


def test_zones_cover_every_training_trip_end(tiny_area, tiny_home, tiny_model):
    trips = dashboard.load_training_trips(tiny_home, tiny_model)
    zones = set(tiny_area.grid["zone"])
    for lat, lon in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        cells = latlng_to_zone(trips[lat], trips[lon], tiny_area.resolution)
        assert set(cells) <= zones
    # no holes: every zone's neighbours inside the hull are zones too (padding ring)
    assert 300 < len(tiny_area.grid) <= 2000
    assert tiny_area.grid["number"].tolist() == list(range(1, len(tiny_area.grid) + 1))
    assert tiny_area.grid["label"].is_unique
    assert tiny_area.synthetic and tiny_area.boundaries["synthetic"] is True


def test_zone_labels_name_places_from_boundaries(tiny_area):
    labels = tiny_area.grid["label"]
    assert labels.str.contains("Downtown Synthetica").sum() > 5
    assert labels.str.contains("Airport").sum() >= 1
    # the city limits contain most zones and name none of them
    assert not labels.str.contains("city limits").any()
    first = tiny_area.grid.iloc[0]
    assert first["label"].startswith("Zone 1 · ")


def test_zones_run_north_west_to_south_east(tiny_area):
    grid = tiny_area.grid
    assert grid["lat"].iloc[0] > grid["lat"].iloc[-1]


def test_service_area_without_kept_trips_uses_relevance_vectors_and_bbox(tiny_model):
    area = dashboard.build_service_area(tiny_model)
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_model.training_summary_["bbox"]
    corners = latlng_to_zone([lat_lo, lat_hi], [lon_lo, lon_hi], area.resolution)
    assert set(corners) <= set(area.grid["zone"])


def test_service_area_is_coarsened_to_at_most_max_zones(tiny_model):
    area = dashboard.build_service_area(tiny_model, target_zones=5000, max_zones=800)
    assert len(area.grid) <= 800


def test_view_fits_the_area_and_projects_back(tiny_area):
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_area.bbox
    x, y = dashboard.lnglat_to_pixel(
        tiny_area.view, [lat_lo, lat_hi], [lon_lo, lon_hi], width_px=800, height_px=560
    )
    assert np.all((x >= 0) & (x <= 800) & (y >= 0) & (y <= 560))
    # north is up, east is right
    assert y[1] < y[0] and x[1] > x[0]
    cx, cy = dashboard.lnglat_to_pixel(
        tiny_area.view,
        tiny_area.view.latitude,
        tiny_area.view.longitude,
        width_px=600,
        height_px=400,
    )
    assert (float(cx), float(cy)) == (300.0, 200.0)


def test_place_names_with_community_areas_and_holes():
    square = [[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]
    hole = [[0.5, 0.5], [1, 0.5], [1, 1], [0.5, 1], [0.5, 0.5]]
    other = [[[[3, 0], [4, 0], [4, 1], [3, 1], [3, 0]]]]
    boundaries = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"community": "NEAR WEST SIDE"},
                "geometry": {"type": "Polygon", "coordinates": [square, hole]},
            },
            {
                "type": "Feature",
                "properties": {"community": "LOOP"},
                "geometry": {"type": "MultiPolygon", "coordinates": other},
            },
        ],
    }
    names = dashboard.place_names(
        np.array([1.5, 0.75, 0.5, 9.0]),
        np.array([1.5, 0.75, 3.5, 9.0]),
        boundaries,
        broad_share=1.0,
    )
    assert names == ["Near West Side", "", "Loop", ""]


def test_parse_geojson_validates_uploads():
    good = json.dumps(synthetic_city_geojson()).encode()
    assert dashboard.parse_geojson(good)["type"] == "FeatureCollection"
    feature = json.dumps(synthetic_city_geojson()["features"][0]).encode()
    assert len(dashboard.parse_geojson(feature)["features"]) == 1
    for bad, message in (
        (b"\x89PNG\r\n", "not JSON"),
        (b"[1, 2]", "FeatureCollection"),
        (b'{"type": "FeatureCollection", "features": []}', "no features"),
    ):
        with pytest.raises(ValueError, match=message):
            dashboard.parse_geojson(bad)
    with pytest.raises(ValueError, match="larger than"):
        dashboard.parse_geojson(good, max_bytes=10)


# ------------------------------------------------------------------- origin and destination


def test_places_from_zone_label_and_coordinates(tiny_area):
    row = tiny_area.grid.iloc[40]
    by_zone = dashboard.place_from_zone(tiny_area, row["zone"])
    by_label = dashboard.place_from_label(tiny_area, row["label"])
    assert by_zone == by_label and by_zone.kind == "zone"
    assert (by_zone.lat, by_zone.lon) == (round(row["lat"], 6), round(row["lon"], 6))
    # typed at the zone centre: that zone; elsewhere: a point labelled with its zone
    assert dashboard.place_from_latlon(tiny_area, row["lat"], row["lon"]) == by_zone
    point = dashboard.place_from_latlon(tiny_area, row["lat"] + 0.001, row["lon"])
    assert point.kind == "point" and point.zone == h3.latlng_to_cell(
        point.lat, point.lon, tiny_area.resolution
    )
    assert "(in Zone" in point.label
    with pytest.raises(ValueError, match="outside the service area"):
        dashboard.place_from_latlon(tiny_area, 41.88, -87.63)
    with pytest.raises(ValueError):
        dashboard.place_from_label(tiny_area, "Zone 0 · nowhere")
    with pytest.raises(ValueError):
        dashboard.place_from_zone(tiny_area, "8928308280fffff")


@pytest.mark.parametrize("text", ["", "41.8", "a, b", "91, 0", "0, 181", "nan, 1"])
def test_parse_latlon_rejects(text):
    with pytest.raises(ValueError):
        dashboard.parse_latlon(text)


def _payload(area, index, *, with_object=True):
    record = dashboard.zone_layer_data(area, dashboard.ODState()).iloc[index].to_dict()
    selection = {
        "indices": {"zones": [index]},
        "objects": {"zones": [record] if with_object else []},
    }
    return {"selection": selection}


def test_map_clicks_set_origin_then_destination_then_restart(tiny_area):
    a, b, c = 10, 200, 300
    state = dashboard.ODState()
    state = dashboard.apply_map_selection(state, _payload(tiny_area, a), tiny_area)
    assert state.origin.zone == tiny_area.grid["zone"][a] and state.dest is None
    # the same selection seen again on a rerun changes nothing
    assert dashboard.apply_map_selection(state, _payload(tiny_area, a), tiny_area) == state
    state = dashboard.apply_map_selection(state, _payload(tiny_area, b), tiny_area)
    assert state.dest.zone == tiny_area.grid["zone"][b] and state.complete
    state = dashboard.apply_map_selection(state, _payload(tiny_area, c), tiny_area)
    assert state.origin.zone == tiny_area.grid["zone"][c] and state.dest is None


def test_a_redrawn_map_resending_its_selection_is_not_a_click(tiny_area):
    state = dashboard.apply_map_selection(dashboard.ODState(), _payload(tiny_area, 5), tiny_area)
    state = dashboard.apply_map_selection(state, _payload(tiny_area, 9), tiny_area)
    resent = _payload(tiny_area, 9)
    resent["selection"]["objects"]["zones"][0]["fill"] = [1, 2, 3, 4]  # new layer data
    assert dashboard.apply_map_selection(state, resent, tiny_area) == state
    assert dashboard.apply_map_selection(state, resent, tiny_area, mode="origin") == state


def test_clicking_the_same_zone_again_after_deselecting_counts(tiny_area):
    state = dashboard.apply_map_selection(dashboard.ODState(), _payload(tiny_area, 5), tiny_area)
    empty = {"selection": {"indices": {}, "objects": {}}}
    state = dashboard.apply_map_selection(state, empty, tiny_area)
    assert state.last_selection is None and state.origin is not None
    state = dashboard.apply_map_selection(state, _payload(tiny_area, 5), tiny_area)
    assert state.dest is not None and state.dest.zone == state.origin.zone


def test_selection_by_index_only_and_coverage_mode(tiny_area):
    payload = _payload(tiny_area, 7, with_object=False)
    assert dashboard.zone_from_selection(payload, tiny_area) == tiny_area.grid["zone"][7]
    assert dashboard.zone_from_selection(payload["selection"], tiny_area) is not None
    assert (
        dashboard.zone_from_selection({"selection": {"indices": {"zones": [10**6]}}}, tiny_area)
        is None
    )
    assert dashboard.zone_from_selection(None, tiny_area) is None
    start = dashboard.ODState(
        origin=dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][1])
    )
    state = dashboard.apply_map_selection(start, payload, tiny_area, mode="origin")
    assert state.origin.zone == tiny_area.grid["zone"][7] and state.dest is None


def test_swap_and_clear(tiny_area):
    a = dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][0])
    b = dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][1])
    state = dashboard.ODState(a, b, "x")
    assert state.swapped() == dashboard.ODState(b, a, "x")
    assert state.cleared() == dashboard.ODState(None, None, "x")


def test_query_parameters_round_trip(tiny_area, tiny_model):
    zone_place = dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][100])
    row = tiny_area.grid.iloc[300]
    point = dashboard.place_from_latlon(tiny_area, row["lat"] + 0.0012345, row["lon"] - 0.001)
    state = dashboard.ODState(zone_place, point)
    departure = pd.Timestamp("2024-03-05 08:15", tz=tiny_model.tz_)
    params = dashboard.to_query_params(
        state, departure, threshold_min=8, mode="coverage", metric="median", confidence=0.9
    )
    assert all(isinstance(v, str) for v in params.values())
    view, warnings = dashboard.from_query_params(params, tiny_area, tiny_model.tz_)
    assert warnings == []
    assert view.state == state
    assert view.departure == departure
    assert (view.threshold_min, view.mode, view.metric, view.confidence) == (
        8.0,
        "coverage",
        "median",
        0.9,
    )
    # streamlit may hand over repeated keys as lists
    listed = {k: [v] for k, v in params.items()}
    assert dashboard.from_query_params(listed, tiny_area, tiny_model.tz_)[0] == view


def test_bad_query_parameters_are_ignored_with_warnings(tiny_area):
    params = {
        "o": "41.88,-87.63",
        "d": "x",
        "t": "not a time",
        "thr": "-3",
        "mode": "teleport",
        "metric": "vibes",
        "conf": "2",
    }
    view, warnings = dashboard.from_query_params(params, tiny_area, "UTC")
    assert view == dashboard.ViewParams()
    assert len(warnings) == 7


# ------------------------------------------------------------------- forecasts


@pytest.fixture(scope="module")
def pair(tiny_area):
    grid = tiny_area.grid
    busiest = grid.sort_values("n_points", ascending=False)["zone"]
    origin = dashboard.place_from_zone(tiny_area, busiest.iloc[0])
    dest = dashboard.place_from_zone(tiny_area, busiest.iloc[5])
    return origin, dest


DEPARTURE = pd.Timestamp("2024-03-05 08:15", tz="UTC")


def test_forecast_in_minutes_matches_the_mixture(tiny_model, pair):
    origin, dest = pair
    forecast = dashboard.forecast_od(tiny_model, origin, dest, DEPARTURE, threshold_min=20)
    dist = tiny_model.predict_dist(dashboard.query_frame(origin, dest, DEPARTURE))
    assert forecast.median_min == pytest.approx(dist.median()[0] / 60)
    assert forecast.mean_min == pytest.approx(dist.mean()[0] / 60)
    assert forecast.prob_within == pytest.approx(dist.cdf(1200.0)[0])
    table = forecast.intervals
    assert table["level"].tolist() == [0.5, 0.8, 0.95]
    assert table["interval"].tolist() == ["50 %", "80 %", "95 %"]
    lo95, hi95 = dist.interval(0.95)
    assert table["lower_min"].iloc[2] == pytest.approx(lo95[0] / 60)
    assert table["upper_min"].iloc[2] == pytest.approx(hi95[0] / 60)
    # nested intervals around the median
    assert np.all(np.diff(table["lower_min"]) < 0) and np.all(np.diff(table["upper_min"]) > 0)
    assert table["lower_min"].iloc[0] < forecast.median_min < table["upper_min"].iloc[0]
    np.testing.assert_allclose(table["width_min"], table["upper_min"] - table["lower_min"])
    text = forecast.summary_text()
    assert f"{forecast.median_min:.0f} min" in text and "P(arrive within 20 min)" in text


def test_quantile_table(tiny_model, pair):
    dist = tiny_model.predict_dist(dashboard.query_frame(*pair, DEPARTURE))
    table = dashboard.quantile_table(dist, (0.1, 0.5, 0.9))
    assert table["minutes"].is_monotonic_increasing
    assert table["minutes"].iloc[1] == pytest.approx(dist.median()[0] / 60)


def test_density_curve_is_the_mixture_and_its_members(tiny_model, pair):
    dist = tiny_model.predict_dist(dashboard.query_frame(*pair, DEPARTURE))
    curve = dashboard.density_curve(dist, n_points=800)
    members = curve[[c for c in curve.columns if c.startswith("member_")]]
    assert members.shape[1] == tiny_model.n_members
    np.testing.assert_allclose(members.sum(axis=1), curve["density"], rtol=1e-10)
    mass = np.trapezoid(curve["density"], curve["minutes"])
    assert 0.99 < mass <= 1.0
    assert curve["minutes"].is_monotonic_increasing and curve["minutes"].iloc[0] > 0


def test_time_of_day_profile(tiny_model, pair):
    origin, dest = pair
    profile = dashboard.time_of_day_profile(tiny_model, origin, dest, DEPARTURE, step_min=15)
    assert len(profile) == 97 and profile["hour"].iloc[-1] == 24.0
    quantiles = profile[["q05", "q10", "q25", "q50", "q75", "q90", "q95"]].to_numpy()
    assert np.all(np.diff(quantiles, axis=1) > 0)
    at_departure = profile.loc[profile["hour"] == 8.25, "q50"].iloc[0]
    single = dashboard.forecast_od(tiny_model, origin, dest, DEPARTURE, 10).median_min
    assert at_departure == pytest.approx(single, rel=1e-9)
    assert profile["departure"].iloc[0] == pd.Timestamp("2024-03-05", tz="UTC")


@pytest.mark.parametrize("day", ["2024-03-10", "2024-11-03"])
def test_time_of_day_profile_across_daylight_saving_changes(tiny_model, pair, day):
    import copy

    chicago = copy.copy(tiny_model)
    chicago.tz_ = "America/Chicago"
    departure = pd.Timestamp(f"{day} 12:00", tz="America/Chicago").tz_convert("UTC")
    profile = dashboard.time_of_day_profile(chicago, *pair, departure)
    assert len(profile) == 97 and profile["departure"].iloc[0].day == int(day[-2:])
    assert str(profile["departure"].dt.tz) == "America/Chicago"


def test_observed_trips_of_a_zone_pair(tiny_home, tiny_model, tiny_area, pair):
    trips = dashboard.load_training_trips(tiny_home, tiny_model)
    origin, dest = pair
    observed, rings = dashboard.observed_pair_trips(
        trips, origin, dest, tiny_area.resolution, min_trips=1
    )
    o = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], tiny_area.resolution)
    d = latlng_to_zone(trips["dest_lat"], trips["dest_lon"], tiny_area.resolution)
    expected = trips[(o == origin.zone) & (d == dest.zone)]
    if len(expected):
        assert rings == 0 and len(observed) == len(expected)
        np.testing.assert_allclose(
            np.sort(observed["minutes"]), np.sort(expected["travel_time_s"] / 60)
        )
    # asking for many trips widens the search to neighbouring zones
    wide, wide_rings = dashboard.observed_pair_trips(
        trips, origin, dest, tiny_area.resolution, min_trips=10**6, max_rings=1
    )
    assert wide_rings == 1 and len(wide) >= len(observed)
    assert set(wide.columns) == {"hour", "minutes", "start_time", "weekend"}
    assert dashboard.observed_pair_trips(None, origin, dest, 8)[0].empty


# ------------------------------------------------------------------- coverage


def test_coverage_grid_by_median_and_probability(tiny_model, tiny_area, pair):
    origin, _ = pair
    grid = dashboard.coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=15)
    assert len(grid) == len(tiny_area.grid)
    assert grid["prob_within"].between(0, 1).all()
    assert (grid["lower80_min"] < grid["median_min"]).all()
    assert (grid["median_min"] < grid["upper80_min"]).all()
    for i in (0, len(grid) // 2):
        dest = dashboard.place_from_zone(tiny_area, grid["zone"][i])
        single = dashboard.forecast_od(tiny_model, origin, dest, DEPARTURE, 15)
        assert grid["median_min"][i] == pytest.approx(single.median_min, rel=1e-9)
        assert grid["prob_within"][i] == pytest.approx(single.prob_within, abs=1e-12)
    longer = dashboard.coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=30)
    assert (longer["prob_within"] >= grid["prob_within"]).all()
    summary = dashboard.reachable_summary(longer, 0.9)
    assert summary["n_reached"] == int((longer["prob_within"] >= 0.9).sum())
    assert summary["n_zones"] == len(grid) and 0 <= summary["share"] <= 1


def test_coverage_colours_and_legends(tiny_model, tiny_area, pair):
    grid = dashboard.coverage_grid(tiny_model, tiny_area, pair[0], DEPARTURE, threshold_min=15)
    colours, legend = dashboard.coverage_colors(grid, "probability")
    assert colours.shape == (len(grid), 4)
    assert [label for label, _ in legend] == [
        "0 % - 50 %",
        "50 % - 80 %",
        "80 % - 90 %",
        "90 % - 95 %",
        "95 % - 100 %",
    ]
    top = grid["prob_within"].to_numpy() >= 0.95
    if top.any():
        assert (colours[top, :3] == (0, 109, 44)).all()
    colours, legend = dashboard.coverage_colors(grid, "median")
    edges = [float(label.split(" min")[0]) for label, _ in legend]
    assert edges[0] <= grid["median_min"].min() and len({c for _, c in legend}) == len(legend)
    with pytest.raises(ValueError, match="metric"):
        dashboard.coverage_colors(grid, "mean")


def test_binned_colours_and_nice_edges():
    edges = dashboard.nice_edges(np.array([2.0, 13.0]), 4)
    assert edges[0] <= 2 and edges[-1] > 13
    colours = dashboard.binned_colors(
        np.array([0.1, 0.6, np.nan]), [0, 0.5, 1], [(0, 0, 0), (255, 255, 255)]
    )
    assert colours[0, :3].tolist() == [0, 0, 0] and colours[1, :3].tolist() == [255, 255, 255]
    assert colours[2].tolist() == [160, 160, 160, 90]


def test_coverage_exports(tiny_model, tiny_area, pair):
    origin = pair[0]
    grid = dashboard.coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, threshold_min=8)
    table = pd.read_csv(
        io.BytesIO(dashboard.coverage_csv(grid, origin, DEPARTURE, 8, synthetic=True))
    )
    assert len(table) == len(grid)
    assert {"zone", "label", "median_min", "p_within_8min", "departure", "data"} <= set(table)
    np.testing.assert_allclose(table["p_within_8min"], grid["prob_within"], rtol=1e-5)
    assert table["data"].str.contains("SYNTHETIC").all()
    document = json.loads(dashboard.coverage_geojson(grid, origin, DEPARTURE, 8, synthetic=True))
    assert document["type"] == "FeatureCollection" and document["synthetic"] is True
    assert len(document["features"]) == len(grid)
    feature = document["features"][0]
    assert feature["geometry"]["type"] == "Polygon"
    assert feature["properties"]["zone"] == grid["zone"][0]
    assert math.isclose(feature["properties"]["p_within_8min"], grid["prob_within"][0])
    assert document["threshold_min"] == 8.0 and document["origin"]["lat"] == origin.lat


# ------------------------------------------------------------------- map layer data


def test_zone_layer_data_marks_origin_and_destination(tiny_area):
    a = dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][3])
    b = dashboard.place_from_zone(tiny_area, tiny_area.grid["zone"][9])
    data = dashboard.zone_layer_data(tiny_area, dashboard.ODState(a, b))
    assert data["zone"].tolist() == tiny_area.grid["zone"].tolist()  # indices = grid rows
    assert data["fill"][3][:3] == list(dashboard.ORIGIN_RGB)
    assert data["fill"][9][:3] == list(dashboard.DEST_RGB)
    assert list(data.columns) == ["zone", "label", "fill", "tip"]
    outlined = dashboard.od_zone_data(dashboard.ODState(a, b))
    assert outlined["zone"].tolist() == [a.zone, b.zone]
    assert outlined["line"][1][:3] == list(dashboard.DEST_RGB)
    assert dashboard.od_zone_data(dashboard.ODState()).empty
    markers = dashboard.marker_data(dashboard.ODState(a, b))
    assert markers["name"].tolist() == ["A", "B"]
    fill = np.zeros((len(tiny_area.grid), 4), dtype=int)
    choropleth = dashboard.zone_layer_data(tiny_area, dashboard.ODState(a), fill=fill)
    assert choropleth["fill"][3] == [0, 0, 0, 0]  # the choropleth keeps its colour


def test_boundary_layers_split_by_geometry():
    layers = dashboard.boundary_layers(synthetic_city_geojson())
    assert set(layers) == {"areas", "lines", "points"}
    assert all(f["geometry"]["type"] == "Point" for f in layers["points"]["features"])
    assert dashboard.boundary_layers(None) == {}


# ------------------------------------------------------------------- relevance vectors


def test_relevance_table_and_filters(tiny_model):
    table = dashboard.relevance_table(tiny_model)
    assert len(table) == int(tiny_model.n_relevance_.sum())
    np.testing.assert_allclose(table["travel_min"], table["travel_time_s"] / 60)
    assert (table["distance_km"] >= 0).all()
    one = dashboard.filter_relevance(table, members=[1])
    assert set(one["member"]) == {1} and len(one) == tiny_model.n_relevance_[1]
    rush = dashboard.filter_relevance(table, hours=(7, 9))
    assert rush["hour"].between(7, 9).all()
    night = dashboard.filter_relevance(table, hours=(22, 3))
    assert night["hour"].isin([22, 23, 0, 1, 2, 3]).all()
    assert len(dashboard.filter_relevance(table)) == len(table)


def test_relevance_colours_by_weight_and_width(tiny_model):
    table = dashboard.relevance_table(tiny_model)
    colours, legend = dashboard.relevance_colors(table, "weight")
    assert colours.shape == (len(table), 4) and len(legend) >= 2
    colours, legend = dashboard.relevance_colors(table, "width")
    assert [label for label, _ in legend] == ["width 1.5", "width 3"]
    with pytest.raises(ValueError):
        dashboard.relevance_colors(table, "colour")
    empty, no_legend = dashboard.relevance_colors(table.iloc[:0], "weight")
    assert empty.shape == (0, 4) and no_legend == []


def test_elbo_curves_member_table_and_noise(tiny_model):
    curves = dashboard.elbo_curves(tiny_model)
    assert set(curves["member"]) == {0, 1}
    for m, member in enumerate(tiny_model.members_):
        np.testing.assert_allclose(curves.loc[curves["member"] == m, "elbo"], member.elbo_)
    members = dashboard.member_table(tiny_model)
    assert members["relevance_vectors"].tolist() == tiny_model.n_relevance_.tolist()
    s = tiny_model.members_[0].noise_std_
    assert members["noise_pct"][0] == pytest.approx(100 * (math.exp(s) - 1))
    sentence = dashboard.noise_sentence(tiny_model)
    assert "log-seconds" in sentence
    assert tiny_model.noise_scale_coef_.any()  # the default distance scale
    g = tiny_model.noise_scale_at([0.5, 2.0, 10.0])
    assert f"{g[0]:.2f} times at 0.5 km" in sentence and f"{g[2]:.2f} times at 10 km" in sentence


# ------------------------------------------------------------------- uploads


def _csv_bytes(trips: pd.DataFrame) -> bytes:
    return trips.to_csv(index=False).encode()


def test_read_upload_of_a_good_csv_and_parquet():
    trips = synthetic_city(200, seed=11)
    dirty = pd.concat([trips, trips.iloc[:3]], ignore_index=True)  # 3 duplicates
    dirty.loc[5, "travel_time_s"] = -1
    outcome = dashboard.read_upload("trips.csv", _csv_bytes(dirty))
    assert outcome.ok and outcome.report.n_kept == 199
    assert outcome.report.counts["duplicate"] == 3
    table = dashboard.report_table(outcome.report)
    assert table["reason"].tolist() == ["non_positive_duration", "duplicate"]
    examples = dashboard.example_rows(_csv_bytes(dirty), outcome.report)
    assert examples["row"].tolist() == sorted(examples["row"].tolist())
    assert examples.loc[
        examples["reason"] == "non_positive_duration", "travel_time_s"
    ].tolist() == ["-1.0"]
    buffer = io.BytesIO()
    dirty.to_parquet(buffer)
    parquet = dashboard.read_upload("trips.parquet", buffer.getvalue())
    assert parquet.ok and len(parquet.trips) == 199
    rows = dashboard.example_rows(buffer.getvalue(), parquet.report)
    assert rows.loc[rows["reason"] == "non_positive_duration", "row"].tolist() == [7]  # 5 + 2
    assert rows.loc[rows["reason"] == "duplicate", "row"].tolist() == [202, 203, 204]
    gz = dashboard.read_upload("trips.csv.gz", gzip.compress(_csv_bytes(trips)))
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
    outcome = dashboard.read_upload("mine.csv", data)
    assert not outcome.ok and outcome.needs_mapping
    assert outcome.columns == list(renamed.columns)
    assert "Columns found" in outcome.error
    guess = dashboard.guess_column_map(outcome.columns)
    assert guess == {"start_time": "pickup_time", "travel_time_s": "duration_s"}
    column_map = {
        **guess,
        "origin_lat": "plat",
        "origin_lon": "plon",
        "dest_lat": "dlat",
        "dest_lon": "dlon",
    }
    mapped = dashboard.read_upload("mine.csv", data, column_map=column_map)
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
    outcome = dashboard.read_upload("upload.csv", data)
    assert not outcome.ok and outcome.trips is None
    assert outcome.error and re.search(message, outcome.error)


def test_upload_size_limits(monkeypatch):
    with pytest.raises(dashboard.UploadError, match=r"above the 0\.001 MB upload limit"):
        dashboard.check_upload("big.csv", b"x" * 5000, max_mb=0.001)
    bomb = gzip.compress(b"0" * (3 * 2**20))
    assert len(bomb) < 2**20
    monkeypatch.setattr(dashboard, "MAX_DECOMPRESSED_MB", 1)
    with pytest.raises(dashboard.UploadError, match="expands to more than 1 MB"):
        dashboard.check_upload("bomb.csv.gz", bomb)
    outcome = dashboard.read_upload("bomb.csv.gz", bomb)
    assert "expands" in outcome.error


# ------------------------------------------------------------------- retraining


def test_parse_widths():
    assert dashboard.parse_widths(" Auto ") == "auto"
    assert dashboard.parse_widths("1, 2.5") == (1.0, 2.5)
    assert dashboard.parse_widths([1, 2]) == (1.0, 2.0)
    for bad in ("x", "0", "-1, 2", "inf"):
        with pytest.raises(ValueError):
            dashboard.parse_widths(bad)


def test_split_holdout_random_and_latest():
    trips = synthetic_city(100, seed=1)
    train, hold = dashboard.split_holdout(trips, 0.2, how="random", seed=0)
    assert (len(train), len(hold)) == (80, 20)
    assert not set(map(tuple, train.to_numpy())) & set(map(tuple, hold.to_numpy()))
    train, hold = dashboard.split_holdout(trips, 0.25, how="latest")
    assert hold["start_time"].min() >= train["start_time"].max()
    assert hold.attrs["synthetic"] is True
    with pytest.raises(ValueError):
        dashboard.split_holdout(trips, 1.0)
    with pytest.raises(ValueError):
        dashboard.split_holdout(trips.head(2), 0.1)
    with pytest.raises(ValueError):
        dashboard.split_holdout(trips, 0.2, how="oldest")


SMALL = dashboard.TrainingSettings(
    n_members=2, kernel_widths=(1.5, 3.0), max_basis=80, holdout_fraction=0.25
)


def test_retrain_flow_from_store_to_published_version(tmp_path, tiny_home, tiny_model):
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    store = dashboard.trip_store(home)
    added = store.add(synthetic_city(800, seed=21), source="upload.csv")
    assert added.n_added == 800
    calls = []
    result = dashboard.run_retrain(
        store.load(),
        SMALL,
        options=["full", "update"],
        active=tiny_model,
        active_version=1,
        progress=lambda *args: calls.append(args),
    )
    assert (len(result.train), len(result.holdout)) == (600, 200)
    full, update = "Full retrain", "Update with new trips (fast)"
    assert dashboard.retrain_options()[1]["available"]  # TravelTimeModel.update exists
    assert list(result.candidates) == [full, update] and result.errors == {}
    assert result.kinds == {full: "train", update: "update"}
    assert result.trips_used == {full: 600, update: 600}  # every stored trip is new
    assert result.candidates[update] is not tiny_model
    assert calls[-1][:3] == ("full", 2, 2)
    assert set(result.metrics) == {full, update, "active (v1)"}
    assert result.comparable
    table = dashboard.metrics_table(result.metrics)
    assert list(table.columns) == [full, update, "active (v1)"]
    assert table.loc["trips scored"].tolist() == [200, 200, 200]
    assert table.loc["CRPS (min)", "Full retrain"] == pytest.approx(
        result.metrics["Full retrain"]["crps_s"] / 60
    )
    # publishing makes a new active version and leaves the old one re-activatable
    version = dashboard.publish_candidate(home, result, "Full retrain")
    models = dashboard.model_store(home)
    assert version == 2 and models.active_version() == 2
    info = models.versions()[-1].info
    assert info["kind"] == "train" and info["parent"] == 1 and info["n_trips"] == 600
    published = TravelTimeModel.load(models.active_path())
    assert published.metrics_["n"] == 200
    assert dashboard.load_training_trips(home, published) is not None
    assert dashboard.publish_candidate(home, result, update) == 3
    info = models.versions()[-1].info
    assert (info["kind"], info["parent"], info["n_trips"]) == ("update", 1, 600)
    versions = dashboard.versions_table(models)
    assert versions["version"].tolist() == [3, 2, 1]
    assert versions["active"].tolist() == [True, False, False]
    assert versions["kind"].tolist() == ["update", "train", "demo"]
    models.activate(1)
    assert dashboard.versions_table(models)["active"].tolist() == [False, False, True]


def test_a_failed_training_publishes_nothing(tmp_path, tiny_home, tiny_model):
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    trips = synthetic_city(60, seed=4)
    bad = dashboard.TrainingSettings(n_members=40, kernel_widths=(1.0,), max_basis=10)
    result = dashboard.run_retrain(trips, bad, active=tiny_model, active_version=1)
    assert result.candidates == {} and "too few" in result.errors["Full retrain"]
    empty = dashboard.run_retrain(
        trips,
        SMALL,
        options=["update"],
        active=tiny_model,
        active_version=1,
        new_trips=trips.iloc[:0],
    )
    assert "no trips were added" in empty.errors["Update with new trips (fast)"]
    assert dashboard.model_store(home).active_version() == 1
    assert len(dashboard.model_store(home).versions()) == 1


def test_retrain_charts_data(tiny_model):
    holdout = synthetic_city(300, seed=9)
    pvo = dashboard.predicted_vs_observed(tiny_model, holdout, max_points=100)
    assert len(pvo) == 100
    assert (pvo["lower_min"] <= pvo["median_min"]).all() and (
        pvo["median_min"] <= pvo["upper_min"]
    ).all()
    curve = dashboard.calibration_curve(tiny_model, holdout, levels=(0.5, 0.9))
    assert curve["nominal"].tolist() == [0.5, 0.9]
    assert curve["observed"].is_monotonic_increasing
    metrics = tiny_model.evaluate(holdout)
    pit = dashboard.pit_frame(metrics)
    assert len(pit) == 10 and pit["density"].mean() == pytest.approx(1.0)
    assert dashboard.pit_frame({}).empty


class _Updatable(TravelTimeModel):
    def update(self, trips):
        self.updated_with_ = len(trips)
        return self


def test_update_option_appears_when_the_library_has_it(tiny_model):
    assert dashboard.retrain_options(_Updatable)[1]["available"]
    assert dashboard.retrain_options(object)[1]["available"] is False  # an older vrvm
    active = _Updatable(**tiny_model.get_params())
    active.__dict__.update({k: v for k, v in tiny_model.__dict__.items() if k.endswith("_")})
    trips = synthetic_city(400, seed=5)
    result = dashboard.run_retrain(
        trips, SMALL, options=["update"], active=active, active_version=1, new_trips=trips.head(100)
    )
    candidate = result.candidates["Update with new trips (fast)"]
    assert result.kinds["Update with new trips (fast)"] == "update"
    assert candidate is not active and not hasattr(active, "updated_with_")
    assert 0 < candidate.updated_with_ <= 100  # only new trips in the training part
    with pytest.raises(NotImplementedError):
        dashboard.update_model(object(), trips)


def test_distance_of_new_trips_to_the_store(tmp_path):
    store = dashboard.trip_store(tmp_path)
    city = synthetic_city(100, seed=1)
    assert dashboard.distance_to_store_km(store, city) is None
    store.add(city)
    assert dashboard.distance_to_store_km(store, synthetic_city(100, seed=2)) < 5
    chicago = city.assign(origin_lat=41.88, origin_lon=-87.63)
    assert dashboard.distance_to_store_km(store, chicago) > 8000


def test_share_inside_bbox(tiny_model):
    assert dashboard.share_inside_bbox(tiny_model, synthetic_city(200, seed=3)) > 0.9
    chicago = pd.DataFrame(
        {"origin_lat": [41.9], "origin_lon": [-87.6], "dest_lat": [41.8], "dest_lon": [-87.7]}
    )
    assert dashboard.share_inside_bbox(tiny_model, chicago) == 0.0


def test_versions_table_of_an_empty_store(tmp_path):
    table = dashboard.versions_table(ModelStore(tmp_path))
    assert table.empty and "version" in table.columns


def test_chicago_trips_and_community_areas(shared_data):
    """Real data: the Chicago sample's zones are named after its community areas."""
    from vrvm import read_trips

    trips, _ = read_trips(shared_data("chicago_taxi_trips.csv"))
    boundaries = dashboard.parse_geojson(
        shared_data("chicago_community_areas.geojson").read_bytes()
    )
    model = dashboard.train_model(trips, SMALL)
    assert model.tz_ == "America/Chicago" and not dashboard.is_synthetic(model)
    area = dashboard.build_service_area(model, trips=trips, boundaries=boundaries)
    assert 300 < len(area.grid) <= 2000 and not area.synthetic
    places = set(area.grid["place"])
    assert {"Loop", "Near North Side", "Ohare"} <= places
    cells = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], area.resolution)
    assert set(cells) <= set(area.grid["zone"])
    loop = area.grid.loc[area.grid["place"] == "Loop"].iloc[0]
    assert loop["label"] == f"Zone {loop['number']} · Loop"
