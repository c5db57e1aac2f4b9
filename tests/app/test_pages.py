"""Every page of the dashboard with streamlit.testing.v1.AppTest (no browser).

The app runs against a copy of a tiny pre-trained model store (``vrvm_home`` fixture).
Map clicks are injected as the zone map's widget state, exactly the JSON the browser
sends on a click (see ``click_zone``; the map is Vega-Lite's by default, deck.gl's with
the pan-and-zoom setting), so they go through Streamlit's own deserialiser and the
page's real click handling.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from app_ui import vega_maps
from vrvm import synthetic_city
from vrvm.services.answers.forecast import ANSWER_QUANTILES
from vrvm.services.map.area import ServiceArea, build_service_area
from vrvm.trips.home import Home

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
RELEVANCE = "pages/1_Relevance_vectors.py"
RETRAIN = "pages/2_Retrain.py"
TIMEOUT = 60

if str(REPO) not in sys.path:  # `streamlit run` puts the app's folder on the path
    sys.path.insert(0, str(REPO))


def run_app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


MAP_CHARTS = ("deck_gl_json_chart", "vega_lite_chart")


def deck(at: AppTest, key: str):
    """The zone map keyed ``key``, or ``key`` and its digest (``od_map_<zones>``), drawn by
    deck.gl or Vega-Lite (:func:`app_ui.od_picker.renderer`)."""
    named = re.compile(rf"{re.escape(key or '')}_[0-9a-f]{{16}}")
    charts = [chart for kind in MAP_CHARTS for chart in at.get(kind)]
    return next(d for d in charts if d.key == key or named.fullmatch(d.key or ""))


def _rgba(colour):
    """A CSS ``rgba(...)`` colour of the Vega-Lite map as deck.gl's ``[r, g, b, a]``."""
    if not isinstance(colour, str):
        return colour
    r, g, b, a = (float(v) for v in colour[colour.index("(") + 1 : -1].split(","))
    return [int(r), int(g), int(b), round(a * 255)]


_DECK_LAYERS = {
    "zones": "zones",
    "markers": "od-labels",
    "od": "od-zones",
    "lines": "boundaries-lines",
    "areas": "boundaries-areas",
    "regions": "isochrones",
}
_VEGA_DATA = {
    "zones": "zone_info",
    "markers": "markers",
    "od": "od",
    "lines": "lines",
    "areas": "areas",
    "regions": "under",
}


def map_records(chart, layer: str) -> list[dict]:
    """What a zone map draws, as records, whichever library draws it.

    ``layer``: ``"zones"`` (``zone``, ``label``, ``tip``, ``fill`` as RGBA), ``"markers"``
    (``name``, ``lat``, ``lon``, ...), ``"od"`` (the outlined A and B zones: ``zone``);
    GeoJSON features for ``"lines"``, ``"areas"`` (boundaries) and ``"regions"``
    (isochrones). Zone labels are as the map holds them: HTML-escaped for deck.gl's
    HTML tooltip, as written for Vega-Lite's (which escapes them itself).
    """
    if chart.type == "deck_gl_json_chart":
        layers = json.loads(chart.proto.json)["layers"]
        found = next((x for x in layers if x["id"] == _DECK_LAYERS[layer]), None)
        if found is None:
            return []
        data = found["data"]
        if isinstance(data, dict):  # a FeatureCollection
            return data["features"]
        if data and "properties" in data[0] and layer in ("zones", "od"):
            return [{**f["properties"], "zone": f["zone"]} for f in data]  # polygon zones
        return data
    for dataset in chart.proto.datasets:
        if dataset.name == _VEGA_DATA[layer]:
            frame = convert_arrow_bytes_to_pandas_df(dataset.data.data)
            records = frame.to_dict(orient="records")
            for record in records:
                for column in ("fill", "color"):
                    if column in record:
                        record[column] = _rgba(record[column])
            return records
    return json.loads(chart.proto.spec).get("datasets", {}).get(_VEGA_DATA[layer], [])


def tips_drawn(tips: list[str]) -> list[str]:
    """A service's zone tooltips (HTML-escaped, for deck.gl's HTML tooltip) as the default
    Vega-Lite map holds them: as text (Vega's tooltip escapes what it shows)."""
    return [html.unescape(tip) for tip in tips]


