"""Tests for vrvm.engine.mixture.MixtureDistribution: exact mixtures of predictives."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.mixture import MixtureDistribution

QUAD = {"epsabs": 0.0, "epsrel": 1e-12, "limit": 1000}


def make_mixture(
    family: str, transform: str | None, n_components: int = 5, n: int = 4, seed: int = 0
) -> MixtureDistribution:
    """Members spread like an ensemble: locations within a scale of each other."""
    rng = np.random.default_rng(seed)
    if transform == "log":  # log-seconds of trips of a few minutes
        centre = rng.uniform(5.0, 7.0, n)
        loc = centre + rng.normal(0.0, 0.1, (n_components, n))
        scale = rng.uniform(0.15, 0.4, (n_components, n))
    else:
        centre = rng.normal(0.0, 3.0, n)
        loc = centre + rng.normal(0.0, 0.8, (n_components, n))
        scale = rng.uniform(0.5, 2.0, (n_components, n))
    df = None if family == "normal" else rng.uniform(3.0, 30.0, (n_components, 1))
    return MixtureDistribution(loc, scale, df=df, transform=transform)


def support(d: MixtureDistribution) -> tuple[float, float]:
    return (0.0, np.inf) if d.transform == "log" else (-np.inf, np.inf)


def quad_split(func, d: MixtureDistribution, j: int) -> float:
    """Integral of func over the support, split at the median so quad sees the bulk."""
    lo, hi = support(d)
    mid = float(d[j].median()[0])
    return integrate.quad(func, lo, mid, **QUAD)[0] + integrate.quad(func, mid, hi, **QUAD)[0]


def crps_by_quadrature(d: MixtureDistribution, j: int, y: float) -> float:
    """CRPS from its definition: int (F(x) - 1{x >= y})^2 dx."""
    one = d[j]
    lo, _ = support(d)
    below = 0.0
    if y > lo:
        below = integrate.quad(lambda x: one.cdf(x)[0] ** 2, lo, y, **QUAD)[0]
    else:  # y outside the support: F = 0 on [y, lo]
        below = lo - y
    above = integrate.quad(lambda x: one.sf(x)[0] ** 2, max(y, lo), np.inf, **QUAD)[0]
    return below + above


FAMILIES = [
    ("normal", None),
    ("normal", "log"),
    ("t", None),
    ("t", "log"),
]


# --------------------------------------------------------------------------- quantiles
@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_cdf_inverts_ppf(family, transform):
    d = make_mixture(family, transform, n=20)
    q = np.array([1e-10, 1e-6, 0.001, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-6])[:, None]
    t = d.ppf(q)
    assert t.shape == (q.shape[0], len(d))
    np.testing.assert_allclose(d.cdf(t), np.broadcast_to(q, t.shape), rtol=0, atol=1e-9)
    # both tails keep relative precision (solved on log F below, log S above the median)
    np.testing.assert_allclose(d.cdf(t[:2]), np.broadcast_to(q[:2], t[:2].shape), rtol=1e-9)
    np.testing.assert_allclose(d.sf(t[-1]), 1e-6, rtol=1e-8)


@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_ppf_matches_reference_root_to_1e10_relative(family, transform):
    d = make_mixture(family, transform, n=6, seed=1)
    rng = np.random.default_rng(2)
    q = rng.uniform(0.01, 0.99, len(d))
    t = d.ppf(q)
    for j in range(len(d)):
        one = d[j]
        a, b = one.ppf(0.001)[0], one.ppf(0.999)[0]
        ref = optimize.brentq(
            lambda x, one=one, qj=q[j]: one.cdf(x)[0] - qj, a, b, xtol=1e-300, rtol=1e-15
        )
        assert abs(t[j] - ref) <= 1e-10 * max(abs(ref), 1.0)


def test_ppf_lies_between_member_quantiles_and_handles_bounds():
    d = make_mixture("t", None, n=8)
    members = StudentT(d.loc, d.scale, d.df)
    for q in (0.02, 0.5, 0.9):
        t = d.ppf(q)
        member_q = members.ppf(q)
        assert np.all(member_q.min(axis=0) <= t) and np.all(t <= member_q.max(axis=0))
    assert np.all(d.ppf(0.0) == -np.inf) and np.all(d.ppf(1.0) == np.inf)
    log = make_mixture("normal", "log")
    assert np.all(log.ppf(0.0) == 0.0) and np.all(log.ppf(1.0) == np.inf)


def test_ppf_far_tail_of_heavy_t_members():
    """Below ~1e-150 scipy's t quantile degrades for small df; the tail asymptote takes over."""
    d = MixtureDistribution([[0.0, 5.0], [0.5, 5.5]], [[1.0, 0.3], [2.0, 0.2]], df=3.0)
    q = np.array([[1e-300], [1e-200], [1e-120]])
    t = d.ppf(q)
    assert np.all(np.isfinite(t))
    np.testing.assert_allclose(d.cdf(t), np.broadcast_to(q, t.shape), rtol=1e-10)


