"""POST /v1/predict and the batcher: answers equal the services', errors name the field."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest

from vrvm.api.batching import TripBatcher
from vrvm.services.answers.indices import reliability_indices
from vrvm.services.answers.live import LiveModel
from vrvm.services.answers.summaries import trip_summaries
from vrvm.services.map.support import origin_support


def _trip(a, b, depart="2024-03-12T08:00:00"):
    return {
        "origin": {"zone": a["zone"]},
        "destination": {"lat": b["lat"], "lon": b["lon"]},
        "depart": depart,
    }


def test_health_and_readiness(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["model"]["version"] == 1
    assert ready.json()["model"]["synthetic"] is True


def test_predict_equals_the_services(client, zones, vrvm_home):
    body = {
        "trips": [_trip(zones[0], zones[5]), _trip(zones[3], zones[1], "2024-03-12T17:30:00")],
        "quantiles": [0.5, 0.9],
        "within_s": [600, 900],
    }
    answer = client.post("/v1/predict", json=body)
    assert answer.status_code == 200, answer.text
    document = answer.json()
    assert document["model"]["version"] == 1 and document["time_zone"] == "UTC"
    results = document["results"]
    assert len(results) == 2

    served = LiveModel(vrvm_home).current()
    queries = pd.DataFrame(
        {
            "origin_lat": [zones[0]["lat"], zones[3]["lat"]],
            "origin_lon": [zones[0]["lon"], zones[3]["lon"]],
            "dest_lat": [zones[5]["lat"], zones[1]["lat"]],
            "dest_lon": [zones[5]["lon"], zones[1]["lon"]],
            "start_time": pd.to_datetime(["2024-03-12 08:00", "2024-03-12 17:30"]).tz_localize(
                "UTC"
            ),
        }
    )
    dist = served.model.predict_dist(queries)
    indices = reliability_indices(served.model, queries, dist)
    for i, result in enumerate(results):
        assert result["mean_s"] == pytest.approx(dist.mean()[i], rel=1e-9)
        assert result["median_s"] == pytest.approx(dist.ppf(0.5)[i], rel=1e-9)
        assert result["quantiles_s"]["0.9"] == pytest.approx(dist.ppf(0.9)[i], rel=1e-9)
        assert result["prob_within"]["900"] == pytest.approx(dist.cdf(900.0)[i], abs=1e-12)
        assert result["planning_time_index"] == pytest.approx(
            indices["planning_time_index"].iloc[i], rel=1e-9
        )
        assert result["free_flow_s"] == pytest.approx(
            60 * indices["free_flow_min"].iloc[i], rel=1e-9
        )
    # the support counts are the reach map's, from the origin's zone to the destination's
    area = served.area
    row = area.zone_index[zones[0]["zone"]]
    counts = origin_support(area.support, row, 8 * 60.0)
    expected = counts["support_trips"].iloc[area.zone_index[zones[5]["zone"]]]
    assert results[0]["support"]["trips"] == expected
    assert results[0]["support"]["thin"] == (expected < 5)
    assert results[0]["origin_zone"] == zones[0]["zone"]
    assert results[0]["destination_zone"] == zones[5]["zone"]
    # the trips on each departure's kind of day, from the model's record (a Tuesday)
    day_trips = served.model.trips_on_day_kind(queries)
    assert [r["day_kind_trips"] for r in results] == day_trips.tolist()
    assert day_trips[0] == served.model.training_summary_["day_kind_trips"]["weekday"] > 0


def test_departures_with_an_offset_are_converted_to_the_models_zone(client, zones):
    body = {"trips": [_trip(zones[0], zones[5], "2024-03-12T08:00:00-05:00")]}
    result = client.post("/v1/predict", json=body).json()["results"][0]
    assert result["depart"] == "2024-03-12T13:00:00+00:00"
    same = client.post(
        "/v1/predict", json={"trips": [_trip(zones[0], zones[5], "2024-03-12T13:00:00")]}
    )
    assert same.json()["results"][0]["mean_s"] == pytest.approx(result["mean_s"], rel=1e-12)
    assert result["quantiles_s"] == {} and result["prob_within"] == {}


def test_optional_parts_can_be_left_out(client, zones):
    body = {"trips": [_trip(zones[0], zones[5])], "indices": False, "support": False}
    result = client.post("/v1/predict", json=body).json()["results"][0]
    assert result["planning_time_index"] is None and result["support"] is None


@pytest.mark.parametrize(
    ("body", "loc", "words"),
    [
        (
            {"trips": [{"origin": {"lat": 95, "lon": 0}, "destination": {"zone": "x"}}]},
            ["body", "trips", 0, "origin", "lat"],
            "less than or equal to 90",
        ),
        ({"trips": []}, ["body", "trips"], "at least 1"),
        (
            {"trips": [{"origin": {"lat": 1}, "destination": {"zone": "x"}}]},
            ["body", "trips", 0, "origin"],
            "both lat and lon",
        ),
        (
            {
                "trips": [
                    {"origin": {"zone": "x", "lat": 1, "lon": 2}, "destination": {"zone": "x"}}
                ]
            },
            ["body", "trips", 0, "origin"],
            "either lat and lon, or zone",
        ),
        (
            {"trips": [{"origin": {"zone": "x"}, "destination": {"zone": "x"}}], "speed": 1},
            ["body", "speed"],
            "Extra inputs",
        ),
        (
            {
                "trips": [{"origin": {"zone": "x"}, "destination": {"zone": "x"}}],
                "quantiles": [1.5],
            },
            ["body"],
            "strictly between 0 and 1",
        ),
        (
            {"trips": [{"origin": {"zone": "x"}, "destination": {"zone": "x"}, "depart": "soon"}]},
            ["body", "trips", 0, "depart"],
            "datetime",
        ),
        *[  # issue 31: numbers were read as Unix times ("-1" as 1969)
            (
                {"trips": [{"origin": {"zone": "x"}, "destination": {"zone": "x"}, "depart": d}]},
                ["body", "trips", 0, "depart"],
                "depart must be an ISO 8601 date-time",
            )
            for d in ("99999999999", "-1", " 1462262400.5 ", 1462262400, -1, 1.5e9)
        ],
        *[  # issue 32: these overflowed into a 500
            (
                {"trips": [{"origin": {"zone": "x"}, "destination": {"zone": "x"}, "depart": d}]},
                ["body", "trips", 0, "depart"],
                "outside the supported range of departures, 1970-01-01T00:00:00Z to 2100",
            )
            for d in (
                "9999-12-31T00:00:00",
                "0001-01-01",
                "2262-04-12T00:00:00",
                "1969-12-31T23:59:59Z",
                "2100-01-01T00:00:01+00:00",
            )
        ],
    ],
)
def test_bad_requests_name_the_field_and_the_problem(client, body, loc, words):
    answer = client.post("/v1/predict", json=body)
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert any(d["loc"][: len(loc)] == loc and words in d["msg"] for d in detail), detail
    assert all("input" not in d for d in detail)  # coordinates are never echoed back


def test_places_outside_the_zones_are_refused_naming_the_trip(client, zones):
    body = {
        "trips": [
            _trip(zones[0], zones[1]),
            {**_trip(zones[0], zones[1]), "destination": {"lat": 10.0, "lon": 10.0}},
        ]
    }
    answer = client.post("/v1/predict", json=body)
    assert answer.status_code == 422
    (detail,) = answer.json()["detail"]
    assert detail["loc"] == ["body", "trips", 1, "destination"]
    assert "outside the service area" in detail["msg"] and "nearest zone" in detail["msg"]
    unknown = {"trips": [{**_trip(zones[0], zones[1]), "origin": {"zone": "no-such-zone"}}]}
    detail = client.post("/v1/predict", json=unknown).json()["detail"][0]
    assert detail["loc"] == ["body", "trips", 0, "origin"] and "/v1/zones" in detail["msg"]


def test_limits_on_trips_and_body_size(make_client, zones):
    small = make_client(max_trips=2, max_body_bytes=2_000)
    three = {"trips": [_trip(zones[0], zones[1])] * 3}
    answer = small.post("/v1/predict", json=three)
    assert answer.status_code == 422 and "limit of 2" in answer.json()["detail"][0]["msg"]
    big = {"trips": [_trip(zones[0], zones[1])] * 40}
    answer = small.post("/v1/predict", json=big)
    assert answer.status_code == 413 and "2,000 bytes" in answer.json()["detail"]

    def chunks():  # streamed without a Content-Length
        for _ in range(10):
            yield b" " * 500

    answer = small.post(
        "/v1/predict", content=chunks(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413


def test_the_batcher_answers_concurrent_requests_in_few_model_calls(vrvm_home, zones):
    live = LiveModel(vrvm_home)
    served = live.current()
    grid = served.area.grid
    rng = np.random.default_rng(0)
    frames = []
    for _ in range(12):
        i, j = rng.integers(0, len(grid), 2)
        frames.append(
            pd.DataFrame(
                {
                    "origin_lat": [grid["lat"].iloc[i]],
                    "origin_lon": [grid["lon"].iloc[i]],
                    "dest_lat": [grid["lat"].iloc[j]],
                    "dest_lon": [grid["lon"].iloc[j]],
                    "start_time": pd.DatetimeIndex([pd.Timestamp("2024-03-12 08:00", tz="UTC")]),
                }
            )
        )

    async def run():
        batcher = TripBatcher(live)
        await batcher.start()
        try:
            answers = await asyncio.gather(
                *(batcher.answer(f, quantiles=[0.9], within_s=[600]) for f in frames)
            )
        finally:
            await batcher.stop()
        return answers, batcher.batches

    answers, batches = asyncio.run(run())
    assert batches < len(frames)  # gathered: the first batch, then all that waited
    for frame, (used, table) in zip(frames, answers, strict=True):
        assert used is served
        alone = trip_summaries(
            served.model, frame, quantiles=[0.9], thresholds_s=[600], indices=True, area=served.area
        )
        for column in ("mean_s", "median_s", "q0.9_s", "p_within_600s", "misery_index"):
            assert table[column].to_numpy() == pytest.approx(alone[column].to_numpy(), rel=1e-9)
        assert table["support_trips"].tolist() == alone["support_trips"].tolist()


def test_departures_at_the_ends_of_the_range_are_answered(client, zones):
    for depart in ("1970-01-01T00:00:00Z", "2100-01-01T00:00:00+00:00", "2099-12-31T23:00:00"):
        answer = client.post("/v1/predict", json={"trips": [_trip(zones[0], zones[5], depart)]})
        assert answer.status_code == 200, answer.text
    # a wall-clock time is placed in the model's zone (UTC here) and checked there too
    edge = client.post(
        "/v1/predict", json={"trips": [_trip(zones[0], zones[5], "1970-01-01T00:00:00+01:00")]}
    )
    assert edge.status_code == 422 and "outside the supported range" in edge.text


def _weekday_model(tmp_path, *, recorded=True):
    """A small model of weekday trips alone, saved as a model directory (no trip index);
    ``recorded=False``: as saved before models recorded their trips' kinds of day."""
    from vrvm import TravelTimeModel, synthetic_city

    trips = synthetic_city(900, seed=2)
    weekdays = trips[trips["start_time"].dt.weekday < 5]
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5], max_basis=40, random_state=0)
    model.fit(weekdays)
    if not recorded:
        del model.training_summary_["day_kind_trips"]
    return model.save(tmp_path / "weekdays"), weekdays


