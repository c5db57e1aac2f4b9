"""Tests of vrvm.engine.metrics against hand-computed values and known distributions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from vrvm.engine.distributions import Normal
from vrvm.engine.metrics import evaluate_distribution, pit_histogram, point_errors
from vrvm.engine.mixture import MixtureDistribution


def test_point_errors_hand_computed():
    errors = point_errors([110.0, 180.0, 400.0], [100.0, 200.0, 400.0])
    # errors +10, -20, 0
    assert errors["rmse_s"] == pytest.approx(np.sqrt((100 + 400 + 0) / 3))
    assert errors["mae_s"] == pytest.approx(10.0)
    assert errors["bias_s"] == pytest.approx(-10 / 3)
    assert errors["mape_pct"] == pytest.approx(100 * (0.1 + 0.1 + 0.0) / 3)


def test_point_errors_mape_undefined_at_zero_and_infinite_values_are_none():
    assert point_errors([1.0, 2.0], [0.0, 2.0])["mape_pct"] is None
    errors = point_errors([np.inf, 2.0], [1.0, 2.0])
    assert errors["rmse_s"] is None and errors["mae_s"] is None


def test_pit_histogram_counts_and_density():
    pit = pit_histogram([0.0, 0.1, 0.25, 0.5, 0.99, 1.0], bins=4)
    assert pit["bin_edges"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert pit["counts"] == [2, 1, 1, 2]  # 1.0 falls in the last bin
    assert pit["density"] == pytest.approx([2 / 1.5, 1 / 1.5, 1 / 1.5, 2 / 1.5])


def test_evaluate_distribution_hand_computed_gaussian():
    loc = np.array([100.0, 200.0, 300.0])
    scale = np.array([10.0, 20.0, 30.0])
    y = np.array([100.0, 220.0, 270.0])  # z = 0, +1, -1
    scores = evaluate_distribution(Normal(loc, scale), y, levels=(0.5, 0.9), pit_bins=4)

    z = np.array([0.0, 1.0, -1.0])
    assert scores["n"] == 3
    assert scores["median"]["mae_s"] == pytest.approx((0 + 20 + 30) / 3)
    assert scores["mean"]["rmse_s"] == pytest.approx(np.sqrt((0 + 400 + 900) / 3))
    assert scores["median"]["bias_s"] == pytest.approx((0 - 20 + 30) / 3)
    nll = np.mean(0.5 * np.log(2 * np.pi) + np.log(scale) + 0.5 * z**2)
    assert scores["nll"] == pytest.approx(nll)
    # Gaussian CRPS, Gneiting & Raftery (2007) eq. 21
    crps = scale * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))
    assert scores["crps_s"] == pytest.approx(crps.mean())
    # central 50 % interval: |z| <= 0.674, so only the first trip is inside
    level50, level90 = scores["intervals"]
    assert level50["level"] == 0.5 and level50["coverage"] == pytest.approx(1 / 3)
    assert level50["mean_width_s"] == pytest.approx(2 * stats.norm.ppf(0.75) * scale.mean())
    assert level90["coverage"] == 1.0
    # PIT values 0.5, 0.841, 0.159 on 4 bins
    assert scores["pit"]["counts"] == [1, 0, 1, 1]


def test_calibrated_forecast_has_flat_pit_and_nominal_coverage():
    rng = np.random.default_rng(0)
    n = 20_000
    loc = rng.normal(6.5, 0.5, n)  # log-seconds
    scale = rng.uniform(0.1, 0.4, n)
    dist = MixtureDistribution(loc[None, :], scale[None, :], df=[[5.0]], transform="log")
    y = np.exp(loc + scale * rng.standard_t(5.0, n))  # drawn from the forecast itself

    scores = evaluate_distribution(dist, y)
    for interval in scores["intervals"]:
        # binomial standard error at n = 20000 is at most 0.0035
        assert interval["coverage"] == pytest.approx(interval["level"], abs=0.015)
    counts = np.array(scores["pit"]["counts"])
    assert stats.chisquare(counts).pvalue > 1e-3
    assert np.all(np.abs(np.array(scores["pit"]["density"]) - 1.0) < 0.1)


def test_overconfident_forecast_undercovers_with_u_shaped_pit():
    rng = np.random.default_rng(1)
    n = 5000
    y = rng.normal(300.0, 30.0, n)
    scores = evaluate_distribution(Normal(np.full(n, 300.0), np.full(n, 10.0)), y)
    assert all(i["coverage"] < i["level"] - 0.2 for i in scores["intervals"])
    density = scores["pit"]["density"]
    assert density[0] > 2 and density[-1] > 2 and density[4] < 0.5


def test_result_is_json_serialisable_even_with_infinite_moments():
    # log-t with df <= 2: the mean and std are infinite -> reported as None
    dist = MixtureDistribution(np.log([[300.0, 600.0]]), 0.3, df=[[1.5]], transform="log")
    scores = evaluate_distribution(dist, [320.0, 500.0])
    assert scores["mean"]["rmse_s"] is None
    assert scores["median"]["rmse_s"] is not None
    assert json.loads(json.dumps(scores, allow_nan=False)) == scores


def test_observation_outside_the_support_gives_infinite_nll_as_none():
    dist = MixtureDistribution(np.log([[300.0, 600.0]]), 0.3, transform="log")
    scores = evaluate_distribution(dist, [0.0, 500.0])
    assert scores["nll"] is None
    assert scores["median"]["mape_pct"] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y_true_seconds": [1.0, 2.0, 3.0]}, "describes 2 trips"),
        ({"y_true_seconds": [1.0, np.nan]}, "NaN"),
        ({"y_true_seconds": []}, "empty"),
        ({"y_true_seconds": [[1.0, 2.0]]}, "one-dimensional"),
        ({"y_true_seconds": [1.0, 2.0], "levels": (0.5, 1.0)}, "levels"),
        ({"y_true_seconds": [1.0, 2.0], "levels": ()}, "levels"),
        ({"y_true_seconds": [1.0, 2.0], "pit_bins": 0}, "pit_bins"),
    ],
)
def test_invalid_input_is_refused_with_a_clear_message(kwargs, message):
    dist = Normal([1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=message):
        evaluate_distribution(dist, **kwargs)