def test_ppf_bimodal_mixture_is_robust():
    """Well-separated members: Newton steps from the trough must fall back to bisection."""
    loc = np.array([[-20.0, 0.0], [20.0, 0.0], [21.0, 1e-3]])
    scale = np.array([[1.0, 1.0], [0.5, 1e-4], [2.0, 1.0]])
    d = MixtureDistribution(loc, scale)
    q = np.linspace(0.001, 0.999, 101)[:, None]
    np.testing.assert_allclose(d.cdf(d.ppf(q)), np.broadcast_to(q, (101, 2)), atol=1e-10)


def test_median_and_interval():
    d = make_mixture("normal", "log", n=10)
    lo, hi = d.interval(0.8)
    np.testing.assert_allclose(d.cdf(lo), 0.1, atol=1e-12)
    np.testing.assert_allclose(d.cdf(hi), 0.9, atol=1e-12)
    np.testing.assert_allclose(d.cdf(d.median()), 0.5, atol=1e-12)


def test_ppf_broadcasting():
    d = make_mixture("normal", None, n=3)
    assert d.ppf(0.5).shape == (3,)
    assert d.ppf([0.1, 0.2, 0.3]).shape == (3,)
    assert d.ppf(np.array([[0.1], [0.9]])).shape == (2, 3)
    grid = d.ppf(np.array([[0.1], [0.9]]))
    np.testing.assert_allclose(grid[1], d.ppf(0.9), rtol=1e-14)


# ------------------------------------------------------------------ density and cdf
@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_pdf_integrates_to_one(family, transform):
    d = make_mixture(family, transform, n=3)
    for j in range(len(d)):
        total = quad_split(lambda x, j=j: d[j].pdf(x)[0], d, j)
        assert total == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_cdf_is_integral_of_pdf(family, transform):
    d = make_mixture(family, transform, n=3)
    lo, _ = support(d)
    for j in range(len(d)):
        one = d[j]
        for q in (0.05, 0.5, 0.9):
            x = one.ppf(q)[0]
            mass = integrate.quad(lambda u, one=one: one.pdf(u)[0], lo, x, **QUAD)[0]
            assert mass == pytest.approx(one.cdf(x)[0], rel=1e-9)
            assert one.sf(x)[0] == pytest.approx(1.0 - one.cdf(x)[0], rel=1e-12)


@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_pdf_is_mean_of_member_densities(family, transform):
    d = make_mixture(family, transform, n=4)
    t = d.ppf(np.array([[0.2], [0.6]]))
    members = d.component_pdf(t)
    assert members.shape == (d.n_components, 2, len(d))
    np.testing.assert_allclose(members.mean(axis=0), d.pdf(t), rtol=1e-12)
    np.testing.assert_allclose(np.exp(d.logpdf(t)), d.pdf(t), rtol=1e-12)


def test_logpdf_stable_far_in_the_tails():
    loc = np.array([[0.0], [1.0], [-0.5]])
    scale = np.array([[1.0], [1.0], [2.0]])
    d = MixtureDistribution(loc, scale)
    x = 2e3  # every member density underflows to 0 in double precision
    assert d.pdf(x)[0] == 0.0
    logpdf = d.logpdf(x)[0]
    assert np.isfinite(logpdf)
    # the widest member dominates: log p = log p_3(x) - log 3 up to a relative e^-large
    expected = stats.norm.logpdf(x, -0.5, 2.0) - np.log(3.0)
    assert logpdf == pytest.approx(expected, rel=1e-14)
    # equal members: exact log-sum-exp identity
    same = MixtureDistribution(np.zeros((4, 1)), np.ones((4, 1)), df=4.0)
    assert same.logpdf(1e80)[0] == pytest.approx(stats.t.logpdf(1e80, 4.0), rel=1e-14)
    # the log transform far into both tails of T
    log = MixtureDistribution(loc, scale, transform="log")
    for t in (1e-300, 1e300):
        value = log.logpdf(t)[0]
        assert np.isfinite(value) and log.pdf(t)[0] == 0.0


