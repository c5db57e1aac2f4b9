"""The location stage's median trees: a quantile forest's median learned by boosting, out of
fold, and the model's blend of its location with theirs after the members (issue 34)."""

from __future__ import annotations

import numpy as np
import pytest
from quantile_forest import RandomForestQuantileRegressor

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.model.location import MEDIAN_FOREST, LocationStage
from vrvm.trips.model.travel_time import MEDIAN_WEIGHTS


@pytest.fixture(scope="module")
def city():
    trips = synthetic_city(2500, seed=3)
    featurizer = TripFeaturizer(distance="log1p").fit(trips)
    X, d = featurizer.transform(trips)
    y = np.log(trips["travel_time_s"].to_numpy(np.float64))
    stage = LocationStage(random_state=0)
    offsets = stage.fit(featurizer, trips, X, d, y)
    return trips, featurizer, X, d, y, stage, offsets


@pytest.fixture(scope="module")
def model():
    trips = synthetic_city(2500, seed=11)
    return TravelTimeModel(n_members=3, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0).fit(
        trips
    )


def test_the_median_trees_learn_the_forests_median(city):
    trips, featurizer, X, d, y, stage, _ = city
    F = stage.inputs(featurizer, trips, X, d)
    forest = RandomForestQuantileRegressor(**MEDIAN_FOREST, random_state=stage.random_state)
    median = forest.fit(F, y).predict(F, quantiles=0.5)
    got = stage.median_location_of_inputs(F)
    # boosting on the forest's median follows it far more closely than the trips do
    assert np.sqrt(np.mean((got - median) ** 2)) < 0.5 * np.sqrt(np.mean((y - median) ** 2))
    assert np.corrcoef(got, median)[0, 1] > 0.95


def test_the_gap_is_out_of_fold(city):
    trips, featurizer, X, d, y, stage, offsets = city
    F = stage.inputs(featurizer, trips, X, d)
    # gap = out-of-fold median trees - out-of-fold location + centre, so these are the
    # out-of-fold median trees, which err more on the trips than those fitted on them
    out_of_fold = stage.median_gap_ + offsets
    in_sample = stage.median_location_of_inputs(F)
    assert np.mean((y - out_of_fold) ** 2) > np.mean((y - in_sample) ** 2)
    # and they know as much of the trips as the stage does out of fold
    assert np.mean(np.abs(y - out_of_fold)) < 1.1 * np.mean(np.abs(y - offsets - stage.center_))


def test_a_stage_without_median_trees(city):
    trips, featurizer, X, d, y, *_ = city
    stage = LocationStage(random_state=0, median_trees=False)
    stage.fit(featurizer, trips, X, d, y)
    assert stage.median_trees_ is None and stage.median_gap_ is None
    meta, arrays = stage.to_state()
    assert meta["median"] is None and not any(name.startswith("median_") for name in arrays)
    assert LocationStage.from_state(meta, arrays).median_weight_ == 0.0


def test_median_trees_state_round_trip_and_tampering(city):
    trips, featurizer, X, d, _, stage, _ = city
    F = stage.inputs(featurizer, trips, X, d)
    stage.median_weight_ = 0.3
    meta, arrays = stage.to_state()
    again = LocationStage.from_state(meta, arrays)
    assert again.median_weight_ == 0.3
    np.testing.assert_array_equal(
        again.median_location_of_inputs(F), stage.median_location_of_inputs(F)
    )
    # a stage saved before the median trees (model format 9) has none
    old_meta = {k: v for k, v in meta.items() if k != "median"}
    old_meta["params"] = {k: v for k, v in meta["params"].items() if k != "median_trees"}
    old = LocationStage.from_state(
        old_meta, {k: v for k, v in arrays.items() if not k.startswith("median_")}
    )
    assert old.median_trees_ is None and old.median_weight_ == 0.0
    np.testing.assert_array_equal(
        old.offset_of_inputs(F), stage.offset_of_inputs(F)
    )  # and the stage's own trees are unchanged

    inner = int(np.flatnonzero(~arrays["median_leaf"])[1])
    bad = {k: v.copy() for k, v in arrays.items()}
    bad["median_left"][inner] = inner  # a walk that never ends
    with pytest.raises(ValueError, match="before its parent"):
        LocationStage.from_state(meta, bad)
    with pytest.raises(ValueError, match="arrays"):
        LocationStage.from_state(meta, {k: v for k, v in arrays.items() if k != "median_value"})
    for weight in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="median weight"):
            LocationStage.from_state(
                {**meta, "median": {**meta["median"], "weight": weight}}, arrays
            )


def test_the_weight_is_the_best_out_of_shard_log_density(model):
    stage = model.location_
    assert stage.median_gap_ is None  # used once, not kept
    scores = stage.median_scores_
    assert tuple(scores) == MEDIAN_WEIGHTS
    assert stage.median_weight_ == max(scores, key=scores.get)
    # the model's spread is the one fitted for that weight, on the same trips
    assert model.spread_.score["after"] == pytest.approx(scores[stage.median_weight_], abs=1e-12)


def test_every_component_moves_alike_toward_the_median_trees(model):
    queries = synthetic_city(40, seed=12)
    stage = model.location_
    chosen = stage.median_weight_
    try:
        stage.median_weight_ = 0.0
        before = model.predict_dist(queries)
        stage.median_weight_ = 0.6
        after = model.predict_dist(queries)
    finally:
        stage.median_weight_ = chosen
    X, d = model.featurizer_.transform(queries)
    median = stage.median_location_of_inputs(stage.inputs(model.featurizer_, queries, X, d))
    # components m and M + m (twin scales) share a location: the mean over all is the
    # members' mean
    expected = before.loc + 0.6 * (median - before.loc.mean(axis=0))
    np.testing.assert_allclose(after.loc, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(after.scale, before.scale)  # the spread is unchanged


def test_updates_keep_the_median_trees_and_their_weight(tmp_path):
    trips = synthetic_city(2600, seed=13)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0
    ).fit(trips.iloc[:2000])
    stage = model.location_
    stage.median_weight_ = 0.5  # whatever was chosen, the update must use and keep it
    values = stage.to_state()[1]["median_value"].copy()
    model.update(trips.iloc[2000:])
    assert stage.median_weight_ == 0.5
    np.testing.assert_array_equal(stage.to_state()[1]["median_value"], values)
    queries = trips.iloc[:20]
    loaded = TravelTimeModel.load(model.save(tmp_path / "m"))
    assert loaded.location_.median_weight_ == 0.5
    np.testing.assert_array_equal(loaded.predict(queries), model.predict(queries))
    assert np.all(np.isfinite(model.predict_dist(queries).crps(queries["travel_time_s"])))
