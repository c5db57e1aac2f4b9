"""The Plan page's "What changed" section (AppTest, no browser).

A second version is published into a copy of the tiny demo home through the Retrain
page's write path (:func:`vrvm.services.versions.models.publish_model`): a model of the
same trips, every travel time 1.3 times longer. The numbers the page shows for a trip, a
base's reach and a matrix are recomputed here with :mod:`vrvm.services.planning.compare`
for the same versions and inputs; with one version the page says how to make a second,
and models of two time zones are refused in one message.
"""

from __future__ import annotations

import datetime as dt
import io

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import (
    APP,
    TIMEOUT,
    area_of,
    deck,
    map_records,
    metrics,
    no_exception,
    shown,
    tips_drawn,
)
from tests.app.test_private_mode import downloads  # noqa: F401 (a fixture)
from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.answers import matrix, schedule
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.map import places
from vrvm.services.planning import compare
from vrvm.services.versions import models
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_compare"
KOLKATA = "Asia/Kolkata"


def _small(trips: pd.DataFrame, name: str, **kwargs) -> TravelTimeModel:
    return TravelTimeModel(
        name=name, n_members=2, max_basis=60, kernel_widths=[1.5, 3.0], random_state=0, n_jobs=1
    ).fit(trips, **kwargs)


@pytest.fixture(scope="module")
def slower(tiny_home, tiny_model):
    """Half the demo's training trips, every travel time x 1.3, and a small model of them."""
    trips = Home(tiny_home).load_training_trips(tiny_model).iloc[::2].reset_index(drop=True)
    trips["travel_time_s"] = 1.3 * trips["travel_time_s"]
    return _small(trips, "Synthetica, 30 % slower"), trips


@pytest.fixture(scope="module")
def kolkata():
    """A small model of the synthetic city with its clocks in another time zone."""
    trips = synthetic_city(1500, seed=1)
    trips["start_time"] = trips["start_time"].dt.tz_localize(None).dt.tz_localize(KOLKATA)
    trips.attrs["tz"] = KOLKATA
    model = TravelTimeModel(
        name="Synthetica in Kolkata time",
        n_members=2,
        max_basis=60,
        kernel_widths=[1.5, 3.0],
        random_state=0,
        n_jobs=1,
        tz=KOLKATA,
    ).fit(trips)
    return model, trips


def publish(home, fitted, parent: int | None = 1) -> int:
    """Publish (and activate) a model as the Retrain page does, its trips kept."""
    model, trips = fitted
    info = {"kind": "train", "data": "synthetic", "n_trips": len(trips), "parent": parent}
    return models.publish_model(home, model, metrics=None, info=info, training_trips=trips)


