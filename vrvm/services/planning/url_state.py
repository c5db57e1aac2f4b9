"""Shareable views: the URL query parameters that restore an origin, a destination and a time.

:func:`to_query_params` writes the current view; :func:`from_query_params` reads a shared
link back, skipping (with a warning each) whatever it cannot use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import ODState, Place, parse_latlon, place_from_latlon
from vrvm.services.planning.coverage import COVERAGE_METRICS

__all__ = ["MODES", "ViewParams", "from_query_params", "to_query_params"]

MODES = ("od", "coverage")


@dataclass(frozen=True)
class ViewParams:
    """Everything a shared link restores."""

    state: ODState = field(default_factory=ODState)
    departure: pd.Timestamp | None = None
    threshold_min: float | None = None
    mode: str | None = None
    metric: str | None = None
    confidence: float | None = None


def to_query_params(
    state: ODState,
    departure: datetime | pd.Timestamp | None = None,
    *,
    threshold_min: float | None = None,
    mode: str | None = None,
    metric: str | None = None,
    confidence: float | None = None,
) -> dict[str, str]:
    """The view as URL query parameters (strings), for ``st.query_params``.

    ``o`` and ``d`` are ``lat,lon``; ``t`` is the local departure time
    ``YYYY-MM-DDTHH:MM``; ``thr`` the threshold in minutes; ``mode`` ``od`` or
    ``coverage``; ``metric`` ``median`` or ``probability``; ``conf`` the required
    probability.

    Examples
    --------
    >>> s = ODState(Place(-39.98, -30.01, None, "a"), None)
    >>> to_query_params(s, pd.Timestamp("2024-03-05 08:15", tz="UTC"), threshold_min=8)
    {'o': '-39.98,-30.01', 't': '2024-03-05T08:15', 'thr': '8'}
    """
    params: dict[str, str] = {}
    for key, place in (("o", state.origin), ("d", state.dest)):
        if place is not None:
            params[key] = f"{format_number(place.lat)},{format_number(place.lon)}"
    if departure is not None:
        params["t"] = pd.Timestamp(departure).strftime("%Y-%m-%dT%H:%M")
    if threshold_min is not None:
        params["thr"] = format_number(float(threshold_min))
    if mode is not None:
        params["mode"] = mode
    if metric is not None:
        params["metric"] = metric
    if confidence is not None:
        params["conf"] = format_number(float(confidence))
    return params


def from_query_params(
    params: Mapping[str, Any], area: ServiceArea, tz: str
) -> tuple[ViewParams, list[str]]:
    """Read a shared view back; invalid entries are skipped with a warning each.

    Returns
    -------
    (ViewParams, warnings)
    """
    warnings: list[str] = []

    def get(key: str) -> str | None:
        value = params.get(key)
        if isinstance(value, list | tuple):
            value = value[-1] if value else None
        return None if value is None else str(value)

    places: dict[str, Place | None] = {"o": None, "d": None}
    for key, what in (("o", "origin"), ("d", "destination")):
        raw = get(key)
        if raw is None:
            continue
        try:
            places[key] = place_from_latlon(area, *parse_latlon(raw))
        except ValueError as exc:
            warnings.append(f"ignored the {what} in the link: {exc}")
    departure = None
    if (raw := get("t")) is not None:
        try:
            departure = pd.Timestamp(raw)
            if pd.isna(departure):
                raise ValueError("empty time")
            departure = (
                departure.tz_localize(tz) if departure.tz is None else departure.tz_convert(tz)
            )
        except (ValueError, TypeError) as exc:
            warnings.append(f"ignored the departure time {raw!r} in the link ({exc})")
            departure = None
    threshold = None
    if (raw := get("thr")) is not None:
        try:
            threshold = float(raw)
            if not (math.isfinite(threshold) and 0 < threshold <= 24 * 60):
                raise ValueError
        except ValueError:
            warnings.append(f"ignored the threshold {raw!r} in the link (minutes, 0-1440)")
            threshold = None
    mode = get("mode")
    if mode is not None and mode not in MODES:
        warnings.append(f"ignored the mode {mode!r} in the link")
        mode = None
    metric = get("metric")
    if metric is not None and metric not in COVERAGE_METRICS:
        warnings.append(f"ignored the map metric {metric!r} in the link")
        metric = None
    confidence = None
    if (raw := get("conf")) is not None:
        try:
            confidence = float(raw)
            if not 0 < confidence < 1:
                raise ValueError
        except ValueError:
            warnings.append(f"ignored the probability {raw!r} in the link (between 0 and 1)")
            confidence = None
    view = ViewParams(
        state=ODState(places["o"], places["d"]),
        departure=departure,
        threshold_min=threshold,
        mode=mode,
        metric=metric,
        confidence=confidence,
    )
    return view, warnings
