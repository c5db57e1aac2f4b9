"""The data of the map's layers."""

from __future__ import annotations

import numpy as np

from vrvm.services.colours import DEST_RGB, ORIGIN_RGB
from vrvm.services.map_layers import marker_data, od_zone_data, zone_layer_data
from vrvm.services.places import ODState, place_from_zone


def test_zone_layer_data_marks_origin_and_destination(tiny_area):
    a = place_from_zone(tiny_area, tiny_area.grid["zone"][3])
    b = place_from_zone(tiny_area, tiny_area.grid["zone"][9])
    data = zone_layer_data(tiny_area, ODState(a, b))
    assert data["zone"].tolist() == tiny_area.grid["zone"].tolist()  # indices = grid rows
    assert data["fill"][3][:3] == list(ORIGIN_RGB)
    assert data["fill"][9][:3] == list(DEST_RGB)
    assert list(data.columns) == ["zone", "label", "fill", "tip"]
    outlined = od_zone_data(ODState(a, b))
    assert outlined["zone"].tolist() == [a.zone, b.zone]
    assert outlined["line"][1][:3] == list(DEST_RGB)
    assert od_zone_data(ODState()).empty
    markers = marker_data(ODState(a, b))
    assert markers["name"].tolist() == ["A", "B"]
    fill = np.zeros((len(tiny_area.grid), 4), dtype=int)
    choropleth = zone_layer_data(tiny_area, ODState(a), fill=fill)
    assert choropleth["fill"][3] == [0, 0, 0, 0]  # the choropleth keeps its colour
