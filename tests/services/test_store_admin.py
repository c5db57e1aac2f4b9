"""The trip store as the Retrain page changes it."""

from __future__ import annotations

from vrvm import synthetic_city
from vrvm.services.store_admin import distance_to_store_km
from vrvm.trips.home import trip_store


def test_distance_of_new_trips_to_the_store(tmp_path):
    city = synthetic_city(100, seed=1)
    assert distance_to_store_km(tmp_path, city) is None
    trip_store(tmp_path).add(city)
    assert distance_to_store_km(tmp_path, synthetic_city(100, seed=2)) < 5
    chicago = city.assign(origin_lat=41.88, origin_lon=-87.63)
    assert distance_to_store_km(tmp_path, chicago) > 8000
