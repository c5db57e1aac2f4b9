"""The round-trip regime (vrvm.trips.model.round_trips): its closed forms, the choice of
h, k and w, the predictive it puts in place, storage, updates, and the model that owns it."""

from __future__ import annotations

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
from vrvm.trips.model.own_durations import grid_crps
from vrvm.trips.model.pair_offsets import ENDS
from vrvm.trips.model.round_trips import (
    MIN_ROUND_TRIPS,
    SHRINKAGES,
    RoundTrips,
    is_round_trip,
)
from vrvm.trips.store.model_dir import ModelFormatError

FAST = {"n_members": 3, "kernel_widths": [1.5, 3.0], "max_basis": 60, "random_state": 0}
#: Five stations and the typical round trip from each (seconds): short re-docks to long rides.
STATIONS = np.array([[0.00, 0.00], [0.01, 0.00], [0.00, 0.01], [0.01, 0.01], [0.02, 0.00]])
TYPICAL = np.array([90.0, 300.0, 900.0, 1800.0, 3600.0])
BASE = (-39.99, -30.0)  # inside Synthetica


def _regime(log_s, cells, *, h=0.2, k=2.0, w=1.0) -> RoundTrips:
    regime = RoundTrips()
    regime.log_s = np.asarray(log_s, float)
    regime.cell = np.asarray(cells, np.uint64)
    regime.bandwidth, regime.shrinkage, regime.weight = h, k, w
    regime.grid_range = (float(np.min(log_s)) - 3.0, float(np.max(log_s)) + 3.0)
    return regime


def _with_round_trips(n: int, n_round: int, seed: int):
    """Synthetic trips, ``n_round`` of them round trips from five stations of the city
    whose durations depend on the station (log-normal, sd 0.25 around ``TYPICAL``)."""
    trips = synthetic_city(n, seed=seed)
    rng = np.random.default_rng(seed)
    rows = rng.choice(n, size=n_round, replace=False)
    station = rng.integers(0, STATIONS.shape[0], n_round)
    lat, lon = BASE[0] + STATIONS[station, 0], BASE[1] + STATIONS[station, 1]
    for column, value in zip(ENDS, (lat, lon, lat, lon), strict=True):
        trips.loc[trips.index[rows], column] = value
    duration = TYPICAL[station] * np.exp(rng.normal(0, 0.25, n_round))
    trips.loc[trips.index[rows], "travel_time_s"] = np.round(duration)
    return trips, rows, station


@pytest.fixture(scope="module")
def round_model():
    trips, _, _ = _with_round_trips(1500, 200, seed=1)
    return TravelTimeModel(**FAST).fit(trips)


# ---------------------------------------------------------------- closed forms
def test_round_trips_are_ends_less_than_a_metre_apart():
    lat, lon = 37.77, -122.41
    half_metre, two_metres = 0.5e-3 / 111.2, 2e-3 / 111.2  # degrees of latitude
    mask = is_round_trip([lat] * 3, [lon] * 3, [lat, lat + half_metre, lat + two_metres], [lon] * 3)
    assert mask.tolist() == [True, True, False]


def test_grid_crps_is_the_closed_form_of_a_log_normal():
    mu, s = np.log(600.0), 0.5
    grid = np.linspace(mu - 8 * s, mu + 8 * s, 20001)
    y = np.array([200.0, 600.0, 2500.0])
    cdf = np.repeat(special.ndtr((grid - mu) / s)[None, :], y.size, axis=0)
    exact = MixtureDistribution([[mu] * y.size], s, transform="log").crps(y)
    np.testing.assert_allclose(grid_crps(cdf, grid, np.log(y)), exact, rtol=1e-3)


