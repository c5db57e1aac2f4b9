"""Zone files: real polygon files read, points located, ids matched, bad files refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import shapely

from vrvm.trips.places.zone_files import ZoneFile, ZoneFileError, ZoneFileLimits, zone_id_keys


def square(x0: float, y0: float, size: float = 1.0) -> list:
    return [[[x0, y0], [x0 + size, y0], [x0 + size, y0 + size], [x0, y0 + size], [x0, y0]]]


def feature(coordinates, geometry_type: str = "Polygon", **properties) -> dict:
    return {
        "type": "Feature",
        "properties": properties,
        "geometry": {"type": geometry_type, "coordinates": coordinates},
    }


def collection(*features, **members) -> dict:
    return {"type": "FeatureCollection", "features": list(features), **members}


def as_bytes(document) -> bytes:
    return json.dumps(document).encode()


@pytest.fixture(scope="module")
def nyc(request):
    from tests.conftest import _require

    return ZoneFile.read(_require("nyc_taxi_zones.geojson"))


# ------------------------------------------------------------------ real files


def test_nyc_taxi_zones_read_with_their_ids_and_names(nyc):
    assert len(nyc) == 263
    assert (nyc.id_property, nyc.name_property) == ("LocationID", "zone")
    assert nyc.ids[0] == "1" and nyc.names[0] == "Newark Airport"
    assert sorted(nyc.ids, key=int) == [str(i) for i in range(1, 264)]
    assert nyc.notes == () and len(nyc.fingerprint) == 64
    lat_lo, lon_lo, lat_hi, lon_hi = nyc.bounds
    assert 40.4 < lat_lo < lat_hi < 41.0 and -74.3 < lon_lo < lon_hi < -73.6


def test_representative_points_lie_inside_their_zones(nyc):
    lat, lon = nyc.representative_points(nyc.ids)
    assert shapely.contains_xy(nyc.geometries, lon, lat).all()
    assert (nyc.zone_of(lat, lon) == nyc.ids).all()
    # the centroid would not do: some zones' centroids are outside them
    centroids = shapely.centroid(nyc.geometries)
    assert not shapely.contains(nyc.geometries, centroids).all()


def test_zone_of_agrees_with_brute_force_contains(nyc):
    rng = np.random.default_rng(7)
    lat_lo, lon_lo, lat_hi, lon_hi = nyc.bounds
    lat = rng.uniform(lat_lo, lat_hi, 4000)
    lon = rng.uniform(lon_lo, lon_hi, 4000)
    inside = np.stack([shapely.contains_xy(g, lon, lat) for g in nyc.geometries])  # zones x pts
    assert inside.sum(axis=0).max() == 1  # taxi zones do not overlap
    expected = np.where(inside.any(axis=0), nyc.ids[inside.argmax(axis=0)], None)
    found = nyc.zone_of(lat, lon)
    assert (found == expected).all()
    assert 0.2 < np.mean(found != None) < 0.9  # noqa: E711 - elementwise


def test_chicago_community_areas_match_the_portals_pickup_areas(shared_data):
    """The city's own ``pickup_community_area`` of each trip is the polygon it lies in."""
    zones = ZoneFile.read(shared_data("chicago_community_areas.geojson"))
    assert (len(zones), zones.id_property, zones.name_property) == (77, "area_numbe", "community")
    assert "Loop" in set(zones.names) and "Ohare" in set(zones.names)
    trips = pd.read_csv(shared_data("chicago_taxi_trips.csv"))
    known = trips.dropna(subset=["pickup_latitude", "pickup_community_area"])
    found = zones.zone_of(known["pickup_latitude"], known["pickup_longitude"])
    assert len(known) > 10_000
    assert (found == zone_id_keys(known["pickup_community_area"])).mean() > 0.999


def test_areas_agree_with_geodesic_areas(shared_data):
    pyproj = pytest.importorskip("pyproj")
    zones = ZoneFile.read(shared_data("chicago_community_areas.geojson"))
    geod = pyproj.Geod(ellps="WGS84")
    geodesic = np.array([abs(geod.geometry_area_perimeter(g)[0]) for g in zones.geometries])
    np.testing.assert_allclose(zones.area_km2, geodesic / 1e6, rtol=1e-6)
    assert 590 < zones.area_km2.sum() < 620  # Chicago: 606 km² of land and inland water


