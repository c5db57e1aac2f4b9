"""The location stage's median trees: a quantile forest's median learned by boosting, out of
fold, and the model's blend of its location with theirs after the members (issue 34)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from quantile_forest import RandomForestQuantileRegressor

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model import _ensemble, _online, _spread, location, travel_time
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.model.location import MEDIAN_FOREST, MEDIAN_WEIGHTS, LocationStage
from vrvm.trips.model.model_format import FORMAT_NAME, FORMAT_VERSION
from vrvm.trips.store.model_dir import ModelFormatError, load_model_dir, save_model_dir

# Small and fast: explicit widths skip the width search.
#: Without the forest's pool, which stands for the median trees where it is kept.
FAST = {
    "n_members": 3,
    "kernel_widths": [1.0, 2.0],
    "max_basis": 60,
    "random_state": 0,
    "forest_durations": False,
}


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
    """A fit with its :meth:`~TravelTimeModel.median_shift` call recorded: the arguments,
    the stage's gap before it, and every prediction of the members' locations of the
    training trips from then on (``out_of_shard`` or ``member_loc``)."""
    trips = synthetic_city(2500, seed=11)
    call = {"predictions": []}
    real_out_of_shard, real_member_loc = _spread.out_of_shard, _ensemble.member_loc
    real_median_shift = TravelTimeModel.median_shift

    def out_of_shard(*args):
        call["predictions"].append("out_of_shard")
        return real_out_of_shard(*args)

    def member_loc(*args):
        call["predictions"].append("member_loc")
        return real_member_loc(*args)

    def median_shift(self, data, loo, seed):
        call.update(data=data, loo=loo.copy(), seed=seed, gap=self.location_.median_gap_.copy())
        call["predictions"] = []
        return real_median_shift(self, data, loo, seed)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_spread, "out_of_shard", out_of_shard)  # the spread's
        patch.setattr(travel_time, "out_of_shard", out_of_shard)  # median_shift's
        patch.setattr(_ensemble, "member_loc", member_loc)
        patch.setattr(TravelTimeModel, "median_shift", median_shift)
        fitted = TravelTimeModel(**FAST).fit(trips)
    fitted.median_shift_call = call  # inspected by tests below
    return fitted


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


def test_the_weight_and_the_spread_share_one_prediction_of_the_trips(model):
    # the weight's scores and the model's spread are fitted on the same out-of-shard
    # predictions, and the shift reuses their locations: no member predicts the training
    # trips again after the weight is chosen
    assert model.location_.median_weight_ > 0  # a shift that needs the locations
    assert model.median_shift_call["predictions"] == ["out_of_shard"]


@pytest.mark.parametrize("fit_rows", [None, 1500])
def test_the_shift_is_the_members_locations_of_every_trip(model, fit_rows, monkeypatch):
    call = model.median_shift_call
    data, loo, gap = call["data"], call["loo"], call["gap"]
    n, n_members = data.y.size, len(model.members_)
    if fit_rows is not None:  # the weight scored on a sample of the trips
        monkeypatch.setattr(_spread, "SCALE_FIT_ROWS", fit_rows)
    again = copy.deepcopy(model)
    again.location_.median_gap_ = gap.copy()
    shift, held_out = again.median_shift(data, loo, call["seed"])
    rows, loc = held_out[:2]
    assert rows.size == (n if fit_rows is None else fit_rows)
    w = again.location_.median_weight_
    assert w > 0
    full = _ensemble.member_loc(model.member_predictors(), data.X, data.d)
    if fit_rows is None:  # the locations it predicted out of shard are member_loc's
        np.testing.assert_array_equal(loc, full)
    own = full[data.shard_of_row, np.arange(n)]
    # trip i moves toward the median trees from the mean of the members that did not see it
    expected = w * (gap - ((full.sum(axis=0) - own) / (n_members - 1) + loo))
    np.testing.assert_array_equal(shift, expected)


def test_a_model_without_median_trees_and_its_file(model, tmp_path):
    trips = synthetic_city(2500, seed=11)
    plain = TravelTimeModel(**FAST, median_trees=False).fit(trips)
    stage = plain.location_
    assert stage is not None and not stage.median_trees
    assert stage.median_trees_ is None and stage.median_weight_ == 0.0
    queries = synthetic_city(40, seed=12)
    loaded = TravelTimeModel.load(plain.save(tmp_path / "plain"))
    assert loaded.median_trees is False and loaded.location_.median_trees_ is None
    assert loaded.location_.median_weight_ == 0.0
    np.testing.assert_array_equal(loaded.predict(queries), plain.predict(queries))
    assert TravelTimeModel.load(model.save(tmp_path / "with")).median_trees is True

    def resaved(source, name, edit):
        meta, arrays = load_model_dir(
            source, format_name=FORMAT_NAME, max_format_version=FORMAT_VERSION
        )
        edit(meta["params"])
        save_model_dir(
            tmp_path / name,
            metadata=meta,
            arrays=arrays,
            format_name=FORMAT_NAME,
            format_version=FORMAT_VERSION,
        )
        return tmp_path / name

    # a file saved before the switch: median trees exactly when its stage has them
    for source, has in ((tmp_path / "plain", False), (tmp_path / "with", True)):
        old = TravelTimeModel.load(resaved(source, f"old_{has}", lambda p: p.pop("median_trees")))
        assert old.median_trees is has
    # a switch that says none beside the median trees' arrays is refused
    off = resaved(tmp_path / "with", "bad", lambda p: p.update(median_trees=False))
    with pytest.raises(ModelFormatError, match="median-tree arrays with median_trees=False"):
        TravelTimeModel.load(off)
    with pytest.raises(ValueError, match="median_trees"):
        TravelTimeModel(**FAST, median_trees="no").fit(trips)


def _lying(booster):
    """``booster`` predicting other than its trees (not by a constant, which the check
    absorbs into the baseline): what a scikit-learn storing its trees differently gives."""
    honest = booster.predict
    booster.predict = lambda X: honest(X) + np.linspace(0.0, 1.0, len(X))
    return booster


def test_trees_that_do_not_reproduce_scikit_learn_name_their_switch(city, monkeypatch):
    trips, featurizer, X, d, y, *_ = city
    stage = LocationStage(random_state=0, max_iter=20)
    real_median_boosting = location._median_boosting
    with monkeypatch.context() as patch:
        patch.setattr(
            location,
            "_median_boosting",
            lambda F, y, seed: _lying(real_median_boosting(F, y, seed)),
        )
        with pytest.raises(RuntimeError, match=r"median trees .* fit with median_trees=False"):
            stage.fit(featurizer, trips, X, d, y)
    real_booster = LocationStage._booster
    monkeypatch.setattr(
        LocationStage, "_booster", lambda self, seed, **p: _lying(real_booster(self, seed, **p))
    )
    with pytest.raises(RuntimeError, match=r"stage's trees .* fit with location_stage=False"):
        LocationStage(random_state=0, max_iter=20, median_trees=False).fit(
            featurizer, trips, X, d, y
        )


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
        n_members=2,
        kernel_widths=[1.0, 2.0],
        max_basis=60,
        random_state=0,
        forest_durations=False,
    ).fit(trips.iloc[:2000])
    stage = model.location_
    stage.median_weight_ = 0.5  # kept until the stream refits the spread (after 1,000 trips)
    values = stage.to_state()[1]["median_value"].copy()
    model.update(trips.iloc[2000:])
    assert stage.median_weight_ == 0.5
    np.testing.assert_array_equal(stage.to_state()[1]["median_value"], values)
    queries = trips.iloc[:20]
    loaded = TravelTimeModel.load(model.save(tmp_path / "m"))
    assert loaded.location_.median_weight_ == 0.5
    np.testing.assert_array_equal(loaded.predict(queries), model.predict(queries))
    assert np.all(np.isfinite(model.predict_dist(queries).crps(queries["travel_time_s"])))


def test_a_refit_grows_the_final_median_trees_alone(city, monkeypatch):
    trips, featurizer, X, d, y, stage, _ = city
    F = stage.inputs(featurizer, trips, X, d)
    grown = []
    real = location._fit_median

    def fit_median(k, *args):
        grown.append(k)
        return real(k, *args)

    monkeypatch.setattr(location, "_fit_median", fit_median)
    again = copy.deepcopy(stage)
    again.median_weight_ = 0.4
    again.refit(F, y)
    # no fold's median trees (their gap chooses a weight, which a refit keeps) ...
    assert grown == [None]
    assert again.median_weight_ == 0.4 and again.median_gap_ is None
    # ... and the final ones are those a fit on the same trips grows
    np.testing.assert_array_equal(
        again.median_location_of_inputs(F), stage.median_location_of_inputs(F)
    )


def test_the_stream_chooses_the_weight_again_at_each_spread_refit(monkeypatch):
    """As the members learn the stream, the median trees' weight is chosen again by the
    spread's score on the stream's held-out predictions, as it was at fit time."""
    trips = synthetic_city(2700, seed=17)
    model = TravelTimeModel(
        n_members=2,
        kernel_widths=[1.0, 2.0],
        max_basis=60,
        random_state=0,
        forest_durations=False,
    ).fit(trips.iloc[:2200])
    stage = model.location_
    stage.median_weight_ = 0.8  # whatever was chosen: the stream decides again
    monkeypatch.setattr(_online, "SCALE_REFIT_TRIPS", 250)
    refits = []
    real = _online.OnlineState.refit_scale

    def refit_scale(self, fitted):
        recorded = [np.concatenate(part, axis=-1) for part in (self._loc, self._y, self._toward)]
        spread = copy.deepcopy(fitted.spread_)
        done = real(self, fitted)
        if done:
            refits.append((recorded, spread))
        return done

    monkeypatch.setattr(_online.OnlineState, "refit_scale", refit_scale)
    model.update(trips.iloc[2200:2500])
    assert len(refits) == 1
    (loc, y, toward), before = refits[0]
    assert np.any(toward != 0)  # the median trees' move was recorded
    scale = np.concatenate(model._online._scale, axis=1)
    d = np.concatenate(model._online._d)
    held_out = np.ones(loc.shape, bool)
    predictives = model.member_predictors()
    scores = before.scores_by_shift(predictives, loc, scale, y, held_out, d, toward, MEDIAN_WEIGHTS)
    assert stage.median_scores_ == pytest.approx(scores)
    assert stage.median_weight_ == max(scores, key=scores.get)
    # the spread is the one fitted for the weight chosen, on the moved targets
    expected = before.refit(predictives, loc, scale, y - stage.median_weight_ * toward, held_out, d)
    np.testing.assert_allclose(model.spread_.coef, expected.coef)
    assert model.spread_.twin == pytest.approx(expected.twin)


def test_scores_by_shift_leave_the_spread_as_it_was(model):
    spread = model.spread_
    state = copy.deepcopy(spread.to_state())
    call = model.median_shift_call
    data = call["data"]
    rows, loc, scale, mask = _spread.out_of_shard(
        model.member_predictors(), data.X, data.d, data.shard_of_row, call["seed"]
    )
    y = data.y[rows] - call["loo"][rows]
    scores = spread.scores_by_shift(
        model.member_predictors(), loc, scale, y, mask, data.d[rows], np.ones(rows.size), (0.0, 0.5)
    )
    assert set(scores) == {0.0, 0.5} and scores[0.0] != scores[0.5]
    assert spread.to_state() == state
