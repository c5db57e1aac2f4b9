"""The forest's neighbours pooled with the members' mixture
(vrvm.trips.model.forest_durations): the walk through the trees, the forest's
distribution of a query, the choice out of bag, the pooled predictive, storage, and the
model that owns it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy import special

from tests.trips.model_helpers import save_orphan_array, save_without
from vrvm import TravelTimeModel, synthetic_city
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model import forest_durations as fd
from vrvm.trips.model.forest_durations import LEAF_VALUES, ForestDurations
from vrvm.trips.store.model_dir import ModelFormatError


def _data(n=1500, seed=0):
    """Two inputs; log durations 5 left of x0 = 0.5 and 6 right of it (noise 0.1)."""
    rng = np.random.default_rng(seed)
    F = rng.uniform(size=(n, 2))
    y = np.where(F[:, 0] < 0.5, 5.0, 6.0) + 0.1 * rng.normal(size=n)
    return F, y


def _knows_nothing(rows, grid):
    """A model's cdf that puts every trip uniformly on [4.5, 6.5] log seconds."""
    return np.clip((grid[None, :] - 4.5) / 2.0, 0.0, 1.0).repeat(rows.size, axis=0)


@pytest.fixture(scope="module")
def forest():
    F, y = _data()
    return ForestDurations().fit(F, y, _knows_nothing, None, n_components=C, random_state=0)


#: Components of R in these tests (a model of 8 members with twin scales).
C = 16


# ---------------------------------------------------------------- the trees
def test_the_compiled_walk_reaches_the_leaves_of_the_walk_in_numpy(forest):
    rng = np.random.default_rng(1)
    F = np.vstack([rng.uniform(-0.1, 1.1, size=(500, 2)), forest._probes()])
    assert forest._compiled is not None
    leaves = forest.leaves(F)
    np.testing.assert_array_equal(leaves, forest._walk(F.astype(np.float32)))
    assert leaves.shape == (len(F), fd.FOREST["n_estimators"])
    assert np.all(forest.value_row[leaves] >= 0)  # every walk ends at a leaf


def test_without_the_compiled_trees_the_walk_in_numpy_answers_the_same(forest, monkeypatch):
    import sklearn.tree._tree as compiled_trees

    copied = copy.deepcopy(forest)
    copied.__dict__.pop("_compiled", None)
    monkeypatch.delattr(compiled_trees, "NODE_DTYPE")  # a scikit-learn without the layout
    assert copied._compiled is None
    F = np.random.default_rng(2).uniform(size=(300, 2))
    np.testing.assert_array_equal(copied.quantiles(F, C), forest.quantiles(F, C))


def test_leaf_values_are_quantiles_of_each_leafs_trips():
    leaf = np.array([3, 1, 3, 3, 1, 7])
    y = np.array([1.0, 5.0, 2.0, 4.0, 3.0, 9.0])
    ids, q = fd._leaf_quantiles(leaf, y, 4)
    assert ids.tolist() == [1, 3, 7]
    levels = (np.arange(4) + 0.5) / 4
    np.testing.assert_allclose(q[0], np.quantile([5.0, 3.0], levels))
    np.testing.assert_allclose(q[1], np.quantile([1.0, 2.0, 4.0], levels))
    np.testing.assert_allclose(q[2], [9.0] * 4)


def test_a_querys_distribution_is_the_union_of_its_leaves_values(forest):
    F = np.random.default_rng(3).uniform(size=(5, 2))
    atoms = np.sort(forest.values[forest.value_row[forest.leaves(F)]].reshape(5, -1), axis=1)
    assert atoms.shape[1] == fd.FOREST["n_estimators"] * LEAF_VALUES
    rank = np.floor((np.arange(C) + 0.5) / C * atoms.shape[1]).astype(int)
    np.testing.assert_array_equal(forest.quantiles(F, C), atoms[:, rank])
    # the two halves of the input space: their own durations, not a blend of both
    halves = forest.quantiles(np.array([[0.1, 0.5], [0.9, 0.5]]), C)
    assert np.all(np.abs(halves[0, 2:-2] - 5.0) < 0.3)
    assert np.all(np.abs(halves[1, 2:-2] - 6.0) < 0.3)


def test_the_forests_cdf_is_its_normals_at_the_quantiles():
    q = np.array([[1.0, 1.5, 3.0]])
    x = np.array([[0.0, 1.2, 2.0]])
    s = np.maximum(np.gradient(q, axis=1), fd.SCALE_FLOOR)
    expected = special.ndtr((x[0][:, None] - q[0][None, :]) / s[0][None, :]).mean(axis=1)
    np.testing.assert_allclose(fd.forest_cdf(q, x)[0], expected, rtol=1e-14)
    np.testing.assert_allclose(s, [[0.5, 1.0, 1.5]])


