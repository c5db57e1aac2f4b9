"""A trip-dependent scale for the ensemble's predictive: noise that varies with distance.

Every VRVM member has one noise precision lambda, so on the log scale it predicts the
same relative spread for a 300 m hop as for a 15 km ride. Real trips are not like that:
fixed overheads (traffic lights, finding the passenger, durations rounded to whole
minutes) make short trips relatively far more variable. On the Chicago sample the
members' 90 % intervals covered 68 % of trips under 0.5 km and 98 % of trips over 8 km.

The scale model multiplies every member's predictive scale by

    g(x) = exp(c0 + c1 u + c2 u^2),   u = clip(d(x), d_min, d_max),

with d(x) the (standardised) distance column of the basis and [d_min, d_max] its
training range (no extrapolation of the quadratic). The coefficients c maximise the
*out-of-shard* log predictive density: each training trip is scored by the mixture of
the members that did not see it, so c is fitted on genuinely held-out predictions
without a separate hold-out set. The objective is smooth in c with an analytic
gradient (L-BFGS). With c = 0 the members' own predictive is unchanged.

Twin scales (``twin=True``): each member's component becomes two of equal weight with
scales ``g(x) s e^-a`` and ``g(x) s e^a``, a fitted with c. Travel times are
heavy-tailed on the log scale too (a bike trip with a stop, a taxi waiting at a
closed bridge): a single spread fitted by log score is widened by the tails and too
wide in the body. The pair gives a sharper body and heavier tails, and the predictive
stays an exact, equally weighted mixture of location-scale components (closed-form
CRPS, moments and quantiles as before). Fitted a: 0.22 on Synthetica, 0.30 on the NYC
taxi sample, 0.39 on the Chicago sample, 0.54 on the San Francisco bike share, whose
trips with a stop on the way make the heaviest tails (BENCHMARKS.md, issue 16).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.special import gammaln, logsumexp

__all__ = ["fit_scale_model", "scale_features", "scale_multiplier"]

LOG_2PI = float(np.log(2 * np.pi))


def scale_features(d: np.ndarray, d_range: tuple[float, float]) -> np.ndarray:
    """Rows z(x) = [1, u, u^2] with u = d clipped to ``d_range``.

    Examples
    --------
    >>> scale_features(np.array([-5.0, 0.5, 9.0]), (-1.0, 2.0))
    array([[ 1.  , -1.  ,  1.  ],
           [ 1.  ,  0.5 ,  0.25],
           [ 1.  ,  2.  ,  4.  ]])
    """
    u = np.clip(np.asarray(d, dtype=np.float64), d_range[0], d_range[1])
    return np.column_stack([np.ones_like(u), u, u * u])


def scale_multiplier(coef: np.ndarray, d: np.ndarray, d_range: tuple[float, float]) -> np.ndarray:
    """g(x) = exp(z(x) . c), the factor applied to every member's predictive scale."""
    coef = np.asarray(coef, dtype=np.float64)
    return np.exp(scale_features(d, d_range)[:, : coef.size] @ coef)


def _component_logpdf(r2: np.ndarray, log_s: np.ndarray, df: np.ndarray | None):
    """log density of standardised residuals (r^2 = ((y - loc) / s)^2) and d/d(log s)."""
    if df is None:  # Gaussian components
        logpdf = -0.5 * (LOG_2PI + r2) - log_s
        dlog = r2 - 1.0
        return logpdf, dlog
    nu = df[:, None]
    const = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
    logpdf = const - 0.5 * (nu + 1) * np.log1p(r2 / nu) - log_s
    dlog = (nu + 1) * r2 / (nu + r2) - 1.0
    return logpdf, dlog


