r"""Conjugate Bayesian linear regression with streaming (Cholesky-updated) posteriors.

Two layers:

:class:`NormalGammaPosterior`
    The conjugate posterior of the linear-Gaussian model over a *fixed* basis,

    .. math::

        y = \phi^T w + \varepsilon,\quad \varepsilon \sim N(0, \lambda^{-1}),\quad
        w \mid \lambda \sim N(m_0, (\lambda \Lambda_0)^{-1}),\quad
        \lambda \sim \mathrm{Gam}(a_0, b_0),

    kept as one square-root information factor and updated in O(M^2) per row. It is
    the building block for updating a fitted model online over its basis (e.g. one
    VRVM ensemble member over its relevance vectors, whose structured posterior
    q(w, lambda) is exactly of this form).

:class:`BayesianLinearRegression`
    A scikit-learn / river shaped estimator on top of it: ``fit``/``partial_fit``/
    ``predict`` and ``learn_one``/``learn_many``/``predict_one``, with the noise
    precision either learned (normal-gamma, Student-t predictive), fixed (Bishop 2006,
    section 3.3, Gaussian predictive) or set by evidence maximisation (section 3.5.2).

Square-root information form
----------------------------
The posterior is stored as the upper-triangular factor of the *augmented* information
matrix (Bierman 1977, "Factorization Methods for Discrete Sequential Estimation"):

.. math::

    R_a = \begin{pmatrix} R & c \\ 0 & d \end{pmatrix},\qquad
    R_a^T R_a = \begin{pmatrix} \Lambda & \eta \\ \eta^T & m^T \Lambda m + 2b \end{pmatrix},

with :math:`\Lambda = R^T R` the precision (unit-noise units), :math:`\eta = \Lambda m =
R^T c`, :math:`m = R^{-1} c` and :math:`b = d^2 / 2`. Absorbing data adds
:math:`[\Phi, y]^T [\Phi, y]` to :math:`R_a^T R_a`, which is the whole conjugate update
(Bishop 2006 eqs. 3.50/3.51 in normal-gamma form):

.. math::

    \Lambda_N = \Lambda_0 + \Phi^T\Phi,\quad \eta_N = \eta_0 + \Phi^T y,\quad
    a_N = a_0 + n/2,\quad
    b_N = b_0 + \tfrac12 (y^T y + m_0^T\Lambda_0 m_0 - m_N^T \Lambda_N m_N).

The last entry makes :math:`b_N` come out as a sum of squares (:math:`d_N^2 / 2`) instead
of the cancellation-prone difference above. Rows are added with Givens rotations
(:func:`scipy.linalg.qr_insert`, compiled, O(M^2)); batches with one Householder QR of
the stacked matrix :math:`[R_a; \Phi, y]`. Neither forms :math:`\Phi^T\Phi` nor inverts
:math:`\Lambda`, so rounding errors follow the conditioning of the factor, not of its
square.
"""

from __future__ import annotations

import logging
import math
import numbers
import warnings
from collections.abc import Mapping

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from vrvm._validation import boolean, check_params, integer, real
from vrvm.distributions import Normal, StudentT

__all__ = ["BayesianLinearRegression", "NormalGammaPosterior"]

logger = logging.getLogger(__name__)

LOG_2PI = math.log(2.0 * math.pi)

#: Rows per Householder QR when absorbing a large batch (bounds memory to
#: about ``_QR_CHUNK * (M + 1)`` floats whatever the batch size).
_QR_CHUNK = 4096

#: Prior precision of the intercept, in the units of ``alpha``: a nearly flat prior,
#: so the intercept is not shrunk (the streaming equivalent of centring X and y).
INTERCEPT_PRECISION = 1e-10

_TINY = 1e-300

# scipy.linalg.qr_insert without scipy's Python-level batching wrapper, which costs about
# as much as the O(M^2) Givens sweep itself for M ~ 100; inputs are validated float64.
_qr_insert = getattr(linalg.qr_insert, "__wrapped__", linalg.qr_insert)