# ---------------------------------------------------------------- keeping it
def test_a_forest_that_knows_more_than_the_model_is_pooled(forest):
    assert forest.active
    assert forest.score["pool"] < 0.9 * forest.score["model"]
    assert forest.score["n_scored"] == 1500


def test_out_of_bag_a_trip_is_not_its_own_neighbour():
    # durations that are pure noise: in bag, each trip's leaves would hold itself; out of
    # bag its neighbours know nothing of it, and a model with the true spread wins
    rng = np.random.default_rng(4)
    F = rng.uniform(size=(1200, 3))
    y = 6.0 + 0.5 * rng.normal(size=1200)

    def truth(rows, grid):
        return special.ndtr((grid[None, :] - 6.0) / 0.5).repeat(rows.size, axis=0)

    off = ForestDurations().fit(F, y, truth, None, n_components=C, random_state=0)
    assert not off.active and off.pit_map is None
    assert off.roots.size == 0 and off.values.size == 0  # nothing kept
    assert off.score["pool"] > 0.995 * off.score["model"]
    dist = MixtureDistribution(np.full((2, 3), 6.0), 0.5, transform="log")
    assert off.apply(dist, F[:3]) is dist


def test_too_little_gain_leaves_the_forest_off(monkeypatch):
    F, y = _data(800)
    monkeypatch.setattr(fd, "MIN_GAIN", 0.99)  # no pool gains 99 %
    off = ForestDurations().fit(F, y, _knows_nothing, None, n_components=C, random_state=0)
    assert not off.active and off.score["pool"] < off.score["model"]


# ---------------------------------------------------------------- the pooled predictive
@pytest.mark.parametrize("blocks", [1, 2])
def test_the_predictive_is_the_pool_read_through_its_map(forest, blocks):
    members = 8
    F = np.array([[0.1, 0.5], [0.9, 0.5], [0.5, 0.5]])
    loc = np.full((members * blocks, 3), 5.5) + 0.01 * np.arange(members * blocks)[:, None]
    dist = MixtureDistribution(loc, 0.4, transform="log", n_members=members)
    pooled = forest.apply(dist, F)
    assert pooled.n_components == 4 * members and pooled.n_members == members
    assert isinstance(pooled, RecalibratedMixture) == (forest.pit_map is not None)
    x = np.linspace(4.0, 7.0, 61)
    mixture = special.ndtr((x[None, :, None] - loc.T[:, None, :]) / 0.4).mean(axis=2)
    pool = 0.5 * mixture + 0.5 * fd.forest_cdf(forest.quantiles(F, 2 * members), np.tile(x, (3, 1)))
    expected = pool if forest.pit_map is None else forest.pit_map.cdf(pool)
    np.testing.assert_allclose(pooled.cdf(np.exp(x)[:, None]).T, expected, atol=1e-9)
    # each member: its own components and a pair of R's quantiles about R's median
    q = forest.quantiles(F, 2 * members)
    appended = pooled.loc[2 * members :].reshape(2, members, 3)
    np.testing.assert_array_equal(appended[0], q[:, :members].T)
    np.testing.assert_array_equal(appended[1], q[:, ::-1][:, :members].T)
    # the fast half of the city: the pool's median moved from the model's toward 5
    assert np.log(pooled.median()[0]) < 5.5 - 0.1
    assert np.log(pooled.median()[1]) > 5.5 + 0.1


def test_a_predictive_with_its_own_map_is_pooled_before_it():
    from vrvm.engine.calibration import PitMap

    F, y = _data(900)
    forest = ForestDurations().fit(
        F, y, _knows_nothing, None, n_components=4, recalibrate=False, random_state=0
    )
    assert forest.active and forest.pit_map is None
    squeeze = PitMap(np.array([0.1, 0.2, 0.3, 0.4]))
    base = MixtureDistribution(np.full((4, 2), 5.5), 0.4, transform="log", n_members=2)
    mapped = RecalibratedMixture.of(base, squeeze)
    pooled = forest.apply(mapped, F[:2])
    # the model's own map was fitted for F alone: the pool is F's and R's, unmapped
    np.testing.assert_allclose(
        pooled.cdf(np.exp(5.5)), forest.apply(base, F[:2]).cdf(np.exp(5.5)), rtol=1e-14
    )
    assert type(pooled) is MixtureDistribution


