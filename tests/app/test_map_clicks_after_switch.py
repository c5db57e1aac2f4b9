"""A map click after the map's zones change selects the zone clicked (AppTest, no browser).

A pydeck chart's selection names the picked object by its position in the layer's
data. The pages remembered the last selection acted upon by that position, so after
the zones changed (hexagons to a planner's polygons, another model version and so
other hexagons) a click on the zone at the same position as the last click was taken
for the old selection re-sent, and ignored. In the browser it was worse: the chart kept
the old selection, so that click deselected it. Here the same position is clicked
before and after each switch on every map that takes clicks, and the place must be the
zone now at that position.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_no_stale_answers import (  # noqa: F401 (kolkata_model: a fixture)
    DEPARTURE,
    PLAN,
    active_area,
    boxes,
    kolkata_model,
    publish,
)
from tests.app.test_pages import APP, TIMEOUT, click_zone, no_exception, run_app
from tests.app.test_zone_polygons import HEXAGONS, districts_geojson
from vrvm.trips.home import Home

FIRST, SECOND = 1, 3  # positions in the zone layer; the districts have 6 clickable zones


def click(at: AppTest, key: str, index: int) -> AppTest:
    """Click the zone at ``index`` of the map's zone layer: the browser's payload."""
    at = click_zone(at, None, index, f"{key}_map")
    no_exception(at)
    return at


def label_at(home, index: int) -> str:
    """The label of the zone at ``index`` of the current map (zones of the home's choice)."""
    _, area = active_area(home)
    return area.grid["label"].iloc[index]


def after_click(before: tuple[str | None, str | None], label: str) -> tuple[str, str | None]:
    """The pair after a click on ``label`` (:func:`vrvm.services.map.places.apply_map_click`):
    the destination when only an origin is set, else the origin of a new pair."""
    origin, dest = before
    return (origin, label) if origin is not None and dest is None else (label, None)


def switch_to_districts(at: AppTest) -> AppTest:
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    return at


@pytest.fixture
def districts(vrvm_home):
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    return vrvm_home


# ------------------------------------------------------------------------ Predict page


def test_predict_a_click_after_a_switch_of_zones_sets_the_zone_clicked(districts):
    home = districts
    at = run_app(t=DEPARTURE)
    at = click(at, "od", FIRST)  # a new pair: origin
    at = click(at, "od", SECOND)  # its destination
    assert boxes(at) == (label_at(home, FIRST), label_at(home, SECOND))

    at = switch_to_districts(at)
    relocated = boxes(at)  # the districts holding the pair (or None)
    # the zone at the position of the last click
    at = click(at, "od", SECOND)
    assert boxes(at) == after_click(relocated, label_at(home, SECOND))
    at = click(at, "od", FIRST)
    assert boxes(at) == after_click(
        after_click(relocated, label_at(home, SECOND)), label_at(home, FIRST)
    )

    # and back to the hexagons: the same again
    at.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    no_exception(at)
    relocated = boxes(at)
    at = click(at, "od", FIRST)
    assert boxes(at) == after_click(relocated, label_at(home, FIRST))


def test_predict_a_click_after_another_model_version_sets_the_zone_clicked(vrvm_home, request):
    at = run_app(t=DEPARTURE)
    at = click(at, "od", FIRST)
    at = click(at, "od", SECOND)
    publish(
        vrvm_home, request.getfixturevalue("kolkata_model")
    )  # its hexagons: other trips, other zones
    at.run()
    no_exception(at)
    relocated = boxes(at)
    at = click(at, "od", SECOND)
    assert boxes(at) == after_click(relocated, label_at(vrvm_home, SECOND))


def test_the_reach_map_takes_a_click_after_a_switch_of_zones(districts):
    home = districts
    at = run_app(t=DEPARTURE)
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    at = click(at, "od", SECOND)
    assert at.selectbox(key="od_origin").value == label_at(home, SECOND)
    at = switch_to_districts(at)
    at = click(at, "od", SECOND)
    assert at.selectbox(key="od_origin").value == label_at(home, SECOND)
    assert any(k.startswith("Zones reached") for k in (m.label for m in at.metric))


def test_a_selection_is_not_applied_again_on_the_new_zones(districts):
    """The switch itself is no click: the old selection is not read on the new zones."""
    home = districts
    at = run_app(t=DEPARTURE)
    at = click(at, "od", FIRST)
    at = click(at, "od", SECOND)
    _, hexagons = active_area(home)
    at = switch_to_districts(at)
    relocated = boxes(at)
    at.run()  # a rerun re-sends whatever selection the chart holds
    no_exception(at)
    assert boxes(at) == relocated
    assert relocated[1] != label_at(home, SECOND)  # not the district at the old position
    assert hexagons.grid["label"].iloc[SECOND] != label_at(home, SECOND)


# ------------------------------------------------------------------------ Plan page


def plan(section: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = section
    at.session_state["plan_arrive_date"] = dt.date(2024, 3, 5)
    at.session_state["plan_arrive_time"] = dt.time(9, 0)
    at.session_state[f"plan_{section}_trip_when"] = dt.datetime(2024, 3, 5, 8, 15)
    at = at.switch_page(PLAN).run()
    no_exception(at)
    return at


def test_arrive_by_a_click_after_a_switch_of_zones_sets_the_zone_clicked(districts):
    home = districts
    key = "plan_arrive_od"
    at = plan("arrive")
    at = click(at, key, FIRST)
    at = click(at, key, SECOND)
    assert boxes(at, key) == (label_at(home, FIRST), label_at(home, SECOND))
    at = switch_to_districts(at)
    relocated = boxes(at, key)
    at = click(at, key, SECOND)
    assert boxes(at, key) == after_click(relocated, label_at(home, SECOND))


def test_isochrones_a_click_after_a_switch_of_zones_moves_the_place(districts):
    home = districts
    key = "plan_isochrone"
    at = plan("isochrone")
    at = click(at, key, SECOND)
    assert at.selectbox(key=f"{key}_place").value == label_at(home, SECOND)
    at = switch_to_districts(at)
    at = click(at, key, SECOND)
    assert at.selectbox(key=f"{key}_place").value == label_at(home, SECOND)
    at.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    no_exception(at)
    at = click(at, key, SECOND)
    assert at.selectbox(key=f"{key}_place").value == label_at(home, SECOND)


def test_fleet_a_click_after_a_switch_of_zones_places_a_base_in_the_zone_clicked(districts):
    home = districts
    key = "plan_fleet"
    at = plan("fleet")
    at = click(at, key, SECOND)
    assert label_at(home, SECOND) in at.multiselect(key=f"{key}_pick").value
    at = switch_to_districts(at)
    before = list(at.multiselect(key=f"{key}_pick").value)
    at = click(at, key, SECOND)
    after = at.multiselect(key=f"{key}_pick").value
    clicked = label_at(home, SECOND)
    assert (clicked in after) != (clicked in before), (before, after)  # toggled
