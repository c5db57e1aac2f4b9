"""The spread the model puts around its members: the distance scale and twin scales.

Both are fitted by :func:`vrvm.engine.calibration.fit_scale_model` on out-of-shard
predictions (each training trip scored by the members that did not see it), at fit
time here and on the stream's held-out predictions during updates
(:mod:`vrvm.trips.model._online`). :func:`predictive` applies them: every member's scale
times g(x), and with twin scales every member as two components of equal weight with
scales times ``e^-a`` and ``e^a``.
"""

from __future__ import annotations

import logging

import numpy as np

from vrvm.engine.calibration import fit_scale_model, scale_features, scale_multiplier
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips.model import _ensemble

__all__ = [
    "SCALE_FIT_ROWS",
    "fit_spread",
    "has_spread_model",
    "predictive",
    "refit_spread",
    "scale_inputs",
]

logger = logging.getLogger(__name__)

#: Training trips (at most) on which the distance scale is fitted.
SCALE_FIT_ROWS = 20_000


def scale_inputs(model, d: np.ndarray) -> np.ndarray:
    """The scale model's features of distance columns ``d``: none (twin scales alone)
    for ``noise_model="constant"``."""
    z = scale_features(d, model.noise_scale_range_)
    return z[:, :0] if model.noise_model == "constant" else z


def has_spread_model(model) -> bool:
    """Whether the model fits a spread beyond its members' own: a distance scale or twin
    scales (at fit time and on the stream)."""
    return model.noise_model != "constant" or bool(model.twin_scales)


def refit_spread(model, loc, scale, y, held_out, d, **score) -> None:
    """Fit the distance and twin scales by :func:`fit_scale_model` on the members'
    held-out predictions ``loc``, ``scale`` (M, n) of targets ``y`` and distance
    columns ``d``, and set them on the model (``score``: more of its record)."""
    df = _ensemble.degrees_of_freedom(model.member_predictors())
    z = scale_inputs(model, d)
    coef, a, before, after = fit_scale_model(
        loc, scale, y, held_out, z, df, twin=bool(model.twin_scales)
    )
    model.noise_scale_coef_ = np.zeros(3)
    model.noise_scale_coef_[: coef.size] = coef
    model.twin_scale_ = a
    model.noise_scale_score_ = {"before": before, "after": after, "n_trips": y.size, **score}


def fit_spread(model, X, y, d, shard_of_row, seed) -> None:
    """Fit the distance scale (and the twin scales) on out-of-shard predictions."""
    model.noise_scale_coef_ = np.zeros(3)
    model.noise_scale_range_ = (float(d.min()), float(d.max()))
    model.noise_scale_score_ = {}
    model.twin_scale_ = 0.0
    predictives = model.member_predictors()
    if not has_spread_model(model) or len(predictives) < 2:
        return
    rng = np.random.default_rng(seed)
    rows = np.arange(y.size)
    if rows.size > SCALE_FIT_ROWS:
        rows = np.sort(rng.choice(rows.size, size=SCALE_FIT_ROWS, replace=False))
    loc, scale = _ensemble.member_loc_scale(predictives, X[rows], d[rows])
    held_out = shard_of_row[rows][None, :] != np.arange(len(predictives))[:, None]
    refit_spread(model, loc, scale, y[rows], held_out, d[rows])
    score = model.noise_scale_score_
    logger.info(
        "distance scale c = %s, twin scales e^-a, e^a with a = %.3f: out-of-shard mean log "
        "density %.4f -> %.4f",
        np.round(model.noise_scale_coef_, 4).tolist(),
        model.twin_scale_,
        score["before"],
        score["after"],
    )


def predictive(model, loc: np.ndarray, scale: np.ndarray, d: np.ndarray) -> MixtureDistribution:
    """The model's predictive from its members' locations and scales, (M, n) each."""
    if model.noise_scale_coef_.any():
        scale = scale * scale_multiplier(model.noise_scale_coef_, d, model.noise_scale_range_)
    predictives = model.member_predictors()
    df = _ensemble.degrees_of_freedom(predictives)
    df = None if df is None else df[:, None]
    if model.twin_scale_ > 0:  # member m is components m and M + m
        a = model.twin_scale_
        loc = np.concatenate([loc, loc])
        scale = np.concatenate([scale * np.exp(-a), scale * np.exp(a)])
        df = None if df is None else np.concatenate([df, df])
    transform = "log" if model.target == "log" else None
    return MixtureDistribution(loc, scale, df=df, transform=transform, n_members=len(predictives))
