r"""Bayesian linear regression as an estimator, batch (scikit-learn) and streaming (river).

:class:`BayesianLinearRegression` has ``fit``/``partial_fit``/``predict`` and
``learn_one``/``learn_many``/``predict_one``, with the noise precision either learned
(normal-gamma, Student-t predictive), fixed (Bishop 2006, section 3.3, Gaussian
predictive) or set by evidence maximisation (section 3.5.2). Its state is a
:class:`~vrvm.engine.posterior.NormalGammaPosterior`, which holds the conjugate posterior
and absorbs data by rank-one updates of a square-root information factor.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.posterior import NormalGammaPosterior
from vrvm.engine.validation import (
    FORGETTING,
    as_float_array,
    as_targets,
    boolean,
    check_finite,
    check_params,
    integer,
    real,
)

__all__ = ["BayesianLinearRegression", "NormalGammaPosterior"]

logger = logging.getLogger(__name__)

#: Prior precision of the intercept, in the units of ``alpha``: a nearly flat prior,
#: so the intercept is not shrunk (the streaming equivalent of centring X and y).
INTERCEPT_PRECISION = 1e-10

_TINY = 1e-300


# Declarative parameter table: name -> (predicate, description of the allowed values).
_PARAMETER_CONSTRAINTS = {
    "alpha": (real(0, strict=True), "a number > 0"),
    "beta": (real(0, strict=True, allow_none=True), "None or a number > 0"),
    "learn_noise": (boolean, "True or False"),
    "a0": (real(0, strict=True), "a number > 0"),
    "b0": (real(0, strict=True), "a number > 0"),
    "fit_intercept": (boolean, "True or False"),
    "forgetting": FORGETTING,
    "max_iter": (integer(1), "an integer >= 1"),
    "tol": (real(0, strict=True), "a number > 0"),
}


class BayesianLinearRegression(RegressorMixin, BaseEstimator):
    r"""Bayesian linear regression, batch (scikit-learn) and streaming (river) in one.

    Three ways to treat the noise precision:

    * ``learn_noise=True`` (default): conjugate normal-gamma model,
      ``w | lambda ~ N(0, (lambda alpha)^-1 I)``, ``lambda ~ Gam(a0, b0)``; the
      predictive is Student-t. ``alpha`` is the weight precision *relative to the noise
      precision*, so the posterior mean is the ridge solution with penalty ``alpha``.
    * ``learn_noise=False`` and ``beta`` given: Bishop's (2006, section 3.3) model with
      known noise, ``w ~ N(0, alpha^-1 I)``; Gaussian predictive (eqs. 3.50/3.51/3.59).
    * ``learn_noise=False`` and ``beta=None``: as above with ``alpha`` and ``beta``
      set by ``fit`` to maximise the evidence (section 3.5.2); ``alpha`` is the
      starting value. Later ``partial_fit``/``learn_one`` calls update the weights
      with these hyperparameters held fixed.

    Parameters
    ----------
    alpha : float, default=1.0
        Prior precision of the weights (see above for its units).
    beta : float or None, default=None
        Known noise precision (only with ``learn_noise=False``).
    learn_noise : bool, default=True
        Give the noise precision a Gamma(a0, b0) prior and integrate it out.
    a0, b0 : float, default=1e-6
        Shape and rate of that gamma prior.
    fit_intercept : bool, default=True
        Add a constant column with a nearly flat prior (precision
        :data:`INTERCEPT_PRECISION` in the units of ``alpha``), so the intercept is not
        shrunk; this matches centring X and y as scikit-learn does, but works online.
    forgetting : float in (0, 1], default=1.0
        Exponential forgetting per absorbed row (see :class:`NormalGammaPosterior`);
        1.0 forgets nothing. With forgetting, rows are a time-ordered stream, also in
        ``fit``.
    max_iter : int, default=300
        Maximum evidence-maximisation iterations (``learn_noise=False, beta=None``).
    tol : float, default=1e-6
        Evidence maximisation stops when alpha and beta both change by less than this,
        relatively.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Posterior mean of the weights (always current, also after streaming updates).
    intercept_ : float
        Posterior mean of the intercept (0.0 when ``fit_intercept=False``).
    alpha_ : float
        Weight prior precision used (estimated when maximising the evidence).
    beta_ : float
        Noise precision: known, estimated, or the posterior mean a/b (``learn_noise``).
    posterior_ : NormalGammaPosterior
        The posterior over [intercept, coef] (intercept first when fitted).
    n_iter_ : int
        Evidence-maximisation iterations run (0 when not maximising).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of object
        Feature names, when the first data came as a dict or a DataFrame.

    See Also
    --------
    sklearn.linear_model.BayesianRidge : the batch evidence-maximisation model
        (its ``alpha_`` is our ``beta_``, its ``lambda_`` our ``alpha_``).
    river.linear_model.BayesianLinearRegression : the fixed-noise streaming model
        (its ``alpha``, ``beta`` are ours, without an intercept).

    Notes
    -----
    **Features in dicts** (``learn_one``, ``predict_one``) are mapped to columns in the
    key order of the first dict (or DataFrame) the model sees; afterwards every dict
    must have exactly these keys, in any order. A missing or new key raises
    ``ValueError``: the basis is fixed, and silently reading a missing feature as 0
    would bias the posterior. Arrays are taken positionally.

    **Evidence maximisation** (Bishop 2006, section 3.5.2) on centred data, with the
    eigenvalues lambda_i of beta X^T X: gamma = sum lambda_i / (alpha + lambda_i)
    (eq. 3.91), alpha = gamma / m^T m (eq. 3.92), 1/beta = ||y - X m||^2 / (N - gamma)
    (eq. 3.95), iterated to a fixed point; this is BayesianRidge without its
    hyperpriors (its ``alpha_1 = alpha_2 = lambda_1 = lambda_2 = 0``).

    **Cost.** ``learn_one`` is O(M^2) (M = features + intercept), ``fit`` and
    ``learn_many`` O(n M^2) through blocked QR (row by row when ``forgetting < 1``).
    Prediction is O(M^2) per row.

    References
    ----------
    .. [1] C. M. Bishop, "Pattern Recognition and Machine Learning", Springer 2006,
       sections 3.3 and 3.5.
    .. [2] G. J. Bierman, "Factorization Methods for Discrete Sequential Estimation",
       Academic Press 1977 (square-root information updates).
    .. [3] R. Kulhavý and M. B. Zarrop, "On a general concept of forgetting",
       Int. J. Control 58(4), 1993.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = 3.0 + X @ [1.5, -2.0] + rng.normal(0, 0.5, 200)
    >>> model = BayesianLinearRegression().fit(X, y)
    >>> bool(np.allclose(model.coef_, [1.5, -2.0], atol=0.1)), round(model.intercept_, 1)
    (True, 3.0)
    >>> mean, std = model.predict(X[:2], return_std=True)
    >>> bool(np.all((0.45 < std) & (std < 0.6)))
    True

    Streaming, river style:

    >>> online = BayesianLinearRegression()
    >>> for xi, yi in zip(X, y):
    ...     online.learn_one({"a": xi[0], "b": xi[1]}, yi)
    >>> bool(np.allclose(online.coef_, model.coef_))
    True
    >>> dist = online.predict_one({"a": 0.0, "b": 1.0}, with_dist=True)
    >>> lo, hi = dist.interval(0.9)
    >>> bool(lo[0] < online.predict_one({"a": 0.0, "b": 1.0}) < hi[0])
    True
    """

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        beta: float | None = None,
        learn_noise: bool = True,
        a0: float = 1e-6,
        b0: float = 1e-6,
        fit_intercept: bool = True,
        forgetting: float = 1.0,
        max_iter: int = 300,
        tol: float = 1e-6,
    ):
        self.alpha = alpha
        self.beta = beta
        self.learn_noise = learn_noise
        self.a0 = a0
        self.b0 = b0
        self.fit_intercept = fit_intercept
        self.forgetting = forgetting
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ validation
    def validate_params(self) -> None:
        """Check every parameter as :meth:`fit` does, without fitting (ValueError names it)."""
        check_params(self, _PARAMETER_CONSTRAINTS)
        if self.learn_noise and self.beta is not None:
            raise ValueError(
                "beta fixes the noise precision, which contradicts learn_noise=True; "
                "set learn_noise=False to use a known beta"
            )

    @property
    def _maximises_evidence(self) -> bool:
        return not self.learn_noise and self.beta is None

    def _is_fitted(self) -> bool:
        return hasattr(self, "posterior_")

    def _check_fitted(self) -> None:
        if not self._is_fitted():
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit, "
                "partial_fit or learn_one first."
            )

    # ------------------------------------------------------------------ input handling
    def _names_of(self, X):
        """Column names of a DataFrame-like input, else None."""
        columns = getattr(X, "columns", None)
        return None if columns is None else list(columns)

    def _matrix(self, X, *, first: bool) -> np.ndarray:
        """X as float64 (n, n_features), reordered by name for DataFrames."""
        names = self._names_of(X)
        if names is not None and not first and hasattr(self, "feature_names_in_"):
            self._check_keys(names)
            if names != list(self.feature_names_in_):
                X = X[list(self.feature_names_in_)]
        arr = as_float_array(X, "X")
        if arr.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {arr.shape}")
        if first:
            if arr.shape[1] == 0:
                raise ValueError("X has no features")
            if names is not None:
                self.feature_names_in_ = np.array(names, dtype=object)
            self.n_features_in_ = arr.shape[1]
        elif arr.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {arr.shape[1]} features, but the model was fitted with "
                f"{self.n_features_in_}"
            )
        return check_finite(arr, "X")

    def _check_keys(self, keys) -> None:
        known = list(self.feature_names_in_)
        missing = [k for k in known if k not in keys]
        extra = [k for k in keys if k not in set(known)]
        if missing or extra:
            raise ValueError(
                f"features must match those first seen {known}: "
                f"missing {missing}, unexpected {extra}"
            )

    def _row_from_dict(self, x: Mapping, *, first: bool) -> np.ndarray:
        if not isinstance(x, Mapping):
            raise ValueError(f"x must be a dict of feature -> value, got {type(x).__name__}")
        if first:
            if not x:
                raise ValueError("x has no features")
            names = list(x)
        else:
            if not hasattr(self, "feature_names_in_"):
                raise ValueError(
                    "the model was fitted on an array without feature names, so dict "
                    "features cannot be placed; fit on a DataFrame or start with learn_one"
                )
            names = list(self.feature_names_in_)
            if len(x) != len(names) or any(k not in x for k in names):
                self._check_keys(list(x))
        try:
            row = np.array([float(x[k]) for k in names], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"feature values must be numbers: {exc}") from None
        return check_finite(row, "x")[None, :]

    def _design(self, X: np.ndarray) -> np.ndarray:
        if self.fit_intercept:
            return np.column_stack([np.ones(X.shape[0]), X])
        return X

    # ------------------------------------------------------------------ posterior set-up
    def _prior(self, n_features: int, alpha: float, beta: float | None) -> NormalGammaPosterior:
        precision = np.full(n_features + int(self.fit_intercept), float(alpha))
        if self.fit_intercept:
            precision[0] = INTERCEPT_PRECISION
        if self.learn_noise:
            # normal-gamma prior, Lambda_0 = alpha I in unit-noise units
            return NormalGammaPosterior(precision, a=self.a0, b=self.b0)
        # Known noise: S_0^-1 = alpha I = beta Lambda_0 (Bishop eq. 3.52); the gamma part
        # of the posterior is then unused.
        return NormalGammaPosterior(precision / beta, a=1.0, b=1.0)

    def _start(self, n_features: int, first_x=None, first_y=None) -> None:
        """Initialise the posterior (and hyperparameters) at the first data."""
        self.n_iter_ = 0
        if self._maximises_evidence:
            if first_x is None or first_x.shape[0] < 2:
                raise ValueError(
                    "evidence maximisation (learn_noise=False, beta=None) needs a batch of "
                    "at least 2 rows: call fit or partial_fit first, or set beta"
                )
            self.alpha_, self._beta, self.n_iter_ = self._maximise_evidence(first_x, first_y)
        else:
            self.alpha_ = float(self.alpha)
            self._beta = None if self.learn_noise else float(self.beta)
        self.posterior_ = self._prior(n_features, self.alpha_, self._beta)

    def _maximise_evidence(self, X: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
        n = X.shape[0]
        if self.fit_intercept:  # intercept with a flat prior == centring (as BayesianRidge)
            X = X - X.mean(axis=0)
            y = y - y.mean()
        evals, evecs = linalg.eigh(X.T @ X, check_finite=False)
        evals = np.clip(evals, 0.0, None)
        z = evecs.T @ (X.T @ y)
        alpha = float(self.alpha)
        beta = 1.0 / max(float(np.var(y)), _TINY)
        converged, n_iter = False, 0
        while n_iter < self.max_iter:
            n_iter += 1
            lam = beta * evals
            # m_N = beta S_N X^T y in the eigenbasis of X^T X (eq. 3.53)
            mean = evecs @ (beta * z / (alpha + lam))
            gamma = float(np.sum(lam / (alpha + lam)))  # eq. 3.91
            alpha_new = max(gamma, _TINY) / max(float(mean @ mean), _TINY)  # eq. 3.92
            rss = float(np.sum((y - X @ mean) ** 2))
            beta_new = (n - gamma) / max(rss, _TINY)  # eq. 3.95
            change = max(abs(alpha_new - alpha) / alpha, abs(beta_new - beta) / beta)
            alpha, beta = alpha_new, beta_new
            if change < self.tol:
                converged = True
                break
        if not converged:
            warnings.warn(
                f"evidence maximisation did not converge in {self.max_iter} iterations "
                f"(alpha={alpha:.4g}, beta={beta:.4g}); increase max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )
        logger.debug("evidence maximisation: alpha=%g beta=%g after %d", alpha, beta, n_iter)
        return alpha, beta, n_iter

    # ------------------------------------------------------------------ scikit-learn API
    def fit(self, X, y):
        """Fit on a batch, discarding any previous state.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : BayesianLinearRegression
        """
        self.validate_params()
        for attr in ("posterior_", "feature_names_in_", "n_features_in_"):
            self.__dict__.pop(attr, None)
        X = self._matrix(X, first=True)
        y = as_targets(y, X.shape[0])
        if X.shape[0] == 0:
            raise ValueError("X has no rows")
        self._start(X.shape[1], X, y)
        self.posterior_.update(self._design(X), y, forgetting=self.forgetting)
        return self

    def partial_fit(self, X, y):
        """Update the posterior with a batch (the first call acts as :meth:`fit`).

        Returns
        -------
        self : BayesianLinearRegression
        """
        if not self._is_fitted():
            return self.fit(X, y)
        X = self._matrix(X, first=False)
        y = as_targets(y, X.shape[0])
        self.posterior_.update(self._design(X), y, forgetting=self.forgetting)
        return self

    def predict_dist(self, X) -> StudentT | Normal:
        """Predictive distribution of every row of ``X``.

        Returns
        -------
        StudentT or Normal
            Student-t with 2a dof when the noise is learned, otherwise Gaussian
            N(m^T phi, 1/beta + phi^T S phi) (Bishop eq. 3.58/3.59).
        """
        self._check_fitted()
        Phi = self._design(self._matrix(X, first=False))
        return self._dist(Phi, self.posterior_, self._beta)

    def _dist(self, Phi: np.ndarray, posterior: NormalGammaPosterior, beta: float | None):
        if beta is None:
            return posterior.predict(Phi)
        return posterior.predict_fixed_noise(Phi, beta)

    def predict(self, X, return_std: bool = False):
        """Predictive mean, and standard deviation if ``return_std``.

        The standard deviation is infinite while the Student-t has df <= 2.
        """
        dist = self.predict_dist(X)
        if return_std:
            return dist.mean(), dist.std()
        return dist.mean()

    # ------------------------------------------------------------------ river API
    def learn_one(self, x: Mapping, y: float) -> None:
        """Update the posterior with one observation (O(M^2) Givens update).

        Parameters
        ----------
        x : dict
            Feature name -> value; the key order of the first dict fixes the columns.
        y : float
        """
        if not self._is_fitted():
            self.validate_params()
            row = self._row_from_dict(x, first=True)
            target = as_targets(y, 1)
            self._start(row.shape[1])  # raises when evidence maximisation needs a batch
            self.feature_names_in_ = np.array(list(x), dtype=object)
            self.n_features_in_ = row.shape[1]
        else:
            row = self._row_from_dict(x, first=False)
            target = as_targets(y, 1)
        self.posterior_.update(self._design(row), target, forgetting=self.forgetting)

    def learn_many(self, X, y) -> None:
        """Update with a mini-batch (DataFrame or array); same as :meth:`partial_fit`."""
        self.partial_fit(X, y)

    def predict_one(self, x: Mapping, with_dist: bool = False):
        """Predict one observation.

        Before any data the prior predictive is returned (mean 0), as in river,
        except under evidence maximisation, which needs ``fit`` first.

        Parameters
        ----------
        x : dict
            Feature name -> value, with the keys seen first.
        with_dist : bool, default=False
            Return the predictive distribution (a length-1 :class:`~vrvm.StudentT` or
            :class:`~vrvm.Normal`) instead of its mean.

        Returns
        -------
        float or StudentT or Normal
        """
        if self._is_fitted():
            Phi = self._design(self._row_from_dict(x, first=False))
            dist = self._dist(Phi, self.posterior_, self._beta)
        else:
            self.validate_params()
            if self._maximises_evidence:
                self._check_fitted()
            row = self._row_from_dict(x, first=True)
            beta = None if self.learn_noise else float(self.beta)
            prior = self._prior(row.shape[1], self.alpha, beta)
            dist = self._dist(self._design(row), prior, beta)
        return dist if with_dist else float(dist.mean()[0])

    # ------------------------------------------------------------------ fitted attributes
    def _posterior_mean(self) -> np.ndarray:
        if not self._is_fitted():
            raise AttributeError("coef_ and intercept_ exist only once the model is fitted")
        return self.posterior_.mean

    @property
    def coef_(self) -> np.ndarray:
        """Posterior mean of the feature weights."""
        return self._posterior_mean()[int(self.fit_intercept) :]

    @property
    def intercept_(self) -> float:
        """Posterior mean of the intercept (0.0 without one)."""
        return float(self._posterior_mean()[0]) if self.fit_intercept else 0.0

    @property
    def beta_(self) -> float:
        """Noise precision: known, evidence-maximised, or E[lambda] = a/b if learned."""
        if not self._is_fitted():
            raise AttributeError("beta_ exists only once the model is fitted")
        return self.posterior_.noise_precision if self.learn_noise else self._beta
