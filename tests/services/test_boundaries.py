"""Boundary files: parsing uploads, naming zones after polygons, layers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vrvm import synthetic_city_geojson
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