def test_log_transform_has_no_mass_at_or_below_zero():
    d = make_mixture("t", "log", n=2)
    t = np.array([[-5.0], [0.0]])
    assert np.all(d.pdf(t) == 0.0)
    assert np.all(d.logpdf(t) == -np.inf)
    assert np.all(d.cdf(t) == 0.0)
    assert np.all(d.sf(t) == 1.0)
    assert np.all(d.prob_within(np.inf) == 1.0)


def test_prob_within_is_cdf_and_sf_is_accurate_in_the_upper_tail():
    d = make_mixture("normal", None, n=3)
    x = d.ppf(0.3)
    np.testing.assert_array_equal(d.prob_within(x), d.cdf(x))
    far = d.loc.max(axis=0) + 12 * d.scale.max(axis=0)
    assert np.all(d.sf(far) > 0) and np.all(d.cdf(far) == 1.0)


# ---------------------------------------------------------------------------- moments
@pytest.mark.parametrize(
    ("family", "transform"), [("normal", None), ("normal", "log"), ("t", None)]
)
def test_mean_and_var_match_numerical_integration(family, transform):
    d = make_mixture(family, transform, n=3)
    mean, var = d.mean(), d.var()
    for j in range(len(d)):
        m1 = quad_split(lambda x, j=j: x * d[j].pdf(x)[0], d, j)
        m2 = quad_split(lambda x, j=j, m1=m1: (x - m1) ** 2 * d[j].pdf(x)[0], d, j)
        assert mean[j] == pytest.approx(m1, rel=1e-9)
        assert var[j] == pytest.approx(m2, rel=1e-8)
    np.testing.assert_allclose(d.std(), np.sqrt(var))


def test_log_t_moments_use_the_variance_matched_log_normal():
    loc = np.array([[5.0, 6.0], [5.2, 6.1]])
    scale = np.array([[0.2, 0.3], [0.25, 0.3]])
    nu = np.array([[4.0], [9.0]])
    d = MixtureDistribution(loc, scale, df=nu, transform="log")
    s2 = scale**2 * nu / (nu - 2)
    np.testing.assert_allclose(d.component_means(), np.exp(loc + s2 / 2), rtol=1e-14)
    np.testing.assert_allclose(d.mean(), np.exp(loc + s2 / 2).mean(axis=0), rtol=1e-14)
    surrogate = MixtureDistribution(loc, np.sqrt(s2), transform="log")
    np.testing.assert_allclose(d.var(), surrogate.var(), rtol=1e-14)
    # infinite for df <= 2
    heavy = MixtureDistribution(loc, scale, df=np.array([[2.0], [9.0]]), transform="log")
    assert np.all(np.isinf(heavy.mean())) and np.all(np.isinf(heavy.var()))
    # large df: the log-normal limit, to O(s^2 / nu)
    big = MixtureDistribution(loc, scale, df=1e6, transform="log")
    lognormal = MixtureDistribution(loc, scale, transform="log")
    np.testing.assert_allclose(big.mean(), lognormal.mean(), rtol=1e-6)
    # and for moderate df it matches the log-t mean over all but its extreme tail
    one = MixtureDistribution([[5.0]], [[0.3]], df=200.0, transform="log")
    top = one.ppf(1 - 1e-12)[0]
    truncated = integrate.quad(lambda t: t * one.pdf(t)[0], 0, top, points=[150.0], limit=500)[0]
    assert one.mean()[0] == pytest.approx(truncated, rel=1e-3)


def test_t_moments_follow_member_conventions():
    d = MixtureDistribution([[0.0], [2.0]], [[1.0], [1.0]], df=np.array([[2.0], [5.0]]))
    assert d.mean()[0] == pytest.approx(1.0)  # location as mean (StudentT convention)
    assert np.isinf(d.var()[0])


