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

from tests.app.test_no_stale_answers import (  # noqa: F401 (kolkata_model: a fixture)
    active_area,
    kolkata_model,
    publish,
)
from tests.app.test_pages import (
    APP,
    TIMEOUT,
    area_of,
    click_zone,
    deck,
    draws_polygons,
    map_records,
    metrics,
    no_exception,
    shown,
    table_with,
    tips_drawn,
)
from tests.app.test_zone_polygons import HEXAGONS, districts_geojson
from vrvm import TravelTimeModel
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.map import places
from vrvm.services.planning import fleet, fleet_files
from vrvm.services.versions import models
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile

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
    model = TravelTimeModel.load(Home(home).models.active_path())
    area = area_of(home)
    departure = combine_departure(dt.date(2024, 3, 5), dt.time(8, 15), model.tz_)
    coverage = fleet.fleet_coverage(model, area, bases, departure, threshold_min)
    return model, area, coverage


def layers(at: AppTest) -> dict[str, list[dict]]:
    """What the map draws: ``zones``, ``markers`` and ``regions`` (whichever renderer)."""
    chart = deck(at, f"{KEY}_map")
    return {name: map_records(chart, name) for name in ("zones", "markers", "regions")}


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
    assert [m["name"] for m in drawn["markers"]] == ["1", "2"]
    zones = drawn["zones"]
    fill, tips, _ = fleet.fleet_map(coverage, "best")
    assert [z["fill"] for z in zones] == fill.tolist()
    assert [z["tip"] for z in zones] == tips_drawn(tips)
    assert len({tuple(z["fill"]) for z in zones}) >= 2  # a choropleth
    labels = [d.label for d in at.get("download_button")]
    for label in ("Coverage CSV", "Coverage GeoJSON", "Bases CSV", "Bases GeoJSON"):
        assert label in labels
    # coloured by P(any base): the other fills
    at.segmented_control(key=f"{KEY}_metric").set_value("any").run()
    no_exception(at)
    fill, _, _ = fleet.fleet_map(coverage, "any")
    assert [z["fill"] for z in layers(at)["zones"]] == fill.tolist()


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
    # the canvas map shows the names as text (Vega's tooltip escapes what it shows)
    chart = deck(at, f"{KEY}_map")
    assert chart.type == "vega_lite_chart" and "<img" not in chart.proto.spec
    drawn = layers(at)
    assert drawn["markers"][0]["label"] == XSS_IMG
    assert XSS_IMG in " ".join(z["tip"] for z in drawn["zones"])
    # the WebGL map's tooltips are HTML: escaped there
    at.toggle(key="settings_webgl_map_toggle").set_value(True).run()
    drawn = layers(at)
    labels = [m["label"] for m in drawn["markers"]]
    assert labels[0] == "&lt;img src=x onerror=alert(1)&gt;"
    tips = " ".join(z["tip"] for z in drawn["zones"])
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
    markers = layers(at)["markers"]
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
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = plan_fleet()
    hexagon_bases = at.session_state[f"{KEY}_bases"]
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    assert draws_polygons(deck(at, f"{KEY}_map"))
    # the hexagon bases are now at the polygons holding their points, named after them
    _, area = active_area(vrvm_home)
    expected, _ = fleet.locate_bases(area, hexagon_bases)
    names = bases_shown(at)["name"].tolist()
    assert names == expected["name"].tolist() and names
    assert all(" · " in name for name in names)
    assert at.multiselect(key=f"{KEY}_pick").value == names
    assert set(names) <= set(at.multiselect(key=f"{KEY}_pick").options)
    at.button(key=f"{KEY}_rank").click().run()
    no_exception(at)
    assert candidates_shown(at) is not None


# ------------------------------------------------------------- no stale state (issue 31)


def assert_fleet_describes_its_bases(
    at: AppTest, home, before: pd.DataFrame | None = None, demand_file: bytes | None = None
):
    """The bases stand on the zones of the map drawn, under their current labels (the
    bases ``before`` the change located on them as the services locate them); the box,
    the numbers, the map's tips and the bases table are the services' answer for them,
    with the demand file read on these zones. Returns the model, area, coverage and
    demand, for the ranking."""
    no_exception(at)
    model, area = active_area(home)
    bases = at.session_state[f"{KEY}_bases"]
    if before is not None:
        expected, _ = fleet.locate_bases(area, before)
        pd.testing.assert_frame_equal(bases.reset_index(drop=True), expected)
    assert set(bases["zone"]) <= set(area.zone_index)
    labels = area.grid["label"].to_numpy()
    assert bases["label"].tolist() == [labels[area.zone_index[z]] for z in bases["zone"]]
    pick = at.multiselect(key=f"{KEY}_pick")
    assert list(pick.options) == list(area.labels)
    assert pick.value == bases.loc[bases["kind"] == "zone", "label"].tolist()
    when = at.datetime_input(key=f"{KEY}_trip_when").value
    departure = combine_departure(when.date(), when.time(), model.tz_)
    threshold = at.number_input(key=f"{KEY}_trip_threshold").value
    coverage = fleet.fleet_coverage(model, area, bases, departure, threshold)
    weights = None
    if demand_file is not None:
        try:
            weights = fleet_files.read_demand_csv(demand_file, area, source="demand.csv")
        except ValueError:  # a point in no zone of this map: said, and not used
            assert any("demand.csv" in e.value for e in at.error)
    demand, source = fleet.zone_demand(area, weights)
    assert any(source in c.value for c in at.caption)
    summary = coverage.summary(demand)
    numbers = metrics(at)
    assert numbers["Bases"] == str(len(bases))
    assert numbers[f"P(best base within {threshold:g} min)"] == f"{100 * summary['best']:.1f} %"
    assert numbers[f"P(any base within {threshold:g} min)"] == f"{100 * summary['any']:.1f} %"
    table = bases_shown(at)
    assert table["name"].tolist() == bases["name"].tolist()
    assert table["label"].tolist() == bases["label"].tolist()
    _, tips, _ = fleet.fleet_map(coverage, "best")
    zones = layers(at)["zones"]
    zones = zones["features"] if isinstance(zones, dict) else zones  # polygons: GeoJSON
    assert [z.get("properties", z)["tip"] for z in zones] == tips_drawn(tips)
    return model, area, coverage, demand


