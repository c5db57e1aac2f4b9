"""Trips predicted from the durations of their own group of training trips, blended in.

Two regimes of the travel-time model predict a trip from the training trips most like it
rather than from the members' smooth function of coordinates and time: round trips from
their start cell's round trips (:mod:`~vrvm.trips.model.round_trips`) and trips between
a pair of cells seen before from that pair's own trips
(:mod:`~vrvm.trips.model.pair_durations`). Both estimate the group's distribution of log
durations ``y_j`` by a log-normal kernel estimate of bandwidth ``h``,

.. math:: R(t) = \\frac{1}{n} \\sum_j \\Phi\\Big(\\frac{\\log t - y_j}{h}\\Big),

blend it with the model's predictive H as ``K = w R + (1 - w) H`` (w per trip) and
choose their constants by the CRPS of K on training trips, with R leave-one-out and H
out of shard (:func:`held_out_cdf`). This module holds what they share: the kernels, the
CRPS of a tabulated cdf (:func:`grid_crps`), and :func:`replace_components`, which
keeps the product an exact equal-weight mixture: the blended trips' C components are
replaced by C components of scale ``s`` at the quantiles ``log K^-1(G(v_i))``,
``v_i = (i - 1/2) / C``, G the model's PIT map (the identity without one), so that the
recalibrated predictive G o F of the new components is K up to the smoothing (quantile
matching).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

from vrvm.engine.calibration import held_out_pits
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model._ensemble import degrees_of_freedom, member_loc_scale

__all__ = [
    "BLEND_POINTS",
    "NORMAL_DF",
    "grid_crps",
    "held_out_cdf",
    "kernels",
    "levels_on_grid",
    "replace_components",
]

#: Points between the lowest and highest quantile of a trip's blend where it is
#: tabulated (:func:`replace_components`).
BLEND_POINTS = 32
#: Rows whose levels are interpolated at once.
_BLOCK = 256


def kernels(y: np.ndarray, grid: np.ndarray, h: float) -> np.ndarray:
    """Phi((grid - y_j) / h), shape (len(y), len(grid)).

    Examples
    --------
    >>> kernels(np.array([0.0]), np.array([-1.0, 0.0, 1.0]), 1.0).round(3)
    array([[0.159, 0.5  , 0.841]])
    """
    return special.ndtr((np.asarray(grid)[None, :] - np.asarray(y)[:, None]) / h)


def grid_crps(cdf: np.ndarray, grid: np.ndarray, log_y: np.ndarray) -> np.ndarray:
    """CRPS (seconds) of cdfs tabulated on the log-seconds ``grid`` (rows of ``cdf``, one
    per observation) at observations ``exp(log_y)``: the integral over t = exp(grid) of
    (F(t) - 1{t >= y})^2 by the trapezoid rule.

    Examples
    --------
    >>> grid = np.linspace(0.0, np.log(1e4), 4001)
    >>> point = (grid[None, :] >= np.log(100.0)).astype(float)   # all mass at 100 s
    >>> float(grid_crps(point, grid, np.log([130.0]))[0].round(0))  # |130 - 100|
    30.0
    """
    t = np.exp(grid)
    step = (grid[None, :] >= np.asarray(log_y, np.float64)[:, None]).astype(np.float64)
    return np.trapezoid((cdf - step) ** 2, t, axis=1)


def levels_on_grid(cdf: np.ndarray, grid: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The grid points where each row of the (increasing) ``cdf`` reaches each level,
    linearly interpolated: shape (len(levels), rows). ``grid``: one for all rows, or one
    per row (the shape of ``cdf``).

    Examples
    --------
    >>> levels_on_grid(np.array([[0.0, 0.5, 1.0]]), np.array([0.0, 1.0, 2.0]),
    ...                np.array([0.25, 0.75]))
    array([[0.5],
           [1.5]])
    """
    grid = np.broadcast_to(grid, cdf.shape)
    out = np.empty((levels.size, cdf.shape[0]))
    last = cdf.shape[1] - 1
    for start in range(0, cdf.shape[0], _BLOCK):  # (rows, levels, points) at once
        rows = np.arange(start, min(start + _BLOCK, cdf.shape[0]))[:, None]
        hi = np.clip((cdf[rows[:, 0], None, :] < levels[None, :, None]).sum(axis=2), 1, last)
        lo = hi - 1
        f_lo, f_hi = cdf[rows, lo], cdf[rows, hi]
        span = f_hi - f_lo
        frac = np.divide(levels[None, :] - f_lo, span, out=np.zeros_like(span), where=span > 0)
        frac = np.clip(frac, 0.0, 1.0)
        out[:, rows[:, 0]] = (grid[rows, lo] + frac * (grid[rows, hi] - grid[rows, lo])).T
    return out


