"""The pairs' own durations (vrvm.trips.model.pair_durations) and what it shares with the
round trips (vrvm.trips.model.own_durations): the weights and bands, the choice of h
and k out of shard, the predictive it puts in place, updates, storage, and the model
that owns it."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from scipy import special

from tests.trips.model_helpers import save_orphan_array, save_without
from vrvm import TravelTimeModel, synthetic_city
from vrvm.engine.calibration import PitMap
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model.own_durations import kernels, replace_components
from vrvm.trips.model.pair_durations import BANDS, PairDurations
from vrvm.trips.model.pair_offsets import ENDS
from vrvm.trips.store.model_dir import ModelFormatError

FAST = {"n_members": 3, "kernel_widths": [1.5, 3.0], "max_basis": 60, "random_state": 0}
BASE = (-39.99, -30.0)  # inside Synthetica
#: Four station pairs (origin, destination offsets in degrees) and their typical trip
#: (seconds): the second is far slower than its distance says (a hill, a detour).
PAIRS = np.array([[0.00, 0.00, 0.01, 0.00], [0.00, 0.01, 0.00, 0.02], [0.01, 0.01, 0.02, 0.02]])
TYPICAL = np.array([200.0, 3000.0, 400.0])


def _pair_trips(rng, n_pairs, trips_per_pair, effect, noise=0.1):
    """Ends of ``n_pairs`` pairs (a lattice of stations) of ``trips_per_pair`` trips each
    (a number, or one per pair), log durations 6 + ``effect`` x the pair's own effect +
    noise."""
    pair = np.repeat(np.arange(n_pairs), np.broadcast_to(trips_per_pair, (n_pairs,)))
    o_lat = 37.70 + 0.005 * (pair % 10)
    o_lon = -122.45 + 0.005 * (pair // 10)
    d_lat, d_lon = o_lat + 0.01, o_lon + 0.003
    log_s = 6.0 + effect * rng.normal(0.0, 1.0, n_pairs)[pair] + rng.normal(0, noise, pair.size)
    return o_lat, o_lon, d_lat, d_lon, log_s


#: Pairs of 3 and of 8 training trips: one in each band.
SIZES = np.tile([8, 3], 20)


def _wide(rows, grid):
    return kernels(np.full(rows.size, 6.0), grid, 1.0)


def _fitted(effect=1.0, seed=0, **kw):
    rng = np.random.default_rng(seed)
    ends_and_y = _pair_trips(rng, SIZES.size, SIZES, effect, **kw)
    return PairDurations().fit(*ends_and_y, _wide), ends_and_y


# ---------------------------------------------------------------- weights and the cdf
def test_weights_are_n_over_n_plus_k_per_band_and_zero_below_the_first():
    pairs = PairDurations()
    pairs.shrinkage = np.array([4.0, math.inf])
    n = np.array([0, 1, 2, 5, 6, 50])
    w = pairs.weight(n)
    np.testing.assert_allclose(w[:4], [0, 0, 2 / 6, 5 / 9])
    assert np.all(w[4:] == 0)  # the band of 6 and more is off
    assert pairs.band(n).tolist() == [0, 0, 0, 0, 1, 1] and BANDS[0] == 2


def test_the_cdf_is_the_pairs_kernel_estimate():
    pairs, (o_lat, o_lon, d_lat, d_lon, log_s) = _fitted()
    t = np.exp(np.array([5.5, 6.0, 6.7]))
    got = pairs.cdf(o_lat[:1], o_lon[:1], d_lat[:1], d_lon[:1], t)[0]
    own = log_s[:8]  # the first pair's trips
    h = pairs.bandwidth[pairs.band(8)]
    expected = special.ndtr((np.log(t)[None, :] - own[:, None]) / h).mean(axis=0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    unseen = pairs.cdf([10.0], [10.0], [10.1], [10.1], t)
    assert np.all(np.isnan(unseen))


# ---------------------------------------------------------------- fitting
def test_distinct_pairs_get_a_weight_out_of_shard():
    pairs, _ = _fitted(effect=1.0)
    assert pairs.active and np.all(np.isfinite(pairs.shrinkage))
    assert np.all(pairs.weight(np.array([3, 8])) > 0.5)
    assert pairs.score["blend"] < pairs.score["model"]


def test_when_the_pairs_durations_are_noise_the_weight_is_about_zero():
    rng = np.random.default_rng(2)
    o_lat, o_lon, d_lat, d_lon, _ = _pair_trips(rng, SIZES.size, SIZES, effect=0.0)
    signal = rng.normal(6.0, 1.0, o_lat.size)  # what the model knows of each trip
    log_s = signal + rng.normal(0, 0.1, o_lat.size)

    def sharp(rows, grid):  # the model knows better than any pair
        return special.ndtr((grid[None, :] - signal[rows, None]) / 0.1)

    pairs = PairDurations().fit(o_lat, o_lon, d_lat, d_lon, log_s, sharp)
    assert not pairs.active
    assert np.all(pairs.weight(np.array([2, 5, 8, 100])) == 0)
    # off, it keeps no trip durations: a model file holds none it does not use
    _, arrays = pairs.to_state()
    assert all(array.size == 0 for array in arrays.values())
    assert pairs.score["n_trips"] == o_lat.size and "bands" in pairs.score


def test_pairs_seen_once_leave_the_regime_off():
    rng = np.random.default_rng(3)
    pairs = PairDurations().fit(*_pair_trips(rng, 40, 1, effect=1.0), _wide)
    assert not pairs.active and "off" in pairs.score
    assert pairs.log_s.size == pairs.origin.size == pairs.dest.size == 0


# ---------------------------------------------------------------- the predictive
def _ensemble(n_cols, *, pit_map=None, df=None):
    rng = np.random.default_rng(5)
    loc = 6.0 + rng.normal(0, 0.3, (4, n_cols))
    if pit_map is None:
        return MixtureDistribution(loc, 0.5, df, transform="log", n_members=2)
    return RecalibratedMixture(loc, 0.5, df, transform="log", n_members=2, pit_map=pit_map)


@pytest.mark.parametrize("pit_map", [None, PitMap([0.0, 0.2, 0.6, 0.2, 0.0])])
@pytest.mark.parametrize("df", [None, np.full((4, 1), 3000.0)])
def test_a_distinct_pair_moves_the_prediction_toward_its_own_durations(pit_map, df):
    pairs, (o_lat, o_lon, d_lat, d_lon, log_s) = _fitted()
    starts = np.concatenate([[0], np.cumsum(SIZES)[:-1]])[::2]  # the pairs of 8 trips
    first = starts[np.argmax(log_s[starts])]  # the slowest of them
    rows = [first, 0]
    lat = np.array([o_lat[rows[0]], 37.9, o_lat[rows[0]]])
    lon = np.array([o_lon[rows[0]], -122.0, o_lon[rows[0]]])
    dest_lat = np.array([d_lat[rows[0]], 37.95, o_lat[rows[0]]])  # 1: unseen, 2: a round trip
    dest_lon = np.array([d_lon[rows[0]], -122.0, o_lon[rows[0]]])
    dist = _ensemble(3, pit_map=pit_map, df=df)
    new = pairs.apply(dist, lat, lon, dest_lat, dest_lon)
    assert type(new) is type(dist) and new.n_components == 4 and new.n_members == 2
    np.testing.assert_array_equal(new.loc[:, 1:], dist.loc[:, 1:])  # unseen, round trip
    own_median = np.exp(np.median(log_s[first : first + 8]))
    before, after = dist.median()[0], new.median()[0]
    assert abs(np.log(after / own_median)) < 0.5 * abs(np.log(before / own_median))
    # the components' cdf is K = w R + (1 - w) H up to the quantile matching (of four
    # components; through the map G, exact only at the components' levels)
    w = pairs.weight(np.array([8]))[0]
    t = np.exp(np.linspace(4.0, 9.0, 300))
    own = pairs.cdf(lat[:1], lon[:1], dest_lat[:1], dest_lon[:1], t)[0]
    target = w * own + (1 - w) * dist.cdf(t[:, None])[:, 0]
    assert np.abs(new.cdf(t[:, None])[:, 0] - target).max() < (0.1 if pit_map is None else 0.2)


def test_an_inactive_regime_returns_the_predictive_itself():
    pairs, (o_lat, o_lon, d_lat, d_lon, _) = _fitted()
    dist = _ensemble(2)
    pairs.shrinkage = np.full(len(BANDS), math.inf)
    assert pairs.apply(dist, o_lat[:2], o_lon[:2], d_lat[:2], d_lon[:2]) is dist


def test_a_blend_given_by_functions_is_the_blend_given_on_a_grid():
    rng = np.random.default_rng(6)
    own_y = rng.normal(5.0, 0.3, 12)
    grid = np.linspace(0.0, 12.0, 4001)
    table = kernels(own_y, grid, 0.1).mean(axis=0)[None, :]
    dist = _ensemble(1)

    def own_at(x):
        return kernels(own_y, x[0], 0.1).mean(axis=0)[None, :]

    def bracket(p):
        return np.array([[own_y.min() - 0.3], [own_y.max() + 0.3]])

    a = replace_components(dist, np.array([0]), table, grid, 0.6, 0.1)
    b = replace_components(dist, np.array([0]), (own_at, bracket), None, 0.6, 0.1)
    np.testing.assert_allclose(a.loc, b.loc, atol=0.01)


# ---------------------------------------------------------------- updates and storage
def test_an_inactive_regime_learns_nothing():
    """Updates never turn the regime on: off, its pairs do not grow with the stream."""
    pairs, (o_lat, o_lon, d_lat, d_lon, _) = _fitted()
    pairs.shrinkage[:] = np.inf
    n = pairs.log_s.size
    assert pairs.learn(o_lat[:3], o_lon[:3], d_lat[:3], d_lon[:3], [9.0, 8.0, 7.0]) == 0
    assert pairs.log_s.size == pairs.origin.size == n


def test_learning_adds_trips_to_their_pairs_and_new_pairs_join():
    pairs, (o_lat, o_lon, d_lat, d_lon, _) = _fitted()
    n = pairs.log_s.size
    added = pairs.learn(
        [o_lat[0], 36.0, 36.5],
        [o_lon[0], -121.0, -121.0],
        [d_lat[0], 36.1, 36.5],  # the last is a round trip: not added
        [d_lon[0], -121.0, -121.0],
        [9.0, 7.0, 7.0],
    )
    assert added == 2 and pairs.log_s.size == n + 2
    trips = pairs.trips_of(
        *pairs.cells([o_lat[0], 36.0], [o_lon[0], -121.0], [d_lat[0], 36.1], [d_lon[0], -121.0])
    )
    assert [len(t) for t in trips] == [9, 1]
    fresh = PairDurations.from_state(*pairs.to_state())  # its table built from the arrays
    assert [len(t) for t in fresh.trips_of(pairs.origin[:1], pairs.dest[:1])] == [9]


def test_the_state_round_trips_and_bad_states_are_refused():
    pairs, (o_lat, o_lon, d_lat, d_lon, _) = _fitted()
    meta, arrays = pairs.to_state()
    back = PairDurations.from_state(json.loads(json.dumps(meta)), arrays)
    t = np.exp(pairs.grid())
    ends = (o_lat[:5], o_lon[:5], d_lat[:5], d_lon[:5])
    np.testing.assert_array_equal(back.cdf(*ends, t), pairs.cdf(*ends, t))
    np.testing.assert_array_equal(back.shrinkage, pairs.shrinkage)
    with pytest.raises(ValueError, match="bandwidth"):
        PairDurations.from_state({**meta, "bandwidth": [0.0, 0.1]}, arrays)
    with pytest.raises(ValueError, match="lengths"):
        PairDurations.from_state(meta, {**arrays, "log_s": arrays["log_s"][:-1]})
    with pytest.raises(ValueError, match="bands"):
        PairDurations.from_state({**meta, "bands": [1]}, arrays)


# ---------------------------------------------------------------- the model
def _with_pairs(n: int, per_pair: int, seed: int):
    """Synthetic trips, ``per_pair`` of them on each of :data:`PAIRS` with durations
    log-normal (sd 0.1) around :data:`TYPICAL`."""
    trips = synthetic_city(n, seed=seed)
    rng = np.random.default_rng(seed)
    rows = rng.choice(n, size=per_pair * len(PAIRS), replace=False)
    pair = np.repeat(np.arange(len(PAIRS)), per_pair)
    ends = PAIRS[pair] + np.array([BASE[0], BASE[1], BASE[0], BASE[1]])
    for j, column in enumerate(ENDS):
        trips.loc[trips.index[rows], column] = ends[:, j]
    duration = TYPICAL[pair] * np.exp(rng.normal(0, 0.1, rows.size))
    trips.loc[trips.index[rows], "travel_time_s"] = np.round(duration)
    return trips


@pytest.fixture(scope="module")
def pair_model():
    return TravelTimeModel(**FAST).fit(_with_pairs(1500, 40, seed=1))


def _queries(trips):
    queries = trips.head(len(PAIRS)).copy()
    for j, column in enumerate(ENDS):
        queries[column] = PAIRS[:, j] + (BASE[0] if j % 2 == 0 else BASE[1])
    return queries


def test_the_model_predicts_a_pair_from_its_own_trips(pair_model):
    regime = pair_model.pair_durations_
    assert regime is not None and regime.active
    queries = _queries(synthetic_city(20, seed=2))
    median = pair_model.predict(queries)
    off = TravelTimeModel(**FAST, pair_durations=False).fit(_with_pairs(1500, 40, seed=1))
    assert off.pair_durations_ is None
    before = off.predict(queries)
    # the slow pair: nearer its own 3,000 s than the model without the regime
    assert abs(np.log(median[1] / TYPICAL[1])) < abs(np.log(before[1] / TYPICAL[1]))
    assert np.all(np.abs(np.log(median / TYPICAL)) < 0.3)
    other = synthetic_city(200, seed=3)  # pairs never seen: the same predictive
    np.testing.assert_allclose(pair_model.predict(other), off.predict(other), rtol=1e-12)


def test_save_and_load_keep_the_regime_and_older_files_load_without_it(pair_model, tmp_path):
    queries = _queries(synthetic_city(20, seed=2))
    path = pair_model.save(tmp_path / "m")
    loaded = TravelTimeModel.load(path)
    assert loaded.pair_durations
    np.testing.assert_array_equal(loaded.predict(queries), pair_model.predict(queries))
    meta, arrays = save_without(path, "pair_durations", "durations", 8, tmp_path / "old")
    old = TravelTimeModel.load(tmp_path / "old")
    assert old.pair_durations is False and old.pair_durations_ is None
    off = copy.deepcopy(pair_model)
    off.pair_durations_ = None
    np.testing.assert_allclose(old.predict(queries), off.predict(queries), rtol=1e-12)
    save_orphan_array(meta, arrays, "durations__log_s", np.zeros(3), tmp_path / "bad")
    with pytest.raises(ModelFormatError, match="pair-duration arrays"):
        TravelTimeModel.load(tmp_path / "bad")


def test_updates_teach_the_regime_a_new_pair(pair_model):
    model = copy.deepcopy(pair_model)
    trips = synthetic_city(40, seed=4)
    new_pair = (BASE[0] - 0.01, BASE[1] - 0.01, BASE[0] - 0.02, BASE[1] - 0.01)
    for column, value in zip(ENDS, new_pair, strict=True):
        trips.loc[trips.index[:20], column] = value
    trips.loc[trips.index[:20], "travel_time_s"] = 5000.0
    query = trips.head(1)
    before = model.predict(query)[0]
    n_before = model.pair_durations_.log_s.size
    model.update(trips)
    assert model.pair_durations_.log_s.size == n_before + 40
    after = model.predict(query)[0]
    assert abs(np.log(after / 5000.0)) < abs(np.log(before / 5000.0))
