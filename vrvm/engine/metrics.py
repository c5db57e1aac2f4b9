"""Scores of probabilistic travel-time forecasts against observed travel times.

:func:`evaluate_distribution` scores a batch of predictive distributions (one per
trip, typically the :class:`~vrvm.engine.mixture.MixtureDistribution` returned by
``TravelTimeModel.predict_dist``) against the observed travel times, on the scale of
the observations (seconds):

* point errors of the median and of the mean (RMSE, MAE, MAPE, bias);
* proper scoring rules: the negative log predictive density (NLL) and the
  continuous ranked probability score (CRPS);
* calibration: the coverage and mean width of central prediction intervals, and the
  histogram of the probability integral transform (PIT) values F(y).

The result is a plain dict of JSON types, ready for ``json.dumps``, a CLI table or a
dashboard.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DEFAULT_LEVELS", "evaluate_distribution", "pit_histogram", "point_errors"]

#: Central interval levels scored by default.
DEFAULT_LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)


def _finite_or_none(value: float) -> float | None:
    """A Python float, or None where JSON has no number (NaN, +-inf)."""
    value = float(value)
    return value if math.isfinite(value) else None


def point_errors(prediction, y_true) -> dict[str, float | None]:
    """Errors of point predictions, in the units of ``y_true``.

    Parameters
    ----------
    prediction : array-like of shape (n,)
        Point predictions (for example the predictive median).
    y_true : array-like of shape (n,)
        Observations.

    Returns
    -------
    dict
        ``rmse_s`` (root mean squared error), ``mae_s`` (mean absolute error),
        ``mape_pct`` (mean of ``|error| / |y|``, in percent; None if some ``y`` is 0)
        and ``bias_s`` (mean of ``prediction - y``). Values that are not finite (an
        infinite predicted mean) are None.

    Examples
    --------
    >>> point_errors([100.0, 300.0], [200.0, 300.0])
    {'rmse_s': 70.71067811865476, 'mae_s': 50.0, 'mape_pct': 25.0, 'bias_s': -50.0}
    """
    prediction = np.asarray(prediction, dtype=np.float64)
    y_true = np.asarray(y_true, dtype=np.float64)
    error = prediction - y_true
    with np.errstate(over="ignore", invalid="ignore"):
        rmse = np.sqrt(np.mean(error**2))
        mae = np.mean(np.abs(error))
        bias = np.mean(error)
        mape = np.nan if np.any(y_true == 0) else 100.0 * np.mean(np.abs(error / y_true))
    return {
        "rmse_s": _finite_or_none(rmse),
        "mae_s": _finite_or_none(mae),
        "mape_pct": _finite_or_none(mape),
        "bias_s": _finite_or_none(bias),
    }


def pit_histogram(pit, bins: int = 10) -> dict[str, list]:
    """Histogram of probability integral transform values on ``bins`` equal bins of [0, 1].

    Parameters
    ----------
    pit : array-like of float in [0, 1]
        PIT values F_i(y_i).
    bins : int, default=10
        Number of equal-width bins.

    Returns
    -------
    dict
        ``bin_edges`` (``bins + 1`` floats), ``counts`` (``bins`` integers; the last
        bin includes 1) and ``density`` (counts divided by the flat-histogram count
        ``n / bins``, so a calibrated forecast gives values near 1).

    Examples
    --------
    >>> pit_histogram([0.05, 0.3, 0.35, 0.99], bins=4)["counts"]
    [1, 2, 0, 1]
    """
    pit = np.asarray(pit, dtype=np.float64).ravel()
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts, _ = np.histogram(np.clip(pit, 0.0, 1.0), bins=edges)
    expected = pit.size / bins if pit.size else np.nan
    return {
        "bin_edges": [round(float(e), 12) for e in edges],
        "counts": [int(c) for c in counts],
        "density": [_finite_or_none(c / expected) for c in counts],
    }


def _check_levels(levels: Sequence[float]) -> list[float]:
    try:
        values = [float(level) for level in levels]
    except (TypeError, ValueError):
        raise ValueError(
            f"levels must be a sequence of numbers in (0, 1), got {levels!r}"
        ) from None
    if not values or not all(0.0 < v < 1.0 for v in values):
        raise ValueError(
            f"levels must be a non-empty sequence of numbers in (0, 1), got {levels!r}"
        )
    return values


def evaluate_distribution(
    dist,
    y_true_seconds,
    levels: Sequence[float] = DEFAULT_LEVELS,
    pit_bins: int = 10,
) -> dict[str, Any]:
    r"""Score predictive distributions against observed travel times.

    Parameters
    ----------
    dist : MixtureDistribution, Normal or StudentT
        One predictive distribution per trip, on the scale of ``y_true_seconds``
        (for a log-target model, the mixture with ``transform="log"``, which answers
        in seconds). Anything with ``median``, ``mean``, ``logpdf``, ``cdf``,
        ``interval`` and ``crps`` methods works.
    y_true_seconds : array-like of shape (n,)
        Observed travel times, finite.
    levels : sequence of float, default=(0.5, 0.8, 0.9, 0.95)
        Probabilities of the central prediction intervals to score.
    pit_bins : int, default=10
        Number of bins of the PIT histogram.

    Returns
    -------
    dict
        JSON-serialisable (non-finite numbers become None):

        ``n``
            Number of trips.
        ``median``, ``mean``
            :func:`point_errors` of the predictive median and mean: ``rmse_s``,
            ``mae_s``, ``mape_pct``, ``bias_s``.
        ``nll``
            Mean negative log predictive density, -mean_i log p_i(y_i), with p a
            density per second (nats; lower is better).
        ``crps_s``
            Mean continuous ranked probability score, in seconds (lower is better).
        ``intervals``
            One dict per level: ``level``, ``coverage`` (share of trips with y inside
            the central interval, ends included; ideally ``level``) and
            ``mean_width_s``.
        ``pit``
            :func:`pit_histogram` of the PIT values F_i(y_i) (flat when calibrated).

    Raises
    ------
    ValueError
        If lengths differ, ``y_true_seconds`` is empty or not finite, or a parameter is
        out of range.

    Notes
    -----
    The NLL and CRPS are strictly proper scoring rules (Gneiting & Raftery 2007): in
    expectation they are minimised by the true distribution. The CRPS,
    CRPS(F, y) = E|T - y| - E|T - T'| / 2, is in the units of ``y`` and reduces to
    the absolute error for a point forecast. Under the log transform it is that of
    the variance-matched log-normal components (see
    :class:`~vrvm.engine.mixture.MixtureDistribution`). For a calibrated forecast the PIT
    values are uniform on [0, 1] and every interval covers its nominal share
    (Gneiting, Balabdaoui & Raftery 2007).

    References
    ----------
    .. [1] T. Gneiting and A. E. Raftery, "Strictly proper scoring rules, prediction,
       and estimation", JASA 102(477), 2007.
    .. [2] T. Gneiting, F. Balabdaoui and A. E. Raftery, "Probabilistic forecasts,
       calibration and sharpness", JRSS B 69(2), 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from vrvm.engine.mixture import MixtureDistribution
    >>> dist = MixtureDistribution(np.log([[300.0, 600.0]]), 0.2, transform="log")
    >>> scores = evaluate_distribution(dist, [300.0, 700.0], levels=(0.5, 0.9))
    >>> round(scores["median"]["mae_s"], 6)
    50.0
    >>> [(i["level"], i["coverage"]) for i in scores["intervals"]]
    [(0.5, 0.5), (0.9, 1.0)]
    >>> scores["pit"]["counts"]
    [0, 0, 0, 0, 0, 1, 0, 1, 0, 0]
    """
    levels = _check_levels(levels)
    if (
        isinstance(pit_bins, bool)
        or not isinstance(pit_bins, numbers.Integral)
        or not 1 <= pit_bins <= 10_000
    ):
        raise ValueError(f"pit_bins must be an integer between 1 and 10000, got {pit_bins!r}")
    y = np.asarray(y_true_seconds, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y_true_seconds must be one-dimensional, got shape {y.shape}")
    if y.size == 0:
        raise ValueError("y_true_seconds is empty: nothing to evaluate")
    if y.size != len(dist):
        raise ValueError(
            f"y_true_seconds has {y.size} values but the distribution describes {len(dist)} trips"
        )
    if not np.all(np.isfinite(y)):
        raise ValueError("y_true_seconds contains NaN or infinite values")

    intervals = []
    for level in levels:
        lo, hi = dist.interval(level)
        intervals.append(
            {
                "level": level,
                "coverage": float(np.mean((y >= lo) & (y <= hi))),
                "mean_width_s": _finite_or_none(np.mean(hi - lo)),
            }
        )
    with np.errstate(over="ignore", invalid="ignore"):
        nll = -np.mean(dist.logpdf(y))
        crps = np.mean(dist.crps(y))
    return {
        "n": int(y.size),
        "median": point_errors(dist.median(), y),
        "mean": point_errors(dist.mean(), y),
        "nll": _finite_or_none(nll),
        "crps_s": _finite_or_none(crps),
        "intervals": intervals,
        "pit": pit_histogram(dist.cdf(y), pit_bins),
    }
