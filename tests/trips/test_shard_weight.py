"""TravelTimeModel(shard_weight=): each member's trips counted shard_weight times in its
fit, and the guard that fits members again without it when they extrapolate wildly."""

import json

import numpy as np
import pytest

import vrvm.trips.model._ensemble as ensemble
from vrvm import TravelTimeModel, synthetic_city

SMALL = {"n_members": 3, "kernel_widths": [1.5, 3.0], "max_basis": 120, "random_state": 0}


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(1500, seed=5)


def test_each_member_counts_its_trips_shard_weight_times(trips, member_weights):
    weights = member_weights
    weighted = TravelTimeModel(**SMALL).fit(trips)
    assert weighted.shard_weight == 2.0
    assert weights == [2.0] * 3
    weights.clear()
    plain = TravelTimeModel(**SMALL, shard_weight=1).fit(trips)
    assert weights == [None] * 3
    # twice the evidence for each function: more of them survive
    assert weighted.n_relevance_.sum() > plain.n_relevance_.sum()


def test_wild_members_are_fitted_again_on_their_plain_shard(trips, member_weights, monkeypatch):
    weights = member_weights
    calls = []

    def one_wild(members, X, y, d):
        calls.append(len(members))
        return [1]

    monkeypatch.setattr(ensemble, "wild_members", one_wild)
    model = TravelTimeModel(**SMALL, online_reserve=40).fit(trips)
    assert calls == [3]
    assert weights == [2.0, 2.0, 2.0, None]  # member 1 again, unweighted
    plain = TravelTimeModel(**SMALL, shard_weight=1).fit(trips)
    np.testing.assert_array_equal(model.members_[1].active_, plain.members_[1].active_)
    # its growing basis keeps counting its trips once, the others' twice
    model.update(trips.iloc[:30])
    assert [b._weight for b in model._online.bases] == [2.0, 1.0, 2.0]


def test_a_member_predicting_far_outside_the_targets_is_wild(trips):
    model = TravelTimeModel(**SMALL).fit(trips)
    X, d = model.featurizer_.transform(trips)
    y = np.log(trips["travel_time_s"].to_numpy())
    assert ensemble.wild_members(model.members_, X, y, d) == []
    model.members_[2]._predictor.mean = model.members_[2]._predictor.mean * 50.0
    assert ensemble.wild_members(model.members_, X, y, d) == [2]


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_shard_weight_is_checked(trips, value):
    with pytest.raises(ValueError, match="shard_weight"):
        TravelTimeModel(**SMALL, shard_weight=value).fit(trips.iloc[:300])


def test_a_model_saved_without_shard_weight_loads_as_fitted_on_plain_shards(trips, tmp_path):
    model = TravelTimeModel(**SMALL).fit(trips)
    path = model.save(tmp_path / "m")
    assert TravelTimeModel.load(path).shard_weight == 2.0
    manifest = json.loads((path / "model.json").read_text())
    del manifest["metadata"]["params"]["shard_weight"]
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert old.shard_weight == 1.0
    queries = trips.head(50)
    np.testing.assert_allclose(old.predict(queries), model.predict(queries), rtol=1e-12)
