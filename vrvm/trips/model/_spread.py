"""The spread the model puts around its members: the distance scale and twin scales.

:class:`Spread` is owned by a fitted :class:`~vrvm.trips.model.travel_time.TravelTimeModel`
(``model.spread_``). It is fitted by :func:`vrvm.engine.calibration.fit_scale_model` on
out-of-shard predictions (each training trip scored by the members that did not see
it), at fit time and on the stream's held-out predictions during updates
(:mod:`vrvm.trips.model._online`). :meth:`Spread.mixture` applies it: every member's
scale times g(x), and with twin scales every member as two components of equal weight
with scales times ``e^-a`` and ``e^a``.

With ``recalibrate=True`` the same out-of-shard predictions, under the fitted scales, give
each trip's PIT value, and a PIT map G is fitted on them
(:func:`vrvm.engine.calibration.fit_pit_map`) when it gains more than 0.01 nats per trip
under 5-fold cross-validation: the predictive is then H = G o F
(:class:`~vrvm.engine.recalibrated.RecalibratedMixture`), and the exact mixture F
otherwise. The map is refitted whenever the scales are, on the same predictions, so it
always describes the F it maps (a map fitted for another F widened every city's
intervals to 0.98-1.00 coverage, BENCHMARKS.md, issue 34).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping

import numpy as np

from vrvm.engine.calibration import (
    PitMap,
    fit_pit_map,
    fit_scale_model,
    held_out_pits,
    scale_features,
    scale_multiplier,
)
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model import _ensemble

__all__ = ["SCALE_CAP", "SCALE_FIT_ROWS", "Spread", "out_of_shard"]

logger = logging.getLogger(__name__)

#: Training trips (at most) on which the distance scale is fitted.
SCALE_FIT_ROWS = 20_000

#: A member's scale times g(x) is at most this many standard deviations of the training
#: targets the spread is fitted on (:attr:`Spread.max_scale`).
SCALE_CAP = 3.0


def out_of_shard(predictives, X, d, shard_of_row, seed):
    """``(rows, loc, scale, held_out)``: the members' predictions of (at most
    :data:`SCALE_FIT_ROWS`, drawn with ``seed``) training trips, their locations and scales
    (M, n) each, and which members did not see each trip (M, n; ``shard_of_row``)."""
    rows = np.arange(X.shape[0])
    if rows.size > SCALE_FIT_ROWS:
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(rows.size, size=SCALE_FIT_ROWS, replace=False))
    loc, scale = _ensemble.member_loc_scale(predictives, X[rows], d[rows])
    held_out = shard_of_row[rows][None, :] != np.arange(len(predictives))[:, None]
    return rows, loc, scale, held_out


class Spread:
    """The distance scale g(x) and the twin scales ``e^-a``, ``e^a`` of a model.

    Parameters
    ----------
    distance : bool
        Whether the spread is scaled with the trip's distance (the model's
        ``noise_model != "constant"``).
    twins : bool
        Whether each member predicts with two scales (the model's ``twin_scales``).
    recalibrate : bool, default=False
        Whether a PIT map may be fitted (the model's ``recalibration="auto"``).

    Attributes
    ----------
    coef : ndarray of shape (3,)
        Coefficients of log g on the scale features (all zero: g = 1).
    d_range : tuple of float
        The training trips' range of the distance column, which the features scale.
    twin : float
        a >= 0 (0: one component per member).
    pit_map : PitMap or None
        G, or None where the out-of-shard PITs are uniform enough (or ``recalibrate``
        is off).
    max_scale : float
        The largest scale a member's component may have (before the twin scales):
        :data:`SCALE_CAP` standard deviations of the training targets (inf in files
        from before it). A member fitted on a few hundred trips can be far more
        uncertain of its weights at a rare kind of trip (San Francisco's round trips,
        the shortest distance, where g(x) is also largest): on 1,000 trips such
        components reached log-scales of 5 and means of 10^20 hours, a predictive no
        wider in its body but absurd in its mean and its tail. No component is wider
        than the spread of all the trips it was fitted on, thrice over.
    score : dict
        The out-of-shard mean log density before and after the scales, the trips it
        was measured on, where they came from (``source="stream"`` after updates),
        and with ``recalibrate`` the PIT map's record (``pit_map``: its
        cross-validated gain in nats per trip, degree and PIT count).
    """

    def __init__(self, *, distance: bool, twins: bool, recalibrate: bool = False):
        self.distance = bool(distance)
        self.twins = bool(twins)
        self.recalibrate = bool(recalibrate)
        self.coef = np.zeros(3)
        self.d_range = (0.0, 0.0)
        self.twin = 0.0
        self.pit_map: PitMap | None = None
        self.max_scale = math.inf
        self.score: dict = {}
        self.seed = 0  # of the PIT map's cross-validation folds (the fit's seed)

    @property
    def learns(self) -> bool:
        """Whether there is a spread to fit beyond the members' own (a distance scale,
        twin scales or a PIT map, at fit time and on the stream)."""
        return self.distance or self.twins or self.recalibrate

    def inputs(self, d: np.ndarray) -> np.ndarray:
        """The scale features of distance columns ``d``: none (twin scales alone) without
        a distance scale."""
        z = scale_features(d, self.d_range)
        return z if self.distance else z[:, :0]

    def multiplier(self, d: np.ndarray) -> np.ndarray:
        """g(x) at distance columns ``d``."""
        return scale_multiplier(self.coef, d, self.d_range)

    def scaled(self, scale: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The members' scales ``scale`` (M, n) times g(x) at distance columns ``d``, at
        most :attr:`max_scale`."""
        if self.coef.any():
            scale = scale * self.multiplier(d)
        return np.minimum(scale, self.max_scale)

    def fit(self, predictives, X, y, d, shard_of_row, seed, *, held_out=None) -> Spread:
        """Fit on out-of-shard predictions of (at most :data:`SCALE_FIT_ROWS`) training
        trips: trip i is scored by the members other than its shard's
        (``shard_of_row``). ``held_out``: those predictions when already made
        (:func:`out_of_shard` with the same arguments)."""
        self.coef = np.zeros(3)
        self.d_range = (float(d.min()), float(d.max()))
        spread = float(np.std(y)) if y.size > 1 else 0.0
        self.max_scale = SCALE_CAP * spread if np.isfinite(spread) and spread > 0 else math.inf
        self.score = {}
        self.twin = 0.0
        self.pit_map = None
        if not self.learns or len(predictives) < 2:
            return self
        self.seed = seed
        if held_out is None:
            held_out = out_of_shard(predictives, X, d, shard_of_row, seed)
        rows, loc, scale, mask = held_out
        self.refit(predictives, loc, scale, y[rows], mask, d[rows])
        logger.info(
            "distance scale c = %s, twin scales e^-a, e^a with a = %.3f: out-of-shard mean "
            "log density %.4f -> %.4f; PIT map: %s",
            np.round(self.coef, 4).tolist(),
            self.twin,
            self.score["before"],
            self.score["after"],
            self.score.get("pit_map", "off"),
        )
        return self

    def refit(self, predictives, loc, scale, y, held_out, d, **score) -> Spread:
        """Fit the distance and twin scales by :func:`fit_scale_model` on the members'
        held-out predictions ``loc``, ``scale`` (M, n) of targets ``y`` and distance
        columns ``d`` (``score``: more of its record), then the PIT map on the PITs of
        the same predictions under those scales."""
        df = _ensemble.degrees_of_freedom(predictives)
        coef, a, before, after = fit_scale_model(
            loc, scale, y, held_out, self.inputs(d), df, twin=self.twins
        )
        self.coef = np.zeros(3)
        self.coef[: coef.size] = coef
        self.twin = a
        self.score = {"before": before, "after": after, "n_trips": y.size, **score}
        self.pit_map = None
        if self.recalibrate:  # the PITs under the scales just fitted
            pits = held_out_pits(loc, self.scaled(scale, d), y, held_out, df, twin=self.twin)
            self.pit_map, record = fit_pit_map(pits, random_state=self.seed)
            self.score["pit_map"] = record
        return self

    def scores_by_shift(
        self, predictives, loc, scale, y, held_out, d, toward: np.ndarray, weights
    ) -> dict[float, float]:
        """The out-of-shard mean log density of targets ``y - w toward`` under the
        scales refitted for each ``w`` of ``weights`` (arguments as :meth:`refit`;
        without a PIT map: the scales' own score, as :meth:`TravelTimeModel.median_shift
        <vrvm.trips.model.travel_time.TravelTimeModel.median_shift>` scores at fit time).
        This spread is left as it was."""
        trial = copy.copy(self)
        trial.recalibrate = False
        return {
            float(w): trial.refit(predictives, loc, scale, y - w * toward, held_out, d).score[
                "after"
            ]
            for w in weights
        }

    def mixture(
        self, predictives, loc: np.ndarray, scale: np.ndarray, d: np.ndarray, *, log: bool
    ) -> MixtureDistribution:
        """The predictive from the members' locations and scales, (M, n) each, at
        distance columns ``d`` (``log``: of log-seconds, read on seconds)."""
        scale = self.scaled(scale, d)
        df = _ensemble.degrees_of_freedom(predictives)
        df = None if df is None else df[:, None]
        if self.twin > 0:  # member m is components m and M + m
            a = self.twin
            loc = np.concatenate([loc, loc])
            scale = np.concatenate([scale * np.exp(-a), scale * np.exp(a)])
            df = None if df is None else np.concatenate([df, df])
        transform = "log" if log else None
        if self.pit_map is not None:
            return RecalibratedMixture(
                loc,
                scale,
                df=df,
                transform=transform,
                n_members=len(predictives),
                pit_map=self.pit_map,
            )
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
            "pit_map": None if self.pit_map is None else self.pit_map.to_state(),
            "max_scale": None if math.isinf(self.max_scale) else float(self.max_scale),
        }

    @classmethod
    def from_state(
        cls, state: Mapping, *, distance: bool, twins: bool, recalibrate: bool = False
    ) -> Spread:
        """The spread a model file keeps, checked (``ValueError`` if it cannot be)."""
        spread = cls(distance=distance, twins=twins, recalibrate=recalibrate)
        spread.coef = np.asarray(state["coef"], dtype=np.float64).reshape(3)
        low, high = (float(v) for v in state["d_range"])
        spread.d_range = (low, high)
        spread.score = dict(state["score"])
        if not (np.all(np.isfinite(spread.coef)) and low <= high):
            raise ValueError("noise_scale holds non-finite coefficients or an empty range")
        spread.twin = float(state.get("twin", 0.0))
        if not (np.isfinite(spread.twin) and spread.twin >= 0):
            raise ValueError(f"noise_scale.twin must be a number >= 0, got {spread.twin}")
        max_scale = state.get("max_scale")
        spread.max_scale = math.inf if max_scale is None else float(max_scale)
        if not spread.max_scale > 0:
            raise ValueError(f"noise_scale.max_scale must be a number > 0, got {max_scale}")
        if state.get("pit_map") is not None:
            try:
                spread.pit_map = PitMap.from_state(state["pit_map"])
            except (TypeError, ValueError, KeyError) as error:
                raise ValueError(f"noise_scale.pit_map: {error}") from None
        return spread
