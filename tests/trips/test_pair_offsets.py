"""Zone-pair offsets (vrvm.trips.model.pair_offsets): the shrunk means, their leave-one-out
versions, nested levels, storage, and the model that uses them."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model.pair_offsets import ENDS, SHRINKAGE_GRID, PairOffsets, loo_shrinkage
from vrvm.trips.places.zones import latlng_to_cell_ints

FAST = {"n_members": 4, "kernel_widths": [1.5, 3.0], "max_basis": 120, "random_state": 0}


def _ends(rng, n):
    """Trip ends at 9 points far apart (distinct H3 cells of resolution 7), so that each
    of the 81 pairs repeats."""
    lat = rng.choice(np.linspace(41.80, 41.95, 3), size=(n, 2)) + rng.normal(0, 1e-4, (n, 2))
    lon = rng.choice(np.linspace(-87.75, -87.60, 3), size=(n, 2)) + rng.normal(0, 1e-4, (n, 2))
    return lat[:, 0], lon[:, 0], lat[:, 1], lon[:, 1]


def test_the_shrinkage_is_the_best_leave_one_out_predictor_of_the_grid():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 60, 900)
    residual = rng.normal(0, 0.3, 60)[codes] + rng.standard_t(3, codes.size) * 0.4
    errors = {}
    for k in SHRINKAGE_GRID:  # the leave-one-out offsets, trip by trip
        loo = [
            residual[(codes == codes[i]) & (np.arange(codes.size) != i)].sum()
            / ((codes == codes[i]).sum() - 1 + k)
            for i in range(codes.size)
        ]
        errors[k] = np.abs(residual - np.array(loo)).mean()
    best = min(errors, key=errors.get)
    assert errors[best] < np.abs(residual).mean()
    assert loo_shrinkage(codes, residual) == best


def test_one_level_offsets_are_shrunk_means_and_loo_leaves_each_trip_out():
    rng = np.random.default_rng(0)
    ends = _ends(rng, 2000)
    cells = [latlng_to_cell_ints(ends[0], ends[1], 7), latlng_to_cell_ints(ends[2], ends[3], 7)]
    effect = {
        pair: rng.normal(0, 0.4) for pair in set(zip(*[c.tolist() for c in cells], strict=True))
    }
    pairs = list(zip(*[c.tolist() for c in cells], strict=True))
    residual = np.array([effect[p] for p in pairs]) + rng.normal(0, 0.3, len(pairs))

    offsets = PairOffsets([7])
    loo = offsets.fit(*ends, residual)
    (level,) = offsets.levels
    k = level["k"]
    assert np.isfinite(k) and level["n"].sum() == len(pairs)
    for i in range(0, len(pairs), 97):
        same = np.array([p == pairs[i] for p in pairs])
        assert offsets.offset(*[np.atleast_1d(e[i]) for e in ends])[0] == pytest.approx(
            residual[same].sum() / (same.sum() + k)
        )
        others = same & (np.arange(len(pairs)) != i)
        assert loo[i] == pytest.approx(residual[others].sum() / (others.sum() + k))
    # the offsets recover the planted effects (a pair holds ~25 trips)
    fitted = offsets.offset(*ends)
    truth = np.array([effect[p] for p in pairs])
    assert np.corrcoef(fitted, truth)[0, 1] > 0.95


def test_unseen_pairs_get_no_offset_and_levels_go_coarse_to_fine():
    rng = np.random.default_rng(1)
    ends = _ends(rng, 1500)
    offsets = PairOffsets([7, 8])
    offsets.fit(*ends, rng.normal(0, 0.3, 1500) + 0.5 * (ends[0] > 41.87))
    far = offsets.offset([10.0], [10.0], [10.5], [10.5])
    assert far.tolist() == [0.0]
    with pytest.raises(ValueError, match="coarse to fine"):
        PairOffsets([9, 7])


def test_the_state_round_trips_and_bad_arrays_are_refused():
    rng = np.random.default_rng(2)
    ends = _ends(rng, 1500)
    offsets = PairOffsets([7, 8, 9])
    offsets.fit(*ends, rng.normal(0, 0.3, 1500) + 0.5 * (ends[2] > 41.87))
    meta, arrays = offsets.to_state()
    again = PairOffsets.from_state(json.loads(json.dumps(meta)), arrays)
    np.testing.assert_array_equal(again.offset(*ends), offsets.offset(*ends))
    broken = {**arrays, "0__offset": arrays["0__offset"][:-1]}
    with pytest.raises(ValueError, match="different lengths"):
        PairOffsets.from_state(meta, broken)


@pytest.fixture(scope="module")
def slow_pair():
    """Synthetica's trips with one busy zone pair made 60 % slower than the city says."""
    trips = synthetic_city(6000, seed=4)
    o = latlng_to_cell_ints(trips["origin_lat"], trips["origin_lon"], 7)
    d = latlng_to_cell_ints(trips["dest_lat"], trips["dest_lon"], 7)
    keys = o.astype(object) * (1 << 64) + d.astype(object)
    values, counts = np.unique(keys, return_counts=True)
    busy = keys == values[np.argmax(counts)]
    trips.loc[busy, "travel_time_s"] *= 1.6
    rng = np.random.default_rng(0)
    test = rng.random(len(trips)) < 0.25
    return trips[~test], trips[test], busy[test]


