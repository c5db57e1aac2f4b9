"""Tests of vrvm.trips.model.travel_time.TravelTimeModel on small synthetic data."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from tests._counting import python_calls
from vrvm.engine.calibration import scale_multiplier
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips.model.model_format import FORMAT_NAME, FORMAT_VERSION
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.store.model_dir import ModelFormatError
from vrvm.trips.synthetic import synthetic_city
from vrvm.trips.table import trips_sha256

# Small and fast: explicit widths skip the width search. The members' mixture is under
# test here: the forest's pool, which would follow it, has its own tests
# (tests/trips/test_forest_durations.py).
FAST = {
    "n_members": 3,
    "kernel_widths": [1.0, 2.0],
    "max_basis": 150,
    "random_state": 0,
    "forest_durations": False,
}


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(3000, seed=0)


@pytest.fixture(scope="module")
def queries():
    return synthetic_city(200, seed=7)


@pytest.fixture(scope="module")
def model(trips):
    calls = []
    fitted = TravelTimeModel(**FAST).fit(trips, progress=lambda *a: calls.append(a))
    fitted.progress_calls = calls  # inspected by a test below
    return fitted


def _same_predictions(a: MixtureDistribution, b: MixtureDistribution, rtol=0.0):
    if rtol == 0.0:
        return np.array_equal(a.loc, b.loc) and np.array_equal(a.scale, b.scale)
    return np.allclose(a.loc, b.loc, rtol=rtol) and np.allclose(a.scale, b.scale, rtol=rtol)


# ----------------------------------------------------------------------------- fitting
def test_fitted_attributes(model, trips):
    assert len(model.members_) == 3
    assert model.kernel_widths_.tolist() == [1.0, 2.0]
    assert all(m.kernel_widths_.tolist() == [1.0, 2.0] for m in model.members_)
    assert model.h3_resolution_ == 7
    assert model.tz_ == "UTC"
    assert model.fit_time_s_ > 0
    assert model.metrics_ is None
    summary = model.training_summary_
    assert summary["n_trips"] == len(trips)
    assert summary["sha256"] == trips_sha256(trips)
    assert summary["synthetic"] is True
    lat = np.r_[trips["origin_lat"], trips["dest_lat"]]
    assert summary["bbox"][0] == lat.min() and summary["bbox"][2] == lat.max()
    assert summary["start_time_min"] == trips["start_time"].min().isoformat()
    json.dumps(summary)


def test_every_member_gets_a_balanced_stratified_shard(model, trips):
    sizes = model.shard_sizes_
    assert sizes.sum() == len(trips)
    assert sizes.max() - sizes.min() <= 1
    assert np.all(model.n_relevance_ > 0)


def test_progress_is_reported_once_per_member(model):
    # progress(done, total, elapsed_s, phase): the members' phase counts the members, from
    # a report at its start (done 0) so that its clock does not count the stages before it
    calls = [c for c in model.progress_calls if c[3] == "members"]
    assert [c[0] for c in calls] == [0, 1, 2, 3]
    assert all(c[1] == 3 for c in calls)
    elapsed = [c[2] for c in calls]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0


def test_members_are_seeded_differently_but_reproducibly(trips, model):
    seeds = [m.random_state for m in model.members_]
    assert len(set(seeds)) == 3
    again = TravelTimeModel(**FAST).fit(trips)
    assert [m.random_state for m in again.members_] == seeds


def test_auto_widths_are_chosen_once_and_shared(trips):
    model = TravelTimeModel(n_members=2, max_basis=40, selection_size=300, random_state=1).fit(
        trips.head(600)
    )
    assert model.width_scores_  # the candidate sets that were scored
    assert tuple(model.kernel_widths_) in model.width_scores_
    for member in model.members_:
        assert np.array_equal(member.kernel_widths_, model.kernel_widths_)
        assert member.width_scores_ == {}  # members did not search again


def test_user_zones_replace_h3(trips):
    zones = np.where(trips["origin_lon"].to_numpy() < trips["origin_lon"].median(), "W", "E")
    model = TravelTimeModel(**FAST).fit(trips, zones=zones)
    assert model.h3_resolution_ is None
    with pytest.raises(ValueError, match="one label"):
        TravelTimeModel(**FAST).fit(trips, zones=zones[:-1])


# ----------------------------------------------------------------------------- prediction
def test_mixture_shapes_and_positive_support(model, queries):
    dist = model.predict_dist(queries)
    assert isinstance(dist, MixtureDistribution)
    # twin scales: member m is components m and 3 + m
    assert dist.n_members == 3 and dist.n_components == 6 and len(dist) == len(queries)
    assert dist.loc.shape == dist.scale.shape == (6, len(queries))
    assert dist.transform == "log"
    assert dist.df.shape == (6, len(queries))
    lo, _ = dist.interval(0.99)
    assert np.all(lo > 0)
    assert np.all(dist.cdf(0.0) == 0.0)
    assert np.all(dist.sample(50, random_state=0) > 0)


def test_median_lies_inside_every_central_interval(model, queries):
    dist = model.predict_dist(queries)
    median = model.predict(queries)
    assert np.array_equal(median, dist.median())
    for level in (0.5, 0.8, 0.9, 0.95):
        lo, hi = dist.interval(level)
        assert np.all((lo < median) & (median < hi))


def test_fast_predictive_matches_the_members(model, queries):
    dist = model.predict_dist(queries)
    X, d = model.featurizer_.transform(queries)
    # every member's location moved by the trip's zone-pair offset and by the location
    # stage's boosted location (less its centre), then all alike toward the median trees
    stage = model.location_
    assert model.pair_offsets_ is not None and stage is not None
    offset = model.pair_offsets_.offset_of_trips(queries)
    offset = offset + stage.offset(model.featurizer_, queries, X, d)
    owns = [member.predict_dist(X, linear=d) for member in model.members_]
    mean = np.mean([own.loc + offset for own in owns], axis=0)
    median = stage.median_location_of_inputs(stage.inputs(model.featurizer_, queries, X, d))
    offset = offset + stage.median_weight_ * (median - mean)
    a, n_members = model.twin_scale_, len(model.members_)
    assert a > 0
    for m, own in enumerate(owns):
        # the members' scale times the distance scale g(x) = exp(c . [1, u, u^2]), and
        # each member twice: times e^-a and e^a
        g = scale_multiplier(model.noise_scale_coef_, d, model.noise_scale_range_)
        for row, factor in ((m, np.exp(-a)), (n_members + m, np.exp(a))):
            np.testing.assert_allclose(dist.loc[row], own.loc + offset, rtol=1e-12)
            np.testing.assert_allclose(dist.scale[row], own.scale * g * factor, rtol=1e-10)
            np.testing.assert_array_equal(dist.df[row], own.df)


def test_predictions_are_sensible(model, queries):
    median = model.predict(queries)
    truth = queries["travel_time_s"].to_numpy()
    assert np.median(np.abs(np.log(median / truth))) < 0.35


def test_naive_query_times_are_read_in_the_model_zone(model, queries):
    naive = queries.assign(start_time=queries["start_time"].dt.tz_localize(None))
    assert _same_predictions(model.predict_dist(naive), model.predict_dist(queries))


def test_seconds_target(trips, queries):
    model = TravelTimeModel(**FAST, target="seconds").fit(trips)
    dist = model.predict_dist(queries)
    assert dist.transform is None
    median = model.predict(queries)
    assert 0.5 < np.median(median) / np.median(queries["travel_time_s"]) < 2.0
    lo, hi = dist.interval(0.9)
    assert np.all((lo < median) & (median < hi))


def test_meanfield_gives_gaussian_components(trips, queries):
    model = TravelTimeModel(**{**FAST, "n_members": 2}, factorization="meanfield").fit(
        trips.head(1000)
    )
    dist = model.predict_dist(queries.head(5))
    assert dist.df is None
    X, d = model.featurizer_.transform(queries.head(5))
    factor = np.exp(-model.twin_scale_)  # the first block of the twin scales
    for m, member in enumerate(model.members_):
        g = scale_multiplier(model.noise_scale_coef_, d, model.noise_scale_range_) * factor
        np.testing.assert_allclose(dist.scale[m], member.predict_dist(X, linear=d).scale * g, 1e-10)


def test_prediction_makes_no_python_call_per_trip(model):
    # Its speed is measured by benchmarks/bench_trips.py and bench_predict_scale.py.
    # What it rests on: apart from the zone lookups of distinct points (once per point,
    # see test_zones), queries are predicted in blocks of rows, with fewer Python calls
    # than rows. Fifty distinct trips, repeated, keep the lookups out of the count.
    few = synthetic_city(50, seed=3)
    small, large = pd.concat([few] * 10), pd.concat([few] * 400)
    small.attrs = large.attrs = few.attrs
    model.predict_dist(small)  # lazy imports and caches
    n_small = python_calls(lambda: model.predict_dist(small))
    n_large = python_calls(lambda: model.predict_dist(large))
    assert n_large - n_small < len(large) - len(small), (n_small, n_large)


def test_evaluate(model, queries):
    scores = model.evaluate(queries)
    assert scores["n"] == len(queries)
    assert {"median", "mean", "nll", "crps_s", "intervals", "pit"} <= set(scores)
    assert 0.5 < scores["intervals"][2]["coverage"] <= 1.0
    json.dumps(scores, allow_nan=False)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"n_members": 0}, "n_members"),
        ({"target": "minutes"}, "target"),
        ({"backend": "spark"}, "backend"),
        ({"h3_resolution": 16}, "h3_resolution"),
        ({"max_basis": 0}, "max_basis"),
        ({"kernel_widths": [1.0, -1.0]}, "kernel_widths"),
    ],
)
def test_invalid_parameters_are_named(trips, params, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        TravelTimeModel(**{**FAST, **params}).fit(trips.head(50))


def test_bad_trips_are_refused(trips):
    with pytest.raises(ValueError, match="missing column"):
        TravelTimeModel(**FAST).fit(trips.drop(columns="travel_time_s"))
    bad = trips.head(50).copy()
    bad.loc[3, "travel_time_s"] = 0.0
    with pytest.raises(ValueError, match="positive"):
        TravelTimeModel(**FAST).fit(bad)
    with pytest.raises(ValueError, match="too few"):
        TravelTimeModel(**FAST).fit(trips.head(8))


def test_init_only_stores_parameters():
    model = TravelTimeModel(n_members=-5, target="nonsense")
    assert model.get_params()["n_members"] == -5


# ----------------------------------------------------------------------------- storage
def test_save_load_round_trip_gives_identical_predictions(model, queries, tmp_path):
    path = model.save(tmp_path / "model", metrics={"crps_s": 123.0})
    loaded = TravelTimeModel.load(path)
    assert _same_predictions(loaded.predict_dist(queries), model.predict_dist(queries))
    assert loaded.metrics_ == {"crps_s": 123.0}
    assert loaded.training_summary_ == model.training_summary_
    assert loaded.get_params() == {**model.get_params(), "client": None}
    assert loaded.h3_resolution_ == model.h3_resolution_
    assert np.array_equal(loaded.n_relevance_, model.n_relevance_)

    manifest = json.loads((path / "model.json").read_text())
    assert manifest["format_name"] == FORMAT_NAME
    assert manifest["format_version"] == FORMAT_VERSION == 11
    meta = manifest["metadata"]
    assert meta["noise_scale"]["coef"] == model.noise_scale_coef_.tolist()
    assert meta["noise_scale"]["twin"] == model.twin_scale_ == loaded.twin_scale_ > 0
    np.testing.assert_array_equal(loaded.noise_scale_coef_, model.noise_scale_coef_)
    assert loaded.noise_scale_range_ == model.noise_scale_range_
    assert meta["kernel_widths"] == [1.0, 2.0]
    assert meta["training_summary"]["sha256"] == model.training_summary_["sha256"]
    assert meta["featurizer"]["tz"] == "UTC"
    assert "m002__coef_" in manifest["arrays"]
    assert not list(path.glob("*.pkl"))


def test_tampered_arrays_are_detected(model, tmp_path):
    path = model.save(tmp_path / "model")
    npz = path / "arrays.npz"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="checksum"):
        TravelTimeModel.load(path)


def test_inconsistent_metadata_is_detected(model, tmp_path):
    path = model.save(tmp_path / "model")
    manifest = json.loads((path / "model.json").read_text())
    manifest["metadata"]["n_members"] = 5
    (path / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFormatError, match="consistent TravelTimeModel"):
        TravelTimeModel.load(path)


def test_newer_format_is_refused(model, tmp_path):
    path = model.save(tmp_path / "model")
    manifest = json.loads((path / "model.json").read_text())
    manifest["format_version"] = FORMAT_VERSION + 1
    (path / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFormatError, match="upgrade vrvm"):
        TravelTimeModel.load(path)


def test_other_format_is_refused(tmp_path):
    from vrvm.trips.store.model_dir import save_model_dir

    path = save_model_dir(
        tmp_path / "other", metadata={}, arrays={}, format_name="other", format_version=1
    )
    with pytest.raises(ModelFormatError, match="format"):
        TravelTimeModel.load(path)


# ----------------------------------------------------------------------------- parallel
def test_joblib_parallel_equals_sequential(trips, queries, model):
    parallel = TravelTimeModel(**FAST, n_jobs=2).fit(trips)
    assert _same_predictions(parallel.predict_dist(queries), model.predict_dist(queries), 1e-9)


def test_dask_backend_needs_a_cluster(trips):
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="needs a cluster"):
        TravelTimeModel(**FAST, backend="dask").fit(trips.head(300))


def test_dask_local_cluster_equals_loky(trips, queries, model):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        calls = []
        on_dask = TravelTimeModel(**FAST, backend="dask", client=client).fit(
            trips, progress=lambda *a: calls.append(a)
        )
        by_address = TravelTimeModel(
            **{**FAST, "n_members": 2}, backend="dask", client=cluster.scheduler_address
        ).fit(trips.head(600))
    assert [c[0] for c in calls if c[3] == "members"] == [0, 1, 2, 3]
    assert _same_predictions(on_dask.predict_dist(queries), model.predict_dist(queries), 1e-9)
    assert len(by_address.members_) == 2


def test_dataframe_index_does_not_matter(model, queries):
    shuffled = queries.set_index(pd.Index(np.arange(len(queries))[::-1] + 1000))
    assert _same_predictions(model.predict_dist(shuffled), model.predict_dist(queries))


def test_prediction_restores_blas_threads_even_when_concurrent(model, queries):
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_info

    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    expected = model.predict_dist(queries)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: model.predict_dist(queries), range(8)))
    # equal to rounding: a call alone may use more BLAS threads than concurrent ones,
    # and OpenBLAS's kernels on some processors then sum in another order (1 ulp seen)
    assert all(_same_predictions(r, expected, rtol=1e-12) for r in results)
    after = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert after == before


def test_training_summary_keeps_the_provenance_of_the_trips():
    trips = synthetic_city(600, seed=4)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.5, 3.0], max_basis=80, random_state=0
    ).fit(trips)
    summary = model.training_summary_
    assert summary["synthetic"] is True
    assert summary["city"] == trips.attrs["city"]
    assert summary["source"] == trips.attrs["source"]


def test_training_summary_counts_the_trips_by_kind_of_day(model, trips):
    weekend = int((trips["start_time"].dt.weekday >= 5).sum())  # UTC, the model's zone
    assert 0 < weekend < len(trips)
    assert model.training_summary_["day_kind_trips"] == {
        "weekday": len(trips) - weekend,
        "weekend": weekend,
    }
    weekdays = trips[trips["start_time"].dt.weekday < 5].iloc[:800]
    weekday_model = TravelTimeModel(**{**FAST, "n_members": 2}).fit(weekdays)
    assert weekday_model.training_summary_["day_kind_trips"] == {"weekday": 800, "weekend": 0}
    asked = weekdays.head(3).assign(
        start_time=pd.to_datetime(["2024-03-09 08:00", "2024-03-10 23:59", "2024-03-11 00:01"])
    )  # Saturday, Sunday, Monday (naive: the model's wall clock)
    assert weekday_model.trips_on_day_kind(asked).tolist() == [0, 0, 800]
    # the wall clock of the model's zone decides: Saturday 03:00 UTC is Friday in Chicago
    aware = asked.assign(start_time=pd.to_datetime(["2024-03-09 03:00"] * 3, utc=True))
    chicago = copy.copy(weekday_model)
    chicago.tz_ = "America/Chicago"
    assert chicago.trips_on_day_kind(aware).tolist() == [800, 800, 800]
    assert weekday_model.trips_on_day_kind(aware).tolist() == [0, 0, 0]


def test_a_model_saved_before_the_day_kind_counts_loads_and_predicts(model, queries, tmp_path):
    path = model.save(tmp_path / "model")
    manifest = json.loads((path / "model.json").read_text())
    assert "day_kind_trips" in manifest["metadata"]["training_summary"]
    del manifest["metadata"]["training_summary"]["day_kind_trips"]
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert "day_kind_trips" not in old.training_summary_
    assert old.trips_on_day_kind(queries) is None  # unknown, not "none"
    assert _same_predictions(old.predict_dist(queries), model.predict_dist(queries))


def test_format_1_models_load_without_the_distance_scale(model, queries, tmp_path):
    """Models saved before the distance scale (format 1) load as noise_model="constant"
    and predict with the members' own scales."""
    path = model.save(tmp_path / "model")
    manifest = json.loads((path / "model.json").read_text())
    manifest["format_version"] = 1
    del manifest["metadata"]["noise_scale"]
    del manifest["metadata"]["params"]["noise_model"]
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert old.noise_model == "constant" and not old.noise_scale_coef_.any()
    assert old.distance_in_kernel is True  # taken from the stored featurizer
    X, d = model.featurizer_.transform(queries)
    own = model.members_[0].predict_dist(X, linear=d)
    np.testing.assert_allclose(old.predict_dist(queries).scale[0], own.scale, rtol=1e-10)


