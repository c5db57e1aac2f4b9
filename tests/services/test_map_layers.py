"""The data of the map's layers."""

from __future__ import annotations

import numpy as np

from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB
from vrvm.services.map.map_layers import marker_data, od_zone_data, zone_layer_data
from vrvm.services.map.places import ODState, place_from_zone


def test_zone_layer_data_marks_origin_and_destination(tiny_area):
    a = place_from_zone(tiny_area, tiny_area.grid["zone"][3])
    b = place_from_zone(tiny_area, tiny_area.grid["zone"][9])
    data = zone_layer_data(tiny_area)
    assert data["zone"].tolist() == tiny_area.grid["zone"].tolist()  # indices = grid rows
    assert list(data.columns) == ["zone", "label", "fill", "tip"]
    assert len({tuple(f[:3]) for f in data["fill"]}) == 1  # no zone stands out by itself
    outlined = od_zone_data(ODState(a, b))  # A and B drawn above, in their colours
    assert outlined["zone"].tolist() == [a.zone, b.zone]
    assert outlined["line"][1][:3] == list(DEST_RGB)
    assert outlined["fill"][0] == [*ORIGIN_RGB, 200]
    assert od_zone_data(ODState(a, b), filled=False)["fill"][1][3] == 0  # over a choropleth
    assert od_zone_data(ODState()).empty
    markers = marker_data(ODState(a, b))
    assert markers["name"].tolist() == ["A", "B"]
    fill = np.zeros((len(tiny_area.grid), 4), dtype=int)
    choropleth = zone_layer_data(tiny_area, fill=fill)
    assert choropleth["fill"][3] == [0, 0, 0, 0]  # the choropleth keeps its colour


def test_only_zones_with_trip_ends_can_be_picked(tiny_area):
    """The thin ring around the trips is drawn faintly under the zones, never picked."""
    data = zone_layer_data(tiny_area)
    assert (tiny_area.grid["n_points"] > 0).all()
    busy = 0
    assert (
        data["tip"][busy] == f"{tiny_area.grid['n_points'][busy]:,} training trip ends in this zone"
    )
    idle = [
        f for f in tiny_area.boundaries["features"] if f["properties"].get("kind") == "idle_zone"
    ]
    assert idle and all(f["geometry"]["type"] == "Polygon" for f in idle)