def test_the_cdf_is_the_cells_kernel_estimate_shrunk_toward_all_round_trips():
    log_s = np.array([5.0, 5.2, 7.0, 7.4, 6.0])
    cells = np.array([1, 1, 2, 2, 3], np.uint64)
    regime = _regime(log_s, cells, h=0.3, k=2.0)
    regime.cells = lambda lat, lon: np.asarray(lat, np.uint64)  # cells given directly
    t = np.exp(np.array([5.1, 6.5, 7.2]))
    phi = special.ndtr((np.log(t)[None, :] - log_s[:, None]) / 0.3)
    common = phi.mean(axis=0)
    for cell in (1, 2, 9):  # 9: a cell without round trips is all round trips
        own = phi[cells == cell]
        expected = (own.sum(axis=0) + 2.0 * common) / (own.shape[0] + 2.0)
        np.testing.assert_allclose(regime.cdf([cell], [0], t)[0], expected, rtol=1e-12)
    regime.shrinkage = math.inf
    np.testing.assert_allclose(regime.cdf([1], [0], t)[0], common, rtol=1e-12)


# ---------------------------------------------------------------- fitting
def _station_trips(rng, n, effect):
    cells = rng.integers(0, 12, n)
    log_s = 6.5 + effect * rng.normal(0, 1.0, 12)[cells] + rng.normal(0, 0.3, n)
    lat = 37.70 + 0.01 * (cells // 4)
    lon = -122.45 + 0.01 * (cells % 4)
    return lat, lon, log_s


def _wide_model(rows, grid):
    return special.ndtr((grid[None, :] - 6.5) / 1.2).repeat(rows.size, axis=0)


def test_strong_station_effects_get_little_shrinkage_and_the_regime():
    lat, lon, log_s = _station_trips(np.random.default_rng(0), 400, effect=1.0)
    regime = RoundTrips().fit(lat, lon, log_s, _wide_model)
    assert regime.shrinkage <= 4 and regime.weight >= 0.75
    assert regime.score["blend"] < regime.score["model"]
    assert regime.score["n_trips"] == 400


def test_without_station_effects_every_cell_is_all_round_trips():
    lat, lon, log_s = _station_trips(np.random.default_rng(1), 600, effect=0.0)
    regime = RoundTrips().fit(lat, lon, log_s, _wide_model)
    assert regime.shrinkage >= SHRINKAGES[-3]


def test_a_model_that_knows_better_keeps_its_round_trips():
    rng = np.random.default_rng(2)
    lat, lon, _ = _station_trips(rng, 300, effect=0.0)
    signal = rng.normal(6.5, 1.0, 300)  # what the model knows of each trip
    log_s = signal + rng.normal(0, 0.1, 300)

    def sharp(rows, grid):
        return special.ndtr((grid[None, :] - signal[rows, None]) / 0.1)

    regime = RoundTrips().fit(lat, lon, log_s, sharp)
    assert regime.weight == 0.0 and not regime.active


def test_too_few_round_trips_leave_the_regime_off():
    lat, lon, log_s = _station_trips(np.random.default_rng(3), MIN_ROUND_TRIPS - 1, effect=1.0)
    regime = RoundTrips().fit(lat, lon, log_s, _wide_model)
    assert not regime.active and "off" in regime.score


# ---------------------------------------------------------------- the predictive
def _ensemble(n_cols: int, *, pit_map=None):
    rng = np.random.default_rng(5)
    loc = 6.0 + rng.normal(0, 0.3, (4, n_cols))
    if pit_map is None:
        return MixtureDistribution(loc, 0.4, transform="log", n_members=2)
    return RecalibratedMixture(loc, 0.4, transform="log", n_members=2, pit_map=pit_map)


@pytest.mark.parametrize("pit_map", [None, PitMap([0.0, 0.2, 0.6, 0.2, 0.0])])
@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_round_trips_get_the_blend_and_other_trips_keep_their_predictive(pit_map, weight):
    rng = np.random.default_rng(4)
    log_s = np.concatenate([rng.normal(5.0, 0.2, 40), rng.normal(7.5, 0.2, 40)])
    regime = _regime(log_s, np.zeros(80, np.uint64), h=0.2, k=math.inf, w=weight)
    dist = _ensemble(3, pit_map=pit_map)
    lat, lon = np.array([37.7, 37.7, 37.8]), np.array([-122.4, -122.4, -122.4])
    dest_lat = np.array([37.7, 37.75, 37.8])  # trips 0 and 2 are round trips
    new = regime.apply(dist, lat, lon, dest_lat, lon)
    assert type(new) is type(dist) and new.n_components == 4 and new.n_members == 2
    np.testing.assert_array_equal(new.loc[:, 1], dist.loc[:, 1])
    np.testing.assert_array_equal(new.cdf(500.0)[1], dist.cdf(500.0)[1])
    # K(t) = w R(t) + (1 - w) H(t), matched by four components: its cdf at the
    # components' own levels, and a bimodal median between the two modes
    t = np.exp(np.linspace(4.0, 9.0, 400))
    target = (
        weight * regime.cdf(lat[[0]], lon[[0]], t)[0] + (1 - weight) * dist.cdf(t[:, None])[:, 0]
    )
    got = new.cdf(t[:, None])[:, 0]
    assert np.abs(got - target).max() < 0.12
    if weight == 1.0:  # the regime alone: both round trips from one cell alike
        assert np.allclose(new.cdf(t[:, None])[:, 0], new.cdf(t[:, None])[:, 2])
    assert np.isclose(new.cdf(new.median())[0], 0.5)


def test_an_inactive_regime_or_no_round_trip_returns_the_predictive_itself():
    regime = _regime(np.full(40, 6.0), np.zeros(40, np.uint64), w=0.0)
    dist = _ensemble(2)
    assert (
        regime.apply(dist, [37.7, 37.7], [-122.4, -122.4], [37.7, 37.7], [-122.4, -122.4]) is dist
    )
    regime.weight = 1.0
    assert (
        regime.apply(dist, [37.7, 37.7], [-122.4, -122.4], [37.8, 37.8], [-122.4, -122.4]) is dist
    )


# ---------------------------------------------------------------- updates and storage
def test_learning_adds_round_trips_and_keeps_the_cached_total_exact():
    lat, lon, log_s = _station_trips(np.random.default_rng(6), 200, effect=1.0)
    regime = RoundTrips().fit(lat, lon, log_s, _wide_model)
    before = regime.apply(_ensemble(1), lat[:1], lon[:1], lat[:1], lon[:1])  # fills the cache
    n = regime.learn(
        [lat[0], lat[0], 37.0],
        [lon[0], lon[0], -122.0],
        [lat[0], lat[0], 37.5],
        [lon[0]] * 3,
        [9.0, 9.1, 5.0],
    )
    assert n == 2 and regime.log_s.size == 202
    fresh = RoundTrips.from_state(*regime.to_state())  # no cache: sums all round trips again
    grid = regime.grid()
    np.testing.assert_allclose(
        regime._regime_on_grid(regime.cells(lat[:1], lon[:1])),
        fresh._regime_on_grid(fresh.cells(lat[:1], lon[:1])),
        rtol=1e-12,
    )
    after = regime.apply(_ensemble(1), lat[:1], lon[:1], lat[:1], lon[:1])
    assert after.median()[0] > before.median()[0]  # two long rides from its station
    assert grid.size == fresh.grid().size


def test_the_state_round_trips_and_bad_states_are_refused():
    lat, lon, log_s = _station_trips(np.random.default_rng(7), 100, effect=1.0)
    regime = RoundTrips().fit(lat, lon, log_s, _wide_model)
    meta, arrays = regime.to_state()
    json.dumps(meta)
    back = RoundTrips.from_state(json.loads(json.dumps(meta)), arrays)
    t = np.exp(regime.grid())
    np.testing.assert_array_equal(back.cdf(lat[:5], lon[:5], t), regime.cdf(lat[:5], lon[:5], t))
    with pytest.raises(ValueError, match="weight"):
        RoundTrips.from_state({**meta, "weight": 1.5}, arrays)
    with pytest.raises(ValueError, match="lengths"):
        RoundTrips.from_state(meta, {"log_s": arrays["log_s"][:-1], "cell": arrays["cell"]})
    with pytest.raises(ValueError, match="bandwidth"):
        RoundTrips.from_state({**meta, "bandwidth": 0.0}, arrays)


# ---------------------------------------------------------------- the model
def test_the_model_predicts_its_round_trips_from_their_stations(round_model):
    regime = round_model.round_trips_
    assert regime is not None and regime.active and regime.log_s.size == 200
    trips, rows, _ = _with_round_trips(300, 60, seed=2)
    queries = trips.head(5).copy()
    queries["origin_lat"] = queries["dest_lat"] = BASE[0] + STATIONS[:, 0]
    queries["origin_lon"] = queries["dest_lon"] = BASE[1] + STATIONS[:, 1]
    median = round_model.predict(queries)
    assert np.all(np.diff(median) > 0)  # the stations' order of typical durations
    assert np.all(np.abs(np.log(median / TYPICAL)) < 0.6)
    off = TravelTimeModel(**FAST, round_trips=False).fit(_with_round_trips(1500, 200, seed=1)[0])
    assert off.round_trips_ is None
    other = trips.drop(trips.index[rows])  # the same predictive as without the regime
    np.testing.assert_allclose(round_model.predict(other), off.predict(other), rtol=1e-12)


def test_save_and_load_keep_the_regime_and_older_files_load_without_it(round_model, tmp_path):
    trips, _, _ = _with_round_trips(300, 60, seed=3)
    path = round_model.save(tmp_path / "m")
    loaded = TravelTimeModel.load(path)
    assert loaded.round_trips and loaded.round_trips_.weight == round_model.round_trips_.weight
    np.testing.assert_array_equal(loaded.predict(trips), round_model.predict(trips))
    # a file from before format 8: no "round_trips" key and no round__ arrays
    meta, arrays = save_without(path, "round_trips", "round", 7, tmp_path / "old")
    old = TravelTimeModel.load(tmp_path / "old")
    assert old.round_trips is False and old.round_trips_ is None
    plain = old.spread_.mixture(  # what the members alone say
        old.member_predictors(), *_member_loc_scale(old, trips), log=True
    )
    np.testing.assert_allclose(old.predict(trips), plain.median(), rtol=1e-12)
    # round-trip arrays without their metadata are refused
    save_orphan_array(meta, arrays, "round__log_s", np.zeros(3), tmp_path / "bad")
    with pytest.raises(ModelFormatError, match="round-trip arrays"):
        TravelTimeModel.load(tmp_path / "bad")


def _member_loc_scale(model, trips):
    from vrvm.trips.model._ensemble import member_loc_scale

    X, d = model.featurizer_.transform(trips)
    loc, scale = member_loc_scale(model.member_predictors(), X, d)
    if model.pair_offsets_ is not None:
        loc = loc + model.pair_offsets_.offset_of_trips(trips)[None, :]
    return loc, scale, d


def test_updates_teach_the_regime_new_round_trips(round_model):
    import copy

    model = copy.deepcopy(round_model)
    trips = synthetic_city(40, seed=4)
    new_station = (BASE[0] - 0.01, BASE[1] - 0.01)  # no training round trip starts there
    for column, value in zip(ENDS, new_station * 2, strict=True):
        trips.loc[trips.index[:20], column] = value
    trips.loc[trips.index[:20], "travel_time_s"] = 7000.0
    query = trips.head(1)
    before = model.predict(query)[0]
    n_before = model.round_trips_.log_s.size
    model.update(trips)
    assert model.round_trips_.log_s.size == n_before + 20 and model.n_updates_ == 40
    after = model.predict(query)[0]
    assert before < 3000 < after < 7500  # the station's own rides, shrunk a little
