"""A model fitted on a few hundred trips answers with sane spreads: the members' noise
prior (``noise_prior``) keeps them from interpolating their shards, and no component is
wider than :data:`~vrvm.trips.model._spread.SCALE_CAP` standard deviations of the
training targets (``spread_.max_scale``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vrvm import TravelTimeModel, read_trips, synthetic_city
from vrvm.trips.model._spread import SCALE_CAP
from vrvm.trips.model.travel_time import NOISE_PRIOR_FRACTION

SMALL = {"n_members": 3, "max_basis": 60, "kernel_widths": [1.5, 3.0], "random_state": 0}


@pytest.fixture(scope="module")
def chicago_300():
    """300 random trips of the Chicago sample and 1,000 others to test on."""
    from tests.conftest import _require

    trips = read_trips(_require("chicago_taxi_trips.csv"))
    trips = trips[0] if isinstance(trips, tuple) else trips
    order = np.random.default_rng(0).permutation(len(trips))
    return trips.iloc[order[:300]], trips.iloc[order[-1000:]]


def test_the_members_get_the_noise_prior_of_their_targets():
    trips = synthetic_city(600, seed=2)
    model = TravelTimeModel(**SMALL, location_stage=False, pair_offsets=False).fit(trips)
    y = np.log(trips["travel_time_s"].to_numpy(float))
    e0 = model.noise_prior / 2
    for member in model.members_:
        assert member.e0 == e0 == 2.0
        assert member.f0 == pytest.approx(e0 * (NOISE_PRIOR_FRACTION * np.std(y)) ** 2)
    vague = TravelTimeModel(**SMALL, noise_prior=0).fit(trips)
    assert {(m.e0, m.f0) for m in vague.members_} == {(1e-6, 1e-6)}
    with pytest.raises(ValueError, match="noise_prior"):
        TravelTimeModel(**SMALL, noise_prior=-1).fit(trips)


@pytest.mark.slow
def test_three_hundred_real_trips_give_sane_means_and_scores(chicago_300):
    train, test = chicago_300
    y = test["travel_time_s"].to_numpy(float)
    model = TravelTimeModel(random_state=0).fit(train)  # 8 members of 37-38 trips
    assert min(m.noise_std_ for m in model.members_) > 0.01  # log seconds: not interpolating
    dist = model.predict_dist(test)
    assert dist.mean().max() < 24 * 3600  # Chicago taxi trips of at most a few hours
    crps = dist.crps(y)
    assert np.all(np.isfinite(crps)) and crps.mean() < 400
    # without both guards the same trips got means of 10^31 hours and CRPS of 28,597 s
    bare = TravelTimeModel(random_state=0, noise_prior=0).fit(train)
    bare.spread_.max_scale = math.inf
    assert bare.predict_dist(test).mean().max() > 1e6 * 3600


def test_no_component_is_wider_than_the_cap(chicago_300):
    train, test = chicago_300
    model = TravelTimeModel(random_state=0, noise_prior=0).fit(train)
    spread = model.spread_
    targets_sd = spread.max_scale / SCALE_CAP
    assert 0.1 < targets_sd < 2  # log seconds
    dist = model.predict_dist(test)
    # twin scales multiply the capped scale by e^a
    assert dist.scale.max() <= spread.max_scale * math.exp(spread.twin) * (1 + 1e-12)


def test_the_cap_is_saved_and_absent_from_older_files(tmp_path):
    model = TravelTimeModel(**SMALL).fit(synthetic_city(600, seed=2))
    assert math.isfinite(model.spread_.max_scale)
    path = model.save(tmp_path / "m")
    assert TravelTimeModel.load(path).spread_.max_scale == model.spread_.max_scale
    meta_path = path / "model.json"
    meta = json.loads(meta_path.read_text())
    good = json.dumps(meta)
    meta["metadata"]["noise_scale"]["max_scale"] = -1.0
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="max_scale"):
        TravelTimeModel.load(path)
    meta = json.loads(good)  # a file from before the cap and the prior
    del meta["metadata"]["noise_scale"]["max_scale"]
    del meta["metadata"]["params"]["noise_prior"]
    meta_path.write_text(json.dumps(meta))
    older = TravelTimeModel.load(path)
    assert older.spread_.max_scale == math.inf and older.noise_prior == 0.0
