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
from vrvm.trips.model import TravelTimeModel
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
    "share_inside_bbox",
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


def _score_rows(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    def minutes(value):
        return None if value is None else value / 60.0

    median = metrics.get("median") or {}
    rows: dict[str, float | None] = {
        "trips scored": metrics.get("n"),
        "CRPS (min)": minutes(metrics.get("crps_s")),
        "MAE of median (min)": minutes(median.get("mae_s")),
        "RMSE of median (min)": minutes(median.get("rmse_s")),
        "MAPE of median (%)": median.get("mape_pct"),
        "NLL (nats)": metrics.get("nll"),
    }
    for entry in metrics.get("intervals") or []:
        pct = f"{100 * entry['level']:g}"
        coverage = entry.get("coverage")
        rows[f"{pct} % interval coverage (%)"] = None if coverage is None else 100 * coverage
        rows[f"{pct} % interval width (min)"] = minutes(entry.get("mean_width_s"))
    return rows


def metrics_table(metrics_by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Hold-out scores side by side (rows: scores, columns: models), times in minutes.

    Lower is better for errors, CRPS and NLL; coverage should be near its level.
    """
    columns = {name: _score_rows(metrics) for name, metrics in metrics_by_model.items()}
    frame = pd.DataFrame(columns, dtype=float)
    frame.index.name = "score"
    return frame


def share_inside_bbox(model: TravelTimeModel, trips: pd.DataFrame) -> float:
    """Share of trips whose both ends lie in the model's training bounding box.

    Below about one half, the model was trained on another area and its scores on
    these trips are not comparable.
    """
    bbox = model.training_summary_.get("bbox")
    if not bbox or len(trips) == 0:
        return 0.0
    lat_lo, lon_lo, lat_hi, lon_hi = bbox
    inside = np.ones(len(trips), dtype=bool)
    for lat_c, lon_c in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        lat, lon = trips[lat_c].to_numpy(float), trips[lon_c].to_numpy(float)
        inside &= (lat >= lat_lo) & (lat <= lat_hi) & (lon >= lon_lo) & (lon <= lon_hi)
    return float(inside.mean())
