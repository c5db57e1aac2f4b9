"""Hostile and malformed boundary uploads, through the functions the dashboard's sidebar calls.

Each case is the bytes of one upload. The sidebar saves it (``save_boundaries``: the file
is read and checked as a zone file, then kept in the data home), and the map reads it
back (``load_boundaries`` -> ``parse_geojson``), names its zones after the polygons
(``boundary_zones``, ``place_names``) and draws it (``boundary_layers``, then the deck
layers of ``app_ui.maps``). A case either ends on the map (``Kept``) or is refused
(``Refused``) by ONE :class:`ZoneFileError` (a ``ValueError``, which the sidebar catches
and shows) whose message names the file, the feature when one is to blame, and the
problem; nothing is kept then. No other exception (TypeError, KeyError, RecursionError,
MemoryError, ...) may escape any of these functions, on the checked file or on whatever
``parse_geojson`` alone lets through.

The large cases (a polygon of half a million vertices, the boundary files' cap; a
million and two million vertices, refused on the bytes; a hundred thousand features, a
bomb of empty arrays) are generated in memory and bound the peak of the Python
allocations made while the upload is handled (``tracemalloc``; the upload's own bytes,
made before, are not counted). numpy's buffers are traced too;
GEOS's own C++ allocations are not (``benchmarks/bench_geojson.py`` measures the
resident size of a child process as well).
"""

from __future__ import annotations

import json
import re
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest

from app_ui import maps
from vrvm.services.map import boundaries as svc
from vrvm.trips.home import Home
from vrvm.trips.places.zone_files import ZoneFile, ZoneFileError, ZoneFileLimits
from vrvm.trips.store.kept_zones import ZoneFileEntry

FILE_NAME = "upload.geojson"
LON0, LAT0 = -87.70, 41.80  # Chicago: every valid shape below lies near it
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_LINK = "[x](javascript:alert(1))"


# ------------------------------------------------------------------ building uploads


def ring(i: int = 0, j: int = 0, size: float = 0.01) -> list:
    """A closed square ring, the ``i``-th east and ``j``-th north of the origin."""
    x, y = LON0 + i * size, LAT0 + j * size
    return [[x, y], [x + size, y], [x + size, y + size], [x, y + size], [x, y]]


def polygon(*rings) -> dict:
    return {"type": "Polygon", "coordinates": list(rings) or [ring()]}


def feature(geometry, **properties) -> dict:
    return {"type": "Feature", "properties": properties, "geometry": geometry}


def collection(*features, **members) -> dict:
    return {"type": "FeatureCollection", "features": list(features), **members}


def encode(document) -> bytes:
    return json.dumps(document).encode()


def zones_file(n: int = 2, **members) -> dict:
    """``n`` named unit squares side by side, ids ``1..n``."""
    return collection(
        *(feature(polygon(ring(i)), id=i + 1, name=f"Zone {i + 1}") for i in range(n)),
        **members,
    )


def with_features(*extra) -> bytes:
    """A good zone first, then the given features (so the culprit is ``features[1]``)."""
    return encode(collection(feature(polygon(ring(0)), name="Good"), *extra))


def bad_geometry(geometry) -> bytes:
    return with_features(feature(geometry, name="Bad"))


def circle_text(n: int, *, lon: float = LON0, lat: float = LAT0, radius: float = 0.5) -> str:
    """The coordinates array of a valid polygon of ``n`` vertices (a circle), as JSON text.

    Seven decimals (1 cm) keep consecutive vertices apart for ``n`` up to a few million.
    """
    t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    x = np.append(lon + radius * np.cos(t), lon + radius)  # closed: the first vertex again
    y = np.append(lat + radius * np.sin(t), lat)
    return "[[" + ",".join(map("[{:.7f},{:.7f}]".format, x, y)) + "]]"


def circle_feature_text(n: int, name: str, **where) -> str:
    return (
        f'{{"type":"Feature","properties":{{"name":"{name}"}},'
        f'"geometry":{{"type":"Polygon","coordinates":{circle_text(n, **where)}}}}}'
    )


def collection_text(features: list[str]) -> bytes:
    return ('{"type":"FeatureCollection","features":[' + ",".join(features) + "]}").encode()


