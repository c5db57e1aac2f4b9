"""What changed between two models: P(slower) and the intervals against Monte Carlo,
the rule "within the models' own uncertainty", areas that cannot be compared, the map."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vrvm import TravelTimeModel, synthetic_city
from vrvm.engine.calibration import PitMap
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.services.answers.matrix import points_table
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import Place, busiest_zones, place_from_zone
from vrvm.services.planning.compare import (
    CHANGE_PALETTE,
    QUADRATURE_LEVELS,
    WITHIN_LEGEND,
    DifferentAreasError,
    check_comparable,
    compare_colors,
    compare_columns,
    compare_distributions,
    compare_map,
    compare_matrix,
    compare_reach,
    compare_summary,
    compare_trip,
    iter_compare_matrix,
)

DEPART = "2024-03-05 08:15"
N_MC = 400_000  # Monte Carlo draws per trip and side: 4 sigma of P(slower) is <= 0.0032
QUADRATURE_BOUND = 1.0 / (2 * QUADRATURE_LEVELS)  # P(slower): midpoint rule, monotone
INTERVAL_BOUND = 3.0 / (2 * QUADRATURE_LEVELS)  # the discretised convolution's bound


def _model(trips: pd.DataFrame, seed: int = 0) -> TravelTimeModel:
    return TravelTimeModel(
        n_members=3, max_basis=60, kernel_widths=[1.5, 3.0], random_state=seed
    ).fit(trips)


@pytest.fixture(scope="module")
def trips() -> pd.DataFrame:
    return synthetic_city(1500, seed=1)


@pytest.fixture(scope="module")
def model_a(trips) -> TravelTimeModel:
    return _model(trips)


@pytest.fixture(scope="module")
def model_slow(trips) -> TravelTimeModel:
    """The same trips, every travel time 30 % longer."""
    return _model(trips.assign(travel_time_s=trips["travel_time_s"] * 1.3))


@pytest.fixture(scope="module")
def queries() -> pd.DataFrame:
    return synthetic_city(20, seed=7)


def _monte_carlo(dist_a, dist_b) -> np.ndarray:
    """Draws of T_B - T_A, the two sides independent (fixed seeds), shape (N_MC, n)."""
    return dist_b.sample(N_MC, random_state=2) - dist_a.sample(N_MC, random_state=1)


def _four_sigma(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return 4.0 * np.sqrt(np.maximum(p * (1 - p), 1e-4) / N_MC)


# ------------------------------------------------------------------- against Monte Carlo
def test_p_slower_and_the_difference_interval_match_monte_carlo(model_a, model_slow, queries):
    dist_a, dist_b = model_a.predict_dist(queries), model_slow.predict_dist(queries)
    table = compare_distributions(dist_a, dist_b)
    diff = _monte_carlo(dist_a, dist_b)
    p_mc = (diff > 0).mean(axis=0)
    p = table["p_slower"].to_numpy()
    assert np.all(np.abs(p - p_mc) <= _four_sigma(p_mc) + QUADRATURE_BOUND)
    below_lo = (diff <= table["diff_lower90_s"].to_numpy()).mean(axis=0)
    below_hi = (diff <= table["diff_upper90_s"].to_numpy()).mean(axis=0)
    assert np.all(np.abs(below_lo - 0.05) <= _four_sigma(0.05) + INTERVAL_BOUND)
    assert np.all(np.abs(below_hi - 0.95) <= _four_sigma(0.95) + INTERVAL_BOUND)


def test_the_quadrature_agrees_with_a_sixteen_times_finer_one(model_a, model_slow, queries):
    dist_a, dist_b = model_a.predict_dist(queries), model_slow.predict_dist(queries)
    table = compare_distributions(dist_a, dist_b)
    fine = compare_distributions(dist_a, dist_b, n_levels=16 * QUADRATURE_LEVELS)
    assert np.abs(table["p_slower"] - fine["p_slower"]).max() < 1e-4
    width = (fine["diff_upper90_s"] - fine["diff_lower90_s"]).to_numpy()
    for column in ("diff_lower90_s", "diff_upper90_s"):
        assert np.all(np.abs(table[column] - fine[column]).to_numpy() < 0.005 * width)


def test_a_recalibrated_predictive_is_compared_through_its_map():
    loc = np.log([[600.0, 900.0], [640.0, 960.0]])
    narrower = PitMap([0.0, 0.1, 0.4, 0.4, 0.1, 0.0])
    dist_a = MixtureDistribution(loc, 0.3, df=5.0, transform="log")
    dist_b = RecalibratedMixture(loc + 0.1, 0.3, df=5.0, transform="log", pit_map=narrower)
    table = compare_distributions(dist_a, dist_b)
    diff = _monte_carlo(dist_a, dist_b)
    p_mc = (diff > 0).mean(axis=0)
    assert np.all(np.abs(table["p_slower"] - p_mc) <= _four_sigma(p_mc) + QUADRATURE_BOUND)
    assert np.allclose(table["median_b_s"], dist_b.median())


# ---------------------------------------------------------------------- what it says
def test_identical_models_give_one_half_and_no_change(model_a, queries):
    dist = model_a.predict_dist(queries)
    table = compare_distributions(dist, dist, threshold_s=900)
    assert np.allclose(table["p_slower"], 0.5, atol=1e-9)
    assert np.all(table["median_change_s"] == 0.0)
    assert table["within_uncertainty"].all()
    assert np.all(table[compare_columns(900)[-1]] == 0.0)
    assert np.allclose(table["diff_lower90_s"], -table["diff_upper90_s"], rtol=1e-3)
    assert np.all(table["median_change_lower90_s"] < 0) and np.all(
        table["median_change_upper90_s"] > 0
    )


def test_a_model_of_slower_trips_is_slower(model_a, model_slow, queries):
    table = compare_distributions(
        model_a.predict_dist(queries), model_slow.predict_dist(queries), threshold_s=900
    )
    assert table["p_slower"].min() > 0.6
    assert table["p_slower"].mean() > 0.7
    ratio = table["median_b_s"] / table["median_a_s"]
    assert 1.15 < ratio.median() < 1.45
    assert (table["diff_upper90_s"] > 0).all() and (table["median_change_s"] > 0).all()
    assert (table[compare_columns(900)[-1]] <= 1e-9).all()  # less likely within 15 min
    assert not table["within_uncertainty"].all()


def test_within_uncertainty_is_welchs_interval_of_the_members_medians():
    members = np.array([600.0, 620.0, 640.0])
    loc = np.log(members)[:, None]
    dist_a = MixtureDistribution(loc, 0.2, transform="log")
    small = MixtureDistribution(loc + np.log(1.04), 0.2, transform="log")
    large = MixtureDistribution(loc + np.log(1.10), 0.2, transform="log")
    near, far = (compare_distributions(dist_a, b).iloc[0] for b in (small, large))
    for row, factor in ((near, 1.04), (far, 1.10)):
        test = stats.ttest_ind(members * factor, members, equal_var=False)
        low, high = test.confidence_interval(0.9)
        half = (row["median_change_upper90_s"] - row["median_change_lower90_s"]) / 2
        assert half == pytest.approx((high - low) / 2, rel=1e-9)
        centre = (row["median_change_upper90_s"] + row["median_change_lower90_s"]) / 2
        assert centre == pytest.approx(row["median_change_s"], rel=1e-12)
    assert near["within_uncertainty"] and not far["within_uncertainty"]
    assert near["median_change_lower90_s"] < 0 < near["median_change_upper90_s"]


def test_members_without_spread_are_within_only_when_nothing_changed():
    loc = np.log([[600.0], [600.0]])
    same = compare_distributions(
        MixtureDistribution(loc, 0.2, transform="log"),
        MixtureDistribution(loc, 0.2, transform="log"),
    ).iloc[0]
    moved = compare_distributions(
        MixtureDistribution(loc, 0.2, transform="log"),
        MixtureDistribution(loc + 0.01, 0.2, transform="log"),
    ).iloc[0]
    assert same["within_uncertainty"] and not moved["within_uncertainty"]
    assert moved["median_change_lower90_s"] == moved["median_change_upper90_s"]


def test_summary_counts_and_the_tally_match(model_a, model_slow, queries):
    table = compare_distributions(model_a.predict_dist(queries), model_slow.predict_dist(queries))
    summary = compare_summary(table, confident=0.7)
    assert summary["n_pairs"] == len(table)
    assert summary["n_slower"] == int((table["p_slower"] > 0.7).sum())
    assert summary["median_change_s"] == pytest.approx(table["median_change_s"].median())
    with pytest.raises(ValueError, match="confident"):
        compare_summary(table, confident=0.3)


# ----------------------------------------------------------------- pair, reach, matrix
def test_a_matrix_does_not_depend_on_its_batches(model_a, model_slow, queries):
    origins = points_table(
        queries[["origin_lat", "origin_lon"]].head(3).set_axis(["lat", "lon"], axis=1)
    )
    destinations = points_table(
        queries[["dest_lat", "dest_lon"]].head(4).set_axis(["lat", "lon"], axis=1)
    )
    whole = compare_matrix(model_a, model_slow, origins, destinations, DEPART, threshold_s=600)
    batches = list(
        iter_compare_matrix(
            model_a, model_slow, origins, destinations, DEPART, threshold_s=600, batch_pairs=5
        )
    )
    assert [len(b) for b in batches] == [5, 5, 2]
    pd.testing.assert_frame_equal(pd.concat(batches, ignore_index=True), whole)
    assert list(whole.columns) == ["origin", "destination", *compare_columns(600)]
    assert whole["origin"].tolist() == np.repeat(origins["label"], 4).tolist()
    one = compare_trip(
        model_a,
        model_slow,
        Place(origins["lat"][1], origins["lon"][1], None, "o"),
        Place(destinations["lat"][2], destinations["lon"][2], None, "d"),
        DEPART,
        threshold_s=600,
    )
    expected = whole.iloc[[6]].reset_index(drop=True).assign(origin="o", destination="d")
    pd.testing.assert_frame_equal(one, expected, check_dtype=False)


def test_reach_and_its_map(trips, model_a, model_slow):
    area = build_service_area(model_a, trips=trips, target_zones=60)
    origin = place_from_zone(area, busiest_zones(area, 1)[0])
    same = compare_reach(model_a, model_a, area, origin, DEPART, threshold_s=600)
    assert len(same) == len(area.grid)
    assert {"zone", "label", "boundary", *compare_columns(600)} <= set(same.columns)
    assert same["within_uncertainty"].all()
    fill, tips, legend = compare_map(same, "median")
    assert (fill[:, 3] <= 90).all()  # every zone faded: no change beyond uncertainty
    assert legend[-1][0] == WITHIN_LEGEND
    assert all("Within the models' own uncertainty" in tip for tip in tips)

    slower = compare_reach(model_a, model_slow, area, origin, DEPART, threshold_s=600)
    fill, tips, legend = compare_map(slower, "probability", threshold_s=600)
    assert len(fill) == len(tips) == len(slower)
    assert "P(≤ 10 min): A" in tips[0] and "P(slower under B)" in tips[0]
    clear = ~slower["within_uncertainty"].to_numpy()
    assert clear.any() and (fill[clear, 3] == 180).all()


# --------------------------------------------------------------------------- colours
def test_the_colours_diverge_about_no_change():
    table = pd.DataFrame(
        {
            "median_change_s": [-300.0, 0.0, 300.0],
            "p_slower": [0.02, 0.5, 0.98],
            "p_within_600s_change": [0.3, 0.0, -0.3],
        }
    )
    fill, legend = compare_colors(table, "median")
    assert fill[:, :3].tolist() == [list(CHANGE_PALETTE[0]), [247] * 3, list(CHANGE_PALETTE[-1])]
    assert legend[0][0].startswith("-") and legend[-1][0].endswith("min")
    assert len(legend) % 2 == 1  # a middle bin about 0
    fill, legend = compare_colors(table, "probability", threshold_s=600)
    # more likely within T under B is better: blue; less likely: red
    assert fill[0, :3].tolist() == list(CHANGE_PALETTE[0])
    assert fill[2, :3].tolist() == list(CHANGE_PALETTE[-1])
    assert legend[0][0] == "-100 pp - -20 pp"
    fill, _ = compare_colors(table, "slower")
    assert fill[0, :3].tolist() == list(CHANGE_PALETTE[0])
    assert fill[2, :3].tolist() == list(CHANGE_PALETTE[-1])
    _, legend = compare_colors(table.assign(median_change_s=0.0), "median")
    assert legend[0][0] == "-2 min - -1 min" and len(legend) == 5


def test_bad_colour_requests_are_refused():
    table = pd.DataFrame({"median_change_s": [0.0], "p_slower": [0.5]})
    with pytest.raises(ValueError, match="metric must be one of"):
        compare_colors(table, "speed")
    with pytest.raises(ValueError, match="needs threshold_s"):
        compare_colors(table, "probability")
    with pytest.raises(ValueError, match="p_within_600s_change"):
        compare_colors(table, "probability", threshold_s=600)


# ---------------------------------------------------------------- refused comparisons
def test_models_of_other_time_zones_are_refused(model_a, trips):
    chicago = trips.assign(start_time=trips["start_time"].dt.tz_convert("America/Chicago"))
    other = _model(chicago)
    assert other.tz_ == "America/Chicago"
    with pytest.raises(DifferentAreasError, match=r"time zone UTC, B .* in America/Chicago"):
        check_comparable(model_a, other)


def test_models_of_areas_that_do_not_overlap_are_refused(model_a, trips):
    moved = trips.copy()
    moved[["origin_lat", "dest_lat"]] += 1.0
    with pytest.raises(DifferentAreasError, match="do not overlap"):
        check_comparable(model_a, _model(moved))


def test_points_outside_either_training_area_are_named(model_a, model_slow, queries):
    points = points_table(
        pd.DataFrame(
            {
                "name": ["depot", "far away"],
                "lat": [queries["origin_lat"][0], queries["origin_lat"][0] + 0.5],
                "lon": [queries["origin_lon"][0], queries["origin_lon"][0]],
            }
        )
    )
    with pytest.raises(DifferentAreasError) as error:
        list(iter_compare_matrix(model_a, model_slow, points, points, DEPART))
    message = str(error.value)
    assert (
        "outside the training area of A" in message and "outside the training area of B" in message
    )
    assert "far away (" in message and "depot" not in message
    assert isinstance(error.value, ValueError)


def test_bad_input_is_refused(model_a, queries):
    dist = model_a.predict_dist(queries)
    with pytest.raises(ValueError, match="20 and 3 trips"):
        compare_distributions(dist, dist[:3])
    with pytest.raises(ValueError, match="threshold_s must be a travel time"):
        compare_distributions(dist, dist, threshold_s=-5)
    with pytest.raises(ValueError, match="n_levels"):
        compare_distributions(dist, dist, n_levels=2)
    single = MixtureDistribution(np.log([[600.0]]), 0.2, transform="log")
    with pytest.raises(ValueError, match="model A has one member"):
        compare_distributions(single, single)
    points = points_table(pd.DataFrame({"lat": [queries["origin_lat"][0]], "lon": [-30.0]}))
    with pytest.raises(ValueError, match="no destinations"):
        iter_compare_matrix(model_a, model_a, points, points.iloc[:0], DEPART)
