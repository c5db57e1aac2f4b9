r"""Mean-field and structured variational inference for the normal-gamma ARD model.

The model (Bishop & Tipping 2000; Drugowitsch 2013, arXiv:1310.5438) is

.. math::

    y \mid w, \lambda \sim N(\Phi w, \lambda^{-1} I), \quad
    w \mid \lambda, \alpha \sim N(0, (\lambda\,\mathrm{diag}\,\alpha)^{-1}), \quad
    \lambda \sim \mathrm{Gam}(e_0, f_0), \quad \alpha_k \sim \mathrm{Gam}(a_0, b_0).

Everything here works on the sufficient statistics G = Phi^T Phi, h = Phi^T y,
y^T y and N of the *active* basis functions; no N x N (or N x M) matrix is ever
needed. Two variational families are supported:

``"structured"``  q(w, lambda) q(alpha) with q(w, lambda) normal-gamma
    (Drugowitsch 2013, eqs. 9-12 with ARD):
    V = (A + G)^-1, mu = V h, e' = e0 + N/2, f' = f0 + (y^T y - mu^T V^-1 mu)/2,
    and b'_k = b0 + (E[lambda] mu_k^2 + V_kk)/2.  Predictive: Student-t, 2e' dof.

``"meanfield"``  q(w) q(lambda) q(alpha) (the paper's): Sigma = E[lambda]^-1 (A + G)^-1,
    mu = (A + G)^-1 h, e' = e0 + (N + K)/2,
    f' = f0 + E_q(w)[||y - Phi w||^2 + w^T A w]/2
       = f0 + (y^T y - 2 mu^T h + mu^T (G + A) mu + tr((G + A) Sigma))/2,
    and b'_k = b0 + E[lambda](mu_k^2 + Sigma_kk)/2.  Predictive: Gaussian.
    (The trace terms are the ones the paper's printed update drops.)

Here A = diag(E[alpha]) and K is the number of active basis functions.

The fast solver (:func:`fit_fast`) is the variational counterpart of Tipping &
Faul's (2003) fast marginal-likelihood algorithm, as derived by Shutin,
Buchgraber, Kulkarni & Poor (IEEE TSP 59(12), 2011): with everything but one
hyperparameter fixed, iterating q(w) and q(alpha_k) to convergence has a closed-
form limit (:func:`single_basis_alpha`), which is infinite -- the basis function
is irrelevant and removed -- unless its "quality" beats its "sparsity",
E[lambda] q_k^2 > s_k. One basis function is added, re-estimated or deleted per
iteration, always the one whose update raises the objective most, so pruned
functions never have to crawl to infinity and unused candidates never enter the
matrix factorisations. Its fixed points are fixed points of plain coordinate
ascent (:func:`fit_coordinate`), which is kept as the reference.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg
from scipy.special import gammaln, psi

from vrvm.engine._blas import single_threaded_blas
from vrvm.engine._raw_blas import symmetric_rank_one
from vrvm.engine.kernels import SufficientStatistics

__all__ = [
    "FAMILIES",
    "Priors",
    "VBResult",
    "elbo",
    "fit_coordinate",
    "fit_fast",
    "log_evidence",
    "optimize_q_w_lambda",
    "single_basis_alpha",
    "weight_posterior",
]

logger = logging.getLogger(__name__)

FAMILIES = ("structured", "meanfield")
LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True)
class Priors:
    """Gamma hyper-prior parameters: alpha_k ~ Gam(a0, b0), lambda ~ Gam(e0, f0).

    ``a0 = b0 = 0`` is Tipping's (2001) uniform prior over log alpha; it makes
    irrelevant weights exactly prunable. ``e0, f0`` must be positive.
    """

    a0: float = 0.0
    b0: float = 0.0
    e0: float = 1e-6
    f0: float = 1e-6

    @property
    def a_post(self) -> float:
        """Shape a' = a0 + 1/2 of every q(alpha_k)."""
        return self.a0 + 0.5


@dataclass
class WeightPosterior:
    """q(w) in unit-noise form: mean mu = V h and V = (A + G)^-1 via its Cholesky factor."""

    chol: np.ndarray  # lower-triangular L with L L^T = A + G
    mean: np.ndarray
    diag_v: np.ndarray
    logdet_v: float
    jitter: float = 0.0


