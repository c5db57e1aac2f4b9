"""The API on real data returns no individual trip: its token grants viewer access.

Every endpoint answers over a model of the Chicago taxi sample whose training trips are
kept in the home, and every answer is searched for a training trip's exact coordinates
and start time, as the dashboard's pages are (``tests/app/test_private_mode.py``:
what counts as found is defined there and in ``docs/security.md``). Counts of trips
(zones' trip ends, an answer's support) are aggregates and stay.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from tests.app.test_private_mode import TripFinder
from vrvm import TravelTimeModel
from vrvm.api import ApiSettings, create_app
from vrvm.trips.home import Home


def test_no_endpoint_returns_a_training_trip(chicago_home):
    model = TravelTimeModel.load(Home(chicago_home).models.active_path())
    finder = TripFinder(Home(chicago_home).load_training_trips(model))
    with TestClient(create_app(ApiSettings(home=chicago_home, token="s3cret"))) as client:
        client.headers["Authorization"] = "Bearer s3cret"
        zones = sorted(client.get("/v1/zones").json()["zones"], key=lambda z: -z["trip_ends"])
        a, b = zones[0]["zone"], zones[3]["zone"]
        depart = "2016-05-03T08:15:00"
        answers = {
            "models": client.get("/v1/models"),
            "active": client.get("/v1/models/active"),
            "zones": client.get("/v1/zones"),
            "predict": client.post(
                "/v1/predict",
                json={
                    "trips": [
                        {"origin": {"zone": a}, "destination": {"zone": b}, "depart": depart},
                        {"origin": {"zone": b}, "destination": {"zone": a}, "depart": depart},
                    ],
                    "support": True,
                    "indices": True,
                },
            ),
            "matrix": client.post(
                "/v1/matrix",
                json={
                    "origins": [{"zone": z["zone"]} for z in zones[:5]],
                    "destinations": [{"zone": z["zone"]} for z in zones[:5]],
                    "depart": depart,
                    "support": True,
                },
            ),
            "reach": client.get("/v1/reach", params={"origin_zone": a, "within": 900}),
            "isochrone": client.get("/v1/isochrone", params={"origin_zone": a, "within": 900}),
            "coverage": client.post(
                "/v1/coverage",
                json={"bases": [{"zone": a}, {"zone": b}], "within_s": 600, "depart": depart},
            ),
        }
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.text)
        assert finder.coordinates_in(response.text) == 0, name
        assert not finder.times_in(response.text), name
    assert answers["predict"].json()["results"][0]["support"]["trips"] >= 0  # counts stay


def test_the_search_finds_a_trip_in_text_that_holds_one(chicago_home):
    """The finder is not blind to the API's number formats (JSON floats, ISO times)."""
    model = TravelTimeModel.load(Home(chicago_home).models.active_path())
    trips = Home(chicago_home).load_training_trips(model)
    finder = TripFinder(trips)
    row = trips.iloc[17]
    text = json.dumps(
        {
            "o": [row["origin_lat"], row["origin_lon"]],
            "d": [row["dest_lat"], row["dest_lon"]],
            "t": row["start_time"].isoformat(),
        }
    )
    assert finder.coordinates_in(text) >= 1
    assert finder.times_in(text)