def assert_ranked_for_them(at: AppTest, model, area, coverage, demand) -> None:
    """No ranking kept from other inputs; a new one is the services' for these."""
    assert candidates_shown(at) is None
    at.button(key=f"{KEY}_rank").click().run()
    no_exception(at)
    expected = fleet.rank_new_base(model, area, coverage, demand, top=10)
    ranked = candidates_shown(at)
    assert ranked["label"].tolist() == expected["label"].tolist()
    np.testing.assert_allclose(ranked["any_after"], expected["any_after"], rtol=1e-9)


def test_bases_and_answers_follow_zones_boundaries_and_versions(
    vrvm_home,
    kolkata_model,  # noqa: F811 (the fixture imported above)
):
    """Issue 31: after a boundary upload, a switch of the clickable zones or another
    version, the bases kept their old zones' names and the box went blank."""
    at = plan_fleet()
    hexagons = area_of(vrvm_home)
    districts = ZoneFile.from_geojson(json.loads(districts_geojson()), id_property="district")
    in_district = districts.zone_index(hexagons.grid["lat"], hexagons.grid["lon"])
    downtown = int(np.flatnonzero(in_district == list(districts.ids).index("D1"))[0])
    outside = int(np.flatnonzero(in_district < 0)[0])
    # two bases at points (not the zones' own), then one at a zone clicked on the map
    text = "name,lat,lon\n" + "".join(
        f"{name},{hexagons.grid['lat'][i] + 1e-5:.6f},{hexagons.grid['lon'][i]:.6f}\n"
        for name, i in (("Central <b>station</b>", downtown), ("Edge", outside))
    )
    at.file_uploader(key=f"{KEY}_upload").upload("bases.csv", text.encode(), "text/csv").run()
    free = next(  # in another district than the first base
        i for i, d in enumerate(in_district) if d >= 0 and d != in_district[downtown]
    )
    at = click_zone(at, hexagons, free, key=f"{KEY}_map")
    before = at.session_state[f"{KEY}_bases"]
    assert before["kind"].tolist() == ["point", "point", "zone"]
    # demand at the points of the busiest zones, read on each map's zones anew
    busiest = [hexagons.zone_index[z] for z in places.busiest_zones(hexagons, 5)]
    demand = "lat,lon,demand\n" + "".join(
        f"{hexagons.grid['lat'][i]},{hexagons.grid['lon'][i]},{k + 1}\n"
        for k, i in enumerate(busiest)
    )
    demand = demand.encode()
    at.file_uploader(key=f"{KEY}_demand_upload").upload("demand.csv", demand, "text/csv").run()
    found = assert_fleet_describes_its_bases(at, vrvm_home, demand_file=demand)
    assert_ranked_for_them(at, *found)

    # the boundaries rename the hexagons: the bases and the box use the new names
    at.file_uploader(key="settings_boundary_upload").upload(
        "districts.geojson", districts_geojson(), "application/geo+json"
    ).run()
    found = assert_fleet_describes_its_bases(at, vrvm_home, before, demand)
    before = at.session_state[f"{KEY}_bases"]
    assert " · " in before["label"][2] and at.multiselect(key=f"{KEY}_pick").value
    assert_ranked_for_them(at, *found)

    # the polygons become the clickable zones: the base no district holds is removed
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    assert_fleet_describes_its_bases(at, vrvm_home, before, demand)
    assert at.session_state[f"{KEY}_bases"]["name"].tolist()[:1] == ["Central <b>station</b>"]
    assert "Edge" not in at.session_state[f"{KEY}_bases"]["name"].tolist()
    said = [shown(w.value) for w in at.warning]
    assert "The base 'Edge' lies in no zone of this map: it was removed." in said, said
    before = at.session_state[f"{KEY}_bases"]
    at.run()  # said once
    assert not any("was removed" in shown(w.value) for w in at.warning)

    # another model version (its hexagons, its time zone), then back to the hexagons
    publish(vrvm_home, kolkata_model)
    at.run()
    assert_fleet_describes_its_bases(at, vrvm_home, before, demand)
    before = at.session_state[f"{KEY}_bases"]
    at.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    found = assert_fleet_describes_its_bases(at, vrvm_home, before, demand)
    assert_ranked_for_them(at, *found)
    before = at.session_state[f"{KEY}_bases"]
    models.activate_version(vrvm_home, 1)
    at.run()
    assert_fleet_describes_its_bases(at, vrvm_home, before, demand)
    assert candidates_shown(at) is None  # ranked with the other version