@cache
def half_million_vertex_polygon() -> bytes:
    """One valid polygon of 500,000 vertices (12 MB): the most a boundary file holds."""
    return collection_text([circle_feature_text(499_999, "Big")])


@cache
def million_vertex_polygon() -> bytes:
    """One valid polygon of 1,000,000 vertices (25 MB)."""
    return collection_text([circle_feature_text(999_999, "Big")])


@cache
def just_over_the_vertex_cap() -> bytes:
    """Two polygons of 250,001 vertices, each feature with a ``bbox``: within what the
    count on the bytes allows (it spares one ``bbox`` per object), refused by the exact
    count on the parsed coordinates, which names the second polygon."""
    features = [
        circle_feature_text(250_000, name, lon=LON0 + dx).replace(
            '"geometry":', '"bbox":[0,0,1,1],"geometry":'
        )
        for name, dx in (("West", -1.2), ("East", 1.2))
    ]
    return collection_text(features)


@cache
def two_million_vertices() -> bytes:
    """Two polygons of 1,000,001 vertices each."""
    return collection_text(
        [
            circle_feature_text(1_000_000, "West", lon=LON0 - 1.2),
            circle_feature_text(1_000_000, "East", lon=LON0 + 1.2),
        ]
    )


def many_features(n: int) -> bytes:
    """``n`` tiny triangles in a grid."""
    parts = []
    for k in range(n):
        x, y = LON0 + (k % 1000) * 1e-3, LAT0 + (k // 1000) * 1e-3
        parts.append(
            '{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":'
            f"[[[{x:.4f},{y:.4f}],[{x + 5e-4:.4f},{y:.4f}],[{x:.4f},{y + 5e-4:.4f}],"
            f"[{x:.4f},{y:.4f}]]]}}}}"
        )
    return collection_text(parts)


def with_property(name: str, text: bytes) -> bytes:
    """A good zone whose property ``name`` holds the raw JSON ``text``."""
    return with_features().replace(
        b'"name": "Good"', b'"name": "Good", "%s": ' % name.encode() + text
    )


def empty_array_bomb() -> bytes:
    """A good zone with 15 million empty arrays in a property (45 MB: 1.2 GB parsed)."""
    return with_property("junk", b"[" + b"[]," * 15_000_000 + b"[]]")


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# ------------------------------------------------------------------ outcomes


@dataclass(frozen=True)
class Refused:
    """The upload is refused: the message matches ``message`` and names ``feature``."""

    message: str
    feature: int | None = None


@dataclass(frozen=True)
class Kept:
    """The upload is kept and drawn with ``n_zones`` zones; ``check`` sees the result."""

    n_zones: int
    check: Callable[[Shown], None] | None = None


@dataclass(frozen=True)
class Case:
    data: Callable[[], bytes]
    outcome: Refused | Kept
    max_peak_mb: float | None = None  # bound on traced Python allocations


@dataclass
class Shown:
    """What the dashboard made of a kept upload."""

    entry: ZoneFileEntry
    document: dict
    zones: ZoneFile | None
    names: list[str]
    layers: dict
    deck_json: str | None


def sidebar_chain(home, data: bytes, *, deck_json: bool = True) -> Shown:
    """Save an upload as the sidebar does, then read it back and draw it as the map does."""
    entry = svc.save_boundaries(home, data, FILE_NAME)
    document = svc.load_boundaries(home, entry.name)
    zones = svc.boundary_zones(document)
    lat, lon = probe_points(zones)
    names = svc.place_names(lat, lon, document)
    layers = svc.boundary_layers(document)
    deck = maps.boundary_layers(document)
    text = maps.CompactDeck(layers=deck).to_json() if deck_json else None
    return Shown(entry, document, zones, names, layers, text)


def probe_points(zones: ZoneFile | None) -> tuple[np.ndarray, np.ndarray]:
    """A point inside each zone, and one far from all of them."""
    if zones is None:
        return np.array([0.0]), np.array([0.0])
    lat, lon = zones.representative_points(zones.ids)
    return np.append(lat, 0.0), np.append(lon, 0.0)


def parsed_alone(data: bytes) -> ZoneFileError | None:
    """``parse_geojson`` on its own, and every map function on what it lets through.

    ``boundary_zones`` and ``place_names`` may refuse a document whose polygons do not
    read (with a :class:`ZoneFileError`); nothing else may raise.
    """
    try:
        document = svc.parse_geojson(data, label=FILE_NAME)
    except ZoneFileError as error:
        return untraced(error)
    svc.boundary_layers(document)
    maps.boundary_layers(document)
    try:
        svc.place_names(np.array([LAT0 + 0.005]), np.array([LON0 + 0.005]), document)
    except ZoneFileError as error:
        assert type(error) is ZoneFileError
    return None


def refusal(call: Callable, *args) -> ZoneFileError:
    """The ZoneFileError ``call(*args)`` raises, kept as the sidebar keeps it."""
    try:
        call(*args)
    except ZoneFileError as error:
        return untraced(error)
    pytest.fail("the upload was not refused")


def untraced(error: ZoneFileError) -> ZoneFileError:
    """``error`` without its traceback (and its context's), as the sidebar drops them.

    The frames a traceback holds (with the parsed document in them) would otherwise
    count in the memory of the next step.
    """
    cause: BaseException | None = error
    while cause is not None:
        cause.__traceback__ = None
        cause = cause.__context__
    return error


def assert_clear(error: BaseException, expected: Refused) -> None:
    """One clear refusal: the file, the feature (if any) and the problem, one line."""
    assert type(error) is ZoneFileError and isinstance(error, ValueError)
    text = str(error)
    assert text.startswith(f"{FILE_NAME}: "), text
    assert re.search(expected.message, text), text
    assert error.feature == expected.feature, text
    if expected.feature is not None:
        assert text.startswith(f"{FILE_NAME}: features[{expected.feature}]: "), text
    assert "\n" not in text and len(text) < 400, text
    assert "Traceback" not in text


# ------------------------------------------------------------------ checks of kept files


def names_are(*expected: str) -> Callable[[Shown], None]:
    def check(shown: Shown) -> None:
        assert shown.names == [*expected, ""]

    return check


def repaired(shown: Shown) -> None:
    assert any("repaired with shapely.make_valid" in note for note in shown.zones.notes)
    assert shown.zones.geometries[0].is_valid


def escaped(shown: Shown) -> None:
    # place names are plain text (each view escapes what it renders); the deck's data
    # carries the properties escaped, so no raw tag reaches the browser's HTML
    assert shown.names == [XSS_IMG, XSS_LINK, ""]
    assert "<img" not in shown.deck_json and "&lt;img src=x onerror=alert(1)&gt;" in (
        shown.deck_json
    )
    properties = [f["properties"] for f in maps.boundary_layers(shown.document)[0].data["features"]]
    assert [p["name"] for p in properties] == [
        "&lt;img src=x onerror=alert(1)&gt;",
        "[x](javascript:alert(1))",
    ]


def points_kept_as_places(shown: Shown) -> None:
    assert set(shown.layers) == {"areas", "points", "lines"}
    assert any("skipped" in note for note in shown.zones.notes)


def numbered_in_order(shown: Shown) -> None:
    assert shown.entry.id_property is None  # duplicate ids: zones numbered in file order
    assert shown.zones.ids.tolist() == ["1", "2", "3"]


def brackets_in_strings(shown: Shown) -> None:
    assert shown.names[0].startswith("[[[[")


# ------------------------------------------------------------------ the corpus

SQUARE = ring()
CHICAGO_AS_LAT_LON = [[y, x] for x, y in ring(0, 0)]  # swapped, but still on the globe
TOKYO_SWAPPED = [[35.68, 139.69], [35.69, 139.69], [35.69, 139.70], [35.68, 139.69]]
BOW_TIE = [[LON0, LAT0], [LON0 + 0.01, LAT0 + 0.01], [LON0 + 0.01, LAT0], [LON0, LAT0 + 0.01]]
BOW_TIE.append(BOW_TIE[0])
STATE_PLANE = {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::2263"}}

CORPUS: dict[str, Case] = {
    # -- not JSON, or not GeoJSON at all
    "invalid JSON": Case(lambda: b"{oops", Refused(r"not JSON text \(Expecting")),
    "truncated JSON": Case(
        lambda: encode(zones_file(3))[:150],
        Refused(r"not JSON text \(Unterminated string starting at: line 1 column \d+"),
    ),
    "empty file": Case(lambda: b"", Refused("not JSON text")),
    "JSON list": Case(
        lambda: b"[1, 2]", Refused(r"not a GeoJSON FeatureCollection \(found a JSON list\)")
    ),
    "JSON number": Case(lambda: b"42", Refused(r"\(found a JSON int\)")),
    "JSON string": Case(lambda: b'"FeatureCollection"', Refused(r"\(found a JSON str\)")),
    "bare geometry": Case(lambda: encode(polygon()), Refused(r"found a GeoJSON 'Polygon' object")),
    "non-UTF-8 bytes": Case(
        lambda: encode(zones_file(1)).replace(b"Zone 1", b"Caf\xe9"),
        Refused(r"not JSON text \(not UTF-8 encoded\)"),
    ),
    "UTF-16 text": Case(
        lambda: encode(zones_file(1)).decode().encode("utf-16"),
        Refused(r"not UTF-8 encoded"),
    ),
    "BOM-prefixed UTF-8": Case(
        lambda: b"\xef\xbb\xbf" + encode(zones_file(2)), Kept(2, names_are("Zone 1", "Zone 2"))
    ),
    "a single Feature": Case(lambda: encode(feature(polygon(), name="Solo")), Kept(1)),
    # -- the collection
    "FeatureCollection without features": Case(
        lambda: b'{"type": "FeatureCollection"}', Refused("the FeatureCollection has no features")
    ),
    "features an object": Case(
        lambda: b'{"type": "FeatureCollection", "features": {"0": {}}}',
        Refused("the FeatureCollection has no features"),
    ),
    "empty FeatureCollection": Case(
        lambda: encode(collection()), Refused("the FeatureCollection has no features")
    ),
    "non-WGS84 CRS": Case(
        lambda: encode(zones_file(1, crs=STATE_PLANE)),
        Refused(r"declares the coordinate system .*EPSG::2263.*EPSG:4326"),
    ),
    "more features than the cap": Case(
        lambda: many_features(100_001),
        Refused(r"100,001 features; at most 20,000 are read"),
        max_peak_mb=250,  # measured 136 MB
    ),
    # -- features that are not Feature objects
    "features holding numbers": Case(
        lambda: with_features(7), Refused("not a GeoJSON Feature object", 1)
    ),
    "features holding strings": Case(
        lambda: with_features("Feature"), Refused("not a GeoJSON Feature object", 1)
    ),
    "features holding null": Case(lambda: with_features(None), Refused("not a GeoJSON Feature", 1)),
    "features holding lists": Case(
        lambda: with_features([1, [2, 3]]), Refused("not a GeoJSON Feature object", 1)
    ),
    "a Feature of no type": Case(
        lambda: with_features({"geometry": polygon()}), Refused("not a GeoJSON Feature", 1)
    ),
    # -- properties and geometry of the wrong kind
    "properties a list": Case(
        lambda: with_features({**feature(polygon()), "properties": ["name", "x"]}),
        Refused("the feature's properties are not a JSON object", 1),
    ),
    "properties a string": Case(
        lambda: with_features({**feature(polygon()), "properties": "name=x"}),
        Refused("properties are not a JSON object", 1),
    ),
    "properties a number": Case(
        lambda: with_features({**feature(polygon()), "properties": 3}),
        Refused("properties are not a JSON object", 1),
    ),
    "geometry null": Case(lambda: bad_geometry(None), Refused("the feature has no geometry", 1)),
    "geometry missing": Case(
        lambda: with_features({"type": "Feature", "properties": {}}),
        Refused("the feature has no geometry", 1),
    ),
    "geometry a string": Case(
        lambda: bad_geometry("POLYGON ((0 0, 1 0, 1 1, 0 0))"),
        Refused("the feature has no geometry", 1),
    ),
    "geometry of an unknown type": Case(
        lambda: bad_geometry({"type": "Circle", "coordinates": [LON0, LAT0], "radius": 9}),
        Refused("a Circle geometry; a zone file holds Polygon or MultiPolygon", 1),
    ),
    "coordinates an object": Case(
        lambda: bad_geometry({"type": "Polygon", "coordinates": {"0": SQUARE}}),
        Refused("the Polygon has no coordinates array", 1),
    ),
    # -- malformed coordinates
    "MultiPolygon one level too shallow": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [SQUARE]}),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon one level too deep": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [[[SQUARE]]]}),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon of bare numbers": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [1, 2, 3]}),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon with strings inside": Case(
        lambda: bad_geometry(
            {"type": "MultiPolygon", "coordinates": [[[["-87.7", "41.8"], *SQUARE[1:]]]]}
        ),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon with null inside": Case(
        lambda: bad_geometry(
            {"type": "MultiPolygon", "coordinates": [[[[None, 41.8], *SQUARE[1:]]]]}
        ),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon ring of 2 points": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [[SQUARE[:2]]]}),
        Refused(r"malformed MultiPolygon coordinates", 1),
    ),
    "MultiPolygon empty": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": []}),
        Refused("the MultiPolygon is empty", 1),
    ),
    "NaN as text": Case(
        lambda: with_features().replace(b"[-87.7,", b"[NaN,", 1),
        Refused("NaN is not a JSON number"),
    ),
    "Infinity as text": Case(
        lambda: with_features().replace(b"-87.7,", b"-Infinity,", 1),
        Refused("-Infinity is not a JSON number"),
    ),
    "a number beyond floats": Case(
        lambda: with_features(feature(polygon(ring(3)), name="Far")).replace(
            b"-87.67", b"1e999", 1
        ),
        Refused(r"coordinate \(inf, 41.8\) is not a longitude/latitude in degrees", 1),
    ),
    "an integer of 5,000 digits": Case(
        lambda: with_features(feature(polygon(ring(1)), population=1)).replace(
            b'"population": 1', b'"population": ' + b"9" * 5000
        ),
        Refused(r"not JSON text \(Exceeds the limit \(4300 digits\)"),
    ),
    "latitude out of range": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [[ring(0, 5000)]]}),
        Refused(r"coordinate \(-87.7, 91.8\) is not a longitude/latitude in degrees", 1),
    ),
    "longitude out of range": Case(
        lambda: bad_geometry(polygon([[x + 300, y] for x, y in SQUARE])),
        Refused(r"coordinate \(212.3, 41.8\) is not a longitude/latitude", 1),
    ),
    "projected coordinates (feet)": Case(
        lambda: bad_geometry(
            polygon([[980000, 190000], [990000, 190000], [990000, 200000], [980000, 190000]])
        ),
        Refused("looks projected", 1),
    ),
    "lat/lon swapped, off the globe": Case(
        lambda: bad_geometry({"type": "MultiPolygon", "coordinates": [[TOKYO_SWAPPED]]}),
        Refused(r"\(35.68, 139.69\) .*are longitude and latitude swapped\?", 1),
    ),
    "lat/lon swapped, still on the globe": Case(
        lambda: encode(collection(feature(polygon(CHICAGO_AS_LAT_LON), name="Antarctic"))),
        Kept(1),  # cannot be told from a real polygon (in Antarctica): kept
    ),
    "a Point with text coordinates": Case(
        lambda: bad_geometry({"type": "Point", "coordinates": "-87.7, 41.8"}),
        Refused(r"the Point has no coordinates array", 1),
    ),
    "a Point with one coordinate": Case(
        lambda: bad_geometry({"type": "Point", "coordinates": [-87.7]}),
        Refused(r"malformed Point coordinates: coordinates is \[-87.7\], not a \[longitude", 1),
    ),
    "a LineString out of range": Case(
        lambda: bad_geometry({"type": "LineString", "coordinates": [[0, 0], [0, 120]]}),
        Refused(r"coordinate \(0, 120\) is not a longitude/latitude", 1),
    ),
    # -- nesting
    "100,000 nested arrays": Case(
        lambda: nested(100_000),
        Refused(r"nested too deeply \(100,000 levels; at most 64 are read\)"),
    ),
    "100,000 nested objects in a property": Case(
        lambda: with_property("deep", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        Refused(r"nested too deeply \(100,00\d levels"),
    ),
    "100,000 nested arrays in the coordinates": Case(
        lambda: bad_geometry({"type": "Polygon", "coordinates": None}).replace(
            b'"coordinates": null', b'"coordinates": ' + nested(100_000)
        ),
        Refused(r"nested too deeply"),
    ),
    "brackets inside strings do not nest": Case(
        lambda: encode(collection(feature(polygon(), name="[[[[" * 50 + '\\"' + "{{" * 50))),
        Kept(1, brackets_in_strings),
    ),
    # -- size and memory
    "a polygon of 500,000 vertices (the cap)": Case(
        half_million_vertex_polygon,
        Kept(1, names_are("Big")),
        max_peak_mb=200,  # measured 104 MB
    ),
    "a polygon of 1,000,000 vertices": Case(
        million_vertex_polygon,
        Refused(r"about 1,000,000 vertices \(coordinate arrays\), more than the 500,000 read"),
        max_peak_mb=100,  # measured 33 MB: refused on the bytes, never parsed
    ),
    "2,000,002 vertices in two polygons": Case(
        two_million_vertices,
        Refused(r"about 2,000,002 vertices \(coordinate arrays\), more than the 500,000 read"),
        max_peak_mb=100,  # measured 48 MB: refused on the bytes, never parsed
    ),
    "500,002 vertices counted on the parsed coordinates": Case(
        just_over_the_vertex_cap,
        Refused(r"more than 500,000 vertices in all; simplify the polygons", 1),
        max_peak_mb=200,  # measured 84 MB
    ),
    "15 million empty arrays": Case(
        empty_array_bomb,
        Refused(r"would take about [\d,]+ MB of memory to read \(15,000,0\d\d arrays"),
        max_peak_mb=150,  # measured 76 MB: refused on the bytes, never parsed
    ),
    # -- zones
    "duplicate zone ids": Case(
        lambda: encode(
            collection(*(feature(polygon(ring(i)), id=7, name="Same") for i in range(3)))
        ),
        Kept(3, numbered_in_order),
    ),
    "bow-tie polygon (repaired)": Case(
        lambda: encode(collection(feature(polygon(BOW_TIE), name="Bow"))), Kept(1, repaired)
    ),
    "a polygon with no area": Case(
        lambda: bad_geometry(
            polygon([[LON0, LAT0], [LON0 + 0.01, LAT0], [LON0 + 0.02, LAT0], [LON0, LAT0]])
        ),
        Refused(r"invalid polygon \(.*\) with no area to keep", 1),
    ),
    "only Points and LineStrings": Case(
        lambda: encode(
            collection(
                feature({"type": "Point", "coordinates": [LON0, LAT0]}, name="Airport"),
                feature({"type": "LineString", "coordinates": SQUARE[:2]}, name="Road"),
            )
        ),
        Refused("no Polygon or MultiPolygon features"),
    ),
    "polygons with roads and landmarks": Case(
        lambda: with_features(
            feature({"type": "Point", "coordinates": [LON0 + 0.5, LAT0]}, name="Airport"),
            feature({"type": "MultiLineString", "coordinates": [SQUARE[:2]]}, name="Road"),
        ),
        Kept(1, points_kept_as_places),
    ),
    "HTML and Markdown in names": Case(
        lambda: encode(
            collection(
                feature(polygon(ring(0)), name=XSS_IMG), feature(polygon(ring(1)), name=XSS_LINK)
            )
        ),
        Kept(2, escaped),
    ),
}