def test_distance_scale_is_fitted_out_of_shard_and_constant_turns_it_off(trips, queries):
    single = {**FAST, "twin_scales": False}  # one component per member
    plain = {**single, "noise_model": "constant", "recalibration": "none"}  # nothing to fit
    constant = TravelTimeModel(**plain).fit(trips)
    assert not constant.noise_scale_coef_.any() and constant.noise_scale_score_ == {}
    assert constant.twin_scale_ == 0.0
    # a PIT map alone: the members' own spread, scored, then the map's record
    mapped = TravelTimeModel(**{**plain, "recalibration": "auto"}).fit(trips)
    score = mapped.noise_scale_score_
    assert not mapped.noise_scale_coef_.any() and score["before"] == score["after"]
    assert score["pit_map"]["n_pit"] == len(trips)
    # twin scales alone, without the distance scale
    twins = TravelTimeModel(**{**FAST, "noise_model": "constant"}).fit(trips)
    assert not twins.noise_scale_coef_.any() and twins.twin_scale_ > 0
    scaled = TravelTimeModel(**single).fit(trips)
    score = scaled.noise_scale_score_
    assert score["after"] >= score["before"] and score["n_trips"] == len(trips)
    # same members (same seeds), only the scale differs, and the median trees' weight: a
    # spread that learns nothing scores none (it stays 0)
    assert constant.location_.median_weight_ == 0.0
    scaled.location_.median_weight_ = 0.0
    a, b = constant.predict_dist(queries), scaled.predict_dist(queries)
    np.testing.assert_allclose(a.loc, b.loc)
    assert not np.allclose(a.scale, b.scale)
    # noise_scale_at(km) is the factor between them, from the distance alone
    km = haversine_km(
        *(queries[c].to_numpy() for c in ("origin_lat", "origin_lon", "dest_lat", "dest_lon"))
    )
    np.testing.assert_allclose(b.scale / a.scale, np.tile(scaled.noise_scale_at(km), (3, 1)))
    np.testing.assert_array_equal(constant.noise_scale_at(km), 1.0)
    with pytest.raises(ValueError, match="km"):
        scaled.noise_scale_at([-1.0])
    with pytest.raises(ValueError, match="'noise_model' parameter"):
        TravelTimeModel(**{**FAST, "noise_model": "wide"}).fit(trips)


