"""Refreshes of the location stage during updates (trips.model._online): the schedule, the
refit being the fit's own on the kept trips (trees out of fold, each member's posterior
the batch posterior of its kept trips), the bound on the kept trips, and the models that
keep none."""

import copy

import numpy as np
import pytest
from scipy import linalg

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model import _online, location
from vrvm.trips.model.pair_offsets import fit_model_offsets

N_FIT = 600


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(1800, seed=5).sort_values("start_time").reset_index(drop=True)


@pytest.fixture
def small_stage(monkeypatch):
    """A stage on 600 trips (2,000 by default), refreshed when half as many more have
    been learned (as many by default), so the tests stay fast."""
    monkeypatch.setattr(location, "MIN_TRIPS", 500)
    monkeypatch.setattr(_online, "STAGE_REFRESH_FRACTION", 0.5)


def _model(**params):
    defaults = {
        "n_members": 2,
        "kernel_widths": [1.5, 3.0],
        "max_basis": 60,
        "online_reserve": 40,
        "online_every": 50,
        "round_trips": False,
        "pair_durations": False,
        "forest_durations": False,  # the median trees' refresh is under test
        "random_state": 0,
    }
    return TravelTimeModel(**{**defaults, **params})


def _stream(model, trips, start, stop, batch=50):
    for at in range(start, stop, batch):
        model.update(trips.iloc[at : min(at + batch, stop)])


def test_the_stage_is_refreshed_on_a_geometric_schedule(trips, small_stage):
    model = _model().fit(trips.iloc[:N_FIT])
    online = model._online
    assert online.kept.n == N_FIT and online.stage_trips == N_FIT
    stage = model.location_
    trees, median, weight = stage.trees_, stage.median_trees_, stage.median_weight_
    due = int(_online.STAGE_REFRESH_FRACTION * N_FIT)  # 300 trips
    _stream(model, trips, N_FIT, N_FIT + due - 1)
    assert online.n_refreshes == 0 and model.location_.trees_ is trees
    model.update(trips.iloc[N_FIT + due - 1 : N_FIT + due])
    assert online.n_refreshes == 1 and model.location_.trees_ is not trees
    # the median trees grow again on the kept trips, with the fit's weight
    assert stage.median_trees_ is not median and stage.median_weight_ == weight
    assert stage.median_gap_ is None
    assert online.stage_trips == online.kept.n == N_FIT + due and online.since_stage == 0
    # the next one after half of 900 trips more
    _stream(model, trips, N_FIT + due, N_FIT + due + 449)
    assert online.n_refreshes == 1
    model.update(trips.iloc[N_FIT + due + 449 : N_FIT + due + 450])
    assert online.n_refreshes == 2 and online.stage_trips == N_FIT + due + 450
    assert model.n_updates_ == due + 450
    dist = model.predict_dist(trips.iloc[1500:])
    assert np.all(np.isfinite(dist.crps(trips["travel_time_s"].to_numpy()[1500:])))


def test_a_refresh_is_the_fits_stage_and_the_batch_posterior_on_the_kept_trips(trips, small_stage):
    model = _model().fit(trips.iloc[:N_FIT])
    due = int(_online.STAGE_REFRESH_FRACTION * N_FIT)
    _stream(model, trips, N_FIT, N_FIT + due - 1)
    before = copy.deepcopy(model.location_)
    model.update(trips.iloc[N_FIT + due - 1 : N_FIT + due])
    assert model._online.n_refreshes == 1
    kept = model._online.kept.arrays()
    # the stage: the trees the fit's procedure grows on the kept trips
    oof = before.refit(
        kept.F,
        kept.y,
        n_folds=_online.REFRESH_FOLDS,
        learning_rate=_online.REFRESH_LEARNING_RATE,
    )
    np.testing.assert_array_equal(
        model.location_.offset_of_inputs(kept.F), before.offset_of_inputs(kept.F)
    )
    target = kept.y - oof
    for m, member in enumerate(model.members_):
        rows = kept.shard_of_row == m
        assert rows.sum() == N_FIT // 2 + due // 2  # its fit shard and every other new trip
        pred = member.predictor_
        # posterior precision A + G and mean V h over its active functions, G and h those
        # of its kept trips (each standing for shard_weight trips) and the new residuals
        phi = pred.design(kept.X[rows], kept.d[rows, None])
        weight = model.shard_weight
        G = weight * phi.T @ phi
        h = weight * phi.T @ (target[rows] / pred.y_scale)
        precision = pred.chol @ pred.chol.T
        prior = precision - G
        np.testing.assert_allclose(prior - np.diag(np.diag(prior)), 0, atol=1e-8 * np.abs(G).max())
        assert np.all(np.diag(prior) > 0)
        mean = linalg.cho_solve((pred.chol, True), h)
        np.testing.assert_allclose(pred.mean, mean, rtol=1e-8, atol=1e-10)
    # the pair offsets: fitted again on the members' out-of-shard residuals
    offsets, _ = fit_model_offsets(model, kept._replace(y=target), model.h3_resolution_)
    if offsets is None:  # no level worth keeping, as a fit would decide
        assert model.pair_offsets_ is None
    else:
        queries = trips.iloc[1500:]
        np.testing.assert_allclose(
            model.pair_offsets_.offset_of_trips(queries), offsets.offset_of_trips(queries)
        )


