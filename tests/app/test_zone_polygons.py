"""The Predict page with a planner's polygons as its clickable zones (AppTest, no browser).

A zone file over the synthetic city (its downtown and city limits from
:func:`vrvm.trips.synthetic.synthetic_city_geojson`, the rest cut into quarters, an
airport square and an island no trip reaches) is kept in the home, chosen in the
sidebar, and origins and destinations are then picked by polygon.
"""

from __future__ import annotations

import json

import pytest
import shapely
from shapely.geometry import box, mapping, shape

pytest.importorskip("streamlit")

from tests.app.test_pages import (
    click_zone,
    deck,
    draws_polygons,
    map_records,
    metrics,
    no_exception,
    run_app,
    shown,
)
from vrvm.trips.home import Home
from vrvm.trips.synthetic import synthetic_city_geojson

HEXAGONS = "Hexagons (from the trips)"


def _polygonal(geometry):
    """The polygons of an overlay result (which may hold the lines two pieces share)."""
    parts = [p for p in shapely.get_parts(geometry) if p.geom_type == "Polygon"]
    return shapely.union_all(parts)


def districts_geojson() -> bytes:
    """Downtown, four quarters of the rest of the city, the airport and an empty island."""
    city = synthetic_city_geojson()
    polygons = {
        f["properties"]["kind"]: shape(f["geometry"])
        for f in city["features"]
        if f["geometry"]["type"] == "Polygon"
    }
    downtown, limits = polygons["downtown"], polygons["city_limits"]
    rest = limits.difference(downtown)
    x0, y0, x1, y1 = limits.bounds
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
    quarters = {
        "North-West": box(x0, ym, xm, y1),
        "North-East": box(xm, ym, x1, y1),
        "South-West": box(x0, y0, xm, ym),
        "South-East": box(xm, y0, x1, ym),
    }
    airport = next(f for f in city["features"] if f["properties"].get("kind") == "airport")
    ax, ay = airport["geometry"]["coordinates"]
    zones = [("D1", "Downtown <b>Synthetica</b>", downtown)]
    zones += [(f"Q{i}", name, rest.intersection(q)) for i, (name, q) in enumerate(quarters.items())]
    zones += [("AP", "Airport", box(ax - 0.03, ay - 0.03, ax + 0.03, ay + 0.03).difference(limits))]
    zones += [("XX", "Empty Island", box(x1 + 0.5, y0, x1 + 0.6, y0 + 0.1))]
    features = [
        {
            "type": "Feature",
            "properties": {"district": zone_id, "name": name},
            "geometry": mapping(_polygonal(geometry)),
        }
        for zone_id, name, geometry in zones
    ]
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


IDLE_FILL = "rgba(200,200,200,0.098)"  # app_ui.maps: a zone no trip reaches


def click_polygon(at, index: int):
    """The browser's payload when the polygon at ``index`` of the zone layer is clicked."""
    return click_zone(at, None, index)


