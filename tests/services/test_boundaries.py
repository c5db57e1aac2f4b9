"""Boundary files: parsing uploads, naming zones after polygons, layers, kept in the home."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from vrvm import synthetic_city_geojson
from vrvm.services import boundaries as svc
from vrvm.services.boundaries import boundary_layers, parse_geojson, place_names


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
    names = place_names(
        np.array([1.5, 0.75, 0.5, 9.0]),
        np.array([1.5, 0.75, 3.5, 9.0]),
        boundaries,
        broad_share=1.0,
    )
    assert names == ["Near West Side", "", "Loop", ""]


def test_parse_geojson_validates_uploads():
    good = json.dumps(synthetic_city_geojson()).encode()
    assert parse_geojson(good)["type"] == "FeatureCollection"
    feature = json.dumps(synthetic_city_geojson()["features"][0]).encode()
    assert len(parse_geojson(feature)["features"]) == 1
    for bad, message in (
        (b"\x89PNG\r\n", "not JSON"),
        (b"[1, 2]", "FeatureCollection"),
        (b'{"type": "FeatureCollection", "features": [NaN]}', "not JSON"),
        (b'{"type": "FeatureCollection", "features": []}', "no features"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_geojson(bad)
    with pytest.raises(ValueError, match="larger than"):
        parse_geojson(good, max_bytes=10)


def test_boundary_layers_split_by_geometry():
    layers = boundary_layers(synthetic_city_geojson())
    assert set(layers) == {"areas", "lines", "points"}
    assert all(f["geometry"]["type"] == "Point" for f in layers["points"]["features"])
    assert boundary_layers(None) == {}


def test_place_names_agree_with_brute_force_on_community_areas(shared_data):
    """Each point is named after the polygon holding it, found by plain shapely."""
    document = parse_geojson(shared_data("chicago_community_areas.geojson").read_bytes())
    polygons = [shape(f["geometry"]) for f in document["features"]]
    names = [svc.feature_name(f["properties"]) for f in document["features"]]
    rng = np.random.default_rng(3)
    lat, lon = rng.uniform(41.64, 42.03, 3000), rng.uniform(-87.95, -87.52, 3000)
    inside = np.stack([shapely.contains_xy(p, lon, lat) for p in polygons])
    expected = np.where(inside.any(axis=0), np.array(names, dtype=object)[inside.argmax(0)], "")
    assert place_names(lat, lon, document) == expected.tolist()
    assert {"Loop", "Hyde Park", "Ohare"} <= set(expected)


def test_points_name_what_no_polygon_names():
    layers = synthetic_city_geojson()
    airport = next(f for f in layers["features"] if f["geometry"]["type"] == "Point")
    a_lon, a_lat = airport["geometry"]["coordinates"]
    names = place_names(np.array([a_lat + 0.001]), np.array([a_lon]), layers, broad_share=1.0)
    assert names == [svc.feature_name(airport["properties"])]


def test_uploaded_boundaries_are_kept_in_the_home(tmp_path, shared_data):
    data = shared_data("nyc_taxi_zones.geojson").read_bytes()
    entry = svc.save_boundaries(tmp_path, data, "taxi_zones.geojson")
    assert (entry.name, entry.n_zones, entry.id_property) == ("taxi_zones", 263, "LocationID")
    # another day, another process: the home still has them, shown on the map
    assert svc.shown_boundaries(tmp_path) == entry
    assert [e.name for e in svc.saved_boundaries(tmp_path)] == ["taxi_zones"]
    document = svc.load_boundaries(tmp_path, "taxi_zones")
    assert len(document["features"]) == 263
    assert "263 zones, ids LocationID, names zone" in svc.describe_boundaries(entry)
    svc.show_boundaries(tmp_path, None)
    assert svc.shown_boundaries(tmp_path) is None
    svc.show_boundaries(tmp_path, "taxi_zones")
    assert svc.remove_boundaries(tmp_path, "taxi_zones")
    assert svc.shown_boundaries(tmp_path) is None and svc.saved_boundaries(tmp_path) == []


def test_boundaries_with_roads_and_landmarks_are_kept(tmp_path):
    data = json.dumps(synthetic_city_geojson()).encode()
    entry = svc.save_boundaries(tmp_path, data, "Synthetica layers.json")
    assert entry.name == "Synthetica-layers" and entry.n_zones == 2
    document = svc.load_boundaries(tmp_path, entry.name)
    assert set(boundary_layers(document)) == {"areas", "lines", "points"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{oops", "upload.geojson: not JSON"),
        (
            json.dumps(
                {
                    "type": "FeatureCollection",
                    "features": [
                        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [0, 0]}}
                    ],
                }
            ).encode(),
            "no Polygon or MultiPolygon features",
        ),
        (
            json.dumps(
                {
                    "type": "FeatureCollection",
                    "features": [
                        {
                            "type": "Feature",
                            "properties": {"name": "Far"},
                            "geometry": {
                                "type": "Polygon",
                                "coordinates": [[[0, 0], [5e5, 0], [5e5, 5e5], [0, 0]]],
                            },
                        }
                    ],
                }
            ).encode(),
            r"features\[0\]: coordinate .* looks projected",
        ),
    ],
)
def test_bad_boundary_uploads_are_refused_and_not_kept(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        svc.save_boundaries(tmp_path, data, "upload.geojson")
    assert svc.saved_boundaries(tmp_path) == [] and svc.shown_boundaries(tmp_path) is None
