"""Origins and destinations: places, typed coordinates, map clicks applied once."""

from __future__ import annotations

import json
from dataclasses import replace

import h3
import numpy as np
import pytest

from vrvm.services.map.map_layers import zone_layer_data
from vrvm.services.map.places import (
    ODState,
    Place,
    apply_map_selection,
    central_place,
    locate,
    parse_latlon,
    place_from_label,
    place_from_latlon,
    place_from_zone,
    zone_from_selection,
)


def test_places_from_zone_label_and_coordinates(tiny_area):
    row = tiny_area.grid.iloc[40]
    by_zone = place_from_zone(tiny_area, row["zone"])
    by_label = place_from_label(tiny_area, row["label"])
    assert by_zone == by_label and by_zone.kind == "zone"
    assert (by_zone.lat, by_zone.lon) == (round(row["lat"], 6), round(row["lon"], 6))
    # typed at the zone centre: that zone; elsewhere: a point labelled with its zone
    assert place_from_latlon(tiny_area, row["lat"], row["lon"]) == by_zone
    point = place_from_latlon(tiny_area, row["lat"] + 0.001, row["lon"])
    assert point.kind == "point" and point.zone == h3.latlng_to_cell(
        point.lat, point.lon, tiny_area.resolution
    )
    assert "(in Zone" in point.label
    with pytest.raises(ValueError, match="outside the service area"):
        place_from_latlon(tiny_area, 41.88, -87.63)
    with pytest.raises(ValueError):
        place_from_label(tiny_area, "Zone 0 · nowhere")
    with pytest.raises(ValueError):
        place_from_zone(tiny_area, "8928308280fffff")


@pytest.mark.parametrize("text", ["", "41.8", "a, b", "91, 0", "0, 181", "nan, 1"])
def test_parse_latlon_rejects(text):
    with pytest.raises(ValueError):
        parse_latlon(text)


def _payload(area, index, *, with_object=True):
    record = zone_layer_data(area).iloc[index].to_dict()
    selection = {
        "indices": {"zones": [index]},
        "objects": {"zones": [record] if with_object else []},
    }
    return {"selection": selection}


def test_map_clicks_set_origin_then_destination_then_restart(tiny_area):
    a, b, c = 10, 200, 300
    state = ODState()
    state = apply_map_selection(state, _payload(tiny_area, a), tiny_area)
    assert state.origin.zone == tiny_area.grid["zone"][a] and state.dest is None
    # the same selection seen again on a rerun changes nothing
    assert apply_map_selection(state, _payload(tiny_area, a), tiny_area) == state
    state = apply_map_selection(state, _payload(tiny_area, b), tiny_area)
    assert state.dest.zone == tiny_area.grid["zone"][b] and state.complete
    state = apply_map_selection(state, _payload(tiny_area, c), tiny_area)
    assert state.origin.zone == tiny_area.grid["zone"][c] and state.dest is None


def test_a_redrawn_map_resending_its_selection_is_not_a_click(tiny_area):
    state = apply_map_selection(ODState(), _payload(tiny_area, 5), tiny_area)
    state = apply_map_selection(state, _payload(tiny_area, 9), tiny_area)
    resent = _payload(tiny_area, 9)
    resent["selection"]["objects"]["zones"][0]["fill"] = [1, 2, 3, 4]  # new layer data
    assert apply_map_selection(state, resent, tiny_area) == state
    assert apply_map_selection(state, resent, tiny_area, mode="origin") == state


def test_clicking_the_same_zone_again_after_deselecting_counts(tiny_area):
    state = apply_map_selection(ODState(), _payload(tiny_area, 5), tiny_area)
    empty = {"selection": {"indices": {}, "objects": {}}}
    state = apply_map_selection(state, empty, tiny_area)
    assert state.last_selection is None and state.origin is not None
    state = apply_map_selection(state, _payload(tiny_area, 5), tiny_area)
    assert state.dest is not None and state.dest.zone == state.origin.zone


def test_selection_by_index_only_and_coverage_mode(tiny_area):
    payload = _payload(tiny_area, 7, with_object=False)
    assert zone_from_selection(payload, tiny_area) == tiny_area.grid["zone"][7]
    assert zone_from_selection(payload["selection"], tiny_area) is not None
    assert zone_from_selection({"selection": {"indices": {"zones": [10**6]}}}, tiny_area) is None
    assert zone_from_selection(None, tiny_area) is None
    start = ODState(origin=place_from_zone(tiny_area, tiny_area.grid["zone"][1]))
    state = apply_map_selection(start, payload, tiny_area, mode="origin")
    assert state.origin.zone == tiny_area.grid["zone"][7] and state.dest is None


