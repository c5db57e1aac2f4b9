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

A PIT map (:class:`PitMap`, fitted by :func:`fit_pit_map`) corrects what a scale cannot:
the *shape* of the predictive. If the held-out PIT values u = F(y) of a calibrated
predictive F are uniform, those of the San Francisco bike share are not (too many in the
middle, too few in the tails: its 90 % intervals covered 0.94). The map is the
distribution G of the held-out PITs, and the recalibrated predictive is H = G o F
(Kuleshov et al. 2018): cdf G(F(t)), density g(F(t)) f(t), quantiles F^-1(G^-1(p)).
G is a Bernstein density (a mixture of Beta(k, K + 1 - k), k = 1..K, Vitale 1975),
smooth and positive on (0, 1), so H keeps a proper density and a log score; maximum
likelihood of g on held-out PITs is maximum likelihood of H, because f does not depend
on G.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import optimize, special
from scipy.special import gammaln, logsumexp

from vrvm.engine._blas import single_threaded_blas

__all__ = [
    "PitMap",
    "fit_pit_map",
    "fit_scale_model",
    "held_out_pits",
    "scale_features",
    "scale_multiplier",
]

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
    if start.size == 0:  # nothing to fit (no scale features, no twins): the score alone
        return np.zeros(0), 0.0, before, before
    if twin:  # a = 0 is a stationary point by symmetry: start away from it
        start[p] = 0.3
    bounds = [(None, None)] * p + [(0.0, 3.0)] * twin
    result = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds)
    params = result.x if -result.fun >= before else np.zeros(p + twin)
    twin_scale = float(params[p]) if twin else 0.0
    return params[:p], twin_scale, before, max(-result.fun, before)


# ------------------------------------------------------------------------ PIT map
def held_out_pits(loc, scale, y, held_out, df=None, *, twin: float = 0.0) -> np.ndarray:
    """Each row's PIT under the mixture of its held-out components: the mean over the
    members m that did not see row i (both twins of each, scales ``s e^-a`` and
    ``s e^a``, with ``twin`` = a > 0) of F_m(y_i).

    Parameters are those of :func:`fit_scale_model` (``scale`` with the fitted g(x)
    already applied); ``df`` of shape (M,) or None.

    Examples
    --------
    >>> held_out = np.array([[True, False], [True, True]])
    >>> held_out_pits(np.zeros((2, 2)), np.ones((2, 2)), np.array([0.0, 1.0]), held_out)
    array([0.5       , 0.84134475])
    """
    loc, scale = np.asarray(loc, np.float64), np.asarray(scale, np.float64)
    held_out = np.asarray(held_out, bool)
    nu = None if df is None else np.asarray(df, np.float64)[:, None]
    signs = (-1.0, 1.0) if twin > 0 else (0.0,)
    total = np.zeros(held_out.shape[1])
    for sign in signs:
        z = (np.asarray(y, np.float64)[None, :] - loc) / (scale * np.exp(sign * twin))
        cdf = special.ndtr(z) if nu is None else special.stdtr(nu, z)
        total += np.where(held_out, cdf, 0.0).sum(axis=0)
    return total / (len(signs) * held_out.sum(axis=0))


#: Bernstein degrees K tried by :func:`fit_pit_map` (chosen by cross-validation). Higher
#: degrees raised the held-out log density a little more on the San Francisco bike share
#: (0.065 -> 0.070 nats at K = 160) but gave the predictive density extra local maxima
#: in its body and a worse CRPS (145.09 -> 145.30 s): capped at 40.
PIT_MAP_DEGREES = (10, 20, 40)
#: The largest degree a saved map may have.
PIT_MAP_MAX_DEGREE = 400
#: Mean held-out log density (nats per trip) a map must gain over the identity.
PIT_MAP_MIN_GAIN = 0.01
#: Nodes of the tables of G, 1 - G and g (cosine spaced: dense near 0 and 1).
_PIT_MAP_NODES = 4097
#: PIT values are kept this far inside (0, 1) (a tail probability below it is 0 or 1).
_PIT_EPS = 1e-12


