"""``POST /v1/stops``: the service's numbers for the same stops, and refusals naming the
field."""

from __future__ import annotations

import pandas as pd
import pytest

from vrvm.services.planning.stops import Dwell, Stop, trip_with_stops

DEPART = "2024-03-12T07:40:00"
STAMP = pd.Timestamp(DEPART, tz="UTC")  # the demo model's zone


@pytest.fixture(scope="module")
def client(tiny_client):
    return tiny_client


@pytest.fixture(scope="module")
def served(tiny_served):
    return tiny_served


@pytest.fixture(scope="module")
def zones(served):
    """Three zones far apart: the busiest trip's ends and a third."""
    grid = served.area.grid
    return [str(grid["zone"].iloc[i]) for i in (0, len(grid) // 2, len(grid) - 1)]


def _point(served, zone):
    row = served.area.grid.set_index(served.area.grid["zone"].astype(str)).loc[zone]
    return float(row["lat"]), float(row["lon"])


def _close(got, want):
    if want is None or (isinstance(want, float) and not pd.notna(want)):
        assert got is None
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)
    else:
        assert got == want


def test_stops_equal_the_service(client, served, zones):
    lat, lon = _point(served, zones[1])
    body = {
        "stops": [
            {"zone": zones[0], "name": "base"},
            {"lat": lat, "lon": lon, "name": "scene", "dwell": {"median_min": 10, "p90_min": 18}},
            {"zone": zones[2], "dwell": None},
        ],
        "depart": DEPART,
        "within_s": 2700,
        "quantiles": [0.1, 0.5, 0.9],
    }
    answer = client.post("/v1/stops", json=body)
    assert answer.status_code == 200, answer.text
    document = answer.json()
    stops = [
        Stop(*_point(served, zones[0]), "base"),
        Stop(lat, lon, "scene", Dwell.lognormal(10, 18)),
        Stop(*_point(served, zones[2]), zones[2]),  # unnamed: its zone id
    ]
    trip = trip_with_stops(served.model, stops, STAMP)
    expected = trip.to_dict(within_s=2700, levels=[0.1, 0.5, 0.9])
    assert document["model"]["version"] == 1 and document["time_zone"] == served.tz
    assert document["departure"] == STAMP.isoformat() == expected["departure"]
    assert "independent" in document["assumption"]
    assert document["stops"] == expected["stops"]
    for name, want in expected["total"].items():
        _close(document["total"][name], want)
    assert document["total"]["p_within"] == pytest.approx(float(trip.cdf(2700)), rel=1e-9)
    assert document["total"]["median_s"] == pytest.approx(trip.median(), rel=1e-9)
    assert len(document["legs"]) == 2 and len(document["quantiles"]) == 9
    for part in ("legs", "quantiles"):
        for got, want in zip(document[part], expected[part], strict=True):
            assert set(got) == set(want), part
            for name, value in want.items():
                _close(got[name], value)


def test_defaults_fixed_and_observed_dwells(client, served, zones):
    body = {
        "stops": [
            {"zone": zones[0]},
            {"zone": zones[1], "dwell": {"minutes": 7.5}},
            {"zone": zones[2], "dwell": {"sample_min": [4, 6, 12]}},
            {"zone": zones[0]},
        ],
        "depart": DEPART,
        "level": 0.8,
    }
    document = client.post("/v1/stops", json=body).json()
    dwells = [Dwell.fixed(0), Dwell.fixed(7.5), Dwell.empirical([4, 6, 12]), Dwell.fixed(0)]
    stops = [
        Stop(*_point(served, z), z, d)
        for z, d in zip([zones[0], zones[1], zones[2], zones[0]], dwells, strict=True)
    ]
    trip = trip_with_stops(served.model, stops, STAMP)
    lo, hi = trip.interval(0.8)
    total = document["total"]
    assert total["level"] == 0.8 and total["p_within"] is None is total["within_s"]
    assert (total["lo_s"], total["hi_s"]) == pytest.approx((lo, hi), rel=1e-9)
    assert total["mean_s"] == pytest.approx(trip.mean(), rel=1e-9)
    assert document["quantiles"] == []  # none asked for: the answer stays fast
    assert [s["dwell"]["kind"] for s in document["stops"]] == [
        "fixed",
        "fixed",
        "empirical",
        "fixed",
    ]
    assert [leg["dwell"] for leg in document["legs"]] == list(trip.legs(0.8)["dwell"])


def _refused(client, body, loc_prefix):
    answer = client.post("/v1/stops", json=body)
    assert answer.status_code == 422, answer.text
    (error, *_) = answer.json()["detail"]
    assert error["loc"][: len(loc_prefix)] == loc_prefix, error
    return error["msg"]


def test_bad_input_names_the_field(client, served, zones):
    two = [{"zone": zones[0]}, {"zone": zones[1]}]
    good = {"stops": two, "depart": DEPART}
    _refused(client, {**good, "stops": two[:1]}, ["body", "stops"])
    _refused(client, {**good, "stops": [two[0], two[1]] * 6}, ["body", "stops"])
    bad_dwell = [two[0], {"zone": zones[1], "dwell": {"minutes": -5}}, two[0]]
    _refused(client, {**good, "stops": bad_dwell}, ["body", "stops", 1, "dwell"])
    half = [two[0], {"zone": zones[1], "dwell": {"median_min": 10}}, two[0]]
    assert "p90_min" in _refused(client, {**good, "stops": half}, ["body", "stops", 1, "dwell"])
    reversed_ = [two[0], {"zone": zones[1], "dwell": {"median_min": 10, "p90_min": 5}}, two[0]]
    _refused(client, {**good, "stops": reversed_}, ["body", "stops", 1, "dwell"])
    assert _refused(client, {**good, "depart": "soon"}, ["body", "depart"])
    assert _refused(client, {**good, "depart": "1462262400"}, ["body", "depart"])
    outside = [two[0], {"lat": 0.0, "lon": 0.0, "name": "sea"}]
    assert "zone" in _refused(client, {**good, "stops": outside}, ["body", "stops", 1])
    unknown = [two[0], {"zone": "no-such-zone"}]
    _refused(client, {**good, "stops": unknown}, ["body", "stops", 1])
    end_dwell = [two[0], {"zone": zones[1], "dwell": {"minutes": 5}}]
    assert "dwell" in _refused(client, {**good, "stops": end_dwell}, ["body", "stops"])
    same = [two[0], two[0]]
    _refused(client, {**good, "stops": same}, ["body", "stops"])
    _refused(client, {**good, "level": 1.5}, ["body", "level"])
    _refused(client, {**good, "quantiles": [0.5, 1.0]}, ["body", "quantiles"])
