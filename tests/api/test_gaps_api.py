"""``POST /v1/gaps``: the service's numbers as JSON, CSV and GeoJSON, and refusals naming
the field."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from vrvm.api import ApiSettings, create_app
from vrvm.services.map.places import place_from_zone
from vrvm.services.planning.data_gaps import gaps_summary, origin_gaps, zone_gaps

DEPARTS = ["2024-03-12T08:00:00", "2024-03-12T17:30:00"]
STAMPS = [pd.Timestamp(d, tz="UTC") for d in DEPARTS]  # the demo model's zone


@pytest.fixture(scope="module")
def client(tiny_client):
    return tiny_client


@pytest.fixture(scope="module")
def served(tiny_served):
    return tiny_served


def _close(found: pd.DataFrame, expected: pd.DataFrame, rel=1e-9) -> None:
    for name in expected.columns.drop(["boundary", "geometry"], errors="ignore"):
        want = expected[name].to_numpy()
        got = found[name].to_numpy()
        if want.dtype.kind == "f":
            got = np.array([np.nan if v is None else v for v in got], dtype=float)
            assert got == pytest.approx(want, rel=rel, abs=1e-12, nan_ok=True), name
        else:
            assert [str(v) for v in got] == [str(v) for v in want], name


def test_zone_gaps_equal_the_service(client, served):
    expected = zone_gaps(served.model, served.area, STAMPS, max_destinations=8)
    answer = client.post("/v1/gaps", json={"departures": DEPARTS, "max_destinations": 8})
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["scale"] == "log-seconds" and document["origin"] is None
    assert document["departures"] == [s.isoformat() for s in STAMPS]
    assert document["demand_source"] == expected.attrs["demand"]
    assert document["synthetic"] is True and document["model"]["version"] == 1
    assert document["epistemic_share"] == pytest.approx(
        gaps_summary(expected)["epistemic_share"], rel=1e-9
    )
    zones = pd.DataFrame(document["zones"])
    assert len(zones) == len(served.area.grid)
    assert "epistemic_sd_s" not in zones and "support_trips_at_time" not in zones  # unset
    _close(zones, expected)
    assert sorted(zones["rank"]) == list(range(1, len(zones) + 1))


def test_gaps_from_an_origin_with_demand_equal_the_service(client, served):
    zone = str(served.area.grid["zone"].iloc[3])
    demand = np.linspace(1.0, 2.0, len(served.area.grid))
    place = place_from_zone(served.area, zone)
    expected = origin_gaps(served.model, served.area, place, STAMPS[:1], demand=demand)
    body = {"departures": DEPARTS[:1], "origin": {"zone": zone}, "demand": demand.tolist()}
    document = client.post("/v1/gaps", json=body).json()
    assert document["origin"] == {"lat": place.lat, "lon": place.lon, "label": place.label}
    assert document["demand_source"] == "the uploaded demand"
    zones = pd.DataFrame(document["zones"])
    _close(zones, expected.drop(columns=["origin_lat", "origin_lon"]))
    (own,) = [z for z in document["zones"] if z["zone"] == zone]
    assert own["epistemic_share"] is None and own["rank"] == len(zones)  # no figures there


def test_csv_and_geojson_by_the_accept_header(client, served):
    expected = zone_gaps(served.model, served.area, STAMPS[:1], max_destinations=5)
    body = {"departures": DEPARTS[:1], "max_destinations": 5}
    csv = client.post("/v1/gaps", json=body, headers={"accept": "text/csv"})
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert csv.headers["x-model-version"] == "1" and csv.headers["x-time-zone"] == "UTC"
    table = pd.read_csv(io.StringIO(csv.text), dtype={"zone": str})
    assert table["data"].str.startswith("SYNTHETIC").all()
    _close(table, expected.drop(columns=["label"]), rel=1e-5)  # written to 6 digits
    geo = client.post("/v1/gaps", json=body, headers={"accept": "application/geo+json"})
    assert geo.headers["content-type"].startswith("application/geo+json")
    document = geo.json()
    assert document["type"] == "FeatureCollection" and document["synthetic"] is True
    props = pd.DataFrame([f["properties"] for f in document["features"]])
    _close(props, expected)


@pytest.mark.parametrize(
    ("change", "loc", "words"),
    [
        ({"departures": []}, ["body", "departures"], "at least 1"),
        ({"departures": DEPARTS * 13}, ["body", "departures"], "at most 24"),
        ({"departures": ["9999-12-31"]}, ["body", "departures", 0], "supported range"),
        ({"departures": [DEPARTS[0], "-1"]}, ["body", "departures", 1], "not a number"),
        ({"max_destinations": 0}, ["body", "max_destinations"], "greater than or equal to 1"),
        ({"demand": [1.0, 2.0]}, ["body", "demand"], "2 weights for"),
        ({"demand": [-1.0]}, ["body", "demand", 0], "greater than or equal to 0"),
        ({"origin": {"lat": 1.0, "lon": 2.0}}, ["body", "origin"], "nearest"),
        ({"origin": {"zone": "nowhere"}}, ["body", "origin"], "GET /v1/zones"),
        ({"format": "csv"}, ["body", "format"], "Extra inputs"),
    ],
)
def test_bad_requests_are_a_422_naming_the_field(client, change, loc, words):
    answer = client.post("/v1/gaps", json={"departures": DEPARTS[:1], **change})
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == loc and words in error["msg"]


def test_zero_demand_too_much_work_and_the_token(tiny_home, served):
    n = len(served.area.grid)
    settings = ApiSettings(home=tiny_home, check_every_s=0.05, max_pairs=1000, token="s3cret")
    bearer = {"Authorization": "Bearer s3cret"}
    with TestClient(create_app(settings)) as guarded:
        assert guarded.post("/v1/gaps", json={"departures": DEPARTS}).status_code == 401
        zero = {"departures": DEPARTS[:1], "demand": [0.0] * n, "origin": {"zone": "x"}}
        (error,) = guarded.post("/v1/gaps", json=zero, headers=bearer).json()["detail"]
        assert error["loc"] == ["body", "demand"] and "zero in every zone" in error["msg"]
        answer = guarded.post("/v1/gaps", json={"departures": DEPARTS}, headers=bearer)
        assert answer.status_code == 422
        (error,) = answer.json()["detail"]
        assert error["loc"] == ["body", "max_destinations"]
        assert "more than the limit of 5,000" in error["msg"]
        paths = guarded.get("/openapi.json").json()["paths"]
    post = paths["/v1/gaps"]["post"]
    assert post["tags"] == ["plan"]
    content = post["responses"]["200"]["content"]
    assert content["application/json"]["schema"]["$ref"].endswith("/GapsResponse")
    assert {"text/csv", "application/geo+json"} <= set(content)
    assert {"401", "422", "500", "503"} <= set(post["responses"])