def draws_polygons(chart) -> bool:
    """Whether the map draws its zones as the polygons of a zone file (not hexagons)."""
    if chart.type == "deck_gl_json_chart":
        layers = json.loads(chart.proto.json)["layers"]
        return next(x for x in layers if x["id"] == "zones")["@@type"] == "GeoJsonLayer"
    # a zone file's polygons are GeoJSON in the spec; hexagons a table of corners (Arrow)
    return "zone_shapes" in json.loads(chart.proto.spec).get("datasets", {})


def click_zone(at: AppTest, area: ServiceArea | None, index: int, key: str = "od_map"):
    """Click the zone at ``index`` of the map's zones (the area's grid order): the
    browser's selection payload (deck.gl's names the picked object and its position;
    Vega-Lite's the zone)."""
    chart = deck(at, key)
    if chart.type == "vega_lite_chart":
        zone = map_records(chart, "zones")[index]["zone"]
        if area is not None:
            assert zone == str(area.grid["zone"].iloc[index])
        payload = {"selection": {vega_maps.PICK: [{"zone": zone}]}}
    else:
        record = json.loads(chart.proto.json)["layers"]
        zones = next(layer for layer in record if layer.get("id") == "zones")
        payload = {
            "selection": {
                "indices": {"zones": [index]},
                "objects": {"zones": [zones["data"][index]]},
            }
        }
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(payload)))
    return at._run(states)


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    """The first table (``st.dataframe`` or ``st.table``) showing ``column`` (in the index
    or the columns)."""
    tables = [*at.dataframe, *at.table]
    for frame in tables:
        value = frame.value
        if column in value.columns or column in value.index:
            return value
    raise AssertionError(f"no table with {column!r}: {[list(f.value.columns) for f in tables]}")


def answer_sentence(at: AppTest) -> str | None:
    """The answer sentence in the Predict page's copy box, as shown (None: no answer)."""
    for element in at.html:
        found = re.search(r'<span class="vrvm-copy-text">(.*?)</span>', element.value, re.S)
        if found:
            return html.unescape(found.group(1))
    return None


def shown(markdown: str) -> str:
    """What a Markdown text shows: user strings reach the page with ``\\`` escapes."""
    return re.sub(r"\\(.)", r"\1", markdown)


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def area_of(home: Path) -> ServiceArea:
    from vrvm import TravelTimeModel

    model = TravelTimeModel.load(Home(home).models.active_path())
    return build_service_area(model, trips=Home(home).load_training_trips(model))


# ------------------------------------------------------------------------ Predict page


def test_predict_page_first_run(vrvm_home):
    at = run_app()
    no_exception(at)
    links = [link.proto.label for link in at.get("page_link")]
    assert links == ["Predict", "Relevance vectors", "Retrain & publish", "Plan"]
    assert at.title[0].value == "Travel time, with its uncertainty"
    assert any("Synthetic data" in w.value for w in at.warning)
    assert [s.label for s in at.selectbox][:2] == ["Origin (A)", "Destination (B)"]
    chart = deck(at, "od_map")
    assert chart.type == "vega_lite_chart"  # the canvas map by default: no WebGL
    assert len(map_records(chart, "zones")) == len(area_of(vrvm_home).grid)
    assert map_records(chart, "lines")  # the synthetic city's river, highway, bridges
    # the pan-and-zoom setting draws deck.gl's map, offline: no basemap
    at.toggle(key="settings_webgl_map_toggle").set_value(True).run()
    no_exception(at)
    chart = deck(at, "od_map")
    assert chart.type == "deck_gl_json_chart"
    spec = json.loads(chart.proto.json)
    layer_ids = [layer["id"] for layer in spec["layers"]]
    assert "zones" in layer_ids and "boundaries-lines" in layer_ids
    assert "mapStyle" not in spec or spec["mapStyle"] == "__MAP_STYLE__"  # offline: no basemap


