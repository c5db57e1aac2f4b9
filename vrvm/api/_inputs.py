"""From validated request fields to the services' inputs: places, departures, errors.

A request's places must lie in the served model's zones, as in the dashboard: a point
outside every zone (the lake, another city) is refused with the nearest zone and how
far it is, because no training trip starts or ends there. Errors name the field the
way the validation errors do (``loc``: ``["body", "trips", 3, "origin"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np
import pandas as pd

from vrvm.api.schemas import PointIn
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place, place_from_latlon, place_from_zone
from vrvm.trips.files.time_range import check_departure

__all__ = ["FieldError", "departure", "parse_latlon_param", "place_of", "points_frame"]


class FieldError(ValueError):
    """A request field the services cannot use: answered with status 422."""

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = list(loc)
        self.msg = msg

    def detail(self) -> list[dict]:
        """FastAPI's validation-error shape: one entry with ``loc``, ``msg`` and ``type``."""
        return [{"loc": self.loc, "msg": self.msg, "type": "value_error"}]


def departure(value: datetime | None, tz: str, loc: Sequence[str | int]) -> pd.Timestamp:
    """An aware departure in the model's zone ``tz``: now for None, a naive time read as
    a wall-clock time in ``tz``, an aware one converted.

    ``value`` has passed :data:`~vrvm.api.schemas.Departure` (ISO 8601, in range with a
    naive time judged as UTC); it is checked again once placed in ``tz``, so a naive
    time at the very edge of the range cannot slip out of it by the zone's offset.
    """
    if value is None:
        return pd.Timestamp.now(tz=tz).floor("s")
    try:
        stamp = check_departure(value, name="depart")
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
        else:
            stamp = stamp.tz_convert(tz)
        return check_departure(stamp.as_unit("ns"), name="depart")
    except (ValueError, OverflowError) as exc:
        raise FieldError(loc, str(exc)) from None


def place_of(area: ServiceArea, point: PointIn, loc: Sequence[str | int]) -> Place:
    """The place a point names: a zone's point, or coordinates inside a zone."""
    try:
        if point.zone is not None:
            return place_from_zone(area, point.zone)
        return place_from_latlon(area, point.lat, point.lon)
    except ValueError as exc:
        message = str(exc)
        if point.zone is not None:
            message += " (GET /v1/zones lists the zones)"
        raise FieldError(loc, message) from None


def points_frame(
    area: ServiceArea, points: Sequence[PointIn], loc: Callable[[int], list]
) -> dict[str, np.ndarray | list]:
    """Points as the services' columns: ``label``, ``lat``, ``lon``, ``zone`` (lists).

    ``label`` is the point's name, else its zone id, else its position in the list
    (0, 1, ...; as text when other points have names or zones); ``zone`` the zone
    holding the point. Coordinates are checked against the zones in one vectorised
    pass; ``loc(i)`` is the field of point ``i``, for the errors.
    """
    n = len(points)
    lat = np.empty(n)
    lon = np.empty(n)
    zones: list = [None] * n
    by_zone = area.zone_index
    grid_lat, grid_lon = area.grid["lat"].to_numpy(), area.grid["lon"].to_numpy()
    typed = []
    for i, point in enumerate(points):
        if point.zone is not None:
            row = by_zone.get(point.zone)
            if row is None:
                place_of(area, point, loc(i))  # raises, naming the zone
            lat[i], lon[i], zones[i] = grid_lat[row], grid_lon[row], point.zone
        else:
            lat[i], lon[i] = point.lat, point.lon
            typed.append(i)
    if typed:
        rows = area.zone_rows(lat[typed], lon[typed])
        if (rows < 0).any():
            first = typed[int(np.flatnonzero(rows < 0)[0])]
            place_of(area, points[first], loc(first))  # raises with the nearest zone
        grid_zone = area.grid["zone"].to_numpy()
        for i, row in zip(typed, rows, strict=True):
            zones[i] = str(grid_zone[row])
    labels = [
        p.name if p.name else (p.zone if p.zone is not None else i) for i, p in enumerate(points)
    ]
    if not all(isinstance(label, int) for label in labels):
        labels = [str(label) for label in labels]  # one type per column
    return {"label": labels, "lat": lat, "lon": lon, "zone": zones}


def parse_latlon_param(text: str, loc: Sequence[str | int]) -> tuple[float, float]:
    """``"41.88,-87.63"`` as (lat, lon), for query parameters."""
    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        lat, lon = float(parts[0]), float(parts[1])
    except ValueError:
        raise FieldError(loc, f"expected 'lat,lon' in degrees, got {text!r}") from None
    if not (abs(lat) <= 90 and abs(lon) <= 180):
        raise FieldError(loc, f"({lat}, {lon}) are not valid coordinates")
    return lat, lon