def test_distance_is_a_kernel_input_unless_turned_off(trips, queries, tmp_path):
    on = TravelTimeModel(**FAST).fit(trips)
    off = TravelTimeModel(**{**FAST, "distance_in_kernel": False}).fit(trips)
    assert on.featurizer_.feature_names_[-1] == "distance"
    assert "distance" not in off.featurizer_.feature_names_
    assert on.members_[0].n_features_in_ == off.members_[0].n_features_in_ + 1
    loaded = TravelTimeModel.load(off.save(tmp_path / "off"))
    assert loaded.distance_in_kernel is False
    np.testing.assert_array_equal(loaded.predict(queries), off.predict(queries))
    with pytest.raises(ValueError, match="'distance_in_kernel' parameter"):
        TravelTimeModel(**{**FAST, "distance_in_kernel": "yes"}).fit(trips)


def test_the_name_is_saved_and_models_without_one_load(model, queries, tmp_path):
    """A model's name goes into its directory (format 3); one saved before names
    (format 2, no ``name`` parameter) loads with ``name=None``."""
    named = copy.deepcopy(model).set_params(name="Chicago taxi trips")
    path = named.save(tmp_path / "named")
    manifest = json.loads((path / "model.json").read_text())
    assert manifest["metadata"]["params"]["name"] == "Chicago taxi trips"
    assert TravelTimeModel.load(path).name == "Chicago taxi trips"
    assert TravelTimeModel.load(model.save(tmp_path / "unnamed")).name is None
    manifest["format_version"] = 2
    del manifest["metadata"]["params"]["name"]
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert old.name is None
    assert _same_predictions(old.predict_dist(queries), model.predict_dist(queries))


@pytest.mark.parametrize("bad", ["", "two\nlines", "x" * 101, 3])
def test_a_bad_name_is_refused_at_fit(trips, bad):
    with pytest.raises(ValueError, match="'name' parameter"):
        TravelTimeModel(**FAST, name=bad).fit(trips.head(50))


def test_format_4_models_load_with_one_component_per_member(model, queries, tmp_path):
    """Models saved before the twin scales (format 4) load with ``twin_scales=False``
    and predict with one component per member, as they did."""
    path = model.save(tmp_path / "model")
    manifest = json.loads((path / "model.json").read_text())
    manifest["format_version"] = 4
    del manifest["metadata"]["noise_scale"]["twin"]
    del manifest["metadata"]["params"]["twin_scales"]
    (path / "model.json").write_text(json.dumps(manifest))
    old = TravelTimeModel.load(path)
    assert old.twin_scales is False and old.twin_scale_ == 0.0
    dist = old.predict_dist(queries)
    assert dist.n_components == dist.n_members == len(model.members_)
    new = model.predict_dist(queries)
    np.testing.assert_array_equal(dist.loc, new.loc[: dist.n_members])
