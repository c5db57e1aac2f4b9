"""Predictions for a file of queries, one output row per input row (``vrvm predict``).

Queries are read with :func:`read_queries`, which drops only the rows that cannot be
predicted (unreadable time, missing or invalid coordinates) or carry a travel time that
cannot be scored; :func:`prediction_table` then gives every input row its predictive
mean, median, standard deviation and quantiles in seconds, and, for rows that carry a
travel time, the log density, the PIT value and the CRPS of that time.
Batches are predicted one per core, in order, by :func:`vrvm.engine.in_threads`
(``vrvm predict``, ``vrvm matrix``).
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
import pandas as pd

from vrvm.engine import CORE_THREADS
from vrvm.trips.files.cleaning import CleaningConfig, CleaningReport
from vrvm.trips.files.reader import read_trips
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = [
    "PREDICTION_COLUMNS",
    "PREDICT_THREADS",
    "QUERY_CLEANING",
    "SCORE_COLUMNS",
    "prediction_table",
    "read_queries",
]

PREDICTION_COLUMNS = ("mean_s", "median_s", "std_s", "q05_s", "q25_s", "q75_s", "q95_s")
SCORE_COLUMNS = ("logpdf", "cdf", "crps")
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
PREDICT_THREADS = CORE_THREADS
"""Threads that predict batches at once (:func:`~vrvm.engine.in_threads`)."""

# Queries are only dropped when they cannot be predicted (unreadable time, missing or
# invalid coordinates) or carry a travel time that cannot be scored (zero or negative):
# no plausibility thresholds, no duplicate removal, no distance limit.
QUERY_CLEANING = CleaningConfig(
    min_duration_s=None,
    max_duration_s=None,
    max_speed_kmh=None,
    max_radius_km=None,
    drop_duplicates=False,
)


def read_queries(
    path_or_buffer: str | os.PathLike[str] | bytes | IO[bytes],
    model: TravelTimeModel,
    *,
    tz: str | None = None,
    **options: Any,
) -> tuple[pd.DataFrame, CleaningReport]:
    """Read a file of queries (travel times optional) with every row's line number.

    Naive times are read in ``tz``, by default the model's time zone; ``options`` are
    the layout options of :func:`vrvm.read_trips` (``schema``, ``column_map``, the
    formats, ``zones``).
    """
    return read_trips(
        path_or_buffer,
        tz=tz or model.tz_,
        cleaning=QUERY_CLEANING,
        require_travel_time=False,
        row_numbers=True,
        **options,
    )


def prediction_table(
    model: TravelTimeModel, queries: pd.DataFrame, report: CleaningReport
) -> pd.DataFrame:
    """Predictions for a file of queries: one row per input row, in file order.

    Columns: ``row``, the predictive summaries and, when some rows carry a travel
    time, that time and its scores. ``queries`` is read with ``row_numbers=True``;
    the rows ``report`` dropped (and cells without a travel time) are NaN.
    """
    kept_rows = queries["row"].to_numpy(dtype=np.int64)
    rows = np.sort(np.concatenate([kept_rows, *report.dropped_rows.values()]))
    truth = queries["travel_time_s"].to_numpy(dtype=np.float64)
    known = np.flatnonzero(np.isfinite(truth))
    columns = [*PREDICTION_COLUMNS]
    if known.size:
        columns += ["travel_time_s", *SCORE_COLUMNS]
    out = pd.DataFrame(np.nan, index=np.arange(len(rows)), columns=columns)
    out.insert(0, "row", rows)
    if len(queries) == 0:
        return out
    at = np.searchsorted(rows, kept_rows)  # positions of the kept rows in the output
    dist = model.predict_dist(queries)
    q05, q25, q50, q75, q95 = dist.ppf(np.array(QUANTILES)[:, None])
    predicted = {
        "mean_s": dist.mean(),
        "median_s": q50,
        "std_s": dist.std(),
        "q05_s": q05,
        "q25_s": q25,
        "q75_s": q75,
        "q95_s": q95,
    }
    for column, values in predicted.items():
        out.loc[at, column] = values
    if known.size:
        scored, y = dist[known], truth[known]
        out.loc[at[known], "travel_time_s"] = y
        out.loc[at[known], "logpdf"] = scored.logpdf(y)
        out.loc[at[known], "cdf"] = scored.cdf(y)
        out.loc[at[known], "crps"] = scored.crps(y)
    return out