CASES = [
    pytest.param(case, id=name, marks=[pytest.mark.slow] if case.max_peak_mb else [])
    for name, case in CORPUS.items()
]


@pytest.mark.parametrize("case", CASES)
def test_upload_is_kept_or_refused_clearly(case: Case, tmp_path):
    """Through the sidebar's chain: kept and drawn, or refused by one clear error.

    A large case is measured (its peak of traced allocations) through that chain only:
    ``parse_geojson`` alone, a third parse of the same bytes, is left to the others.
    """
    data = case.data()
    home = tmp_path / "home"
    large = case.max_peak_mb is not None
    if large:
        tracemalloc.start()
    try:
        if isinstance(case.outcome, Refused):
            error = refusal(sidebar_chain, home, data)
        else:
            shown = sidebar_chain(home, data, deck_json=not large)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2**20 if large else 0.0
    finally:
        tracemalloc.stop()
    if isinstance(case.outcome, Refused):
        assert_clear(error, case.outcome)
        assert svc.saved_boundaries(home) == [] and svc.shown_boundaries(home) is None
        alone = None if large else parsed_alone(data)
        if alone is not None:  # parse_geojson finds the same problem first
            assert str(alone) == str(error)
    else:
        assert shown.entry.n_zones == case.outcome.n_zones == len(shown.zones)
        assert svc.shown_boundaries(home).name == shown.entry.name
        assert "areas" in shown.layers
        if case.outcome.check is not None:
            case.outcome.check(shown)
        assert large or parsed_alone(data) is None
    if large:
        assert peak_mb < case.max_peak_mb, f"peak {peak_mb:.0f} MB"


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