def _saturday_and_tuesday(trips):
    first = trips.iloc[0]
    place = {"origin": {"lat": first["origin_lat"], "lon": first["origin_lon"]}}
    place["destination"] = {"lat": first["dest_lat"], "lon": first["dest_lon"]}
    days = ("2024-03-09T08:00:00", "2024-03-12T08:00:00")  # a Saturday, a Tuesday
    return {"trips": [{**place, "depart": day} for day in days], "support": True}


def test_the_kind_of_day_is_told_from_the_models_record_without_a_trip_index(make_client, tmp_path):
    path, weekdays = _weekday_model(tmp_path)
    client = make_client(home=None, model_dir=path)
    answer = client.post("/v1/predict", json=_saturday_and_tuesday(weekdays))
    assert answer.status_code == 200, answer.text
    saturday, tuesday = answer.json()["results"]
    assert saturday["support"] is None  # no trips kept: no support counts
    # ... but the model's record says it never saw a weekend
    assert saturday["day_kind_trips"] == 0
    assert tuesday["day_kind_trips"] == len(weekdays)


def test_a_model_saved_before_the_record_answers_with_an_unknown_kind_of_day(make_client, tmp_path):
    path, weekdays = _weekday_model(tmp_path, recorded=False)
    client = make_client(home=None, model_dir=path)
    answer = client.post("/v1/predict", json=_saturday_and_tuesday(weekdays))
    assert answer.status_code == 200, answer.text
    assert [r["day_kind_trips"] for r in answer.json()["results"]] == [None, None]


