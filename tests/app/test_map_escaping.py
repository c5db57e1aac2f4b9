"""Names from an uploaded file reach the map's HTML escaped (tooltips, legends, layer data).

deck.gl renders a tooltip's ``html`` template with the picked object's fields put in
as they are, and Streamlit 1.67 happens to escape them; the project escapes them itself
(``html.escape``) before they enter the deck, so the JSON sent to the browser holds no
raw tag from a file, whatever the framework does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app_ui import maps
from tests.app.test_pages import deck, map_records, shown
from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import ODState, place_from_zone
from vrvm.trips.places.zone_files import ZoneFile

XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_LINK = "[x](javascript:alert(1))"
XSS_SCRIPT = '"><script>alert(1)</script>'
ESCAPED_IMG = "&lt;img src=x onerror=alert(1)&gt;"


def hostile_zones() -> dict:
    """Three polygons side by side, the first two over the synthetic city's trips."""
    names = (XSS_IMG, XSS_SCRIPT, XSS_LINK)
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"id": i, "name": name, "note": XSS_SCRIPT},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [[[x, -41], [x + 0.4, -41], [x + 0.4, -39], [x, -39], [x, -41]]],
                },
            }
            for i, (name, x) in enumerate(zip(names, (-30.4, -30.0, -29.6), strict=True))
        ],
    }


@pytest.fixture(scope="module")
def fitted():
    trips = synthetic_city(600, seed=1)
    model = TravelTimeModel(n_members=1, kernel_widths=[2.0], max_basis=20, random_state=0)
    return model.fit(trips), trips


def assert_no_raw_markup(deck_json: str) -> None:
    for raw in ("<img", "<script", '"><'):
        assert raw not in deck_json, raw


def test_polygon_zone_names_are_escaped_in_the_tooltips_and_markers(fitted):
    model, trips = fitted
    area = build_service_area(model, trips=trips, zones=ZoneFile.from_geojson(hostile_zones()))
    assert area.kind == "polygons" and any(XSS_IMG in label for label in area.labels)
    origin, dest = (place_from_zone(area, zone) for zone in area.grid["zone"][:2])
    deck = maps.zone_deck(area, ODState(origin, dest))
    text = deck.to_json()
    assert_no_raw_markup(text)
    assert ESCAPED_IMG in text
    assert "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert deck._tooltip["html"] == "<b>{label}</b><br/>{tip}"  # the only markup
    labels = {
        feature["properties"]["label"]
        for layer in deck.layers
        if layer.id == maps.ZONE_LAYER
        for feature in layer.data
    }
    assert f"0 · {ESCAPED_IMG}" in labels
    markers = next(layer for layer in deck.layers if layer.id == "od-markers").data
    assert ESCAPED_IMG in " ".join(marker["label"] for marker in markers)


def test_boundary_names_are_escaped_in_place_labels_and_boundary_layers(fitted):
    model, trips = fitted
    area = build_service_area(model, trips=trips, boundaries=hostile_zones())
    assert area.kind != "polygons" and any(XSS_IMG in label for label in area.labels)
    deck = maps.zone_deck(area, ODState())
    text = deck.to_json()
    assert_no_raw_markup(text)
    assert ESCAPED_IMG in text
    areas = next(layer for layer in deck.layers if layer.id == "boundaries-areas")
    properties = [  # the file's polygons (idle hexagons are drawn in this layer too)
        feature["properties"]
        for feature in areas.data["features"]
        if "note" in feature["properties"]
    ]
    assert [p["name"] for p in properties] == [
        ESCAPED_IMG,
        "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
        "[x](javascript:alert(1))",  # no HTML in it; Markdown is never rendered here
    ]
    assert all(p["note"] == "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" for p in properties)


def test_boundary_layers_drop_values_the_browser_cannot_take():
    """Nested property values are left out, and so are numbers JSON cannot hold."""
    document = hostile_zones()
    document["features"][0]["properties"].update(
        deep={"a": [XSS_IMG]}, huge=float("inf"), count=3, flag=True, none=None
    )
    layers = maps.boundary_layers(document)
    text = maps.CompactDeck(layers=layers).to_json()
    json.loads(text)  # strict JSON: no NaN or Infinity
    assert_no_raw_markup(text)
    first = layers[0].data["features"][0]["properties"]
    assert {"deep", "huge"}.isdisjoint(first)
    assert first["count"] == 3 and first["flag"] is True and first["none"] is None


def test_legend_labels_are_escaped():
    legend = maps.legend_html([(XSS_IMG, "#ff0000")], XSS_SCRIPT)
    assert "<img" not in legend and "<script" not in legend
    assert ESCAPED_IMG in legend


# ------------------------------------------------------------------ through the dashboard


def test_hostile_uploads_through_the_sidebar(vrvm_home):
    """The real page: hostile names drawn escaped, malformed files refused in one line."""
    from streamlit.testing.v1 import AppTest

    repo = Path(__file__).resolve().parents[2]
    if str(repo) not in sys.path:  # `streamlit run` puts the app's folder on the path
        sys.path.insert(0, str(repo))
    at = AppTest.from_file(str(repo / "app.py"), default_timeout=60).run()
    square = [[-30.05, -40.0], [-30.0, -40.0], [-30.0, -39.96], [-30.05, -39.96], [-30.05, -40.0]]
    named = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"name": XSS_IMG},
                "geometry": {"type": "Polygon", "coordinates": [square]},
            }
        ],
    }
    uploader = at.file_uploader(key="settings_boundary_upload")
    uploader.upload("areas.geojson", json.dumps(named).encode(), "application/geo+json").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(XSS_IMG in option for option in at.selectbox(key="od_origin").options)
    # the canvas map: names are data, shown as text by Vega's tooltip (which escapes
    # them), never part of the spec; the boundaries' properties are not sent at all
    chart = deck(at, "od_map")
    assert chart.type == "vega_lite_chart"
    assert_no_raw_markup(chart.proto.spec)
    assert any(XSS_IMG in zone["label"] for zone in map_records(chart, "zones"))
    assert "html" not in chart.proto.spec.lower()
    # the WebGL map's tooltips are HTML: names escaped there
    at.toggle(key="settings_webgl_map_toggle").set_value(True).run()
    chart = deck(at, "od_map")
    assert chart.type == "deck_gl_json_chart"
    assert_no_raw_markup(chart.proto.json)
    assert ESCAPED_IMG in chart.proto.json
    malformed = {
        "bad.geojson": (
            json.dumps({**named, "features": [*named["features"], 7]}).encode(),
            "bad.geojson: features[1]: not a GeoJSON Feature object",
        ),
        "deep.geojson": (b"[" * 100_000 + b"]" * 100_000, "deep.geojson: not a GeoJSON file"),
    }
    for name, (data, message) in malformed.items():
        at.file_uploader(key="settings_boundary_upload").set_value(None)
        at.file_uploader(key="settings_boundary_upload").upload(name, data, "text/plain")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        errors = [shown(e.value) for e in at.error]  # the message is escaped Markdown
        assert any(e.startswith(message) for e in errors), errors
