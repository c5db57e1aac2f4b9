"""Hold-out splits."""

from __future__ import annotations

import pytest

from vrvm import synthetic_city
from vrvm.trips.model.split import split_holdout


def test_split_holdout_random_and_latest():
    trips = synthetic_city(100, seed=1)
    train, hold = split_holdout(trips, 0.2, how="random", seed=0)
    assert (len(train), len(hold)) == (80, 20)
    assert not set(map(tuple, train.to_numpy())) & set(map(tuple, hold.to_numpy()))
    train, hold = split_holdout(trips, 0.25, how="latest")
    assert hold["start_time"].min() >= train["start_time"].max()
    assert hold.attrs["synthetic"] is True
    with pytest.raises(ValueError):
        split_holdout(trips, 1.0)
    with pytest.raises(ValueError):
        split_holdout(trips.head(2), 0.1)
    with pytest.raises(ValueError):
        split_holdout(trips, 0.2, how="oldest")