def test_the_model_learns_a_pair_its_kernels_miss(slow_pair):
    train, test, busy = slow_pair
    assert busy.sum() >= 10
    plain = TravelTimeModel(**FAST, pair_offsets=False).fit(train)
    with_offsets = TravelTimeModel(**FAST).fit(train)
    assert plain.pair_offsets_ is None and with_offsets.pair_offsets_ is not None
    y = test["travel_time_s"].to_numpy()
    models = (plain, with_offsets)
    on_pair = [model.predict_dist(test[busy]).crps(y[busy]).mean() for model in models]
    assert on_pair[1] < 0.9 * on_pair[0]
    overall = [model.predict_dist(test).crps(y).mean() for model in models]
    assert overall[1] < overall[0]


def test_offsets_are_saved_and_updates_learn_what_they_leave(slow_pair, tmp_path):
    train, test, _ = slow_pair
    model = TravelTimeModel(**FAST).fit(train)
    loaded = TravelTimeModel.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))
    assert [lv["k"] for lv in loaded.pair_offsets_.levels] == [
        lv["k"] for lv in model.pair_offsets_.levels
    ]

    # a model saved before offsets existed loads without them and predicts as saved
    plain = TravelTimeModel(**FAST, pair_offsets=False).fit(train)
    path = plain.save(tmp_path / "old")
    manifest = json.loads((path / "model.json").read_text())
    del manifest["metadata"]["pair_offsets"], manifest["metadata"]["params"]["pair_offsets"]
    manifest["format_version"] = 3
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert old.pair_offsets is False and old.pair_offsets_ is None
    np.testing.assert_array_equal(old.predict(test), plain.predict(test))

    # an update feeds the members each trip less its offset
    seen = []
    member = loaded.members_[0]
    real = type(member)._update

    def recording(self, X, y, linear, forgetting):
        seen.append(np.array(y))
        return real(self, X, y, linear, forgetting)

    type(member)._update = recording
    try:
        batch = test.head(8)
        loaded.update(batch, assign="all")
    finally:
        type(member)._update = real
    # ... and less the location stage's location
    X, d = loaded.featurizer_.transform(batch)
    expected = (
        np.log(batch["travel_time_s"].to_numpy())
        - loaded.pair_offsets_.offset_of_trips(batch)
        - loaded.location_.offset(loaded.featurizer_, batch, X, d)
    )
    np.testing.assert_allclose(seen[0], expected)