def test_moment_matched_formula():
    d = make_mixture("normal", "log", n=5)
    gauss = d.moment_matched()
    assert isinstance(gauss, Normal)
    mu_m = np.exp(d.loc + d.scale**2 / 2)
    var_m = np.expm1(d.scale**2) * np.exp(2 * d.loc + d.scale**2)
    mu = mu_m.mean(axis=0)
    np.testing.assert_allclose(gauss.loc, mu, rtol=1e-14)
    np.testing.assert_allclose(gauss.scale**2, (var_m + mu_m**2).mean(axis=0) - mu**2, rtol=1e-9)
    t = make_mixture("t", None, n=5)
    np.testing.assert_allclose(
        t.moment_matched().scale ** 2,
        (StudentT(t.loc, t.scale, t.df).var() + t.loc**2).mean(axis=0) - t.loc.mean(axis=0) ** 2,
        rtol=1e-10,
    )


# ------------------------------------------------------------------------------- CRPS
def test_crps_gaussian_mixture_closed_form():
    d = make_mixture("normal", None, n=4)
    y = np.array([-4.0, 0.0, 1.5, 6.0])

    def expected_abs(m, s):  # E|N(m, s^2)|
        return s * 2 * stats.norm.pdf(m / s) + m * (2 * stats.norm.cdf(m / s) - 1)

    mu, sd = d.loc, d.scale
    first = expected_abs(mu - y, sd).mean(axis=0)
    pairs = expected_abs(mu[:, None] - mu[None], np.sqrt(sd[:, None] ** 2 + sd[None] ** 2))
    np.testing.assert_allclose(d.crps(y), first - 0.5 * pairs.mean(axis=(0, 1)), rtol=1e-13)
    for j in range(len(d)):
        assert d.crps(y)[j] == pytest.approx(crps_by_quadrature(d, j, y[j]), rel=1e-8)


@pytest.mark.parametrize("df", [1.5, 3.0, 30.0, 1e4, "mixed"])
def test_crps_t_mixture_matches_quadrature(df):
    rng = np.random.default_rng(4)
    loc = rng.normal(0.0, 0.7, (6, 2))
    scale = rng.uniform(0.5, 1.5, (6, 2))
    nu = rng.uniform(2.5, 40.0, (6, 1)) if df == "mixed" else df
    d = MixtureDistribution(loc, scale, df=nu)
    for y in (-5.0, 0.3, 2.0):
        crps = d.crps(y)
        for j in range(len(d)):
            assert crps[j] == pytest.approx(crps_by_quadrature(d, j, y), rel=1e-6)


@pytest.mark.parametrize("y", [-10.0, 0.0, 80.0, 300.0, 2000.0])
def test_crps_log_normal_mixture_matches_quadrature(y):
    d = make_mixture("normal", "log", n=2)
    crps = d.crps(y)
    for j in range(len(d)):
        assert crps[j] == pytest.approx(crps_by_quadrature(d, j, y), rel=1e-8)


def test_crps_log_t_uses_the_variance_matched_log_normal():
    loc = np.array([[5.0, 6.0], [5.3, 6.2]])
    scale = np.array([[0.2, 0.35], [0.3, 0.3]])
    nu = np.array([[5.0], [12.0]])
    d = MixtureDistribution(loc, scale, df=nu, transform="log")
    surrogate = MixtureDistribution(loc, scale * np.sqrt(nu / (nu - 2)), transform="log")
    y = np.array([[100.0], [250.0]])
    np.testing.assert_allclose(d.crps(y), surrogate.crps(y), rtol=1e-14)
    heavy = MixtureDistribution(loc, scale, df=2.0, transform="log")
    assert np.all(np.isinf(heavy.crps(200.0)))


def test_crps_broadcasting_and_caching():
    d = make_mixture("t", None, n=3)
    y = np.array([[-1.0], [0.0], [2.0]])
    grid = d.crps(y)
    assert grid.shape == (3, 3)
    fresh = MixtureDistribution(d.loc, d.scale, df=d.df)
    np.testing.assert_allclose(grid[2], fresh.crps(2.0), rtol=1e-14)
    assert np.all(grid > 0)
    assert np.all(d.crps(np.inf) == np.inf)
    assert np.all(make_mixture("normal", None).crps(-np.inf) == np.inf)
    # proper scoring: the CRPS of the mixture beats that of its moment-matched Gaussian
    # on average over draws from the mixture
    draws = d.sample(400, random_state=0)
    assert d.crps(draws).mean() < d.moment_matched().crps(draws).mean()