def test_frame_and_geojson_round_trip(nyc):
    frame = nyc.to_frame()
    assert list(frame.columns) == ["id", "name", "rep_lat", "rep_lon", "area_km2", "geometry"]
    assert str(frame.crs) == "EPSG:4326" and len(frame) == 263
    again = ZoneFile.from_geojson(nyc.to_geojson(), id_property="id")
    assert (again.ids == nyc.ids).all() and (again.names == nyc.names).all()
    assert again.to_geojson()["features"][3]["properties"]["borough"] == "Manhattan"
    json.dumps(again.to_geojson(), allow_nan=False)  # JSON-ready for a map
    lat, lon = nyc.representative_points(nyc.ids)
    assert (again.zone_of(lat, lon) == nyc.ids).all()


# ------------------------------------------------------------------ ids and lookups


def test_zone_ids_compare_numbers_as_numbers_and_text_as_stripped_text():
    keys = zone_id_keys(
        np.array([7, 7.0, "007", " 7", "7.5", 7.5, "MN19 ", "mn19", None, ""], object)
    )
    assert keys.tolist() == ["7", "7", "7", "7", "7.5", "7.5", "MN19", "mn19", None, None]
    assert zone_id_keys(pd.Series([1.0, np.nan, 3.0])).tolist() == ["1", None, "3"]
    assert zone_id_keys(["12345678901234567890"]).tolist() == ["12345678901234567890"]


def test_representative_points_of_unknown_ids_are_nan():
    zones = ZoneFile.from_geojson(
        collection(feature(square(0, 0), code=1), feature(square(1, 0), code=2))
    )
    assert zones.id_property == "code" and zones.name_property is None
    lat, lon = zones.representative_points(pd.Series([2, "1", 3, None, "2.0"]))
    assert np.isnan(lat[[2, 3]]).all() and np.isnan(lon[[2, 3]]).all()
    np.testing.assert_allclose(lon[[0, 1, 4]], [1.5, 0.5, 1.5])
    assert zones.positions(["2", 9]).tolist() == [1, -1]


def test_zone_of_edges_nan_points_and_overlaps():
    zones = ZoneFile.from_geojson(
        collection(
            feature(square(0, 0, 4), id="town", name="Town"),
            feature(square(1, 1, 1), id="centre", name="Centre"),
            feature(square(4, 0, 4), id="east", name="East"),
        )
    )
    lat = np.array([1.5, 3.0, 2.0, np.nan, 9.0])
    lon = np.array([1.5, 3.0, 4.0, 1.0, 9.0])
    assert zones.zone_of(lat, lon).tolist() == ["centre", "town", "town", None, None]
    assert zones.zone_index(lat, lon, ignore=np.array([False, True, False]))[0] == 0
    assert zones.zone_of(np.empty(0), np.empty(0)).tolist() == []


def test_detected_id_prefers_id_like_names():
    zones = ZoneFile.from_geojson(
        collection(
            feature(square(0, 0), name="A", OBJECTID=10, zone_id="z1"),
            feature(square(1, 0), name="B", OBJECTID=11, zone_id="z2"),
        )
    )
    assert (zones.id_property, zones.name_property) == ("zone_id", "name")
    numbered = ZoneFile.from_geojson(
        collection(feature(square(0, 0), kind="x"), feature(square(1, 0), kind="x")),
        ids_from_order=True,
    )
    assert numbered.id_property is None and numbered.ids.tolist() == ["1", "2"]


# ------------------------------------------------------------------ fingerprints, repairs


