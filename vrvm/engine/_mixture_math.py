"""Numerical kernels of :class:`vrvm.engine.mixture.MixtureDistribution`.

Standardised member densities, the safeguarded vectorised quantile solver
(:func:`mixture_quantile`: Halley steps on the log tail probability, bisection
fallback) and the mean absolute deviations of the CRPS (:func:`normal_abs_mean`,
:func:`t_abs_deviation`, and :func:`t_mixture_half_mean_difference` by sinh-sinh
quadrature). Component formulas come from :mod:`scipy.special` / :mod:`scipy.stats`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

# Quantile solver (see ``mixture_quantile``).
_MAX_ITER = 200
_STEP_TOL = 1e-6  # in units of the smallest member scale
_FINE_TOL = 1e-12  # likewise, for the predicted error after a Halley step
_BRACKET_RTOL = 1e-13
# Student-t cdf by its expansion in 1/nu (``t_cdf_series``) inside the solver when every
# member has df >= _SERIES_MIN_DF and the tail probability sought is >= _SERIES_MIN_TAIL;
# four terms from _SERIES_FOUR_TERMS_DF on, six below.
_SERIES_MIN_DF = 600.0
_SERIES_FOUR_TERMS_DF = 1e4
_SERIES_MIN_TAIL = 1e-3
# p_k(u), u = z^2, for k = 1..6 (row k - 1), lowest power first, padded to degree 11:
# F(z) = Phi(z) - phi(z) z sum_k p_k(z^2) / nu^k; each row's numerators and denominator
# fmt: off
_T_TERMS = (
    ((1, 1), 4.0),
    ((-3, -5, -7, 3), 96.0),
    ((-15, -3, 6, 14, -11, 1), 384.0),
    ((945, 915, -213, -939, -2141, 2225, -375, 15), 92160.0),
    ((17955, 5355, 180, 1140, 2490, 5994, -7516, 1764, -133, 3), 368640.0),
    ((-2463615, -2329425, 129465, 263115, -384150, -876282,
      -2253390, 3237542, -946043, 101115, -4347, 63), 185794560.0),
)
# fmt: on
_T_SERIES = np.array([np.r_[num, np.zeros(12 - len(num))] / den for num, den in _T_TERMS])
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)

# Double-exponential quadrature of the CRPS dispersion term for Student-t mixtures.
_CRPS_STEP_RATIO = 0.2  # step / singularity distance: ~1e-9 relative error
_CRPS_NODE_LEVELS = (24, 28, 32, 36, 40, 48, 56, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512)
_CRPS_TAIL_EPS = 1e-13
_HALF_PI = 0.5 * np.pi
_SQRT2 = np.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


# ---------------------------------------------------------------------------
# standardised component ("Z") functions; df is None for Gaussian components
# ---------------------------------------------------------------------------
def std_cdf(z, df):
    """P(Z <= z) of the standard normal (``df is None``) or Student-t."""
    return special.ndtr(z) if df is None else special.stdtr(df, z)


def t_cdf_series(z, nu):
    """Standard Student-t cdf for large ``nu`` by its expansion in 1/nu, four or six terms.

    ``nu`` of shape (M, 1) (one value per row of ``z``, of shape (M, P)), >= 600.

    F(z) = Phi(z) - phi(z) z sum_{k=1..K} p_k(z^2) / nu^k, with p_1(u) = (u + 1)/4 (the
    classical first term; Fisher 1925) and the next five derived (sympy) by expanding
    the density ratio f_nu / phi in 1/nu, normalising it (with the normal moments
    E z^2m = (2m - 1)!!), and integrating each term as -d/dz [phi(z) z p_k(z^2)]. K = 4
    when every nu >= 1e4, else K = 6. The error is that of the omitted terms, checked
    against mpmath's incomplete beta at 40 digits for |z| <= 12: with four terms at most
    2e-19 in absolute value for nu >= 1e4 (2e-16 at nu = 2,500); with six at most
    7e-17 for nu >= 600 (2e-21 at nu = 2,500). So F has the absolute accuracy of scipy's
    ``stdtr`` (whose incomplete beta function costs three to six times as much); its
    relative accuracy fails only far in the tails (|z| > 6), where the solver does not
    use it. ``nu = inf`` gives the normal cdf.
    """
    # the K polynomials summed per row: sum_k p_k(u) / nu^k = sum_j c_j u^j
    nu = np.asarray(nu, dtype=np.float64)
    terms = 4 if np.min(nu) >= _SERIES_FOUR_TERMS_DF else 6
    powers = (1.0 / nu)[..., None] ** np.arange(1, terms + 1)
    coef = np.moveaxis(powers @ _T_SERIES[:terms, : 2 * terms], -1, 0)  # c_j, (2K, M, 1)
    near = np.clip(z, -40.0, 40.0)  # beyond, phi(z) underflows: the correction is 0
    u = near * near
    series = coef[-1] * u
    for c in coef[-2:0:-1]:  # Horner, in place
        series += c
        series *= u
    series += coef[0]
    series *= near
    phi = np.exp(-0.5 * u)
    phi *= _INV_SQRT_2PI
    series *= phi
    return special.ndtr(z) - series


def std_logpdf(z, df):
    """Log density of the standard normal (``df is None``) or Student-t."""
    return stats.norm.logpdf(z) if df is None else stats.t.logpdf(z, df)


def t_ppf(nu, q):
    """Standard Student-t quantile, for 0 < q < 1.

    ``stdtrit`` loses accuracy, then gives up (inf), for lower-tail probabilities
    below about 1e-150 with small ``nu``. Far in the tail we use the asymptote
    F(z) ~ exp(c(nu)) nu^((nu + 1)/2) |z|^-nu / nu (c the log normalising
    constant) instead; its relative error O(nu / z^2) is negligible once
    |z| > 1e8 sqrt(nu).
    """
    nu, q = np.broadcast_arrays(np.asarray(nu, dtype=np.float64), q)
    z = np.array(special.stdtrit(nu, q), dtype=np.float64)
    tiny = (q < 1e-30) | ~np.isfinite(z)
    if np.any(tiny):
        nu_t, q_t = nu[tiny], q[tiny]
        with np.errstate(over="ignore", divide="ignore"):
            log_abs = t_log_norm(nu_t) + 0.5 * (nu_t + 1) * np.log(nu_t) - np.log(nu_t * q_t)
            log_abs /= nu_t
            far = (log_abs > np.log(1e8) + 0.5 * np.log(nu_t)) | ~np.isfinite(z[tiny])
            z[tiny] = np.where(far, -np.exp(log_abs), z[tiny])
    return z


def take_columns(a, cols):
    return None if a is None else a[:, cols]


# ---------------------------------------------------------------------------
# mean absolute deviations used by the CRPS (kernel form)
# ---------------------------------------------------------------------------
def normal_abs_mean(m, s):
    """E|X| for X ~ N(m, s^2): s 2 phi(m/s) + m (2 Phi(m/s) - 1) (Grimit et al. 2006)."""
    r = m / s
    return s * 2.0 * stats.norm.pdf(r) + m * special.erf(r / _SQRT2)


def t_abs_deviation(z, nu):
    """E|Z - z| for a standard Student-t Z with ``nu > 1`` degrees of freedom.

    Jordan, Krüger & Lerch (2019), ``crps_t``: the CRPS without its dispersion term,
    z (2 F(z) - 1) + 2 f(z) (nu + z^2) / (nu - 1); Gaussian limit for huge ``nu``.
    """
    big = nu > 1e7
    nu_f = np.where(big, 1e7, nu)  # avoid inf arithmetic; replaced by the Gaussian below
    with np.errstate(all="ignore"):
        # f(z) (nu + z^2) in logs: z^2 overflows long before f(z) z^2 ~ |z|^(1 - nu) does
        log_spread = stats.t.logpdf(z, nu_f) + np.logaddexp(np.log(nu_f), 2.0 * np.log(np.abs(z)))
        val = z * (2.0 * special.stdtr(nu_f, z) - 1.0) + 2.0 * np.exp(log_spread) / (nu_f - 1.0)
        gauss = z * special.erf(z / _SQRT2) + 2.0 * stats.norm.pdf(z)
    return np.where(np.isinf(z), np.inf, np.where(big, gauss, val))


def _t_tail_reach(df):
    """Standardised distance beyond which a Student-t tail adds < eps to int S(x) dx.

    For a t tail, int_X^inf S(x) dx ~ X S(X) / (nu - 1); we solve
    S(X) = eps min(nu - 1, 1) / X by fixed-point iteration, once per distinct ``nu``.
    """
    values, inverse = np.unique(df, return_inverse=True)
    finite = np.isfinite(values)
    nu = np.where(finite, values, 1.0)
    reach = np.full(values.shape, 10.0)
    with np.errstate(all="ignore"):
        for _ in range(3):
            p = np.maximum(_CRPS_TAIL_EPS * np.minimum(values - 1.0, 1.0) / reach, 1e-280)
            reach = np.abs(np.where(finite, special.stdtrit(nu, p), special.ndtri(p)))
            reach = np.clip(np.nan_to_num(reach, nan=1e300, posinf=1e300), 1.0, 1e300)
    return reach[inverse].reshape(np.shape(df))


def t_mixture_half_mean_difference(loc, scale, df):
    """(1/2) E|X - X'| = int F(x) (1 - F(x)) dx for Student-t mixtures, per query.

    Double-exponential ("sinh-sinh") substitution x = c + s sinh(pi/2 sinh tau)
    (Takahasi & Mori 1974) and the trapezoidal rule in tau: the transformed
    integrand decays double-exponentially whether the tails are Gaussian-like or
    algebraic (F(1 - F) ~ |x|^-nu), so one rule serves every df > 1. Per query,
    the range of tau reaches just past the heaviest tail, and the step is a fixed
    fraction of the distance from the real axis to the nearest singularity of the
    integrand in the tau plane (member m contributes scale_m min(sqrt(nu_m), 1),
    mapped through the local stretch of the substitution): the trapezoidal error
    decays like exp(-2 pi distance / step) (Trefethen & Weideman 2014), and
    well-separated members automatically get more nodes. Queries are grouped by
    node count so the work stays vectorised.
    """
    c = loc.mean(axis=0)
    s = np.sqrt((scale**2).mean(axis=0) + loc.var(axis=0))
    reach = np.max((np.abs(loc - c) + scale * _t_tail_reach(df)) / s, axis=0)
    tau_max = np.arcsinh(np.arcsinh(np.minimum(reach, 1e300)) / _HALF_PI)
    inner = np.arcsinh((loc - c) / s)  # each member's location in the tau plane
    stretch = s * _HALF_PI * np.cosh(np.arcsinh(inner / _HALF_PI)) * np.cosh(inner)
    width = np.min(scale * np.minimum(np.sqrt(df), 1.0) / stretch, axis=0)
    wanted = np.ceil(2.0 * tau_max / (_CRPS_STEP_RATIO * width)) + 1
    levels = np.asarray(_CRPS_NODE_LEVELS)
    nodes = levels[np.minimum(np.searchsorted(levels, wanted), levels.size - 1)]
    total = np.zeros_like(c)
    for count in np.unique(nodes):
        cols = nodes == count
        total[cols] = _sinh_sinh_trapezoid(
            loc[:, cols], scale[:, cols], df[:, cols], c[cols], s[cols], tau_max[cols], count
        )
    return total


def _sinh_sinh_trapezoid(loc, scale, df, c, s, tau_max, count):
    """Trapezoidal rule for int F (1 - F) dx on ``count`` nodes of the sinh-sinh map."""
    grid = np.linspace(-1.0, 1.0, count)
    step = tau_max * (grid[1] - grid[0])
    total = np.zeros_like(c)
    with np.errstate(over="ignore", invalid="ignore"):
        for u in grid:
            tau = tau_max * u
            inner = _HALF_PI * np.sinh(tau)
            x = c + s * np.sinh(inner)
            weight = step * s * _HALF_PI * np.cosh(tau) * np.cosh(inner)
            side = 1.0 if u <= 0 else -1.0  # F below the centre, S = 1 - F above it
            tail = special.stdtr(df, side * (x - loc) / scale).mean(axis=0)
            contrib = weight * tail * (1.0 - tail)
            total += np.where(np.isfinite(contrib), contrib, 0.0)  # 0 * inf far out
    return total


# ---------------------------------------------------------------------------
# quantile solver
# ---------------------------------------------------------------------------
def t_log_norm(nu):
    """Log normalising constant of the standard Student-t density.

    log Gamma((nu+1)/2) - log Gamma(nu/2) - log(nu pi)/2 = -log B(nu/2, 1/2) - log(nu)/2,
    the Beta form staying accurate for huge nu (the Gamma difference cancels).
    """
    nu = np.asarray(nu, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        value = -special.betaln(0.5 * nu, 0.5) - 0.5 * np.log(nu)
    return np.where(np.isinf(nu), -_HALF_LOG_2PI, value)


@dataclass(frozen=True)
class Members:
    """Member parameters of shape (M, P) for the quantile solver's inner loop.

    ``log_norm`` holds each Student-t density's log normalising constant,
    precomputed once so that a density evaluation in the loop costs one ``log1p``.
    """

    loc: np.ndarray
    scale: np.ndarray
    df: np.ndarray | None = None
    log_norm: np.ndarray | None = None

    def take(self, keep) -> Members:
        return Members(
            self.loc[:, keep],
            self.scale[:, keep],
            take_columns(self.df, keep),
            take_columns(self.log_norm, keep),
        )

    def std_logpdf_and_score(self, z) -> tuple[np.ndarray, np.ndarray]:
        """Standardised log density and score psi(z) = -d log f / dz."""
        if self.df is None:
            return -0.5 * z**2 - _HALF_LOG_2PI, z
        # t: log f = c(nu) - (nu + 1)/2 log1p(z^2 / nu), written with log1p(u)/u so that
        # nu = inf gives the Gaussian; psi = (nu + 1) z / (nu + z^2)
        u = z**2 / self.df
        positive = u > 0
        ratio = np.where(positive, np.log1p(u) / np.where(positive, u, 1.0), 1.0)
        factor = 1.0 + 1.0 / self.df
        return self.log_norm - 0.5 * factor * z**2 * ratio, factor * z / (1.0 + u)


def _series_df(q: np.ndarray, df: np.ndarray | None) -> np.ndarray | None:
    """Each member's df, shape (M, 1), when the solver may use :func:`t_cdf_series`.

    That is when each member has one df (as an ensemble's members do), all of them at
    least 600 (an ensemble trained on some 2,400 trips or more), and every tail
    probability sought is at least 1e-3: the mixture's tail at the root is then at
    least 1e-3, so the series' absolute error (below 1e-16) changes it by a relative
    1e-13 at most, and the root far less (2e-15 relative on 100,000 ensemble
    predictions); Gaussian members (``df is None``) and the rest use the exact cdf.
    """
    if df is None or df.size == 0:
        return None
    per_member = df[:, :1]
    if (
        np.min(np.minimum(q, 1.0 - q)) < _SERIES_MIN_TAIL
        or np.min(per_member) < _SERIES_MIN_DF
        or not np.array_equal(df, np.broadcast_to(per_member, df.shape))
    ):
        return None
    return per_member


def mixture_quantile(q: np.ndarray, members: Members, zq: np.ndarray) -> np.ndarray:
    """Solve (1/M) sum_m F_m(x) = q for x, one problem per column.

    ``q`` has shape (P,) with 0 < q < 1, ``members`` holds arrays of shape (M, P) and
    ``zq`` the standardised member quantiles at ``q`` (broadcastable to (M, P)). The
    root lies between the smallest and largest member quantile (each F_m is
    increasing, so the mixture cdf is below q at the former and above it at the
    latter). Starting from their average ("Vincentisation", usually within a
    fraction of a scale of the root), we run Halley's method on the log of the tail
    probability, g(x) = log F(x) - log q below the median and log(1 - q) - log S(x)
    above it: this keeps relative precision in both tails, where g is nearly
    linear, and converges cubically (two mixture evaluations usually reach machine
    precision). Steps that leave the bracket or do not halve the step of two
    iterations ago fall back to bisection (``rtsafe``, Press et al. 2007, section
    9.4), so convergence is guaranteed; each evaluation also narrows the bracket.
    """
    big = np.finfo(np.float64).max  # keep the bracket finite so bisection stays defined
    series_df = _series_df(q, members.df)
    with np.errstate(over="ignore", invalid="ignore"):
        comp_q = np.clip(members.loc + members.scale * zq, -big, big)
        start = np.clip(comp_q.mean(axis=0), -big, big)
    lo = comp_q.min(axis=0)
    hi = comp_q.max(axis=0)
    upper = q > 0.5
    with np.errstate(over="ignore"):
        width = hi - lo
    state = {
        "x": start,
        "lo": lo,
        "hi": hi,
        "side": np.where(upper, -1.0, 1.0),
        "log_p": np.log(np.where(upper, 1.0 - q, q)),
        # a step below step_tol is the last one (the next error is O(step^3 / scale^2));
        # so is one whose predicted next error, from the observed cubic rate, is below
        # fine_tol; a bracket narrower than bracket_tol is converged anyway
        "step_tol": _STEP_TOL * members.scale.min(axis=0),
        "fine_tol": _FINE_TOL * members.scale.min(axis=0),
        "bracket_tol": _BRACKET_RTOL
        * (np.maximum(np.abs(lo), np.abs(hi)) + members.scale.mean(axis=0)),
        "dx": width,  # last two steps, for the rtsafe halving test
        "dx_old": width,
        "prev_halley": np.full(q.shape, np.nan),  # last step if it was a Halley step
        "index": np.arange(q.size),
    }
    result = np.empty_like(q)
    with np.errstate(all="ignore"):
        for _ in range(_MAX_ITER):
            x, lo, hi, side = state["x"], state["lo"], state["hi"], state["side"]
            z = (x - members.loc) / members.scale
            if series_df is None:
                tail = std_cdf(side * z, members.df).mean(axis=0)  # F(x) or S(x)
            else:
                tail = t_cdf_series(side * z, series_df).mean(axis=0)
            log_dens, score = members.std_logpdf_and_score(z)
            dens_m = np.exp(log_dens) / members.scale
            dens = dens_m.mean(axis=0)
            slope = -(dens_m * score / members.scale).mean(axis=0)  # f'(x)
            g = side * (np.log(tail) - state["log_p"])  # increasing in x, zero at the root
            above = g > 0
            hi = np.where(above, x, hi)
            lo = np.where(above, lo, x)
            g1 = dens / tail  # g'
            g2 = slope / tail - side * g1**2  # g''
            newton = g / g1
            halley = 1.0 - 0.5 * newton * g2 / g1
            is_halley = (halley > 0.5) & (halley < 2.0)
            step = np.where(is_halley, newton / halley, newton)
            size = np.abs(step)
            predicted = size * (size / np.abs(state["prev_halley"])) ** 3
            small = (size < state["step_tol"]) | (is_halley & (predicted < state["fine_tol"]))
            x_step = x - step
            bisect = ~small & (
                ~((x_step > lo) & (x_step < hi))
                | ~np.isfinite(step)
                | (size > 0.5 * np.abs(state["dx_old"]))
            )
            exact = g == 0
            done = exact | small | (hi - lo < state["bracket_tol"])
            x_next = np.where(bisect, 0.5 * (lo + hi), np.clip(x_step, lo, hi))
            result[state["index"][done]] = np.where(exact, x, x_next)[done]
            keep = ~done
            if not keep.any():
                break
            state.update(
                x=x_next,
                lo=lo,
                hi=hi,
                dx_old=state["dx"],
                dx=np.where(bisect, 0.5 * (hi - lo), step),
                prev_halley=np.where(is_halley & ~bisect, step, np.nan),
            )
            state = {key: value[keep] for key, value in state.items()}
            members = members.take(keep)
        else:  # pragma: no cover - the bisection fallback makes this unreachable
            result[state["index"]] = state["x"]
    return result
