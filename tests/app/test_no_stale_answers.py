"""No stale answer on a page: every answer names the pair in the boxes (AppTest, no browser).

The reported sequence: a pair is answered on the Predict page, boundary polygons are
uploaded in the sidebar and chosen as the clickable zones. The boxes went blank while
the answer still named the old hexagons ("From Zone 191 ...") and said the training
trips were not kept. Here every change of an answer's inputs (the zones, the
boundaries naming them, the active model version and so its time zone) is followed by
a check that the boxes, the sentence, the numbers and the support count describe the
same pair, computed by the services afresh for what the boxes hold.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import (
    APP,
    TIMEOUT,
    answer_sentence,
    metrics,
    no_exception,
    run_app,
    shown,
)
from tests.app.test_zone_polygons import HEXAGONS, districts_geojson
from vrvm import TravelTimeModel
from vrvm.services.answers import forecast, schedule
from vrvm.services.map import area as area_svc
from vrvm.services.map import boundaries as boundaries_svc
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import place_from_label
from vrvm.services.versions import models
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.synthetic import synthetic_city

KOLKATA = "Asia/Kolkata"  # UTC+05:30 all year: no daylight saving to step over
DEPARTURE = "2024-03-05T08:15"
PLAN = "pages/3_Plan.py"


@pytest.fixture(scope="module")
def kolkata_model():
    """A second model of the synthetic city, its trips' clocks read in Asia/Kolkata (not
    UTC like the demo's), from other trips: its answers differ from the demo model's."""
    trips = synthetic_city(3000, seed=1)
    trips["start_time"] = trips["start_time"].dt.tz_localize(None).dt.tz_localize(KOLKATA)
    trips.attrs["tz"] = KOLKATA
    model = TravelTimeModel(
        name="Synthetica in Kolkata time",
        n_members=2,
        kernel_widths=[1.5, 3.0],
        max_basis=150,
        random_state=0,
        n_jobs=1,
        tz=KOLKATA,
    ).fit(trips)
    assert model.tz_ == KOLKATA
    return model, trips


def publish(home, kolkata_model) -> int:
    """Publish (and activate) the Kolkata model, its training trips kept."""
    model, trips = kolkata_model
    info = {"kind": "train", "data": "synthetic seed 1", "n_trips": len(trips)}
    return models.publish_model(home, model, metrics=None, info=info, training_trips=trips)


def active_area(home):
    """The active model and the area of the zones and boundaries the home names, built
    afresh (the page's is cached)."""
    model = TravelTimeModel.load(Home(home).models.active_path())
    trips = Home(home).load_training_trips(model)
    entry = area_svc.zone_choice(home)
    zones = None if entry is None else area_svc.load_zone_choice(home, entry.name)
    shown = boundaries_svc.shown_boundaries(home)
    document = None
    if shown is not None and (entry is None or entry.fingerprint != shown.fingerprint):
        document = boundaries_svc.load_boundaries(home, shown.name)
    return model, build_service_area(model, trips=trips, zones=zones, boundaries=document)


def boxes(at: AppTest, key: str = "od") -> tuple[str | None, str | None]:
    return at.selectbox(key=f"{key}_origin").value, at.selectbox(key=f"{key}_dest").value


def assert_answer_names_the_boxes(at: AppTest, home) -> None:
    """The sentence, the numbers and the support count are the services' answer for the
    pair in the boxes, with the active model, on the zones of the map; no answer
    without a pair."""
    no_exception(at)
    origin_label, dest_label = boxes(at)
    if origin_label is None or dest_label is None:
        assert answer_sentence(at) is None and "Median" not in metrics(at)
        assert any(i.value.startswith("Choose ") for i in at.info)
        return
    model, area = active_area(home)
    origin, dest = place_from_label(area, origin_label), place_from_label(area, dest_label)
    when = at.datetime_input(key="trip_when").value
    departure = forecast.combine_departure(when.date(), when.time(), model.tz_)
    threshold = at.number_input(key="trip_threshold").value
    answer = forecast.answer_od(
        model,
        origin,
        dest,
        departure,
        threshold,
        trips=Home(home).load_training_trips(model),
        resolution=area.resolution,
        area=area,
    )
    sentence = answer_sentence(at)
    assert sentence.startswith(answer.forecast.answer_sentence()), (sentence, boxes(at))
    assert metrics(at)["Median"] == f"{answer.forecast.median_min:.1f} min"
    notes = [shown(c.value) for c in at.caption] + [shown(w.value) for w in at.warning]
    assert not any("were not kept" in note for note in notes)
    assert any(answer.support.sentence() in note for note in notes), notes


def test_a_new_threshold_alone_gives_the_services_answer_for_it(vrvm_home, monkeypatch):
    """Only P(T <= threshold) depends on the threshold: the page keeps the trip's answer
    and takes that probability from the same distribution. What it shows is the services'
    answer for the new threshold, and a new departure predicts again."""
    at = run_app(t=DEPARTURE)
    assert_answer_names_the_boxes(at, vrvm_home)
    calls = []
    original = forecast.answer_od
    monkeypatch.setattr(forecast, "answer_od", lambda *a, **k: calls.append(1) or original(*a, **k))
    at.number_input(key="trip_threshold").set_value(31.0).run()
    assert "P(arrive within 31 min)" in answer_sentence(at)
    assert_answer_names_the_boxes(at, vrvm_home)
    assert len(calls) == 1  # the check's own call: the page predicted nothing
    when = at.datetime_input(key="trip_when").value
    at.datetime_input(key="trip_when").set_value(when + dt.timedelta(hours=3)).run()
    assert_answer_names_the_boxes(at, vrvm_home)
    assert len(calls) == 3  # the page's and the check's


def test_switching_zones_and_boundaries_keeps_the_answer_on_the_pair_in_the_boxes(vrvm_home):
    at = run_app(t=DEPARTURE)
    assert_answer_names_the_boxes(at, vrvm_home)
    before = boxes(at)
    assert before[0].startswith("Zone ") and before[1].startswith("Zone ")

    # the boundaries rename the hexagons: the sentence uses the new names, as the boxes
    at.file_uploader(key="settings_boundary_upload").upload(
        "districts.geojson", districts_geojson(), "application/geo+json"
    ).run()
    renamed = boxes(at)
    assert renamed != before and renamed[0].startswith(before[0].split(" · ")[0])
    assert_answer_names_the_boxes(at, vrvm_home)

    # the polygons become the clickable zones: the pair is the polygons holding it
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    assert boxes(at) == ("D1 · Downtown <b>Synthetica</b>", "AP · Airport")
    assert_answer_names_the_boxes(at, vrvm_home)
    assert any("zones changed" in i.value for i in at.info)
    assert any("between these two zones" in c.value for c in at.caption)

    # and back to the hexagons: the hexagons holding the polygons' points
    at.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    assert all(label.startswith("Zone ") for label in boxes(at))
    assert_answer_names_the_boxes(at, vrvm_home)

    # the boundaries removed: the hexagons' own names again
    at.button(key="settings_boundary_remove").click().run()
    assert_answer_names_the_boxes(at, vrvm_home)
    assert "Airport" not in boxes(at)[1] or "Synthetica International" in boxes(at)[1]


def test_a_place_no_new_zone_holds_is_dropped_and_the_answer_cleared(vrvm_home):
    at = run_app(t=DEPARTURE)
    at.file_uploader(key="settings_boundary_upload").upload(
        "districts.geojson", districts_geojson(), "application/geo+json"
    ).run()
    # a hexagon at the city's edge, outside every district: no polygon holds its centre
    _, hexagons = active_area(vrvm_home)
    districts = ZoneFile.from_geojson(json.loads(districts_geojson()), id_property="district")
    outside = districts.zone_index(hexagons.grid["lat"], hexagons.grid["lon"]) < 0
    assert outside.any()
    at.selectbox(key="od_origin").set_value(hexagons.grid["label"][outside].iloc[0]).run()
    assert_answer_names_the_boxes(at, vrvm_home)
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    assert boxes(at) == (None, "AP · Airport")
    assert any("origin lie in none of the new zones" in i.value for i in at.info)
    assert_answer_names_the_boxes(at, vrvm_home)  # no answer, and it asks for an origin


def test_another_model_version_recomputes_the_answer_in_its_time_zone(vrvm_home, kolkata_model):
    at = run_app(t=DEPARTURE)
    assert_answer_names_the_boxes(at, vrvm_home)
    assert at.datetime_input(key="trip_when").label == "Departure (local time, UTC)"
    first = answer_sentence(at)

    version = publish(vrvm_home, kolkata_model)  # activated, as the Retrain page does
    at.run()
    assert at.caption[0].value.startswith(f"Model version {version} ")
    # a chosen departure keeps its wall-clock time, now read in the model's zone
    assert str(at.datetime_input(key="trip_when").value) == "2024-03-05 08:15:00"
    assert at.datetime_input(key="trip_when").label == f"Departure (local time, {KOLKATA})"
    assert answer_sentence(at) != first
    assert_answer_names_the_boxes(at, vrvm_home)

    models.activate_version(vrvm_home, 1)  # back to the demo model
    at.run()
    assert at.caption[0].value.startswith("Model version 1 ")
    assert answer_sentence(at) == first
    assert_answer_names_the_boxes(at, vrvm_home)


def _now_in(tz: str) -> dt.datetime:
    return forecast.default_departure(tz).tz_localize(None).to_pydatetime()


def test_leave_now_is_now_in_the_models_time_zone(vrvm_home, kolkata_model):
    before = _now_in("UTC")
    at = run_app()  # no departure in the link: now, in the demo model's zone (UTC)
    assert at.datetime_input(key="trip_when").value in {before, _now_in("UTC")}
    publish(vrvm_home, kolkata_model)
    before = _now_in(KOLKATA)
    at.run()  # "now" follows the model into its zone
    after = _now_in(KOLKATA)
    assert at.datetime_input(key="trip_when").value in {before, after}
    assert_answer_names_the_boxes(at, vrvm_home)

    at.datetime_input(key="trip_when").set_value(dt.datetime(2024, 3, 5, 8, 15)).run()
    assert_answer_names_the_boxes(at, vrvm_home)
    before = _now_in(KOLKATA)
    at.button(key="trip_now").click().run()
    after = _now_in(KOLKATA)
    assert at.datetime_input(key="trip_when").value in {before, after}
    now_button = at.button(key="trip_now")
    assert KOLKATA in now_button.help
    assert_answer_names_the_boxes(at, vrvm_home)


# ------------------------------------------------------------------------ Plan page


def plan(section: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = section
    at.session_state["plan_arrive_date"] = dt.date(2024, 3, 5)
    at.session_state["plan_arrive_time"] = dt.time(9, 0)
    return at.switch_page(PLAN).run()


def assert_arrive_answer_names_the_boxes(at: AppTest, home) -> None:
    no_exception(at)
    origin_label, dest_label = boxes(at, "plan_arrive_od")
    model, area = active_area(home)
    answer = schedule.arrive_by(
        model,
        place_from_label(area, origin_label),
        place_from_label(area, dest_label),
        forecast.combine_departure(dt.date(2024, 3, 5), dt.time(9, 0), model.tz_),
        at.select_slider(key="plan_arrive_prob").value,
        search_hours=at.slider(key="plan_arrive_hours").value,
    )
    said = [shown(s.value) for s in at.success] + [shown(w.value) for w in at.warning]
    assert answer.sentence() in said, (answer.sentence(), said)
    if answer.found:
        assert metrics(at)["Latest departure"] == f"{answer.departure:%H:%M:%S}"


def test_the_plan_pages_answers_follow_zones_and_versions(vrvm_home, kolkata_model):
    at = plan("arrive")
    assert_arrive_answer_names_the_boxes(at, vrvm_home)
    at.file_uploader(key="settings_boundary_upload").upload(
        "districts.geojson", districts_geojson(), "application/geo+json"
    ).run()
    assert_arrive_answer_names_the_boxes(at, vrvm_home)
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    assert boxes(at, "plan_arrive_od") == ("D1 · Downtown <b>Synthetica</b>", "AP · Airport")
    assert_arrive_answer_names_the_boxes(at, vrvm_home)
    publish(vrvm_home, kolkata_model)
    at.run()
    assert_arrive_answer_names_the_boxes(at, vrvm_home)

    # the isochrones' place is a zone of the map, under its current name
    at.segmented_control(key="plan_section").set_value("isochrone").run()
    no_exception(at)
    place = at.selectbox(key="plan_isochrone_place").value
    assert place in at.selectbox(key="plan_isochrone_place").options
    at.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    no_exception(at)
    moved = at.selectbox(key="plan_isochrone_place").value
    assert moved.startswith("Zone ") and moved in at.selectbox(key="plan_isochrone_place").options


# --------------------------------------------------------------------- Retrain page


def offered_export(at: AppTest) -> str | None:
    """The file name of the model export the page offers, if it offers one."""
    if not any(d.label == "Download the model (zip)" for d in at.get("download_button")):
        return None
    _, (_, file_name, _) = at.session_state["retrain_export_file"]
    return file_name


def test_a_prepared_export_is_forgotten_when_another_version_is_active(vrvm_home, kolkata_model):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("pages/2_Retrain.py").run()
    at.button(key="retrain_export_prepare").click().run()
    no_exception(at)
    assert offered_export(at).startswith("vrvm_model_v1_")
    # another session (or the CLI) activates another version: the file is not offered
    publish(vrvm_home, kolkata_model)
    at.run()
    no_exception(at)
    assert offered_export(at) is None
    at.button(key="retrain_export_prepare").click().run()
    assert offered_export(at).startswith("vrvm_model_v2_")
    # back to version 1: the file made for version 2 is not offered either
    models.activate_version(vrvm_home, 1)
    at.run()
    assert offered_export(at) is None