# ------------------------------------------------------------------ zone files read directly


def test_duplicate_ids_of_a_named_id_property_are_refused_naming_both_features():
    data = encode(collection(*(feature(polygon(ring(i)), id=[1, 2, 1][i]) for i in range(3))))
    with pytest.raises(
        ZoneFileError, match=r"features\[2\]: duplicate id id='1', also on features\[0\]"
    ):
        ZoneFile.read(data, id_property="id", label=FILE_NAME)


def test_a_parsed_document_nested_too_deeply_is_refused_not_a_recursion_error():
    """``from_geojson`` takes Python objects, which no byte scan has seen."""
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    refused = {
        "coordinates": (
            collection(feature({"type": "Polygon", "coordinates": deep})),
            r"features\[0\]: malformed Polygon coordinates: "
            r"coordinates\[0\]\[0\] is \[\[\[...\]\]\]",
        ),
        "crs": (
            collection(feature(polygon()), crs={"type": "name", "properties": {"name": deep}}),
            "not a GeoJSON file: nested too deeply",
        ),
        "geometries": (
            collection(feature({"type": "GeometryCollection", "geometries": deep})),
            r"features\[0\]: a GeometryCollection geometry; a zone file holds Polygon",
        ),
    }
    for document, message in refused.values():
        with pytest.raises(ZoneFileError, match=f"^{FILE_NAME}: {message}"):
            ZoneFile.from_geojson(document, label=FILE_NAME, ids_from_order=True)
    collections: dict = {"type": "Point", "coordinates": [LON0, LAT0]}
    for _ in range(100_000):
        collections = {"type": "GeometryCollection", "geometries": [collections]}
    with pytest.raises(ZoneFileError, match=r"features\[1\]: the GeometryCollection is nested"):
        ZoneFile.from_geojson(
            collection(feature(polygon()), feature(collections)),
            non_polygons="skip",
            ids_from_order=True,
        )
    # a property nested that deep is no name: the zone is kept, unnamed, and drawn
    document = collection(feature(polygon(), name=deep))
    zones = ZoneFile.from_geojson(document, label=FILE_NAME, ids_from_order=True)
    assert zones.names.tolist() == [""]
    assert svc.place_names(np.array([LAT0 + 0.005]), np.array([LON0 + 0.005]), document) == [""]
    assert '"name"' not in maps.CompactDeck(layers=maps.boundary_layers(document)).to_json()


