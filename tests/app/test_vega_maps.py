"""The zone map drawn by Vega-Lite on a canvas (:mod:`app_ui.vega_maps`): what it draws,
that only its top layer takes the pointer, and that it is valid Vega-Lite."""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest

from app_ui import maps, vega_maps
from vrvm.services.map import map_layers
from vrvm.services.map.places import ODState, place_from_zone


def plain(spec: dict) -> dict:
    """The spec as the browser gets it: data frames as records, strict JSON."""
    datasets = {
        name: data.to_dict(orient="records") if isinstance(data, pd.DataFrame) else data
        for name, data in spec["datasets"].items()
    }
    return json.loads(json.dumps({**spec, "datasets": datasets}, allow_nan=False))


@pytest.fixture(scope="module")
def od(tiny_area):
    return ODState(
        origin=place_from_zone(tiny_area, tiny_area.grid["zone"][40]),
        dest=place_from_zone(tiny_area, tiny_area.grid["zone"][300]),
    )


def test_the_spec_is_valid_vega_lite_and_plain_json(tiny_area, od):
    core = pytest.importorskip("altair.vegalite.v6.schema.core")
    from altair.utils.schemapi import validate_jsonschema

    schema = core.load_schema()
    fill = np.tile([200, 30, 30, 150], (len(tiny_area.grid), 1))
    under = [
        {
            "type": "Feature",
            "properties": {"p": 0.5, "fill": [10, 20, 30, 40], "line": [10, 20, 30, 255]},
            "geometry": {"type": "Polygon", "coordinates": [tiny_area.grid["boundary"][5]]},
        }
    ]
    for spec in (
        vega_maps.zone_spec(tiny_area, od),
        vega_maps.zone_spec(tiny_area, ODState(), fill=fill, under=under, height=400),
    ):
        validate_jsonschema(plain(spec), schema)  # raises on any invalid property


def test_the_zones_their_fills_tips_and_the_boundaries(tiny_area, od):
    spec = vega_maps.zone_spec(tiny_area, od)
    info = spec["datasets"]["zone_info"]
    assert info["zone"].tolist() == tiny_area.grid["zone"].astype(str).tolist()
    drawn = map_layers.zone_layer_data(tiny_area)
    assert info["fill"].tolist() == [vega_maps.css(c) for c in drawn["fill"]]
    # the tips are written for deck.gl's HTML tooltip; Vega's shows text
    assert info["tip"].tolist() == [html.unescape(t) for t in drawn["tip"]]
    assert info["label"].tolist() == tiny_area.grid["label"].tolist()
    # hexagons travel as a table of their corners (Arrow), made into polygons by Vega
    shapes = spec["datasets"]["zone_shapes"]
    assert shapes["zone"].tolist() == info["zone"].tolist()
    assert "{type: 'Polygon'" in json.dumps(spec["layer"])
    # the synthetic city's river, highway and bridges, styled as on the deck.gl map
    assert spec["datasets"]["lines"] and spec["datasets"]["areas"]
    # A and B: outlined and marked at their places
    assert spec["datasets"]["od"]["zone"].tolist() == [od.origin.zone, od.dest.zone]
    markers = spec["datasets"]["markers"]
    assert markers["name"].tolist() == ["A", "B"]
    assert markers[["lat", "lon"]].to_numpy().tolist() == [
        [od.origin.lat, od.origin.lon],
        [od.dest.lat, od.dest.lon],
    ]


def test_only_the_top_layer_takes_the_pointer(tiny_area, od):
    """Markers and outlines drawn above the zones do not catch clicks: the zones are
    drawn again on top, transparent, and that layer alone has the selection and the
    tooltips (a click on a marker picks the zone beneath the pointer)."""
    layers = vega_maps.zone_spec(tiny_area, od)["layer"]
    top = layers[-1]
    assert top["data"]["name"] == "zone_shapes" and top["mark"]["fill"] == "transparent"
    assert [p["name"] for p in top["params"]] == [vega_maps.PICK, vega_maps.HOVER]
    assert top["params"][0]["select"] == {"type": "point", "fields": ["zone"]}
    assert top["encoding"]["tooltip"]
    for layer in layers[:-1]:
        assert "params" not in layer
        assert layer["mark"].get("tooltip", "none") is None  # no tooltip below the top