# ---------------------------------------------------------------- storage
def test_the_state_round_trips_and_bad_states_are_refused(forest):
    meta, arrays = forest.to_state()
    back = ForestDurations.from_state(meta, arrays)
    F = np.random.default_rng(5).uniform(size=(50, 2))
    np.testing.assert_array_equal(back.quantiles(F, C), forest.quantiles(F, C))
    assert back.score == forest.score and back.n_components == forest.n_components
    assert (back.pit_map is None) == (forest.pit_map is None)
    dist = MixtureDistribution(np.full((C, 2), 5.5), 0.4, transform="log", n_members=8)
    np.testing.assert_allclose(  # G' read back from JSON: the same to the last bits
        back.apply(dist, F[:2]).cdf(300.0), forest.apply(dist, F[:2]).cdf(300.0), rtol=1e-14
    )

    def refused(match, meta=meta, **changes):
        bad = dict(arrays)
        bad.update(changes)
        with pytest.raises(ValueError, match=match):
            ForestDurations.from_state(meta, bad)

    inner = int(np.flatnonzero(forest.value_row < 0)[1])
    left = arrays["left"].copy()
    left[inner] = 0  # a child before its parent
    refused("before its parent", left=left)
    feature = arrays["feature"].copy()
    feature[inner] = 7
    refused("an input it does not have", feature=feature)
    values = arrays["values"].copy()
    values[0, 0] = np.nan
    refused("non-finite leaf values", values=values)
    refused("leaves and value rows", values=arrays["values"][:-1])
    refused("expected arrays", roots=None, extra=np.zeros(1))
    refused("leaf values", meta={**meta, "leaf_values": 4})


# ---------------------------------------------------------------- the model
def _two_kinds_of_trip(n, seed):
    """Synthetica's trips, those from its north-east half either quick or slow (a ferry
    that runs or not): at one place, two durations the members' density cannot bend to."""
    trips = synthetic_city(n, seed=seed)
    rng = np.random.default_rng(seed)
    north_east = (trips["origin_lat"] > trips["origin_lat"].median()) & (
        trips["origin_lon"] > trips["origin_lon"].median()
    )
    factor = np.where(rng.uniform(size=n) < 0.5, 0.35, 2.5)
    trips.loc[north_east, "travel_time_s"] *= factor[north_east.to_numpy()]
    return trips


FAST = {"n_members": 3, "kernel_widths": [1.5, 3.0], "max_basis": 40, "random_state": 0}


@pytest.fixture(scope="module")
def forest_model():
    return TravelTimeModel(**FAST, n_jobs=2).fit(_two_kinds_of_trip(2400, seed=0))


def test_the_model_pools_where_its_forest_helps(forest_model):
    forest = forest_model.forest_durations_
    assert forest is not None and forest.active
    test = _two_kinds_of_trip(600, seed=1)
    off = copy.deepcopy(forest_model)
    off.forest_durations_ = None
    y = test["travel_time_s"].to_numpy()
    on_crps = forest_model.predict_dist(test).crps(y).mean()
    off_crps = off.predict_dist(test).crps(y).mean()
    assert on_crps < off_crps  # the forest's gain out of bag holds on new trips


def test_save_and_load_keep_the_forest_and_older_files_load_without_it(forest_model, tmp_path):
    queries = _two_kinds_of_trip(100, seed=2)
    path = forest_model.save(tmp_path / "m")
    loaded = TravelTimeModel.load(path)
    assert loaded.forest_durations and loaded.forest_durations_.active
    np.testing.assert_array_equal(loaded.predict(queries), forest_model.predict(queries))
    meta, arrays = save_without(path, "forest_durations", "forest", 10, tmp_path / "old")
    old = TravelTimeModel.load(tmp_path / "old")
    assert old.forest_durations is False and old.forest_durations_ is None
    off = copy.deepcopy(forest_model)
    off.forest_durations_ = None
    np.testing.assert_allclose(old.predict(queries), off.predict(queries), rtol=1e-12)
    save_orphan_array(meta, arrays, "forest__roots", np.zeros(1, np.int64), tmp_path / "bad")
    with pytest.raises(ModelFormatError, match="forest-duration arrays"):
        TravelTimeModel.load(tmp_path / "bad")


def test_updates_between_refreshes_leave_the_forest_as_fitted(forest_model):
    model = copy.deepcopy(forest_model)
    before = model.forest_durations_.to_state()
    model.update(_two_kinds_of_trip(200, seed=3))
    assert model._online.n_refreshes == 0
    after = model.forest_durations_.to_state()
    assert after[0] == before[0]
    for name, value in before[1].items():
        np.testing.assert_array_equal(after[1][name], value)


