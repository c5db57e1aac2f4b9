"""``POST /v1/site``: the service's chosen sites and objective over HTTP, and refusals
naming the field."""

from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from vrvm.api import ApiSettings, create_app
from vrvm.services.planning.siting import area_points, fewest_bases, site_bases

DEPARTS = ["2024-03-12T08:00:00", "2024-03-12T17:30:00"]
STAMPS = [pd.Timestamp(d, tz="UTC") for d in DEPARTS]  # the demo model's zone


@pytest.fixture(scope="module")
def client(tiny_client):
    return tiny_client


@pytest.fixture(scope="module")
def served(tiny_served):
    return tiny_served


@pytest.fixture(scope="module")
def busy(served):
    """Ten busy zones: the candidates."""
    grid = served.area.grid.sort_values("n_points", ascending=False, kind="stable")
    return grid["zone"].astype(str).head(10).tolist()


def _post(client, **body):
    body.setdefault("within_s", 480)
    body.setdefault("departures", DEPARTS)
    return client.post("/v1/site", json=body)


def test_sites_equal_the_service(client, served, busy):
    expected = site_bases(
        served.model,
        area_points(served.area, busy),
        area_points(served.area, what="demand"),
        3,
        480,
        STAMPS,
    )
    answer = _post(client, bases=3, candidates=[{"zone": z} for z in busy], assignments=True)
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["problem"] == "coverage" and document["status"] == "optimal"
    assert [s["id"] for s in document["sites"]] == expected.sites["id"].tolist()
    assert document["objective"] == pytest.approx(expected.objective, rel=1e-9)
    assert document["greedy_objective"] == pytest.approx(expected.greedy_objective, rel=1e-9)
    assert document["greedy_sites"] == list(expected.greedy_sites)
    assert document["gap"] == pytest.approx(expected.gap, rel=1e-6, abs=1e-12)
    assert document["bound"] >= document["objective"] - 1e-9
    assert document["departures"] == [s.isoformat() for s in STAMPS]
    assert document["synthetic"] is True and document["model"]["version"] == 1
    assert "best of the 3 bases" in document["definition"]
    shares = [s["demand_share"] for s in document["sites"]]
    assert sum(shares) == pytest.approx(1.0)
    table = expected.demand_table()
    assignments = pd.DataFrame(document["assignments"])
    assert assignments["site"].tolist() == table["site"].tolist()
    assert assignments["probability"].to_numpy() == pytest.approx(table["probability"], rel=1e-9)


def test_fixed_bases_and_named_points(client, served, busy):
    grid = served.area.grid.set_index(served.area.grid["zone"].astype(str))
    far = grid.loc[busy[-1]]
    candidates = [{"zone": z} for z in busy[:6]]
    demand = [{"zone": z, "weight": w} for z, w in zip(busy, range(1, 11), strict=True)]
    fixed = [{"name": "depot", "lat": float(far["lat"]), "lon": float(far["lon"])}]
    answer = _post(client, bases=2, candidates=candidates, demand=demand, fixed=fixed)
    assert answer.status_code == 200, answer.text
    sites = answer.json()["sites"]
    assert sites[0]["id"] == "depot" and sites[0]["fixed"] is True
    assert len(sites) == 2 and not sites[1]["fixed"]
    expected = site_bases(
        served.model,
        area_points(served.area, busy[:6]),
        area_points(served.area, busy).assign(weight=range(1, 11)),
        2,
        480,
        STAMPS,
        fixed=pd.DataFrame({"id": ["depot"], "lat": [far["lat"]], "lon": [far["lon"]]}),
    )
    assert [s["id"] for s in sites] == expected.sites["id"].tolist()
    assert answer.json()["objective"] == pytest.approx(expected.objective, rel=1e-9)


