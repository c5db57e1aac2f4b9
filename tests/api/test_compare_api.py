"""``POST /v1/compare`` and ``GET /v1/compare/reach``: the service's numbers, and refusals
naming the field."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from vrvm import TravelTimeModel
from vrvm.api import ApiSettings, create_app
from vrvm.services.map.places import place_from_zone
from vrvm.services.planning.compare import compare_matrix, compare_reach, compare_summary
from vrvm.services.versions.models import activate_version, publish_model
from vrvm.trips.home import Home

DEPART = "2024-03-12T08:00:00"
STAMP = pd.Timestamp(DEPART, tz="UTC")  # the demo model's zone


def _model(trips, n_members=2) -> TravelTimeModel:
    return TravelTimeModel(
        n_members=n_members, max_basis=60, kernel_widths=[1.5, 3.0], random_state=0
    ).fit(trips)


@pytest.fixture(scope="module")
def home(tiny_home, tiny_model, tmp_path_factory):
    """The tiny home with version 1 active and three more: 2, its trips 30 % slower;
    3, one member; 4, the trips in another time zone. Fewer than 2,000 trips each: no
    location trees, a few seconds in all."""
    home = tmp_path_factory.mktemp("compare") / "home"
    shutil.copytree(tiny_home, home)
    trips = Home(home).load_training_trips(tiny_model).head(1900)
    slow = trips.assign(travel_time_s=trips["travel_time_s"] * 1.3)
    few = trips.head(800)
    elsewhere = few.assign(start_time=few["start_time"].dt.tz_convert("America/Chicago"))
    for model in (_model(slow), _model(few, 1), _model(elsewhere)):
        publish_model(home, model, metrics=None, info={"kind": "test", "parent": 1})
    activate_version(home, 1)
    return home


@pytest.fixture(scope="module")
def models(home):
    store = Home(home).models
    return {v: TravelTimeModel.load(store.path(v)) for v in (1, 2)}


@pytest.fixture(scope="module")
def client(home):
    with TestClient(create_app(ApiSettings(home=home, check_every_s=0.05))) as client:
        yield client


@pytest.fixture(scope="module")
def zones(client):
    found = client.get("/v1/zones").json()["zones"]
    return sorted(found, key=lambda z: -z["trip_ends"])


def _points(zones, rows):
    return pd.DataFrame(
        {
            "label": [zones[i]["zone"] for i in rows],
            "lat": [zones[i]["lat"] for i in rows],
            "lon": [zones[i]["lon"] for i in rows],
        }
    )


def _body(zones, **extra):
    return {
        "version_a": 1,
        "version_b": 2,
        "origins": [{"zone": zones[0]["zone"]}, {"zone": zones[1]["zone"]}],
        "destinations": [{"zone": zones[i]["zone"]} for i in (2, 3, 4)],
        "depart": DEPART,
        "within_s": 900,
        **extra,
    }


def _close(found, expected) -> None:
    """Every column of ``expected`` in ``found``: numbers to 1e-9, the rest equal."""
    for name in expected.columns:
        want = expected[name].to_numpy()
        got = np.asarray(found[name].tolist())
        if want.dtype.kind == "f":
            assert got.astype(float) == pytest.approx(want, rel=1e-9, abs=1e-9), name
        else:
            assert got.tolist() == want.tolist(), name


def test_compare_equals_the_service_in_json_csv_and_parquet(client, zones, models):
    expected = compare_matrix(
        models[1],
        models[2],
        _points(zones, [0, 1]),
        _points(zones, [2, 3, 4]),
        STAMP,
        threshold_s=900,
    )
    answer = client.post("/v1/compare", json=_body(zones))
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["model_a"]["version"] == 1 and document["model_b"]["version"] == 2
    assert document["depart"] == "2024-03-12T08:00:00+00:00" and document["time_zone"] == "UTC"
    assert document["within_s"] == 900 and "independent" in document["independence"]
    pairs = pd.DataFrame(document["pairs"])
    assert len(pairs) == 6 and list(pairs["origin"][:3]) == [zones[0]["zone"]] * 3
    renamed = expected.rename(
        columns={
            "p_within_900s_a": "p_within_a",
            "p_within_900s_b": "p_within_b",
            "p_within_900s_change": "p_within_change",
        }
    )
    _close(pairs, renamed)
    assert (pairs["p_slower"] > 0.5).all()  # B is the model of slower trips
    summary = compare_summary(expected)
    assert document["summary"] == pytest.approx(summary, rel=1e-9)
    csv = client.post("/v1/compare", json=_body(zones), headers={"accept": "text/csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.headers["x-model-versions"] == "1,2" and csv.headers["x-time-zone"] == "UTC"
    _close(pd.read_csv(io.StringIO(csv.text), dtype={"origin": str, "destination": str}), expected)
    parquet = client.post(
        "/v1/compare", json=_body(zones), headers={"accept": "application/vnd.apache.parquet"}
    )
    _close(pq.read_table(io.BytesIO(parquet.content)).to_pandas(), expected)


def test_version_b_defaults_to_the_active_one_and_points_by_coordinates(client, zones, models):
    body = _body(zones, version_a=2, within_s=None)
    del body["version_b"]
    body["destinations"] = [{"lat": zones[5]["lat"], "lon": zones[5]["lon"], "name": "Here"}]
    document = client.post("/v1/compare", json=body).json()
    assert document["model_b"]["version"] == 1 and document["within_s"] is None
    destination = pd.DataFrame(
        {"label": ["Here"], "lat": [zones[5]["lat"]], "lon": [zones[5]["lon"]]}
    )
    expected = compare_matrix(models[2], models[1], _points(zones, [0, 1]), destination, STAMP)
    pairs = pd.DataFrame(document["pairs"])
    assert "p_within_a" not in pairs and list(pairs["destination"]) == ["Here", "Here"]
    _close(pairs, expected)
    assert (pairs["p_slower"] < 0.5).all()


def test_compare_reach_equals_the_service(client, zones, models, home):
    from vrvm.services.answers.live import LiveModel

    area = LiveModel(home).current().area
    place = place_from_zone(area, zones[0]["zone"])
    expected = compare_reach(models[1], models[2], area, place, STAMP, threshold_s=600)
    answer = client.get(
        "/v1/compare/reach",
        params={
            "version_a": 1,
            "version_b": 2,
            "origin_zone": zones[0]["zone"],
            "depart": DEPART,
            "within": 600,
        },
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/geo+json")
    document = answer.json()
    assert len(document["features"]) == len(area.grid)
    assert document["features"][0]["geometry"]["type"] == "Polygon"
    props = pd.DataFrame([f["properties"] for f in document["features"]])
    columns = [c for c in expected.columns if c not in ("number", "boundary", "zone")]
    renamed = expected[columns].rename(
        columns={
            "p_within_600s_a": "p_within_a",
            "p_within_600s_b": "p_within_b",
            "p_within_600s_change": "p_within_change",
        }
    )
    _close(props, renamed)
    assert props["zone"].tolist() == expected["zone"].astype(str).tolist()
    assert document["summary"] == pytest.approx(compare_summary(expected), rel=1e-9)
    assert document["origin"]["label"] == place.label and document["within_s"] == 600
    assert document["model_a"]["version"] == 1 and document["synthetic"] is True


@pytest.mark.parametrize(
    ("change", "loc", "words"),
    [
        ({"version_a": 99}, ["body", "version_a"], "no version 99; its versions are 1, 2, 3, 4"),
        ({"version_b": 99}, ["body", "version_b"], "no version 99"),
        ({"version_a": 3}, ["body", "version_a"], "one member"),
        ({"version_a": 4}, ["body"], "different areas"),
        ({"version_a": 0}, ["body", "version_a"], "greater than or equal to 1"),
        ({"origins": []}, ["body", "origins"], "at least 1"),
        ({"destinations": []}, ["body", "destinations"], "at least 1"),
        ({"depart": "9999-12-31"}, ["body", "depart"], "outside the supported range"),
        ({"depart": "-1"}, ["body", "depart"], "not a number"),
        ({"within_s": 0}, ["body", "within_s"], "greater than 0"),
        ({"destinations": [{"zone": "nowhere"}]}, ["body", "destinations", 0], "GET /v1/zones"),
        ({"destinations": [{"lat": 1.0, "lon": 2.0}]}, ["body", "destinations", 0], "nearest"),
        ({"version": 2}, ["body", "version"], "Extra inputs"),
    ],
)
def test_bad_comparisons_are_a_422_naming_the_field(client, zones, change, loc, words):
    answer = client.post("/v1/compare", json=_body(zones, **change))
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["detail"]
    assert error["loc"] == loc
    assert words in error["msg"]


def test_too_many_pairs_and_a_model_directory(home, zones):
    settings = ApiSettings(home=home, check_every_s=0.05, max_pairs=400)  # 4 compared pairs
    with TestClient(create_app(settings)) as small:
        answer = small.post("/v1/compare", json=_body(zones))
        assert answer.status_code == 422
        (error,) = answer.json()["detail"]
        assert error["loc"] == ["body"]
        assert error["msg"].startswith("6 pairs is more than the limit of 4 per comparison")
        assert small.post("/v1/compare", json=_body(zones, origins=[{"zone": zones[0]["zone"]}]))
    directory = ApiSettings(model_dir=Home(home).models.path(1), check_every_s=0.05)
    with TestClient(create_app(directory)) as one:
        answer = one.post("/v1/compare", json=_body(zones))
        assert answer.status_code == 422
        assert answer.json()["detail"][0]["loc"] == ["body", "version_a"]
        assert "one model directory" in answer.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ({"version_a": 99}, ["query", "version_a"]),
        ({"version_a": 4}, ["query"]),
        ({"version_a": None}, ["query", "version_a"]),
        ({"origin_zone": None, "origin": "1.0,2.0"}, ["query", "origin"]),
        ({"origin_zone": None}, ["query", "origin"]),
        ({"depart": "0001-01-01T00:00:00"}, ["query", "depart"]),
        ({"within": -5}, ["query", "within"]),
    ],
)
def test_bad_reach_comparisons_are_a_422_naming_the_field(client, zones, query, loc):
    params = {"version_a": 2, "origin_zone": zones[0]["zone"], "depart": DEPART, **query}
    answer = client.get(
        "/v1/compare/reach", params={k: v for k, v in params.items() if v is not None}
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == loc


def test_the_token_guards_both_and_the_schema_documents_them(home, zones):
    settings = ApiSettings(home=home, check_every_s=0.05, token="s3cret-token")
    with TestClient(create_app(settings)) as guarded:
        assert guarded.post("/v1/compare", json=_body(zones)).status_code == 401
        reach = {"version_a": 2, "origin_zone": zones[0]["zone"]}
        assert guarded.get("/v1/compare/reach", params=reach).status_code == 401
        bearer = {"Authorization": "Bearer s3cret-token"}
        small = _body(zones, destinations=[{"zone": zones[2]["zone"]}])
        assert guarded.post("/v1/compare", json=small, headers=bearer).status_code == 200
        paths = guarded.get("/openapi.json").json()["paths"]
    post = paths["/v1/compare"]["post"]
    assert post["tags"] == ["plan"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/CompareRequest"
    )
    content = post["responses"]["200"]["content"]
    assert content["application/json"]["schema"]["$ref"].endswith("/CompareResponse")
    assert {"text/csv", "application/vnd.apache.parquet"} <= set(content)
    get = paths["/v1/compare/reach"]["get"]
    assert get["tags"] == ["maps"]
    assert get["responses"]["200"]["content"]["application/geo+json"]["schema"]["$ref"].endswith(
        "/CompareReachMap"
    )
    assert {"401", "422", "500", "503"} <= set(post["responses"]) & set(get["responses"])