def test_a_first_visit_opens_on_a_busy_trip_with_its_answer(vrvm_home):
    """No empty state: a busy pair across the city, its answer, and what to click next."""
    from vrvm.services.answers.schedule import default_pair

    origin, dest = default_pair(area_of(vrvm_home))
    at = run_app()
    no_exception(at)
    assert at.selectbox(key="od_origin").value == origin.label
    assert at.selectbox(key="od_dest").value == dest.label
    assert not at.info  # nothing asks to choose first
    assert metrics(at)["Median"].endswith(" min")
    sentence = answer_sentence(at)  # the answer to copy onto a slide (a copy button)
    assert sentence.startswith(f"From {origin.label} to {dest.label}, leaving ")
    assert "typically" in sentence and sentence.endswith("Synthetic data.")
    assert any("press Swap for the way back" in m.value for m in at.markdown)
    # the two charts drawn on a canvas, each with a PNG button named for the chart
    assert len(at.get("vega_lite_chart")) == 3  # the map, the density, the profile
    pngs = [b for b in at.get("download_button") if b.key and b.key.endswith("_png")]
    assert [b.proto.label for b in pngs] == ["PNG", "PNG"]
    assert not at.get("plotly_chart")  # no plotly bundle on the Predict page
    # the Reach map opens on the busiest zone: the origin of the same trip
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    no_exception(at)
    assert at.selectbox(key="od_origin").value == origin.label
    assert any(k.startswith("Zones reached") for k in metrics(at))
    # cleared, the page says what to do (the only empty state, chosen by the user)
    at.segmented_control(key="predict_mode").set_value("od").run()
    at.button(key="od_clear").click().run()
    assert any("Choose an origin and a destination" in i.value for i in at.info)
    assert any("Click a zone for the origin" in m.value for m in at.markdown)


def test_od_from_the_lists(vrvm_home):
    at = run_app()
    labels = at.selectbox(key="od_origin").options
    at.selectbox(key="od_origin").set_value(labels[250]).run()
    at.selectbox(key="od_dest").set_value(labels[400]).run()
    no_exception(at)
    shown = metrics(at)
    assert shown["Median"].endswith(" min") and shown["Mean"].endswith(" min")
    assert shown["80 % interval"].endswith(" min")
    assert shown["P(arrive within 15 min)"].endswith("%")
    assert len(at.get("vega_lite_chart")) == 3  # map, density and time-of-day profile
    intervals = table_with(at, "central interval")
    assert intervals["central interval"].tolist() == ["50 %", "80 %", "95 %"]
    assert not at.dataframe  # the two small tables are static (no data grid to load)
    quantiles = table_with(at, "quantile")
    assert quantiles["quantile"].tolist() == [f"{100 * q:g} %" for q in ANSWER_QUANTILES]
    assert {"o", "d", "t", "thr", "mode"} <= set(at.query_params)


def test_od_from_map_clicks(vrvm_home):
    area = area_of(vrvm_home)
    at = run_app()
    at = click_zone(at, area, 250)
    no_exception(at)
    assert at.selectbox(key="od_origin").value == area.grid["label"][250]
    assert at.selectbox(key="od_dest").value is None
    at = click_zone(at, area, 400)
    no_exception(at)
    assert at.selectbox(key="od_dest").value == area.grid["label"][400]
    assert "Median" in metrics(at) and len(at.get("vega_lite_chart")) == 3
    # the origin and destination are drawn as A and B
    markers = map_records(deck(at, "od_map"), "markers")
    assert [m["name"] for m in markers] == ["A", "B"]
    # at the two zones' points
    assert [(m["lat"], m["lon"]) for m in markers] == [
        (round(area.grid["lat"][i], 6), round(area.grid["lon"][i], 6)) for i in (250, 400)
    ]
    # the selection persists across reruns without being applied again
    at.run()
    assert at.selectbox(key="od_dest").value == area.grid["label"][400]
    # a third click starts a new pair
    at = click_zone(at, area, 30)
    assert at.selectbox(key="od_origin").value == area.grid["label"][30]
    assert at.selectbox(key="od_dest").value is None
    # the pan-and-zoom map (deck.gl) is a new chart: the canvas map's last click is not
    # read on it, and its clicks are applied the same way
    at.toggle(key="settings_webgl_map_toggle").set_value(True).run()
    no_exception(at)
    assert deck(at, "od_map").type == "deck_gl_json_chart"
    assert at.selectbox(key="od_origin").value == area.grid["label"][30]
    at = click_zone(at, area, 250)
    assert at.selectbox(key="od_dest").value == area.grid["label"][250]
    assert "Median" in metrics(at)


