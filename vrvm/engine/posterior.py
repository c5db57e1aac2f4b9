r"""The normal-gamma posterior of Bayesian linear regression over a fixed basis.

:class:`NormalGammaPosterior` is the conjugate posterior of the linear-Gaussian model

.. math::

    y = \phi^T w + \varepsilon,\quad \varepsilon \sim N(0, \lambda^{-1}),\quad
    w \mid \lambda \sim N(m_0, (\lambda \Lambda_0)^{-1}),\quad
    \lambda \sim \mathrm{Gam}(a_0, b_0),

kept as one square-root information factor and updated in O(M^2) per row. It is the
building block for updating a fitted model online over its basis (one VRVM ensemble
member over its relevance vectors, whose structured posterior q(w, lambda) is exactly of
this form) and the state of :class:`vrvm.engine.blr.BayesianLinearRegression`.

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

import math

import numpy as np
from scipy import linalg

from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.validation import (
    FORGETTING,
    as_float_array,
    as_rows,
    as_targets,
    check_finite,
    check_value,
    positive_number,
)

__all__ = ["NormalGammaPosterior"]

LOG_2PI = math.log(2.0 * math.pi)

#: Rows per Householder QR when absorbing a large batch (bounds memory to
#: about ``_QR_CHUNK * (M + 1)`` floats whatever the batch size).
_QR_CHUNK = 4096

# scipy.linalg.qr_insert without scipy's Python-level batching wrapper, which costs about
# as much as the O(M^2) Givens sweep itself for M ~ 100; inputs are validated float64.
_qr_insert = getattr(linalg.qr_insert, "__wrapped__", linalg.qr_insert)


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
        prec = check_finite(as_float_array(precision, "precision"), "precision")
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
        a = positive_number(a, "a")
        b = positive_number(b, "b")
        m0 = np.zeros(m_features) if mean is None else as_float_array(mean, "mean")
        if m0.shape != (m_features,):
            raise ValueError(f"mean has shape {m0.shape}, expected ({m_features},)")
        check_finite(m0, "mean")
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
        chol = check_finite(as_float_array(chol, "chol"), "chol")
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
            a = positive_number(float(meta["a"]), "a")
            if factor.ndim != 2 or factor.shape[0] != factor.shape[1] or factor.shape[0] < 2:
                raise ValueError(f"factor must be square with size >= 2, got {factor.shape}")
            check_finite(factor, "factor")
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
        rho = float(check_value("forgetting", forgetting, FORGETTING))
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
        rho = float(check_value("forgetting", forgetting, FORGETTING))
        rows = as_rows(Phi, self.n_features)
        targets = as_targets(y, rows.shape[0])
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
        rows = as_rows(Phi, self.n_features)
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
        beta = positive_number(beta, "beta")
        loc, quad = self._loc_quad(Phi)
        return Normal(loc, np.sqrt((1.0 + quad) / beta))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_features={self.n_features}, n_seen={self.n_seen}, "
            f"a={self._a:.4g}, b={self.b:.4g})"
        )
