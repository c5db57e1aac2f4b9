"""The clickable maps take a click at once: no double-click zoom holding it back.

deck.gl delays every click by its double-click interval (about 300 ms) while double-click
zoom is on, to tell a click from a double click; the zone maps are clicked to choose
places, so their view turns it off (the wheel and the zoom buttons still zoom).
"""

from __future__ import annotations

import json

import pytest

from app_ui import maps
from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import ODState


@pytest.fixture(scope="module")
def area():
    trips = synthetic_city(600, seed=1)
    model = TravelTimeModel(n_members=1, kernel_widths=[2.0], max_basis=20, random_state=0)
    return build_service_area(model.fit(trips), trips=trips)


@pytest.mark.parametrize("basemap", [False, True])
def test_the_zone_map_view_has_no_double_click_zoom(area, basemap):
    spec = json.loads(maps.zone_deck(area, ODState(), basemap=basemap).to_json())
    (view,) = spec["views"]
    assert view["@@type"] == "MapView"
    assert view["controller"] == {"doubleClickZoom": False}  # pans and wheel zoom stay on