def test_fewest_bases_equal_the_service(client, served, busy):
    expected = fewest_bases(
        served.model,
        area_points(served.area, busy),
        area_points(served.area, busy, what="demand"),
        600,
        STAMPS[:1],
        0.5,
        share=0.8,
    )
    answer = _post(
        client,
        candidates=[{"zone": z} for z in busy],
        demand=[
            {"zone": z, "weight": w} for z, w in zip(busy, expected.demand["weight"], strict=True)
        ],
        within_s=600,
        departures=DEPARTS[:1],
        min_probability=0.5,
        share=0.8,
    )
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["problem"] == "cover"
    assert sorted(s["id"] for s in document["sites"]) == sorted(expected.sites["id"])
    assert document["objective"] == expected.objective == len(document["sites"])
    assert document["covered_share"] == pytest.approx(expected.covered_share, rel=1e-9)
    assert document["covered_share"] >= 0.8 - 1e-9
    assert "with probability at least 0.5" in document["definition"]


@pytest.mark.parametrize(
    ("body", "loc", "words"),
    [
        ({"bases": 2, "candidates": [{"zone": "no-such-zone"}]}, ["body", "candidates", 0], "zone"),
        ({"bases": 2, "demand": [{"zone": "no-such-zone"}]}, ["body", "demand", 0], "zone"),
        ({"bases": 2, "candidates": []}, ["body", "candidates"], "at least 1"),
        ({"bases": 2, "demand": []}, ["body", "demand"], "at least 1"),
        ({"bases": 11, "busy": 10}, ["body", "bases"], "only 10 candidate"),
        ({"bases": 0}, ["body", "bases"], "greater than or equal to 1"),
        ({"bases": 2, "min_probability": 0.5}, ["body"], "either bases"),
        ({}, ["body"], "either bases"),
        ({"bases": 2, "share": 0.5}, ["body"], "share goes with"),
        ({"min_probability": 1.5}, ["body", "min_probability"], "less than or equal to 1"),
        ({"bases": 2, "within_s": -1}, ["body", "within_s"], "greater than 0"),
        ({"bases": 2, "departures": []}, ["body", "departures"], "at least 1"),
        ({"bases": 2, "departures": ["soon"]}, ["body", "departures", 0], "datetime"),
        (
            {"bases": 1, "demand": [{"zone": "Z", "weight": -1}]},
            ["body", "demand", 0, "weight"],
            "",
        ),
        ({"bases": 2, "busy": 2, "fixed": "busy3"}, ["body", "bases"], "cannot keep"),
    ],
)
def test_bad_input_names_the_field(client, busy, body, loc, words):
    body = dict(body)
    if "busy" in body:
        body["candidates"] = [{"zone": z} for z in busy[: body.pop("busy")]]
    if body.get("fixed") == "busy3":
        body["fixed"] = [{"zone": z} for z in busy[:3]]
    if body.get("demand") == [{"zone": "Z", "weight": -1}]:
        body["demand"] = [{"zone": busy[0], "weight": -1}]
    answer = _post(client, **body)
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == loc
    assert words in error["msg"]


def test_repeated_ids_are_refused(client, busy):
    answer = _post(client, bases=1, candidates=[{"zone": busy[0]}, {"zone": busy[0]}])
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body", "candidates"] and busy[0] in error["msg"]


def test_an_infeasible_target_names_the_zones(client, busy):
    answer = _post(
        client,
        candidates=[{"zone": busy[0]}],
        demand=[{"zone": z} for z in busy],
        within_s=1,
        departures=DEPARTS[:1],
        min_probability=0.99,
    )
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body", "min_probability"]
    assert error["unreachable"] and set(error["unreachable"]) <= set(busy)
    assert error["unreachable"][0] in error["msg"]


def test_the_work_limit_names_the_command(tiny_home, busy):
    settings = ApiSettings(home=tiny_home, check_every_s=0.05, max_pairs=10)
    with TestClient(create_app(settings)) as small:
        answer = _post(small, bases=1, candidates=[{"zone": z} for z in busy])
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body"] and "vrvm site" in error["msg"] and "100" in error["msg"]
