"""Equally weighted mixtures of location-scale predictives: the ensemble predictive.

An ensemble of M variational relevance vector machines predicts, for every query,
M location-scale distributions on the model scale (log-seconds for travel times):
Gaussian for the mean-field factorisation, Student-t for the structured one. The
ensemble predictive is their uniform mixture

    p(y) = (1/M) sum_m p_m(y),

and :class:`MixtureDistribution` handles n such mixtures at once, exactly and
vectorised over queries. With ``transform="log"`` the variable is T = exp(Y), so
the same object describes a log-normal (or log-t) mixture on seconds.

Component formulas are delegated to :mod:`scipy.special` / :mod:`scipy.stats` and
to :mod:`vrvm.engine.distributions`; what this module adds is the mixture algebra (law of
total variance, log-sum-exp densities), a safeguarded vectorised quantile solver and
the mixture CRPS.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from vrvm.engine._mixture_math import (
    Members,
    mixture_quantile,
    normal_abs_mean,
    std_cdf,
    std_logpdf,
    t_abs_deviation,
    t_log_norm,
    t_mixture_half_mean_difference,
    t_ppf,
    take_columns,
)
from vrvm.engine.distributions import Normal, StudentT, _check_level, _check_quantiles

__all__ = ["MixtureDistribution"]

_SQRT2 = np.sqrt(2.0)
_BLOCK = 8192
"""Queries (or quantile problems) evaluated at once by the solver and the CRPS: their
(M, block) and (M, M, block) temporaries stay a few MB, whatever the batch."""


class MixtureDistribution:
    r"""Batch of equally weighted mixtures of M Gaussian or Student-t components.

    Query ``j`` has the predictive (1/M) sum_m p_m, where p_m is a Gaussian
    N(loc[m, j], scale[m, j]^2) or, when ``df`` is given, a location-scale Student-t
    with ``df[m, j]`` degrees of freedom. With ``transform="log"`` these describe
    Y = log T and every method answers for T = exp(Y) (log-normal / log-t mixture),
    which is how travel times in seconds are predicted from a log-seconds model.

    Evaluation methods broadcast their argument against the batch shape ``(n,)``
    with numpy rules: a scalar gives one value per query, an array of shape
    ``(k, 1)`` gives ``(k, n)``.

    Parameters
    ----------
    loc : array_like of shape (M, n)
        Component locations on the model scale (one row per ensemble member).
    scale : array_like of shape (M, n)
        Component scales, finite and strictly positive; broadcast against ``loc``.
    df : array_like or None, default=None
        None for Gaussian components (mean-field predictive), otherwise degrees of
        freedom broadcastable to ``(M, n)`` (structured predictive); use shape
        ``(M, 1)`` for one value per member. ``np.inf`` gives a Gaussian component.
    transform : {None, "log"}, default=None
        None if the variable is Y itself, ``"log"`` if it is T = exp(Y).
    n_members : int or None, default=None
        The ensemble members the components stand for, when each member contributes
        several components (the travel-time model's twin scales: rows ``0..K-1`` the
        K members with one scale factor, rows ``K..2K-1`` with the other); None: one
        component per member. Only :attr:`n_members`, :meth:`member_pdf` and
        :meth:`member_cdf` use it.

    Attributes
    ----------
    loc, scale : ndarray of shape (M, n)
        Component parameters (read-only).
    df : ndarray of shape (M, n) or None
        Degrees of freedom, or None for Gaussian components.
    transform : str or None
        The output transform.
    n_components : int
        Number of mixture components M.
    n_members : int
        Ensemble members behind the components (``n_members=`` of the constructor;
        default M): the components are M / n_members blocks of the members.

    See Also
    --------
    vrvm.Normal, vrvm.StudentT : the single-model predictives.

    Notes
    -----
    Moments follow the law of total variance on the output scale,
    mu = (1/M) sum_m mu_m and sigma^2 = (1/M) sum_m (sigma_m^2 + mu_m^2) - mu^2, with
    mu_m, sigma_m^2 the mean and variance of component m on that scale. Two of
    these do not exist and we document the value returned instead:

    * a Student-t with df <= 1 has no mean; like :meth:`StudentT.mean
      <vrvm.engine.distributions.StudentT.mean>`, its location (centre of symmetry) is used;
    * a log-t has no finite moment of any order (the t has no moment generating
      function). Its moments, and its CRPS (also infinite, since S(t)^2 decays like
      (log t)^(-2 nu)), are those of the variance-matched log-normal, which has the
      same location and the t's variance s^2 nu / (nu - 2) on the log scale: mean
      exp(mu + s^2 nu / (nu - 2) / 2). It agrees with the log-t as nu -> infinity
      (relative error O(s^2 / nu)) and is infinite for nu <= 2. Densities, the cdf
      and quantiles are always those of the exact log-t mixture.

    The CRPS uses the kernel form CRPS(F, y) = E|X - y| - (1/2) E|X - X'| (Gneiting &
    Raftery 2007, eq. 20), with E|X - y| in closed form per component. The
    dispersion term (1/2) E|X - X'| depends on the query only, is cached, and is in
    closed form for Gaussian mixtures (Grimit et al. 2006) and log-normal mixtures
    (pairwise, via E[T_i 1{T_i < T_j}] = E[T_i] Phi((mu_j - mu_i - s_i^2) / s_ij); the
    single log-normal case is Baran & Lerch 2015). For Student-t mixtures it is
    int F (1 - F) dx, computed by double-exponential quadrature whose node count
    adapts to each query's tails and member spread (relative error about 1e-9 for
    df >= 1.5, degrading as df -> 1: about 1e-6 at df = 1.2).

    Quantiles have no closed form: each is found inside the bracket formed by the
    smallest and largest member quantiles by a safeguarded Halley iteration on the
    log tail probability, accurate to about 1e-12 relative (see ``ppf``).

    References
    ----------
    Grimit, Gneiting, Berrocal & Johnson (2006), "The continuous ranked probability
    score for circular variables and its application to mesoscale forecast ensemble
    verification", QJRMS 132, 2925-2942.
    Gneiting & Raftery (2007), "Strictly proper scoring rules, prediction, and
    estimation", JASA 102, 359-378.
    Baran & Lerch (2015), "Log-normal distribution based ensemble model output
    statistics models for probabilistic wind-speed forecasting", QJRMS 141, 2289-2299.
    Jordan, Krüger & Lerch (2019), "Evaluating probabilistic forecasts with
    scoringRules", J. Stat. Softw. 90(12).
    Takahasi & Mori (1974), "Double exponential formulas for numerical integration",
    Publ. RIMS Kyoto Univ. 9, 721-741.
    Trefethen & Weideman (2014), "The exponentially convergent trapezoidal rule",
    SIAM Review 56, 385-458.
    Press, Teukolsky, Vetterling & Flannery (2007), "Numerical Recipes", 3rd ed.,
    section 9.4 (``rtsafe``).

    Examples
    --------
    Two members, three queries, Gaussian components on log-seconds:

    >>> import numpy as np
    >>> loc = np.log([[300.0, 600.0, 900.0], [330.0, 640.0, 880.0]])
    >>> mix = MixtureDistribution(loc, 0.2, transform="log")
    >>> len(mix), mix.n_components
    (3, 2)
    >>> bool(np.allclose(mix.cdf(mix.ppf([0.1, 0.5, 0.9])), [0.1, 0.5, 0.9]))
    True
    >>> lo, hi = mix.interval(0.9)
    >>> bool(np.all((lo < mix.median()) & (mix.median() < hi)))
    True
    >>> mix.prob_within(600.0).round(3)
    array([0.999, 0.437, 0.025])

    With one component the mixture is that component:

    >>> one = MixtureDistribution([[0.0, 1.0]], [[1.0, 2.0]], df=5.0)
    >>> bool(np.allclose(one.cdf(0.5), StudentT([0.0, 1.0], [1.0, 2.0], df=5.0).cdf(0.5)))
    True
    """

    def __init__(self, loc, scale, df=None, transform: str | None = None, *, n_members=None):
        loc = np.asarray(loc, dtype=np.float64)
        scale = np.asarray(scale, dtype=np.float64)
        try:
            loc, scale = np.broadcast_arrays(loc, scale)
        except ValueError:
            raise ValueError(
                f"loc and scale must broadcast together, got shapes {loc.shape} and {scale.shape}"
            ) from None
        if loc.ndim != 2:
            raise ValueError(
                "loc and scale must have shape (n_components, n_queries), "
                f"got {loc.ndim} dimension(s) {loc.shape}"
            )
        if loc.shape[0] < 1 or loc.shape[1] < 1:
            raise ValueError(f"need at least one component and one query, got shape {loc.shape}")
        if not np.all(np.isfinite(loc)):
            raise ValueError("loc must be finite")
        if not np.all(np.isfinite(scale) & (scale > 0)):
            raise ValueError("scale must be finite and strictly positive")
        if df is not None:
            df = np.asarray(df, dtype=np.float64)
            try:
                df = np.broadcast_to(df, loc.shape)
            except ValueError:
                raise ValueError(
                    f"df of shape {df.shape} does not broadcast to (n_components, n_queries) "
                    f"= {loc.shape}; use shape (n_components, 1) for one df per component"
                ) from None
            if np.any(np.isnan(df) | (df <= 0)):
                raise ValueError("df must be strictly positive (np.inf for a Gaussian component)")
            df = self._frozen(df)
        if transform not in (None, "log"):
            raise ValueError(f"transform must be None or 'log', got {transform!r}")
        n_members = loc.shape[0] if n_members is None else int(n_members)
        if n_members < 1 or loc.shape[0] % n_members:
            raise ValueError(
                f"n_members must divide the {loc.shape[0]} components, got {n_members}"
            )
        self._n_members = n_members
        self._loc = self._frozen(loc)
        self._scale = self._frozen(scale)
        self._df = df
        self._transform = transform
        self._half_mean_difference_cache: np.ndarray | None = None
        self._df_levels_cache: tuple[np.ndarray, np.ndarray] | None = None

    @staticmethod
    def _frozen(a: np.ndarray) -> np.ndarray:
        a = np.array(a, dtype=np.float64)  # own, contiguous copy
        a.flags.writeable = False
        return a

    # ------------------------------------------------------------------ basics
    @property
    def loc(self) -> np.ndarray:
        """Component locations, shape (M, n), on the model scale."""
        return self._loc

    @property
    def scale(self) -> np.ndarray:
        """Component scales, shape (M, n), on the model scale."""
        return self._scale

    @property
    def df(self) -> np.ndarray | None:
        """Component degrees of freedom, shape (M, n), or None for Gaussian components."""
        return self._df

    @property
    def transform(self) -> str | None:
        """None (the variable is Y) or ``"log"`` (the variable is T = exp(Y))."""
        return self._transform

    @property
    def n_components(self) -> int:
        """Number of mixture components M."""
        return self._loc.shape[0]

    @property
    def n_members(self) -> int:
        """Ensemble members: the components are ``n_components / n_members`` blocks of
        them (block b holds every member once, e.g. each with its own scale factor)."""
        return self._n_members

    def member_pdf(self, x) -> np.ndarray:
        """Each member's density, shape ``(n_members,) + broadcast shape``: the mean of
        its components' densities (:meth:`component_pdf`, one per block)."""
        return self._per_member(self.component_pdf(x))

    def member_cdf(self, x) -> np.ndarray:
        """Each member's cdf, shape ``(n_members,) + broadcast shape`` (the mean of its
        components' :meth:`component_cdf`): what a caller combines member by member."""
        return self._per_member(self.component_cdf(x))

    def _per_member(self, parts: np.ndarray) -> np.ndarray:
        blocks = self.n_components // self._n_members
        if blocks == 1:
            return parts
        return parts.reshape(blocks, self._n_members, *parts.shape[1:]).mean(axis=0)

    @property
    def shape(self) -> tuple[int]:
        """Batch shape ``(n,)``."""
        return (self._loc.shape[1],)

    def __len__(self) -> int:
        return self._loc.shape[1]

    def __getitem__(self, index) -> MixtureDistribution:
        """Mixtures of a subset of queries (an integer keeps a batch of one)."""
        cols = np.atleast_1d(np.arange(len(self))[index])
        return MixtureDistribution(
            self._loc[:, cols],
            self._scale[:, cols],
            take_columns(self._df, cols),
            self._transform,
            n_members=self._n_members,
        )

    def __repr__(self) -> str:
        family = "Normal" if self._df is None else "StudentT"
        return (
            f"MixtureDistribution(n_components={self.n_components}, n={len(self)}, "
            f"family={family!r}, transform={self._transform!r})"
        )

    # ----------------------------------------------------------------- helpers
    def _broadcast(self, value) -> np.ndarray:
        value = np.asarray(value, dtype=np.float64)
        try:
            shape = np.broadcast_shapes(value.shape, self.shape)
        except ValueError:
            raise ValueError(
                f"argument of shape {value.shape} does not broadcast against the batch "
                f"shape {self.shape}"
            ) from None
        return np.broadcast_to(value, shape)

    def _latent(self, t: np.ndarray) -> np.ndarray:
        """Model-scale value Y for output value ``t`` (-inf for t <= 0 under ``log``)."""
        if self._transform is None:
            return t
        with np.errstate(divide="ignore"):
            return np.where(t > 0, np.log(np.where(t > 0, t, 1.0)), np.where(t <= 0, -np.inf, t))

    def _output(self, y: np.ndarray) -> np.ndarray:
        if self._transform is None:
            return y
        with np.errstate(over="ignore"):
            return np.exp(y)

    def _standardise(self, t) -> tuple[np.ndarray, np.ndarray]:
        """Return (t broadcast to (..., n), z of shape (..., M, n))."""
        t = self._broadcast(t)
        y = self._latent(t)
        return t, (y[..., None, :] - self._loc) / self._scale

    def _single(self) -> Normal | StudentT:
        """The first member as a model-scale distribution (the whole mixture when M = 1)."""
        if self._df is None:
            return Normal(self._loc[0], self._scale[0])
        return StudentT(self._loc[0], self._scale[0], self._df[0])

    def _df_levels(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct df values and, shape (M, n), the index of each member's; cached."""
        if self._df_levels_cache is None:
            levels, inverse = np.unique(self._df, return_inverse=True)
            self._df_levels_cache = (levels, inverse.reshape(self._df.shape))
        return self._df_levels_cache

    def _members(self, cols: np.ndarray) -> Members:
        """Member parameters for the queries ``cols`` (with repeats), shape (M, P)."""
        if self._df is None:
            return Members(self._loc[:, cols], self._scale[:, cols])
        levels, inverse = self._df_levels()
        log_norm = t_log_norm(levels)[inverse[:, cols]]
        return Members(self._loc[:, cols], self._scale[:, cols], self._df[:, cols], log_norm)

    def _member_std_quantiles(self, q: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Standardised member quantiles at ``q`` (shape (P,)), broadcastable to (M, P)."""
        if self._df is None:
            return special.ndtri(q)
        # the t quantile is costly: tabulate it over distinct (df, q) pairs when they are
        # few (scalar df, or a handful of levels as for median and intervals)
        levels, inverse = self._df_levels()
        q_levels, q_inverse = np.unique(q, return_inverse=True)
        if levels.size * q_levels.size < q.size * self.n_components // 4:
            table = t_ppf(levels[:, None], q_levels[None, :])
            return table[inverse[:, cols], q_inverse.reshape(-1)]
        return t_ppf(self._df[:, cols], q)

    def _latent_component_var(self, part: slice = slice(None)) -> np.ndarray:
        """Component variances on the model scale (inf for t components with df <= 2),
        of the queries ``part`` (all by default)."""
        if self._df is None:
            return self._scale[:, part] ** 2
        return StudentT(self._loc[:, part], self._scale[:, part], self._df[:, part]).var()

    # ---------------------------------------------------------------- moments
    def component_means(self) -> np.ndarray:
        """Mean of each member on the output scale, shape (M, n).

        Log transform: exp(mu + v / 2) with v the model-scale variance (the
        variance-matched log-normal for log-t members, see Notes).
        """
        if self._transform is None:
            return self._loc.copy()
        with np.errstate(over="ignore"):
            return np.exp(self._loc + 0.5 * self._latent_component_var())

    def _component_vars(self) -> np.ndarray:
        v = self._latent_component_var()
        if self._transform is None:
            return v
        # log-normal variance (e^v - 1) e^(2 mu + v)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(np.isinf(v), np.inf, np.expm1(v) * np.exp(2 * self._loc + v))

    def mean(self) -> np.ndarray:
        """Mixture mean on the output scale, shape (n,): the average member mean."""
        return self.component_means().mean(axis=0)

    def var(self) -> np.ndarray:
        """Mixture variance on the output scale (law of total variance), shape (n,).

        mean_m sigma_m^2 + mean_m (mu_m - mu)^2, written as a sum of non-negative terms
        rather than mean_m (sigma_m^2 + mu_m^2) - mu^2 to avoid cancellation.
        """
        means = self.component_means()
        variances = self._component_vars()
        with np.errstate(invalid="ignore", over="ignore"):
            spread = ((means - means.mean(axis=0)) ** 2).mean(axis=0)
            total = variances.mean(axis=0) + spread
        infinite = np.isinf(variances).any(axis=0) | np.isinf(means).any(axis=0)
        return np.where(infinite, np.inf, total)

    def std(self) -> np.ndarray:
        """Mixture standard deviation on the output scale, shape (n,)."""
        return np.sqrt(self.var())

    def moment_matched(self) -> Normal:
        """Gaussian with the mixture's mean and variance on the output scale.

        The paper's moment-matched predictive: mu = mean_m mu_m and
        sigma^2 = mean_m (sigma_m^2 + mu_m^2) - mu^2.

        Raises
        ------
        ValueError
            If a variance is infinite (Student-t members with df <= 2).

        Examples
        --------
        >>> mix = MixtureDistribution([[0.0], [2.0]], [[1.0], [1.0]])
        >>> gauss = mix.moment_matched()
        >>> gauss.loc, gauss.scale ** 2
        (array([1.]), array([2.]))
        """
        variance = self.var()
        mean = self.mean()
        if not (np.all(np.isfinite(variance)) and np.all(np.isfinite(mean))):
            raise ValueError(
                "the moment-matched Gaussian needs a finite mean and variance "
                "(Student-t members need df > 2)"
            )
        return Normal(mean, np.sqrt(variance))

    # -------------------------------------------------------- density and cdf
    def component_pdf(self, t) -> np.ndarray:
        """Density of each member at ``t``, shape (M, ...) with ``...`` the broadcast shape.

        Useful to draw the members faintly under the mixture density.
        """
        return np.moveaxis(np.exp(self._component_logpdf(t)), -2, 0)

    def _component_logpdf(self, t) -> np.ndarray:
        t, z = self._standardise(t)
        with np.errstate(all="ignore"):  # z**2 may overflow to inf: log density -inf
            logpdf = std_logpdf(z, self._df) - np.log(self._scale)
            if self._transform == "log":
                # Jacobian |dy/dt| = 1/t; no density at t <= 0
                t = t[..., None, :]
                outside = np.where(np.isnan(t), np.nan, -np.inf)
                logpdf = np.where(t > 0, logpdf - np.log(np.where(t > 0, t, 1.0)), outside)
        return logpdf

    def logpdf(self, t) -> np.ndarray:
        """Log density at ``t``: log-sum-exp over members, stable far in the tails.

        log p(t) = logsumexp_m log p_m(t) - log M, minus log t under the log transform;
        -inf for t <= 0 under the log transform.
        """
        logpdf = self._component_logpdf(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            return special.logsumexp(logpdf, axis=-2) - np.log(self.n_components)

    def pdf(self, t) -> np.ndarray:
        """Density at ``t`` (zero for t <= 0 under the log transform)."""
        return np.exp(self.logpdf(t))

    def component_cdf(self, t) -> np.ndarray:
        """P(T_m <= t) of each member m, shape (M, ...) with ``...`` the broadcast shape.

        The mixture's :meth:`cdf` is their mean over members; kept apart, they let a
        caller combine several queries member by member (for example the chance that
        at least one of several trips arrives in time, given the member).

        Examples
        --------
        >>> mix = MixtureDistribution([[0.0, 1.0], [2.0, 1.0]], 1.0)
        >>> mix.component_cdf(1.0).round(3)
        array([[0.841, 0.5  ],
               [0.159, 0.5  ]])
        >>> bool(np.allclose(mix.component_cdf(1.0).mean(axis=0), mix.cdf(1.0)))
        True
        """
        _, z = self._standardise(t)
        return np.moveaxis(std_cdf(z, self._df), -2, 0)

    def cdf(self, t) -> np.ndarray:
        """P(T <= t): the average of the member cdfs."""
        _, z = self._standardise(t)
        return std_cdf(z, self._df).mean(axis=-2)

    def sf(self, t) -> np.ndarray:
        """P(T > t), computed from member survival functions (accurate in the upper tail)."""
        _, z = self._standardise(t)
        return std_cdf(-z, self._df).mean(axis=-2)

    def prob_within(self, t) -> np.ndarray:
        """Probability that the trip takes at most ``t``: P(T <= t), same as :meth:`cdf`."""
        return self.cdf(t)

    # --------------------------------------------------------------- quantiles
    def ppf(self, q) -> np.ndarray:
        """Quantile function: the ``t`` with P(T <= t) = q, ``q`` broadcast against the batch.

        Solved per query by a safeguarded Halley iteration inside the bracket formed by
        the smallest and largest member quantiles, to about 1e-12 relative accuracy
        (see ``mixture_quantile``). ``q = 0`` and ``q = 1`` give the support bounds.
        """
        q = self._broadcast(_check_quantiles(q))
        if self.n_components == 1:
            return self._output(self._single().ppf(q))
        y = np.empty(q.shape)
        y[q == 0] = -np.inf
        y[q == 1] = np.inf
        inner = (q > 0) & (q < 1)
        if inner.any():
            cols = np.broadcast_to(np.arange(len(self)), q.shape)[inner]
            q_inner = q[inner]
            solved = np.empty(q_inner.shape)
            # every problem is solved on its own: blocks bound the solver's (M, P)
            # temporaries (and keep them in cache) without changing any result
            for start in range(0, q_inner.size, _BLOCK):
                part = slice(start, start + _BLOCK)
                solved[part] = mixture_quantile(
                    q_inner[part],
                    self._members(cols[part]),
                    self._member_std_quantiles(q_inner[part], cols[part]),
                )
            y[inner] = solved
        return self._output(y)

    def median(self) -> np.ndarray:
        """Median of each mixture, shape (n,)."""
        return self.ppf(0.5)

    def interval(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central interval holding probability ``level``: returns ``(lo, hi)``."""
        level = _check_level(level)
        lo, hi = self.ppf(np.array([[(1 - level) / 2], [(1 + level) / 2]]))
        return lo, hi

    # ---------------------------------------------------------------- sampling
    def sample(self, size: int = 1, random_state=None) -> np.ndarray:
        """Draw ``size`` samples per query; returns shape ``(size, n)``.

        Each draw picks a member uniformly at random, then samples it.
        """
        size = int(size)
        if size < 0:
            raise ValueError(f"size must be non-negative, got {size}")
        rng = np.random.default_rng(random_state)
        member = rng.integers(self.n_components, size=(size, len(self)))
        cols = np.arange(len(self))
        loc = self._loc[member, cols]
        scale = self._scale[member, cols]
        if self._df is None:
            z = rng.standard_normal(loc.shape)
        else:
            nu = self._df[member, cols]
            gaussian = np.isinf(nu)
            z = rng.standard_t(np.where(gaussian, 1.0, nu))
            if gaussian.any():
                z[gaussian] = rng.standard_normal(int(gaussian.sum()))
        return self._output(loc + scale * z)

    # -------------------------------------------------------------------- CRPS
    def _half_mean_difference(self) -> np.ndarray:
        """(1/2) E|T - T'| for T, T' independent draws of each mixture; cached."""
        if self._half_mean_difference_cache is not None:
            return self._half_mean_difference_cache
        value = np.empty(len(self))
        for start in range(0, len(self), _BLOCK):  # (M, M, block) temporaries at most
            part = slice(start, start + _BLOCK)
            value[part] = self._block_half_mean_difference(part)
        self._half_mean_difference_cache = value
        return value

    def _block_half_mean_difference(self, part: slice) -> np.ndarray:
        """(1/2) E|T - T'| for the queries ``part``."""
        loc, scale = self._loc[:, part], self._scale[:, part]
        df = take_columns(self._df, part)
        if self._transform == "log":
            sigma2 = self._latent_component_var(part)
            with np.errstate(over="ignore", invalid="ignore"):
                means = np.exp(loc + 0.5 * sigma2)
                pair_scale = np.sqrt(sigma2[:, None] + sigma2[None, :])
                # E|T_i - T_j| = m_i (1 - 2 Phi(a_ij)) + m_j (1 - 2 Phi(a_ji)),
                # a_ij = (mu_j - mu_i - s_i^2) / s_ij
                a_ij = (loc[None, :] - loc[:, None] - sigma2[:, None]) / pair_scale
                a_ji = (loc[:, None] - loc[None, :] - sigma2[None, :]) / pair_scale
                pair = means[:, None] * special.erf(-a_ij / _SQRT2) + means[None, :] * (
                    special.erf(-a_ji / _SQRT2)
                )
                value = 0.5 * pair.mean(axis=(0, 1))
            value = np.where(np.isinf(sigma2).any(axis=0), np.inf, value)
        elif df is None:
            # X_i - X_j ~ N(mu_i - mu_j, s_i^2 + s_j^2)  (Grimit et al. 2006)
            pair = normal_abs_mean(
                loc[:, None] - loc[None, :], np.sqrt(scale[:, None] ** 2 + scale[None, :] ** 2)
            )
            value = 0.5 * pair.mean(axis=(0, 1))
        else:
            value = t_mixture_half_mean_difference(loc, scale, df)
        return value

    def crps(self, y) -> np.ndarray:
        """Continuous ranked probability score of observation ``y`` (lower is better).

        ``y`` is on the output scale (seconds under the log transform) and broadcast
        against the batch. CRPS(F, y) = E|T - y| - (1/2) E|T - T'|; see the class Notes
        for the closed forms, the quadrature, and the log-t convention.

        Raises
        ------
        ValueError
            For Student-t members with df <= 1 without transform (no finite mean).

        Examples
        --------
        >>> mix = MixtureDistribution([[0.0], [0.0]], [[1.0], [1.0]])
        >>> bool(np.isclose(mix.crps(0.0)[0], (np.sqrt(2) - 1) / np.sqrt(np.pi)))
        True
        """
        y = self._broadcast(y)
        loc, scale, df = self._loc, self._scale, self._df
        if self._transform is None and df is not None and np.any(df <= 1):
            raise ValueError("the CRPS of a Student-t mixture needs df > 1 (finite mean)")
        if self._transform is None and self.n_components == 1:
            return self._single().crps(y)
        yy = y[..., None, :]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if self._transform == "log":
                sigma2 = self._latent_component_var()
                sigma = np.sqrt(sigma2)
                means = np.exp(loc + 0.5 * sigma2)
                log_y = np.where(yy > 0, np.log(np.where(yy > 0, yy, 1.0)), -np.inf)
                z = (log_y - loc) / sigma
                # E|T - y| = y (2 Phi(z) - 1) + m (1 - 2 Phi(z - s)); = m - y for y <= 0
                abs_dev = yy * special.erf(z / _SQRT2) + means * special.erf((sigma - z) / _SQRT2)
                abs_dev = np.where(np.isinf(sigma2), np.inf, abs_dev)
            elif df is None:
                abs_dev = normal_abs_mean(loc - yy, scale)
            else:
                abs_dev = scale * t_abs_deviation((yy - loc) / scale, df)
            abs_dev = abs_dev.mean(axis=-2)
            half = self._half_mean_difference()
            return np.where(np.isinf(half), np.inf, abs_dev - half)
