"""The Plan page's "Trip with stops" section (AppTest, no browser).

The section opens on base -> scene -> hospital at three busy zones, with a dwell at the
scene, so it is never empty; the numbers shown are the service's for the stops and the
departure in the boxes, changing a dwell or a stop changes them, and a bad trip (the
same zone twice in a row) says why, without a traceback.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import APP, TIMEOUT, area_of, metrics, no_exception, table_with
from vrvm import TravelTimeModel
from vrvm.services.map.places import place_from_label
from vrvm.services.planning.stops import NO_DWELL, Dwell, Stop, trip_with_stops
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_stops"
WHEN = dt.datetime(2024, 3, 5, 7, 45)  # a Tuesday morning


def plan_stops(**state) -> AppTest:
    """The Plan page opened on its trip-with-stops section, with ``state`` preset."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "stops"
    at.session_state[f"{KEY}_when"] = WHEN
    for name, value in state.items():
        at.session_state[f"{KEY}_{name}"] = value
    return at.switch_page(PLAN).run()


def expected(home, at: AppTest, dwells):
    """The service's trip for the stops in the boxes (the model loaded afresh)."""
    model = TravelTimeModel.load(Home(home).models.active_path())
    area = area_of(home)
    n = int(at.number_input(key=f"{KEY}_n").value)
    stops = []
    for i in range(n):
        place = place_from_label(area, at.selectbox(key=f"{KEY}_stop{i}").value)
        name = at.text_input(key=f"{KEY}_name{i}").value
        stops.append(Stop(place.lat, place.lon, name, dwells[i]))
    return trip_with_stops(model, stops, WHEN.isoformat())


def _shown(at: AppTest, trip, threshold_min: float) -> None:
    values = metrics(at)
    assert values["Total (median)"] == f"{trip.median() / 60:.1f} min"
    lo, hi = trip.interval(0.9)
    assert values["90 % interval (min)"] == f"{lo / 60:.0f}-{hi / 60:.0f}"
    p = float(trip.prob_within(threshold_min * 60))
    assert values[f"P(total within {threshold_min:g} min)"] == f"{100 * p:.1f} %"
    (success,) = at.success
    assert trip.sentence(threshold_min * 60).split(":")[1][:20] in success.value
    legs = table_with(at, "from → to")
    assert list(legs["minutes"]) == list((trip.legs()["median_s"] / 60).round(1))


def test_opens_on_the_services_answer_and_follows_the_dwell(vrvm_home):
    at = plan_stops()
    no_exception(at)
    assert [at.text_input(key=f"{KEY}_name{i}").value for i in range(3)] == [
        "base",
        "scene",
        "hospital",
    ]
    trip = expected(vrvm_home, at, [NO_DWELL, Dwell.lognormal(10, 18), NO_DWELL])
    _shown(at, trip, 45.0)
    assert "independent" in " ".join(c.value for c in at.caption)

    # a fixed dwell of 30 min: the answer follows, about 20 min later
    at.radio(key=f"{KEY}_dkind1").set_value("fixed").run()
    at.number_input(key=f"{KEY}_dmin1").set_value(30.0).run()
    no_exception(at)
    longer = expected(vrvm_home, at, [NO_DWELL, Dwell.fixed(30), NO_DWELL])
    _shown(at, longer, 45.0)
    assert longer.median() > trip.median() + 15 * 60


def test_another_stop_and_threshold_change_the_answer(vrvm_home):
    at = plan_stops(dkind1="none", threshold=30.0)
    area = area_of(vrvm_home)
    first = expected(vrvm_home, at, [NO_DWELL] * 3)
    _shown(at, first, 30.0)
    labels = list(area.grid["label"])
    current = {at.selectbox(key=f"{KEY}_stop{i}").value for i in range(3)}
    other = next(label for label in labels if label not in current)
    at.selectbox(key=f"{KEY}_stop2").set_value(other).run()
    no_exception(at)
    moved = expected(vrvm_home, at, [NO_DWELL] * 3)
    assert at.selectbox(key=f"{KEY}_stop2").value == other
    _shown(at, moved, 30.0)
    assert moved.median() != first.median()

    # a fourth stop: the hospital's dwell box appears, the answer has three legs
    at.session_state[f"{KEY}_stop3"] = next(x for x in labels if x not in current | {other})
    at.number_input(key=f"{KEY}_n").set_value(4).run()
    no_exception(at)
    assert at.radio(key=f"{KEY}_dkind2").value == "none"
    assert len(table_with(at, "from → to")) == 3


def test_bad_trip_says_why(vrvm_home):
    at = plan_stops()
    same = at.selectbox(key=f"{KEY}_stop0").value
    at.selectbox(key=f"{KEY}_stop1").set_value(same).run()
    no_exception(at)
    (error,) = at.error
    assert "same" in error.value.lower() or "point" in error.value.lower()
    assert not at.metric  # no stale answer beside the message

    # a log-normal dwell whose 90th percentile is below its median
    at.selectbox(key=f"{KEY}_stop1").set_value(at.selectbox(key=f"{KEY}_stop2").value)
    at.selectbox(key=f"{KEY}_stop2").set_value(same).run()
    at.number_input(key=f"{KEY}_dp90{1}").set_value(5.0).run()
    no_exception(at)
    (error,) = at.error
    assert "median" in error.value.lower() or "p90" in error.value.lower()
    assert not at.metric