def test_a_matrix_tells_the_kind_of_day_from_the_models_record(make_client, tmp_path):
    path, weekdays = _weekday_model(tmp_path)
    client = make_client(home=None, model_dir=path)
    first = weekdays.iloc[0]
    body = {
        "origins": [{"lat": first["origin_lat"], "lon": first["origin_lon"]}],
        "destinations": [{"lat": first["dest_lat"], "lon": first["dest_lon"]}],
        "depart": "2024-03-09T08:00:00",  # a Saturday
    }
    answer = client.post("/v1/matrix", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["day_kind_trips"] == 0
    tuesday = client.post("/v1/matrix", json={**body, "depart": "2024-03-12T08:00:00"})
    assert tuesday.json()["day_kind_trips"] == len(weekdays)
    as_csv = client.post("/v1/matrix", json=body, headers={"accept": "text/csv"})
    assert as_csv.status_code == 200 and as_csv.headers["x-day-kind-trips"] == "0"
    old, _ = _weekday_model(tmp_path / "old", recorded=False)
    before = make_client(home=None, model_dir=old)
    assert before.post("/v1/matrix", json=body).json()["day_kind_trips"] is None
    assert (
        "x-day-kind-trips"
        not in before.post("/v1/matrix", json=body, headers={"accept": "text/csv"}).headers
    )


def test_the_maps_tell_the_kind_of_day_from_the_models_record(make_client, tmp_path):
    path, weekdays = _weekday_model(tmp_path)
    client = make_client(home=None, model_dir=path)
    first = weekdays.iloc[0]
    origin = f"{first['origin_lat']},{first['origin_lon']}"
    base = {"lat": first["origin_lat"], "lon": first["origin_lon"]}
    for depart, expected in (("2024-03-09T08:00:00", 0), ("2024-03-12T08:00:00", len(weekdays))):
        query = {"origin": origin, "depart": depart, "within": 900}
        answers = {
            "reach": client.get("/v1/reach", params=query),
            "isochrone": client.get("/v1/isochrone", params={**query, "p": 0.5}),
            "coverage": client.post(
                "/v1/coverage", json={"bases": [base], "depart": depart, "within_s": 900}
            ),
        }
        for name, answer in answers.items():
            assert answer.status_code == 200, (name, answer.text)
            assert answer.json()["day_kind_trips"] == expected, (name, depart)
    old, _ = _weekday_model(tmp_path / "old", recorded=False)
    before = make_client(home=None, model_dir=old)
    answer = before.get("/v1/reach", params={"origin": origin, "within": 900})
    assert answer.status_code == 200 and answer.json()["day_kind_trips"] is None