def test_pick_origin_and_destination_by_polygon(vrvm_home):
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = run_app(t="2024-03-05T08:15")
    no_exception(at)
    choice = at.selectbox(key="settings_zone_choice")
    assert choice.options == [HEXAGONS, "districts"] and choice.value == HEXAGONS
    assert len(at.selectbox(key="od_origin").options) > 100  # hexagons
    choice.set_value("districts").run()
    no_exception(at)
    labels = at.selectbox(key="od_origin").options
    # the polygons holding trip ends, by id; the empty island cannot be picked
    assert "D1 · Downtown <b>Synthetica</b>" in labels and "Q0 · North-West" in labels
    assert not any("Empty Island" in label for label in labels)
    chart = deck(at, "od_map")
    zones = map_records(chart, "zones")
    assert draws_polygons(chart) and len(zones) == len(labels)
    tooltip = zones[labels.index("D1 · Downtown <b>Synthetica</b>")]
    assert tooltip["label"] == "D1 · Downtown <b>Synthetica</b>"  # text: Vega escapes it
    # the empty island, drawn faintly under the zones, not clickable
    faint = [f for f in map_records(chart, "areas") if f["properties"]["_fill"] == IDLE_FILL]
    assert len(faint) == 1 and faint[0]["geometry"]["type"] == "Polygon"

    at.selectbox(key="od_origin").set_value("D1 · Downtown <b>Synthetica</b>").run()
    at.selectbox(key="od_dest").set_value("Q3 · South-East").run()
    no_exception(at)
    assert metrics(at)["Median"].endswith(" min")
    assert any("training trips went between these two zones" in c.value for c in at.caption)
    # the link carries the polygons' representative points, which lie inside them
    lat, lon = map(float, at.query_params["o"].split(","))
    downtown = next(
        shape(f["geometry"])
        for f in json.loads(districts_geojson())["features"]
        if f["properties"]["district"] == "D1"
    )
    assert shapely.contains_xy(downtown, lon, lat)

    # a click on a polygon sets the origin, a second the destination
    at.button(key="od_clear").click().run()
    at = click_polygon(at, labels.index("Q0 · North-West"))
    no_exception(at)
    assert at.selectbox(key="od_origin").value == "Q0 · North-West"
    at = click_polygon(at, labels.index("Q1 · North-East"))
    assert at.selectbox(key="od_dest").value == "Q1 · North-East"
    assert "Median" in metrics(at)
    outlined = map_records(deck(at, "od_map"), "od")
    assert [f["zone"] for f in outlined] == ["Q0", "Q1"]

    # the reach map colours the polygons and offers both downloads
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    no_exception(at)
    fills = {tuple(f["fill"]) for f in map_records(deck(at, "od_map"), "zones")}
    assert len(fills) >= 2
    assert f"of {len(labels)}" in next(v for k, v in metrics(at).items() if k.startswith("Zones"))
    assert [d.label for d in at.get("download_button")] == [
        "Download CSV",
        "Download GeoJSON",
        "Download PNG",
    ]

    # the relevance-vector arcs are drawn over the polygons, not over hexagons
    at.switch_page("pages/1_Relevance_vectors.py").run()
    no_exception(at)
    spec = next(
        json.loads(d.proto.json)
        for d in at.get("deck_gl_json_chart")
        if "relevance-arcs" in d.proto.json
    )
    outline = next(layer for layer in spec["layers"] if layer["id"] == "zones-outline")
    assert outline["@@type"] == "GeoJsonLayer" and len(outline["data"]) == len(labels)

    # the choice is kept in the home: a fresh session opens on the polygons
    again = run_app()
    no_exception(again)
    assert again.selectbox(key="settings_zone_choice").value == "districts"
    assert again.selectbox(key="od_origin").options == labels
    again.selectbox(key="settings_zone_choice").set_value(HEXAGONS).run()
    assert len(again.selectbox(key="od_origin").options) > 100


def test_typed_coordinates_between_polygons_name_the_nearest(vrvm_home):
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = run_app()
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    at.text_input(key="od_typed_o").input("-40.0, -29.5")  # east of the city, in the sea
    at.button(key="FormSubmitter:od_typed_form-Use these coordinates").click().run()
    no_exception(at)
    error = next(e.value for e in at.error if "not near any training trips" in e.value)
    assert "The nearest zone is " in error and "latitudes" not in error


def test_a_kept_boundary_file_that_no_longer_builds_leaves_every_page_working(
    vrvm_home, monkeypatch
):
    """Issue 32: a boundary file kept under looser checks (a 100,000-feature file was
    saved, then failed to build the map) showed every user only "The active model
    cannot be loaded", and the Retrain page no sign-in form. Now it is set aside with a
    message and every page works."""
    from tests.app.test_pages import RETRAIN
    from vrvm.trips.home import Home
    from vrvm.trips.places.zone_files import ZoneFileLimits

    monkeypatch.setenv("VRVM_ANALYST_PASSPHRASE", "correct horse battery staple")
    document = json.loads(districts_geojson())
    document["features"][1]["properties"]["note"] = "x" * 100_000  # beyond today's checks
    older = ZoneFileLimits(max_property_bytes=10**9)
    data = json.dumps(document).encode()
    Home(vrvm_home).zones.add("old", data, id_property="district", limits=older)
    Home(vrvm_home).zones.choose_map("old")
    Home(vrvm_home).zones.choose_clickable("old")
    at = run_app(t="2024-03-05T08:15")
    for page in (None, "pages/1_Relevance_vectors.py", "pages/3_Plan.py", RETRAIN):
        if page is not None:
            at.switch_page(page).run()
        no_exception(at)
        assert not any("cannot be loaded" in e.value for e in at.error), page
        if page != RETRAIN:
            assert at.get("deck_gl_json_chart") or at.get("vega_lite_chart"), page  # its map
            # the zones are the hexagons, and the page says why
            assert any("The chosen zone file cannot be used" in w.value for w in at.warning)
            assert any("its properties take 100,0" in w.value for w in at.warning)
    # the Retrain page still offers the sign-in form
    assert "access_form" in {f.proto.form_id for f in at.get("text_input")}