#: Degrees of freedom from which a component's Student-t cdf is read as the normal's
#: where a blend is tabulated (an error below 1e-3 in the cdf at df 1,000; the members of
#: the real samples have thousands): the t cdf is most of a blend's cost.
NORMAL_DF = 1000.0


def _fast_cdf(model: MixtureDistribution):
    """``model.cdf``, by normal components where every df is at least :data:`NORMAL_DF`."""
    df = model.df
    if df is None or np.min(df) < NORMAL_DF:
        return model.cdf
    normal = MixtureDistribution(model.loc, model.scale, None, model.transform)
    pit_map = getattr(model, "pit_map", None)
    if pit_map is None or not isinstance(model, RecalibratedMixture):
        return normal.cdf
    if model.groups != 1:  # recalibrated group by group: keep the model's own
        return model.cdf
    return lambda t: pit_map.cdf(normal.cdf(t))


def _blend_levels(model, own_at, own_ends, weight, levels) -> np.ndarray:
    """log K^-1 at ``levels`` (shape (len(levels), rows)) of K = w R + (1 - w) H: R given
    by ``own_at(x)`` (its cdf at log seconds x, shape (rows, P)) and ``own_ends`` (a
    bracket of R^-1 at the lowest and highest level, shape (2, rows)), H the predictive
    ``model`` of the same rows and w (``weight``) one per row.

    K^-1(p) lies between R^-1(p) and H^-1(p), so every level's lies between the smaller
    of the two quantiles at the lowest level and the larger at the highest: K is
    tabulated on :data:`BLEND_POINTS` points of that bracket, row by row: the members'
    cdfs are most of the cost (on the whole grid of 512 points, Chicago's predictions
    cost 3.3 times the model's; on 32 points of the bracket, 1.5 times, with the same
    CRPS to 0.001 s).
    """
    ends = levels[[0, -1]]
    with np.errstate(divide="ignore"):
        model_ends = np.log(model.ppf(ends[:, None]))
    low = np.minimum(own_ends[0], model_ends[0])
    high = np.maximum(own_ends[1], model_ends[1])
    x = low[:, None] + (high - low)[:, None] * np.linspace(0.0, 1.0, BLEND_POINTS)[None, :]
    w = weight[:, None]
    blend = w * own_at(x) + (1.0 - w) * _fast_cdf(model)(np.exp(x.T)).T
    return levels_on_grid(np.maximum.accumulate(blend, axis=1), x, levels)


