"""The guard against updating a model with another area's trips."""

from __future__ import annotations

import numpy as np
import pytest

from vrvm import read_trips, synthetic_city
from vrvm.services.analyst.area_check import (
    AREA_PAD_KM,
    MIN_SHARE_INSIDE,
    check_same_area,
    model_area,
    trips_centre,
)
from vrvm.trips.home import Home

ENDS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")


def _moved(trips, dlat: float, dlon: float, rows=slice(None)):
    """``trips`` with the rows ``rows`` moved by (dlat, dlon) degrees."""
    out = trips.copy()
    index = out.index[rows]
    for column in ENDS:
        out.loc[index, column] += dlat if column.endswith("lat") else dlon
    return out


def test_trips_of_the_same_area_pass(tiny_model, tiny_home):
    same = synthetic_city(300, seed=3)
    for training in (None, Home(tiny_home).load_training_trips(tiny_model)):
        check = check_same_area(tiny_model, same, training_trips=training)
        assert check.ok and check.share_inside > 0.95 and check.distance_km < 5
        assert check.n_trips == 300 and check.model_name == "Synthetica (synthetic)"
        assert check.reason.startswith(f"{check.share_inside:.0%} of the ends of the 300 trips")


def test_trips_of_another_city_are_refused_with_the_numbers(tiny_model, tiny_home):
    """Chicago-like coordinates against the synthetic city in the South Atlantic."""
    chicago = _moved(synthetic_city(300, seed=3), 81.88, -57.63)
    for training in (None, Home(tiny_home).load_training_trips(tiny_model)):
        check = check_same_area(tiny_model, chicago, training_trips=training)
        assert not check.ok and check.share_inside == 0.0
        assert check.distance_km == pytest.approx(10_800, rel=0.02)
        assert "Only 0% of the ends of the 300 trips" in check.reason
        assert f"{check.distance_km:,.0f} km from its centre" in check.reason
        assert "at least 50% needed" in check.reason and "new model" in check.reason


def test_the_threshold_is_a_share_of_trip_ends(tiny_model):
    trips = synthetic_city(400, seed=5)
    far = 1.0  # degrees of latitude: 111 km north
    mostly_home = _moved(trips, far, 0.0, slice(0, 120))  # 30 % moved away
    mostly_away = _moved(trips, far, 0.0, slice(0, 280))  # 70 % moved away
    home_check = check_same_area(tiny_model, mostly_home)
    away_check = check_same_area(tiny_model, mostly_away)
    assert home_check.ok and home_check.share_inside == pytest.approx(0.7, abs=0.02)
    assert not away_check.ok and away_check.share_inside == pytest.approx(0.3, abs=0.02)
    assert MIN_SHARE_INSIDE == 0.5
    strict = check_same_area(tiny_model, mostly_home, min_share=0.9)
    assert not strict.ok and "at least 90% needed" in strict.reason


def test_the_area_is_padded_by_a_few_km(tiny_model, tiny_home):
    _, lon_lo, lat_hi, lon_hi = tiny_model.training_summary_["bbox"]
    north = np.array([lat_hi + 2 / 111.2, lat_hi + 20 / 111.2])  # 2 km and 20 km out
    lon = np.full(2, (lon_lo + lon_hi) / 2)
    assert AREA_PAD_KM == 5.0
    assert model_area(tiny_model).inside(north, lon).tolist() == [True, False]
    # the finer area of the training trips' cells (and their neighbours) agrees
    cells = model_area(tiny_model, Home(tiny_home).load_training_trips(tiny_model))
    assert cells.cells is not None and cells.inside(north, lon).tolist() == [True, False]


def test_san_francisco_bike_trips_cannot_update_the_synthetic_model(tiny_model, shared_data):
    trips, _ = read_trips(shared_data("sf_bikeshare_2019-02_partial.csv"))
    check = check_same_area(tiny_model, trips)
    assert not check.ok and check.share_inside == 0.0 and check.distance_km > 5000
    lat, lon = trips_centre(trips)
    assert 37.6 < lat < 37.9 and -122.5 < lon < -122.2
    assert "sf bikeshare" not in check.reason  # named after the model, not the file


def test_an_empty_table_is_not_in_any_area(tiny_model):
    check = check_same_area(tiny_model, synthetic_city(10, seed=1).iloc[:0])
    assert not check.ok and check.n_trips == 0 and "no trips" in check.reason
