"""The Plan page's fleet coverage (AppTest, no browser).

The section opens on two bases at busy central zones, so it is never empty; the numbers
shown are recomputed here with the services for the same inputs. Bases come from map
clicks, the zone list and an uploaded CSV (names escaped, bad rows named); the ranking
of zones for one more base and every download are offered.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import (
    APP,
    TIMEOUT,
    area_of,
    click_zone,
    deck,
    metrics,
    no_exception,
    table_with,
)
from tests.app.test_zone_polygons import districts_geojson
from vrvm import TravelTimeModel
from vrvm.services import fleet
from vrvm.services.forecast import combine_departure
from vrvm.trips.home import add_zone_file, model_store

PLAN = "pages/3_Plan.py"
KEY = "plan_fleet"
XSS_IMG = "<img src=x onerror=alert(1)>"


def plan_fleet() -> AppTest:
    """The Plan page opened on its fleet section, departing 08:15 on a Tuesday."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "fleet"
    at.session_state[f"{KEY}_trip_when"] = dt.datetime(2024, 3, 5, 8, 15)
    at = at.switch_page(PLAN).run()
    no_exception(at)
    return at


def service(home, bases: pd.DataFrame, threshold_min: float = 15.0):
    """What the page should show for these bases (the model loaded afresh)."""
    model = TravelTimeModel.load(model_store(home).active_path())
    area = area_of(home)
    departure = combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)
    coverage = fleet.fleet_coverage(model, area, bases, departure, threshold_min)
    return model, area, coverage


def layers(at: AppTest) -> dict[str, dict]:
    spec = json.loads(deck(at, f"{KEY}_map").proto.json)
    return {layer["id"]: layer for layer in spec["layers"]}


def bases_shown(at: AppTest) -> pd.DataFrame:
    return table_with(at, "p_best_served")


def candidates_shown(at: AppTest) -> pd.DataFrame | None:
    return next((f.value for f in at.dataframe if "any_gain" in f.value.columns), None)


def test_opens_on_two_busy_central_bases(vrvm_home):
    at = plan_fleet()
    area = area_of(vrvm_home)
    expected = fleet.default_bases(area)
    assert bases_shown(at)["name"].tolist() == expected["name"].tolist()
    assert at.multiselect(key=f"{KEY}_pick").value == expected["label"].tolist()
    _, _, coverage = service(vrvm_home, expected)
    demand, _ = fleet.zone_demand(area)
    summary = coverage.summary(demand)
    shown = metrics(at)
    assert shown["Bases"] == "2"
    assert shown["P(best base within 15 min)"] == f"{100 * summary['best']:.1f} %"
    assert shown["P(any base within 15 min)"] == f"{100 * summary['any']:.1f} %"
    drawn = layers(at)
    assert [m["name"] for m in drawn["od-labels"]["data"]] == ["1", "2"]
    zones = drawn["zones"]["data"]
    fill, tips, _ = fleet.fleet_map(coverage, "best")
    assert [z["fill"] for z in zones] == fill.tolist()
    assert [z["tip"] for z in zones] == tips
    assert len({tuple(z["fill"]) for z in zones}) >= 2  # a choropleth
    labels = [d.label for d in at.get("download_button")]
    for label in ("Coverage CSV", "Coverage GeoJSON", "Bases CSV", "Bases GeoJSON"):
        assert label in labels
    # coloured by P(any base): the other fills
    at.segmented_control(key=f"{KEY}_metric").set_value("any").run()
    no_exception(at)
    fill, _, _ = fleet.fleet_map(coverage, "any")
    assert [z["fill"] for z in layers(at)["zones"]["data"]] == fill.tolist()


def test_map_clicks_and_the_list_place_bases(vrvm_home):
    at = plan_fleet()
    area = area_of(vrvm_home)
    first = fleet.default_bases(area)
    free = next(i for i, z in enumerate(area.grid["zone"]) if z not in set(first["zone"]))
    at = click_zone(at, area, free, key=f"{KEY}_map")
    no_exception(at)
    names = bases_shown(at)["name"].tolist()
    assert names == [*first["name"], area.grid["label"][free]]
    assert metrics(at)["Bases"] == "3"
    at.run()  # the selection persists without being applied again
    assert metrics(at)["Bases"] == "3"
    # a click on a zone holding a base removes it
    at = click_zone(at, area, area.zone_index[first["zone"][0]], key=f"{KEY}_map")
    no_exception(at)
    assert bases_shown(at)["name"].tolist() == [first["name"][1], area.grid["label"][free]]
    # the list adds and removes too
    at.multiselect(key=f"{KEY}_pick").set_value([area.grid["label"][free]]).run()
    no_exception(at)
    assert bases_shown(at)["name"].tolist() == [area.grid["label"][free]]
    at.button(key=f"{KEY}_clear").click().run()
    no_exception(at)
    assert metrics(at)["Bases"] == "0"
    assert any("Place at least one base" in i.value for i in at.info)