@dataclass
class VBResult:
    """Outcome of a variational fit on sufficient statistics.

    ``alpha`` holds E[alpha_k] of the active columns; q(alpha_k) = Gam(a', a'/alpha_k).
    ``e``, ``f`` are the parameters of q(lambda); ``beta_w`` the E[lambda] with which
    the mean-field q(w) covariance Sigma = V / beta_w was formed.

    ``relevance_ratio`` (:func:`fit_fast` only, else None) holds, for every candidate
    column k, E[lambda] q_k^2 / s_k at the final posterior, with s_k and q_k the
    sparsity and quality of k in the model without k (Tipping & Faul 2003, section 3):
    the evidence would add an inactive column whose ratio exceeds 1 (for a0 = b0 = 0;
    :func:`single_basis_alpha`), so the ratio says how close a candidate is to being
    added. It is 0 for an inactive candidate in the span of the active columns
    (s_k <= span_tol G_kk), which the solver never adds.
    """

    active: np.ndarray
    alpha: np.ndarray
    post: WeightPosterior
    e: float
    f: float
    beta_w: float
    family: str
    elbo: list[float] = field(default_factory=list)
    n_active_trace: list[int] = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    stop_reason: str = ""
    relevance_ratio: np.ndarray | None = None

    @property
    def noise_precision(self) -> float:
        """E[lambda] = e'/f'."""
        return self.e / self.f