# ------------------------------------------------------------------ single component
def test_single_gaussian_reduces_to_normal():
    loc, scale = np.array([0.5, -1.0, 3.0]), np.array([1.0, 0.3, 2.0])
    d, ref = MixtureDistribution(loc[None], scale[None]), Normal(loc, scale)
    y = np.array([[0.0], [1.2]])
    q = np.array([[0.01], [0.5], [0.9]])
    np.testing.assert_array_equal(d.cdf(y), ref.cdf(y))
    np.testing.assert_array_equal(d.ppf(q), ref.ppf(q))
    np.testing.assert_allclose(d.logpdf(y), ref.logpdf(y), rtol=1e-15)
    np.testing.assert_array_equal(d.crps(y), ref.crps(y))
    np.testing.assert_array_equal(d.mean(), ref.mean())
    np.testing.assert_array_equal(d.var(), ref.var())
    np.testing.assert_array_equal(d.interval(0.9), ref.interval(0.9))
    np.testing.assert_array_equal(d.moment_matched().scale, ref.scale)


def test_single_student_t_reduces_to_student_t():
    loc, scale, nu = np.array([0.5, -1.0]), np.array([1.0, 0.3]), np.array([3.0, 25.0])
    d, ref = MixtureDistribution(loc[None], scale[None], df=nu), StudentT(loc, scale, nu)
    y = np.array([[0.0], [4.0]])
    q = np.array([[0.01], [0.5], [0.99]])
    np.testing.assert_array_equal(d.cdf(y), ref.cdf(y))
    np.testing.assert_array_equal(d.ppf(q), ref.ppf(q))
    np.testing.assert_allclose(d.logpdf(y), ref.logpdf(y), rtol=1e-15)
    np.testing.assert_array_equal(d.crps(y), ref.crps(y))
    np.testing.assert_array_equal(d.var(), ref.var())
    np.testing.assert_array_equal(d.median(), ref.median())


def test_single_log_normal_reduces_to_scipy_lognorm():
    mu, sigma = np.array([5.0, 6.5]), np.array([0.3, 0.2])
    d = MixtureDistribution(mu[None], sigma[None], transform="log")
    ref = stats.lognorm(s=sigma, scale=np.exp(mu))
    t = np.array([[80.0], [400.0], [1500.0]])
    q = np.array([[1e-6], [0.25], [0.5], [0.975]])
    np.testing.assert_allclose(d.pdf(t), ref.pdf(t), rtol=1e-13)
    np.testing.assert_allclose(d.logpdf(t), ref.logpdf(t), rtol=1e-13)
    np.testing.assert_allclose(d.cdf(t), ref.cdf(t), rtol=1e-13)
    np.testing.assert_allclose(d.sf(t), ref.sf(t), rtol=1e-12)
    np.testing.assert_allclose(d.ppf(q), ref.ppf(q), rtol=1e-13)
    np.testing.assert_allclose(d.mean(), ref.mean(), rtol=1e-14)
    np.testing.assert_allclose(d.var(), ref.var(), rtol=1e-13)
    # the CRPS of one log-normal (Baran & Lerch 2015)
    z = (np.log(t) - mu) / sigma
    m = np.exp(mu + sigma**2 / 2)
    baran_lerch = t * (2 * stats.norm.cdf(z) - 1) - 2 * m * (
        stats.norm.cdf(z - sigma) + stats.norm.cdf(sigma / np.sqrt(2)) - 1
    )
    np.testing.assert_allclose(d.crps(t), baran_lerch, rtol=1e-12)


def test_single_log_t_matches_exp_of_student_t():
    d = MixtureDistribution([[5.0]], [[0.4]], df=4.0, transform="log")
    ref = StudentT([5.0], [0.4], 4.0)
    t = np.array([[30.0], [150.0], [900.0]])
    np.testing.assert_allclose(d.cdf(t), ref.cdf(np.log(t)), rtol=1e-14)
    np.testing.assert_allclose(d.logpdf(t), ref.logpdf(np.log(t)) - np.log(t), rtol=1e-14)
    np.testing.assert_allclose(d.ppf([0.1]), np.exp(ref.ppf([0.1])), rtol=1e-14)


