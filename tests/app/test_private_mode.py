"""Private mode on real data: nothing a viewer's browser receives holds a training trip.

Every page is rendered for a viewer over a model of the Chicago taxi sample (its
training trips kept in the home), and the data of every element is searched: the deck
JSON of each map, the plotly figure of each chart, each table's values, the bytes of
each download, every text, and the URL's query parameters.

What counts as a training trip's exact coordinates and start time (``docs/security.md``
says the same): the Chicago portal gives each trip end as the centroid of its census
tract (about 220 distinct pick-up points) and the start to the quarter hour, so a single
point or a quarter hour is shared by many trips. A trip's **coordinates** are found in
an element when all four of its numbers (origin and destination latitude and longitude,
to 5 decimals, about 1 m) occur among that element's numbers; its **start time** when
its date and clock to the minute occur, as local or UTC text (``2014-05-16 19:45``,
with a space or a ``T``) or as Unix seconds or milliseconds. The same search run on an
analyst's raw view finds both, so it can fail.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Dataframe

from tests.app.test_access_pages import PASSPHRASE, PLAN, _nodes, open_page, sign_in
from tests.app.test_pages import APP, RELEVANCE, RETRAIN, no_exception
from vrvm import TravelTimeModel
from vrvm.services.analyst.relevance import relevance_table
from vrvm.services.map.area import build_service_area
from vrvm.services.map.privacy import OTHER_PAIRS
from vrvm.trips.home import Home

_NUMBER = re.compile(r"-?\d+\.\d+")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")
_EPOCH = re.compile(r"(?<!\d)(\d{10}|\d{13})(?!\d)")


@pytest.fixture
def downloads(monkeypatch):
    """The bytes of every download button and media file the pages create."""
    kept: list[bytes] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def load_and_get_id(self, path_or_data, mimetype, kind, filename=None):
        if isinstance(path_or_data, bytes):
            kept.append(path_or_data)
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
    return kept


class TripFinder:
    """Finds the Chicago model's training trips in what a page sent."""

    def __init__(self, trips: pd.DataFrame) -> None:
        coords = trips[["origin_lat", "origin_lon", "dest_lat", "dest_lon"]].to_numpy(float)
        self.coords = np.round(coords, 5)
        start = trips["start_time"]
        utc = start.dt.tz_convert("UTC")
        self.times = set(start.dt.strftime("%Y-%m-%d %H:%M")) | set(
            utc.dt.strftime("%Y-%m-%d %H:%M")
        )
        seconds = utc.astype("int64") // 10**9
        self.epochs = {str(s) for s in seconds} | {str(s * 1000) for s in seconds}

    def coordinates_in(self, text: str) -> int:
        """How many training trips have all four coordinates among ``text``'s numbers."""
        numbers = np.unique(np.round([float(n) for n in _NUMBER.findall(text)], 5))
        if numbers.size < 4:
            return 0
        return int(np.isin(self.coords, numbers).all(axis=1).sum())

    def times_in(self, text: str) -> set[str]:
        """The training trips' start times found in ``text``."""
        stamps = {m.replace("T", " ") for m in _DATETIME.findall(text)}
        return (stamps & self.times) | (set(_EPOCH.findall(text)) & self.epochs)


def page_data(at: AppTest, downloads: list[bytes]) -> list[tuple[str, str]]:
    """``(what, text)`` of every element of the page, the downloads and the URL."""
    found = []
    for node in _nodes(at._tree):
        if isinstance(node, Dataframe):
            found.append(("table", node.value.to_csv()))
        elif getattr(node, "type", None) == "vega_lite_chart":  # its data travel as Arrow
            found.append((node.type, node.proto.spec))
            for dataset in node.proto.datasets:
                frame = convert_arrow_bytes_to_pandas_df(dataset.data.data)
                found.append((f"chart's {dataset.name} data", frame.to_csv()))
        elif getattr(node, "proto", None) is not None:
            found.append((node.type, str(node.proto)))
    found += [("download", data.decode("utf-8", "replace")) for data in downloads]
    found.append(("query parameters", str(dict(at.query_params))))
    return found


def assert_no_trip(finder: TripFinder, at: AppTest, downloads: list[bytes], page: str) -> None:
    for what, text in page_data(at, downloads):
        assert finder.coordinates_in(text) == 0, f"{page}: trip coordinates in a {what}"
        assert not finder.times_in(text), f"{page}: trip start times in a {what}"


def _zone_pairs(home):
    model = TravelTimeModel.load(Home(home).models.active_path())
    area = build_service_area(model, trips=Home(home).training_trip_table(model))
    trips = Home(home).load_training_trips(model)
    o = area.zone_rows(trips["origin_lat"], trips["origin_lon"])
    d = area.zone_rows(trips["dest_lat"], trips["dest_lon"])
    counts = Counter((a, b) for a, b in zip(o, d, strict=True) if a >= 0 and b >= 0 and a != b)
    return trips, area, counts