def _cholesky(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor, adding jitter to the diagonal only if needed."""
    scale = float(np.mean(np.diag(matrix))) or 1.0
    jitter = 0.0
    for attempt in range(8):
        try:
            chol = linalg.cholesky(
                matrix + jitter * np.eye(matrix.shape[0]), lower=True, check_finite=False
            )
            if np.all(np.isfinite(chol)):
                return chol, jitter
        except linalg.LinAlgError:
            pass
        jitter = scale * 10.0 ** (-12 + 1.5 * attempt)
    raise np.linalg.LinAlgError("A + Phi^T Phi is not positive definite even with jitter")


def weight_posterior(G: np.ndarray, h: np.ndarray, alpha: np.ndarray) -> WeightPosterior:
    """mu = (A + G)^-1 h and diag/log-det of V = (A + G)^-1 by Cholesky solves.

    V itself is never formed: only its diagonal, from the rows of L^-1.
    """
    chol, jitter = _cholesky(G + np.diag(alpha))
    mean = linalg.cho_solve((chol, True), h, check_finite=False)
    linv = linalg.solve_triangular(chol, np.eye(chol.shape[0]), lower=True, check_finite=False)
    diag_v = np.einsum("ij,ij->j", linv, linv)
    logdet_v = -2.0 * float(np.sum(np.log(np.diag(chol))))
    return WeightPosterior(chol, mean, diag_v, logdet_v, jitter)


def _residual_term(h: np.ndarray, yy: float, mean: np.ndarray) -> float:
    """y^T y - mu^T h = ||y - Phi mu||^2 + mu^T A mu at mu = (A + G)^-1 h (>= 0)."""
    return max(yy - float(mean @ h), 0.0)


def q_lambda(
    stats: SufficientStatistics,
    family: str,
    priors: Priors,
    post: WeightPosterior,
    h_active: np.ndarray,
    beta_w: float,
) -> tuple[float, float]:
    """Optimal q(lambda) parameters (e', f') given the current q(w) (and q(alpha)).

    structured: e' = e0 + N/2, f' = f0 + (y^T y - mu^T h)/2   (Drugowitsch eq. 11)
    meanfield:  e' = e0 + (N + K)/2,
                f' = f0 + (y^T y - mu^T h + tr((G + A) Sigma))/2 with tr(...) = K / beta_w,
                since Sigma = (beta_w (A + G))^-1.
    """
    resid = _residual_term(h_active, stats.yy, post.mean)
    if family == "structured":
        return priors.e0 + stats.n / 2.0, priors.f0 + resid / 2.0
    k = post.mean.size
    return priors.e0 + (stats.n + k) / 2.0, priors.f0 + (resid + k / beta_w) / 2.0


def expected_lambda_w2(post: WeightPosterior, beta: float, beta_w: float, family: str):
    """E[lambda w_k^2] for each active k.

    structured: E[lambda] mu_k^2 + V_kk; meanfield: E[lambda] (mu_k^2 + V_kk / beta_w).
    """
    if family == "structured":
        return beta * post.mean**2 + post.diag_v
    return beta * (post.mean**2 + post.diag_v / beta_w)


def elbo(
    stats: SufficientStatistics,
    family: str,
    priors: Priors,
    alpha: np.ndarray,
    post: WeightPosterior,
    e: float,
    f: float,
    beta_w: float,
) -> float:
    """Evidence lower bound of the active model, all terms included.

    ``stats`` are those of the active columns, ``alpha`` = E[alpha_k] (q(alpha_k) =
    Gam(a', a'/alpha_k)), ``post`` the q(w) computed with A = diag(alpha), (e, f) the
    q(lambda) parameters and ``beta_w`` (mean-field only) the E[lambda] that scales
    Sigma = V / beta_w. When a0 = 0 or b0 = 0 the (infinite) normaliser
    a0 log b0 - log Gamma(a0) of each improper prior term is left out, so the bound is
    defined up to a constant per active basis function; pruned functions are not part
    of the model and contribute nothing.
    """
    n, k = stats.n, alpha.size
    mu, dv = post.mean, post.diag_v
    e_lam, eln_lam = e / f, psi(e) - np.log(f)
    a_post = priors.a_post
    b_post = a_post / alpha
    eln_alpha = psi(a_post) - np.log(b_post)
    # ||y - Phi mu||^2 = y^T y - mu^T h - mu^T A mu, and tr(G V) = K - sum_k alpha_k V_kk
    quad = stats.yy - mu @ stats.h - float(np.sum(alpha * mu**2))
    tr_gv = k - float(np.sum(alpha * dv))
    if family == "structured":
        e_loglik = 0.5 * n * (eln_lam - LOG_2PI) - 0.5 * (e_lam * quad + tr_gv)
        e_prior_w = (
            0.5 * k * (eln_lam - LOG_2PI)
            + 0.5 * np.sum(eln_alpha)
            - 0.5 * np.sum(alpha * (e_lam * mu**2 + dv))
        )
        entropy_w = 0.5 * k * (1 + LOG_2PI) + 0.5 * post.logdet_v - 0.5 * k * eln_lam
    else:
        e_loglik = 0.5 * n * (eln_lam - LOG_2PI) - 0.5 * e_lam * (quad + tr_gv / beta_w)
        e_prior_w = (
            0.5 * k * (eln_lam - LOG_2PI)
            + 0.5 * np.sum(eln_alpha)
            - 0.5 * e_lam * np.sum(alpha * (mu**2 + dv / beta_w))
        )
        entropy_w = 0.5 * k * (1 + LOG_2PI) + 0.5 * (post.logdet_v - k * np.log(beta_w))
    e0, f0 = priors.e0, priors.f0
    e_prior_lam = e0 * np.log(f0) - gammaln(e0) + (e0 - 1) * eln_lam - f0 * e_lam
    entropy_lam = e - np.log(f) + gammaln(e) + (1 - e) * psi(e)
    norm = priors.a0 * np.log(priors.b0) - gammaln(priors.a0) if priors.a0 * priors.b0 > 0 else 0.0
    e_prior_alpha = np.sum(norm + (priors.a0 - 1) * eln_alpha - priors.b0 * alpha)
    entropy_alpha = np.sum(a_post - np.log(b_post) + gammaln(a_post) + (1 - a_post) * psi(a_post))
    return float(
        e_loglik + e_prior_w + e_prior_lam + e_prior_alpha + entropy_w + entropy_lam + entropy_alpha
    )


def log_evidence(stats: SufficientStatistics, alpha: np.ndarray, priors: Priors) -> float:
    """log p(y | alpha) with w and lambda integrated out (normal-gamma evidence).

    log p(y|alpha) = -N/2 log 2pi + 1/2 sum log alpha + 1/2 log|V|
                     + e0 log f0 - log Gamma(e0) - e' log f' + log Gamma(e'),
    with V = (A + G)^-1, e' = e0 + N/2, f' = f0 + (y^T y - mu^T h)/2 (Drugowitsch 2013,
    eq. 13 with A in place of alpha I). It equals the structured ELBO with q(alpha)
    collapsed to a point mass, and is what width selection compares.
    """
    post = weight_posterior(stats.G, stats.h, alpha)
    e = priors.e0 + stats.n / 2.0
    f = priors.f0 + _residual_term(stats.h, stats.yy, post.mean) / 2.0
    return float(
        -0.5 * stats.n * LOG_2PI
        + 0.5 * np.sum(np.log(alpha))
        + 0.5 * post.logdet_v
        + priors.e0 * np.log(priors.f0)
        - gammaln(priors.e0)
        - e * np.log(f)
        + gammaln(e)
    )


def optimize_q_w_lambda(
    stats: SufficientStatistics,
    alpha: np.ndarray,
    family: str,
    priors: Priors,
    *,
    beta_init: float | None = None,
    tol: float = 1e-12,
    max_iter: int = 1000,
) -> VBResult:
    """Optimal q(w, lambda) (structured) or q(w) q(lambda) (mean-field) for a fixed q(alpha).

    The structured optimum is closed form; the mean-field one alternates its two
    coordinate updates until E[lambda] stops changing.
    """
    post = weight_posterior(stats.G, stats.h, alpha)
    beta = beta_init or 1.0
    e = f = 1.0
    for _ in range(1 if family == "structured" else max_iter):
        e, f = q_lambda(stats, family, priors, post, stats.h, beta)
        new_beta = e / f
        done = abs(new_beta - beta) <= tol * new_beta
        if family == "structured" or done:
            break
        beta = new_beta
    beta_w = beta if family == "meanfield" else e / f
    res = VBResult(np.arange(alpha.size), alpha.copy(), post, e, f, beta_w, family)
    res.elbo.append(elbo(stats, family, priors, alpha, post, e, f, beta_w))
    return res


def single_basis_alpha(s, beta_q2, a0: float = 0.0, b0: float = 0.0):
    """Limit of iterating q(w) and q(alpha_k) for one basis function (Shutin et al. 2011).

    With s = s_k (sparsity) and q = q_k (quality) computed *without* function k in
    unit-noise form, E[lambda w_k^2] = (beta q^2 + alpha + s) / (alpha + s)^2 and the
    update alpha <- (2 a0 + 1) / (2 b0 + E[lambda w_k^2]) has the fixed points solving

        2 b0 alpha (alpha + s)^2 + alpha (beta q^2 + alpha + s) = (2 a0 + 1)(alpha + s)^2.

    For b0 = 0 the smallest positive root is 2 c s^2 / (B + sqrt(B^2 - 8 a0 c s^2)) with
    c = 2 a0 + 1, B = beta q^2 - s (1 + 4 a0); for a0 = b0 = 0 this is Tipping & Faul's
    s^2 / (beta q^2 - s). No positive root means alpha -> infinity: the function is
    irrelevant (returned as ``inf``). For b0 > 0 the cubic is solved numerically.

    Examples
    --------
    >>> single_basis_alpha(np.array([2.0, 2.0]), np.array([6.0, 1.0]))
    array([ 1., inf])
    """
    s = np.asarray(s, dtype=np.float64)
    beta_q2 = np.asarray(beta_q2, dtype=np.float64)
    c = 2 * a0 + 1
    if b0 == 0:
        big_b = beta_q2 - s * (1 + 4 * a0)
        disc = big_b**2 - 8 * a0 * c * s**2
        ok = (big_b > 0) & (disc >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            alpha = 2 * c * s**2 / (big_b + np.sqrt(np.where(ok, disc, 0.0)))
        return np.where(ok, alpha, np.inf)
    d = 2 * b0
    out = np.empty(np.broadcast(s, beta_q2).shape)
    for i, (si, bq) in enumerate(np.broadcast(s, beta_q2)):
        coeffs = [d, 2 * d * si - 2 * a0, d * si**2 + bq - si - 4 * a0 * si, -c * si**2]
        roots = np.roots(coeffs)
        real = roots[(np.abs(roots.imag) < 1e-9 * (1 + np.abs(roots.real))) & (roots.real > 0)]
        out.flat[i] = real.real.min() if real.size else np.inf
    return out


def _ell(alpha, s, beta_q2):
    """Part of the log evidence that depends on alpha_k (Tipping & Faul 2003, eq. 19).

    l(alpha) = 1/2 [log alpha - log(alpha + s) + beta q^2 / (alpha + s)]; l(inf) = 0.
    """
    # alpha + s can reach the floor s >= 1e-300 of a candidate in the span of the active
    # ones: the quotient overflows to +inf, a gain the caller's span check then refuses
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        val = 0.5 * (np.log(alpha) - np.log(alpha + s) + beta_q2 / (alpha + s))
    return np.where(np.isinf(alpha), 0.0, val)


class _RankOneState:
    """Active-set posterior maintained by rank-one updates (Tipping & Faul 2003, appendix).

    Works in unit-noise form, V = (A + G_aa)^-1 and mu = V h_a, so nothing here depends
    on lambda: a change of E[lambda] costs nothing. Alongside V it keeps, for *every*
    candidate m, S_m = G_mm - g_m^T V g_m and Q_m = h_m - g_m^T mu (g_m = G[a, m]), and
    log|V|. Each add / re-estimate / delete costs O(K M); :meth:`refresh` recomputes
    everything from a Cholesky factorisation to remove round-off drift.

    V lives in the leading K x K block of a buffer with room to grow, and the rows
    G[a, :] in the leading K rows of another: an add writes one row and column, a
    delete closes the gap in place, and every rank-one change of V is one in-place BLAS
    ``dger`` on the block (:func:`vrvm.engine._raw_blas.symmetric_rank_one`), so no
    step allocates a K x K temporary or a new V.
    """

    def __init__(self, stats: SufficientStatistics, active: np.ndarray, alpha: np.ndarray):
        self.stats = stats
        self.diag_g = np.diag(stats.G).copy()
        self.active = np.asarray(active, dtype=np.intp)
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self._v = np.empty((0, 0))
        self._rows = np.empty((0, stats.h.size))
        self.refresh()

    @property
    def g_active(self) -> np.ndarray:
        """Rows G[a, :] of the active columns, kept contiguous (no gather per step)."""
        return self._rows[: self.active.size]

    @property
    def V(self) -> np.ndarray:
        """V = (A + G_aa)^-1, a view of the buffer's leading block."""
        k = self.active.size
        return self._v[:k, :k]

    def _room(self, k: int) -> None:
        """Buffers for at least ``k`` active functions (doubling: amortised O(1) copies)."""
        if self._v.shape[0] >= k:
            return
        size = max(2 * k, 16)
        old = self._v.shape[0]
        v = np.empty((size, size))
        v[:old, :old] = self._v
        rows = np.empty((size, self.stats.h.size))
        rows[:old] = self._rows[:old]
        self._v, self._rows = v, rows

    def refresh(self) -> None:
        k = self.active.size
        self._room(k)
        self._rows[:k] = self.stats.G[self.active]
        g_a = self.g_active
        chol, _ = _cholesky(g_a[:, self.active] + np.diag(self.alpha))
        # L^-1 by LAPACK's triangular inverse and V = L^-T L^-1 by dlauum: no inverse of
        # A + G_aa itself, whose conditioning is squared in it
        linv, info = linalg.lapack.dtrtri(chol, lower=1)
        if info != 0:  # pragma: no cover - chol has a positive diagonal
            raise np.linalg.LinAlgError(f"dtrtri failed ({info})")
        linv = np.tril(linv)
        v_lower, info = linalg.lapack.dlauum(linv, lower=1)
        if info != 0:  # pragma: no cover
            raise np.linalg.LinAlgError(f"dlauum failed ({info})")
        v = np.tril(v_lower)
        self._v[:k, :k] = v + np.tril(v, -1).T
        self.mu = linalg.cho_solve((chol, True), self.stats.h[self.active], check_finite=False)
        self.logdet_v = -2.0 * float(np.sum(np.log(np.diag(chol))))
        # b = L^-1 G[a, :] by a triangular product (half a general product's work)
        b = linalg.blas.dtrmm(1.0, linv, g_a, lower=1)
        self.S = self.diag_g - np.einsum("ij,ij->j", b, b)
        self.Q = self.stats.h - self.mu @ g_a

    def posterior(self) -> WeightPosterior:
        return WeightPosterior(None, self.mu, np.diag(self.V).copy(), self.logdet_v)

    def reestimate(self, pos: int, new_alpha: float, s_i: float) -> None:
        # A' = A + delta e_i e_i^T:  V' = V - kappa v_i v_i^T with kappa = 1/(V_ii + 1/delta),
        # written as delta (alpha + s_i)/(new_alpha + s_i) using V_ii = 1/(alpha + s_i), which
        # stays accurate when alpha is huge; likewise log|V'| - log|V| = log((alpha+s)/(new+s)).
        old_alpha = self.alpha[pos]
        ratio = (old_alpha + s_i) / (new_alpha + s_i)
        kappa = (new_alpha - old_alpha) * ratio
        v_i = self.V[:, pos].copy()
        mu_i = self.mu[pos]
        proj = v_i @ self.g_active  # v_i^T g_m for every candidate m
        self.logdet_v += np.log(ratio)
        symmetric_rank_one(-kappa, v_i, self._v, self.active.size)
        self.mu -= kappa * mu_i * v_i
        self.S += kappa * proj**2
        self.Q += kappa * mu_i * proj
        self.alpha[pos] = new_alpha

    def add(self, j: int, new_alpha: float) -> None:
        k = self.active.size
        g_j = self.stats.G[self.active, j]
        vg = self.V @ g_j
        # S_j is a Schur complement (>= 0); round-off on a nearly collinear candidate can
        # leave it slightly negative: the floor sparsity_quality chose alpha_j with
        s_j = max(self.S[j], 1e-12 * self.diag_g[j] + 1e-300)
        sigma_jj = 1.0 / (new_alpha + s_j)
        mu_j = sigma_jj * self.Q[j]
        e = self.stats.G[j] - vg @ self.g_active  # phi_j^T (I - Phi V Phi^T) phi_m
        self._room(k + 1)
        self._rows[k] = self.stats.G[j]
        # V' = [[V + s vg vg^T, -s vg], [-s vg^T, s]] with s = Sigma_jj
        symmetric_rank_one(sigma_jj, vg, self._v, k)
        self._v[:k, k] = -sigma_jj * vg
        self._v[k, :k] = -sigma_jj * vg
        self._v[k, k] = sigma_jj
        self.mu = np.append(self.mu - mu_j * vg, mu_j)
        self.logdet_v += np.log(sigma_jj)
        self.S -= sigma_jj * e**2
        self.Q -= mu_j * e
        self.active = np.append(self.active, j)
        self.alpha = np.append(self.alpha, new_alpha)

    def delete(self, pos: int) -> None:
        if not self.V[pos, pos] > 0:
            # V is positive definite; a non-positive diagonal is round-off drift of the
            # rank-one updates (nearly collinear columns): refactorise before deleting
            self.refresh()
        k = self.active.size
        v_j = self.V[:, pos].copy()
        v_jj, mu_j = v_j[pos], self.mu[pos]
        proj = v_j @ self.g_active
        self.S += proj**2 / v_jj
        self.Q += mu_j * proj / v_jj
        self.logdet_v -= np.log(v_jj)
        symmetric_rank_one(-1.0 / v_jj, v_j, self._v, k)
        mu = self.mu - (mu_j / v_jj) * v_j
        # close the gap in place, keeping the functions' order (moving the last one
        # into it instead changes the rounding of every later step)
        last = k - 1
        if pos != last:
            self._v[pos:last, :k] = self._v[pos + 1 : k, :k]
            self._v[:last, pos:last] = self._v[:last, pos + 1 : k].copy()
            self._rows[pos:last] = self._rows[pos + 1 : k]
        self.mu = np.delete(mu, pos)
        self.active = np.delete(self.active, pos)
        self.alpha = np.delete(self.alpha, pos)

    def sparsity_quality(self) -> tuple[np.ndarray, np.ndarray]:
        """s_k, q_k without function k: s = alpha S / (alpha - S), q = alpha Q / (alpha - S)."""
        # S_m is a Schur complement (>= 0, and < alpha_m for active m); rank-one updates
        # can leave a nearly collinear candidate slightly negative, so clip to the range.
        big_s = np.maximum(self.S, 1e-12 * self.diag_g + 1e-300)
        s, q = big_s.copy(), self.Q.copy()
        a, alpha = self.active, self.alpha
        s_a = np.minimum(big_s[a], alpha * (1 - 1e-12))
        denom = alpha - s_a
        s[a] = alpha * s_a / denom
        q[a] = alpha * self.Q[a] / denom
        # For a well-determined weight (s_k >= alpha_k, i.e. S_k >= alpha_k / 2) alpha - S
        # cancels: use the single-basis identities V_kk = 1 / (alpha_k + s_k) and
        # mu_k = q_k V_kk instead (w_k given the others has precision alpha_k + s_k and
        # mean q_k / (alpha_k + s_k); Tipping & Faul 2003), which lose at most one bit.
        v_kk = np.diag(self.V)
        well = (s_a >= 0.5 * alpha) & (v_kk > 0)
        s[a[well]] = np.maximum(1.0 / v_kk[well] - alpha[well], 1e-300)
        q[a[well]] = self.mu[well] / v_kk[well]
        return s, q


def _lambda_and_bound(state, family, priors, beta_w):
    """q(lambda) and the ELBO of the rank-one state's current posterior."""
    post = state.posterior()
    h_a = state.stats.h[state.active]
    sub = SufficientStatistics(None, h_a, state.stats.yy, state.stats.n)
    e, f = q_lambda(sub, family, priors, post, h_a, beta_w)
    return e, f, elbo(sub, family, priors, state.alpha, post, e, f, beta_w)


@single_threaded_blas()
def fit_fast(
    stats: SufficientStatistics,
    family: str,
    priors: Priors,
    *,
    tol: float = 1e-6,
    max_iter: int = 2000,
    alpha_max: float = 1e12,
    keep: tuple[int, ...] = (0,),
    refresh_every: int = 200,
    span_tol: float = 1e-6,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> VBResult:
    """Fast variational sparse Bayesian learning on the full candidate set.

    Starts from the columns in ``keep`` (the bias), or from ``start`` = (columns,
    alpha), an active set and its precisions that contain ``keep`` (a warm start: a
    two-stage fit's second stage from the first stage's functions), and, per iteration: updates
    q(lambda) for the current q(w), records the ELBO, computes every candidate's
    s_k and q_k, and applies the single add / re-estimate / delete step with the
    largest gain in the log evidence, setting alpha_k to the exact limit
    :func:`single_basis_alpha`. Each step is a rank-one update (O(K M)); the
    factorisation is recomputed by Cholesky every ``refresh_every`` steps, whenever
    the updated state gives an impossible q(lambda) (f' <= 0) or a non-finite bound,
    and at the end. Stops when no step can change the objective by more than
    ``tol * max(|ELBO|, N)`` (the bound of standardised data is of order N, but can
    pass close to zero, where a purely relative test would never stop) and E[lambda]
    has settled, confirmed on a fresh factorisation (round-off in the updated s_k, q_k
    can hide a gain and stop the solver early).

    A candidate whose part outside the span of the active columns is below
    ``span_tol`` of its norm (s_k < span_tol * G_kk) is treated as redundant and never
    added (an active column that later additions make redundant stays unless the
    evidence deletes it: forcing it out can cycle). On such columns the rank-one
    formulas lose about log10(G_kk / s_k) digits, and with wide kernels the evidence
    keeps adding nearly collinear columns with alpha_k -> 0: thousands of slow steps on
    an ever worse conditioned state.

    The steps are small products (K x M at most), so BLAS runs on one thread
    here (:func:`vrvm.engine.single_threaded_blas`): waking a second thread for each
    of them cost three times the work itself.
    """
    n_cols = stats.h.size
    keep = np.asarray(keep, dtype=np.intp)
    is_kept = np.zeros(n_cols, bool)
    is_kept[keep] = True
    beta = 10.0 * stats.n / max(stats.yy, 1e-300)  # noise variance guess: 10 % of E[y^2]
    alpha0 = single_basis_alpha(
        np.diag(stats.G)[keep], beta * stats.h[keep] ** 2, priors.a0, priors.b0
    )
    alpha0 = np.where(np.isfinite(alpha0), np.minimum(alpha0, alpha_max), 1.0)
    if start is None:
        state = _RankOneState(stats, keep.copy(), alpha0)
    else:
        columns, alpha = (np.asarray(v) for v in start)
        if not np.isin(keep, columns).all() or columns.shape != alpha.shape:
            raise ValueError("start must be (columns, alpha) of one shape, holding keep")
        if not (np.all(np.isfinite(alpha)) and np.all(alpha > 0)):
            raise ValueError("start's alpha must be finite and positive")
        state = _RankOneState(stats, columns.astype(np.intp), np.minimum(alpha, alpha_max))
    diag_g = state.diag_g
    res = VBResult(state.active, state.alpha, None, 1.0, 1.0, beta, family)
    beta_w = beta
    fresh = True  # no step since the last factorisation
    for it in range(1, max_iter + 1):
        if it % refresh_every == 0:
            state.refresh()
            fresh = True
        e, f, value = _lambda_and_bound(state, family, priors, beta_w)
        if not (f > 0 and np.isfinite(value)):
            # f' = f0 + (y^T y - mu^T V^-1 mu)/2 > 0 always: the rank-one state has
            # drifted (round-off on nearly collinear columns); refactorise
            state.refresh()
            e, f, value = _lambda_and_bound(state, family, priors, beta_w)
        res.elbo.append(value)
        res.n_active_trace.append(state.active.size)
        res.e, res.f, res.beta_w, res.n_iter = e, f, beta_w, it
        beta = e / f
        s, q = state.sparsity_quality()
        a = state.active
        bq2 = beta * q**2
        new_alpha = single_basis_alpha(s, bq2, priors.a0, priors.b0)
        new_alpha[new_alpha > alpha_max] = np.inf
        cur = np.full(n_cols, np.inf)
        cur[a] = state.alpha
        # a candidate (numerically) in the span of the active ones is never added
        new_alpha[s <= span_tol * diag_g] = np.inf
        new_alpha[is_kept] = np.where(
            np.isinf(new_alpha[is_kept]), np.minimum(cur[is_kept], alpha_max), new_alpha[is_kept]
        )
        # gain = l(new) - l(current), with l(inf) = 0 (inactive and pruned functions)
        gain = np.zeros(n_cols)
        finite = np.flatnonzero(np.isfinite(new_alpha))
        gain[finite] = _ell(new_alpha[finite], s[finite], bq2[finite])
        gain[a] -= _ell(state.alpha, s[a], bq2[a])
        k = int(np.argmax(gain))
        small_gain = gain[k] <= tol * max(abs(res.elbo[-1]), stats.n)
        beta_settled = abs(beta - beta_w) <= tol * beta
        beta_w = beta
        if small_gain and beta_settled:
            if fresh:
                res.converged, res.stop_reason = True, "converged: no update changes the bound"
                break
            # s_k and q_k come from rank-one updates whose round-off can hide a gain:
            # confirm convergence on a fresh factorisation before stopping
            state.refresh()
            fresh = True
            continue
        if small_gain:
            continue
        fresh = False
        if np.isinf(cur[k]):
            state.add(k, new_alpha[k])
        elif np.isinf(new_alpha[k]):
            state.delete(int(np.flatnonzero(state.active == k)[0]))
        else:
            state.reestimate(int(np.flatnonzero(state.active == k)[0]), new_alpha[k], s[k])
    else:
        res.stop_reason = f"max_iter={max_iter} reached before convergence"
    # final state: sorted columns, factorised afresh by Cholesky
    order = np.argsort(state.active)
    res.active, res.alpha = state.active[order], state.alpha[order]
    sub = stats.subset(res.active)
    res.post = weight_posterior(sub.G, sub.h, res.alpha)
    res.e, res.f = q_lambda(sub, family, priors, res.post, sub.h, res.beta_w)
    res.relevance_ratio = _relevance_ratio(state, fresh, res.e / res.f, span_tol)
    return res


def _relevance_ratio(state: _RankOneState, fresh: bool, beta: float, span_tol: float):
    """E[lambda] q_k^2 / s_k of every candidate on a fresh factorisation (see VBResult).

    Tipping & Faul (2003): with s_k = alpha_k S_k / (alpha_k - S_k) and
    q_k = alpha_k Q_k / (alpha_k - S_k) (s_k = S_k, q_k = Q_k for an inactive k), the
    part of the log evidence that depends on alpha_k,
    l(alpha) = 1/2 [log alpha - log(alpha + s_k) + beta q_k^2 / (alpha + s_k)]
    (:func:`_ell`), has its maximum at alpha_k = s_k^2 / (beta q_k^2 - s_k) when
    beta q_k^2 > s_k and at alpha_k = infinity (k left out) otherwise. Ratios above 1
    mark the candidates the evidence of these data wants; ratios just below 1 those
    that more data is likely to make relevant (S_k and Q_k are sums over rows, so
    q_k^2 / s_k grows about linearly with them).
    """
    if not fresh:  # max_iter stopped the solver after rank-one updates
        state.refresh()
    s, q = state.sparsity_quality()
    ratio = beta * q**2 / s
    inactive = np.ones(ratio.size, bool)
    inactive[state.active] = False
    ratio[inactive & (s <= span_tol * state.diag_g)] = 0.0
    return ratio


def fit_coordinate(
    stats: SufficientStatistics,
    family: str,
    priors: Priors,
    *,
    tol: float = 1e-6,
    max_iter: int = 1000,
    alpha_max: float = 1e12,
    keep: tuple[int, ...] = (0,),
    alpha_init: float = 1.0,
) -> VBResult:
    """Plain coordinate ascent over q(w, lambda) (or q(w), q(lambda)) and q(alpha).

    The reference solver: every iteration updates all factors in turn; basis
    functions whose E[alpha_k] exceeds ``alpha_max`` are pruned (never those in
    ``keep``). Converges slowly (irrelevant alpha_k grow only linearly).
    """
    active = np.arange(stats.h.size)
    alpha = np.full(active.size, float(alpha_init))
    beta = 10.0 * stats.n / max(stats.yy, 1e-300)
    res = VBResult(active, alpha, None, 1.0, 1.0, beta, family)
    for it in range(1, max_iter + 1):
        sub = stats.subset(active)
        post = weight_posterior(sub.G, sub.h, alpha)
        e, f = q_lambda(sub, family, priors, post, sub.h, beta)
        beta_w = beta if family == "meanfield" else e / f
        res.elbo.append(elbo(sub, family, priors, alpha, post, e, f, beta_w))
        res.n_active_trace.append(active.size)
        res.active, res.alpha, res.post, res.e, res.f, res.beta_w = (
            active,
            alpha,
            post,
            e,
            f,
            beta_w,
        )
        res.n_iter = it
        beta = e / f
        # q(alpha_k): b'_k = b0 + E[lambda w_k^2] / 2, E[alpha_k] = a'/b'_k
        alpha = priors.a_post / (priors.b0 + 0.5 * expected_lambda_w2(post, beta, beta_w, family))
        prune = alpha > alpha_max
        prune[np.isin(active, keep)] = False
        if prune.any():
            active, alpha = active[~prune], alpha[~prune]
        if len(res.elbo) > 1 and not prune.any():
            prev, cur = res.elbo[-2], res.elbo[-1]
            if abs(cur - prev) <= tol * max(abs(cur), 1.0):
                res.converged, res.stop_reason = True, "converged: relative ELBO change < tol"
                break
    else:
        res.stop_reason = f"max_iter={max_iter} reached before convergence"
    return res
