"""TravelTimeModel.update: members' bases grown on the stream, the distance scale refitted
on the stream's held-out predictions (trips._online)."""

import copy

import numpy as np
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model._online import SCALE_REFIT_TRIPS


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(2600, seed=3)


def _model(**params):
    defaults = {
        "n_members": 2,
        "kernel_widths": [1.5, 3.0],
        "max_basis": 120,
        "online_reserve": 60,
        "online_every": 50,
        "random_state": 0,
    }
    return TravelTimeModel(**{**defaults, **params})


def test_updates_re_solve_each_members_basis_and_refit_the_scale(trips):
    model = _model().fit(trips.iloc[:800])
    fitted_scale = model.noise_scale_coef_.copy()
    frozen = copy.deepcopy(model)
    for start in range(800, 800 + SCALE_REFIT_TRIPS, 25):  # small batches
        model.update(trips.iloc[start : start + 25])
    bases = model._online.bases
    each = SCALE_REFIT_TRIPS // 2  # trips each member learns, a re-solve every 50
    assert [b.n_resolves for b in bases] == [each // 50] * 2
    assert model.n_relevance_.tolist() == [m.n_relevance_ for m in model.members_]
    assert [m.n_updates_ for m in model.members_] == [each] * 2
    assert model.noise_scale_score_["source"] == "stream"
    assert model.noise_scale_score_["n_trips"] == SCALE_REFIT_TRIPS
    assert not np.allclose(model.noise_scale_coef_, fitted_scale)
    assert model.twin_scale_ != frozen.twin_scale_  # the twin scales learn the stream too
    # the copy taken before the updates is untouched
    np.testing.assert_array_equal(frozen.noise_scale_coef_, fitted_scale)
    assert [m.n_updates_ for m in frozen.members_] == [0, 0]
    test = trips.iloc[1800:]
    assert model.evaluate(test)["crps_s"] < frozen.evaluate(test)["crps_s"]


def test_without_a_reserve_the_functions_stay_and_only_the_weights_learn(trips):
    model = _model(online_reserve=0).fit(trips.iloc[:800])
    active = [m.active_.copy() for m in model.members_]
    model.update(trips.iloc[800:1000])
    assert model._online.bases is None
    for member, before in zip(model.members_, active, strict=True):
        np.testing.assert_array_equal(member.active_, before)
    assert model.n_updates_ == 200


def test_a_loaded_model_updates_its_fixed_bases_and_refits_the_scale(trips, tmp_path):
    model = _model().fit(trips.iloc[:800])
    model.save(tmp_path / "m")
    loaded = TravelTimeModel.load(tmp_path / "m")
    assert loaded.online_reserve == 60 and loaded.online_every == 50
    active = [m.active_.copy() for m in loaded.members_]
    loaded.update(trips.iloc[800 : 800 + SCALE_REFIT_TRIPS])
    assert loaded._online.bases is None  # the statistics are not saved
    for member, before in zip(loaded.members_, active, strict=True):
        np.testing.assert_array_equal(member.active_, before)
    assert loaded.noise_scale_score_["source"] == "stream"
    # and saves again, the refitted scale with it
    loaded.save(tmp_path / "m2")
    again = TravelTimeModel.load(tmp_path / "m2")
    np.testing.assert_allclose(again.noise_scale_coef_, loaded.noise_scale_coef_)


def test_constant_noise_keeps_no_predictions(trips):
    plain = {"noise_model": "constant", "twin_scales": False, "recalibration": "none"}
    model = _model(**plain).fit(trips.iloc[:800])
    model.update(trips.iloc[800 : 800 + SCALE_REFIT_TRIPS // 2])
    assert not model.noise_scale_coef_.any() and model.twin_scale_ == 0.0
    assert model._online.since_scale == 0 and model._online._y == []
    # a PIT map alone is refitted on the stream: its predictions are kept
    mapped = _model(**{**plain, "recalibration": "auto"}).fit(trips.iloc[:800])
    mapped.update(trips.iloc[800 : 800 + SCALE_REFIT_TRIPS])
    assert mapped.noise_scale_score_["source"] == "stream"
    assert mapped.noise_scale_score_["pit_map"]["n_pit"] == SCALE_REFIT_TRIPS


def test_constant_noise_with_twin_scales_refits_them_alone_on_the_stream(trips):
    model = _model(noise_model="constant").fit(trips.iloc[:800])
    fitted = model.twin_scale_
    assert fitted > 0
    model.update(trips.iloc[800 : 800 + SCALE_REFIT_TRIPS])
    assert model.noise_scale_score_["source"] == "stream"
    assert not model.noise_scale_coef_.any() and model.twin_scale_ != fitted


@pytest.mark.parametrize("name, value", [("online_reserve", -1), ("online_every", 0)])
def test_online_parameters_are_checked(trips, name, value):
    with pytest.raises(ValueError, match=name):
        _model(**{name: value}).fit(trips.iloc[:300])
