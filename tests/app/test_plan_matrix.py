"""The Plan page's OD matrix section (``pages/3_Plan.py``, section "matrix") with AppTest."""

from __future__ import annotations

import datetime as dt
import io
import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import APP, TIMEOUT, area_of, no_exception, table_with
from vrvm.services.answers import matrix
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.map import places

PLAN = "pages/3_Plan.py"
KEY = "plan_matrix"
DAY, CLOCK = dt.date(2024, 3, 5), dt.time(8, 15)  # a Tuesday's rush hour


def run_matrix() -> AppTest:
    """The Plan page opened on its OD matrix section, departing at 08:15 on a Tuesday."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "matrix"
    at.session_state[f"{KEY}_trip_when"] = dt.datetime.combine(DAY, CLOCK)
    return at.switch_page(PLAN).run()


def test_first_visit_shows_the_busiest_zones_both_ways(vrvm_home):
    at = run_matrix()
    no_exception(at)
    area = area_of(vrvm_home)
    busiest = places.busiest_zones(area, 10)
    assert at.multiselect(key=f"{KEY}_origins").value == busiest
    assert at.multiselect(key=f"{KEY}_dests").value == busiest
    preview = table_with(at, "median (min)")
    assert len(preview) == 100
    assert list(preview.columns) == [
        "origin",
        "destination",
        "mean (min)",
        "median (min)",
        "q0.9 (min)",
        "P(≤ 15 min)",
    ]
    labels = dict(zip(area.grid["zone"], area.grid["label"], strict=True))
    assert preview["origin"].iloc[0] == labels[busiest[0]]
    assert (preview["q0.9 (min)"] > preview["median (min)"]).all()
    assert preview["P(≤ 15 min)"].between(0, 1).all()
    assert len(at.get("plotly_chart")) == 1  # the median heat map
    assert {b.proto.label for b in at.get("download_button")} == {
        "Download CSV",
        "Download Parquet",
    }


def test_the_table_is_the_service_answer(vrvm_home, tiny_model):
    at = run_matrix()
    area = area_of(vrvm_home)
    zones = area.grid["zone"].tolist()
    at.multiselect(key=f"{KEY}_origins").set_value(zones[:3])
    at.multiselect(key=f"{KEY}_dests").set_value(zones[5:9])
    at.multiselect(key=f"{KEY}_quantiles").set_value([0.1, 0.9])
    at.multiselect(key=f"{KEY}_more").set_value([30.0])
    at.run()
    no_exception(at)
    preview = table_with(at, "median (min)")
    assert len(preview) == 12
    assert {"q0.1 (min)", "q0.9 (min)", "P(≤ 15 min)", "P(≤ 30 min)"} <= set(preview.columns)
    departure = combine_departure(DAY, CLOCK, tiny_model.tz_)
    expected = matrix.matrix_frame(
        tiny_model,
        matrix.zone_points(area, zones[:3]),
        matrix.zone_points(area, zones[5:9]),
        departure,
        quantiles=[0.1, 0.9],
        thresholds_s=[900.0, 1800.0],
    )
    np.testing.assert_allclose(preview["median (min)"], expected["median_s"] / 60.0, rtol=1e-12)
    np.testing.assert_allclose(preview["P(≤ 30 min)"], expected["p_within_1800s"], rtol=1e-12)


def test_all_zones_is_refused_politely_with_the_command(vrvm_home):
    at = run_matrix()
    area = area_of(vrvm_home)
    n = len(area.grid)
    assert n * n > matrix.DASHBOARD_MAX_PAIRS  # the tiny area has enough zones for this
    at.button(key=f"{KEY}_origins_all").click().run()
    at.button(key=f"{KEY}_dests_all").click().run()
    no_exception(at)
    assert len(at.multiselect(key=f"{KEY}_origins").value) == n
    warning = " ".join(w.value for w in at.warning)
    assert f"{n * n:,} pairs" in warning and f"{matrix.DASHBOARD_MAX_PAIRS:,}" in warning
    command = at.code[0].value
    assert command.startswith("vrvm matrix $VRVM_HOME/models/versions/v0001 --origins origins.csv")
    assert "--prob-within 900" in command and "--quantiles 0.9" in command
    assert not at.get("plotly_chart") and not any(
        "median (min)" in f.value.columns for f in at.dataframe
    )
    labels = {b.proto.label for b in at.get("download_button")}
    assert labels == {"Download origins.csv", "Download destinations.csv"}
    # back to a small choice: computed again
    at.button(key=f"{KEY}_origins_busiest").click().run()
    at.button(key=f"{KEY}_dests_busiest").click().run()
    no_exception(at)
    assert len(table_with(at, "median (min)")) == 100


def test_no_zones_says_what_to_do(vrvm_home):
    at = run_matrix()
    at.multiselect(key=f"{KEY}_origins").set_value([]).run()
    no_exception(at)
    assert any("at least one origin zone" in i.value for i in at.info)


def test_points_csv_reads_back_as_the_same_points(vrvm_home):
    area = area_of(vrvm_home)
    points = matrix.zone_points(area, places.busiest_zones(area, 4))
    again = matrix.read_points(io.BytesIO(matrix.points_csv(points)), source="origins.csv")
    pd.testing.assert_frame_equal(again, points)


def test_works_on_the_planners_polygons(vrvm_home):
    from tests.app.test_zone_polygons import districts_geojson
    from vrvm.trips.home import Home

    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = run_matrix()
    hexagons = at.multiselect(key=f"{KEY}_origins").value
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    origins = at.multiselect(key=f"{KEY}_origins").value
    assert origins and not set(origins) & set(hexagons)  # the districts, busiest first
    preview = table_with(at, "median (min)")
    assert len(preview) == len(origins) * len(at.multiselect(key=f"{KEY}_dests").value)
    assert preview["median (min)"].gt(0).all()
    assert "D1 · Downtown <b>Synthetica</b>" in set(preview["origin"])  # shown as text
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert "D1" in heat["y"]  # the axes: each name's first part
    hover = {pair[0] for row in heat["customdata"] for pair in row}
    assert "D1 · Downtown &lt;b&gt;Synthetica&lt;/b&gt;" in hover  # escaped for plotly
    assert not any("<b>" in label for label in heat["x"] + heat["y"])
