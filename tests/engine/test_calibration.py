"""The distance scale of the ensemble predictive (vrvm.engine.calibration)."""

import numpy as np
import pytest
from scipy import optimize, stats

from vrvm.engine.calibration import fit_scale_model, scale_features, scale_multiplier


def _members(n=6000, seed=0, df=None):
    """Two members with unit scale; the truth's scale grows as exp(0.3 + 0.4 u - 0.2 u^2)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(-2, 2, n)
    true_coef = np.array([0.3, 0.4, -0.2])
    sd = np.exp(scale_features(u, (-2.0, 2.0)) @ true_coef)
    noise = rng.standard_normal(n) if df is None else rng.standard_t(df, n)
    y = sd * noise
    loc, scale = np.zeros((2, n)), np.ones((2, n))
    held_out = np.array([np.arange(n) % 2 == 0, np.arange(n) % 2 == 1])
    return y, loc, scale, held_out, u, true_coef


@pytest.mark.parametrize("df", [None, 5.0])
def test_recovers_a_quadratic_log_scale(df):
    y, loc, scale, held_out, u, true_coef = _members(df=df)
    dfs = None if df is None else np.full(2, df)
    z = scale_features(u, (-2.0, 2.0))
    coef, a, before, after = fit_scale_model(loc, scale, y, held_out, z, dfs)
    assert a == 0.0
    np.testing.assert_allclose(coef, true_coef, atol=0.06)
    assert after > before + 0.05


@pytest.mark.parametrize("twin", [False, True])
@pytest.mark.parametrize("df", [None, 4.0])
def test_objective_is_the_mixture_log_density_and_its_gradient_is_exact(df, twin):
    """The optimum's value equals the held-out mixture log density computed by scipy,
    and the analytic gradient vanishes there (a wrong gradient would stop elsewhere);
    with twin scales, of the mixture of every held-out member at scales s e^-a, s e^a."""
    rng = np.random.default_rng(3)
    n = 400
    y = rng.normal(0, 1.5, n)
    loc = rng.normal(0, 0.3, (3, n))
    scale = rng.uniform(0.5, 1.5, (3, n))
    held_out = rng.random((3, n)) < 0.7
    held_out[0, ~held_out.any(axis=0)] = True
    z = scale_features(rng.uniform(-1, 1, n), (-1.0, 1.0))
    dfs = None if df is None else np.array([df, df + 1, df + 2])
    # heavier tails than the members: Student-t residuals want a twin pair
    y = y if not twin else rng.standard_t(3, n) * 1.2
    coef, a, _, after = fit_scale_model(loc, scale, y, held_out, z, dfs, twin=twin)

    def direct(params):
        c, a = (params[:-1], params[-1]) if twin else (params, 0.0)
        mix = 0.0
        for factor in (np.exp(-a), np.exp(a)) if twin else (1.0,):
            s = scale * np.exp(z @ c)[None, :] * factor
            if dfs is None:
                dens = stats.norm.pdf(y[None, :], loc, s)
            else:
                dens = stats.t.pdf((y[None, :] - loc) / s, dfs[:, None]) / s
            mix = mix + np.where(held_out, dens, 0.0).sum(0) / held_out.sum(0)
        return float(np.mean(np.log(mix / (2 if twin else 1))))

    params = np.append(coef, a) if twin else coef
    assert after == pytest.approx(direct(params), rel=1e-10)
    if twin:
        assert a > 0.1  # an interior optimum: the gradient vanishes
    grad = optimize.approx_fprime(params, direct, 1e-6)
    np.testing.assert_allclose(grad, 0.0, atol=1e-4)


def test_twin_scales_recover_a_scale_mixture_and_stay_single_for_gaussian_noise():
    rng = np.random.default_rng(5)
    n = 8000
    held_out = np.array([np.arange(n) % 2 == 0, np.arange(n) % 2 == 1])
    loc, scale, z = np.zeros((2, n)), np.ones((2, n)), np.ones((n, 1))
    spread = np.where(rng.random(n) < 0.5, 0.6, 1.5)  # geometric mean 0.95, a = log 1.58
    coef, a, before, after = fit_scale_model(
        loc, scale, rng.normal(0.0, spread), held_out, z, twin=True
    )
    assert np.exp(coef[0]) == pytest.approx(np.sqrt(0.6 * 1.5), rel=0.05)
    assert np.exp(a) == pytest.approx(np.sqrt(1.5 / 0.6), rel=0.05)
    assert after > before
    _, a, _, _ = fit_scale_model(loc, scale, rng.normal(0.0, 2.0, n), held_out, z, twin=True)
    assert a < 0.1  # one Gaussian: no pair beats a single scale by much


def test_multiplier_clips_to_the_training_range_and_rows_need_a_held_out_member():
    coef = np.array([0.0, 1.0, 1.0])
    inside = scale_multiplier(coef, np.array([1.0]), (-1.0, 1.0))
    far = scale_multiplier(coef, np.array([50.0]), (-1.0, 1.0))
    np.testing.assert_allclose(far, inside)  # no extrapolation of the quadratic
    np.testing.assert_allclose(inside, np.exp(2.0))
    with pytest.raises(ValueError, match="at least one member"):
        fit_scale_model(
            np.zeros((2, 3)), np.ones((2, 3)), np.zeros(3), np.zeros((2, 3), bool), np.ones((3, 1))
        )