def plan_compare(mode: str | None = None) -> AppTest:
    """The Plan page on its "What changed" section, departing 08:15 on a Tuesday."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "compare"
    at.session_state[f"{KEY}_trip_when"] = dt.datetime(2024, 3, 5, 8, 15)
    if mode is not None:
        at.session_state[f"{KEY}_mode"] = mode
    at = at.switch_page(PLAN).run()
    no_exception(at)
    return at


def version(home, number: int) -> TravelTimeModel:
    return TravelTimeModel.load(Home(home).models.path(number))


def departure(model: TravelTimeModel):
    return combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)


def test_one_version_says_how_to_get_a_second_then_compares_the_new_one(vrvm_home, slower):
    at = plan_compare()
    said = " ".join(shown(i.value) for i in at.info)
    assert "holds one version" in said and "Retrain & publish" in said and "vrvm train" in said
    assert not at.metric
    assert not at.get("deck_gl_json_chart") and not at.get("vega_lite_chart")
    # another session publishes a second version: the page compares it with the first
    publish(vrvm_home, slower)
    at.run()
    no_exception(at)
    assert not any("holds one version" in i.value for i in at.info)
    assert at.selectbox(key=f"{KEY}_a").value == 1  # the active version's parent
    assert at.selectbox(key=f"{KEY}_b").value == 2  # the active version
    assert any(c.value.startswith("P(slower) compares A's and B's") for c in at.caption)
    model_a, model_b = version(vrvm_home, 1), version(vrvm_home, 2)
    area = area_of(vrvm_home)
    origin, dest = schedule.default_pair(area)
    row = compare.compare_trip(
        model_a, model_b, origin, dest, departure(model_b), threshold_s=900.0
    ).iloc[0]
    assert row["p_slower"] > 0.6 and row["median_b_s"] > 1.15 * row["median_a_s"]
    m = metrics(at)
    assert m["A · median"] == f"{row['median_a_s'] / 60:.1f} min"
    assert m["B · median"] == f"{row['median_b_s'] / 60:.1f} min"
    assert m["A · 90 % (min)"] == f"{row['lower90_a_s'] / 60:.0f}-{row['upper90_a_s'] / 60:.0f}"
    assert m["B · P(≤ 15 min)"] == f"{100 * row['p_within_900s_b']:.0f} %"
    lines = [m.value for m in at.markdown]
    verdict = "within" if row["within_uncertainty"] else "beyond"
    change = (
        f"Median **{row['median_change_s'] / 60:+.1f} min** under B (90 % from the members: "
        f"{row['median_change_lower90_s'] / 60:+.1f} min to "
        f"{row['median_change_upper90_s'] / 60:+.1f} min): **{verdict} the models' own "
        "uncertainty**"
    )
    assert change in lines
    assert any(f"P(slower under B) = **{100 * row['p_slower']:.0f} %**" in v for v in lines)
    # the same version on both sides: nothing changed, and the page says so
    at.selectbox(key=f"{KEY}_a").set_value(2).run()
    no_exception(at)
    assert any("same version" in i.value for i in at.info)
    assert any("P(slower under B) = **50 %**" in m.value for m in at.markdown)


def test_reach_from_a_base(vrvm_home, slower, downloads):  # noqa: F811
    publish(vrvm_home, slower)
    at = plan_compare("reach")
    model_a, model_b = version(vrvm_home, 1), version(vrvm_home, 2)
    area = area_of(vrvm_home)
    base = places.central_place(area)
    assert at.selectbox(key=f"{KEY}_base_place").value == base.label
    table = compare.compare_reach(
        model_a, model_b, area, base, departure(model_b), threshold_s=900.0
    )
    summary = compare.compare_summary(table)
    m = metrics(at)
    assert m["Zones slower under B"] == f"{summary['n_slower']:,}"
    assert m["Zones faster under B"] == f"{summary['n_faster']:,}"
    assert m["Median change of the median"] == f"{summary['median_change_s'] / 60:+.1f} min"
    assert summary["median_change_s"] > 0  # B is the slower model
    within = f"{100 * summary['share_within_uncertainty']:.0f} %"
    assert m["Within uncertainty"] == within
    for metric in ("median", "slower", "probability"):
        at.radio(key=f"{KEY}_metric").set_value(metric).run()
        no_exception(at)
        fill, tips, legend = compare.compare_map(table, metric, 900.0)
        zones = map_records(deck(at, f"{KEY}_base_map"), "zones")
        assert [z["fill"] for z in zones] == fill.tolist()
        assert [z["tip"] for z in zones] == tips_drawn(tips)
        html = next(m.value for m in at.markdown if "font-size:0.85rem" in m.value)
        assert all(label.replace("'", "&#x27;") in html for label, _ in legend)
    assert any(d.key == f"{KEY}_reach_csv" for d in at.get("download_button"))
    csv = next(d for d in reversed(downloads) if d.startswith(b"zone,number,label,lat,lon,"))
    got = pd.read_csv(io.BytesIO(csv))
    assert len(got) == len(area.grid) and "boundary" not in got
    assert got["p_slower"].to_numpy() == pytest.approx(table["p_slower"].to_numpy(), abs=1e-9)


def test_a_matrix_and_beyond_the_limit_the_command(vrvm_home, slower):
    publish(vrvm_home, slower)
    at = plan_compare("matrix")
    model_a, model_b = version(vrvm_home, 1), version(vrvm_home, 2)
    area = area_of(vrvm_home)
    zones = places.busiest_zones(area, 5)
    assert at.multiselect(key=f"{KEY}_origins").value == zones
    frame = compare.compare_matrix(
        model_a,
        model_b,
        matrix.zone_points(area, zones),
        matrix.zone_points(area, zones),
        departure(model_b),
        threshold_s=900.0,
    )
    assert metrics(at)["Pairs"] == "25"
    table = next(f.value for f in at.dataframe if "P(slower under B)" in f.value.columns)
    assert table["P(slower under B)"].to_numpy() == pytest.approx(frame["p_slower"].to_numpy())
    assert table["change (min)"].to_numpy() == pytest.approx(frame["median_change_s"] / 60)
    assert table["within uncertainty"].tolist() == frame["within_uncertainty"].tolist()
    labels = dict(zip(area.grid["zone"].astype(str), area.grid["label"], strict=True))
    assert table["origin"].tolist() == [labels[z] for z in frame["origin"]]
    assert {"Download CSV", "Download Parquet"} <= {d.label for d in at.get("download_button")}
    # every zone to every zone: too many pairs, the command instead
    everything = area.grid["zone"].astype(str).tolist()
    at.multiselect(key=f"{KEY}_origins").set_value(everything)
    at.multiselect(key=f"{KEY}_dests").set_value(everything).run()
    no_exception(at)
    assert any("more than the" in w.value for w in at.warning)
    command = at.code[0].value
    assert command.startswith("vrvm compare $VRVM_HOME/") and "--within 900s" in command
    assert '--depart "2024-03-05 08:15"' in command
    assert not any("P(slower under B)" in f.value.columns for f in at.dataframe)


def test_models_of_two_time_zones_are_refused_in_one_message(vrvm_home, slower, kolkata):
    publish(vrvm_home, slower)
    publish(vrvm_home, kolkata, parent=None)
    models.activate_version(vrvm_home, 2)
    at = plan_compare()
    at.selectbox(key=f"{KEY}_a").set_value(3).run()
    no_exception(at)
    assert len(at.error) == 1
    message = shown(at.error[0].value)
    assert "different areas" in message and KOLKATA in message
    assert "A · median" not in metrics(at)
