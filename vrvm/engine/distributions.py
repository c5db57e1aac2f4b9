"""Vectorised predictive distributions returned by ``predict_dist``.

Each object holds one distribution per query row (arrays of shape ``(n,)``) and
offers the same small interface: ``mean``, ``std``, ``var``, ``median``,
``logpdf``, ``pdf``, ``cdf``, ``ppf``, ``interval``, ``sample`` and ``crps``.
Evaluation methods broadcast their argument against the batch, so ``cdf(y)``
with ``y`` of shape ``(n,)`` gives one value per row, and a scalar gives the
probability of the same value under every row's distribution.

The numerical work is delegated to :mod:`scipy.stats`; what this module adds is
a stable interface shared by the single-model predictive (Student-t for the
structured factorisation, Gaussian for the mean-field one) and the CRPS in
closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

__all__ = ["Normal", "StudentT"]


def _as_float_array(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"interval level must lie strictly between 0 and 1, got {level!r}")
    return level


def _check_quantiles(q) -> np.ndarray:
    q = _as_float_array(q)
    if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
        raise ValueError("quantile levels must lie in [0, 1]")
    return q


@dataclass(frozen=True)
class _LocationScale:
    """Common behaviour of location-scale families (loc + scale * Z)."""

    loc: np.ndarray
    scale: np.ndarray

    def __post_init__(self):
        loc = np.atleast_1d(_as_float_array(self.loc))
        scale = np.atleast_1d(_as_float_array(self.scale))
        loc, scale = np.broadcast_arrays(loc, scale)
        if np.any(~np.isfinite(scale)) or np.any(scale <= 0):
            raise ValueError("scale must be finite and strictly positive")
        object.__setattr__(self, "loc", np.array(loc))
        object.__setattr__(self, "scale", np.array(scale))

    # standardised ("Z") distribution, implemented by subclasses -------------
    def _z(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self) -> int:
        return self.loc.shape[0]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.loc.shape

    def __getitem__(self, index):
        """Select a subset of rows, returning a distribution of the same family."""
        return self._subset(index)

    def mean(self) -> np.ndarray:
        """Mean of each distribution."""
        return self.loc.copy()

    def median(self) -> np.ndarray:
        """Median of each distribution (equal to the location for symmetric families)."""
        return self.loc.copy()

    def std(self) -> np.ndarray:
        """Standard deviation of each distribution."""
        return np.sqrt(self.var())

    def logpdf(self, y) -> np.ndarray:
        """Log density at ``y``, broadcast against the batch."""
        z = (_as_float_array(y) - self.loc) / self.scale
        return self._z().logpdf(z) - np.log(self.scale)

    def pdf(self, y) -> np.ndarray:
        """Density at ``y``."""
        return np.exp(self.logpdf(y))

    def cdf(self, y) -> np.ndarray:
        """P(Y <= y)."""
        return self._z().cdf((_as_float_array(y) - self.loc) / self.scale)

    def ppf(self, q) -> np.ndarray:
        """Quantile function (inverse of :meth:`cdf`); ``q`` broadcast against the batch."""
        return self.loc + self.scale * self._z().ppf(_check_quantiles(q))

    def interval(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central interval holding probability ``level``: returns ``(lo, hi)``."""
        level = _check_level(level)
        return self.ppf((1 - level) / 2), self.ppf((1 + level) / 2)

    def sample(self, size: int = 1, random_state=None) -> np.ndarray:
        """Draw ``size`` samples per row; returns shape ``(size, n)``."""
        rng = np.random.default_rng(random_state)
        z = self._z().rvs(size=(int(size), *self.loc.shape), random_state=rng)
        return self.loc + self.scale * z