def test_hexagon_corners_are_clockwise_and_the_hexagons(tiny_area):
    """Each zone's six corners, in d3-geo's order (clockwise in longitude, latitude), are
    its H3 hexagon's (rounded to 1e-5 degrees)."""
    shapes = vega_maps.zone_spec(tiny_area, ODState())["datasets"]["zone_shapes"]
    x = shapes[[f"x{i}" for i in range(6)]].to_numpy()
    y = shapes[[f"y{i}" for i in range(6)]].to_numpy()
    twice_area = np.sum(x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y, axis=1)
    assert (twice_area < 0).all()
    for row in (0, len(shapes) // 2):
        corners = {(round(a, 5), round(b, 5)) for a, b in tiny_area.grid["boundary"][row]}
        assert set(zip(x[row], y[row], strict=True)) == corners


def test_ring_orientation_for_d3():
    """d3-geo reads a counter-clockwise exterior (in longitude, latitude) as the sphere
    minus the polygon: exteriors clockwise, holes counter-clockwise, rings closed."""

    def signed_area(ring):
        xy = np.asarray(ring)
        return np.sum(xy[:-1, 0] * xy[1:, 1] - xy[1:, 0] * xy[:-1, 1]) / 2

    outer = [[0, 0], [4, 0], [4, 4], [0, 4]]  # counter-clockwise, open
    hole = [[1, 1], [1, 2], [2, 2], [2, 1]]  # clockwise
    polygon = vega_maps.for_d3({"type": "Polygon", "coordinates": [outer, hole]})
    exterior, inner = polygon["coordinates"]
    assert exterior[0] == exterior[-1] and signed_area(exterior) < 0
    assert signed_area(inner) > 0
    multi = vega_maps.for_d3({"type": "MultiPolygon", "coordinates": [[outer], [hole]]})
    assert all(signed_area(rings[0]) < 0 for rings in multi["coordinates"])
    point = {"type": "Point", "coordinates": [1.0, 2.0]}
    assert vega_maps.for_d3(point) == point


def test_markers_and_regions_keep_their_properties(tiny_area):
    rows = [3, 120]
    bases = pd.DataFrame(
        {
            "lat": tiny_area.grid["lat"][rows].to_numpy(),
            "lon": tiny_area.grid["lon"][rows].to_numpy(),
            "name": ["1", "2"],
            "label": ["<b>Central</b> station", "Harbour"],
            "color": [[200, 0, 0, 255], [0, 0, 200, 255]],
        }
    )
    region = {
        "type": "Feature",
        "properties": {"p": 0.9, "fill": [1, 2, 3, 40], "line": [1, 2, 3, 255]},
        "geometry": {"type": "Polygon", "coordinates": [tiny_area.grid["boundary"][3]]},
    }
    spec = vega_maps.zone_spec(tiny_area, ODState(), markers=bases, under=[region])
    markers = spec["datasets"]["markers"]
    assert markers[["lat", "lon"]].to_numpy().tolist() == bases[["lat", "lon"]].to_numpy().tolist()
    assert markers["label"].tolist() == ["<b>Central</b> station", "Harbour"]  # text
    assert markers["color"].tolist() == ["rgba(200,0,0,1.000)", "rgba(0,0,200,1.000)"]
    (drawn,) = spec["datasets"]["under"]
    assert drawn["properties"] == {
        "p": 0.9,
        "fill": "rgba(1,2,3,0.157)",
        "line": "rgba(1,2,3,1.000)",
    }
    names = [layer["data"]["name"] for layer in spec["layer"]]
    assert names.index("under") < names.index("zone_shapes")  # under the zones


def test_the_shapes_are_made_once_per_area(tiny_area, od):
    first = vega_maps.zone_spec(tiny_area, od)["datasets"]["zone_shapes"]
    again = vega_maps.zone_spec(tiny_area, ODState())["datasets"]["zone_shapes"]
    assert first is again


def test_boundary_styles_are_the_deck_maps(tiny_area):
    spec = vega_maps.zone_spec(tiny_area, ODState())
    collection = {"features": [{"properties": {"kind": "river"}, "geometry": {}}]}
    styled = maps.styled_boundaries(collection, "lines")["features"][0]["properties"]
    rivers = [
        f
        for f in spec["datasets"]["lines"]
        if f["properties"]["_line"] == vega_maps.css(styled["_line"])
    ]
    assert rivers and all(f["properties"]["_width"] == styled["_width"] for f in rivers)
