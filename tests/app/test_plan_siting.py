"""The Plan page's siting section (AppTest, no browser): the sites and the objective are the
service's for the inputs shown, a changed input forgets the answer, bad input is a message."""

from __future__ import annotations

import datetime as dt

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import APP, TIMEOUT, area_of, metrics, no_exception, table_with
from vrvm import TravelTimeModel
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.planning import siting
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_site"


def plan_site(**state) -> AppTest:
    """The Plan page on its siting section, departing 08:15 on a Tuesday, T = 8 min."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "site"
    at.session_state[f"{KEY}_trip_when"] = dt.datetime(2024, 3, 5, 8, 15)
    at.session_state[f"{KEY}_trip_threshold"] = 8.0
    for name, value in state.items():
        at.session_state[f"{KEY}_{name}"] = value
    at = at.switch_page(PLAN).run()
    no_exception(at)
    return at


def captions(at: AppTest) -> str:
    """The captions as read (Markdown escapes removed)."""
    return "\n".join(c.value.replace("\\", "") for c in at.caption)


def sites_shown(at: AppTest):
    return table_with(at, "p_served")


def test_sites_and_objective_are_the_services(vrvm_home):
    area = area_of(vrvm_home)
    busy = area.grid.sort_values("n_points", ascending=False, kind="stable").head(8)
    at = plan_site(where="chosen", chosen=busy["label"].tolist(), k=3)
    assert not [t for t in at.dataframe if "p_served" in t.value.columns]  # not yet solved
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    model = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    departure = combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)
    expected = siting.site_bases(
        model,
        siting.area_points(area, busy["zone"].astype(str).tolist()),
        siting.area_points(area, what="demand"),
        3,
        480.0,
        [departure],
        time_limit_s=60.0,
    )
    shown = sites_shown(at)
    assert shown["id"].tolist() == expected.sites["id"].tolist()
    assert metrics(at)["Optimal: demand reached within 8 min"] == (
        f"{100 * expected.objective:.1f} %"
    )
    assert metrics(at)["Greedy"] == f"{100 * expected.greedy_objective:.1f} %"
    assert any("Maximised" in c.value for c in at.caption)
    assert any("proven optimal" in c.value for c in at.caption)

    at.number_input(key=f"{KEY}_k").set_value(2).run()  # a changed input: answer forgotten
    no_exception(at)
    assert not [t for t in at.dataframe if "p_served" in t.value.columns]
    assert any("Find the best sites" in i.value for i in at.info)
    at.button(key=f"{KEY}_solve").click().run()
    assert len(sites_shown(at)) == 2


def test_bad_input_is_a_message(vrvm_home):
    at = plan_site(where="chosen", chosen=[], k=2)
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    assert any("choose at least one candidate" in e.value for e in at.error)

    area = area_of(vrvm_home)
    one = area.grid["label"].iloc[:1].tolist()
    at = plan_site(where="chosen", chosen=one, k=3)
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    assert any("only 1 candidate" in e.value for e in at.error)

    at = plan_site(where="chosen", chosen=one, question="fewest", p=1.0)
    at.session_state[f"{KEY}_trip_threshold"] = 1.0
    at.run()
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    assert any("No set of bases reaches" in e.value for e in at.error)


def test_an_uploaded_demand_is_the_demand_solved_for(vrvm_home):
    """A demand file weighs the zones (as the fleet section's does); the answer kept for
    the training trips' demand is forgotten when the file is chosen, and the caption
    names the demand the answer is for."""
    import numpy as np

    area = area_of(vrvm_home)
    busy = area.grid.sort_values("n_points", ascending=False, kind="stable").head(6)
    at = plan_site(where="chosen", chosen=busy["label"].tolist(), k=1)
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    assert len(sites_shown(at)) == 1
    assert "demand: training trips starting in each zone." in captions(at)
    # all demand in the quietest zones: the site is solved for it
    quiet = area.grid.sort_values("n_points", kind="stable").head(3)
    data = "zone,demand\n" + "".join(f"{zone},5\n" for zone in quiet["zone"])
    upload = at.file_uploader(key=f"{KEY}_demand_upload")
    upload.upload("calls.csv", data.encode(), "text/csv").run()
    no_exception(at)
    assert not [t for t in at.dataframe if "p_served" in t.value.columns]  # forgotten
    assert "demand: the uploaded demand (calls.csv)." in captions(at)
    at.button(key=f"{KEY}_solve").click().run()
    no_exception(at)
    model = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    departure = combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)
    weights = np.zeros(len(area.grid))
    weights[area.grid.index.get_indexer(quiet.index)] = 5.0
    expected = siting.site_bases(
        model,
        siting.area_points(area, busy["zone"].astype(str).tolist()),
        siting.area_points(area, what="demand", demand=weights),
        1,
        480.0,
        [departure],
        time_limit_s=60.0,
    )
    assert sites_shown(at)["id"].tolist() == expected.sites["id"].tolist()
    assert metrics(at)["Optimal: demand reached within 8 min"] == (
        f"{100 * expected.objective:.1f} %"
    )


def test_a_bad_demand_file_is_a_message_naming_it(vrvm_home):
    at = plan_site(k=1)
    upload = at.file_uploader(key=f"{KEY}_demand_upload")
    upload.upload("calls.csv", b"zone,demand\nnot-a-zone,5\n", "text/csv").run()
    no_exception(at)
    assert any("calls.csv" in e.value for e in at.error)