def test_swap_clear_and_typed_coordinates(vrvm_home):
    area = area_of(vrvm_home)
    at = run_app()
    a, b = area.grid.iloc[len(area.grid) // 5], area.grid.iloc[len(area.grid) * 4 // 5]
    at.text_input(key="od_typed_o").input(f"{a['lat']}, {a['lon']}")
    at.text_input(key="od_typed_d").input(f"{b['lat'] + 0.001:.5f} {b['lon']:.5f}")
    at.button(key="FormSubmitter:od_typed_form-Use these coordinates").click().run()
    no_exception(at)
    assert at.selectbox(key="od_origin").value == a["label"]
    assert at.selectbox(key="od_dest").value == b["label"]
    assert any("(in Zone" in c.value for c in at.caption)  # the typed point, exactly
    assert "Median" in metrics(at)
    at.button(key="od_swap").click().run()
    assert at.selectbox(key="od_origin").value == b["label"]
    at.button(key="od_clear").click().run()
    assert at.selectbox(key="od_origin").value is None
    at.text_input(key="od_typed_o").input("41.88, -87.63")
    at.button(key="FormSubmitter:od_typed_form-Use these coordinates").click().run()
    assert any("outside the service area" in e.value for e in at.error)


def test_a_shared_link_restores_the_view(vrvm_home):
    area = area_of(vrvm_home)
    a, b = area.grid.iloc[120], area.grid.iloc[420]
    at = run_app(
        o=f"{a['lat']},{a['lon']}", d=f"{b['lat']},{b['lon']}", t="2024-03-05T08:15", thr="25"
    )
    no_exception(at)
    assert at.selectbox(key="od_origin").value == a["label"]
    assert at.selectbox(key="od_dest").value == b["label"]
    assert at.number_input(key="trip_threshold").value == 25
    assert str(at.datetime_input(key="trip_when").value) == "2024-03-05 08:15:00"
    assert "P(arrive within 25 min)" in metrics(at)
    assert at.query_params["t"] == "2024-03-05T08:15"
    bad = run_app(o="nonsense", mode="x")
    no_exception(bad)
    assert len([w for w in bad.warning if "link" in w.value]) == 2


def test_coverage_map_by_probability_and_median(vrvm_home):
    area = area_of(vrvm_home)
    at = run_app()
    # an OD pair chosen before: the coverage map starts from its origin, marks only A
    at.selectbox(key="od_origin").set_value(area.grid["label"][200]).run()
    at.selectbox(key="od_dest").set_value(area.grid["label"][len(area.grid) * 4 // 5]).run()
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    no_exception(at)
    lat, lon = map(float, at.query_params["o"].split(","))
    assert (lat, lon) == (area.grid["lat"][200], area.grid["lon"][200])
    markers = map_records(deck(at, "od_map"), "markers")
    assert [m["name"] for m in markers] == ["A"]
    at = click_zone(at, area, 300)  # in coverage mode a click sets the origin
    no_exception(at)
    assert at.selectbox(key="od_origin").value == area.grid["label"][300]
    label = next(k for k in metrics(at) if k.startswith("Zones reached"))
    assert "with ≥ 90 % probability" in label and f"of {len(area.grid)}" in metrics(at)[label]
    assert [d.label for d in at.get("download_button")] == [
        "Download CSV",
        "Download GeoJSON",
        "Download PNG",
    ]
    zones = map_records(deck(at, "od_map"), "zones")
    assert len({str(z["fill"]) for z in zones}) >= 2  # a choropleth
    assert "P(≤ 15 min)" in zones[0]["tip"]
    assert at.radio(key="coverage_metric").options == ["Median travel time", "P(arrive within T)"]
    at.radio(key="coverage_metric").set_value("median").run()
    no_exception(at)
    assert at.query_params["metric"] == "median" and at.query_params["mode"] == "coverage"
    assert "d" not in at.query_params


def test_boundary_upload_names_zones(vrvm_home):
    at = run_app()
    square = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {"name": "Test Quarter"},
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [
                        [
                            [-30.05, -40.0],
                            [-30.0, -40.0],
                            [-30.0, -39.96],
                            [-30.05, -39.96],
                            [-30.05, -40.0],
                        ]
                    ],
                },
            }
        ],
    }
    at.file_uploader(key="settings_boundary_upload").upload(
        "areas.geojson", json.dumps(square).encode(), "application/geo+json"
    ).run()
    no_exception(at)
    assert any("Test Quarter" in o for o in at.selectbox(key="od_origin").options)
    # the setting survives a visit to another page
    at.switch_page(RELEVANCE).run()
    at.switch_page("app.py").run()
    no_exception(at)
    assert any("Test Quarter" in o for o in at.selectbox(key="od_origin").options)
    at.button(key="settings_boundary_remove").click().run()
    assert not any("Test Quarter" in o for o in at.selectbox(key="od_origin").options)
    at.file_uploader(key="settings_boundary_upload").set_value(None)
    at.file_uploader(key="settings_boundary_upload").upload("bad.geojson", b"{oops", "text/plain")
    at.run()
    assert any("not JSON" in e.value for e in at.error)


