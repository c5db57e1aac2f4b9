"""The fitted member's predictive model: everything prediction and online updates need.

:class:`Predictor` holds, in the unit-scaled form the solver works in, the compact basis
(only the centres the active columns use), the Cholesky factor of the posterior
precision A + G, the posterior mean and q(lambda). A block of queries costs one design
block and one triangular matrix product.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg

from vrvm.engine._raw_blas import times_lower_transposed
from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.kernels import BasisSpec
from vrvm.engine.posterior import NormalGammaPosterior
from vrvm.engine.variational import Priors, VBResult

__all__ = ["CoreFit", "Predictor"]


@dataclass
class CoreFit:
    """A fit on one data set with fixed widths (used for the final model and for selection)."""

    spec: BasisSpec
    centre_rows: np.ndarray
    result: VBResult
    y_scale: float
    priors: Priors
    log_evidence: float  # log p(y | E[alpha]) on the scale of y

    def predictor(self) -> Predictor:
        """The compact predictive model: only the centres the active columns use."""
        res, spec = self.result, self.spec
        head = 1 + spec.n_linear
        kern = res.active[res.active >= head] - head
        centre = kern % spec.n_centres
        used, new_centre = np.unique(centre, return_inverse=True)
        compact = BasisSpec(
            centres=spec.centres[used], widths=spec.widths, mode=spec.mode, n_linear=spec.n_linear
        )
        width_idx = kern // spec.n_centres
        columns = np.concatenate(
            [res.active[res.active < head], head + width_idx * used.size + new_centre]
        )
        return Predictor(
            basis=compact,
            columns=columns,
            chol=res.post.chol,
            mean=res.post.mean,
            e=float(res.e),
            f=float(res.f),
            beta_w=float(res.beta_w),
            family=res.family,
            y_scale=self.y_scale,
        )


@dataclass
class Predictor:
    """Everything prediction needs, in the unit-scaled form the solver works in."""

    basis: BasisSpec
    columns: np.ndarray
    chol: np.ndarray  # L with L L^T = A + G over the active columns
    mean: np.ndarray
    e: float
    f: float
    beta_w: float
    family: str
    y_scale: float
    _online: NormalGammaPosterior | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def chol_inv(self) -> np.ndarray:
        """L^-1 from the Cholesky factor, formed once: a block of queries then costs one
        triangular matrix product (BLAS trmm), 1.5x faster than a triangular solve."""
        inv = linalg.solve_triangular(
            self.chol, np.eye(self.chol.shape[0]), lower=True, check_finite=False
        )
        return np.asfortranarray(inv)

    def design(self, X: np.ndarray, linear: np.ndarray | None) -> np.ndarray:
        """Design matrix rows phi(x) of the active columns, shape (n, K), C order
        (:meth:`BasisSpec.design`: for stacked kernels one GEMM, one clamp and one
        exponential)."""
        return self.basis.design(X, linear, self.columns)

    def _design_blocks(self, X, linear, chunk: int):
        """``(rows, phi)`` for each block of ``chunk`` rows: the slice and its design."""
        for start in range(0, X.shape[0], chunk):
            sl = slice(start, start + chunk)
            yield sl, self.design(X[sl], None if linear is None else linear[sl])

    def loc(self, X, linear, chunk=512) -> np.ndarray:
        """Predictive location mu^T phi(x) alone, on the scale of y (no quadratic form:
        a design block and a matrix-vector product per block)."""
        loc = np.empty(X.shape[0])
        for sl, phi in self._design_blocks(X, linear, chunk):
            np.matmul(phi, self.mean, out=loc[sl])
        return loc * self.y_scale

    def loc_scale(self, X, linear, chunk=512):
        """Predictive location and scale, on the scale of y.

        Location mu^T phi(x); quadratic form phi^T V phi = ||L^-1 phi||^2 with
        L L^T = A + G, by one triangular matrix product per block (BLAS trmm, faster
        than a GEMM with the zeros or a blocked product). Blocks of 512 rows keep the
        design block in cache.
        """
        loc = np.empty(X.shape[0])
        quad = np.empty(X.shape[0])
        for sl, phi in self._design_blocks(X, linear, chunk):
            np.matmul(phi, self.mean, out=loc[sl])
            z = times_lower_transposed(self.chol_inv, phi)  # phi L^-T, in place
            np.einsum("ij,ij->i", z, z, out=quad[sl])
        if self.family == "structured":
            # Student-t scale^2 = (f'/e') (1 + phi^T V phi)
            scale2 = (self.f / self.e) * (1.0 + quad)
        else:
            # Gaussian variance f'/e' + phi^T Sigma phi with Sigma = V / beta_w
            scale2 = self.f / self.e + quad / self.beta_w
        return loc * self.y_scale, np.sqrt(scale2) * self.y_scale

    def online_posterior(self) -> NormalGammaPosterior:
        """The weights' and noise's posterior in conjugate normal-gamma form, for updates.

        Structured: exactly q(w, lambda) = NG(mu, V, e', f'). Mean-field: at its fixed
        point q(w) q(lambda) shares mu and E[lambda] with the structured posterior whose
        shape is e' - K/2 (the mean-field e' counts the K weights), so that form is used.
        """
        if self._online is None:
            k = self.mean.size
            e_s = self.e if self.family == "structured" else self.e - k / 2.0
            f_s = self.f if self.family == "structured" else e_s * self.beta_w**-1
            self._online = NormalGammaPosterior.from_cholesky(self.chol, self.mean, a=e_s, b=f_s)
        return self._online

    def sync_from_online(self) -> None:
        """Copy an updated :meth:`online_posterior` back into the predictive fields."""
        post = self._online
        self.chol = np.ascontiguousarray(post.cholesky.T)  # lower factor of A + G
        self.mean = post.mean
        if self.family == "structured":
            self.e, self.f = post.a, post.b
        else:
            beta = post.a / post.b
            self.e = post.a + self.mean.size / 2.0
            self.f, self.beta_w = self.e / beta, beta
        self.__dict__.pop("chol_inv", None)

    def dist(self, loc, scale):
        if self.family == "structured":
            return StudentT(loc, scale, df=2.0 * self.e)
        return Normal(loc, scale)
