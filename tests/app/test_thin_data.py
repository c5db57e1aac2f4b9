"""The Predict page says how much data stands behind an answer (AppTest, no browser)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import deck, map_records
from vrvm import TravelTimeModel
from vrvm.services.map.area import build_service_area
from vrvm.services.map.support import origin_support
from vrvm.trips.home import Home

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _restore_main_module():
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


def labels_of_pairs(home: Path):
    """Labels of a well-travelled zone pair and of a pair no training trip joins."""
    model = TravelTimeModel.load(Home(home).models.active_path())
    area = build_service_area(model, trips=Home(home).load_training_trips(model))
    origin = int(area.grid["n_points"].idxmax())
    counts = origin_support(area.support, origin, 8 * 60 + 15)["support_trips"].to_numpy()
    busy, empty = int(np.argmax(counts)), int(np.argmin(counts))
    assert counts[busy] >= 5 and counts[empty] == 0
    label = area.grid["label"]
    return label[origin], label[busy], label[empty], area


def test_thin_data_is_said_next_to_the_answer_and_faded_on_the_reach_map(vrvm_home):
    origin, busy, empty, area = labels_of_pairs(vrvm_home)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params.update(t="2024-03-05T08:15")
    at.run()
    at.selectbox(key="od_origin").set_value(origin).run()
    at.selectbox(key="od_dest").set_value(busy).run()
    assert not at.exception
    assert not any("Thin data" in w.value for w in at.warning)
    assert any("training trips went between these two areas" in c.value for c in at.caption)
    assert any("ensemble members' medians range" in c.value for c in at.caption)
    at.selectbox(key="od_dest").set_value(empty).run()
    assert not at.exception
    warning = next(w.value for w in at.warning if "Thin data" in w.value)
    assert "No training trip went between these two areas" in warning
    # the reach map fades the zones no trip from near the origin went to
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    assert not at.exception
    zones = map_records(deck(at, "od_map"), "zones")
    thin = [z for z in zones if "Thin data" in z["tip"]]
    assert 0 < len(thin) < len(zones) == len(area.grid)
    assert all(z["fill"][3] <= 90 for z in thin)
    assert any("are faded" in c.value for c in at.caption)
    assert any("Faded: thin data" in m.value for m in at.markdown)  # the legend entry


def test_a_kind_of_day_the_model_never_saw_is_said_wherever_a_departure_is_chosen(
    vrvm_home, monkeypatch
):
    """A model of weekday trips (the SF bike-share sample) answered for a Saturday
    without a word. Here the tiny model's index says it saw no weekend trip: every
    page with a departure says so on a Saturday, and nothing on a Tuesday. (The counts
    themselves are tested on real weekday-only trips in tests/services.)"""
    import datetime as dt

    from vrvm.services.map.support import TripSupport

    monkeypatch.setattr(
        TripSupport, "day_kind_trips", lambda self, kind: 0 if kind == "weekend" else 3000
    )
    origin, busy, _, _ = labels_of_pairs(vrvm_home)
    for when, saturday in (("2024-03-09T08:15", True), ("2024-03-05T08:15", False)):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
        at.query_params.update(t=when)
        at.run()
        at.selectbox(key="od_origin").set_value(origin).run()
        at.selectbox(key="od_dest").set_value(busy).run()
        assert not at.exception
        said = [w.value for w in at.warning if "departed on a weekend" in w.value]
        assert bool(said) is saturday
        if saturday:
            assert said[0].startswith("**No trips on a weekend.**")
            assert "for a Saturday this model answers with what it learned on weekdays" in said[0]
        at.segmented_control(key="predict_mode").set_value("coverage").run()
        assert not at.exception
        assert any("Every zone is faded" in c.value for c in at.caption) is saturday
        assert any("on this kind of day" in m.value for m in at.markdown) is saturday

    # the Plan page's sections warn under their departure
    sections = (
        ("isochrone", "plan_isochrone_trip"),
        ("fleet", "plan_fleet_trip"),
        ("gaps", "plan_gaps"),  # its own date field, several times of one day
    )
    for section, key in sections:
        for day, saturday in ((9, True), (5, False)):
            at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
            at.session_state["plan_section"] = section
            at.session_state[f"{key}_when"] = dt.datetime(2024, 3, day, 8, 15)
            at.switch_page("pages/3_Plan.py").run()
            assert not at.exception
            warned = any(
                "None of the training trips departed on a weekend" in w.value for w in at.warning
            )
            assert warned is saturday, (section, day)
