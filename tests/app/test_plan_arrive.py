"""The Plan page's arrive-by section (AppTest, no browser).

The section opens on a busy trip and 09:00 on the next weekday, so it is never empty;
the answer shown is the service's for the same inputs, a lower p leaves later, an
unreachable p says why there is no answer, and "Leave within a window" shows the trip
like a single departure. The Predict page shows the reliability indices too.
"""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import (
    APP,
    TIMEOUT,
    area_of,
    click_zone,
    metrics,
    no_exception,
    run_app,
    shown,
    table_with,
)
from vrvm import TravelTimeModel
from vrvm.services.answers import schedule
from vrvm.services.answers.forecast import combine_departure
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_arrive"
DAY = dt.date(2024, 3, 5)  # a Tuesday


def plan_arrive(**state) -> AppTest:
    """The Plan page opened on its arrive-by section, with ``state`` preset."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "arrive"
    for name, value in state.items():
        at.session_state[f"{KEY}_{name}"] = value
    return at.switch_page(PLAN).run()


def expected(home, prob: float, *, hours: float = 3.0, day=DAY, clock=dt.time(9, 0)):
    """The service's answer for the default trip (the model loaded afresh)."""
    model = TravelTimeModel.load(Home(home).models.active_path())
    origin, dest = schedule.default_pair(area_of(home))
    deadline = combine_departure(day, clock, model.tz_)
    return schedule.arrive_by(model, origin, dest, deadline, prob, search_hours=hours)


def test_opens_on_an_answer(vrvm_home):
    at = plan_arrive()
    no_exception(at)
    origin, dest = schedule.default_pair(area_of(vrvm_home))
    assert at.selectbox(key=f"{KEY}_od_origin").value == origin.label
    assert at.selectbox(key=f"{KEY}_od_dest").value == dest.label
    deadline = schedule.default_deadline("UTC")
    assert at.date_input(key=f"{KEY}_date").value == deadline.date()
    assert at.time_input(key=f"{KEY}_time").value == dt.time(9, 0)
    assert deadline.dayofweek < 5
    # an answer (or the reason there is none), the curve, the download
    said = [shown(s.value) for s in at.success] + [shown(w.value) for w in at.warning]
    assert any(text.startswith(("Leave ", "No departure")) for text in said), said
    assert len(at.get("plotly_chart")) == 1
    assert [d.label for d in at.get("download_button")] == ["Download the curve (CSV)"]
    assert {"Planning time index", "Buffer index", "Misery index"} <= set(metrics(at))


def test_answer_is_the_services_and_a_lower_p_leaves_later(vrvm_home):
    at = plan_arrive(date=DAY, time=dt.time(9, 0))
    no_exception(at)
    strict = expected(vrvm_home, 0.95)
    assert strict.found
    shown_metrics = metrics(at)
    assert shown_metrics["Latest departure"] == f"{strict.departure:%H:%M:%S}"
    assert shown_metrics["P(arrive in time) then"] == f"{100 * strict.prob_at_departure:.1f} %"
    assert shown(at.success[0].value) == strict.sentence()
    assert "by 09:00 with 95 % probability" in strict.sentence()
    assert shown_metrics["Planning time index"] == f"{strict.indices.planning_time_index:.2f}"
    arrivals = table_with(at, "arrival")
    assert arrivals["quantile"].tolist() == ["50 %", "80 %", "90 %", "95 %"]

    at.select_slider(key=f"{KEY}_prob").set_value(0.6).run()
    no_exception(at)
    loose = expected(vrvm_home, 0.6)
    assert loose.departure > strict.departure
    assert metrics(at)["Latest departure"] == f"{loose.departure:%H:%M:%S}"
    assert "with 60 % probability" in shown(at.success[0].value)


def test_no_departure_meets_p(vrvm_home):
    at = plan_arrive(date=DAY, time=dt.time(9, 0))
    at.slider(key=f"{KEY}_hours").set_value(1).run()
    at.select_slider(key=f"{KEY}_prob").set_value(0.999).run()
    no_exception(at)
    none = expected(vrvm_home, 0.999, hours=1.0)
    assert not none.found  # the premise: the 99.9th percentile is over an hour
    assert not at.success
    warning = shown(at.warning[-1].value)
    assert warning == none.reason
    assert warning.startswith("No departure in the 1 h before the deadline")
    assert "Latest departure" not in metrics(at)
    assert len(at.get("plotly_chart")) == 1  # the curve still says how close it gets
    assert "best departure searched" in " ".join(m.value for m in at.markdown)


def test_departure_window(vrvm_home):
    at = plan_arrive(wdate=DAY, wstart=dt.time(8, 0), wend=dt.time(9, 0), threshold=40.0)
    at.segmented_control(key=f"{KEY}_mode").set_value("window").run()
    no_exception(at)
    model = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    origin, dest = schedule.default_pair(area_of(vrvm_home))
    start = combine_departure(DAY, dt.time(8, 0), model.tz_)
    window = schedule.depart_within(model, origin, dest, start, start + dt.timedelta(hours=1), 40.0)
    shown_metrics = metrics(at)
    assert shown_metrics["Median"] == f"{window.forecast.median_min:.1f} min"
    assert shown_metrics["P(arrive within 40 min)"] == f"{100 * window.forecast.prob_within:.0f} %"
    assert window.n_departures == 60
    assert any(window.sentence() in shown(c.value) for c in at.caption)
    assert len(at.get("plotly_chart")) == 1  # the density
    # an empty window is refused in words, not with a traceback
    at.time_input(key=f"{KEY}_wend").set_value(dt.time(7, 0)).run()
    no_exception(at)
    assert any("before it starts" in shown(e.value) for e in at.error)


def test_a_click_changes_the_origin(vrvm_home):
    area = area_of(vrvm_home)
    at = plan_arrive(date=DAY, time=dt.time(9, 0))
    at = click_zone(at, area, 30, key=f"{KEY}_od_map")
    no_exception(at)
    assert at.selectbox(key=f"{KEY}_od_origin").value == area.grid["label"][30]
    assert at.selectbox(key=f"{KEY}_od_dest").value is None
    assert any("Choose a destination" in i.value for i in at.info)


def test_predict_page_shows_the_indices(vrvm_home):
    at = run_app()
    labels = at.selectbox(key="od_origin").options
    at.selectbox(key="od_origin").set_value(labels[250]).run()
    at.selectbox(key="od_dest").set_value(labels[400]).run()
    no_exception(at)
    shown_metrics = metrics(at)
    for name in ("Planning time index", "Buffer index", "Misery index"):
        assert float(shown_metrics[name]) > 0
    assert any("Free-flow time" in c.value for c in at.caption)


def test_reach_map_table_has_the_indices(vrvm_home):
    at = run_app()
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    labels = at.selectbox(key="od_origin").options
    at.selectbox(key="od_origin").set_value(labels[250]).run()
    no_exception(at)
    table = table_with(at, "planning time index")
    assert {"buffer index", "misery index"} <= set(table.columns)
    assert (table["planning time index"] > 0).all()