# --------------------------------------------------------------------------- sampling
@pytest.mark.parametrize(("family", "transform"), FAMILIES)
def test_samples_follow_the_cdf(family, transform):
    d = make_mixture(family, transform, n=5, seed=5)
    draws = d.sample(2000, random_state=123)
    assert draws.shape == (2000, 5)
    pit = d.cdf(draws)  # probability integral transform: U(0, 1) under the model
    assert stats.kstest(pit.ravel(), "uniform").pvalue > 1e-3
    assert stats.kstest(draws[:, 0], lambda x: d[0].cdf(x)).pvalue > 1e-3
    np.testing.assert_array_equal(draws, d.sample(2000, random_state=123))


def test_sampling_with_gaussian_members_given_as_infinite_df():
    d = MixtureDistribution(np.zeros((2, 3)), np.ones((2, 3)), df=np.array([[np.inf], [3.0]]))
    draws = d.sample(3000, random_state=7)
    assert np.all(np.isfinite(draws))
    assert stats.kstest(d.cdf(draws).ravel(), "uniform").pvalue > 1e-3


# ----------------------------------------------------------------- container protocol
def test_len_getitem_and_members():
    d = make_mixture("t", "log", n_components=3, n=6)
    assert len(d) == 6 and d.n_components == 3 and d.shape == (6,)
    sub = d[1:4]
    assert isinstance(sub, MixtureDistribution) and len(sub) == 3
    np.testing.assert_array_equal(sub.cdf(300.0), d.cdf(300.0)[1:4])
    assert len(d[2]) == 1 and d[2].transform == "log"
    np.testing.assert_array_equal(d[np.array([True, False] * 3)].loc, d.loc[:, ::2])
    assert d.component_means().shape == (3, 6)
    assert "n_components=3" in repr(d)
    with pytest.raises(ValueError):
        d.loc[0, 0] = 1.0  # read-only: cached results stay valid


# ------------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"loc": [0.0, 1.0], "scale": [1.0, 1.0]}, "shape"),
        ({"loc": np.zeros((2, 3, 1)), "scale": 1.0}, "shape"),
        ({"loc": np.zeros((0, 3)), "scale": 1.0}, "at least one"),
        ({"loc": np.zeros((2, 3)), "scale": np.ones((2, 2))}, "broadcast"),
        ({"loc": [[np.nan]], "scale": [[1.0]]}, "loc"),
        ({"loc": [[0.0]], "scale": [[0.0]]}, "scale"),
        ({"loc": [[0.0]], "scale": [[np.inf]]}, "scale"),
        ({"loc": [[0.0]], "scale": [[1.0]], "df": 0.0}, "df"),
        ({"loc": [[0.0]], "scale": [[1.0]], "df": np.nan}, "df"),
        ({"loc": np.zeros((2, 3)), "scale": 1.0, "df": [3.0, 4.0]}, "df"),
        ({"loc": [[0.0]], "scale": [[1.0]], "transform": "exp"}, "transform"),
    ],
)
def test_invalid_construction_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MixtureDistribution(**kwargs)


def test_invalid_method_arguments_raise():
    d = make_mixture("t", None, n=3)
    with pytest.raises(ValueError, match="quantile"):
        d.ppf(1.5)
    with pytest.raises(ValueError, match="quantile"):
        d.ppf(np.nan)
    with pytest.raises(ValueError, match="level"):
        d.interval(1.0)
    with pytest.raises(ValueError, match="broadcast"):
        d.cdf(np.zeros(4))
    with pytest.raises(ValueError, match="size"):
        d.sample(-1)
    heavy = MixtureDistribution(d.loc, d.scale, df=1.0)
    with pytest.raises(ValueError, match="df > 1"):
        heavy.crps(0.0)
    with pytest.raises(ValueError, match="finite"):
        MixtureDistribution(d.loc, d.scale, df=2.0).moment_matched()