def test_fingerprint_ignores_layout_and_sees_content():
    a = collection(feature(square(0, 0), id=1, name="A"), feature(square(1, 0), id=2, name="B"))
    rotated = json.loads(json.dumps(a))
    ring = rotated["features"][0]["geometry"]["coordinates"][0]
    rotated["features"][0]["geometry"]["coordinates"][0] = [*ring[1:], ring[1]][::-1]
    rotated["features"][1]["properties"] = {"name": "B", "id": 2.0}
    base = ZoneFile.read(as_bytes(a)).fingerprint
    assert ZoneFile.read(json.dumps(a, indent=3).encode()).fingerprint == base
    assert ZoneFile.from_geojson(rotated).fingerprint == base
    moved = json.loads(json.dumps(a))
    moved["features"][1]["geometry"]["coordinates"][0][1][0] = 2.5
    moved["features"][1]["geometry"]["coordinates"][0][2][0] = 2.5
    renamed = json.loads(json.dumps(a))
    renamed["features"][1]["properties"]["name"] = "C"
    assert ZoneFile.from_geojson(moved).fingerprint != base
    assert ZoneFile.from_geojson(renamed).fingerprint != base


def test_invalid_polygons_are_repaired_and_said_or_refused():
    bow_tie = [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]
    doc = collection(feature(square(2, 0), id=1), feature(bow_tie, id=2))
    zones = ZoneFile.from_geojson(doc)
    assert zones.geometries[1].is_valid and zones.geometries[1].area == pytest.approx(0.5)
    assert len(zones.notes) == 1 and "features[1]" in zones.notes[0]
    assert "make_valid" in zones.notes[0]
    with pytest.raises(ZoneFileError, match=r"features\[1\]: invalid polygon") as info:
        ZoneFile.from_geojson(doc, repair=False)
    assert info.value.feature == 1


def test_boundary_files_may_skip_points_and_lines():
    doc = collection(
        feature(square(0, 0), name="Downtown"),
        feature([[0, 0], [1, 1]], "LineString", name="River"),
        feature([0.5, 0.5], "Point", name="Airport"),
    )
    with pytest.raises(ZoneFileError, match=r"features\[1\]: a LineString geometry"):
        ZoneFile.from_geojson(doc)
    zones = ZoneFile.from_geojson(doc, non_polygons="skip")
    assert len(zones) == 1 and zones.names.tolist() == ["Downtown"]
    assert zones.notes == (
        "skipped 1 LineString feature (not zones)",
        "skipped 1 Point feature (not zones)",
    )


def test_read_from_a_path_names_the_file(tmp_path):
    path = tmp_path / "my zones.geojson"
    path.write_bytes(as_bytes(collection(feature(square(0, 0), id=1), feature(square(1, 0), id=1))))
    with pytest.raises(ZoneFileError, match=r"^my zones\.geojson: features\[1\]: duplicate id"):
        ZoneFile.read(path, id_property="id")
    with pytest.raises(ZoneFileError, match="cannot be read"):
        ZoneFile.read(tmp_path / "missing.geojson")


# ------------------------------------------------------------------ malformed files

PROJECTED = [[[980000, 190000], [990000, 190000], [990000, 200000], [980000, 190000]]]
LINE = [[0, 0], [1, 1]]
STATE_PLANE = {"type": "name", "properties": {"name": "EPSG:2263"}}


def zones_doc(*ids, **members) -> bytes:
    """A file of unit squares side by side, one per id."""
    return as_bytes(
        collection(*(feature(square(i, 0), id=v) for i, v in enumerate(ids)), **members)
    )


