"""The Plan page's probability isochrones (AppTest, no browser).

The section opens on a central zone, 15 minutes and p = 50/90/95 %, so it is never
empty; a click moves the place, "to" draws who reaches it (recomputed here with the
service for the same inputs), the table and the GeoJSON download are offered, and the
planner's polygon zones work too.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import (
    APP,
    TIMEOUT,
    area_of,
    click_zone,
    deck,
    draws_polygons,
    map_records,
    no_exception,
    table_with,
)
from tests.app.test_zone_polygons import districts_geojson
from vrvm import TravelTimeModel
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.map.places import central_place
from vrvm.services.planning.isochrones import probability_isochrones
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_isochrone"


def plan_isochrones() -> AppTest:
    """The Plan page opened on its isochrone section, departing 08:15 on a Tuesday."""
    import datetime as dt

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "isochrone"
    at.session_state[f"{KEY}_trip_when"] = dt.datetime(2024, 3, 5, 8, 15)
    return at.switch_page(PLAN).run()


def layers(at: AppTest) -> dict[str, list[dict]]:
    """What the map draws: ``zones``, ``markers`` and ``regions`` (whichever renderer)."""
    chart = deck(at, f"{KEY}_map")
    return {name: map_records(chart, name) for name in ("zones", "markers", "regions")}


def drawn_levels(at: AppTest) -> list[float]:
    return [f["properties"]["p"] for f in layers(at)["regions"]]


def expected(home, place, direction: str, within_min: float = 15.0, levels=(0.5, 0.9, 0.95)):
    """The service's answer for what the page shows (the model loaded afresh)."""
    import datetime as dt

    model = TravelTimeModel.load(Home(home).models.active_path())
    departure = combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)
    return probability_isochrones(
        model, area_of(home), place, departure, within_min, levels, direction=direction
    )


def test_opens_on_a_central_zone_with_three_nested_regions(vrvm_home):
    at = plan_isochrones()
    no_exception(at)
    area = area_of(vrvm_home)
    place = central_place(area)
    assert at.selectbox(key=f"{KEY}_place").value == place.label
    assert at.segmented_control(key=f"{KEY}_direction").value == "from"
    assert at.number_input(key=f"{KEY}_trip_threshold").value == 15
    assert at.multiselect(key=f"{KEY}_levels").value == [0.5, 0.9, 0.95]
    shown = layers(at)
    # the regions under the clickable zones, the place marked A
    drawn = [
        layer["data"]["name"] for layer in json.loads(deck(at, f"{KEY}_map").proto.spec)["layer"]
    ]
    assert drawn.index("under") < drawn.index("zone_shapes")
    assert [m["name"] for m in shown["markers"]] == ["A"]
    result = expected(vrvm_home, place, "from")
    assert drawn_levels(at) == [level.probability for level in result.levels if level.n_zones]
    assert len(drawn_levels(at)) >= 2
    table = table_with(at, "area (km²)")
    assert table["p"].tolist() == [0.5, 0.9, 0.95]
    assert table["zones"].tolist() == [level.n_zones for level in result.levels]
    assert table["area (km²)"].tolist() == pytest.approx([lv.area_km2 for lv in result.levels])
    assert [d.label for d in at.get("download_button")] == ["Download GeoJSON"]
    legend = " ".join(m.value for m in at.markdown)
    assert "P(arrive within 15 min) ≥ 90 %" in legend
    tips = [z["tip"] for z in shown["zones"]]
    assert any("In the 95 % isochrone: P(arrive within 15 min) ≥ 95 %" in t for t in tips)


def test_direction_to_and_a_click_moves_the_place(vrvm_home):
    area = area_of(vrvm_home)
    at = plan_isochrones()
    at.segmented_control(key=f"{KEY}_direction").set_value("to").run()
    no_exception(at)
    shown = layers(at)
    assert [m["name"] for m in shown["markers"]] == ["B"]
    assert any("From here to the place" in z["tip"] for z in shown["zones"])
    assert any("from the zone to the place" in c.value for c in at.caption)
    result = expected(vrvm_home, central_place(area), "to")
    table = table_with(at, "area (km²)")
    assert table["zones"].tolist() == [level.n_zones for level in result.levels]
    assert [d.label for d in at.get("download_button")] == ["Download GeoJSON"]

    row = len(area.grid) // 3
    at = click_zone(at, area, row, key=f"{KEY}_map")
    no_exception(at)
    assert at.selectbox(key=f"{KEY}_place").value == area.grid["label"][row]
    from vrvm.services.map.places import place_from_zone

    moved = expected(vrvm_home, place_from_zone(area, area.grid["zone"][row]), "to")
    table = table_with(at, "area (km²)")
    assert table["zones"].tolist() == [level.n_zones for level in moved.levels]


def test_threshold_levels_and_no_levels(vrvm_home):
    at = plan_isochrones()
    at.number_input(key=f"{KEY}_trip_threshold").set_value(30).run()
    at.multiselect(key=f"{KEY}_levels").set_value([0.8]).run()
    no_exception(at)
    table = table_with(at, "area (km²)")
    assert table["p"].tolist() == [0.8]
    area = area_of(vrvm_home)
    result = expected(vrvm_home, central_place(area), "from", 30, (0.8,))
    assert table["zones"].tolist() == [result.levels[0].n_zones]
    assert "P(arrive within 30 min) ≥ 80 %" in " ".join(m.value for m in at.markdown)
    at.multiselect(key=f"{KEY}_levels").set_value([]).run()
    no_exception(at)
    assert any("at least one probability" in i.value for i in at.info)
    assert not layers(at)["regions"]


def test_works_on_the_planners_polygons(vrvm_home):
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = plan_isochrones()
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    labels = at.selectbox(key=f"{KEY}_place").options
    assert "D1 · Downtown <b>Synthetica</b>" in labels
    assert at.selectbox(key=f"{KEY}_place").value in labels  # a polygon, not a hexagon
    assert draws_polygons(deck(at, f"{KEY}_map"))
    assert drawn_levels(at)  # at least the place's own polygon
    table = table_with(at, "area (km²)")
    assert (table["area (km²)"] > 0).any()
    assert [d.label for d in at.get("download_button")] == ["Download GeoJSON"]
