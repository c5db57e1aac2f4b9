"""The PIT map and the recalibrated mixture (vrvm.engine.calibration, .recalibrated):
the Bernstein tables against the polynomials, maximum likelihood against a known G,
H = G o F against its own density, quantiles, CRPS and moments by direct integration."""

import numpy as np
import pytest
from scipy import integrate, special, stats

from vrvm.engine import MixtureDistribution, PitMap, RecalibratedMixture
from vrvm.engine.calibration import fit_pit_map


def _bernstein_cdf(weights, u):
    k = np.arange(1, len(weights) + 1)
    K = len(weights)
    return special.betainc(k[None, :], K + 1 - k[None, :], np.asarray(u)[:, None]) @ weights


def _bernstein_pdf(weights, u):
    k = np.arange(1, len(weights) + 1)
    K = len(weights)
    return stats.beta.pdf(np.asarray(u)[:, None], k[None, :], K + 1 - k[None, :]) @ weights


@pytest.fixture(scope="module")
def skew_map():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.full(40, 0.3))
    return PitMap(w)


def test_tables_follow_the_bernstein_polynomials(skew_map):
    w = skew_map.weights
    u = np.concatenate([np.linspace(0, 1, 1001), [1e-9, 1e-5, 1 - 1e-5, 1 - 1e-9]])
    np.testing.assert_allclose(skew_map.cdf(u), _bernstein_cdf(w, u), rtol=0, atol=1e-6)
    pdf = _bernstein_pdf(w, u)
    np.testing.assert_allclose(skew_map.pdf(u), pdf, rtol=1e-5, atol=1e-9)
    # the upper tail is read from its own table: accurate far beyond 1 - G's rounding
    v = np.array([1e-12, 1e-9, 1e-6])
    exact = 1.0 - _bernstein_cdf(w, 1.0 - v)  # fine here: these sit well above 1e-16
    exact_upper = (
        special.betainc(
            (len(w) + 1 - np.arange(1, len(w) + 1))[None, :],
            np.arange(1, len(w) + 1)[None, :],
            v[:, None],
        )
        @ w
    )
    np.testing.assert_allclose(skew_map.upper(v), exact_upper, rtol=1e-3, atol=1e-15)
    assert np.all(skew_map.upper(v) <= np.maximum(exact, 1e-300) * 10)


def test_ppf_inverts_cdf(skew_map):
    p = np.linspace(0.001, 0.999, 999)
    np.testing.assert_allclose(skew_map.cdf(skew_map.ppf(p)), p, atol=1e-12)
    assert skew_map.ppf(0.0) == 0.0 and skew_map.ppf(1.0) == 1.0


@pytest.mark.parametrize(
    "weights, message",
    [
        ([0.5, 0.6], "sum to 1"),
        ([1.5, -0.5], ">= 0"),
        ([np.nan, 1.0], "finite"),
        ([], "1 to 400"),
        (np.full(401, 1 / 401), "1 to 400"),
    ],
)
def test_bad_weights_are_refused(weights, message):
    with pytest.raises(ValueError, match=message):
        PitMap(weights)


def test_state_round_trip_and_refusals(skew_map):
    again = PitMap.from_state(skew_map.to_state())
    np.testing.assert_array_equal(again.weights, skew_map.weights)
    for bad in ({"kind": "isotonic", "weights": [1.0]}, {"weights": [1.0]}, [1.0]):
        with pytest.raises(ValueError, match="bernstein"):
            PitMap.from_state(bad)


def test_maximum_likelihood_finds_a_known_map():
    rng = np.random.default_rng(1)
    u = rng.beta(2.0, 3.0, 20_000)  # G = Beta(2, 3): a Bernstein density of degree 4
    pit_map, record = fit_pit_map(u)
    assert record["cv_gain"] > 0.05 and record["n_pit"] == u.size
    grid = np.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(pit_map.cdf(grid), stats.beta.cdf(grid, 2, 3), atol=0.01)


def test_uniform_or_few_pits_leave_the_mixture_alone():
    rng = np.random.default_rng(2)
    assert fit_pit_map(rng.random(5000))[0] is None
    tiny, record = fit_pit_map(rng.beta(2.0, 3.0, 40))
    assert tiny is None and record["degree"] == 0


# ------------------------------------------------------------------ the mixture
@pytest.fixture(scope="module")
def mixtures(skew_map):
    loc = np.log([[300.0, 900.0, 60.0], [420.0, 700.0, 80.0], [350.0, 1200.0, 65.0]])
    scale = np.array([[0.2, 0.3, 0.5], [0.25, 0.2, 0.4], [0.3, 0.5, 0.6]])
    df = np.array([[8.0], [30.0], [np.inf]])
    base = MixtureDistribution(loc, scale, df=df, transform="log", n_members=3)
    return base, RecalibratedMixture.of(base, skew_map)


