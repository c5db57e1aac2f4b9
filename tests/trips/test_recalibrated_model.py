"""A model that predicts through a PIT map (issue 34): fitted out of shard with its
spread, better calibrated than without it, saved and checked, refitted on the stream."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import skewed_trips
from vrvm import ModelFormatError, RecalibratedMixture, TravelTimeModel, synthetic_city
from vrvm.engine import MixtureDistribution


def _coverage(dist, y, level=0.9):
    lo, hi = dist.interval(level)
    return float(np.mean((y >= lo) & (y <= hi)))


def test_skewed_trips_get_a_map_that_calibrates_them(skewed_model):
    record = skewed_model.spread_.score["pit_map"]
    assert skewed_model.spread_.pit_map is not None
    assert record["cv_gain"] > 0.01 and record["n_pit"] == 3000
    test = skewed_trips(2000, seed=2)
    y = test["travel_time_s"].to_numpy()
    dist = skewed_model.predict_dist(test)
    assert isinstance(dist, RecalibratedMixture)
    plain = TravelTimeModel(
        n_members=4, max_basis=60, location_stage=False, recalibration="none", random_state=0
    ).fit(skewed_trips(3000, seed=1))
    base = plain.predict_dist(test)
    assert type(base) is MixtureDistribution and plain.spread_.pit_map is None
    # the same members and scales: the map is all that differs
    np.testing.assert_allclose(dist.base.cdf(y), base.cdf(y), rtol=1e-12)
    assert -np.mean(dist.logpdf(y)) < -np.mean(base.logpdf(y))
    assert np.mean(dist.crps(y)) < np.mean(base.crps(y))
    assert abs(_coverage(dist, y) - 0.9) < abs(_coverage(base, y) - 0.9)


def test_calibrated_trips_keep_the_exact_mixture():
    model = TravelTimeModel(n_members=4, max_basis=60, location_stage=False, random_state=0)
    model.fit(synthetic_city(3000, seed=1))
    assert model.spread_.pit_map is None
    assert model.spread_.score["pit_map"]["cv_gain"] <= 0.01
    assert type(model.predict_dist(synthetic_city(5, seed=2))) is MixtureDistribution


def test_the_map_is_saved_checked_and_absent_from_older_files(skewed_model, tmp_path):
    path = skewed_model.save(tmp_path / "m")
    queries = skewed_trips(50, seed=3)
    loaded = TravelTimeModel.load(path)
    np.testing.assert_array_equal(loaded.predict(queries), skewed_model.predict(queries))
    np.testing.assert_array_equal(
        loaded.spread_.pit_map.weights, skewed_model.spread_.pit_map.weights
    )
    meta_path = path / "model.json"
    meta = json.loads(meta_path.read_text())
    good = json.dumps(meta)
    scale = meta["metadata"]["noise_scale"]
    scale["pit_map"]["weights"] = [-w for w in scale["pit_map"]["weights"]]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="pit_map"):
        TravelTimeModel.load(path)
    # a file from before the map (format 6) loads without one
    meta = json.loads(good)
    del meta["metadata"]["noise_scale"]["pit_map"]
    meta_path.write_text(json.dumps(meta))
    older = TravelTimeModel.load(path)
    assert older.recalibration == "none" and older.spread_.pit_map is None
    assert type(older.predict_dist(queries)) is MixtureDistribution


def test_updates_refit_the_map_on_the_stream(skewed_model):
    import copy

    model = copy.deepcopy(skewed_model)
    model.update(skewed_trips(1100, seed=4))  # a refit every SCALE_REFIT_TRIPS (1,000)
    score = model.spread_.score
    assert score["source"] == "stream" and score["pit_map"]["n_pit"] == 1100
    # the map is refitted on the latest stream trips, with the scales
    model.update(synthetic_city(1200, seed=5))
    assert model.spread_.score["pit_map"]["n_pit"] == 2300


def test_recalibrate_reads_probabilities_through_the_map(skewed_model):
    queries = skewed_trips(5, seed=6)
    dist = skewed_model.predict_dist(queries)
    np.testing.assert_allclose(
        skewed_model.recalibrate(dist.base.cdf(900.0)), dist.cdf(900.0), atol=1e-15
    )
    plain = TravelTimeModel(n_members=2, max_basis=40, recalibration="none", random_state=0)
    plain.fit(synthetic_city(600, seed=1))
    np.testing.assert_array_equal(plain.recalibrate([0.2, 0.7]), [0.2, 0.7])


def test_recalibration_is_checked():
    with pytest.raises(ValueError, match="recalibration"):
        TravelTimeModel(recalibration="isotonic").fit(synthetic_city(100, seed=0))