MALFORMED = {
    "not JSON": (b"{oops", {}, "not JSON text", None),
    "not UTF-8": (b"\xff\xfe\x00\x01", {}, "not UTF-8", None),
    "NaN literal": (
        b'{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {},'
        b' "geometry": {"type": "Point", "coordinates": [NaN, 1]}}]}',
        {},
        "NaN is not a JSON number",
        None,
    ),
    "nested too deeply": (b"[" * 200_000 + b"]" * 200_000, {}, "nested too deeply", None),
    "a JSON list": (b"[1, 2]", {}, "not a GeoJSON FeatureCollection .found a JSON list", None),
    "a bare geometry": (
        as_bytes({"type": "Polygon", "coordinates": square(0, 0)}),
        {},
        "found a GeoJSON 'Polygon' object",
        None,
    ),
    "no features": (as_bytes(collection()), {}, "has no features", None),
    "not a Feature": (
        as_bytes(collection(feature(square(0, 0), id=1), [1, 2])),
        {},
        "not a GeoJSON Feature",
        1,
    ),
    "no geometry": (
        as_bytes(collection(feature(square(0, 0), id=1), {"type": "Feature", "geometry": None})),
        {},
        "has no geometry",
        1,
    ),
    "a line": (
        as_bytes(collection(feature([[0, 0], [1, 1]], "LineString", id=1))),
        {},
        "a LineString geometry",
        0,
    ),
    "properties not an object": (
        as_bytes(collection({**feature(square(0, 0)), "properties": [1]})),
        {},
        "properties are not a JSON object",
        0,
    ),
    "text coordinates": (
        as_bytes(collection(feature([[["a", 0], [1, 0], [1, 1], ["a", 0]]], id=1))),
        {},
        "malformed Polygon coordinates",
        0,
    ),
    "a ring of two points": (
        as_bytes(collection(feature(square(0, 0), id=1), feature([[[0, 0], [1, 0]]], id=2))),
        {},
        "malformed Polygon coordinates",
        1,
    ),
    "no coordinates array": (
        as_bytes(collection(feature(None, id=1))),
        {},
        "no coordinates array",
        0,
    ),
    "empty polygon": (as_bytes(collection(feature([], id=1))), {}, "the Polygon is empty", 0),
    "projected coordinates": (
        as_bytes(collection(feature(PROJECTED, id=1))),
        {},
        "looks projected",
        0,
    ),
    "latitude out of range": (
        as_bytes(collection(feature(square(0, 0), id=1), feature(square(10, 95), id=2))),
        {},
        r"\(10, 95\) is not a longitude/latitude",
        1,
    ),
    "swapped axes": (as_bytes(collection(feature(square(40, 120), id=1))), {}, "swapped", 0),
    "another CRS": (
        as_bytes(
            collection(
                feature(square(0, 0), id=1),
                crs={"type": "name", "properties": {"name": "EPSG:2263"}},
            )
        ),
        {},
        "declares the coordinate system",
        None,
    ),
    "duplicate ids": (
        as_bytes(
            collection(
                feature(square(0, 0), id=1),
                feature(square(1, 0), id=2),
                feature(square(2, 0), id="1"),
            )
        ),
        {"id_property": "id"},
        r"duplicate id id='1', also on features\[0\]",
        2,
    ),
    "an id missing on one feature": (
        as_bytes(collection(feature(square(0, 0), LocationID=1), feature(square(1, 0), zone="x"))),
        {"id_property": "LocationID"},
        "no 'LocationID' id",
        1,
    ),
    "an id property on no feature": (
        as_bytes(collection(feature(square(0, 0), id=1))),
        {"id_property": "LocationID"},
        "no feature has the id property 'LocationID'",
        None,
    ),
    "no id to detect": (
        as_bytes(collection(feature(square(0, 0), kind="a"), feature(square(1, 0), kind="a"))),
        {},
        "no property holds a distinct id",
        None,
    ),
    "a name property on no feature": (
        as_bytes(collection(feature(square(0, 0), id=1))),
        {"name_property": "zone"},
        "no feature has the name property 'zone'",
        None,
    ),
    "too many features": (
        zones_doc(*range(5)),
        {"limits": ZoneFileLimits(max_features=4)},
        "5 features; at most 4 are read",
        None,
    ),
    "too many vertices": (
        zones_doc(*range(5)),
        {"limits": ZoneFileLimits(max_vertices=12)},
        "more than 12 vertices",
        2,
    ),
    "too large": (
        as_bytes(collection(feature(square(0, 0), id=1))),
        {"limits": ZoneFileLimits(max_bytes=50)},
        "at most 0 MB are read",
        None,
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
def test_malformed_zone_files_give_one_clear_error(case):
    data, options, message, feature_index = MALFORMED[case]
    with pytest.raises(ZoneFileError, match=message) as info:
        ZoneFile.read(data, label="upload.geojson", **options)
    error = info.value
    assert str(error).startswith("upload.geojson: ")
    assert error.feature == feature_index
    if feature_index is not None:
        assert f"features[{feature_index}]: " in str(error)
    assert isinstance(error, ValueError)
