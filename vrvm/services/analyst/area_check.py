"""Whether trips lie in a model's area: the guard against updating a model with another city.

A model has learned the area of its training trips only. Updating a Chicago model with
New York trips, or scoring it on them, gives meaningless numbers, so every update (the
Retrain page, ``vrvm update``) first calls :func:`check_same_area`: the share of the
trips' ends (origins and destinations) inside the model's training area, and the
distance between the two areas' centres. The training area is the H3 cells of the
training trips' ends with their neighbours when those trips are at hand, else the
training bounding box the model records (``training_summary_["bbox"]``) padded by
:data:`AREA_PAD_KM`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd

from vrvm.services.versions.models import model_name
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zones import latlng_to_zone
from vrvm.trips.store.trip_table import TripTable

__all__ = [
    "AREA_H3_RESOLUTION",
    "AREA_PAD_KM",
    "MIN_SHARE_INSIDE",
    "AreaCheck",
    "ModelArea",
    "check_same_area",
    "model_area",
    "trip_ends",
    "trips_centre",
]

MIN_SHARE_INSIDE = 0.5
"""Trips are in a model's area when at least this share of their ends lie inside it."""

AREA_PAD_KM = 5.0
"""Margin added around the training bounding box (a city grows; trips end just outside)."""

AREA_H3_RESOLUTION = 6
"""H3 resolution of the training area's cells (edges of about 3.7 km); their neighbours
are included too, so the area reaches about 7 km beyond the outermost training trips."""

_MAX_ENDS = 20_000  # trip ends sampled to find cells or shares (the share is ~0.5 % exact)
_END_COLUMNS = ["origin_lat", "origin_lon", "dest_lat", "dest_lon"]
_KM_PER_DEGREE = 111.2


def trip_ends(trips: pd.DataFrame, max_ends: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(lat, lon)`` of every trip's origin and destination (a seeded sample of at most
    ``max_ends`` of them).

    Examples
    --------
    >>> trips = pd.DataFrame({"origin_lat": [1.0], "origin_lon": [2.0],
    ...                       "dest_lat": [3.0], "dest_lon": [4.0]})
    >>> trip_ends(trips)
    (array([1., 3.]), array([2., 4.]))
    """
    lat = np.concatenate([trips["origin_lat"].to_numpy(float), trips["dest_lat"].to_numpy(float)])
    lon = np.concatenate([trips["origin_lon"].to_numpy(float), trips["dest_lon"].to_numpy(float)])
    if max_ends is not None and lat.size > max_ends:
        rows = np.random.default_rng(0).choice(lat.size, max_ends, replace=False)
        lat, lon = lat[rows], lon[rows]
    return lat, lon


def trips_centre(trips: pd.DataFrame) -> tuple[float, float] | None:
    """Median ``(lat, lon)`` of the trips' ends, or None without trips.

    Examples
    --------
    >>> trips = pd.DataFrame({"origin_lat": [1.0, 2.0], "origin_lon": [5.0, 6.0],
    ...                       "dest_lat": [3.0, 4.0], "dest_lon": [7.0, 8.0]})
    >>> trips_centre(trips)
    (2.5, 6.5)
    """
    if len(trips) == 0:
        return None
    lat, lon = trip_ends(trips)
    return float(np.median(lat)), float(np.median(lon))


@dataclass(frozen=True)
class AreaCheck:
    """Trips against a model's training area (see :func:`check_same_area`).

    Attributes
    ----------
    ok : bool
        At least ``min_share`` of the trips' ends lie inside the area.
    share_inside : float
        Share of the trips' ends (origins and destinations) inside, in [0, 1].
    distance_km : float or None
        Distance between the centre of the trips and that of the training area.
    n_trips : int
        Trips checked.
    model_name : str
        The model's name, as the reason gives it.
    min_share : float
        The threshold (:data:`MIN_SHARE_INSIDE` unless given).
    reason : str
        One sentence with the numbers, to show or print as it is.
    """

    ok: bool
    share_inside: float
    distance_km: float | None
    n_trips: int
    model_name: str
    min_share: float
    reason: str


@dataclass(frozen=True)
class ModelArea:
    """A model's training area: padded bounding box, H3 cells (when known) and centre.

    Build it once with :func:`model_area` to check several trip tables against it.
    """

    model_name: str
    bbox: tuple[float, float, float, float] | None
    cells: Collection[str] | None
    centre: tuple[float, float] | None

    def inside(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Whether each point lies in the area (all False for a model without a bbox)."""
        lat, lon = np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)
        if self.cells is not None:
            if lat.size == 0:
                return np.zeros(0, dtype=bool)
            zones = latlng_to_zone(lat, lon, AREA_H3_RESOLUTION)
            return np.fromiter((z in self.cells for z in zones), dtype=bool, count=lat.size)
        if self.bbox is None:
            return np.zeros(lat.shape, dtype=bool)
        lat_lo, lon_lo, lat_hi, lon_hi = self.bbox
        return (lat >= lat_lo) & (lat <= lat_hi) & (lon >= lon_lo) & (lon <= lon_hi)

    def check(self, trips: pd.DataFrame, min_share: float = MIN_SHARE_INSIDE) -> AreaCheck:
        """:func:`check_same_area` against this area."""
        name, n = self.model_name, len(trips)
        if n == 0:
            reason = f"There are no trips to compare with the area of “{name}”."
            return AreaCheck(False, 0.0, None, 0, name, min_share, reason)
        lat, lon = trip_ends(trips, _MAX_ENDS)
        share = float(self.inside(lat, lon).mean())
        centre = trips_centre(trips)
        distance = None
        if self.centre is not None and centre is not None:
            distance = float(haversine_km(*centre, *self.centre))
        ok = share >= min_share
        where = "" if distance is None else f", {distance:,.0f} km from its centre"
        trips_text = f"{n:,} trip" + ("s" if n != 1 else "")
        if ok:
            reason = (
                f"{share:.0%} of the ends of the {trips_text} lie inside the training area "
                f"of “{name}”{where}."
            )
        else:
            reason = (
                f"Only {share:.0%} of the ends of the {trips_text} lie inside the training "
                f"area of “{name}” (at least {min_share:.0%} needed){where}: they are from "
                "another area, so they cannot update this model; train a new model on them."
            )
        return AreaCheck(ok, share, distance, n, name, min_share, reason)


