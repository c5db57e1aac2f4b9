"""Matrix, maps, models, the token, CORS, model swaps and the real server on 127.0.0.1."""

from __future__ import annotations

import http.client
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pandas as pd
import pyarrow.parquet as pq
import pytest
from fastapi import FastAPI

from tests._waiting import START_S, wait_until
from vrvm.api._errors import INTERNAL_ERROR, InternalErrors
from vrvm.services.answers.live import LiveModel
from vrvm.services.answers.matrix import matrix_frame
from vrvm.services.map.places import place_from_zone
from vrvm.services.planning.coverage import coverage_grid
from vrvm.services.versions.models import publish_model


def _matrix_body(zones, m=3, n=4, **extra):
    return {
        "origins": [{"zone": z["zone"]} for z in zones[:m]],
        "destinations": [{"zone": z["zone"]} for z in zones[:n]],
        "depart": "2024-03-12T08:00:00",
        "quantiles": [0.9],
        "within_s": [900],
        **extra,
    }


def test_matrix_in_every_layout_equals_the_service(client, zones, vrvm_home):
    served = LiveModel(vrvm_home).current()
    points = pd.DataFrame(
        {
            "label": [z["zone"] for z in zones[:4]],
            "lat": [z["lat"] for z in zones[:4]],
            "lon": [z["lon"] for z in zones[:4]],
        }
    )
    expected = matrix_frame(
        served.model,
        points.iloc[:3],
        points,
        pd.Timestamp("2024-03-12 08:00", tz="UTC"),
        quantiles=[0.9],
        thresholds_s=[900],
    )
    long = client.post("/v1/matrix", json=_matrix_body(zones)).json()
    pairs = pd.DataFrame(long["pairs"])
    assert len(pairs) == 12 and list(pairs["origin"][:4]) == [zones[0]["zone"]] * 4
    assert pairs["q0.9_s"].to_numpy() == pytest.approx(expected["q0.9_s"].to_numpy(), rel=1e-9)
    nested = client.post("/v1/matrix", json=_matrix_body(zones, layout="nested")).json()
    assert nested["values"]["median_s"][2][3] == pytest.approx(
        expected["median_s"].iloc[11], rel=1e-9
    )
    assert nested["destinations"] == [z["zone"] for z in zones[:4]]
    csv = client.post("/v1/matrix", json=_matrix_body(zones), headers={"accept": "text/csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert pd.read_csv(io.StringIO(csv.text))["p_within_900s"].to_numpy() == pytest.approx(
        expected["p_within_900s"].to_numpy(), abs=1e-12
    )
    parquet = client.post(
        "/v1/matrix", json=_matrix_body(zones), headers={"accept": "application/vnd.apache.parquet"}
    )
    table = pq.read_table(io.BytesIO(parquet.content)).to_pandas()
    assert table["mean_s"].to_numpy() == pytest.approx(expected["mean_s"].to_numpy(), rel=1e-12)
    with_all = client.post(
        "/v1/matrix", json=_matrix_body(zones, indices=True, support=True)
    ).json()
    assert {"misery_index", "support_trips", "thin"} <= set(with_all["pairs"][0])


def test_matrix_pairs_are_limited(make_client, zones):
    small = make_client(max_pairs=10)
    answer = small.post("/v1/matrix", json=_matrix_body(zones))
    assert answer.status_code == 422 and "limit of 10" in answer.json()["detail"][0]["msg"]


def test_reach_isochrone_and_coverage_are_geojson(client, zones, vrvm_home):
    served = LiveModel(vrvm_home).current()
    reach = client.get(
        "/v1/reach",
        params={"origin_zone": zones[0]["zone"], "within": 600, "depart": "2024-03-12T08:00:00"},
    )
    assert reach.status_code == 200 and reach.headers["content-type"] == "application/geo+json"
    document = reach.json()
    assert len(document["features"]) == len(served.area.grid)
    place = place_from_zone(served.area, zones[0]["zone"])
    grid = coverage_grid(
        served.model, served.area, place, pd.Timestamp("2024-03-12 08:00", tz="UTC"), 10.0
    )
    by_zone = {f["properties"]["zone"]: f["properties"] for f in document["features"]}
    some = grid.iloc[7]
    assert by_zone[some["zone"]]["p_within_10min"] == pytest.approx(some["prob_within"], abs=1e-9)
    assert document["model"]["version"] == 1
    typed = client.get(
        "/v1/reach", params={"origin": f"{zones[0]['lat']},{zones[0]['lon']}", "within": 600}
    )
    assert typed.status_code == 200
    iso = client.get(
        "/v1/isochrone",
        params=[("origin_zone", zones[0]["zone"]), ("within", 900), ("p", 0.5), ("p", 0.9)],
    )
    assert iso.status_code == 200
    assert [f["properties"]["p"] for f in iso.json()["features"]] == [0.5, 0.9]
    cover = client.post(
        "/v1/coverage",
        json={
            "bases": [
                {"zone": zones[0]["zone"]},
                {"name": "B", "lat": zones[3]["lat"], "lon": zones[3]["lon"]},
            ],
            "within_s": 480,
            "depart": "2024-03-12T08:00:00",
        },
    )
    assert cover.status_code == 200, cover.text
    assert [f["properties"]["name"] for f in cover.json()["bases"]["features"]] == [
        served.area.grid["label"].iloc[served.area.zone_index[zones[0]["zone"]]],
        "B",
    ]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"within": 600}, "either origin=lat,lon or origin_zone=ID"),
        ({"origin": "north", "within": 600}, "expected 'lat,lon'"),
        ({"origin": "10,10", "within": 600}, "outside the service area"),
        ({"origin_zone": "nope", "within": 600}, "not in the service area"),
        ({"origin_zone": "nope", "within": -5}, "between 0 and one week"),
    ],
)
def test_map_queries_refuse_bad_places(client, zones, params, words):
    if params.get("within", 0) < 0:
        params = {**params, "origin_zone": zones[0]["zone"]}
    answer = client.get("/v1/reach", params=params)
    assert answer.status_code == 422
    assert words in answer.json()["detail"][0]["msg"]