# ---------------------------------------------------------------- at scale (issue 13)
def _ensemble_like(n: int = 3000, df: float = 1.25e5, seed: int = 5) -> MixtureDistribution:
    """Eight members with one large df each, as an ensemble trained on many trips has."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(5.0, 7.5, n)
    loc = centre + rng.normal(0.0, 0.15, (8, n))
    scale = rng.uniform(0.1, 0.5, (8, n))
    return MixtureDistribution(loc, scale, df=np.full((8, 1), df), transform="log")


@pytest.mark.parametrize("df", [1e4, 3e4, 1.25e5, 1e7, np.inf])
def test_t_cdf_series_has_the_absolute_accuracy_of_stdtr(df):
    from scipy import special

    from vrvm.engine._mixture_math import t_cdf_series

    z = np.r_[np.linspace(-60.0, 60.0, 2401), -np.inf, np.inf][None, :]
    series = t_cdf_series(z, np.array([[df]]))
    np.testing.assert_allclose(series, special.stdtr(df, z), rtol=0, atol=4e-16)


def test_quantiles_by_the_series_equal_the_exact_ones(monkeypatch):
    import vrvm.engine._mixture_math as math

    mix = _ensemble_like()
    q = np.array([0.001, 0.05, 0.25, 0.5, 0.75, 0.95, 0.999])[:, None]
    fast = mix.ppf(q)
    monkeypatch.setattr(math, "_SERIES_MIN_DF", np.inf)  # the exact cdf throughout
    exact = _ensemble_like().ppf(q)
    np.testing.assert_allclose(fast, exact, rtol=1e-13)


def test_the_series_is_used_only_where_it_is_exact():
    from vrvm.engine._mixture_math import _series_df

    q = np.array([0.05, 0.5, 0.95])
    df = np.full((4, 3), 2e4)
    assert _series_df(q, df).shape == (4, 1)
    assert _series_df(q, None) is None  # Gaussian members
    assert _series_df(np.array([1e-4, 0.5, 0.5]), df) is None  # a far tail
    assert _series_df(q, np.full((4, 3), 500.0)) is None  # df too small
    varying = df.copy()
    varying[0, 1] = 3e4  # a member's df differs between queries
    assert _series_df(q, varying) is None


def test_blocks_do_not_change_quantiles_or_scores(monkeypatch):
    import vrvm.engine.mixture as mixture

    y = np.exp(np.random.default_rng(6).uniform(5.0, 7.5, 3000))
    q = np.array([0.05, 0.5, 0.95])[:, None]
    whole = _ensemble_like(df=12.0)
    expected = whole.ppf(q), whole.crps(y)
    monkeypatch.setattr(mixture, "_BLOCK", 7)
    blocked = _ensemble_like(df=12.0)
    assert np.array_equal(blocked.ppf(q), expected[0])
    assert np.array_equal(blocked.crps(y), expected[1])
    for family, transform in (("normal", None), ("t", None), ("normal", "log")):
        small = make_mixture(family, transform, n=20)
        reference = make_mixture(family, transform, n=20)
        monkeypatch.setattr(mixture, "_BLOCK", 10**6)
        want = reference.crps(reference.median())
        monkeypatch.setattr(mixture, "_BLOCK", 3)
        assert np.array_equal(small.crps(small.median()), want)


def test_members_of_several_components_are_combined_member_by_member():
    """Twin scales: rows 0..K-1 and K..2K-1 are the same K members with two scales; a
    member's pdf and cdf are the mean of its two components', and the mixture is
    unchanged by saying so."""
    loc = np.log([[300.0, 600.0], [320.0, 640.0]])
    scale = np.array([[0.1, 0.2], [0.15, 0.1]])
    both = np.concatenate([loc, loc]), np.concatenate([scale * 0.6, scale * 1.7])
    twin = MixtureDistribution(*both, transform="log", n_members=2)
    plain = MixtureDistribution(*both, transform="log")
    assert (twin.n_members, twin.n_components, plain.n_members) == (2, 4, 4)
    t = np.array([[280.0], [350.0], [700.0]])
    parts = twin.component_cdf(t)
    np.testing.assert_allclose(twin.member_cdf(t), (parts[:2] + parts[2:]) / 2)
    np.testing.assert_allclose(twin.member_pdf(t).mean(axis=0), twin.pdf(t))
    np.testing.assert_array_equal(twin.cdf(t), plain.cdf(t))
    assert twin[1].n_members == 2
    with pytest.raises(ValueError, match="n_members must divide"):
        MixtureDistribution(*both, n_members=3)
