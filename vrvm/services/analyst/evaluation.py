"""Models side by side on the same hold-out trips: scores, predicted vs observed, calibration.

:func:`compare_models` predicts the hold-out trips once per model and derives from that
one predictive everything the Retrain page compares: the metrics of
:func:`vrvm.evaluate_distribution`, observed vs predicted medians with intervals, the
coverage of central intervals at every level, and the PIT histogram.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vrvm.engine.metrics import evaluate_distribution
from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.display.units import METRICS, metric_label, metric_value
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.table import check_trips, travel_times

__all__ = [
    "CALIBRATION_LEVELS",
    "ModelScores",
    "calibration_curve",
    "compare_models",
    "metrics_table",
    "pit_frame",
    "predicted_vs_observed",
    "score_model",
]

CALIBRATION_LEVELS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class ModelScores:
    """One model on the hold-out trips.

    Attributes
    ----------
    metrics : dict
        :func:`vrvm.evaluate_distribution` of the model's predictive (seconds).
    predicted_vs_observed : pandas.DataFrame
        A sample of trips: observed and predicted median with a central interval
        (:func:`predicted_vs_observed`).
    calibration : pandas.DataFrame
        Observed vs nominal coverage of central intervals (:func:`calibration_curve`).
    pit : pandas.DataFrame
        The PIT histogram as bins (:func:`pit_frame`).
    """

    metrics: dict[str, Any]
    predicted_vs_observed: pd.DataFrame
    calibration: pd.DataFrame
    pit: pd.DataFrame


def predicted_vs_observed(
    dist: MixtureDistribution,
    y: np.ndarray,
    *,
    level: float = 0.8,
    max_points: int = 400,
    seed: int = 0,
) -> pd.DataFrame:
    """Observed vs predicted median with a central interval, in minutes (a sample).

    Columns ``observed_min``, ``median_min``, ``lower_min``, ``upper_min`` and
    ``inside`` (the observation lies in the interval).
    """
    rows = np.arange(len(y))
    if len(y) > max_points:
        rows = np.sort(np.random.default_rng(seed).choice(len(y), max_points, replace=False))
    dist = dist[rows]
    lo, hi = dist.interval(level)
    frame = pd.DataFrame(
        {
            "observed_min": np.asarray(y, dtype=float)[rows] / 60.0,
            "median_min": dist.median() / 60.0,
            "lower_min": lo / 60.0,
            "upper_min": hi / 60.0,
        }
    )
    frame["inside"] = (frame["observed_min"] >= frame["lower_min"]) & (
        frame["observed_min"] <= frame["upper_min"]
    )
    return frame


def calibration_curve(
    dist: MixtureDistribution, y: np.ndarray, levels: Sequence[float] = CALIBRATION_LEVELS
) -> pd.DataFrame:
    """Observed coverage of central intervals at each nominal level (the diagonal is ideal)."""
    rows = []
    for level in levels:
        lo, hi = dist.interval(level)
        rows.append({"nominal": float(level), "observed": float(np.mean((y >= lo) & (y <= hi)))})
    return pd.DataFrame(rows)


def pit_frame(metrics: Mapping[str, Any]) -> pd.DataFrame:
    """The PIT histogram of :func:`vrvm.evaluate_distribution` as bins (1 = calibrated)."""
    pit = metrics.get("pit") or {}
    edges = np.asarray(pit.get("bin_edges") or [], dtype=float)
    density = pit.get("density") or []
    if edges.size < 2:
        return pd.DataFrame(columns=["bin_mid", "bin_lo", "bin_hi", "density"])
    return pd.DataFrame(
        {
            "bin_mid": 0.5 * (edges[:-1] + edges[1:]),
            "bin_lo": edges[:-1],
            "bin_hi": edges[1:],
            "density": [np.nan if d is None else d for d in density],
        }
    )


def score_model(model: TravelTimeModel, holdout: pd.DataFrame) -> ModelScores:
    """Everything the comparison shows of one model, from one prediction of ``holdout``."""
    holdout = check_trips(holdout, with_target=True, name="holdout")
    y = travel_times(holdout, positive=False)
    dist = model.predict_dist(holdout)
    metrics = evaluate_distribution(dist, y)
    return ModelScores(
        metrics=metrics,
        predicted_vs_observed=predicted_vs_observed(dist, y),
        calibration=calibration_curve(dist, y),
        pit=pit_frame(metrics),
    )


def compare_models(
    models: Mapping[str, TravelTimeModel], holdout: pd.DataFrame
) -> dict[str, ModelScores]:
    """:func:`score_model` of each model on the same hold-out trips."""
    return {name: score_model(model, holdout) for name, model in models.items()}


def _score_rows(metrics: Mapping[str, Any], units: str) -> dict[str, float | None]:
    median = metrics.get("median") or {}
    rows: dict[str, float | None] = {
        metric_label("n"): metrics.get("n"),
        metric_label("crps_s", units): metric_value("crps_s", metrics.get("crps_s"), units),
    }
    for name in ("mae_s", "rmse_s", "mape_pct"):
        label = metric_label(name, units, label=f"{METRICS[name][0]} of median")
        rows[label] = metric_value(name, median.get(name), units)
    rows[metric_label("nll")] = metrics.get("nll")
    for entry in metrics.get("intervals") or []:
        pct = f"{100 * entry['level']:g} %"
        coverage = metric_label("coverage", label=f"{pct} interval coverage")
        rows[coverage] = metric_value("coverage", entry.get("coverage"))
        width = metric_label("mean_width_s", units, label=f"{pct} interval width")
        rows[width] = metric_value("mean_width_s", entry.get("mean_width_s"), units)
    return rows


def metrics_table(
    metrics_by_model: Mapping[str, Mapping[str, Any]], units: str = "min"
) -> pd.DataFrame:
    """Hold-out scores side by side (rows: scores, columns: models), each row's unit in
    its name (:mod:`vrvm.services.display.units`): times in ``units``, NLL in nats, coverage in %.

    Lower is better for errors, CRPS and NLL; coverage should be near its level.

    Examples
    --------
    >>> scores = {"n": 10, "crps_s": 120.0, "nll": 6.5, "median": {"mae_s": 90.0},
    ...           "intervals": [{"level": 0.9, "coverage": 0.8, "mean_width_s": 600.0}]}
    >>> metrics_table({"model": scores})["model"].dropna().to_dict()
    ... # doctest: +NORMALIZE_WHITESPACE
    {'trips scored': 10.0, 'CRPS (min)': 2.0, 'MAE of median (min)': 1.5, 'NLL (nats)': 6.5,
     '90 % interval coverage (%)': 80.0, '90 % interval width (min)': 10.0}
    """
    columns = {name: _score_rows(metrics, units) for name, metrics in metrics_by_model.items()}
    frame = pd.DataFrame(columns, dtype=float)
    frame.index.name = "score"
    return frame