@dataclass(frozen=True)
class Normal(_LocationScale):
    """Batch of Gaussian distributions N(loc, scale^2).

    Examples
    --------
    >>> d = Normal(loc=[0.0, 1.0], scale=[1.0, 2.0])
    >>> d.cdf([0.0, 1.0])
    array([0.5, 0.5])
    >>> lo, hi = d.interval(0.95)
    >>> bool(np.allclose(hi - lo, 2 * 1.959964 * d.scale, rtol=1e-6))
    True
    >>> bool(np.allclose(d.crps(d.loc), d.scale * (np.sqrt(2) - 1) / np.sqrt(np.pi)))
    True
    """

    def _z(self):
        return stats.norm

    def _subset(self, index):
        return Normal(self.loc[index], self.scale[index])

    def var(self) -> np.ndarray:
        """Variance of each distribution."""
        return self.scale**2

    def crps(self, y) -> np.ndarray:
        """Continuous ranked probability score at ``y`` (lower is better).

        Closed form of Gneiting & Raftery (2007), eq. 21:
        CRPS = sigma * [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)], z = (y - mu) / sigma.
        """
        z = (_as_float_array(y) - self.loc) / self.scale
        return self.scale * (
            z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi)
        )


@dataclass(frozen=True)
class StudentT(_LocationScale):
    """Batch of location-scale Student-t distributions.

    ``Y = loc + scale * T`` with ``T`` a standard Student-t with ``df`` degrees of
    freedom. This is the predictive of the structured (normal-gamma) variational
    posterior, with ``df = 2 e'`` (see :class:`vrvm.VRVMRegressor`).

    Examples
    --------
    >>> d = StudentT(loc=[0.0], scale=[1.0], df=3.0)
    >>> float(d.cdf(0.0)[0])
    0.5
    >>> bool(np.allclose(d.cdf(d.ppf([0.1, 0.9])), [0.1, 0.9]))
    True
    >>> bool(np.allclose(d.std(), np.sqrt(3.0)))
    True
    """

    df: np.ndarray | float = np.inf

    def __post_init__(self):
        super().__post_init__()
        df = np.broadcast_to(_as_float_array(self.df), self.loc.shape)
        if np.any(np.isnan(df)) or np.any(df <= 0):
            raise ValueError("df must be strictly positive")
        object.__setattr__(self, "df", np.array(df))

    def _z(self):
        return stats.t(self.df)

    def _subset(self, index):
        return StudentT(self.loc[index], self.scale[index], self.df[index])

    def var(self) -> np.ndarray:
        """Variance: scale^2 * df / (df - 2); infinite when df <= 2."""
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(self.df > 2, self.scale**2 * self.df / (self.df - 2), np.inf)
        return np.where(np.isinf(self.df), self.scale**2, v)

    def crps(self, y) -> np.ndarray:
        """Continuous ranked probability score at ``y``; needs ``df > 1``.

        Closed form for the location-scale Student-t (Jordan, Krüger & Lerch 2019,
        "Evaluating probabilistic forecasts with scoringRules", section on ``crps_t``):
        CRPS = sigma [ z (2 F(z) - 1) + 2 f(z) (nu + z^2) / (nu - 1)
                       - 2 sqrt(nu) B(1/2, nu - 1/2) / ((nu - 1) B(1/2, nu/2)^2) ].
        """
        if np.any(self.df <= 1):
            raise ValueError("the CRPS of a Student-t needs df > 1 (finite mean)")
        nu = self.df
        z = (_as_float_array(y) - self.loc) / self.scale
        big = np.isinf(nu) | (nu > 1e7)
        nu_f = np.where(big, 1e7, nu)  # avoid inf arithmetic; switched to Gaussian below
        t = stats.t(nu_f)
        log_b_ratio = special.betaln(0.5, nu_f - 0.5) - 2 * special.betaln(0.5, nu_f / 2)
        const = 2 * np.sqrt(nu_f) * np.exp(log_b_ratio) / (nu_f - 1)
        val = z * (2 * t.cdf(z) - 1) + 2 * t.pdf(z) * (nu_f + z**2) / (nu_f - 1) - const
        gauss = z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi)
        return self.scale * np.where(big, gauss, val)