# ------------------------------------------------------------------------ Relevance page


def test_relevance_page(vrvm_home):
    at = run_app()
    at.switch_page(RELEVANCE).run()
    no_exception(at)
    assert at.title[0].value == "Relevance vectors"
    spec = next(
        json.loads(d.proto.json)
        for d in at.get("deck_gl_json_chart")
        if "relevance-arcs" in d.proto.json
    )
    arcs = next(layer for layer in spec["layers"] if layer["id"] == "relevance-arcs")
    total = len(arcs["data"])
    assert arcs["@@type"] == "ArcLayer" and total > 50
    assert metrics(at)["Members"] == "2"
    assert len(at.get("plotly_chart")) == 1  # the ELBO curves
    table = table_with(at, "n_widths")
    assert len(table) == total
    assert [d.label for d in at.get("download_button")] == ["Download CSV"]
    at.multiselect(key="relevance_members").set_value([1]).run()
    at.slider(key="relevance_hours").set_value((6, 10)).run()
    at.segmented_control(key="relevance_color").set_value("width").run()
    no_exception(at)
    table = table_with(at, "n_widths")
    assert set(table["member"]) <= {1} and table["hour"].between(6, 10).all()
    assert len(table) < total


# ------------------------------------------------------------------------ Retrain page


def _csv(trips: pd.DataFrame) -> bytes:
    return trips.to_csv(index=False).encode()


def _retrain_page() -> AppTest:
    at = run_app()
    return at.switch_page(RETRAIN).run()


def test_retrain_from_upload_to_publish(vrvm_home):
    at = _retrain_page()
    no_exception(at)
    assert metrics(at)["Trips in the store"] == "0"
    trips = synthetic_city(700, seed=31)
    dirty = pd.concat([trips, trips.head(5)], ignore_index=True)
    at.file_uploader(key="retrain_upload").upload("week1.csv", _csv(dirty), "text/csv").run()
    no_exception(at)
    shown = metrics(at)
    assert (shown["Rows read"], shown["Kept"], shown["Dropped"]) == ("705", "700", "5")
    add = next(b for b in at.button if b.label.startswith("Add 700 trips"))
    add.click().run()
    no_exception(at)
    assert metrics(at)["Trips in the store"] == "700"
    assert any("Added 700 new trips" in s.value for s in at.success)

    at.number_input(key="retrain_members").set_value(2)
    at.text_input(key="retrain_widths").input("1.5, 3")
    at.number_input(key="retrain_max_basis").set_value(100)
    at.button(key="FormSubmitter:retrain_settings-Train and evaluate").click().run()
    no_exception(at)
    table = table_with(at, "trips scored")
    assert list(table.columns) == [
        "Full retrain",
        "Update with new trips (fast)",
        "active (v1)",
    ]
    assert table.loc["trips scored"].tolist() == [140, 140, 140]
    assert len(at.get("plotly_chart")) == 3  # predicted vs observed, calibration, PIT
    store = Home(vrvm_home).models
    assert store.active_version() == 1  # nothing published yet

    publish = next(b for b in at.button if b.label.startswith("Publish “Full retrain”"))
    publish.click().run()
    no_exception(at)
    assert store.active_version() == 2
    assert any("Published version 2" in s.value for s in at.success)
    versions = table_with(at, "created (UTC)")
    assert versions["version"].tolist() == [2, 1]
    # the Predict page now serves the new version
    at.switch_page("app.py").run()
    assert at.caption[0].value.startswith("Model version 2")
    # and the previous version can be re-activated, once confirmed
    at.switch_page(RETRAIN).run()
    at.selectbox(key="retrain_activate_choice").set_value(1).run()
    assert at.button(key="retrain_activate").disabled  # not before the box is ticked
    at.checkbox(key="retrain_activate_confirm").check().run()
    at.button(key="retrain_activate").click().run()
    assert store.active_version() == 1