def _bernstein_basis(u: np.ndarray, degree: int) -> np.ndarray:
    """b_{j,K}(u) = C(K, j) u^j (1 - u)^(K - j), j = 0..K, shape (len(u), K + 1)."""
    j = np.arange(degree + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_b = (
            gammaln(degree + 1.0)
            - gammaln(j + 1.0)
            - gammaln(degree - j + 1.0)
            + special.xlogy(j, u[:, None])
            + special.xlog1py(degree - j, -u[:, None])
        )
    return np.exp(log_b)


def _beta_densities(u: np.ndarray, degree: int) -> np.ndarray:
    """Beta(u; k, K + 1 - k), k = 1..K, shape (len(u), K): K b_{k-1,K-1}(u)."""
    return degree * _bernstein_basis(u, degree - 1)


class PitMap:
    r"""A Bernstein distribution G of PIT values on [0, 1], tabulated for speed.

    g(u) = sum_k w_k Beta(u; k, K + 1 - k) and G(u) = sum_k w_k I_u(k, K + 1 - k), with
    weights w_k >= 0 summing to one. Since I_u(k, K + 1 - k) = P(Binomial(K, u) >= k),
    G(u) = sum_j C_j b_{j,K}(u) with C_j = w_1 + ... + w_j (a Bernstein polynomial), and
    1 - G(u) = sum_j (1 - C_j) b_{j,K}(u), summed from the upper tail for accuracy there.
    G, 1 - G and log g are computed once on :data:`_PIT_MAP_NODES` cosine-spaced nodes
    and read by linear interpolation (within 1e-6 of the polynomials; :meth:`cdf` and
    :meth:`ppf` are exact inverses of each other).

    Parameters
    ----------
    weights : array_like of shape (K,)
        w_1..w_K, finite, >= 0, summing to one (to 1e-9); K <= :data:`PIT_MAP_MAX_DEGREE`.

    Examples
    --------
    Equal weights are the uniform distribution (the identity map):

    >>> identity = PitMap(np.full(10, 0.1))
    >>> identity.cdf(np.array([0.1, 0.5, 0.9])).round(9)
    array([0.1, 0.5, 0.9])

    All weight on Beta(1, 2) (density 2 (1 - u)):

    >>> low = PitMap([1.0, 0.0])
    >>> float(low.cdf(0.5).round(9)), float(low.pdf(0.5).round(9)), float(low.ppf(0.75).round(6))
    (0.75, 1.0, 0.5)
    """

    def __init__(self, weights):
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if not 1 <= w.size <= PIT_MAP_MAX_DEGREE:
            raise ValueError(f"a PIT map needs 1 to {PIT_MAP_MAX_DEGREE} weights, got {w.size}")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and abs(w.sum() - 1.0) <= 1e-9):
            raise ValueError("PIT map weights must be finite, >= 0 and sum to 1")
        self.weights = w / w.sum()
        self.weights.flags.writeable = False
        s = np.linspace(0.0, 1.0, _PIT_MAP_NODES)
        self._nodes = 0.5 - 0.5 * np.cos(np.pi * s)
        self._nodes[[0, -1]] = 0.0, 1.0
        self._nodes_upper = 1.0 - self._nodes[::-1]  # 1 - u, increasing
        basis = _bernstein_basis(self._nodes, self.degree)
        cumulative = np.concatenate([[0.0], np.cumsum(self.weights)])
        upper = np.concatenate([np.cumsum(self.weights[::-1])[::-1], [0.0]])  # 1 - C_j
        self._cdf = np.maximum.accumulate(np.clip(basis @ cumulative, 0.0, 1.0))
        self._sf = np.minimum.accumulate(np.clip(basis @ upper, 0.0, 1.0))
        with np.errstate(divide="ignore"):
            self._logpdf = np.log(_beta_densities(self._nodes, self.degree) @ self.weights)
        # G^-1 by interpolation needs increasing abscissae: where G is flat (a zero
        # density to double precision) any u on the flat part answers; keep the first
        rising = np.concatenate([[True], np.diff(self._cdf) > 0])
        self._inverse = (self._cdf[rising], self._nodes[rising])

    @property
    def degree(self) -> int:
        """K, the number of Beta densities."""
        return self.weights.size

    def cdf(self, u) -> np.ndarray:
        """G(u)."""
        return np.interp(u, self._nodes, self._cdf)

    def sf(self, u) -> np.ndarray:
        """1 - G(u), accurate where it is small."""
        return np.interp(u, self._nodes, self._sf)

    def upper(self, v) -> np.ndarray:
        """1 - G(1 - v): the mapped upper tail from an upper tail v = 1 - u (accurate
        for small v, where 1 - v would round)."""
        return np.interp(v, self._nodes_upper, self._sf[::-1])

    def logpdf(self, u) -> np.ndarray:
        """log g(u)."""
        return np.interp(u, self._nodes, self._logpdf)

    def pdf(self, u) -> np.ndarray:
        """g(u)."""
        return np.exp(self.logpdf(u))

    def ppf(self, p) -> np.ndarray:
        """G^-1(p): the u with G(u) = p."""
        return np.interp(np.asarray(p, dtype=np.float64), *self._inverse)

    def to_state(self) -> dict:
        """What a model file keeps: the kind and the weights."""
        return {"kind": "bernstein", "weights": [float(w) for w in self.weights]}

    @classmethod
    def from_state(cls, state: Mapping) -> PitMap:
        """The map :meth:`to_state` wrote; ``ValueError`` if it cannot be one."""
        if not isinstance(state, Mapping) or state.get("kind") != "bernstein":
            raise ValueError("a PIT map must be {'kind': 'bernstein', 'weights': [...]}")
        return cls(state["weights"])

    def __repr__(self) -> str:
        return f"PitMap(degree={self.degree})"