def test_models_and_zones(client, zones):
    models = client.get("/v1/models").json()
    assert models["serving"]["version"] == 1
    (version,) = models["versions"]
    assert version["active"] and version["synthetic"] and version["kind"] == "demo"
    active = client.get("/v1/models/active").json()
    assert active["n_members"] == 2 and "SYNTHETIC" in active["trained_on"]
    assert active["zones"]["count"] == len(zones)


def test_a_token_guards_every_endpoint_but_the_health_checks(make_client):
    guarded = make_client(token="s3cret")
    assert guarded.get("/healthz").status_code == 200
    assert guarded.get("/readyz").status_code == 200
    assert guarded.get("/v1/models").status_code == 401
    wrong = guarded.get("/v1/models", headers={"Authorization": "Bearer s3cre"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    right = guarded.get("/v1/models", headers={"Authorization": "Bearer s3cret"})
    assert right.status_code == 200


def test_cors_is_off_unless_configured(make_client):
    origin = {"Origin": "https://gis.example.org"}
    closed = make_client().get("/v1/models", headers=origin)
    assert "access-control-allow-origin" not in closed.headers
    opened = make_client(cors_origins=("https://gis.example.org",)).get(
        "/v1/models", headers=origin
    )
    assert opened.headers["access-control-allow-origin"] == "https://gis.example.org"


def test_a_published_version_is_served_without_a_failed_request(client, zones, vrvm_home):
    body = {
        "trips": [
            {
                "origin": {"zone": zones[0]["zone"]},
                "destination": {"zone": zones[4]["zone"]},
                "depart": "2024-03-12T08:00:00",
            }
        ]
    }
    seen, failures = [], []
    stop = threading.Event()

    def ask():
        while not stop.is_set():
            answer = client.post("/v1/predict", json=body)
            if answer.status_code != 200:
                failures.append(answer.text)
            else:
                seen.append(answer.json()["model"]["version"])

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(seen) >= 3, START_S, "answers before the publication")
        model = LiveModel(vrvm_home).current().model
        version = publish_model(vrvm_home, model, metrics=None, info={"kind": "test", "parent": 1})
        # the new version is served, and answers keep coming after the swap
        wait_until(lambda: version in seen, START_S, f"an answer of version {version}")
        wait_until(lambda: len(seen) - seen.index(version) > 10, START_S, "answers after the swap")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not failures
    assert seen[0] == 1 and seen[-1] == version == 2
    assert client.get("/readyz").json()["model"]["version"] == 2


def test_an_empty_home_is_not_ready(make_client, tmp_path):
    empty = make_client(home=tmp_path / "empty")
    assert empty.get("/healthz").status_code == 200
    assert empty.get("/readyz").status_code == 503
    answer = empty.get("/v1/models")
    assert answer.status_code == 503 and "no model" in answer.json()["detail"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow_process
def test_vrvm_serve_answers_on_127_0_0_1_with_two_workers(vrvm_home, zones, tmp_path):
    port = _free_port()
    env = {**os.environ, "VRVM_API_TOKEN": "t0ken"}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:  # a file, not a pipe: a full pipe would block the server
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vrvm",
                "serve",
                "--home",
                str(vrvm_home),
                "--port",
                str(port),
                "--workers",
                "2",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(base + "/readyz", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(
            ready,
            START_S,
            "vrvm serve ready (/readyz 200)",
            poll_s=0.5,
            process=server,
            details=log.read_text,
        )
        headers = {"Authorization": "Bearer t0ken"}
        body = {
            "trips": [
                {
                    "origin": {"zone": zones[0]["zone"]},
                    "destination": {"zone": zones[2]["zone"]},
                    "depart": "2024-03-12T08:00:00",
                }
            ],
            "within_s": [600],
        }
        with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
            answers = [http.post("/v1/predict", json=body) for _ in range(4)]
            assert all(a.status_code == 200 for a in answers)
            assert len({a.json()["results"][0]["mean_s"] for a in answers}) == 1
            assert http.get("/v1/models", headers={"Authorization": ""}).status_code == 401
        _run_the_documented_client(base, headers, zones, answers[0].json()["results"][0])
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    logged = log.read_text()
    assert "POST /v1/predict 200" in logged and zones[0]["zone"] not in logged  # no bodies


def _run_the_documented_client(base, headers, zones, expected):
    """docs/api.md's Python client, as a reader would copy it, against the real server."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    client_code = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)[0]
    namespace: dict = {}
    exec(compile(client_code, "docs/api.md", "exec"), namespace)
    namespace.update(BASE=base, HEADERS=headers)
    trip = {
        "origin": {"zone": zones[0]["zone"]},
        "destination": {"zone": zones[2]["zone"]},
        "depart": "2024-03-12T08:00:00",
    }
    (answer,) = namespace["predict"]([trip], within_s=[600])
    assert answer["mean_s"] == pytest.approx(expected["mean_s"], rel=1e-12)
    assert set(answer["quantiles_s"]) == {"0.5", "0.9"} and set(answer["prob_within"]) == {"600"}
    with pytest.raises(ValueError, match=r"trips/0/origin/lat"):
        namespace["predict"]([{**trip, "origin": {"lat": 91.0, "lon": 0.0}}])
    points = [{"zone": z["zone"]} for z in zones[:3]]
    table = namespace["matrix"](points, points[:2], "2024-03-12T08:00:00")
    assert list(table.columns[:5]) == ["origin", "destination", "mean_s", "median_s", "q0.9_s"]
    assert len(table) == 6 and table["q0.9_s"].gt(table["median_s"]).all()


def test_the_interactive_docs_need_no_network(make_client):
    client = make_client()
    page = client.get("/docs")
    assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
    assert "https://" not in page.text and "http://" not in page.text  # no CDN: closed networks
    for asset in re.findall(r'(?:src|href)="(/docs-assets/[^"]+)"', page.text):
        assert client.get(asset).status_code == 200
    assert len(re.findall(r'(?:src|href)="/docs-assets/', page.text)) == 3
    assert "https://" not in client.get("/redoc").text.split("<body>")[0]
    schema = client.get("/openapi.json").json()
    assert {"/v1/predict", "/v1/matrix", "/v1/reach", "/v1/isochrone", "/v1/coverage"} <= set(
        schema["paths"]
    )
    hidden = make_client(docs=False)
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert hidden.get(path).status_code == 404


# issue 32: dates that overflowed (a 500, then a reset of the keep-alive connection) and
# issue 31: numbers read as Unix times ("-1" as 1969)
BAD_DEPARTURES = [
    "9999-12-31",
    "0001-01-01T00:00:00",
    "2262-04-12T00:00:00",
    "99999999999",
    "-1",
    99999999999,
    -1,
]


def _exchange(conn: http.client.HTTPConnection, method: str, path: str, body=None):
    """One request on ``conn``'s open connection: (status, JSON answer or text)."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    kind = response.getheader("content-type", "")
    return response.status, json.loads(data) if "json" in kind else data.decode()


def _requests_with_departure(zones, depart) -> list[tuple[str, str, dict | None]]:
    """A request to every endpoint that takes a departure, with ``depart``."""
    a, b = zones[0]["zone"], zones[1]["zone"]
    query = str(httpx.QueryParams({"origin_zone": a, "within": 600, "depart": str(depart)}))
    return [
        (
            "POST",
            "/v1/predict",
            {"trips": [{"origin": {"zone": a}, "destination": {"zone": b}, "depart": depart}]},
        ),
        (
            "POST",
            "/v1/matrix",
            {"origins": [{"zone": a}], "destinations": [{"zone": b}], "depart": depart},
        ),
        ("GET", "/v1/reach?" + query, None),
        ("GET", "/v1/isochrone?" + query, None),
        ("POST", "/v1/coverage", {"bases": [{"zone": a}], "within_s": 600, "depart": depart}),
    ]


def test_bad_departures_are_a_422_and_the_connection_stays_usable(live_server):
    host, port = live_server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        status, found = _exchange(conn, "GET", "/v1/zones")
        assert status == 200
        zones = sorted(found["zones"], key=lambda z: -z["trip_ends"])
        valid = _requests_with_departure(zones, "2024-03-12T08:00:00")[0]
        local = conn.sock.getsockname()  # http.client reconnects silently: watch the socket
        for depart in BAD_DEPARTURES:
            for method, path, body in _requests_with_departure(zones, depart):
                status, answer = _exchange(conn, method, path, body)
                assert status == 422, (path, depart, answer)
                (error,) = answer["detail"]
                assert error["loc"][-1] == "depart", (path, depart, error)
                assert re.search("ISO 8601 date-time|outside the supported range", error["msg"])
                status, answer = _exchange(conn, *valid)
                assert status == 200, (path, depart, answer)
                assert conn.sock is not None and conn.sock.getsockname() == local
        many = "&".join(f"p={(i + 1) / 2001:.6f}" for i in range(2000))
        status, answer = _exchange(
            conn, "GET", f"/v1/isochrone?origin_zone={zones[0]['zone']}&within=600&{many}"
        )
        assert status == 422 and answer["detail"][0]["loc"] == ["query", "p"]
        assert "at most 20" in answer["detail"][0]["msg"]
        assert _exchange(conn, *valid)[0] == 200 and conn.sock.getsockname() == local
    finally:
        conn.close()


def test_an_unexpected_error_is_a_500_on_a_connection_that_stays_usable(serve_on_localhost):
    app = FastAPI()

    @app.get("/broken")
    def broken():
        raise OverflowError("what pandas raised for a year-9999 departure")

    @app.get("/fine")
    def fine():
        return {"status": "ok"}

    app.add_middleware(InternalErrors)
    host, port = serve_on_localhost(app).removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        assert _exchange(conn, "GET", "/fine") == (200, {"status": "ok"})
        local = conn.sock.getsockname()
        for _ in range(3):
            assert _exchange(conn, "GET", "/broken") == (500, {"detail": INTERNAL_ERROR})
            assert _exchange(conn, "GET", "/fine") == (200, {"status": "ok"})
            assert conn.sock is not None and conn.sock.getsockname() == local
    finally:
        conn.close()


def test_matrix_csv_quotes_names_a_spreadsheet_would_run(client, zones):
    """Issue 32 (CSV injection): names are echoed in the matrix; in CSV a name that a
    spreadsheet would run gets a leading quote (OWASP), in JSON it is as given."""
    evil = "=cmd|' /C calc'!A0"
    body = _matrix_body(zones, m=2, n=2)
    body["origins"][0]["name"] = evil
    body["destinations"][1]["name"] = "@SUM(1+1)"
    answer = client.post("/v1/matrix", json=body, headers={"accept": "text/csv"})
    assert answer.status_code == 200
    assert not re.search(r"(^|,)[=+@-]", answer.text, flags=re.MULTILINE)
    table = pd.read_csv(io.StringIO(answer.text))
    assert table["origin"][0] == "'" + evil and table["destination"][1] == "'@SUM(1+1)"
    assert table["mean_s"].dtype.kind == "f"
    document = client.post("/v1/matrix", json=body).json()
    assert document["pairs"][0]["origin"] == evil
