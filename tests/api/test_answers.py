"""Every answer is its documented response model: in the OpenAPI schema, on the wire, and
checked before it is sent (a malformed answer is a JSON 500, never a malformed 200)."""

from __future__ import annotations

import logging

import numpy as np
from fastapi.testclient import TestClient

from vrvm.api import ApiSettings, batching, create_app, schemas
from vrvm.api import app as api_app
from vrvm.api._errors import INTERNAL_ERROR
from vrvm.services.answers.live import LiveModel
from vrvm.services.versions.models import active_model_path

DEPART = "2024-03-12T08:00:00"

# the response model of each route's 200, by name in the OpenAPI components
MAPS = ("/v1/reach", "/v1/isochrone", "/v1/coverage", "/v1/compare/reach")
ANSWERS = {
    ("post", "/v1/compare"): "CompareResponse",
    ("get", "/v1/compare/reach"): "CompareReachMap",
    ("post", "/v1/gaps"): "GapsResponse",
    ("post", "/v1/stops"): "StopsResponse",
    ("post", "/v1/site"): "SiteResponse",
    ("get", "/healthz"): "Health",
    ("get", "/readyz"): "Ready",
    ("get", "/v1/models"): "ModelsResponse",
    ("get", "/v1/models/active"): "ActiveModel",
    ("get", "/v1/zones"): "ZonesResponse",
    ("post", "/v1/predict"): "PredictResponse",
    ("post", "/v1/matrix"): "MatrixLong|MatrixNested",
    ("get", "/v1/reach"): "ReachMap",
    ("get", "/v1/isochrone"): "IsochroneMap",
    ("post", "/v1/coverage"): "CoverageMap",
}


def _refs(schema) -> set[str]:
    """The component names a schema refers to (``$ref``), at any depth."""
    if isinstance(schema, dict):
        found = {schema["$ref"].rsplit("/", 1)[-1]} if "$ref" in schema else set()
        return found.union(*(_refs(value) for value in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_refs(value) for value in schema))
    return set()


def test_every_route_documents_its_answers(client):
    schema = client.get("/openapi.json").json()
    operations = {(method, path) for path, item in schema["paths"].items() for method in item}
    assert operations == set(ANSWERS)  # a new route is added here with its model
    components = schema["components"]["schemas"]
    for (method, path), model in ANSWERS.items():
        responses = schema["paths"][path][method]["responses"]
        content = dict(responses["200"]["content"])
        kind = "application/geo+json" if path in MAPS else "application/json"
        assert set(model.split("|")) == _refs(content.pop(kind)["schema"]), (method, path)
        assert all("schema" in media for media in content.values()), (method, path)  # CSV...
        errors = {status: answer for status, answer in responses.items() if status != "200"}
        assert "500" in errors, (method, path)
        if path.startswith("/v1/"):
            assert {"401", "503"} <= set(errors), (method, path)
        for status, answer in errors.items():  # every error's body is documented, as JSON
            (error,) = answer["content"].values()
            assert set(answer["content"]) == {"application/json"}, (method, path, status)
            assert _refs(error["schema"]) or error["schema"]["properties"], (method, path, status)
    assert set(components["Problem"]["properties"]) == {"detail"}
    assert set(components["NotReady"]["properties"]) == {"status", "reason"}
    matrix = schema["paths"]["/v1/matrix"]["post"]["responses"]["200"]["content"]
    assert set(matrix) == {"application/json", "text/csv", "application/vnd.apache.parquet"}


def test_every_answer_is_its_model_on_the_wire(client, zones):
    a, b = zones[0]["zone"], zones[3]["zone"]
    query = {"origin_zone": a, "within": 900, "depart": DEPART}
    matrix = {
        "origins": [{"zone": a}, {"lat": zones[1]["lat"], "lon": zones[1]["lon"]}],
        "destinations": [{"zone": b}],
        "depart": DEPART,
        "quantiles": [0.9],
        "within_s": [600],
        "indices": True,
        "support": True,
    }
    answers = [
        (schemas.Health, client.get("/healthz")),
        (schemas.Ready, client.get("/readyz")),
        (schemas.ModelsResponse, client.get("/v1/models")),
        (schemas.ActiveModel, client.get("/v1/models/active")),
        (schemas.ZonesResponse, client.get("/v1/zones")),
        (
            schemas.PredictResponse,
            client.post(
                "/v1/predict",
                json={
                    "trips": [
                        {"origin": {"zone": a}, "destination": {"zone": b}, "depart": DEPART}
                    ],
                    "quantiles": [0.5, 0.9],
                    "within_s": [600],
                },
            ),
        ),
        (schemas.MatrixLong, client.post("/v1/matrix", json=matrix)),
        (schemas.MatrixNested, client.post("/v1/matrix", json={**matrix, "layout": "nested"})),
        (schemas.ReachMap, client.get("/v1/reach", params=query)),
        (schemas.IsochroneMap, client.get("/v1/isochrone", params=query)),
        (
            schemas.CoverageMap,
            client.post(
                "/v1/coverage", json={"bases": [{"zone": a}], "within_s": 480, "depart": DEPART}
            ),
        ),
    ]
    for model, answer in answers:
        assert answer.status_code == 200, (model.__name__, answer.text)
        document = model.model_validate_json(answer.content)
        # nothing left out or added on the way: the model writes the same document
        assert document.model_dump(mode="json", exclude_unset=True) == answer.json()
    assert "warning" not in client.get("/readyz").json()  # absent, not null, when none
    pair = client.post("/v1/matrix", json=matrix).json()["pairs"][0]
    assert type(pair["support_trips"]) is int and type(pair["thin"]) is bool
    assert type(pair["mean_s"]) is float


