"""The Student-t cdf's expansion in 1/nu with six terms, for ensembles of a few thousand
trips per member (the default demo model's members have df = 2,500)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from vrvm.engine import _mixture_math as math
from vrvm.engine.mixture import MixtureDistribution


@pytest.mark.parametrize("df", [600.0, 1000.0, 2500.0, 9999.0])
def test_six_terms_have_the_absolute_accuracy_of_stdtr(df):
    z = np.r_[np.linspace(-60.0, 60.0, 2401), -np.inf, np.inf][None, :]
    series = math.t_cdf_series(z, np.array([[df]]))
    np.testing.assert_allclose(series, special.stdtr(df, z), rtol=0, atol=4e-16)


def test_six_terms_against_40_digits():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    z = np.array([-7.5, -3.0, -1.25, -0.1, 0.4, 2.0, 5.5])
    for df in (600.0, 2500.0):
        nu = mp.mpf(df)
        exact = []
        for value in z:
            x = nu / (nu + mp.mpf(value) ** 2)
            tail = mp.betainc(nu / 2, mp.mpf(1) / 2, 0, x, regularized=True) / 2
            exact.append(float(1 - tail if value > 0 else tail))
        series = math.t_cdf_series(z[None, :], np.array([[df]]))[0]
        np.testing.assert_allclose(series, exact, rtol=0, atol=2.5e-16)


def test_the_terms_are_those_of_the_expansion():
    # p_1 = (u + 1)/4 (Fisher 1925); every p_k integrates against phi to a cdf that
    # reaches 1: the correction phi(z) z p_k(z^2) vanishes at both ends, and p_k has
    # degree 2k - 1
    assert np.array_equal(math._T_SERIES[0, :2], [0.25, 0.25])
    degrees = [np.flatnonzero(row).max() for row in math._T_SERIES]
    assert degrees == [1, 3, 5, 7, 9, 11]


def test_four_terms_stay_from_1e4_on(monkeypatch):
    z = np.linspace(-8.0, 8.0, 321)[None, :]
    four = math.t_cdf_series(z, np.array([[2e4]]))
    monkeypatch.setattr(math, "_SERIES_FOUR_TERMS_DF", np.inf)  # six terms throughout
    six = math.t_cdf_series(z, np.array([[2e4]]))
    np.testing.assert_allclose(four, six, rtol=0, atol=2e-16)
    assert not np.array_equal(four, six)  # a different sum, not the same arithmetic


def _ensemble(df: float, n: int = 3000, seed: int = 7) -> MixtureDistribution:
    rng = np.random.default_rng(seed)
    centre = rng.uniform(5.0, 7.5, n)
    loc = centre + rng.normal(0.0, 0.15, (8, n))
    scale = rng.uniform(0.1, 0.5, (8, n))
    return MixtureDistribution(loc, scale, df=np.full((8, 1), df), transform="log")


@pytest.mark.parametrize("df", [600.0, 2500.0])
def test_quantiles_by_six_terms_equal_the_exact_ones(monkeypatch, df):
    q = np.array([0.001, 0.05, 0.25, 0.5, 0.75, 0.95, 0.999])[:, None]
    assert math._series_df(q.ravel(), np.full((8, 3), df)) is not None  # the series is used
    fast = _ensemble(df).ppf(q)
    monkeypatch.setattr(math, "_SERIES_MIN_DF", np.inf)  # the exact cdf throughout
    exact = _ensemble(df).ppf(q)
    np.testing.assert_allclose(fast, exact, rtol=1e-13)