def test_a_csv_upload_places_named_bases(vrvm_home):
    at = plan_fleet()
    area = area_of(vrvm_home)
    rows = [3, 120]
    text = "name,lat,lon\n" + "".join(
        f"{name},{area.grid['lat'][i]},{area.grid['lon'][i]}\n"
        for name, i in zip([XSS_IMG, "Harbour"], rows, strict=True)
    )
    at.file_uploader(key=f"{KEY}_upload").upload("bases.csv", text.encode(), "text/csv").run()
    no_exception(at)
    assert bases_shown(at)["name"].tolist() == [XSS_IMG, "Harbour"]  # a table shows text
    assert at.multiselect(key=f"{KEY}_pick").value == []  # not at zones' points: not listed
    drawn = layers(at)
    labels = [m["label"] for m in drawn["od-labels"]["data"]]
    assert labels[0] == "&lt;img src=x onerror=alert(1)&gt;"
    tips = " ".join(z["tip"] for z in drawn["zones"]["data"])
    assert "<img" not in tips and "&lt;img src=x" in tips
    bases = fleet.bases_at_points(
        area, [XSS_IMG, "Harbour"], area.grid["lat"][rows], area.grid["lon"][rows]
    )
    _, _, coverage = service(vrvm_home, bases)
    demand, _ = fleet.zone_demand(area)
    assert metrics(at)["P(any base within 15 min)"] == (
        f"{100 * coverage.summary(demand)['any']:.1f} %"
    )
    # a bad file is refused with its line and column, and the bases stay
    bad = "name,lat,lon\nA,north,1\n"
    at.file_uploader(key=f"{KEY}_upload").upload("bad.csv", bad.encode(), "text/csv").run()
    no_exception(at)
    assert any("bad.csv, line 2, column 'lat'" in e.value.replace("\\", "") for e in at.error)
    assert bases_shown(at)["name"].tolist() == [XSS_IMG, "Harbour"]


def test_ranking_one_more_base_with_uploaded_demand(vrvm_home):
    at = plan_fleet()
    area = area_of(vrvm_home)
    assert candidates_shown(at) is None
    at.button(key=f"{KEY}_rank").click().run()
    no_exception(at)
    shown = candidates_shown(at)
    model, _, coverage = service(vrvm_home, fleet.default_bases(area))
    demand, _ = fleet.zone_demand(area)
    expected = fleet.rank_new_base(model, area, coverage, demand, top=10)
    assert shown["label"].tolist() == expected["label"].tolist()
    np.testing.assert_allclose(shown["any_after"], expected["any_after"], rtol=1e-9)
    label = next(k for k in metrics(at) if "with a base at" in k)
    assert label.startswith("P(any base within 15 min)")
    assert metrics(at)[label] == f"{100 * expected['any_after'][0]:.1f} %"
    markers = layers(at)["od-labels"]["data"]
    assert [m["name"] for m in markers] == ["1", "2", "+"]
    assert markers[-1]["lat"] == expected["lat"][0]
    labels = [d.label for d in at.get("download_button")]
    assert "Candidates CSV" in labels and "Candidates GeoJSON" in labels
    # another demand: the ranking is for other inputs, so it is asked for again
    zone = area.grid["zone"][len(area.grid) // 2]
    data = f"zone,demand\n{zone},10\n".encode()
    at.file_uploader(key=f"{KEY}_demand_upload").upload("demand.csv", data, "text/csv").run()
    no_exception(at)
    assert candidates_shown(at) is None
    assert any("the uploaded demand" in c.value for c in at.caption)
    at.button(key=f"{KEY}_rank").click().run()
    no_exception(at)
    shown = candidates_shown(at)
    uploaded = np.zeros(len(area.grid))
    uploaded[len(area.grid) // 2] = 10.0
    expected = fleet.rank_new_base(model, area, coverage, uploaded, top=10)
    assert shown["label"].tolist() == expected["label"].tolist()


def test_works_on_the_planners_polygons(vrvm_home):
    add_zone_file(vrvm_home, "districts", districts_geojson(), id_property="district")
    at = plan_fleet()
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    drawn = layers(at)
    assert drawn["zones"]["@@type"] == "GeoJsonLayer"
    # the hexagon bases no longer exist: two bases at the busiest polygons instead
    names = bases_shown(at)["name"].tolist()
    assert len(names) == 2 and all(" · " in name for name in names)
    assert set(names) <= set(at.multiselect(key=f"{KEY}_pick").options)
    at.button(key=f"{KEY}_rank").click().run()
    no_exception(at)
    assert candidates_shown(at) is not None