def test_invalid_uploads_leave_the_active_model_untouched(vrvm_home):
    store = Home(vrvm_home).models
    before = (store.active_version(), (store.active_path() / "arrays.npz").read_bytes())
    at = _retrain_page()
    at.file_uploader(key="retrain_upload").upload(
        "photo.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00binary", "text/csv"
    ).run()
    no_exception(at)
    assert any("binary" in e.value for e in at.error)
    assert not [b for b in at.button if (b.key or "").startswith("retrain_add_")]
    at.file_uploader(key="retrain_upload").set_value(
        ("model.pkl.csv", b"\x80\x04\x95pickle\x00\x00", "text/csv")
    ).run()
    assert any("binary" in e.value or "could not" in e.value for e in at.error)
    after = (store.active_version(), (store.active_path() / "arrays.npz").read_bytes())
    assert before == after
    assert len(Home(vrvm_home).trips) == 0
    # training with an empty store is refused
    assert any("store is empty" in i.value for i in at.info)


def test_unknown_columns_get_a_mapping_form(vrvm_home):
    trips = synthetic_city(120, seed=8).rename(
        columns={
            "origin_lat": "from_lat",
            "origin_lon": "from_lng",
            "dest_lat": "to_lat",
            "dest_lon": "to_lng",
            "start_time": "pickup_time",
            "travel_time_s": "duration_s",
        }
    )
    at = _retrain_page()
    at.file_uploader(key="retrain_upload").upload("custom.csv", _csv(trips), "text/csv").run()
    no_exception(at)
    assert any("do not match a known export" in w.value for w in at.warning)
    roles = {s.label: s for s in at.selectbox if s.key and "_role_" in s.key}
    assert roles["Start time (date and clock in one column)"].value == "pickup_time"  # guessed
    assert roles["Origin latitude"].value == "from_lat"
    submit = next(b for b in at.button if b.label == "Read with these columns")
    submit.click().run()
    no_exception(at)
    assert metrics(at)["Kept"] == "120"


def test_demo_trips_and_clearing_the_store(vrvm_home):
    at = _retrain_page()
    at.button(key="retrain_demo").click().run()
    no_exception(at)
    assert metrics(at)["Trips in the store"] == "2,000"
    assert any("synthetic" in c.value for c in at.caption)
    # trips from another city are flagged before they are added
    elsewhere = synthetic_city(100, seed=3)
    for column, shift in (
        ("origin_lat", 81.88),
        ("dest_lat", 81.88),
        ("origin_lon", -57.63),
        ("dest_lon", -57.63),
    ):
        elsewhere[column] += shift
    at.file_uploader(key="retrain_upload").upload("chicago.csv", _csv(elsewhere), "text/csv")
    at.run()
    assert any("another city?" in w.value for w in at.warning)
    assert at.button(key="retrain_clear").disabled  # deleting asks for confirmation
    at.checkbox(key="retrain_clear_confirm").check().run()
    at.button(key="retrain_clear").click().run()
    assert metrics(at)["Trips in the store"] == "0"