def _kept_under_looser_checks(home, name: str = "old", file_name: str = "old.geojson") -> None:
    """A boundary file kept as an older version kept it (a 100,000-character property,
    beyond today's checks), shown on the map but not the clickable zones."""
    from vrvm.trips.home import Home
    from vrvm.trips.places.zone_files import ZoneFileLimits

    document = json.loads(districts_geojson())
    document["features"][1]["properties"]["note"] = "x" * 100_000
    older = ZoneFileLimits(max_property_bytes=10**9)
    data = json.dumps(document).encode()
    Home(home).zones.add(name, data, file_name=file_name, id_property="district", limits=older)
    Home(home).zones.choose_map(name)


def test_the_sidebar_says_why_a_kept_boundary_file_can_no_longer_be_used(vrvm_home):
    """Issue 32 follow-up: the sidebar said only "can no longer be read"; now the
    refusal's message, as plain text (the file name is the uploader's), to analysts and
    viewers. The uploader refuses a file beyond the boundary size limit in the browser."""
    from vrvm.services.map import boundaries as boundaries_svc

    _kept_under_looser_checks(vrvm_home, file_name="<b>old</b>_*zones*.geojson")
    at = run_app(t="2024-03-05T08:15")
    no_exception(at)
    uploader = at.sidebar.get("file_uploader")[0]
    assert uploader.proto.max_upload_size_mb == boundaries_svc.MAX_BOUNDARY_BYTES // 2**20
    said = [e.value for e in at.sidebar.error]
    assert len(said) == 1, said
    assert shown(said[0]).startswith(
        "The boundary file <b>old</b>_*zones*.geojson can no longer be used, so the map is "
        "drawn without it: <b>old</b>_*zones*.geojson: features[1]: its properties take 100,0"
    ), said[0]
    assert "<b>" not in said[0] and r"\<b\>old\</b\>\_\*zones\*" in said[0]  # plain text
    assert at.get("vega_lite_chart")  # the page draws its map


def test_a_viewer_is_told_why_too(vrvm_home, monkeypatch):
    monkeypatch.setenv("VRVM_ANALYST_PASSPHRASE", "correct horse battery staple")
    _kept_under_looser_checks(vrvm_home)
    at = run_app(t="2024-03-05T08:15")
    no_exception(at)
    assert not at.sidebar.get("file_uploader")  # a viewer uploads no boundaries
    assert any(
        "can no longer be used" in e.value and "its properties take 100,0" in e.value
        for e in at.sidebar.error
    )


def test_a_boundary_file_the_map_sets_aside_is_said_on_every_page(vrvm_home, monkeypatch):
    """``ServiceArea.boundary_problem`` (the file read, but the map could not be built
    with it) is said once, as a warning, on every page, as plain text."""
    from tests.app.test_pages import RETRAIN
    from vrvm.services.map import area as area_svc
    from vrvm.trips.home import Home

    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    Home(vrvm_home).zones.choose_map("districts")

    drawn_boundaries = area_svc.drawn_boundaries

    def fails(boundaries):  # what a file the map cannot build raises (issue 32)
        if (boundaries or {}).get("features"):
            raise ValueError("districts.geojson: features[3]: <img src=x onerror=alert(1)> *zone*")
        return drawn_boundaries(boundaries)  # the map without the file

    monkeypatch.setattr(area_svc, "drawn_boundaries", fails)
    expected = (
        "The boundary file is not drawn and names no zone: districts.geojson: features[3]: "
        "<img src=x onerror=alert(1)> *zone*"
    )
    at = run_app(t="2024-03-05T08:15")
    for page in (None, "pages/1_Relevance_vectors.py", "pages/3_Plan.py", RETRAIN):
        if page is not None:
            at.switch_page(page).run()
        no_exception(at)
        said = [w.value for w in at.warning if "not drawn" in w.value]
        assert [shown(w) for w in said] == [expected], (page, said)
        assert r"\<img src=x onerror=alert(1)\> \*zone\*" in said[0]  # plain text