def _fit_bernstein_weights(densities: np.ndarray) -> np.ndarray:
    """Weights w maximising mean log (B w) over the rows of B (Beta densities at the
    PITs): softmax parameters by L-BFGS with the analytic gradient."""
    n, degree = densities.shape

    def objective(theta):
        w = np.exp(theta - logsumexp(theta))
        mix = densities @ w
        value = np.mean(np.log(mix))
        r = densities.T @ (1.0 / mix) / n  # d value / d w
        return -value, -(w * (r - w @ r))

    start = np.zeros(degree)  # equal weights: the uniform distribution
    result = optimize.minimize(objective, start, jac=True, method="L-BFGS-B")
    theta = result.x if -result.fun >= -objective(start)[0] else start
    return np.exp(theta - logsumexp(theta))


def fit_pit_map(
    u,
    *,
    degrees=PIT_MAP_DEGREES,
    n_folds: int = 5,
    min_gain: float = PIT_MAP_MIN_GAIN,
    random_state=0,
) -> tuple[PitMap | None, dict]:
    """The Bernstein map of held-out PIT values ``u``, if it is worth applying.

    The degree K is chosen by ``n_folds``-fold cross-validation of the mean log density
    of the held-out folds' PITs (``degrees`` tried from the smallest, until the held-out
    density stops improving); the map is fitted on all of ``u`` at that degree and
    returned only if its cross-validated gain over the identity (whose log density is 0)
    exceeds ``min_gain`` nats per value, so that a calibrated predictive keeps its exact
    form.

    Returns
    -------
    pit_map : PitMap or None
        None when the gain is too small.
    record : dict
        ``cv_gain`` (the best degree's), ``degree``, ``n_pit``.

    Examples
    --------
    PITs of a predictive that is too wide crowd the middle:

    >>> rng = np.random.default_rng(0)
    >>> from scipy import stats
    >>> u = stats.norm.cdf(rng.normal(0.0, 0.6, 4000))  # predictive N(0, 1), truth N(0, 0.6^2)
    >>> pit_map, record = fit_pit_map(u)
    >>> record["cv_gain"] > 0.1, float(pit_map.cdf(stats.norm.cdf(1.645 * 0.6)).round(2))
    (True, 0.95)

    Uniform PITs (a calibrated predictive) leave it as it is:

    >>> fit_pit_map(rng.random(4000))[0] is None
    True
    """
    u = np.clip(np.asarray(u, dtype=np.float64).reshape(-1), _PIT_EPS, 1.0 - _PIT_EPS)
    u = u[np.isfinite(u)]
    record = {"cv_gain": 0.0, "degree": 0, "n_pit": int(u.size)}
    if u.size < 10 * n_folds:
        return None, record
    fold = np.random.default_rng(random_state).permutation(u.size) % n_folds
    best_gain, best_degree = -np.inf, 0
    # many small products: one BLAS thread (two made these fits 10x slower under load)
    with single_threaded_blas():
        for degree in sorted(degrees):
            densities = _beta_densities(u, degree)
            held_out = np.empty(u.size)
            for k in range(n_folds):
                out = fold == k
                w = _fit_bernstein_weights(densities[~out])
                with np.errstate(divide="ignore"):
                    held_out[out] = np.log(densities[out] @ w)
            gain = float(np.mean(held_out))
            if not gain > best_gain:  # the held-out fit got worse: larger K overfit more
                break
            best_gain, best_degree = gain, degree
        record.update(cv_gain=best_gain, degree=best_degree)
        if not best_gain > min_gain:
            return None, record
        return PitMap(_fit_bernstein_weights(_beta_densities(u, best_degree))), record
