"""The spread the model puts around its members: the distance scale and twin scales.

:class:`Spread` is owned by a fitted :class:`~vrvm.trips.model.travel_time.TravelTimeModel`
(``model.spread_``). It is fitted by :func:`vrvm.engine.calibration.fit_scale_model` on
out-of-shard predictions (each training trip scored by the members that did not see
it), at fit time and on the stream's held-out predictions during updates
(:mod:`vrvm.trips.model._online`). :meth:`Spread.mixture` applies it: every member's
scale times g(x), and with twin scales every member as two components of equal weight
with scales times ``e^-a`` and ``e^a``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from vrvm.engine.calibration import fit_scale_model, scale_features, scale_multiplier
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips.model import _ensemble

__all__ = ["SCALE_FIT_ROWS", "Spread"]

logger = logging.getLogger(__name__)

#: Training trips (at most) on which the distance scale is fitted.
SCALE_FIT_ROWS = 20_000


class Spread:
    """The distance scale g(x) and the twin scales ``e^-a``, ``e^a`` of a model.

    Parameters
    ----------
    distance : bool
        Whether the spread is scaled with the trip's distance (the model's
        ``noise_model != "constant"``).
    twins : bool
        Whether each member predicts with two scales (the model's ``twin_scales``).

    Attributes
    ----------
    coef : ndarray of shape (3,)
        Coefficients of log g on the scale features (all zero: g = 1).
    d_range : tuple of float
        The training trips' range of the distance column, which the features scale.
    twin : float
        a >= 0 (0: one component per member).
    score : dict
        The out-of-shard mean log density before and after, the trips it was
        measured on, and where they came from (``source="stream"`` after updates).
    """

    def __init__(self, *, distance: bool, twins: bool):
        self.distance = bool(distance)
        self.twins = bool(twins)
        self.coef = np.zeros(3)
        self.d_range = (0.0, 0.0)
        self.twin = 0.0
        self.score: dict = {}

    @property
    def learns(self) -> bool:
        """Whether there is a spread to fit beyond the members' own (a distance scale or
        twin scales, at fit time and on the stream)."""
        return self.distance or self.twins

    def inputs(self, d: np.ndarray) -> np.ndarray:
        """The scale features of distance columns ``d``: none (twin scales alone) without
        a distance scale."""
        z = scale_features(d, self.d_range)
        return z if self.distance else z[:, :0]

    def multiplier(self, d: np.ndarray) -> np.ndarray:
        """g(x) at distance columns ``d``."""
        return scale_multiplier(self.coef, d, self.d_range)

    def fit(self, predictives, X, y, d, shard_of_row, seed) -> Spread:
        """Fit on out-of-shard predictions of (at most :data:`SCALE_FIT_ROWS`) training
        trips: trip i is scored by the members other than its shard's
        (``shard_of_row``)."""
        self.coef = np.zeros(3)
        self.d_range = (float(d.min()), float(d.max()))
        self.score = {}
        self.twin = 0.0
        if not self.learns or len(predictives) < 2:
            return self
        rng = np.random.default_rng(seed)
        rows = np.arange(y.size)
        if rows.size > SCALE_FIT_ROWS:
            rows = np.sort(rng.choice(rows.size, size=SCALE_FIT_ROWS, replace=False))
        loc, scale = _ensemble.member_loc_scale(predictives, X[rows], d[rows])
        held_out = shard_of_row[rows][None, :] != np.arange(len(predictives))[:, None]
        self.refit(predictives, loc, scale, y[rows], held_out, d[rows])
        logger.info(
            "distance scale c = %s, twin scales e^-a, e^a with a = %.3f: out-of-shard mean "
            "log density %.4f -> %.4f",
            np.round(self.coef, 4).tolist(),
            self.twin,
            self.score["before"],
            self.score["after"],
        )
        return self

    def refit(self, predictives, loc, scale, y, held_out, d, **score) -> Spread:
        """Fit the distance and twin scales by :func:`fit_scale_model` on the members'
        held-out predictions ``loc``, ``scale`` (M, n) of targets ``y`` and distance
        columns ``d`` (``score``: more of its record)."""
        df = _ensemble.degrees_of_freedom(predictives)
        coef, a, before, after = fit_scale_model(
            loc, scale, y, held_out, self.inputs(d), df, twin=self.twins
        )
        self.coef = np.zeros(3)
        self.coef[: coef.size] = coef
        self.twin = a
        self.score = {"before": before, "after": after, "n_trips": y.size, **score}
        return self

    def mixture(
        self, predictives, loc: np.ndarray, scale: np.ndarray, d: np.ndarray, *, log: bool
    ) -> MixtureDistribution:
        """The predictive from the members' locations and scales, (M, n) each, at
        distance columns ``d`` (``log``: of log-seconds, read on seconds)."""
        if self.coef.any():
            scale = scale * self.multiplier(d)
        df = _ensemble.degrees_of_freedom(predictives)
        df = None if df is None else df[:, None]
        if self.twin > 0:  # member m is components m and M + m
            a = self.twin
            loc = np.concatenate([loc, loc])
            scale = np.concatenate([scale * np.exp(-a), scale * np.exp(a)])
            df = None if df is None else np.concatenate([df, df])
        transform = "log" if log else None
        return MixtureDistribution(
            loc, scale, df=df, transform=transform, n_members=len(predictives)
        )

    def to_state(self) -> dict:
        """What a model file keeps (``noise_scale`` in its metadata)."""
        return {
            "coef": [float(c) for c in self.coef],
            "d_range": [float(v) for v in self.d_range],
            "score": dict(self.score),
            "twin": float(self.twin),
        }

    @classmethod
    def from_state(cls, state: Mapping, *, distance: bool, twins: bool) -> Spread:
        """The spread a model file keeps, checked (``ValueError`` if it cannot be)."""
        spread = cls(distance=distance, twins=twins)
        spread.coef = np.asarray(state["coef"], dtype=np.float64).reshape(3)
        low, high = (float(v) for v in state["d_range"])
        spread.d_range = (low, high)
        spread.score = dict(state["score"])
        if not (np.all(np.isfinite(spread.coef)) and low <= high):
            raise ValueError("noise_scale holds non-finite coefficients or an empty range")
        spread.twin = float(state.get("twin", 0.0))
        if not (np.isfinite(spread.twin) and spread.twin >= 0):
            raise ValueError(f"noise_scale.twin must be a number >= 0, got {spread.twin}")
        return spread