def test_readiness_answers_keep_their_shapes(vrvm_home, make_client, tmp_path):
    live = LiveModel(vrvm_home, check_every_s=3600)
    with TestClient(create_app(ApiSettings(home=vrvm_home), live=live)) as client:
        live.last_error = "version 2 could not be loaded: its file is damaged"
        ready = client.get("/readyz").json()
    assert list(ready) == ["status", "model", "warning"]
    assert ready["warning"].startswith("version 2")
    empty = make_client(home=tmp_path / "empty").get("/readyz")
    assert empty.status_code == 503
    assert list(empty.json()) == ["status", "reason"] and empty.json()["status"] == "not ready"


def test_a_model_directory_is_answered_without_a_version(vrvm_home, make_client):
    _, path = active_model_path(vrvm_home)
    client = make_client(home=None, model_dir=path)
    models = client.get("/v1/models").json()
    assert models["versions"] == [] and models["serving"]["version"] is None
    assert client.get("/v1/models/active").json()["version"] is None


def _refused_as_a_fault(answer, caplog, field: str, *hidden: str) -> None:
    assert answer.status_code == 500, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {"detail": INTERNAL_ERROR}
    logged = "\n".join(r.getMessage() + "\n" + (r.exc_text or "") for r in caplog.records)
    assert "failed" in logged and "an answer is not its response model" in logged
    assert field in logged
    for value in hidden:  # the log names the field, not the answer's values
        assert value not in logged


def test_a_malformed_answer_is_a_500_not_a_malformed_200(client, zones, monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger="vrvm.api")
    trip = {"origin": {"zone": zones[0]["zone"]}, "destination": {"zone": zones[2]["zone"]}}
    body = {"trips": [{**trip, "depart": DEPART}]}
    good = client.post("/v1/predict", json=body)
    assert good.status_code == 200

    # a service that answers a wrong type: a version numbered with text
    def odd_versions(home):
        return [{"version": "latest-and-greatest", "name": "x"}]

    monkeypatch.setattr(api_app, "version_records", odd_versions)
    _refused_as_a_fault(client.get("/v1/models"), caplog, "versions.0.version", "latest-and")

    # a service that answers a value JSON has no word for: NaN was a 422 before (the
    # request blamed), or null in a field documented as a number
    real = batching.trip_summaries

    def no_mean(*args, **kwargs):
        table = real(*args, **kwargs)
        table["mean_s"] = np.nan
        return table

    monkeypatch.setattr(batching, "trip_summaries", no_mean)
    caplog.clear()
    _refused_as_a_fault(
        client.post("/v1/predict", json=body), caplog, "results.0.mean_s", zones[0]["zone"]
    )

    # a handler whose answer is not its model at all: FastAPI's own check catches it
    monkeypatch.setattr(api_app, "_matrix_answer", lambda *args: {"pairs": "Downtown, 08:00"})
    caplog.clear()
    matrix = {"origins": [trip["origin"]], "destinations": [trip["destination"]], "depart": DEPART}
    _refused_as_a_fault(client.post("/v1/matrix", json=matrix), caplog, "response", "Downtown")

    # a map without its features
    monkeypatch.setattr(
        api_app.coverage_svc, "coverage_geojson", lambda *a, **k: b'{"type": "FeatureCollection"}'
    )
    caplog.clear()
    query = {"origin_zone": zones[0]["zone"], "within": 600}
    _refused_as_a_fault(client.get("/v1/reach", params=query), caplog, "features")

    monkeypatch.undo()
    again = client.post("/v1/predict", json=body)  # and the next answer is fine
    assert again.status_code == 200 and again.json() == good.json()


def test_a_too_long_zone_id_in_a_query_is_the_requests_fault(client):
    zone = "z" * 65
    answer = client.get("/v1/reach", params={"origin_zone": zone, "within": 600})
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", "origin_zone"] and "at most 64" in error["msg"]
    assert zone not in answer.text