# ------------------------------------------------------------------------ first start


def test_first_start_trains_the_demo_model(tmp_path, monkeypatch):
    from tests.conftest import TINY_DEMO_ENV

    home = tmp_path / "fresh"
    monkeypatch.setenv("VRVM_HOME", str(home))
    for name, value in TINY_DEMO_ENV.items():
        monkeypatch.setenv(name, value)
    at = run_app()
    no_exception(at)
    store = Home(home).models
    assert store.active_version() == 1
    assert store.versions()[0].info["n_trips"] == 3000
    progress = at.get("progress")
    assert progress and "Member 2 of 2 trained" in progress[-1].proto.text  # shown per member
    assert at.title[0].value == "Travel time, with its uncertainty"
    assert len(at.selectbox(key="od_origin").options) > 100
    # a later start loads the saved model instead of training again
    again = run_app()
    no_exception(again)
    assert len(store.versions()) == 1


# ------------------------------------------------------------------ names and guard rails


def test_an_update_with_another_citys_trips_is_refused_and_becomes_a_new_model(vrvm_home):
    """Chicago-like trips cannot update the synthetic city's model: the page says why,
    with the numbers, and trains them as a new model named after the file instead."""
    at = _retrain_page()
    no_exception(at)
    header = at.caption[0].value
    assert shown(header).startswith("Model version 1 · Synthetica (synthetic): 3,000 trips")
    assert "\\:" in header  # the model's name and data reach the page escaped
    assert at.text_input(key="retrain_name").value == "Synthetica (synthetic)"
    chicago = synthetic_city(300, seed=32)
    for column, shift in (
        ("origin_lat", 81.88),
        ("dest_lat", 81.88),
        ("origin_lon", -57.63),
        ("dest_lon", -57.63),
    ):
        chicago[column] += shift
    at.file_uploader(key="retrain_upload").upload(
        "chicago_taxi_trips.csv", _csv(chicago), "text/csv"
    ).run()
    no_exception(at)
    assert any("Only 0% of the ends of the 300 trips" in i.value for i in at.info)
    next(b for b in at.button if b.label.startswith("Add 300 trips")).click().run()
    assert at.text_input(key="retrain_name").value == "chicago taxi trips"  # the file's

    at.checkbox(key="retrain_option_full").uncheck()  # only "Update with new trips"
    at.number_input(key="retrain_members").set_value(2)
    at.text_input(key="retrain_widths").input("1.5, 3")
    at.number_input(key="retrain_max_basis").set_value(100)
    at.button(key="FormSubmitter:retrain_settings-Train and evaluate").click().run()
    no_exception(at)
    refusal = next(e.value for e in at.error if "update was refused" in e.value)
    assert "Only 0% of the ends of the 240 trips" in refusal and "km from its centre" in refusal
    assert "at least 50% needed" in refusal
    assert not [f for f in at.dataframe if "trips scored" in f.value.index]  # no candidate
    store = Home(vrvm_home).models
    assert store.active_version() == 1 and len(store.versions()) == 1

    at.button(key="retrain_new_model").click().run()  # train them as a new model instead
    no_exception(at)
    table = table_with(at, "trips scored")
    assert list(table.columns) == ["Full retrain", "active (v1)"]
    for row in table.index.drop("trips scored"):  # every score names its unit
        assert row.endswith(("(min)", "(nats)", "(%)")), row
    publish = next(b for b in at.button if b.label.startswith("Publish “Full retrain”"))
    assert "as a new model, “chicago taxi trips” (hold-out CRPS " in publish.label
    assert publish.label.endswith(" min)")
    publish.click().run()
    no_exception(at)
    assert store.active_version() == 2 and store.versions()[-1].parent is None
    versions = table_with(at, "created (UTC)")
    assert versions["model"].tolist() == ["chicago taxi trips", "Synthetica (synthetic)"]
    assert "hold-out CRPS (min)" in versions.columns
    header = at.caption[0].value
    assert shown(header).startswith("Model version 2 · chicago taxi trips: 240 trips")
    assert "/" not in header and str(vrvm_home) not in header