def fit_scale_model(
    loc: np.ndarray,
    scale: np.ndarray,
    y: np.ndarray,
    held_out: np.ndarray,
    z: np.ndarray,
    df: np.ndarray | None = None,
    *,
    twin: bool = False,
) -> tuple[np.ndarray, float, float, float]:
    """Coefficients c of g(x) = exp(z(x) . c) by maximum held-out mixture likelihood.

    With ``twin=True`` each member also becomes two components of equal weight, with
    scales ``g(x) s e^-a`` and ``g(x) s e^a``: a scale mixture that keeps every member's
    location and gives its predictive a sharper body and heavier tails (``a = 0`` is
    the single component); ``a >= 0`` is fitted with c.

    Parameters
    ----------
    loc, scale : ndarray of shape (M, n)
        Member predictive locations and scales of n training rows (target scale).
    y : ndarray of shape (n,)
        Targets.
    held_out : ndarray of bool, shape (M, n)
        True where member m did not see row i; every row needs at least one.
    z : ndarray of shape (n, p)
        Scale features (:func:`scale_features`).
    df : ndarray of shape (M,) or None
        Student-t degrees of freedom per member; None for Gaussian members.

    Returns
    -------
    coef : ndarray of shape (p,)
    twin_scale : float
        ``a`` (0 without ``twin``).
    mean_logpdf_before, mean_logpdf_after : float
        Mean held-out log density at c = 0, a = 0 and at the optimum.

    Examples
    --------
    Members that are twice too confident get c0 = log 2:

    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(0.0, 2.0, 4000)
    >>> loc, scale = np.zeros((2, 4000)), np.ones((2, 4000))
    >>> held_out = np.array([np.arange(4000) % 2 == 0, np.arange(4000) % 2 == 1])
    >>> coef, a, before, after = fit_scale_model(loc, scale, y, held_out, np.ones((4000, 1)))
    >>> round(float(np.exp(coef[0])), 1), a, bool(after > before)
    (2.0, 0.0, True)

    Residuals from a scale mixture (half with spread 0.5, half with spread 2) get
    twin scales around their geometric mean 1, e^-a = 0.5 and e^a = 2:

    >>> spread = np.where(rng.random(4000) < 0.5, 0.5, 2.0)
    >>> y = rng.normal(0.0, spread)
    >>> coef, a, _, _ = fit_scale_model(loc, scale, y, held_out, np.ones((4000, 1)), twin=True)
    >>> round(float(np.exp(coef[0])), 1), round(float(np.exp(a)), 1)
    (1.0, 2.0)
    """
    loc, scale = np.asarray(loc, np.float64), np.asarray(scale, np.float64)
    held_out = np.asarray(held_out, bool)
    if not held_out.any(axis=0).all():
        raise ValueError("every row needs at least one member that did not see it")
    resid2 = (y[None, :] - loc) ** 2
    log_scale = np.log(scale)
    log_count = np.log(held_out.sum(axis=0))
    n = y.size

    p = z.shape[1]
    signs = (-1.0, 1.0) if twin else (0.0,)

    def objective(params):
        log_g = z @ params[:p]
        a = params[p] if twin else 0.0
        logpdf, dlog = [], []
        for sign in signs:  # component (b, m): scale s_m g(x) e^(sign a)
            log_s = log_scale + log_g[None, :] + sign * a
            r2 = resid2 * np.exp(-2.0 * log_s)
            lp, dl = _component_logpdf(r2, log_s, df)
            logpdf.append(np.where(held_out, lp, -np.inf))
            dlog.append(np.where(held_out, dl, 0.0))
        logpdf, dlog = np.stack(logpdf), np.stack(dlog)  # (blocks, M, n)
        mix = logsumexp(logpdf, axis=(0, 1))
        weights = np.exp(logpdf - mix)  # responsibilities of the held-out components
        value = float(np.mean(mix - log_count - np.log(len(signs))))
        grad = -(z.T @ np.sum(weights * dlog, axis=(0, 1))) / n
        if twin:
            d_a = np.sum(np.asarray(signs)[:, None, None] * weights * dlog) / n
            grad = np.append(grad, -d_a)
        return -value, grad

    start = np.zeros(p + twin)
    before = -objective(start)[0]
    if twin:  # a = 0 is a stationary point by symmetry: start away from it
        start[p] = 0.3
    bounds = [(None, None)] * p + [(0.0, 3.0)] * twin
    result = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds)
    params = result.x if -result.fun >= before else np.zeros(p + twin)
    twin_scale = float(params[p]) if twin else 0.0
    return params[:p], twin_scale, before, max(-result.fun, before)
