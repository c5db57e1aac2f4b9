"""Answers of a model that predicts through a PIT map (issue 34) agree with its
predictive: a fleet's one base, pooled departures and the mean of the slowest trips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from tests.conftest import skewed_trips
from vrvm import RecalibratedMixture
from vrvm.services.answers.indices import pool_departures, tail_mean
from vrvm.services.map.area import build_service_area
from vrvm.services.planning.fleet import bases_at_points, fleet_coverage, rank_new_base

DEPARTURE = pd.Timestamp("2024-03-05 08:15", tz="UTC")


@pytest.fixture(scope="module")
def area(skewed_model):
    return build_service_area(skewed_model, trips=skewed_trips(3000, seed=1))


def test_one_base_answers_what_the_trip_answers(skewed_model, area):
    grid = area.grid
    base = bases_at_points(area, ["A"], [float(grid["lat"][0])], [float(grid["lon"][0])])
    coverage = fleet_coverage(skewed_model, area, base, DEPARTURE.tz_convert(skewed_model.tz_), 10)
    queries = pd.DataFrame(
        {
            "origin_lat": float(base["lat"][0]),
            "origin_lon": float(base["lon"][0]),
            "dest_lat": grid["lat"],
            "dest_lon": grid["lon"],
            "start_time": coverage.departure,
        }
    )
    dist = skewed_model.predict_dist(queries)
    assert isinstance(dist, RecalibratedMixture)
    np.testing.assert_allclose(coverage.grid["p_best"], dist.cdf(600.0), atol=1e-12)
    np.testing.assert_allclose(coverage.grid["p_any"], dist.cdf(600.0), atol=1e-12)
    # a second base's gain is the change of the mapped coverage, exactly
    ranked = rank_new_base(skewed_model, area, coverage, np.ones(len(grid)), top=3)
    second = bases_at_points(
        area,
        ["A", "B"],
        [float(base["lat"][0]), float(ranked["lat"][0])],
        [float(base["lon"][0]), float(ranked["lon"][0])],
    )
    after = fleet_coverage(skewed_model, area, second, coverage.departure, 10)
    np.testing.assert_allclose(ranked["any_after"][0], after.grid["p_any"].mean(), rtol=1e-9)
    np.testing.assert_allclose(ranked["best_after"][0], after.grid["p_best"].mean(), rtol=1e-9)


def test_pooled_departures_stay_recalibrated(skewed_model):
    trip = skewed_trips(1, seed=7)
    times = pd.date_range("2024-03-05 07:00", periods=4, freq="20min", tz=skewed_model.tz_)
    queries = pd.concat([trip.assign(start_time=t) for t in times], ignore_index=True)
    dist = skewed_model.predict_dist(queries)
    pooled = pool_departures(dist, 4)
    assert isinstance(pooled, RecalibratedMixture) and len(pooled) == 1
    t = np.array([300.0, 600.0, 1200.0])
    np.testing.assert_allclose(pooled.cdf(t[:, None])[:, 0], dist.cdf(t[:, None]).mean(axis=1))


def test_mean_of_the_slowest_trips_by_quadrature(skewed_model):
    dist = skewed_model.predict_dist(skewed_trips(2, seed=8))
    assert isinstance(dist, RecalibratedMixture)
    got = tail_mean(dist, 0.2)
    for j in range(2):
        one = dist[j]

        def quantile(p, one=one):
            return float(one.ppf(p)[0])

        expected = integrate.quad(quantile, 0.8, 1.0, limit=200)[0] / 0.2
        np.testing.assert_allclose(got[j], expected, rtol=1e-4)


def test_the_predict_pages_answer_reads_the_map(skewed_model, area):
    from vrvm.services.answers.forecast import density_curve, density_description, forecast_od
    from vrvm.services.map.places import place_from_zone

    grid = area.grid
    origin, dest = place_from_zone(area, grid["zone"][0]), place_from_zone(area, grid["zone"][5])
    departure = DEPARTURE.tz_convert(skewed_model.tz_)
    answer = forecast_od(skewed_model, origin, dest, departure, 10.0)
    dist = answer.dist
    assert isinstance(dist, RecalibratedMixture)
    assert answer.median_min == pytest.approx(float(dist.ppf(0.5)[0]) / 60.0)
    assert answer.prob_within == pytest.approx(float(dist.cdf(600.0)[0]))
    assert np.isfinite(answer.mean_min) and answer.std_min > 0
    assert "PIT map" in density_description(dist)  # the chart's caption says what it shows
    curve = density_curve(dist)
    # the members drawn under the density add up to it
    members = curve.filter(like="member").to_numpy()
    if members.size:
        np.testing.assert_allclose(members.sum(axis=1), curve["density"], rtol=1e-9)