def test_the_kept_trips_are_bounded(trips, small_stage, monkeypatch):
    monkeypatch.setattr(_online, "KEPT_TRIPS_MAX", 700)
    model = _model().fit(trips.iloc[:N_FIT])
    _stream(model, trips, N_FIT, N_FIT + 300)
    online = model._online
    assert online.n_refreshes == 1 and online.kept.n == online.stage_trips == 700
    kept = online.kept.arrays()
    n_columns = kept.F.shape[1] + kept.X.shape[1] + 1 + 1 + 4 + 1  # F, X, d, y, ends, member
    assert online.kept.nbytes <= 2 * 8 * n_columns * 900  # buffers at most doubled
    # the latest 700: the last trip kept is the last learned
    np.testing.assert_allclose(kept.raw[-1, 0], trips["origin_lat"].iloc[N_FIT + 299])
    # the next refresh is due after 350 more (half of what the stage was fitted on)
    _stream(model, trips, N_FIT + 300, N_FIT + 650)
    assert online.n_refreshes == 2 and online.kept.n == 700


def test_models_that_keep_no_trips_still_update(trips, small_stage, tmp_path):
    test = trips.iloc[1500:]
    no_stage = _model(location_stage=False).fit(trips.iloc[:N_FIT])
    assert no_stage.location_ is None and no_stage._online.kept is None
    _stream(no_stage, trips, N_FIT, N_FIT + 400)
    assert no_stage._online.n_refreshes == 0
    fixed = _model(online_reserve=0).fit(trips.iloc[:N_FIT])
    assert fixed._online.kept is None
    _stream(fixed, trips, N_FIT, N_FIT + 400)
    staged = _model().fit(trips.iloc[:N_FIT])
    staged.save(tmp_path / "m")
    loaded = TravelTimeModel.load(tmp_path / "m")  # the kept trips are not saved
    _stream(loaded, trips, N_FIT, N_FIT + 400)
    assert loaded._online.kept is None and loaded._online.n_refreshes == 0
    for model in (no_stage, fixed, loaded):
        assert model.n_updates_ == 400
        assert np.isfinite(model.evaluate(test)["crps_s"])


def test_forgetting_ends_the_refreshes_and_every_member_learns_all_trips(trips, small_stage):
    model = _model().fit(trips.iloc[:N_FIT])
    model.update(trips.iloc[N_FIT : N_FIT + 10], forgetting=0.999)
    assert model._online.kept is None
    _stream(model, trips, N_FIT + 10, N_FIT + 400)
    assert model._online.n_refreshes == 0
    every = _model().fit(trips.iloc[:N_FIT])
    _stream(every, trips, N_FIT, N_FIT + 300)
    every.update(trips.iloc[N_FIT + 300 : N_FIT + 310], assign="all")
    online = every._online
    assert online.n_refreshes == 1 and online.kept.n == N_FIT + 310
    assert np.all(online.kept.arrays().shard_of_row[-10:] == -1)


def test_the_stage_refit_checks_its_inputs(trips, small_stage):
    model = _model().fit(trips.iloc[:N_FIT])
    kept = model._online.kept.arrays()
    with pytest.raises(ValueError, match="inputs of shape"):
        model.location_.refit(kept.F[:, :5], kept.y)