def test_vega_lite_selections_pick_zones_by_id(tiny_area):
    """The canvas map's point selection names the zone itself (no positions)."""
    zone = tiny_area.grid["zone"][12]
    clicked = {"selection": {"zones": [{"zone": zone}]}}
    assert zone_from_selection(clicked, tiny_area) == zone
    assert zone_from_selection({"selection": {"zones": [{"zone": "nowhere"}]}}, tiny_area) is None
    state = apply_map_selection(ODState(), clicked, tiny_area)
    assert state.origin.zone == zone and state.dest is None
    # the same selection re-sent on a rerun (a redrawn map) is not a new click
    assert apply_map_selection(state, json.loads(json.dumps(clicked)), tiny_area) == state
    other = {"selection": {"zones": [{"zone": tiny_area.grid["zone"][30]}]}}
    state = apply_map_selection(state, other, tiny_area)
    assert state.dest.zone == tiny_area.grid["zone"][30]
    # an empty selection (a click off the zones) forgets the last one
    state = apply_map_selection(state, {"selection": {"zones": []}}, tiny_area)
    assert state.last_selection is None and state.complete


def test_swap_and_clear(tiny_area):
    a = place_from_zone(tiny_area, tiny_area.grid["zone"][0])
    b = place_from_zone(tiny_area, tiny_area.grid["zone"][1])
    state = ODState(a, b, "x")
    assert state.swapped() == ODState(b, a, "x")
    assert state.cleared() == ODState(None, None, "x")


# ------------------------------------------------------- the same places on other zones


@pytest.fixture(scope="module")
def district_area(tiny_home, tiny_model):
    """The tiny model's area on a planner's polygons: downtown, four quarters, the airport."""
    from tests.app.test_zone_polygons import districts_geojson
    from vrvm.services.map.area import build_service_area
    from vrvm.trips.home import Home
    from vrvm.trips.places.zone_files import ZoneFile

    zones = ZoneFile.from_geojson(json.loads(districts_geojson()), id_property="district")
    trips = Home(tiny_home).load_training_trips(tiny_model)
    return build_service_area(tiny_model, trips=trips, zones=zones)


def test_a_place_is_located_on_other_zones_by_its_point(tiny_area, district_area):
    busiest = central_place(tiny_area)
    assert locate(tiny_area, busiest) == busiest  # the same map: the same place
    # the same zone under an old label takes the map's label
    renamed = replace(busiest, label="Zone 1 · an old name")
    assert locate(tiny_area, renamed) == busiest
    # a hexagon on the polygons' map: the polygon holding its centre, as the map has it
    polygon = locate(district_area, busiest)
    row = int(district_area.zone_rows([busiest.lat], [busiest.lon])[0])
    assert polygon == place_from_zone(district_area, district_area.grid["zone"][row])
    assert polygon.label == "D1 · Downtown <b>Synthetica</b>"
    # and back: the hexagon holding the polygon's representative point
    back = locate(tiny_area, polygon)
    assert back.kind == "zone" and back.zone == h3.latlng_to_cell(
        polygon.lat, polygon.lon, tiny_area.resolution
    )
    # typed coordinates keep their point, labelled with the zone holding it
    typed = place_from_latlon(tiny_area, busiest.lat + 0.001, busiest.lon)
    on_polygons = locate(district_area, typed)
    assert (on_polygons.lat, on_polygons.lon, on_polygons.kind) == (typed.lat, typed.lon, "point")
    assert on_polygons.label.endswith("(in D1 · Downtown <b>Synthetica</b>)")
    # a point no zone of the map holds is no place there
    edge = tiny_area.grid.iloc[
        int(
            np.flatnonzero(
                district_area.zone_rows(tiny_area.grid["lat"], tiny_area.grid["lon"]) < 0
            )[0]
        )
    ]
    assert locate(district_area, place_from_zone(tiny_area, edge["zone"])) is None
    assert locate(tiny_area, Place(0.0, 0.0, "somewhere else", "Null Island")) is None


def test_a_state_is_located_as_a_whole_and_unchanged_when_current(tiny_area, district_area):
    origin, dest = central_place(tiny_area), place_from_zone(tiny_area, tiny_area.grid["zone"][5])
    state = ODState(origin, dest, last_selection="{}")
    assert state.located(tiny_area) is state  # nothing to do: the same object
    moved = state.located(district_area)
    assert moved.origin == locate(district_area, origin)
    assert moved.dest == locate(district_area, dest)
    assert moved.last_selection == "{}"
    assert ODState().located(district_area) == ODState()