# --------------------------------------------------------------------------- validation
def _check_forgetting(forgetting) -> float:
    if (
        isinstance(forgetting, bool)
        or not isinstance(forgetting, numbers.Real)
        or not 0.0 < forgetting <= 1.0
    ):
        raise ValueError(f"forgetting must lie in (0, 1], got {forgetting!r}")
    return float(forgetting)


def _finite(arr: np.ndarray, name: str) -> np.ndarray:
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        at = f" (first at row {int(where[0])})" if arr.ndim else ""
        raise ValueError(f"{name} contains NaN or infinity{at}")
    return arr


def _as_float(value, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; could not convert it: {exc}") from None


def _as_rows(Phi, n_features: int, name: str = "Phi") -> np.ndarray:
    """2-D float64 ``(n, n_features)``; a 1-D array of length ``n_features`` is one row."""
    arr = _as_float(Phi, name)
    if arr.ndim == 1 and arr.shape[0] == n_features:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (n_samples, {n_features}), got shape {arr.shape}"
        )
    if arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} columns, expected {n_features}")
    return _finite(arr, name)


def _as_targets(y, n_rows: int, name: str = "y") -> np.ndarray:
    arr = _as_float(y, name)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"{name} has {arr.shape[0]} values but there are {n_rows} rows")
    return _finite(arr, name)


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- posterior
class NormalGammaPosterior:
    r"""Normal-gamma posterior over weights and noise precision, updated in place.

    The model is ``y = phi^T w + eps`` with ``eps ~ N(0, 1/lambda)``,
    ``w | lambda ~ N(mean, (lambda * precision)^-1)`` and ``lambda ~ Gam(a, b)``
    (shape-rate). ``precision`` is in unit-noise units: the weight precision given
    ``lambda`` is ``lambda * precision``. Conditioning on a known ``lambda = beta``
    gives Bishop's (2006) fixed-noise posterior ``N(m, S)`` with
    ``S^-1 = beta * precision``, so the same object serves both cases
    (:meth:`predict` and :meth:`predict_fixed_noise`).

    Parameters
    ----------
    precision : array-like of shape (M,) or (M, M)
        Prior precision Lambda_0 (a vector means a diagonal matrix). Must be positive
        definite.
    mean : array-like of shape (M,), optional
        Prior mean m_0 (default zeros).
    a, b : float, default=1e-6
        Shape and rate of the gamma prior on the noise precision; both > 0.

    Attributes
    ----------
    n_features : int
        M, the number of basis functions.
    n_seen : int
        Rows absorbed so far.
    log_evidence : float
        Sum over absorbed rows of log p(y_i | rows before i) under the normal-gamma
        model: the log marginal likelihood log p(y) when ``forgetting=1`` (and the
        prequential log score otherwise).

    See Also
    --------
    BayesianLinearRegression : the estimator built on this class.

    Notes
    -----
    **Updates.** See the module docstring: the state is the augmented upper factor
    ``[[R, c], [0, d]]`` (Lambda = R^T R, eta = Lambda m = R^T c, b = d^2/2) and
    every update is a QR update of it. One row costs one Givens sweep
    (:func:`scipy.linalg.qr_insert`, O(M^2)); a batch one Householder QR of the
    stacked ``[R_a; Phi, y]`` per chunk of rows, O((M + n) M^2). Both are backward
    stable and never re-factorise Lambda.

    **Forgetting.** ``update(..., forgetting=rho)`` first multiplies the whole state by
    ``rho`` for every row, then adds the row:
    Lambda <- rho Lambda, eta <- rho eta, a <- rho a, b <- rho b (a scale of the
    factor by sqrt(rho)). After n rows the posterior is exactly the one obtained
    with every log-likelihood term, and the prior, weighted by
    rho^(age): Lambda_n = rho^n Lambda_0 + sum_i rho^(n-i) phi_i phi_i^T, and
    likewise for eta, a (with 1/2 per row) and 2b + m^T Lambda m (with y_i^2 per row).
    The mean and the noise estimate b/a are unchanged by the decay itself, only their
    confidence shrinks; the effective sample size tends to 1 / (1 - rho), a stays
    positive, and rho = 1 forgets nothing. Because the prior decays too, directions
    that the data stop exciting lose precision over time (the usual RLS "wind-up"):
    keep rho close to 1 (0.99-0.9999) for long streams.

    **Predictive.** Student-t with 2a degrees of freedom, location phi^T m and
    scale^2 = (b/a)(1 + phi^T Lambda^-1 phi) (Bishop 2006, exercise 3.12-3.13);
    with known noise precision beta: N(phi^T m, 1/beta + phi^T S phi),
    S = (beta Lambda)^-1 (eq. 3.58/3.59). phi^T Lambda^-1 phi = ||R^-T phi||^2 by
    one triangular solve.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi = rng.normal(size=(50, 3)); y = Phi @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=50)
    >>> post = NormalGammaPosterior(precision=np.full(3, 1e-2), a=1e-3, b=1e-3)
    >>> for phi, t in zip(Phi, y):
    ...     _ = post.update(phi, t)
    >>> np.round(post.mean, 1)
    array([ 1. , -2. ,  0.5])
    >>> bool(0.05 < 1 / np.sqrt(post.noise_precision) < 0.15)
    True
    >>> d = post.predict(Phi[:2])
    >>> float(d.df[0]) == 2 * post.a
    True
    """

    def __init__(self, precision, mean=None, *, a: float = 1e-6, b: float = 1e-6):
        prec = _finite(_as_float(precision, "precision"), "precision")
        if prec.ndim == 1:
            if prec.size == 0 or np.any(prec <= 0):
                raise ValueError("a diagonal precision must be non-empty and strictly positive")
            chol = np.diag(np.sqrt(prec))
        elif prec.ndim == 2 and prec.shape[0] == prec.shape[1] and prec.shape[0] > 0:
            if not np.allclose(prec, prec.T, rtol=1e-12, atol=1e-12 * np.max(np.abs(prec))):
                raise ValueError("precision must be symmetric")
            try:
                chol = linalg.cholesky(prec, lower=False, check_finite=False)
            except linalg.LinAlgError:
                raise ValueError("precision must be positive definite") from None
        else:
            raise ValueError(
                f"precision must have shape (M,) or (M, M) with M >= 1, got {prec.shape}"
            )
        self._init_from_factor(chol, mean, a, b)

    # -- construction ------------------------------------------------------------------
    def _init_from_factor(self, chol: np.ndarray, mean, a, b, n_seen: int = 0) -> None:
        m_features = chol.shape[0]
        a = _check_positive(a, "a")
        b = _check_positive(b, "b")
        m0 = np.zeros(m_features) if mean is None else _as_float(mean, "mean")
        if m0.shape != (m_features,):
            raise ValueError(f"mean has shape {m0.shape}, expected ({m_features},)")
        _finite(m0, "mean")
        factor = np.zeros((m_features + 1, m_features + 1))
        factor[:m_features, :m_features] = chol
        factor[:m_features, m_features] = chol @ m0  # c = R m, so that R^T c = Lambda m
        factor[m_features, m_features] = math.sqrt(2.0 * b)  # d, with b = d^2 / 2
        self._factor = factor
        self._a = a
        self.n_seen = int(n_seen)
        self.log_evidence = 0.0
        self._mean = m0.copy()

    @classmethod
    def from_cholesky(
        cls, chol, mean, *, a: float, b: float, lower: bool = True, n_seen: int = 0
    ) -> NormalGammaPosterior:
        """Build from an existing factor of the precision, without re-factorising.

        Parameters
        ----------
        chol : array-like of shape (M, M)
            Triangular factor: ``L`` with ``L L^T = Lambda`` (``lower=True``) or ``R``
            with ``R^T R = Lambda`` (``lower=False``). For a fitted VRVM member this is
            the Cholesky factor of A + Phi^T Phi over the active columns.
        mean : array-like of shape (M,)
            Posterior mean m.
        a, b : float
            Gamma parameters of the noise precision (the VRVM's e', f').
        lower : bool, default=True
            Whether ``chol`` is lower triangular.
        n_seen : int, default=0
            Rows already summarised by the posterior (bookkeeping only).

        Examples
        --------
        >>> lam = np.array([[2.0, 0.5], [0.5, 1.0]])
        >>> post = NormalGammaPosterior.from_cholesky(
        ...     np.linalg.cholesky(lam), [1.0, 2.0], a=3.0, b=1.5)
        >>> bool(np.allclose(post.precision, lam)), bool(np.allclose(post.mean, [1, 2]))
        (True, True)
        """
        chol = _finite(_as_float(chol, "chol"), "chol")
        if chol.ndim != 2 or chol.shape[0] != chol.shape[1] or chol.shape[0] == 0:
            raise ValueError(f"chol must be a non-empty square matrix, got shape {chol.shape}")
        upper = np.triu(chol.T if lower else chol)
        diag = np.diag(upper)
        if np.any(diag == 0):
            raise ValueError("chol is singular (zero on the diagonal)")
        upper = upper * np.sign(diag)[:, None]  # positive diagonal; R^T R is unchanged
        post = cls.__new__(cls)
        post._init_from_factor(upper, mean, a, b, n_seen)
        return post

    def copy(self) -> NormalGammaPosterior:
        """An independent copy (updating one never changes the other)."""
        new = type(self).__new__(type(self))
        new._factor = self._factor.copy()
        new._a = self._a
        new.n_seen = self.n_seen
        new.log_evidence = self.log_evidence
        new._mean = None if self._mean is None else self._mean.copy()
        return new

    def export_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON-serialisable scalars and float64 arrays; inverse of :meth:`from_state`."""
        meta = {"a": self._a, "n_seen": self.n_seen, "log_evidence": self.log_evidence}
        return meta, {"factor": self._factor.copy()}

    @classmethod
    def from_state(cls, meta: dict, arrays: dict) -> NormalGammaPosterior:
        """Rebuild a posterior from :meth:`export_state` output."""
        try:
            factor = np.array(arrays["factor"], dtype=np.float64)
            a = _check_positive(float(meta["a"]), "a")
            if factor.ndim != 2 or factor.shape[0] != factor.shape[1] or factor.shape[0] < 2:
                raise ValueError(f"factor must be square with size >= 2, got {factor.shape}")
            _finite(factor, "factor")
            post = cls.__new__(cls)
            post._factor = np.triu(factor)
            post._a = a
            post.n_seen = int(meta["n_seen"])
            post.log_evidence = float(meta["log_evidence"])
            post._mean = None
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"invalid NormalGammaPosterior state: {exc!r}") from None
        return post

    # -- read-only views -----------------------------------------------------------------
    @property
    def n_features(self) -> int:
        """M, the number of weights."""
        return self._factor.shape[0] - 1

    @property
    def a(self) -> float:
        """Shape of the gamma posterior of the noise precision."""
        return self._a

    @property
    def b(self) -> float:
        """Rate of the gamma posterior of the noise precision (b = d^2 / 2)."""
        return 0.5 * float(self._factor[-1, -1]) ** 2

    @property
    def noise_precision(self) -> float:
        """Posterior mean of the noise precision, E[lambda] = a / b."""
        return self._a / self.b

    @property
    def cholesky(self) -> np.ndarray:
        """Upper factor R with R^T R = Lambda (a copy; ``.T`` gives the lower factor)."""
        m = self.n_features
        return self._factor[:m, :m].copy()

    @property
    def precision(self) -> np.ndarray:
        """Lambda = R^T R, the posterior precision in unit-noise units (formed on request)."""
        r = self._factor[:-1, :-1]
        return r.T @ r

    @property
    def eta(self) -> np.ndarray:
        """Natural mean eta = Lambda m = R^T c."""
        return self._factor[:-1, :-1].T @ self._factor[:-1, -1]

    @property
    def mean(self) -> np.ndarray:
        """Posterior mean m = R^-1 c (one triangular solve, cached until the next update)."""
        if self._mean is None:
            self._mean = linalg.solve_triangular(
                self._factor[:-1, :-1], self._factor[:-1, -1], lower=False, check_finite=False
            )
        return self._mean.copy()

    @property
    def log_det_precision(self) -> float:
        """log |Lambda| = 2 sum log diag R."""
        return 2.0 * float(np.sum(np.log(np.abs(np.diag(self._factor)[:-1]))))

    def covariance_unit(self) -> np.ndarray:
        """Lambda^-1, the weight covariance per unit noise variance (O(M^3); for checks).

        Bishop's fixed-noise covariance is ``S_N = covariance_unit() / beta``.
        """
        r_inv = linalg.solve_triangular(
            self._factor[:-1, :-1], np.eye(self.n_features), lower=False, check_finite=False
        )
        return r_inv @ r_inv.T

    # -- updates ---------------------------------------------------------------------------
    def forget(self, forgetting: float) -> NormalGammaPosterior:
        """Discount all evidence so far by ``forgetting`` in (0, 1] (see Notes of the class).

        Lambda, eta, a and b are multiplied by ``forgetting``; the mean is unchanged.
        """
        rho = _check_forgetting(forgetting)
        if rho != 1.0:
            self._factor *= math.sqrt(rho)
            self._a *= rho
        return self

    def update(self, Phi, y, *, forgetting: float = 1.0) -> NormalGammaPosterior:
        """Absorb rows ``(Phi, y)``, oldest first.

        Parameters
        ----------
        Phi : array-like of shape (n, M) or (M,)
            Basis rows (a 1-D array is one row).
        y : array-like of shape (n,) or float
            Targets.
        forgetting : float in (0, 1], default=1.0
            Evidence decay applied before *each* row (class Notes). With ``1.0`` the
            whole batch is absorbed by one QR per chunk of rows and the order of rows
            does not matter; otherwise rows are absorbed one at a time (Givens).

        Returns
        -------
        self
        """
        rho = _check_forgetting(forgetting)
        rows = _as_rows(Phi, self.n_features)
        targets = _as_targets(y, rows.shape[0])
        if rows.shape[0] == 0:
            return self
        augmented = np.column_stack([rows, targets])
        if rho == 1.0 and augmented.shape[0] > 1:
            for start in range(0, augmented.shape[0], _QR_CHUNK):
                self._absorb_batch(augmented[start : start + _QR_CHUNK])
        else:
            for row in augmented:
                if rho != 1.0:
                    self.forget(rho)
                self._absorb_row(row)
        return self

    def _absorb_row(self, row: np.ndarray) -> None:
        # Givens sweep zeroing the appended row [phi, y] against R_a: afterwards
        # R_a'^T R_a' = R_a^T R_a + [phi, y]^T [phi, y] (Bishop eqs. 3.50/3.51, NG form).
        # qr_insert needs the Q of R_a = Q R_a, which is the identity.
        size = self._factor.shape[0]
        before = self._log_normaliser_terms()
        _, r_new = _qr_insert(
            np.eye(size), self._factor, row, size, which="row", check_finite=False
        )
        self._set_factor(r_new[:size], n_new=1)
        self._record_evidence(before, 1)

    def _absorb_batch(self, block: np.ndarray) -> None:
        # Householder QR of the stacked [R_a; Phi, y]:
        # R_a'^T R_a' = R_a^T R_a + [Phi, y]^T [Phi, y].
        size = self._factor.shape[0]
        before = self._log_normaliser_terms()
        stacked = np.vstack([self._factor, block])
        r_new = linalg.qr(stacked, mode="r", overwrite_a=True, check_finite=False)[0]
        self._set_factor(r_new[:size], n_new=block.shape[0])
        self._record_evidence(before, block.shape[0])

    def _set_factor(self, r_new: np.ndarray, n_new: int) -> None:
        sign = np.sign(np.diag(r_new))
        if np.any(sign < 0):  # rotations may flip a row; R^T R does not care, log|.| would
            r_new = r_new * np.where(sign < 0, -1.0, 1.0)[:, None]
        self._factor = r_new
        self._a += 0.5 * n_new  # a_N = a_0 + n/2
        self.n_seen += n_new
        self._mean = None

    def _log_normaliser_terms(self) -> tuple[float, float, np.ndarray]:
        return self._a, self.b, np.abs(np.diag(self._factor)[:-1])

    def _record_evidence(self, before: tuple[float, float, np.ndarray], n_new: int) -> None:
        # log p(Y_new | state) = -n/2 log 2pi + 1/2 log|Lambda|/|Lambda'| + a log b - a' log b'
        #                        + lnGamma(a') - lnGamma(a)   (normal-gamma normalisers)
        a0, b0, diag0 = before
        a1, b1 = self._a, self.b
        diag1 = np.abs(np.diag(self._factor)[:-1])
        self.log_evidence += float(
            -0.5 * n_new * LOG_2PI
            - np.sum(np.log(diag1 / diag0))
            + a0 * math.log(b0)
            - a1 * math.log(b1)
            + math.lgamma(a1)
            - math.lgamma(a0)
        )

    # -- prediction ------------------------------------------------------------------------
    def _loc_quad(self, Phi) -> tuple[np.ndarray, np.ndarray]:
        rows = _as_rows(Phi, self.n_features)
        # phi^T Lambda^-1 phi = ||R^-T phi||^2
        z = linalg.solve_triangular(
            self._factor[:-1, :-1], rows.T, trans="T", lower=False, check_finite=False
        )
        return rows @ self.mean, np.einsum("ij,ij->j", z, z)

    def predict(self, Phi) -> StudentT:
        """Posterior predictive with the noise integrated out (Student-t, 2a dof).

        loc = phi^T m, scale^2 = (b / a)(1 + phi^T Lambda^-1 phi).
        """
        loc, quad = self._loc_quad(Phi)
        scale = np.sqrt((self.b / self._a) * (1.0 + quad))
        return StudentT(loc, scale, df=2.0 * self._a)

    def predict_fixed_noise(self, Phi, beta: float) -> Normal:
        """Predictive given the noise precision ``beta`` (Bishop eqs. 3.58/3.59).

        N(phi^T m, 1/beta + phi^T S phi) with S = (beta Lambda)^-1, i.e. variance
        (1 + phi^T Lambda^-1 phi) / beta.
        """
        beta = _check_positive(beta, "beta")
        loc, quad = self._loc_quad(Phi)
        return Normal(loc, np.sqrt((1.0 + quad) / beta))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_features={self.n_features}, n_seen={self.n_seen}, "
            f"a={self._a:.4g}, b={self.b:.4g})"
        )


# --------------------------------------------------------------------------- estimator
# Declarative parameter table: name -> (predicate, description of the allowed values).
_PARAMETER_CONSTRAINTS = {
    "alpha": (real(0, strict=True), "a number > 0"),
    "beta": (real(0, strict=True, allow_none=True), "None or a number > 0"),
    "learn_noise": (boolean, "True or False"),
    "a0": (real(0, strict=True), "a number > 0"),
    "b0": (real(0, strict=True), "a number > 0"),
    "fit_intercept": (boolean, "True or False"),
    "forgetting": (real(0, strict=True, high=1), "a number in (0, 1]"),
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
    def _validate_params(self) -> None:
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
        arr = _as_float(X, "X")
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
        return _finite(arr, "X")

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
        return _finite(row, "x")[None, :]

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
        self._validate_params()
        for attr in ("posterior_", "feature_names_in_", "n_features_in_"):
            self.__dict__.pop(attr, None)
        X = self._matrix(X, first=True)
        y = _as_targets(y, X.shape[0])
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
        y = _as_targets(y, X.shape[0])
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
            self._validate_params()
            row = self._row_from_dict(x, first=True)
            target = _as_targets(y, 1)
            self._start(row.shape[1])  # raises when evidence maximisation needs a batch
            self.feature_names_in_ = np.array(list(x), dtype=object)
            self.n_features_in_ = row.shape[1]
        else:
            row = self._row_from_dict(x, first=False)
            target = _as_targets(y, 1)
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
            self._validate_params()
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