def test_the_caps_are_settings():
    """A cap of 12 vertices refuses the third of three 5-vertex squares, by index."""
    data = encode(zones_file(3))
    with pytest.raises(ZoneFileError, match=r"features\[2\]: more than 12 vertices"):
        ZoneFile.read(data, limits=ZoneFileLimits(max_vertices=12), label=FILE_NAME)
    with pytest.raises(ZoneFileError, match="nested too deeply"):
        ZoneFile.read(encode(zones_file(1)), limits=ZoneFileLimits(max_depth=6))


def test_a_kept_file_that_no_longer_reads_is_refused_when_loaded(tmp_path):
    """Changed on disk (or kept by a looser version): refused where the sidebar says so."""
    entry = svc.save_boundaries(tmp_path, encode(zones_file(2)), FILE_NAME)
    bad_line = feature({"type": "LineString", "coordinates": [[0, 0], [0, 120]]}, name="Road")
    Home(tmp_path).zones.path(entry.name).write_bytes(with_features(bad_line))
    error = refusal(svc.load_boundaries, tmp_path, entry.name)
    assert str(error) == (
        f"{FILE_NAME}: features[1]: coordinate (0, 120) is not a longitude/latitude in degrees; "
        "are longitude and latitude swapped? GeoJSON puts longitude first"
    )
