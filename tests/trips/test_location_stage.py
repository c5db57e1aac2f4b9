"""The location stage: boosted trees kept as arrays, evaluated by QuickScorer, learned
out of fold, saved without pickles and refused when tampered with."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.model.location import INPUT_NAMES, MIN_TRIPS, LocationStage, Trees


@pytest.fixture(scope="module")
def city():
    trips = synthetic_city(2500, seed=3)
    featurizer = TripFeaturizer(distance="log1p").fit(trips)
    X, d = featurizer.transform(trips)
    return trips, featurizer, X, d, np.log(trips["travel_time_s"].to_numpy(np.float64))


@pytest.mark.parametrize("leaves", [2, 31, 63])
def test_trees_as_arrays_predict_what_scikit_learn_predicts(leaves):
    # 63 leaves need 64-bit masks; 31, 32-bit ones; 2 is a stump per tree
    rng = np.random.default_rng(leaves)
    inputs = rng.normal(size=(3000, len(INPUT_NAMES)))
    target = np.sin(3 * inputs[:, 0]) + inputs[:, 1] * inputs[:, 2] + 0.1 * rng.normal(size=3000)
    booster = HistGradientBoostingRegressor(
        max_iter=40, max_leaf_nodes=leaves, min_samples_leaf=5, random_state=0
    ).fit(inputs[:2000], target[:2000])
    trees = Trees.from_sklearn(booster, len(INPUT_NAMES))
    new = rng.normal(size=(5000, len(INPUT_NAMES)))  # unseen inputs, ties included below
    new[:50] = inputs[:50]
    for rows in (new, new[:1], inputs):
        got = trees(rows)
        baseline = float(np.mean(booster.predict(rows) - got))
        np.testing.assert_allclose(got + baseline, booster.predict(rows), rtol=0, atol=1e-12)


def test_a_split_at_the_exact_threshold_goes_left():
    trees = Trees(
        feature=np.array([0, 0, 0]),
        threshold=np.array([1.5, 0.0, 0.0]),
        left=np.array([1, 0, 0]),
        right=np.array([2, 0, 0]),
        value=np.array([0.0, -1.0, 1.0]),
        leaf=np.array([False, True, True]),
        roots=np.array([0]),
    )
    trees.check(1)
    got = trees(np.array([[1.5], [1.5 + 1e-12], [-3.0]]))
    np.testing.assert_array_equal(got, [-1.0, 1.0, -1.0])


def test_the_stage_learns_out_of_fold(city):
    trips, featurizer, X, d, y = city
    stage = LocationStage(random_state=0)
    oof = stage.fit(featurizer, trips, X, d, y)
    in_sample = stage.offset(featurizer, trips, X, d)
    # out of fold: each trip predicted by trees that did not see it, so its residuals
    # are larger than those of the final trees on the trips they learned
    assert np.mean((y - stage.center_ - oof) ** 2) > np.mean((y - stage.center_ - in_sample) ** 2)
    assert stage.oof_rmse_ == pytest.approx(np.sqrt(np.mean((oof + stage.center_ - y) ** 2)))
    assert abs(oof.mean()) < 1e-12  # centred: the members' targets keep their level
    assert len(stage.n_iter_) == stage.n_folds
    # and the trees explain much of log travel time
    assert stage.oof_rmse_ < 0.8 * np.std(y)


@pytest.mark.slow_process
def test_folds_in_worker_processes_give_the_same_stage_and_report_each_fit(city):
    trips, featurizer, X, d, y = city
    serial = LocationStage(random_state=0)
    oof = serial.fit(featurizer, trips, X, d, y)
    reports = []
    parallel = LocationStage(random_state=0)
    oof2 = parallel.fit(
        featurizer, trips, X, d, y, n_jobs=2, progress=lambda *report: reports.append(report)
    )
    np.testing.assert_array_equal(oof2, oof)  # each fit has its own seed
    assert parallel.n_iter_ == serial.n_iter_
    np.testing.assert_array_equal(
        parallel.offset(featurizer, trips, X, d), serial.offset(featurizer, trips, X, d)
    )
    # one report per fit: the folds' boosting and median trees in the order they end, the
    # final median trees among them, then the final boosting
    total = 2 * serial.n_folds + 2
    assert reports == [(k, total) for k in range(1, total + 1)]
    np.testing.assert_array_equal(serial.median_gap_, parallel.median_gap_)
    F = serial.inputs(featurizer, trips, X, d)
    np.testing.assert_array_equal(
        parallel.median_location_of_inputs(F), serial.median_location_of_inputs(F)
    )


def test_the_stage_reads_back_the_models_inputs(city):
    trips, featurizer, X, d, y = city
    stage = LocationStage(random_state=0)
    stage.fit(featurizer, trips, X, d, y)
    F = stage.inputs(featurizer, trips, X, d)
    assert F.shape == (len(trips), len(INPUT_NAMES))
    proj = featurizer.projection_
    ox, oy = proj.forward(trips["origin_lat"].to_numpy(), trips["origin_lon"].to_numpy())
    np.testing.assert_allclose(F[:, 0], ox, atol=1e-9)
    np.testing.assert_allclose(F[:, 1], oy, atol=1e-9)
    local = trips["start_time"].dt.tz_convert(featurizer.tz_)
    hour = local.dt.hour + local.dt.minute / 60 + local.dt.second / 3600
    np.testing.assert_allclose(F[:, INPUT_NAMES.index("hour")], hour, atol=1e-9)
    np.testing.assert_array_equal(F[:, INPUT_NAMES.index("weekday")], local.dt.weekday)
    # the principal axes are a rotation: distances between the ends are kept
    u = F[:, [INPUT_NAMES.index(n) for n in ("origin_u_km", "origin_v_km")]]
    np.testing.assert_allclose(
        np.hypot(*(u - u.mean(axis=0)).T), np.hypot(*(F[:, :2] - F[:, :2].mean(axis=0)).T)
    )


def test_state_round_trip_and_tampering(city):
    trips, featurizer, X, d, y = city
    stage = LocationStage(random_state=0)
    stage.fit(featurizer, trips, X, d, y)
    meta, arrays = stage.to_state()
    again = LocationStage.from_state(meta, arrays)
    np.testing.assert_array_equal(
        again.offset(featurizer, trips, X, d), stage.offset(featurizer, trips, X, d)
    )

    def refused(edit, match):
        bad = {k: v.copy() for k, v in arrays.items()}
        edit(bad)
        with pytest.raises(ValueError, match=match):
            LocationStage.from_state(meta, bad)

    inner = int(np.flatnonzero(~arrays["leaf"])[1])

    def loop(a):  # a child pointing back at its parent: a walk that never ends
        a["left"][inner] = inner

    def foreign(a):
        a["feature"][inner] = len(INPUT_NAMES)

    def nan(a):
        a["threshold"][inner] = np.nan

    def short(a):
        a["value"] = a["value"][:-1]

    def shared(a):  # two parents for one node: not trees
        a["right"][inner] = a["left"][inner]

    refused(loop, "before its parent")
    refused(foreign, "an input it does not have")
    refused(nan, "non-finite")
    refused(short, "different lengths")
    refused(shared, "do not form trees")
    refused(lambda a: a.pop("rotation"), "arrays")


def test_a_model_with_the_stage_predicts_the_same_after_loading(tmp_path):
    trips = synthetic_city(2000, seed=5)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0
    ).fit(trips)
    assert model.location_ is not None
    loaded = TravelTimeModel.load(model.save(tmp_path / "m"))
    queries = synthetic_city(50, seed=6)
    np.testing.assert_array_equal(loaded.predict(queries), model.predict(queries))
    # and without the stage, nothing of it is kept
    plain = TravelTimeModel(
        n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0, location_stage=False
    ).fit(trips)
    assert plain.location_ is None
    assert TravelTimeModel.load(plain.save(tmp_path / "p")).location_ is None


def test_few_trips_fit_no_stage():
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0
    ).fit(synthetic_city(MIN_TRIPS - 1, seed=8))
    assert model.location_stage and model.location_ is None


def test_updates_keep_the_trees_and_teach_the_members():
    trips = synthetic_city(2500, seed=7)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.0, 2.0], max_basis=60, random_state=0
    ).fit(trips.iloc[:2000])
    trees = model.location_.to_state()[1]["value"].copy()
    before = model.predict(trips.iloc[2000:2010])
    model.update(trips.iloc[2000:])
    np.testing.assert_array_equal(model.location_.to_state()[1]["value"], trees)
    assert not np.array_equal(model.predict(trips.iloc[2000:2010]), before)