def test_a_two_stage_fit_learns_the_pair_from_all_trips(slow_pair):
    train, test, busy = slow_pair
    fits = [
        TravelTimeModel(**FAST, subsample_size=800, pair_offsets=flag).fit(train)
        for flag in (False, True)
    ]
    assert all("two_stage" in model.training_summary_ for model in fits)
    plain, with_offsets = fits
    assert plain.pair_offsets_ is None
    # levels chosen on the sample (about 4 members x 800), offsets summed over all trips
    sample = with_offsets.training_summary_["two_stage"]["sample_trips"]
    assert 3000 < sample < len(train)
    assert with_offsets.pair_offsets_.levels[0]["n"].sum() == len(train)
    y = test["travel_time_s"].to_numpy()
    on_pair = [model.predict_dist(test[busy]).crps(y[busy]).mean() for model in fits]
    assert on_pair[1] < 0.9 * on_pair[0]
    overall = [model.predict_dist(test).crps(y).mean() for model in fits]
    assert overall[1] < overall[0]


def test_a_snapped_export_keeps_no_offsets_finer_than_its_zones(slow_pair):
    from vrvm.trips.model.snapping import snap_model

    train = slow_pair[0]
    model = TravelTimeModel(**FAST).fit(train)
    resolutions = [level["resolution"] for level in model.pair_offsets_.levels]
    assert len(resolutions) >= 2  # the zones' level and a finer one
    snapped = snap_model(model, resolution=resolutions[0])
    assert [lv["resolution"] for lv in snapped.pair_offsets_.levels] == resolutions[:1]
    assert [lv["resolution"] for lv in model.pair_offsets_.levels] == resolutions  # untouched
    assert snap_model(model, resolution=resolutions[0] - 1).pair_offsets_ is None


def test_learning_trips_adds_them_to_their_pairs_sums():
    """One level: fitting on the first trips and learning the rest gives the offsets of
    the sums over all of them (with the first fit's k), new pairs included."""
    rng = np.random.default_rng(5)
    ends = _ends(rng, 1200)
    residual = rng.normal(0, 0.3, 1200) + 0.4 * (ends[0] > 41.87) - 0.3 * (ends[3] < -87.7)
    first = np.arange(1200) < 700
    part = PairOffsets([7])
    part.fit(*[e[first] for e in ends], residual[first])
    k = part.levels[0]["k"]
    # the later trips also come from a pair the first ones never joined
    far = (10.0, 10.0, 10.5, 10.5)
    later_ends = [np.append(e[~first], v) for e, v in zip(ends, far, strict=True)]
    later = np.append(residual[~first], 0.8)
    for chunk in np.array_split(np.arange(later.size), 7):  # batches, a pair repeating
        part.learn(*[e[chunk] for e in later_ends], later[chunk])

    all_ends = [np.append(a[first], b) for a, b in zip(ends, later_ends, strict=True)]
    all_residual = np.append(residual[first], later)
    cells = [
        latlng_to_cell_ints(all_ends[0], all_ends[1], 7),
        latlng_to_cell_ints(all_ends[2], all_ends[3], 7),
    ]
    pairs = list(zip(*[c.tolist() for c in cells], strict=True))
    for i in range(0, len(pairs), 53):
        same = np.array([p == pairs[i] for p in pairs])
        expected = all_residual[same].sum() / (same.sum() + k)
        got = part.offset(*[np.atleast_1d(e[i]) for e in all_ends])[0]
        assert got == pytest.approx(expected)
    assert part.offset([10.0], [10.0], [10.5], [10.5])[0] == pytest.approx(0.8 / (1 + k))
    meta, arrays = part.to_state()  # the grown tables are saved whole
    again = PairOffsets.from_state(meta, arrays)
    np.testing.assert_array_equal(again.offset(*all_ends), part.offset(*all_ends))