def _padded_bbox(bbox, pad_km: float) -> tuple[float, float, float, float]:
    lat_lo, lon_lo, lat_hi, lon_hi = (float(v) for v in bbox)
    dlat = pad_km / _KM_PER_DEGREE
    cos_lat = max(np.cos(np.radians(max(abs(lat_lo), abs(lat_hi)))), 0.01)
    dlon = pad_km / (_KM_PER_DEGREE * cos_lat)
    return lat_lo - dlat, lon_lo - dlon, lat_hi + dlat, lon_hi + dlon


def _ends_area(trips: pd.DataFrame) -> dict:
    """The cells of a seeded sample of the trips' ends and its median point."""
    lat, lon = trip_ends(trips, _MAX_ENDS)
    own = set(latlng_to_zone(lat, lon, AREA_H3_RESOLUTION).tolist())
    return {"cells": sorted(own), "centre": [float(np.median(lat)), float(np.median(lon))]}


def model_area(
    model: TravelTimeModel,
    training_trips: pd.DataFrame | TripTable | None = None,
    *,
    pad_km: float = AREA_PAD_KM,
) -> ModelArea:
    """The training area of ``model``: H3 cells of ``training_trips`` (their ends' cells
    and neighbours) when given, else its recorded bounding box padded by ``pad_km``.

    ``training_trips`` kept in the data home (a :class:`~vrvm.trips.store.trip_table.TripTable`)
    are read once, for their ends only; the cells are kept beside them.
    """
    bbox = model.training_summary_.get("bbox")
    padded = _padded_bbox(bbox, pad_km) if bbox else None
    cells = None
    centre = None
    if training_trips is not None and len(training_trips):
        if isinstance(training_trips, TripTable):
            table = training_trips
            name = f"area-v1-r{AREA_H3_RESOLUTION}-n{_MAX_ENDS}.json"
            found = table.cached_json(name, lambda: _ends_area(table.read(_END_COLUMNS)))
        else:
            found = _ends_area(training_trips)
        cells = frozenset(c for cell in found["cells"] for c in h3.grid_disk(cell, 1))
        centre = (float(found["centre"][0]), float(found["centre"][1]))
    elif bbox:
        centre = ((bbox[0] + bbox[2]) / 2.0, (bbox[1] + bbox[3]) / 2.0)
    return ModelArea(model_name=model_name(model), bbox=padded, cells=cells, centre=centre)


def check_same_area(
    model: TravelTimeModel,
    trips: pd.DataFrame,
    *,
    training_trips: pd.DataFrame | TripTable | None = None,
    min_share: float = MIN_SHARE_INSIDE,
) -> AreaCheck:
    """Whether ``trips`` lie in the area ``model`` was trained on (so may update it).

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model (its ``training_summary_`` records the training bounding box).
    trips : pandas.DataFrame
        Trips with ``origin_lat``, ``origin_lon``, ``dest_lat`` and ``dest_lon``.
    training_trips : pandas.DataFrame or TripTable, optional
        The model's training trips (:meth:`vrvm.trips.home.Home.training_trip_table`):
        a finer area (H3 cells) than the bounding box, which also covers the empty
        corners between a city's arms.
    min_share : float, default=:data:`MIN_SHARE_INSIDE`
        Share of trip ends that must lie inside.

    Returns
    -------
    AreaCheck
        ``ok``, the share inside, the distance between the centres (km) and a
        one-sentence ``reason`` naming the numbers.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> trips = synthetic_city(600, seed=0)
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=40,
    ...                         random_state=0).fit(trips)
    >>> same = check_same_area(model, synthetic_city(200, seed=1))
    >>> same.ok, same.share_inside > 0.95, same.distance_km < 5
    (True, True, True)
    >>> far = synthetic_city(200, seed=1)
    >>> far[["origin_lat", "dest_lat"]] += 81.9   # Chicago-like latitudes
    >>> far[["origin_lon", "dest_lon"]] -= 57.6
    >>> moved = check_same_area(model, far)
    >>> moved.ok, moved.share_inside, moved.distance_km > 5000
    (False, 0.0, True)
    >>> print(moved.reason)
    Only 0% of the ends of the 200 trips lie inside the training area of “Synthetica (synthetic)” (at least 50% needed), 10,802 km from its centre: they are from another area, so they cannot update this model; train a new model on them.
    """  # noqa: E501
    return model_area(model, training_trips).check(trips, min_share)