def test_cdf_density_and_quantiles_agree(mixtures, skew_map):
    base, mapped = mixtures
    t = np.array([[250.0], [500.0], [1500.0]])
    np.testing.assert_allclose(mapped.cdf(t), skew_map.cdf(base.cdf(t)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(mapped.sf(t), 1.0 - mapped.cdf(t), atol=1e-6)
    # the density is the cdf's derivative
    h = 1e-3 * t
    slope = (mapped.cdf(t + h) - mapped.cdf(t - h)) / (2 * h)
    np.testing.assert_allclose(mapped.pdf(t), slope, rtol=1e-3)
    # each member's share sums to the density
    np.testing.assert_allclose(mapped.member_pdf(t).mean(axis=0), mapped.pdf(t), rtol=1e-12)
    p = np.array([[0.05], [0.5], [0.95]])
    np.testing.assert_allclose(mapped.cdf(mapped.ppf(p)), np.broadcast_to(p, (3, 3)), atol=1e-9)
    lo, hi = mapped.interval(0.9)
    np.testing.assert_allclose(mapped.cdf(hi) - mapped.cdf(lo), 0.9, atol=1e-9)
    assert isinstance(mapped[1:], RecalibratedMixture) and len(mapped[1:]) == 2
    np.testing.assert_allclose(mapped[2].cdf(800.0), mapped.cdf(800.0)[2:])


# the map's tabulated density has a kink at every node, which quad reports as round-off
@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_crps_and_moments_by_direct_integration():
    # a map as fitted (smooth), log-normal members (a log-t has no moments); integrals
    # over s = log t
    rng = np.random.default_rng(3)
    pit_map, _ = fit_pit_map(stats.norm.cdf(rng.gumbel(0.0, 0.5, 20_000) - 0.3))
    loc = np.log([[300.0, 900.0, 60.0], [420.0, 700.0, 80.0], [350.0, 1200.0, 65.0]])
    scale = np.array([[0.2, 0.3, 0.5], [0.25, 0.2, 0.4], [0.6, 0.5, 0.6]])
    mapped = RecalibratedMixture(loc, scale, transform="log", pit_map=pit_map)
    for j, y in enumerate([280.0, 1000.0, 70.0]):
        one = mapped[j]
        lo, hi = np.log(one.ppf(np.array([1e-13, 1 - 1e-13])))

        def on_log(f, one=one):
            return lambda s: f(one, np.exp(s)) * np.exp(s)

        def square_below(d, t):
            return float(d.cdf(t)[0]) ** 2

        def square_above(d, t):
            return float(d.sf(t)[0]) ** 2

        def moment(power):
            return lambda d, t: t**power * float(d.pdf(t)[0])

        def quad(f, a, b):
            return integrate.quad(on_log(f), a, b, limit=400, epsabs=1e-10)[0]

        crps = quad(square_below, lo, np.log(y)) + quad(square_above, np.log(y), hi)
        np.testing.assert_allclose(one.crps(y)[0], crps, rtol=2e-4)
        mean, second = quad(moment(1), lo, hi), quad(moment(2), lo, hi)
        np.testing.assert_allclose(one.mean()[0], mean, rtol=2e-4)
        np.testing.assert_allclose(one.var()[0], second - mean**2, rtol=5e-3)


def test_the_identity_map_gives_the_base_mixture():
    identity = PitMap(np.full(10, 0.1))
    base = MixtureDistribution(np.log([[300.0, 900.0], [420.0, 700.0]]), 0.3, transform="log")
    mapped = RecalibratedMixture.of(base, identity)
    t = np.array([200.0, 800.0])
    np.testing.assert_allclose(mapped.cdf(t), base.cdf(t), atol=1e-12)
    np.testing.assert_allclose(mapped.logpdf(t), base.logpdf(t), atol=1e-9)
    np.testing.assert_allclose(mapped.median(), base.median(), rtol=1e-10)
    np.testing.assert_allclose(mapped.crps(t), base.crps(t), rtol=1e-4)
    np.testing.assert_allclose(mapped.mean(), base.mean(), rtol=1e-6)
    np.testing.assert_allclose(mapped.std(), base.std(), rtol=1e-4)


def test_groups_pool_recalibrated_mixtures(skew_map):
    # two departures of one query: components (m, k) in row m K + k
    loc = np.log([[300.0], [600.0], [330.0], [640.0]])
    pooled = RecalibratedMixture(loc, 0.2, transform="log", pit_map=skew_map, groups=2)
    first = RecalibratedMixture(loc[0::2], 0.2, transform="log", pit_map=skew_map)
    second = RecalibratedMixture(loc[1::2], 0.2, transform="log", pit_map=skew_map)
    t = np.array([[250.0], [400.0], [700.0]])
    np.testing.assert_allclose(pooled.cdf(t), (first.cdf(t) + second.cdf(t)) / 2, atol=1e-15)
    h = 1e-3 * t
    slope = (pooled.cdf(t + h) - pooled.cdf(t - h)) / (2 * h)
    np.testing.assert_allclose(pooled.pdf(t), slope, rtol=1e-3)
    p = np.array([[0.1], [0.5], [0.9]])
    np.testing.assert_allclose(pooled.cdf(pooled.ppf(p)), p, atol=1e-9)
    sample = pooled.sample(4000, random_state=0)[:, 0]
    assert stats.kstest(sample, lambda x: pooled.cdf(x[:, None])[:, 0]).pvalue > 0.01