def test_offsets_from_summed_parts_are_those_of_the_trips():
    """Fitting the levels from pair sums (added up over parts, as a two-stage fit's third
    pass does) gives the offsets and leave-one-out offsets of :meth:`PairOffsets.fit` on
    the trips themselves, for the same shrinkages."""
    from vrvm.trips.model.pair_offsets import add_pair_sums

    trips = synthetic_city(5000, seed=3)
    rng = np.random.default_rng(3)
    ends = [trips[c].to_numpy() for c in ENDS]
    # effects of coarse pairs and of finer ones within them
    coarse = latlng_to_cell_ints(ends[0], ends[1], 6) + latlng_to_cell_ints(ends[2], ends[3], 6)
    fine = latlng_to_cell_ints(ends[0], ends[1], 7) + latlng_to_cell_ints(ends[2], ends[3], 7)
    effect = 0.3 * (coarse % np.uint64(3) == 0) + 0.3 * (fine % np.uint64(4) == 0)
    residual = effect + rng.normal(0.0, 0.3, len(trips))
    direct = PairOffsets([6, 7, 8])
    loo = direct.fit(*ends, residual)
    assert len(direct.levels) >= 2
    levels = [(lv["resolution"], lv["k"]) for lv in direct.levels]
    resolutions = [r for r, _ in levels]
    cuts = [0, 1200, 1201, 3900, 5000]
    parts = [
        PairOffsets.pair_sums(resolutions, [e[a:b] for e in ends], residual[a:b])
        for a, b in itertools.pairwise(cuts)
    ]
    total = parts[0]
    for part in parts[1:]:
        total = add_pair_sums(total, part)
    assert total["n"].sum() == len(trips)
    summed = PairOffsets.from_pair_sums(total, levels)
    for a, b in zip(direct.levels, summed.levels, strict=True):
        order_a = np.lexsort((a["dest"], a["origin"]))
        order_b = np.lexsort((b["dest"], b["origin"]))
        np.testing.assert_array_equal(a["origin"][order_a], b["origin"][order_b])
        np.testing.assert_array_equal(a["n"][order_a], b["n"][order_b])
        np.testing.assert_allclose(a["offset"][order_a], b["offset"][order_b], atol=1e-12)
    np.testing.assert_allclose(summed.leave_one_out(*ends, residual), loo, atol=1e-12)
    np.testing.assert_allclose(summed.offset(*ends), direct.offset(*ends), atol=1e-12)
    # a few trips are looked up one by one, many as arrays: the same offsets
    few = [e[:5] for e in ends]
    np.testing.assert_array_equal(summed.offset(*few), summed.offset(*ends)[:5])


def test_offsets_are_looked_up_from_several_threads_at_once(slow_pair):
    """``vrvm predict`` predicts batches in threads: the first lookups of a freshly
    loaded model race to build its indexes (a pandas Index is not thread-safe while it
    builds its hash table), and every thread must get the right offsets."""
    from concurrent.futures import ThreadPoolExecutor

    train, test, _ = slow_pair
    model = TravelTimeModel(**FAST).fit(train)
    expected = model.pair_offsets_.offset_of_trips(test)
    meta, arrays = model.pair_offsets_.to_state()
    for _ in range(10):  # the race lost in 2 of 3 runs of 5 rounds without the lock
        fresh = PairOffsets.from_state(meta, arrays)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(fresh.offset_of_trips, [test] * 8))
        for result in results:
            np.testing.assert_array_equal(result, expected)


def test_a_two_stage_fit_sums_a_share_of_many_trips_and_all_of_its_sample(slow_pair, monkeypatch):
    """Beyond ``OFFSET_TRIPS`` the third pass sums a uniform share of the trips, and
    always the sample's (their leave-one-out offsets are taken from the sums)."""
    from vrvm.trips.model import training

    train = slow_pair[0]
    monkeypatch.setattr(training, "OFFSET_TRIPS", 1000)
    model = TravelTimeModel(**FAST, subsample_size=500).fit(train)
    sample = model.training_summary_["two_stage"]["sample_trips"]
    rate = 1000 / len(train)
    summed = model.pair_offsets_.levels[0]["n"].sum()
    expected = sample + rate * (len(train) - sample)
    assert sample < summed < len(train)
    assert abs(summed - expected) < 4 * np.sqrt(expected)