def test_a_forest_left_off_leaves_the_model_as_without_it(monkeypatch):
    trips = _two_kinds_of_trip(2400, seed=0)
    without = TravelTimeModel(**FAST, forest_durations=False).fit(trips)
    assert without.forest_durations_ is None
    monkeypatch.setattr(fd, "MIN_GAIN", 0.99)  # scored, and off
    off = TravelTimeModel(**FAST).fit(trips)
    assert off.forest_durations_ is not None and not off.forest_durations_.active
    assert off.location_.median_trees_ is not None  # the median trees stay
    queries = _two_kinds_of_trip(100, seed=6)
    a, b = off.predict_dist(queries), without.predict_dist(queries)
    np.testing.assert_array_equal(a.loc, b.loc)
    np.testing.assert_array_equal(a.scale, b.scale)
    assert off.spread_.to_state() == without.spread_.to_state()


def test_without_the_switch_or_the_stage_no_forest_is_grown():
    trips = _two_kinds_of_trip(2400, seed=0)
    small = TravelTimeModel(**FAST).fit(trips.head(1000))  # below the stage's 2,000 trips
    assert small.location_ is None and small.forest_durations_ is None


def test_regrowing_learns_new_trips_and_keeps_the_pool(forest):
    grown = copy.deepcopy(forest)
    F, y = _data(1500, seed=9)
    y = y + 1.0  # the city got slower: 6 and 7 log seconds
    grown.regrow(F, y, random_state=1)
    assert grown.active and grown.to_state()[0] == forest.to_state()[0]  # G' as fitted
    halves = grown.quantiles(np.array([[0.1, 0.5], [0.9, 0.5]]), C)
    np.testing.assert_allclose(np.median(halves, axis=1), [6.0, 7.0], atol=0.1)
    off = ForestDurations()
    assert off.regrow(F, y).roots.size == 0  # an off forest stays off


def test_a_refresh_of_the_stage_on_the_stream_regrows_the_forest(forest_model, monkeypatch):
    from vrvm.trips.model import _online

    model = copy.deepcopy(forest_model)
    monkeypatch.setattr(_online, "STAGE_REFRESH_FRACTION", 0.1)  # after 240 trips
    before = model.forest_durations_.to_state()
    model.update(_two_kinds_of_trip(300, seed=5))
    assert model._online.n_refreshes == 1
    after = model.forest_durations_
    assert after.active and after.score == before[0]["score"]
    assert not np.array_equal(after.values, before[1]["values"])
    # the trees are grown on the fit's trips and the stream's: more leaves than before
    assert after.values.shape[0] > before[1]["values"].shape[0]


def test_on_many_trips_the_forest_grows_on_a_sample_scored_by_its_own_trips(monkeypatch):
    F, y = _data(1500)
    monkeypatch.setattr(fd, "FOREST_ROWS", 600)
    asked = []

    def oracle(rows, grid):  # a model that knows each trip's duration to 0.01
        asked.append(rows)
        return special.ndtr((grid[None, :] - y[rows][:, None]) / 0.01)

    forest = ForestDurations().fit(F, y, oracle, None, n_components=C, random_state=0)
    (rows,) = asked
    assert rows.size == 600 and np.unique(rows).size == 600 and rows.max() < 1500
    # each trip scored against its own duration: no forest beats the oracle
    assert not forest.active and forest.score["model"] < 1.0


def test_answers_built_member_by_member_read_the_pool_through_its_map(forest_model):
    queries = _two_kinds_of_trip(50, seed=7)
    dist = forest_model.predict_dist(queries)
    t = np.full(len(queries), 900.0)
    members = dist.base.member_cdf(t) if hasattr(dist, "base") else dist.member_cdf(t)
    # a fleet's answer from the members' cdfs equals the trip's own P(within 15 min)
    np.testing.assert_allclose(forest_model.recalibrate(members.mean(axis=0)), dist.cdf(t))


def test_the_answer_says_what_its_density_is_made_of(forest_model):
    from vrvm.services.answers.forecast import density_description, member_medians

    dist = forest_model.predict_dist(_two_kinds_of_trip(5, seed=8))
    assert forest_model.forest_pooled()
    text = density_description(dist, forest=forest_model.forest_pooled())
    assert "quantile forest" in text and "half and half" in text
    # every member's median is its own pooled median, between the mixture's extremes
    medians = member_medians(dist)
    base = dist.base if hasattr(dist, "base") else dist
    for m in range(dist.n_members):
        np.testing.assert_allclose(base.member_cdf(medians[m])[m], 0.5, atol=1e-9)
