"""The trip store as the Retrain page changes it."""

from __future__ import annotations

import pytest

from vrvm import synthetic_city
from vrvm.services.analyst.store_admin import (
    add_demo_trips,
    add_upload,
    clear_trips,
    distance_to_store_km,
    store_overview,
)
from vrvm.services.analyst.uploads import read_upload
from vrvm.trips.home import Home


def test_distance_of_new_trips_to_the_store(tmp_path):
    city = synthetic_city(100, seed=1)
    assert distance_to_store_km(tmp_path, city) is None
    Home(tmp_path).trips.add(city)
    assert distance_to_store_km(tmp_path, synthetic_city(100, seed=2)) < 5
    chicago = city.assign(origin_lat=41.88, origin_lon=-87.63)
    assert distance_to_store_km(tmp_path, chicago) > 8000


def test_uploads_demo_trips_and_clearing_go_through_the_service(tmp_path):
    empty = store_overview(tmp_path)
    assert empty.summary.n_trips == 0 and empty.days_covered is None and empty.parts.empty

    trips = synthetic_city(120, seed=3)
    outcome = read_upload("mine.csv", trips.to_csv(index=False).encode())
    assert add_upload(tmp_path, outcome) == (
        "Added 120 new trips to the store; 0 were already there."
    )
    assert add_upload(tmp_path, outcome).startswith("Added 0 new trips")  # idempotent
    message = add_demo_trips(tmp_path)
    assert message == "Added 2,000 synthetic demo trips (0 already in the store)."

    overview = store_overview(tmp_path)
    assert overview.summary.n_trips == 2120 and overview.summary.synthetic
    assert overview.parts["source"].tolist()[0] == "mine.csv"
    assert overview.parts["n_trips"].tolist() == [120, 2000]
    assert overview.parts["added_utc"].map(type).eq(str).all()  # ready to show
    assert 0 < overview.days_covered < 400

    assert clear_trips(tmp_path) == "Deleted 2,120 trips from the store."
    assert store_overview(tmp_path).summary.n_trips == 0


def test_a_failed_upload_is_never_stored(tmp_path):
    outcome = read_upload("bad.csv", b"a,b\n1,2\n")
    assert not outcome.ok
    with pytest.raises(ValueError, match=r"bad\.csv has no trips to add"):
        add_upload(tmp_path, outcome)
    assert store_overview(tmp_path).summary.n_trips == 0


def test_a_store_of_trips_without_dates_says_so(tmp_path, shared_data):
    from vrvm.services.analyst import store_admin

    data = shared_data("nyc_taxi_2016_sample.csv").read_bytes()
    outcome = read_upload("nyc.csv", data)
    assert outcome.ok
    store_admin.add_upload(tmp_path, outcome)
    overview = store_admin.store_overview(tmp_path)
    assert overview.summary.n_trips == 8000
    assert overview.dateless and overview.days_covered is None