def test_a_viewer_receives_no_training_trip_on_any_page(chicago_home, monkeypatch, downloads):
    monkeypatch.setenv("VRVM_ANALYST_PASSPHRASE", PASSPHRASE)
    trips, area, counts = _zone_pairs(chicago_home)
    finder = TripFinder(trips)
    labels = area.grid["label"]
    busy = next(pair for pair, n in counts.most_common() if n >= 5)
    quiet = next(pair for pair, n in counts.most_common() if 1 <= n < 5)

    at = AppTest.from_file(APP, default_timeout=60).run()
    no_exception(at)
    for origin, dest in (busy, quiet):
        downloads.clear()
        at.selectbox(key="od_origin").set_value(labels[origin]).run()
        at.selectbox(key="od_dest").set_value(labels[dest]).run()
        no_exception(at)
        assert_no_trip(finder, at, downloads, "Predict")
    notes = " ".join(c.value for c in at.caption)
    assert "Fewer than 5 observed training trips" in notes and "Private mode" in notes
    at.selectbox(key="od_origin").set_value(labels[busy[0]]).run()
    at.selectbox(key="od_dest").set_value(labels[busy[1]]).run()
    profile = at.get("vega_lite_chart")[-1].proto.spec
    assert "observed trips, median and quartiles" in profile  # shown, as aggregates
    assert any("Boxes: the" in c.value for c in at.caption)

    downloads.clear()
    at.segmented_control(key="predict_mode").set_value("coverage").run()
    no_exception(at)
    assert_no_trip(finder, at, downloads, "Predict (reach)")

    downloads.clear()
    open_page(RELEVANCE, at)
    assert any("relevance-zone-arcs" in d.proto.json for d in at.get("deck_gl_json_chart"))
    assert_no_trip(finder, at, downloads, "Relevance vectors")
    table = next(f.value for f in at.dataframe if "origin zone" in f.value.columns)
    assert not {"origin_lat", "start_time"} & set(table.columns)
    assert table["trips"].min() >= 5  # issue 32: it had one row per relevance vector

    for section in ("arrive", "fleet", "isochrone", "matrix"):
        downloads.clear()
        open_page(PLAN, at)
        at.segmented_control(key="plan_section").set_value(section).run()
        no_exception(at)
        assert_no_trip(finder, at, downloads, f"Plan ({section})")

    downloads.clear()
    open_page(RETRAIN, at)
    assert_no_trip(finder, at, downloads, "Retrain (viewer)")

    # the same search finds the trips in an analyst's raw view: it can fail
    sign_in(at)
    open_page(RELEVANCE, at)
    assert_no_trip(finder, at, downloads, "Relevance vectors (analyst, private by default)")
    at.sidebar.toggle(key="access_raw").set_value(True).run()
    downloads.clear()
    open_page(RELEVANCE, at)
    data = page_data(at, downloads)
    assert sum(finder.coordinates_in(text) for _, text in data) > 0
    assert set().union(*(finder.times_in(text) for _, text in data))


def _deck_arcs(at: AppTest) -> list[dict]:
    for chart in at.get("deck_gl_json_chart"):
        for layer in json.loads(chart.proto.json)["layers"]:
            if layer["id"] == "relevance-zone-arcs":
                return layer["data"]
    raise AssertionError("no relevance-zone-arcs layer")


@pytest.mark.parametrize("k", [2, 5])
def test_a_viewer_sees_relevance_vectors_only_in_zone_pairs_of_k_trips(
    chicago_home, monkeypatch, downloads, k
):
    """Issue 32: the viewer's relevance table and CSV had one row per relevance vector
    (every zone pair with fewer than 5). Now the table, its CSV and the arcs hold only
    groups of at least k distinct trips, and the filters that could be subtracted are
    not drawn; an analyst's raw view still has every vector."""
    monkeypatch.setenv("VRVM_ANALYST_PASSPHRASE", PASSPHRASE)
    monkeypatch.setenv("VRVM_PRIVATE_MIN_TRIPS", str(k))
    model = TravelTimeModel.load(Home(chicago_home).models.active_path())
    vectors = relevance_table(model)
    at = open_page(RELEVANCE)
    table = next(f.value for f in at.dataframe if "origin zone" in f.value.columns)
    assert len(table) and table["trips"].min() >= k
    assert table["trips"].sum() <= len(vectors)
    csv = next(d for d in downloads if d.startswith(b"origin zone"))
    shown = pd.read_csv(io.BytesIO(csv))
    assert shown["trips"].min() >= k and len(shown) == len(table)
    assert not {"member", "hour", "day", "start_time", "origin_lat"} & set(shown.columns)
    arcs = _deck_arcs(at)
    assert all(arc["n"] >= k for arc in arcs)
    assert (
        sum(arc["n"] for arc in arcs)
        + (table["trips"].iloc[-1] if table["origin zone"].iloc[-1] == OTHER_PAIRS else 0)
        == table["trips"].sum()
    )
    assert not {"relevance_members", "relevance_hours"} & {
        n.key for n in _nodes(at._tree) if getattr(n, "key", None)
    }
    if k == 2:
        assert arcs  # pairs of two trips exist on this model: the arcs can be drawn
    # the analyst's raw view has one row per relevance vector (the check can fail)
    sign_in(open_page(RETRAIN, at))
    open_page(RELEVANCE, at)
    at.sidebar.toggle(key="access_raw").set_value(True).run()
    raw = next(f.value for f in at.dataframe if "start_time" in f.value.columns)
    assert len(raw) == len(vectors)
