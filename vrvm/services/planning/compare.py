"""What changed: two models' answers for the same trips, side by side, with P(slower).

Two models A and B (two versions of a store, or models trained on the trips of two
date ranges, e.g. before and after a closure) are compared trip by trip, for an
origin-destination pair (:func:`compare_trip`), a base's reach (one origin to every zone
of a :class:`~vrvm.services.map.area.ServiceArea`, :func:`compare_reach`) or a matrix of
origins x destinations (:func:`iter_compare_matrix`, :func:`compare_matrix`). Each pair
gets (all times in seconds; :data:`COMPARE_COLUMNS`):

* each side's median and 90 % interval, from its predictive quantile function
  (``median_a_s``, ``lower90_a_s``, ``upper90_a_s`` and the same for B);
* the change of the median, ``median_change_s`` = median_B - median_A, with a 90 %
  interval from the members' spread (``median_change_lower90_s``,
  ``median_change_upper90_s``) and ``within_uncertainty`` (below);
* ``p_slower`` = P(T_B > T_A) and a 90 % interval of the difference T_B - T_A
  (``diff_lower90_s``, ``diff_upper90_s``);
* with a threshold t, each side's P(T <= t) and its change (``p_within_<t>s_a``,
  ``p_within_<t>s_b``, ``p_within_<t>s_change`` = B - A).

**Independence.** T_A and T_B are two models' beliefs about *one* trip, not two trips.
P(slower) treats them as two independent random travel times, each distributed as its
model's predictive F_A, F_B: it is the probability that a trip drawn from B's answer
takes longer than one drawn from A's, a comparison of the two predictive distributions
(for F_A = F_B it is exactly 1/2 whatever their spread). Independence is what makes
this one number; when the same conditions (weather, an event) would drive both trips,
the real difference of two trips is less spread than T_B - T_A here, so the interval of
the difference is too wide and P(slower) is pulled towards 1/2 for such trips.

**P(slower) by quadrature.** With u_i = (i - 1/2)/L, i = 1..L (:data:`QUADRATURE_LEVELS`),

.. math:: P(T_B > T_A) = \\int f_A(t) (1 - F_B(t))\\, dt
          = \\int_0^1 S_B(F_A^{-1}(u))\\, du
          \\approx \\frac{1}{L} \\sum_i S_B(F_A^{-1}(u_i)),

the midpoint rule on A's quantile function (``ppf``) and B's exact survival function
(``sf``), vectorised over pairs. The integrand is monotone in u, so the error is at
most 1/(2L) (each cell's error is at most half its variation over the cell) whatever
the two predictives; for smooth predictives it is O(L^-2): 1.2e-5 at most on 200 trips
of two Chicago models (2013-2014 and 2015-2016 trips, 16 Student-t components each),
against the same rule at 16,384 levels.

**Interval of the difference by discretised convolution.** T_A is replaced by its L
equally likely quantiles F_A^{-1}(u_i) and T_B by the distribution whose quantile
function is linear between its own quantiles F_B^{-1}(u_j) (cdf ~F_B, linear between
them), so F_D(d) = P(T_B - T_A <= d) ~ (1/L) sum_i ~F_B(F_A^{-1}(u_i) + d); the 5 % and
95 % quantiles of D solve ~F_D(d) = 0.05, 0.95 by the Illinois method (regula falsi)
inside a bracket that needs no search: since {D <= q_B(s) - q_A(1 - s)} needs
T_B <= q_B(s) or T_A >= q_A(1 - s), F_D(q_B(a/2) - q_A(1 - a/2)) <= a, and likewise
F_D(q_B((1 + a)/2) - q_A((1 - a)/2)) >= a. The two discretisations are each within
1/(2L) and 1/L of the true cdfs in Kolmogorov distance, and the distance of a sum of
independent terms is at most the sum of the terms' distances (F_{X+Y}(d) = E F_Y(d - X)),
so the probability of the interval is exact to 3/(2L) at worst; measured, F_D at the
interval's ends is within 5e-5 of 0.05 and 0.95 on the same 200 Chicago trips (~F_B
departs from F_B only in the cells where F_B is far from linear, B's outermost ones).
On those models a pair takes about 20 ms (L = 512, one core).

**Within the models' own uncertainty.** The ensemble's members are fitted on disjoint
shards of the trips, so each member's median (the location of its symmetric components,
on seconds) is an independent estimate of the trip's median, and their spread is the
model's own uncertainty about it (its between-member spread; the weight uncertainty
inside each member, which widens every member alike, is not separable from the trip-to-
trip spread and is left out; so is the uncertainty of what every member shares, the
location stage and the pair offsets fitted once on all the trips, which makes the interval
narrower than the models' whole uncertainty). With s_A, s_B the standard deviations of
the M_A and M_B member medians, the change of the median has standard error
se = sqrt(s_A^2 / M_A + s_B^2 / M_B) and the 90 % interval

.. math:: \\Delta \\pm t_{0.95, \\nu}\\, se, \\quad
          \\nu = \\frac{se^4}{s_A^4 / (M_A^2 (M_A - 1)) + s_B^4 / (M_B^2 (M_B - 1))}

(Welch 1947; ``median_change_lower90_s``, ``median_change_upper90_s``), with Delta the
change of the mixtures' medians. A pair's change is **within the models' own
uncertainty** when that interval holds 0, i.e. |Delta| <= t se: a two-sided Welch test
at the 10 % level finds no change of the median beyond what re-fitting each model on
other trips could give. It does not depend on the trip-to-trip spread (P(slower) does),
so a change can be beyond the models' uncertainty with P(slower) near 1/2 (a small shift
of a very variable trip), or within it with P(slower) far from 1/2 (members that disagree
a lot). With few members (2 or 3) t is large (t_{0.95,1} = 6.3): the rule is then
conservative. Models of one member have no spread, and are refused.

**Same area.** Two models compare only where both have learned: their time zones must
agree (the departure is one wall-clock time) and every origin and destination must lie
inside both models' training areas (the training bounding box padded by
:data:`~vrvm.services.analyst.area_check.AREA_PAD_KM`,
:func:`~vrvm.services.analyst.area_check.model_area`); anything else raises
:class:`DifferentAreasError` naming the models and the points. A model that recorded no
training bounding box is not checked for extent.

References
----------
Welch (1947), "The generalization of 'Student's' problem when several different population
variances are involved", Biometrika 34, 28-35.
Dowell & Jarratt (1971), "A modified regula falsi method for computing the root of an
equation", BIT 11, 168-174 (the Illinois method).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.analyst.area_check import ModelArea, model_area
from vrvm.services.answers.forecast import member_medians, query_frame
from vrvm.services.answers.matrix import iter_pair_batches
from vrvm.services.answers.schedule import local_time
from vrvm.services.display.colours import (
    THIN_SWATCH,
    binned_colors,
    faded,
    legend_entries,
    nice_edges,
)
from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place
from vrvm.services.versions.models import model_name
from vrvm.trips.model.travel_time import ProgressCallback, TravelTimeModel

__all__ = [
    "CHANGE_PALETTE",
    "COMPARE_BATCH_PAIRS",
    "COMPARE_COLUMNS",
    "COMPARE_METRICS",
    "CONFIDENT",
    "INTERVAL_LEVEL",
    "QUADRATURE_LEVELS",
    "WITHIN_LEGEND",
    "CompareTally",
    "DifferentAreasError",
    "check_comparable",
    "compare_colors",
    "compare_columns",
    "compare_distributions",
    "compare_map",
    "compare_matrix",
    "compare_reach",
    "compare_summary",
    "compare_trip",
    "iter_compare_matrix",
]

QUADRATURE_LEVELS = 512
"""L: quantile levels of the quadrature (P(slower) exact to 1/(2L) < 1e-3 at worst)."""
INTERVAL_LEVEL = 0.9
"""Probability of every interval (each side's, the difference's, the median change's)."""
CONFIDENT = 0.9
"""A pair is counted slower (faster) when P(slower) exceeds this (is below 1 - this)."""
COMPARE_BATCH_PAIRS = 1024
"""Pairs compared at once by one thread: (L, pairs) arrays of 4 MB each."""
COMPARE_METRICS = ("median", "probability", "slower")
"""What a comparison map colours: the change of the median, of P(T <= t), or P(slower)."""

_SF_LEVELS = 64  # quantile levels whose survival is evaluated at once: (64, M, pairs)
_SOLVER_ITERATIONS = 100
_SOLVER_TOL_P = 1e-7  # in probability (the discretisation's error is larger)
_SOLVER_TOL_REL = 1e-12  # bracket width relative to its magnitude
_SHOWN = 5  # points named in an error message

CHANGE_PALETTE = [  # ColorBrewer RdBu (7), blue = better under B, red = worse
    (33, 102, 172),
    (103, 169, 207),
    (209, 229, 240),
    (247, 247, 247),
    (253, 219, 199),
    (239, 138, 98),
    (178, 24, 43),
]
"""Diverging colours of a change, better under B (blue) to worse (red), white for none."""
_PROBABILITY_CHANGE_EDGES = (0.0, 0.05, 0.1, 0.2, 1.0)
_SLOWER_EDGES = (0.0, 0.1, 0.25, 0.4, 0.6, 0.75, 0.9, 1.0)
_DEFAULT_MINUTES = (0.0, 0.5, 1.0, 2.0)
WITHIN_LEGEND = "Faded: change within the models' own uncertainty (members' spread)"


class DifferentAreasError(ValueError):
    """Two models that cannot be compared: other time zones, or points outside either
    model's training area (a :class:`ValueError`, so the CLI and the API report it as
    bad input)."""


# ------------------------------------------------------------------------------ columns
def compare_columns(threshold_s: float | None = None) -> list[str]:
    """The columns of a comparison table, after ``origin`` and ``destination``.

    Examples
    --------
    >>> compare_columns(600)[:5]
    ['median_a_s', 'median_b_s', 'p_slower', 'lower90_a_s', 'upper90_a_s']
    >>> compare_columns(600)[-3:]
    ['p_within_600s_a', 'p_within_600s_b', 'p_within_600s_change']
    """
    names = [
        "median_a_s",
        "median_b_s",
        "p_slower",
        "lower90_a_s",
        "upper90_a_s",
        "lower90_b_s",
        "upper90_b_s",
        "median_change_s",
        "median_change_lower90_s",
        "median_change_upper90_s",
        "within_uncertainty",
        "diff_lower90_s",
        "diff_upper90_s",
    ]
    if threshold_s is not None:
        t = format_number(_check_threshold(threshold_s))
        names += [f"p_within_{t}s_a", f"p_within_{t}s_b", f"p_within_{t}s_change"]
    return names


COMPARE_COLUMNS = ("origin", "destination", *compare_columns())
"""Columns of a comparison matrix without a threshold (times in seconds)."""


def _check_threshold(threshold_s) -> float:
    try:
        value = float(threshold_s)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0 < value < np.inf:
        raise ValueError(f"threshold_s must be a travel time in seconds > 0, got {threshold_s!r}")
    return value


# ------------------------------------------------------------------------- the numbers
def _median_change_interval(
    medians_a: np.ndarray, medians_b: np.ndarray, change: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Welch's 90 % interval of the change of the median from the members' medians."""
    m_a, m_b = medians_a.shape[0], medians_b.shape[0]
    var_a = medians_a.var(axis=0, ddof=1) / m_a
    var_b = medians_b.var(axis=0, ddof=1) / m_b
    se2 = var_a + var_b
    denominator = var_a**2 / (m_a - 1) + var_b**2 / (m_b - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        nu = np.where(denominator > 0, se2**2 / denominator, np.inf)
    half = np.where(se2 > 0, stats.t.ppf(0.5 + INTERVAL_LEVEL / 2, np.maximum(nu, 1.0)), 0.0)
    half = half * np.sqrt(se2)
    return change - half, change + half


def _monotone(q: np.ndarray) -> np.ndarray:
    """Quantiles along axis 0 made non-decreasing (a solver's last-bit wobble)."""
    return np.maximum.accumulate(q, axis=0)


class _LinearCdf:
    """~F row by row: the cdf linear between each row's quantiles ``nodes`` (n, L) at the
    midpoint levels (i - 1/2)/L, 0 below the first and 1 above the last.

    One :func:`numpy.searchsorted` serves all rows: each row's nodes and points are
    shifted by the row's number times a stride longer than any row's span, so the rows
    follow each other in one sorted array.
    """

    def __init__(self, nodes: np.ndarray):
        self.nodes = nodes
        self.first, self.last = nodes[:, :1], nodes[:, -1:]
        self.stride = float(np.max(self.last - self.first)) + 4.0
        self.offset = self.stride * np.arange(len(nodes), dtype=np.float64)[:, None]
        self.keys = ((nodes - self.first) + self.offset).ravel()

    def __call__(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """~F of row ``rows[k]`` at ``x[k]`` (shape (len(rows), K))."""
        n_levels = self.nodes.shape[1]
        first, last = self.first[rows], self.last[rows]
        points = (np.clip(x, first - 1.0, last + 1.0) - first) + self.offset[rows]
        count = np.searchsorted(self.keys, points.ravel(), side="right").reshape(x.shape)
        count -= n_levels * rows[:, None]
        np.clip(count, 0, n_levels, out=count)
        left = np.clip(count - 1, 0, n_levels - 1)
        nodes = self.nodes[rows]
        x_left = np.take_along_axis(nodes, left, axis=1)
        gap = np.take_along_axis(nodes, np.minimum(count, n_levels - 1), axis=1) - x_left
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(gap > 0, np.clip((x - x_left) / gap, 0.0, 1.0), 0.0)
        cdf = (left + 0.5 + share) / n_levels
        cdf[count == 0] = 0.0
        cdf[count == n_levels] = 1.0
        return cdf


def _difference_quantiles(qa: np.ndarray, qb: np.ndarray, levels) -> np.ndarray:
    """Quantiles of T_B - T_A at ``levels``, shape (len(levels), n) (see the module notes).

    ``qa``, ``qb``: the two sides' quantiles at the midpoint levels, shape (L, n).
    """
    n_levels, n = qa.shape
    nodes_a = qa.T  # (n, L)
    cdf_b = _LinearCdf(np.ascontiguousarray(qb.T))

    def cdf(d: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return cdf_b(nodes_a[rows] + d[:, None], rows).mean(axis=1)

    def node(q: np.ndarray, k: int) -> np.ndarray:  # beyond the grid: past every node
        if k < 0:
            return q[0] - 1.0
        return q[k] if k < n_levels else q[-1] + 1.0

    out = np.empty((len(levels), n))
    for row, alpha in enumerate(levels):
        # the bracket of the module notes, at grid levels on the safe side
        lo = node(qb, int(np.floor(alpha / 2 * n_levels - 0.5))) - node(
            qa, int(np.ceil((1 - alpha / 2) * n_levels - 0.5))
        )
        hi = node(qb, int(np.ceil((1 + alpha) / 2 * n_levels - 0.5))) - node(
            qa, int(np.floor((1 - alpha) / 2 * n_levels - 0.5))
        )
        out[row] = _solve(cdf, alpha, lo, hi)
    return out


def _solve(cdf, target: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The d with cdf(d, rows) = target per row, inside [lo, hi] (cdf(lo) <= target <=
    cdf(hi)), by the Illinois method: regula falsi that halves the value kept at an end
    which stays twice in a row (Dowell & Jarratt 1971), so it converges superlinearly.
    Each step evaluates the rows not yet solved only."""
    rows = np.arange(lo.size)
    lo, hi = lo.astype(np.float64), hi.astype(np.float64)
    f_lo, f_hi = cdf(lo, rows) - target, cdf(hi, rows) - target
    result = np.where(f_lo >= 0, lo, np.where(f_hi <= 0, hi, np.nan))
    side = np.zeros(lo.shape, dtype=np.int8)  # the end moved last: -1 lo, +1 hi
    for _ in range(_SOLVER_ITERATIONS):
        active = np.flatnonzero(np.isnan(result))
        if active.size == 0:
            break
        a, b, fa, fb = lo[active], hi[active], f_lo[active], f_hi[active]
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(fb > fa, b - fb * (b - a) / (fb - fa), 0.5 * (a + b))
        d = np.where((d > a) & (d < b), d, 0.5 * (a + b))
        f_d = cdf(d, active) - target
        narrow = b - a <= _SOLVER_TOL_REL * np.maximum(np.abs(a) + np.abs(b), 1.0)
        result[active] = np.where((np.abs(f_d) <= _SOLVER_TOL_P) | narrow, d, np.nan)
        up = f_d > 0  # the root is below d: d becomes the upper end
        last = side[active]
        fa = np.where(up & (last == 1), 0.5 * fa, fa)
        fb = np.where(~up & (last == -1), 0.5 * fb, fb)
        hi[active], f_hi[active] = np.where(up, d, b), np.where(up, f_d, fb)
        lo[active], f_lo[active] = np.where(up, a, d), np.where(up, fa, f_d)
        side[active] = np.where(up, 1, -1)
    return np.where(np.isnan(result), 0.5 * (lo + hi), result)


def compare_distributions(
    dist_a: MixtureDistribution,
    dist_b: MixtureDistribution,
    *,
    threshold_s: float | None = None,
    n_levels: int = QUADRATURE_LEVELS,
) -> pd.DataFrame:
    """Compare two predictives of the same trips, pair by pair (see the module notes).

    Parameters
    ----------
    dist_a, dist_b : MixtureDistribution
        Model A's and model B's predictives of the same n trips (seconds), as
        :meth:`~vrvm.TravelTimeModel.predict_dist` gives them (a
        :class:`~vrvm.engine.recalibrated.RecalibratedMixture` is read through its map),
        each of at least two members.
    threshold_s : float, optional
        A travel time t in seconds: also each side's P(T <= t) and its change.
    n_levels : int, default=:data:`QUADRATURE_LEVELS`
        L, the quadrature's quantile levels (P(slower) exact to 1/(2L) at worst).

    Returns
    -------
    pandas.DataFrame
        One row per trip, columns :func:`compare_columns` (seconds, probabilities in
        [0, 1], ``within_uncertainty`` bool).

    Notes
    -----
    T_A and T_B are taken as independent given the predictives: two models' beliefs
    about one trip compared as two random travel times. P(slower) = P(T_B > T_A) is
    the midpoint rule at L levels of the integral over A's quantile levels of B's
    survival function; the interval of T_B - T_A is that of the discretised
    convolution (module notes).

    Examples
    --------
    Two log-normal predictives, B 30 % slower, and A against itself:

    >>> a = MixtureDistribution(np.log([[600.0, 600.0], [660.0, 660.0]]), 0.3,
    ...                         transform="log")
    >>> b = MixtureDistribution(np.log([[780.0, 600.0], [858.0, 660.0]]), 0.3,
    ...                         transform="log")
    >>> table = compare_distributions(a, b, threshold_s=900)
    >>> table["p_slower"].round(3).tolist()
    [0.729, 0.5]
    >>> table["median_change_s"].round(1).tolist()
    [188.8, 0.0]
    >>> table["within_uncertainty"].tolist()
    [False, True]
    """
    n = len(dist_a)
    if len(dist_b) != n:
        raise ValueError(f"the predictives are of {n} and {len(dist_b)} trips: expected the same")
    for side, dist in (("A", dist_a), ("B", dist_b)):
        if dist.n_members < 2:
            raise ValueError(
                f"model {side} has one member: the change of the median needs the spread "
                "of at least two members (train it with --members 2 or more)"
            )
    n_levels = int(n_levels)
    if n_levels < 8:
        raise ValueError(f"n_levels must be an integer >= 8, got {n_levels!r}")
    columns = compare_columns(threshold_s)
    u = (np.arange(n_levels) + 0.5) / n_levels
    qa = _monotone(dist_a.ppf(u[:, None]))
    qb = _monotone(dist_b.ppf(u[:, None]))
    three = np.array([[(1 - INTERVAL_LEVEL) / 2], [0.5], [(1 + INTERVAL_LEVEL) / 2]])
    lo_a, median_a, hi_a = dist_a.ppf(three)
    lo_b, median_b, hi_b = dist_b.ppf(three)
    total = np.zeros(n)
    for start in range(0, n_levels, _SF_LEVELS):
        total += dist_b.sf(qa[start : start + _SF_LEVELS]).sum(axis=0)
    survival = total / n_levels
    diff_lo, diff_hi = _difference_quantiles(
        qa, qb, [(1 - INTERVAL_LEVEL) / 2, (1 + INTERVAL_LEVEL) / 2]
    )
    change = median_b - median_a
    change_lo, change_hi = _median_change_interval(
        member_medians(dist_a), member_medians(dist_b), change
    )
    out = {
        "median_a_s": median_a,
        "median_b_s": median_b,
        "p_slower": np.clip(survival, 0.0, 1.0),
        "lower90_a_s": lo_a,
        "upper90_a_s": hi_a,
        "lower90_b_s": lo_b,
        "upper90_b_s": hi_b,
        "median_change_s": change,
        "median_change_lower90_s": change_lo,
        "median_change_upper90_s": change_hi,
        "within_uncertainty": (change_lo <= 0) & (change_hi >= 0),
        "diff_lower90_s": diff_lo,
        "diff_upper90_s": diff_hi,
    }
    if threshold_s is not None:
        t = _check_threshold(threshold_s)
        p_a, p_b = dist_a.prob_within(t), dist_b.prob_within(t)
        out.update(dict(zip(columns[-3:], (p_a, p_b, p_b - p_a), strict=True)))
    return pd.DataFrame(out, columns=columns)


# ---------------------------------------------------------------------- same area or not
def _areas(model_a: TravelTimeModel, model_b: TravelTimeModel) -> tuple[ModelArea, ModelArea]:
    return model_area(model_a), model_area(model_b)


def check_comparable(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    points: pd.DataFrame | None = None,
) -> None:
    """Raise :class:`DifferentAreasError` unless the two models can be compared there.

    Parameters
    ----------
    model_a, model_b : TravelTimeModel
        The two fitted models.
    points : pandas.DataFrame, optional
        Origins and destinations (``lat``, ``lon`` and a ``label``, as
        :func:`~vrvm.services.answers.matrix.points_table` gives them), each of which
        must lie inside both models' training areas.

    Raises
    ------
    DifferentAreasError
        The models' time zones differ, their training areas do not overlap, or points
        lie outside either area (the first few named, with the model).
    """
    name_a, name_b = model_name(model_a), model_name(model_b)
    if model_a.tz_ != model_b.tz_:
        raise DifferentAreasError(
            f"the models are of different areas: A (“{name_a}”) is in the time zone "
            f"{model_a.tz_}, B (“{name_b}”) in {model_b.tz_}; compare two models of the "
            "same city (two date ranges or two versions of the same trips)"
        )
    area_a, area_b = _areas(model_a, model_b)
    if area_a.bbox is not None and area_b.bbox is not None and not _overlap(area_a, area_b):
        raise DifferentAreasError(
            f"the models are of different areas: the training areas of A (“{name_a}”) "
            f"and B (“{name_b}”) do not overlap; compare two models of the same city"
        )
    if points is None or len(points) == 0:
        return
    lat = points["lat"].to_numpy(np.float64)
    lon = points["lon"].to_numpy(np.float64)
    labels = points["label"].to_numpy() if "label" in points else np.arange(len(points))
    problems = []
    for side, name, area in (("A", name_a, area_a), ("B", name_b, area_b)):
        if area.bbox is None:
            continue  # the model kept no training extent: nothing to check against
        outside = np.flatnonzero(~area.inside(lat, lon))
        if outside.size:
            shown = ", ".join(f"{labels[i]} ({lat[i]:.5f}, {lon[i]:.5f})" for i in outside[:_SHOWN])
            more = f" and {outside.size - _SHOWN:,} more" if outside.size > _SHOWN else ""
            problems.append(f"outside the training area of {side} (“{name}”): {shown}{more}")
    if problems:
        raise DifferentAreasError(
            "points " + "; points ".join(problems) + ": compare the models only where both "
            "were trained"
        )


def _overlap(a: ModelArea, b: ModelArea) -> bool:
    a_lat0, a_lon0, a_lat1, a_lon1 = a.bbox
    b_lat0, b_lon0, b_lat1, b_lon1 = b.bbox
    return a_lat0 <= b_lat1 and b_lat0 <= a_lat1 and a_lon0 <= b_lon1 and b_lon0 <= a_lon1


def _departure(model: TravelTimeModel, departure) -> pd.Timestamp:
    return local_time(departure, model.tz_, "departure")


def _compare_queries(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    queries: pd.DataFrame,
    threshold_s: float | None,
    n_levels: int,
) -> pd.DataFrame:
    return compare_distributions(
        model_a.predict_dist(queries),
        model_b.predict_dist(queries),
        threshold_s=threshold_s,
        n_levels=n_levels,
    )


def _points(*places: Place) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "label": [p.label for p in places],
            "lat": [p.lat for p in places],
            "lon": [p.lon for p in places],
        }
    )


# ---------------------------------------------------------------- pair, reach, matrix
def compare_trip(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    origin: Place,
    dest: Place,
    departure,
    *,
    threshold_s: float | None = None,
    n_levels: int = QUADRATURE_LEVELS,
) -> pd.DataFrame:
    """One origin-destination pair under both models: a one-row table.

    Columns ``origin``, ``destination`` (the places' labels) and
    :func:`compare_columns`. A naive ``departure`` is read in the models' time zone.
    Raises :class:`DifferentAreasError` for models or places that cannot be compared.
    """
    check_comparable(model_a, model_b, _points(origin, dest))
    stamp = _departure(model_a, departure)
    queries = query_frame(origin, dest, stamp)
    table = _compare_queries(model_a, model_b, queries, threshold_s, n_levels)
    table.insert(0, "origin", origin.label)
    table.insert(1, "destination", dest.label)
    return table


def compare_reach(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    area: ServiceArea,
    origin: Place,
    departure,
    *,
    threshold_s: float | None = None,
    n_levels: int = QUADRATURE_LEVELS,
) -> pd.DataFrame:
    """A base's reach under both models: from ``origin`` to every zone of ``area``.

    Returns the area's grid (``zone``, ``number``, ``label``, ``lat``, ``lon``,
    ``boundary``; for polygon zones also ``name`` and ``geometry``) with
    :func:`compare_columns`, one row per zone (the zone's point, as
    :func:`~vrvm.services.planning.coverage.coverage_grid`). Zones outside either model's
    training area raise :class:`DifferentAreasError` (build the area on the trips both
    models share).
    """
    grid = area.grid
    zones = pd.DataFrame({"label": grid["label"], "lat": grid["lat"], "lon": grid["lon"]})
    check_comparable(model_a, model_b, pd.concat([_points(origin), zones], ignore_index=True))
    stamp = _departure(model_a, departure)
    queries = query_frame(origin, grid, stamp)
    table = _compare_queries(model_a, model_b, queries, threshold_s, n_levels)
    out = grid[["zone", "number", "label", "lat", "lon", "boundary"]].copy()
    if "geometry" in grid.columns:
        out.insert(3, "name", grid["place"].to_numpy())
        out["geometry"] = grid["geometry"].to_numpy()
    for column in table.columns:
        out[column] = table[column].to_numpy()
    return out.reset_index(drop=True)


class _Batch:
    """Compares the pairs [start, stop) of a matrix (called by a worker thread)."""

    def __init__(self, model_a, model_b, origins, destinations, stamp, threshold_s, n_levels):
        self.model_a, self.model_b = model_a, model_b
        self.origins, self.destinations = origins, destinations
        self.stamp = stamp
        self.threshold_s = threshold_s
        self.n_levels = n_levels

    def __call__(self, bounds: tuple[int, int]) -> pd.DataFrame:
        pairs = np.arange(*bounds, dtype=np.int64)
        i, j = np.divmod(pairs, len(self.destinations))
        start = pd.DatetimeIndex(np.full(i.size, self.stamp.value, dtype="datetime64[ns]"))
        queries = pd.DataFrame(
            {
                "origin_lat": self.origins["lat"].to_numpy(np.float64)[i],
                "origin_lon": self.origins["lon"].to_numpy(np.float64)[i],
                "dest_lat": self.destinations["lat"].to_numpy(np.float64)[j],
                "dest_lon": self.destinations["lon"].to_numpy(np.float64)[j],
                "start_time": start.tz_localize("UTC").tz_convert(self.stamp.tz),
            }
        )
        table = _compare_queries(
            self.model_a, self.model_b, queries, self.threshold_s, self.n_levels
        )
        table.insert(0, "origin", self.origins["label"].to_numpy()[i])
        table.insert(1, "destination", self.destinations["label"].to_numpy()[j])
        return table


def iter_compare_matrix(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    origins: pd.DataFrame,
    destinations: pd.DataFrame,
    departure,
    *,
    threshold_s: float | None = None,
    batch_pairs: int | None = None,
    threads: int | None = None,
    progress: ProgressCallback | None = None,
    n_levels: int = QUADRATURE_LEVELS,
) -> Iterator[pd.DataFrame]:
    """Every origin-destination pair under both models, batch by batch.

    Parameters
    ----------
    model_a, model_b : TravelTimeModel
        The two fitted models (same time zone, see :func:`check_comparable`).
    origins, destinations : pandas.DataFrame
        Points with ``label``, ``lat`` and ``lon``
        (:func:`~vrvm.services.answers.matrix.read_points`).
    departure : datetime-like
        The departure of every pair; a naive time is read in the models' time zone.
    threshold_s : float, optional
        Also each side's P(T <= threshold_s) and its change.
    batch_pairs : int, optional
        Pairs per table yielded (default :data:`COMPARE_BATCH_PAIRS`).
    threads : int, optional
        Threads comparing batches at once (default: one per core, at most 8).
    progress : callable, optional
        ``progress(pairs_done, pairs_total, elapsed_s, "pairs")``, before the first batch
        and after each.
    n_levels : int, default=:data:`QUADRATURE_LEVELS`
        Quantile levels of the quadrature.

    Yields
    ------
    pandas.DataFrame
        The pairs origin by origin, columns ``origin``, ``destination`` and
        :func:`compare_columns`. Checks run before the first batch is computed.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> from vrvm.services.answers.matrix import points_table
    >>> trips = synthetic_city(800, seed=0)
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(trips)
    >>> places = points_table(trips.head(2)[["origin_lat", "origin_lon"]].set_axis(
    ...     ["lat", "lon"], axis=1))
    >>> table = next(iter_compare_matrix(model, model, places, places, "2024-03-12 08:00"))
    >>> len(table), bool((table["p_slower"].round(6) == 0.5).all())
    (4, True)
    """
    for name, points in (("origins", origins), ("destinations", destinations)):
        if not {"label", "lat", "lon"} <= set(points.columns):
            raise ValueError(f"{name} must have columns label, lat and lon (points_table)")
        if len(points) == 0:
            raise ValueError(f"no {name}")
    batch_pairs = COMPARE_BATCH_PAIRS if batch_pairs is None else int(batch_pairs)
    if batch_pairs < 1:
        raise ValueError(f"batch_pairs must be a positive integer, got {batch_pairs!r}")
    compare_columns(threshold_s)  # a bad threshold fails before any work
    check_comparable(model_a, model_b, pd.concat([origins, destinations], ignore_index=True))
    stamp = _departure(model_a, departure)
    return iter_pair_batches(
        _Batch(model_a, model_b, origins, destinations, stamp, threshold_s, n_levels),
        len(origins) * len(destinations),
        batch_pairs,
        threads,
        progress,
    )


def compare_matrix(
    model_a: TravelTimeModel,
    model_b: TravelTimeModel,
    origins: pd.DataFrame,
    destinations: pd.DataFrame,
    departure,
    *,
    threshold_s: float | None = None,
    max_pairs: int = 40_000,
    threads: int | None = None,
) -> pd.DataFrame:
    """The whole comparison as one table (:func:`iter_compare_matrix`), up to ``max_pairs``."""
    total = len(origins) * len(destinations)
    if total > max_pairs:
        raise ValueError(
            f"{total:,} pairs is more than {max_pairs:,}: use iter_compare_matrix "
            "(vrvm compare), which writes them batch by batch"
        )
    tables = list(
        iter_compare_matrix(
            model_a,
            model_b,
            origins,
            destinations,
            departure,
            threshold_s=threshold_s,
            threads=threads,
        )
    )
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------- summary
@dataclass
class CompareTally:
    """The summary of a comparison read batch by batch (:meth:`add`, :meth:`summary`).

    Keeps each pair's change of the median (8 bytes a pair) for the median change.
    """

    confident: float = CONFIDENT
    n_pairs: int = 0
    n_slower: int = 0
    n_faster: int = 0
    n_within: int = 0
    _changes: list = field(default_factory=list, repr=False)

    def add(self, table: pd.DataFrame) -> None:
        """Count a batch of compared pairs."""
        p = table["p_slower"].to_numpy(np.float64)
        self.n_pairs += len(table)
        self.n_slower += int((p > self.confident).sum())
        self.n_faster += int((p < 1.0 - self.confident).sum())
        self.n_within += int(table["within_uncertainty"].to_numpy(bool).sum())
        self._changes.append(table["median_change_s"].to_numpy(np.float64))

    def summary(self) -> dict[str, float | int]:
        """Pairs; slower and faster with P(slower) beyond ``confident``; the median of the
        changes of the median (s); pairs whose change is within the models' uncertainty."""
        changes = np.concatenate(self._changes) if self._changes else np.zeros(0)
        n = max(self.n_pairs, 1)
        return {
            "n_pairs": self.n_pairs,
            "confident": float(self.confident),
            "n_slower": self.n_slower,
            "share_slower": self.n_slower / n,
            "n_faster": self.n_faster,
            "share_faster": self.n_faster / n,
            "median_change_s": float(np.median(changes)) if changes.size else float("nan"),
            "n_within_uncertainty": self.n_within,
            "share_within_uncertainty": self.n_within / n,
        }


def compare_summary(table: pd.DataFrame, confident: float = CONFIDENT) -> dict[str, float | int]:
    """What changed, in a few numbers (see :meth:`CompareTally.summary`).

    Examples
    --------
    >>> table = pd.DataFrame({"p_slower": [0.95, 0.5, 0.02], "median_change_s": [60.0, 0.0,
    ...                       -30.0], "within_uncertainty": [False, True, False]})
    >>> s = compare_summary(table)
    >>> s["n_slower"], s["n_faster"], s["median_change_s"], s["n_within_uncertainty"]
    (1, 1, 0.0, 1)
    """
    if not 0.5 <= float(confident) < 1:
        raise ValueError(f"confident must be in [0.5, 1), got {confident!r}")
    tally = CompareTally(confident=float(confident))
    tally.add(table)
    return tally.summary()


# ------------------------------------------------------------------------------- map
def _signed_edges(magnitudes: np.ndarray, default: tuple[float, ...]) -> np.ndarray:
    """Bin edges symmetric about 0 with a middle bin around it, from |values|."""
    magnitudes = magnitudes[np.isfinite(magnitudes)]
    if magnitudes.size == 0 or float(magnitudes.max()) == 0.0:
        positive = np.asarray(default, dtype=np.float64)
    else:
        positive = nice_edges(np.append(magnitudes, 0.0), 3)
    positive = positive[positive > 0]
    return np.concatenate([-positive[::-1], positive])


def compare_colors(
    table: pd.DataFrame, metric: str, threshold_s: float | None = None
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Diverging fill colours of compared zones and their legend (red: worse under B).

    ``metric``: ``"median"`` (change of the median, minutes; bins symmetric about 0),
    ``"probability"`` (change of P(T <= threshold_s), percentage points; needs the
    threshold's columns) or ``"slower"`` (P(slower) itself, white about 1/2).
    """
    if metric == "median":
        minutes = table["median_change_s"].to_numpy(np.float64) / 60.0
        edges = _signed_edges(np.abs(minutes), _DEFAULT_MINUTES)
        colours = binned_colors(minutes, edges, CHANGE_PALETTE)
        return colours, legend_entries(edges, CHANGE_PALETTE, lambda v: f"{v:+g} min")
    if metric == "probability":
        if threshold_s is None:
            raise ValueError("the probability map needs threshold_s (the T of P(T <= T))")
        column = compare_columns(threshold_s)[-1]
        if column not in table.columns:
            raise ValueError(f"no column {column!r}: compare with threshold_s={threshold_s!r}")
        change = table[column].to_numpy(np.float64)
        edges = _signed_edges(np.zeros(0), _PROBABILITY_CHANGE_EDGES)
        palette = CHANGE_PALETTE[::-1]  # more likely within T under B is better: blue
        colours = binned_colors(change, edges, palette)
        return colours, legend_entries(edges, palette, lambda v: f"{100 * v:+g} pp")
    if metric == "slower":
        p = table["p_slower"].to_numpy(np.float64)
        edges = np.asarray(_SLOWER_EDGES)
        colours = binned_colors(p, edges, CHANGE_PALETTE)
        return colours, legend_entries(edges, CHANGE_PALETTE, lambda v: f"{100 * v:g} %")
    raise ValueError(f"metric must be one of {COMPARE_METRICS}, got {metric!r}")


def compare_map(
    table: pd.DataFrame, metric: str, threshold_s: float | None = None
) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """Fill colours (RGBA), tooltips (plain text, lines split by "\\n") and the legend of
    a comparison map (:func:`compare_reach`'s table).

    Zones whose change is within the models' own uncertainty are faded
    (:func:`~vrvm.services.display.colours.faded`, as thin data on the coverage map),
    say so in their tooltip, and get the legend entry :data:`WITHIN_LEGEND`.
    """
    fill, legend = compare_colors(table, metric, threshold_s)
    minutes = {c: table[c].to_numpy(np.float64) / 60.0 for c in compare_columns() if c[-2:] == "_s"}
    tips = [
        f"A: median {ma:.1f} min (90 %: {la:.0f}-{ua:.0f})"
        f"\nB: median {mb:.1f} min (90 %: {lb:.0f}-{ub:.0f})"
        f"\nchange of the median {dm:+.1f} min (members: {dl:+.1f} to {dh:+.1f})"
        f"\nP(slower under B) = {100 * p:.0f} %"
        for ma, la, ua, mb, lb, ub, dm, dl, dh, p in zip(
            minutes["median_a_s"],
            minutes["lower90_a_s"],
            minutes["upper90_a_s"],
            minutes["median_b_s"],
            minutes["lower90_b_s"],
            minutes["upper90_b_s"],
            minutes["median_change_s"],
            minutes["median_change_lower90_s"],
            minutes["median_change_upper90_s"],
            table["p_slower"],
            strict=True,
        )
    ]
    if threshold_s is not None and compare_columns(threshold_s)[-1] in table.columns:
        a, b, _ = compare_columns(threshold_s)[-3:]
        label = f"{float(threshold_s) / 60:g} min"
        tips = [
            tip + f"\nP(≤ {label}): A {100 * pa:.0f} %, B {100 * pb:.0f} %"
            for tip, pa, pb in zip(tips, table[a], table[b], strict=True)
        ]
    within = table["within_uncertainty"].to_numpy(bool)
    fill = faded(fill, within)
    tips = [
        tip + ("\nWithin the models' own uncertainty" if w else "")
        for tip, w in zip(tips, within, strict=True)
    ]
    if within.any():
        legend = [*legend, (WITHIN_LEGEND, THIN_SWATCH)]
    return fill, tips, legend