def replace_components(
    dist: MixtureDistribution,
    cols: np.ndarray,
    own,
    grid,
    weight,
    scale,
    *,
    spacing: float = 0.0,
) -> MixtureDistribution:
    """``dist`` (log transform) with the components of queries ``cols`` replaced by those
    of K = w R + (1 - w) H: R the rows of ``own`` (cdfs tabulated on the log-seconds
    ``grid``, one row per query of ``cols``; or a pair of functions ``(own_at, bracket)``
    with ``grid`` None and every w < 1: ``own_at(x)`` R at log seconds x of shape
    (len(cols), P), ``bracket(p)`` bounds (2, len(cols)) of R^-1 at the two levels
    ``p``), H the queries' predictive in ``dist`` and w ``weight`` (a number, or one
    per query of ``cols``). The new components sit at the
    quantiles ``log K^-1(G(v_i))`` (G the PIT map of ``dist``, identity without) with
    scale ``scale`` (a number, or one per query of ``cols``); the other queries keep
    theirs.

    Examples
    --------
    >>> dist = MixtureDistribution(np.full((4, 2), np.log(600.0)), 0.3, transform="log")
    >>> grid = np.linspace(2.0, 10.0, 512)
    >>> own = kernels(np.log([100.0, 110.0, 120.0]), grid, 0.1).mean(axis=0)[None, :]
    >>> new = replace_components(dist, np.array([1]), own, grid, 1.0, 0.1)
    >>> new.median().round(-1).tolist()
    [600.0, 110.0]
    """
    if dist.transform != "log":
        raise ValueError("own durations: blending needs a predictive of log seconds")
    cols = np.asarray(cols, np.intp)
    weight = np.broadcast_to(np.asarray(weight, np.float64), cols.shape)
    n_components = dist.n_components
    levels = (np.arange(n_components) + 0.5) / n_components
    pit_map = getattr(dist, "pit_map", None)
    if pit_map is not None:  # G o F of the new components is K
        levels = pit_map.cdf(levels)
    at = np.empty((n_components, cols.size))
    if isinstance(own, tuple):  # R at given points, and a bracket of its quantiles (blends only)
        own_at, bracket = own
        if np.any(weight >= 1):
            raise ValueError("own durations: a cdf given by a function needs weights < 1")
        at[:] = _blend_levels(dist[cols], own_at, bracket(levels[[0, -1]]), weight, levels)
    else:
        own = np.maximum.accumulate(own, axis=1)
        alone = weight >= 1
        if alone.any():
            at[:, alone] = levels_on_grid(own[alone], grid, levels)
        if not alone.all():
            rest = ~alone
            table = own[rest]

            def own_at(x):
                return np.stack([np.interp(x[j], grid, table[j]) for j in range(x.shape[0])])

            ends = levels_on_grid(table, grid, levels[[0, -1]])
            at[:, rest] = _blend_levels(dist[cols[rest]], own_at, ends, weight[rest], levels)
    loc = np.array(dist.loc, dtype=np.float64)
    new_scale = np.array(np.broadcast_to(dist.scale, loc.shape), dtype=np.float64)
    loc[:, cols] = at
    new_scale[:, cols] = scale
    if spacing > 0 and n_components > 1:  # at least ``spacing`` times the local gap
        gap = np.empty_like(at)
        gap[1:-1] = 0.5 * (at[2:] - at[:-2])
        gap[0], gap[-1] = at[1] - at[0], at[-1] - at[-2]
        new_scale[:, cols] = np.maximum(new_scale[:, cols], spacing * gap)
    if isinstance(dist, RecalibratedMixture):
        return RecalibratedMixture(
            loc,
            new_scale,
            dist.df,
            dist.transform,
            n_members=dist.n_members,
            pit_map=dist.pit_map,
            groups=dist.groups,
        )
    return MixtureDistribution(loc, new_scale, dist.df, dist.transform, n_members=dist.n_members)


def held_out_cdf(
    model, data, loo: np.ndarray, rows: np.ndarray, *, mapped: bool = True
) -> Callable | None:
    """The model's held-out cdf of its training trips ``rows``, as a function
    ``model_cdf(sub, grid)`` of indices ``sub`` into ``rows`` and a log-seconds grid,
    shape (len(sub), len(grid)); None with fewer than two members or
    ``target="seconds"``.

    ``data`` is what :meth:`TravelTimeModel.fit_trips` kept (features ``X``, targets
    ``y`` after the location stage's out-of-fold offsets, distances ``d``,
    ``shard_of_row`` and ``raw`` with the ends and travel times), ``loo`` the training
    trips' leave-one-out pair offsets. A trip's cdf is that of the members that did not
    see it (:func:`~vrvm.engine.calibration.held_out_pits`, under the spread), read
    through the PIT map (``mapped``; the mixture F itself otherwise): what
    :meth:`Spread.fit` scores.
    """
    predictors = model.member_predictors()
    n_members = len(predictors)
    if n_members < 2 or model.target != "log":
        return None
    rows = np.asarray(rows, np.intp)
    # log t less the members' target: the stage's out-of-fold offset; plus the pair offsets
    shift = np.log(data.raw[rows, 5]) - data.y[rows] + loo[rows]
    spread = model.spread_
    df = degrees_of_freedom(predictors)

    def model_cdf(sub: np.ndarray, grid: np.ndarray) -> np.ndarray:
        r = rows[sub]
        loc, scale = member_loc_scale(predictors, data.X[r], data.d[r])
        loc = loc + shift[sub][None, :]
        scale = spread.scaled(scale, data.d[r])
        held_out = data.shard_of_row[r][None, :] != np.arange(n_members)[:, None]
        cdf = np.stack(
            [
                held_out_pits(loc, scale, np.full(r.size, g), held_out, df, twin=spread.twin)
                for g in grid
            ],
            axis=1,
        )
        return cdf if spread.pit_map is None or not mapped else spread.pit_map.cdf(cdf)

    return model_cdf
