"""Service layer of the Streamlit dashboard: every number, table and map layer it shows.

The dashboard (``app.py``, ``pages/``, ``app_ui/``) only lays out widgets; everything
it displays is computed here, with plain pandas/numpy on top of the public API of
:mod:`vrvm`, so that it can be unit-tested without Streamlit (this module never imports
it). Sections:

* **data home and first start** - where models and uploaded trips live
  (``$VRVM_HOME``, default ``./.vrvm``) and how the demo model is trained once;
* **service area** - the clickable H3 zones over the model's training extent, their
  labels (named after boundary polygons when there are some) and the map view;
* **origin-destination state** - map clicks, list choices, typed coordinates, swap,
  clear, and the URL query parameters that make a view shareable;
* **forecasts** - medians, means and intervals in minutes, P(arrive within T), the
  exact mixture density with its members, the time-of-day profile (fan chart data);
* **coverage** - every zone's median travel time or probability of arriving within a
  threshold from one origin (probability-of-coverage maps, Westgate et al. 2013), with
  colour bins, legends and CSV / GeoJSON export;
* **relevance vectors** - the training trips that became relevance vectors, ELBO
  curves and noise estimates;
* **retraining** - reading untrusted uploads, cleaning reports, hold-out splits,
  training, side-by-side evaluation, calibration, publishing and model versions.

References
----------
Westgate, Woodard, Matteson & Henderson (2013), "Travel time estimation for ambulances
using Bayesian data augmentation", Annals of Applied Statistics 7(2), 1139-1161.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import io
import json
import lzma
import math
import os
import re
import secrets
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import h3
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from vrvm.datasets import synthetic_city, synthetic_city_geojson
from vrvm.mixture import MixtureDistribution
from vrvm.model import TravelTimeModel, trips_sha256
from vrvm.storage import ModelStore, exclusive_lock
from vrvm.trips import CANONICAL_COLUMNS, CleaningReport, read_trips
from vrvm.tripstore import TripStore
from vrvm.zones import choose_h3_resolution, latlng_to_zone, zone_grid, zones_geojson

__all__ = [
    "COVERAGE_METRICS",
    "INTERVAL_LEVELS",
    "MAX_UPLOAD_MB",
    "DemoSettings",
    "ODForecast",
    "ODState",
    "Place",
    "ServiceArea",
    "TrainingSettings",
    "UploadOutcome",
    "ViewState",
    "apply_map_selection",
    "build_service_area",
    "coverage_colors",
    "coverage_csv",
    "coverage_geojson",
    "coverage_grid",
    "data_home",
    "demo_settings",
    "density_curve",
    "ensure_demo_model",
    "forecast_od",
    "from_query_params",
    "interval_table",
    "model_store",
    "relevance_table",
    "time_of_day_profile",
    "to_query_params",
    "trip_store",
]

# ======================================================================================
# Data home and first start
# ======================================================================================

HOME_ENV = "VRVM_HOME"
DEFAULT_HOME = ".vrvm"
MODELS_DIR = "models"
TRIPS_DIR = "trips"
TRAINING_DIR = "training"


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """Directory holding the dashboard's model store and trip store.

    ``$VRVM_HOME`` if set, else ``./.vrvm`` in the working directory.

    Examples
    --------
    >>> str(data_home({"VRVM_HOME": "/srv/vrvm"}))
    '/srv/vrvm'
    >>> data_home({}).name
    '.vrvm'
    """
    environ = os.environ if environ is None else environ
    value = environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else Path.cwd() / DEFAULT_HOME


def model_store(home: Path) -> ModelStore:
    """The versioned model store under ``home``."""
    return ModelStore(Path(home) / MODELS_DIR)


def trip_store(home: Path) -> TripStore:
    """The persistent store of uploaded trips under ``home``."""
    return TripStore(Path(home) / TRIPS_DIR)


def _env_int(environ: Mapping[str, str], name: str, default: int, low: int = 1) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"${name} must be an integer, got {raw!r}") from None
    if value < low:
        raise ValueError(f"${name} must be >= {low}, got {value}")
    return value


@dataclass(frozen=True)
class DemoSettings:
    """Size of the demo model trained on first start (see :func:`demo_settings`)."""

    n_trips: int = 20_000
    n_members: int = 8
    max_basis: int = 1000
    kernel_widths: str | tuple[float, ...] = "auto"
    seed: int = 0
    n_jobs: int = 1

    def model_params(self) -> dict[str, Any]:
        widths = (
            self.kernel_widths if isinstance(self.kernel_widths, str) else list(self.kernel_widths)
        )
        return {
            "n_members": self.n_members,
            "max_basis": self.max_basis,
            "kernel_widths": widths,
            "random_state": self.seed,
            "n_jobs": self.n_jobs,
        }


def demo_settings(environ: Mapping[str, str] | None = None) -> DemoSettings:
    """Demo-model settings, overridable by environment variables (for tests).

    ``VRVM_DEMO_TRIPS`` (20000), ``VRVM_DEMO_MEMBERS`` (8), ``VRVM_DEMO_MAX_BASIS``
    (1000), ``VRVM_DEMO_WIDTHS`` ("auto" or comma-separated widths) and ``VRVM_N_JOBS``
    (default: one worker per core, at most one per member).

    Examples
    --------
    >>> s = demo_settings({"VRVM_DEMO_TRIPS": "3000", "VRVM_DEMO_MEMBERS": "2",
    ...                    "VRVM_DEMO_WIDTHS": "1.5, 3", "VRVM_N_JOBS": "1"})
    >>> s.n_trips, s.n_members, s.kernel_widths, s.n_jobs
    (3000, 2, (1.5, 3.0), 1)
    """
    environ = os.environ if environ is None else environ
    n_members = _env_int(environ, "VRVM_DEMO_MEMBERS", 8)
    jobs_default = max(1, min(os.cpu_count() or 1, n_members))
    return DemoSettings(
        n_trips=_env_int(environ, "VRVM_DEMO_TRIPS", 20_000, low=100),
        n_members=n_members,
        max_basis=_env_int(environ, "VRVM_DEMO_MAX_BASIS", 1000),
        kernel_widths=parse_widths(environ.get("VRVM_DEMO_WIDTHS", "auto")),
        n_jobs=_env_int(environ, "VRVM_N_JOBS", jobs_default),
    )


def _home_lock(home: Path, name: str = ".first-start.lock"):
    """Exclusive lock so that two sessions starting at once train the demo model once."""
    return exclusive_lock(home / name)


def training_trips_path(home: Path, sha256: str) -> Path:
    """Where the training trips with content hash ``sha256`` are kept."""
    if not re.fullmatch(r"[0-9a-f]{64}", str(sha256)):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return Path(home) / TRAINING_DIR / f"{sha256}.parquet"


def save_training_trips(home: Path, trips: pd.DataFrame) -> Path:
    """Keep a model's training trips, content-addressed by :func:`vrvm.trips_sha256`.

    Written atomically (temporary file, then rename); identical data sets share one
    file. The dashboard overlays them on the time-of-day profile and draws the
    service area from them.
    """
    path = training_trips_path(home, trips_sha256(trips))
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{secrets.token_hex(4)}-{path.name}")
    try:
        trips[list(CANONICAL_COLUMNS)].to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_training_trips(home: Path, model: TravelTimeModel) -> pd.DataFrame | None:
    """The model's training trips if the dashboard kept them, else None."""
    sha = (getattr(model, "training_summary_", None) or {}).get("sha256")
    if not sha:
        return None
    try:
        path = training_trips_path(home, sha)
    except ValueError:
        return None
    if not path.is_file():
        return None
    trips = pd.read_parquet(path)
    trips["start_time"] = pd.to_datetime(trips["start_time"], utc=True).dt.tz_convert(model.tz_)
    return trips


def compact_metrics(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    """The few scores worth listing beside a model version (seconds)."""
    if not metrics:
        return {}
    out = {
        "n": metrics.get("n"),
        "crps_s": metrics.get("crps_s"),
        "mae_s": (metrics.get("median") or {}).get("mae_s"),
    }
    for entry in metrics.get("intervals") or []:
        if entry.get("level") in (0.8, 0.9):
            out[f"coverage_{round(100 * entry['level'])}"] = entry.get("coverage")
    return out


def ensure_demo_model(
    home: Path,
    settings: DemoSettings | None = None,
    progress: Callable[[int, int, float], Any] | None = None,
    stage: Callable[[str], Any] | None = None,
) -> tuple[int, bool]:
    """Make sure the store has an active model, training the demo model if it is empty.

    On first start (an empty model store) the synthetic city is generated, the default
    model trained on it (``progress(i_done, n_members, elapsed_s)`` after each member),
    scored on an independent synthetic sample, and published as version 1. A store
    with versions but no active pointer gets its latest version activated.

    Returns
    -------
    (version, trained) : tuple of int and bool
        The active version, and whether it was trained by this call.
    """
    home = Path(home)
    settings = settings or demo_settings()
    store = model_store(home)
    active = store.active_version()
    if active is not None:
        return active, False
    with _home_lock(home):
        active = store.active_version()  # another session may have finished meanwhile
        if active is not None:
            return active, False
        latest = store.latest_version()
        if latest is not None:
            store.activate(latest)
            return latest, False
        say = stage or (lambda _message: None)
        say(f"Generating {settings.n_trips:,} synthetic trips in Synthetica (synthetic city)")
        trips = synthetic_city(settings.n_trips, seed=settings.seed)
        holdout = synthetic_city(max(500, settings.n_trips // 10), seed=settings.seed + 1)
        say(f"Training {settings.n_members} ensemble members")
        model = TravelTimeModel(**settings.model_params()).fit(trips, progress=progress)
        say("Scoring on independent synthetic trips and saving")
        metrics = model.evaluate(holdout)
        save_training_trips(home, trips)
        info = {
            "kind": "demo",
            "data": trips.attrs["source"],
            "synthetic": True,
            "n_trips": len(trips),
            "n_members": settings.n_members,
            "fit_time_s": round(float(model.fit_time_s_), 2),
            "metrics": compact_metrics(metrics),
        }
        version = store.add(lambda path: model.save(path, metrics=metrics), info=info)
    return version, True


def is_synthetic(model: TravelTimeModel) -> bool:
    """Whether the model was trained on synthetic data (so every view must say so)."""
    return bool((getattr(model, "training_summary_", None) or {}).get("synthetic", False))


def data_description(model: TravelTimeModel) -> str:
    """One line saying what the model was trained on."""
    summary = getattr(model, "training_summary_", None) or {}
    n = summary.get("n_trips")
    what = summary.get("city") or summary.get("source") or "uploaded trips"
    start, end = summary.get("start_time_min", ""), summary.get("start_time_max", "")
    text = f"{what}: {n:,} trips" if isinstance(n, int) else str(what)
    if start and end:
        text += f", {start[:10]} to {end[:10]}"
    if is_synthetic(model):
        text += " - SYNTHETIC data, not a real city"
    return text


# ======================================================================================
# Service area: zones, labels, map view
# ======================================================================================


@dataclass(frozen=True)
class ViewState:
    """Initial map view: centre, zoom (deck.gl / Web Mercator, 512-pixel world)."""

    latitude: float
    longitude: float
    zoom: float


_WORLD_PX = 512.0  # deck.gl's world size at zoom 0


def _mercator_y(lat) -> np.ndarray:
    phi = np.radians(np.clip(lat, -85.05112878, 85.05112878))
    return (np.pi - np.log(np.tan(np.pi / 4 + phi / 2))) / (2 * np.pi) * _WORLD_PX


def view_for_bbox(
    lat_min: float,
    lon_min: float,
    lat_max: float,
    lon_max: float,
    *,
    width_px: int = 800,
    height_px: int = 560,
    padding: float = 0.06,
) -> ViewState:
    """Centre and zoom that fit a box into a ``width_px`` x ``height_px`` map.

    Examples
    --------
    >>> v = view_for_bbox(41.6, -87.95, 42.05, -87.5)
    >>> round(v.latitude, 2), round(v.longitude, 3), 9 < v.zoom < 11
    (41.83, -87.725, True)
    """
    x0, x1 = (np.array([lon_min, lon_max]) + 180.0) / 360.0 * _WORLD_PX
    y1, y0 = _mercator_y(np.array([lat_min, lat_max]))
    span_x = max(x1 - x0, 1e-9)
    span_y = max(y1 - y0, 1e-9)
    usable = 1.0 - 2.0 * padding
    zoom = min(np.log2(width_px * usable / span_x), np.log2(height_px * usable / span_y))
    mid_y = 0.5 * (y0 + y1)
    lat_c = np.degrees(2 * np.arctan(np.exp(np.pi - mid_y / _WORLD_PX * 2 * np.pi)) - np.pi / 2)
    return ViewState(float(lat_c), float(0.5 * (lon_min + lon_max)), float(zoom))


def lnglat_to_pixel(
    view: ViewState, lat, lon, *, width_px: float, height_px: float
) -> tuple[np.ndarray, np.ndarray]:
    """Screen pixel (from the map's top-left corner) of points in the initial view.

    The inverse of what deck.gl's ``MapView`` draws (pitch 0, bearing 0), used by the
    browser test to click on zones.

    Examples
    --------
    >>> v = ViewState(41.8, -87.7, 10.0)
    >>> x, y = lnglat_to_pixel(v, 41.8, -87.7, width_px=800, height_px=600)
    >>> float(x), float(y)
    (400.0, 300.0)
    """
    scale = 2.0**view.zoom
    x = (np.asarray(lon, dtype=float) - view.longitude) / 360.0 * _WORLD_PX * scale
    y = (_mercator_y(np.asarray(lat, dtype=float)) - _mercator_y(view.latitude)) * scale
    return width_px / 2.0 + x, height_px / 2.0 + y


@dataclass(frozen=True)
class ServiceArea:
    """The clickable zones of the map and what is needed to draw them.

    Attributes
    ----------
    grid : pandas.DataFrame
        One row per zone in display order: ``zone`` (H3 id), ``number`` (1, 2, ...
        from north-west to south-east), ``label`` (``"Zone 12 · Downtown"``), ``place``
        (boundary name or ""), ``lat``, ``lon`` (centre), ``boundary``
        (``[[lon, lat], ...]``), ``n_points`` (training trip ends in the zone).
    resolution : int
        H3 resolution of the zones.
    bbox : tuple of float
        ``(lat_min, lon_min, lat_max, lon_max)`` of the zones.
    view : ViewState
        Initial map view fitting the zones.
    boundaries : dict or None
        GeoJSON drawn under the zones (boundary polygons, river, ...).
    synthetic : bool
        Whether the area is the synthetic city.
    """

    grid: pd.DataFrame
    resolution: int
    bbox: tuple[float, float, float, float]
    view: ViewState
    boundaries: dict | None = None
    synthetic: bool = False

    @property
    def zone_index(self) -> dict[str, int]:
        """Zone id -> row position in ``grid``."""
        return {z: i for i, z in enumerate(self.grid["zone"])}

    @property
    def labels(self) -> list[str]:
        """Zone labels in display order (for a searchable list)."""
        return self.grid["label"].tolist()


def _service_points(model: TravelTimeModel, trips: pd.DataFrame | None) -> tuple[np.ndarray, ...]:
    """Trip ends describing the service area: the training trips, else what the model kept."""
    if trips is not None and len(trips):
        lat = np.concatenate(
            [trips["origin_lat"].to_numpy(float), trips["dest_lat"].to_numpy(float)]
        )
        lon = np.concatenate(
            [trips["origin_lon"].to_numpy(float), trips["dest_lon"].to_numpy(float)]
        )
        return lat, lon
    rv = model.relevance_trips()
    lat = np.concatenate([rv["origin_lat"].to_numpy(float), rv["dest_lat"].to_numpy(float)])
    lon = np.concatenate([rv["origin_lon"].to_numpy(float), rv["dest_lon"].to_numpy(float)])
    bbox = (getattr(model, "training_summary_", None) or {}).get("bbox")
    if bbox:  # the corners make the filled hull reach the whole training extent
        lat_lo, lon_lo, lat_hi, lon_hi = bbox
        lat = np.concatenate([lat, [lat_lo, lat_lo, lat_hi, lat_hi]])
        lon = np.concatenate([lon, [lon_lo, lon_hi, lon_lo, lon_hi]])
    return lat, lon


def build_service_area(
    model: TravelTimeModel,
    *,
    trips: pd.DataFrame | None = None,
    resolution: int | None = None,
    target_zones: int = 600,
    max_zones: int = 2000,
    boundaries: dict | None = None,
) -> ServiceArea:
    """Zones covering the model's training extent, labelled, with an initial view.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    trips : pandas.DataFrame, optional
        Its training trips (see :func:`load_training_trips`); without them the
        extent is taken from the relevance-vector trips and the training bounding box.
    resolution : int, optional
        H3 resolution of the map zones; default: the one giving about
        ``target_zones`` zones, made coarser while the filled area would exceed
        ``max_zones``.
    boundaries : dict, optional
        GeoJSON FeatureCollection whose polygons name the zones (e.g. community
        areas) and which is drawn under them. Default: the synthetic city's layers
        for a model trained on it.

    Returns
    -------
    ServiceArea
    """
    lat, lon = _service_points(model, trips)
    synthetic = is_synthetic(model)
    if boundaries is None and synthetic:
        boundaries = synthetic_city_geojson()
    if resolution is None:
        # coarser while the filled area has too many zones (outlying trips, an airport)
        resolution = choose_h3_resolution(lat, lon, target_zones=target_zones)
        while True:
            try:
                grid = zone_grid(lat, lon, resolution=resolution, padding_rings=1)
            except ValueError:  # far more cells than zone_grid allows
                if resolution == 0:
                    raise
                resolution -= 1
                continue
            if len(grid) <= max_zones or resolution == 0:
                break
            resolution -= 1
    else:
        grid = zone_grid(lat, lon, resolution=resolution, padding_rings=1)
    # Reading order: north to south in rows of about one zone height, west to east.
    row_height = np.sqrt(h3.average_hexagon_area(resolution, unit="km^2")) / 111.195
    row = np.floor((grid["lat"].max() - grid["lat"]) / row_height).astype(int)
    grid = grid.assign(_row=row).sort_values(["_row", "lon"]).drop(columns="_row")
    # centres to 6 decimals (0.1 m), as places and shared links carry them
    grid["lat"], grid["lon"] = grid["lat"].round(6), grid["lon"].round(6)
    grid = grid.reset_index(drop=True)
    grid.insert(1, "number", np.arange(1, len(grid) + 1))
    places = place_names(grid["lat"].to_numpy(), grid["lon"].to_numpy(), boundaries)
    grid.insert(2, "place", places)
    grid.insert(
        2,
        "label",
        [
            _zone_label(n, p, a, b)
            for n, p, a, b in zip(grid["number"], places, grid["lat"], grid["lon"], strict=True)
        ],
    )
    ring_lon = np.concatenate([np.asarray(b)[:, 0] for b in grid["boundary"]])
    ring_lat = np.concatenate([np.asarray(b)[:, 1] for b in grid["boundary"]])
    bbox = (
        float(ring_lat.min()),
        float(ring_lon.min()),
        float(ring_lat.max()),
        float(ring_lon.max()),
    )
    return ServiceArea(
        grid=grid,
        resolution=int(resolution),
        bbox=bbox,
        view=view_for_bbox(*bbox),
        boundaries=boundaries,
        synthetic=synthetic,
    )


def _zone_label(number: int, place: str, lat: float, lon: float) -> str:
    where = place if place else f"{lat:.4f}, {lon:.4f}"
    return f"Zone {number} · {where}"


_NAME_KEYS = (
    "name",
    "NAME",
    "Name",
    "community",
    "COMMUNITY",
    "label",
    "title",
    "neighborhood",
    "neighbourhood",
    "district",
    "area_name",
    "zone",
)


def feature_name(properties: Mapping[str, Any] | None) -> str:
    """Display name of a GeoJSON feature from its usual name properties.

    Examples
    --------
    >>> feature_name({"community": "DOUGLAS", "area_numbe": 35})
    'Douglas'
    >>> feature_name({"name": "Downtown Synthetica (synthetic)"})
    'Downtown Synthetica (synthetic)'
    >>> feature_name({"id": 3})
    ''
    """
    properties = properties or {}
    for key in _NAME_KEYS:
        value = properties.get(key)
        if isinstance(value, str) and value.strip():
            name = value.strip()
            return name.title() if name.isupper() else name
    for value in properties.values():
        if isinstance(value, str) and value.strip() and not value.strip().isdigit():
            name = value.strip()
            return name.title() if name.isupper() else name
    return ""


def _polygon_rings(geometry: Mapping[str, Any]) -> list[np.ndarray]:
    kind = geometry.get("type")
    coords = geometry.get("coordinates") or []
    polygons = [coords] if kind == "Polygon" else coords if kind == "MultiPolygon" else []
    rings = []
    for polygon in polygons:
        for ring in polygon:
            arr = np.asarray(ring, dtype=float)
            if arr.ndim == 2 and arr.shape[0] >= 3 and arr.shape[1] >= 2:
                rings.append(arr[:, :2])
    return rings


def points_in_rings(lat: np.ndarray, lon: np.ndarray, rings: Sequence[np.ndarray]) -> np.ndarray:
    """Even-odd point-in-polygon test over all rings (holes and multipolygons included).

    Examples
    --------
    >>> square = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]], dtype=float)
    >>> hole = np.array([[0.5, 0.5], [1, 0.5], [1, 1], [0.5, 1], [0.5, 0.5]], dtype=float)
    >>> points_in_rings(np.array([1.5, 0.75, 3.0]), np.array([1.5, 0.75, 1.0]), [square, hole])
    array([ True, False, False])
    """
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    inside = np.zeros(lat.shape, dtype=bool)
    for ring in rings:
        x1, y1 = ring[:-1, 0], ring[:-1, 1]
        x2, y2 = ring[1:, 0], ring[1:, 1]
        if not np.allclose(ring[0], ring[-1]):
            x1, y1 = np.append(x1, ring[-1, 0]), np.append(y1, ring[-1, 1])
            x2, y2 = np.append(x2, ring[0, 0]), np.append(y2, ring[0, 1])
        box = (lon >= ring[:, 0].min()) & (lon <= ring[:, 0].max())
        box &= (lat >= ring[:, 1].min()) & (lat <= ring[:, 1].max())
        idx = np.flatnonzero(box)
        if idx.size == 0:
            continue
        px, py = lon[idx, None], lat[idx, None]
        crosses = (y1 > py) != (y2 > py)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = x1 + (py - y1) * (x2 - x1) / (y2 - y1)
        toggles = np.count_nonzero(crosses & (px < x_at), axis=1) % 2 == 1
        inside[idx] ^= toggles
    return inside


def _ring_area(rings: Sequence[np.ndarray]) -> float:
    area = 0.0
    for ring in rings:
        x, y = ring[:, 0], ring[:, 1]
        area += 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    return area


def place_names(
    lat: np.ndarray,
    lon: np.ndarray,
    boundaries: Mapping[str, Any] | None,
    *,
    broad_share: float = 0.6,
    point_radius_km: float = 1.5,
) -> list[str]:
    """Name each point after the smallest boundary polygon containing it.

    Polygons that contain more than ``broad_share`` of the points (city limits) say
    nothing and are skipped; points in no polygon take the name of a point feature
    (an airport) within ``point_radius_km``, else "".
    """
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    names = np.full(lat.shape, "", dtype=object)
    if not boundaries:
        return names.tolist()
    best_area = np.full(lat.shape, np.inf)
    for feature in boundaries.get("features") or []:
        geometry = (feature or {}).get("geometry") or {}
        name = feature_name(feature.get("properties"))
        if not name:
            continue
        if geometry.get("type") in ("Polygon", "MultiPolygon"):
            rings = _polygon_rings(geometry)
            if not rings:
                continue
            inside = points_in_rings(lat, lon, rings)
            if inside.mean() > broad_share:
                continue
            area = _ring_area(rings)
            better = inside & (area < best_area)
            names[better] = name
            best_area[better] = area
        elif geometry.get("type") == "Point":
            p_lon, p_lat = geometry["coordinates"][:2]
            km = _haversine_km(lat, lon, p_lat, p_lon)
            near = (km <= point_radius_km) & ~np.isfinite(best_area)
            names[near] = name
    return names.tolist()


def _haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    lat1, lon1, lat2, lon2 = (
        np.radians(np.asarray(v, dtype=float)) for v in (lat1, lon1, lat2, lon2)
    )
    a = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371.0088 * np.arcsin(np.sqrt(np.clip(a, 0, 1)))


def parse_geojson(data: bytes, *, max_bytes: int = 50 * 1024 * 1024) -> dict:
    """Validate an uploaded boundary file: JSON text holding a GeoJSON FeatureCollection.

    Raises
    ------
    ValueError
        With a message for the user if it is too big, not JSON or not GeoJSON.
    """
    if len(data) > max_bytes:
        raise ValueError(f"the boundary file is larger than {max_bytes // 2**20} MB")
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the boundary file is not JSON text ({exc})") from None
    if isinstance(document, dict) and document.get("type") == "Feature":
        document = {"type": "FeatureCollection", "features": [document]}
    if not isinstance(document, dict) or document.get("type") != "FeatureCollection":
        raise ValueError("the boundary file is not a GeoJSON FeatureCollection")
    features = document.get("features")
    if not isinstance(features, list) or not features:
        raise ValueError("the GeoJSON FeatureCollection has no features")
    return document


# ======================================================================================
# Places and the origin-destination state
# ======================================================================================


@dataclass(frozen=True)
class Place:
    """An origin or destination: coordinates, the zone holding them and a label."""

    lat: float
    lon: float
    zone: str | None
    label: str
    kind: str = "zone"  # "zone" (a zone centre) or "point" (typed coordinates)


def place_from_zone(area: ServiceArea, zone: str) -> Place:
    """The centre of a zone, as a place."""
    index = area.zone_index.get(zone)
    if index is None:
        raise ValueError(f"zone {zone!r} is not in the service area")
    row = area.grid.iloc[index]
    return Place(round(float(row["lat"]), 6), round(float(row["lon"]), 6), zone, row["label"])


def place_from_label(area: ServiceArea, label: str) -> Place:
    """The zone chosen in the searchable list."""
    matches = np.flatnonzero(area.grid["label"].to_numpy() == label)
    if matches.size == 0:
        raise ValueError(f"no zone is labelled {label!r}")
    return place_from_zone(area, area.grid["zone"].iloc[int(matches[0])])


def parse_latlon(text: str) -> tuple[float, float]:
    """Read ``"lat, lon"`` (comma, semicolon or space separated) in degrees.

    Examples
    --------
    >>> parse_latlon(" -39.98, -30.01 ")
    (-39.98, -30.01)
    >>> parse_latlon("41.88 -87.63")
    (41.88, -87.63)
    """
    parts = [p for p in re.split(r"[\s,;]+", str(text).strip()) if p]
    if len(parts) != 2:
        raise ValueError(f"type a latitude and a longitude such as '41.88, -87.63', got {text!r}")
    try:
        lat, lon = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"{text!r} is not two numbers (latitude, longitude)") from None
    if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        raise ValueError(f"{text!r}: latitude must lie in [-90, 90] and longitude in [-180, 180]")
    return lat, lon


def place_from_latlon(area: ServiceArea, lat: float, lon: float) -> Place:
    """A typed point, which must lie in one of the service area's zones.

    A point at (6-decimal) zone centre coordinates is that zone; any other point
    keeps its exact coordinates and is labelled with the zone it falls in.
    """
    lat, lon = round(float(lat), 6), round(float(lon), 6)
    if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        raise ValueError(f"({lat}, {lon}) are not valid coordinates")
    zone = str(latlng_to_zone([lat], [lon], area.resolution)[0])
    if zone not in area.zone_index:
        lat_lo, lon_lo, lat_hi, lon_hi = area.bbox
        raise ValueError(
            f"({lat:.5f}, {lon:.5f}) is outside the service area (latitudes "
            f"{lat_lo:.3f} to {lat_hi:.3f}, longitudes {lon_lo:.3f} to {lon_hi:.3f})"
        )
    centre = place_from_zone(area, zone)
    if (centre.lat, centre.lon) == (lat, lon):
        return centre
    return Place(lat, lon, zone, f"{lat:.5f}, {lon:.5f} (in {centre.label})", kind="point")


@dataclass(frozen=True)
class ODState:
    """Origin, destination and the last map selection already acted upon."""

    origin: Place | None = None
    dest: Place | None = None
    last_selection: str | None = None

    def swapped(self) -> ODState:
        return replace(self, origin=self.dest, dest=self.origin)

    def cleared(self) -> ODState:
        return replace(self, origin=None, dest=None)

    @property
    def complete(self) -> bool:
        return self.origin is not None and self.dest is not None


def apply_map_click(state: ODState, place: Place, *, mode: str = "od") -> ODState:
    """What a click on a zone does.

    ``mode="od"``: the first click sets the origin, the second the destination, a
    third starts a new pair. ``mode="origin"`` (coverage map): a click sets the origin.
    """
    if mode == "origin":
        return replace(state, origin=place)
    if state.origin is None or state.dest is not None:
        return replace(state, origin=place, dest=None)
    return replace(state, dest=place)


def zone_from_selection(
    selection: Mapping[str, Any] | None, area: ServiceArea, layer_id: str = "zones"
) -> str | None:
    """The zone picked in a ``st.pydeck_chart`` selection event, or None.

    Accepts the chart's state (``{"selection": {"indices": ..., "objects": ...}}``) or
    its ``selection`` member. The picked object's ``zone`` property is used when
    present, else its index into the layer's data (the service area's grid order).
    """
    if not selection:
        return None
    inner = selection.get("selection", selection)
    if not isinstance(inner, Mapping):
        return None
    objects = (inner.get("objects") or {}).get(layer_id) or []
    if objects and isinstance(objects[0], Mapping) and objects[0].get("zone") in area.zone_index:
        return str(objects[0]["zone"])
    indices = (inner.get("indices") or {}).get(layer_id) or []
    if indices:
        try:
            i = int(indices[0])
        except (TypeError, ValueError):
            return None
        if 0 <= i < len(area.grid):
            return str(area.grid["zone"].iloc[i])
    return None


def _fingerprint(selection: Mapping[str, Any] | None) -> str | None:
    """What identifies a click: the picked indices per layer, not the picked objects.

    When the page redraws the map with new layer data (the origin coloured, a
    choropleth), the browser re-sends the same selection with the objects' new
    properties; that is not a new click.
    """
    if not selection:
        return None
    inner = selection.get("selection", selection)
    if not isinstance(inner, Mapping):
        return None
    indices = {k: v for k, v in (inner.get("indices") or {}).items() if v}
    return json.dumps(indices, sort_keys=True, default=str) if indices else None


def apply_map_selection(
    state: ODState,
    selection: Mapping[str, Any] | None,
    area: ServiceArea,
    *,
    mode: str = "od",
    layer_id: str = "zones",
) -> ODState:
    """Apply a map selection event to the state, once.

    Streamlit keeps a chart's selection across reruns, so the same selection is seen
    again on every rerun; it is applied only when it differs from the last one acted
    upon. An empty selection (the user clicked the selected zone again) forgets the
    last one, so clicking the same zone later counts as a new click.
    """
    fingerprint = _fingerprint(selection)
    if fingerprint is None:
        return replace(state, last_selection=None) if state.last_selection else state
    if fingerprint == state.last_selection:
        return state
    zone = zone_from_selection(selection, area, layer_id)
    state = replace(state, last_selection=fingerprint)
    if zone is None:
        return state
    return apply_map_click(state, place_from_zone(area, zone), mode=mode)


# ---- URL query parameters ------------------------------------------------------------

MODES = ("od", "coverage")
COVERAGE_METRICS = ("median", "probability")


@dataclass(frozen=True)
class ViewParams:
    """Everything a shared link restores."""

    state: ODState = field(default_factory=ODState)
    departure: pd.Timestamp | None = None
    threshold_min: float | None = None
    mode: str | None = None
    metric: str | None = None
    confidence: float | None = None


def _fmt_num(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


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
            params[key] = f"{_fmt_num(place.lat)},{_fmt_num(place.lon)}"
    if departure is not None:
        params["t"] = pd.Timestamp(departure).strftime("%Y-%m-%dT%H:%M")
    if threshold_min is not None:
        params["thr"] = _fmt_num(float(threshold_min))
    if mode is not None:
        params["mode"] = mode
    if metric is not None:
        params["metric"] = metric
    if confidence is not None:
        params["conf"] = _fmt_num(float(confidence))
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


# ======================================================================================
# Forecasts for one origin-destination pair
# ======================================================================================

INTERVAL_LEVELS: tuple[float, ...] = (0.5, 0.8, 0.95)


def default_departure(tz: str, now: datetime | None = None) -> pd.Timestamp:
    """Now in the model's time zone, rounded up to the next 5 minutes.

    Examples
    --------
    >>> default_departure("UTC", pd.Timestamp("2024-03-05 08:11:30", tz="UTC"))
    Timestamp('2024-03-05 08:15:00+0000', tz='UTC')
    """
    now = pd.Timestamp.now(tz=tz) if now is None else pd.Timestamp(now).tz_convert(tz)
    return now.ceil("5min")


def combine_departure(day: date, clock: time, tz: str) -> pd.Timestamp:
    """A local date and wall-clock time in ``tz`` as a timezone-aware timestamp."""
    stamp = pd.Timestamp(datetime.combine(day, clock))
    return stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")


def query_frame(
    origin: Place, dest: Place | Sequence[Place] | pd.DataFrame, departure
) -> pd.DataFrame:
    """Model queries from one origin to one or many destinations at one departure time."""
    if isinstance(dest, pd.DataFrame):
        d_lat, d_lon = dest["lat"].to_numpy(float), dest["lon"].to_numpy(float)
    elif isinstance(dest, Place):
        d_lat, d_lon = np.array([dest.lat]), np.array([dest.lon])
    else:
        d_lat = np.array([p.lat for p in dest], dtype=float)
        d_lon = np.array([p.lon for p in dest], dtype=float)
    n = d_lat.size
    return pd.DataFrame(
        {
            "origin_lat": np.full(n, origin.lat),
            "origin_lon": np.full(n, origin.lon),
            "dest_lat": d_lat,
            "dest_lon": d_lon,
            "start_time": pd.DatetimeIndex([pd.Timestamp(departure)] * n),
        }
    )


def interval_table(
    dist: MixtureDistribution, levels: Sequence[float] = INTERVAL_LEVELS
) -> pd.DataFrame:
    """Central predictive intervals of the first query, in minutes.

    Columns ``level`` (0.5, ...), ``interval`` ("80 %"), ``lower_min``, ``upper_min``,
    ``width_min``.
    """
    rows = []
    for level in levels:
        lo, hi = dist.interval(level)
        rows.append(
            {
                "level": float(level),
                "interval": f"{100 * level:g} %",
                "lower_min": float(lo[0]) / 60.0,
                "upper_min": float(hi[0]) / 60.0,
                "width_min": float(hi[0] - lo[0]) / 60.0,
            }
        )
    return pd.DataFrame(rows)


def quantile_table(dist: MixtureDistribution, quantiles: Sequence[float]) -> pd.DataFrame:
    """Predictive quantiles of the first query, in minutes (``q``, ``minutes``)."""
    q = np.asarray(quantiles, dtype=float)
    values = dist.ppf(q[:, None])[:, 0] / 60.0
    return pd.DataFrame({"q": q, "minutes": values})


@dataclass(frozen=True)
class ODForecast:
    """Everything the page says about one trip (times in minutes)."""

    origin: Place
    dest: Place
    departure: pd.Timestamp
    median_min: float
    mean_min: float
    std_min: float
    intervals: pd.DataFrame
    threshold_min: float
    prob_within: float
    dist: MixtureDistribution = field(repr=False)

    def summary_text(self) -> str:
        """A sentence a planner can paste into a report."""
        ninety = self.intervals.set_index("level")
        line = (
            f"Leaving {self.departure:%a %d %b %Y %H:%M}: typically {self.median_min:.0f} min "
            f"(median)"
        )
        if 0.8 in ninety.index:
            lo, hi = ninety.loc[0.8, ["lower_min", "upper_min"]]
            line += f", 8 in 10 trips take {lo:.0f}-{hi:.0f} min"
        line += f"; P(arrive within {self.threshold_min:g} min) = {100 * self.prob_within:.0f} %."
        return line


def forecast_od(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    departure,
    threshold_min: float,
    *,
    levels: Sequence[float] = INTERVAL_LEVELS,
) -> ODForecast:
    """Predictive summary of one trip: median, mean, intervals and P(T <= threshold)."""
    dist = model.predict_dist(query_frame(origin, dest, departure))
    return ODForecast(
        origin=origin,
        dest=dest,
        departure=pd.Timestamp(departure),
        median_min=float(dist.median()[0]) / 60.0,
        mean_min=float(dist.mean()[0]) / 60.0,
        std_min=float(dist.std()[0]) / 60.0,
        intervals=interval_table(dist, levels),
        threshold_min=float(threshold_min),
        prob_within=float(dist.prob_within(60.0 * threshold_min)[0]),
        dist=dist,
    )


def density_curve(
    dist: MixtureDistribution,
    *,
    n_points: int = 300,
    lower_q: float = 0.001,
    upper_q: float = 0.995,
) -> pd.DataFrame:
    """The exact mixture density of the first query and its members, per minute.

    Columns ``minutes``, ``density`` (probability per minute) and ``member_0``, ...
    (each member's density divided by the number of members, so that they add up to
    the mixture: what each member contributes).
    """
    lo, hi = dist.ppf(np.array([[lower_q], [upper_q]]))[:, 0]
    pad = 0.05 * (hi - lo)
    t = np.linspace(max(lo - pad, 1e-3 * lo), hi + pad, n_points)
    density = dist.pdf(t[:, None])[:, 0] * 60.0
    members = dist.component_pdf(t[:, None])[:, :, 0] * 60.0 / dist.n_components
    frame = pd.DataFrame({"minutes": t / 60.0, "density": density})
    for m in range(dist.n_components):
        frame[f"member_{m}"] = members[m]
    return frame


PROFILE_QUANTILES: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def _q_name(q: float) -> str:
    return f"q{round(100 * q):02d}"


def time_of_day_profile(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    day: date | datetime | pd.Timestamp,
    *,
    step_min: int = 15,
    quantiles: Sequence[float] = PROFILE_QUANTILES,
) -> pd.DataFrame:
    """Predictive quantiles of the same trip for departures across one local day.

    Returns
    -------
    pandas.DataFrame
        ``hour`` (0 to 24, fractional), ``departure``, ``mean`` and one column per
        quantile named ``q05``, ``q10``, ... in minutes (fan chart data).
    """
    tz = model.tz_
    day = pd.Timestamp(day)
    if day.tz is not None:
        day = day.tz_convert(tz)
    minutes = np.arange(0, 24 * 60 + 1, step_min)
    local_naive = pd.Timestamp(day.date()) + pd.to_timedelta(minutes, unit="min")
    # wall-clock times: the repeated hour when daylight saving ends is read as its first
    # occurrence, and times in the spring-forward gap move to the first valid instant
    departures = local_naive.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
    n = len(departures)
    queries = pd.DataFrame(
        {
            "origin_lat": np.full(n, origin.lat),
            "origin_lon": np.full(n, origin.lon),
            "dest_lat": np.full(n, dest.lat),
            "dest_lon": np.full(n, dest.lon),
            "start_time": departures,
        }
    )
    dist = model.predict_dist(queries)
    q = np.asarray(quantiles, dtype=float)
    values = dist.ppf(q[:, None]) / 60.0
    frame = pd.DataFrame({"hour": minutes / 60.0, "departure": departures})
    frame["mean"] = dist.mean() / 60.0
    for qi, row in zip(q, values, strict=True):
        frame[_q_name(qi)] = row
    return frame


def observed_pair_trips(
    trips: pd.DataFrame | None,
    origin: Place,
    dest: Place,
    resolution: int,
    *,
    tz: str | None = None,
    min_trips: int = 3,
    max_rings: int = 1,
) -> tuple[pd.DataFrame, int]:
    """Observed trips between the two zones, for the time-of-day overlay.

    Trips whose origin lies in the origin's zone and destination in the
    destination's zone; if fewer than ``min_trips``, zones within ``max_rings``
    rings of them. Returns ``(frame, rings_used)`` with ``hour`` (local, fractional),
    ``minutes``, ``start_time`` and ``weekend``.
    """
    columns = ["hour", "minutes", "start_time", "weekend"]
    empty = pd.DataFrame(columns=columns)
    if trips is None or len(trips) == 0 or origin.zone is None or dest.zone is None:
        return empty, 0
    o_zone = h3.latlng_to_cell(origin.lat, origin.lon, resolution)
    d_zone = h3.latlng_to_cell(dest.lat, dest.lon, resolution)
    o_cells = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], resolution)
    d_cells = latlng_to_zone(trips["dest_lat"], trips["dest_lon"], resolution)
    for rings in range(max_rings + 1):
        o_set = set(h3.grid_disk(o_zone, rings))
        d_set = set(h3.grid_disk(d_zone, rings))
        mask = pd.Series(o_cells).isin(o_set).to_numpy() & pd.Series(d_cells).isin(d_set).to_numpy()
        if mask.sum() >= min_trips or rings == max_rings:
            break
    chosen = trips.loc[mask]
    start = chosen["start_time"]
    if tz is not None:
        start = start.dt.tz_convert(tz)
    frame = pd.DataFrame(
        {
            "hour": (start.dt.hour + start.dt.minute / 60.0).to_numpy(),
            "minutes": chosen["travel_time_s"].to_numpy(float) / 60.0,
            "start_time": start.to_numpy(),
            "weekend": (start.dt.dayofweek >= 5).to_numpy(),
        }
    )
    return frame.reset_index(drop=True), rings


# ======================================================================================
# Coverage maps from one origin
# ======================================================================================


def coverage_grid(
    model: TravelTimeModel,
    area: ServiceArea,
    origin: Place,
    departure,
    threshold_min: float,
) -> pd.DataFrame:
    """Median travel time and P(T <= threshold) from ``origin`` to every zone.

    Returns the area's grid (``zone``, ``number``, ``label``, ``lat``, ``lon``,
    ``boundary``) with ``median_min``, ``lower80_min``, ``upper80_min`` and
    ``prob_within`` (probability of arriving within ``threshold_min``).
    """
    grid = area.grid
    dist = model.predict_dist(query_frame(origin, grid, departure))
    quantiles = dist.ppf(np.array([[0.1], [0.5], [0.9]])) / 60.0
    out = grid[["zone", "number", "label", "lat", "lon", "boundary"]].copy()
    out["median_min"] = quantiles[1]
    out["lower80_min"] = quantiles[0]
    out["upper80_min"] = quantiles[2]
    out["prob_within"] = dist.prob_within(60.0 * float(threshold_min))
    return out


def reachable_summary(grid: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """How many zones are reached within the threshold with at least ``confidence``."""
    reached = grid["prob_within"].to_numpy() >= confidence
    return {
        "n_zones": len(grid),
        "n_reached": int(reached.sum()),
        "share": float(reached.mean()) if len(grid) else 0.0,
        "confidence": float(confidence),
    }


# Colour palettes (RGB), light to dark. Okabe-Ito origin/destination colours are
# distinguishable with the common colour-vision deficiencies.
ORIGIN_RGB = (0, 114, 178)
DEST_RGB = (213, 94, 0)
_TIME_PALETTE = [
    (255, 255, 204),
    (199, 233, 180),
    (127, 205, 187),
    (65, 182, 196),
    (44, 127, 184),
    (37, 52, 148),
]
_PROB_PALETTE = [  # sequential greens: the zones reached with >= 90 % stand out
    (240, 240, 240),
    (199, 233, 192),
    (161, 217, 155),
    (65, 171, 93),
    (0, 109, 44),
]
PROBABILITY_EDGES = (0.0, 0.5, 0.8, 0.9, 0.95, 1.0)


def nice_edges(values: np.ndarray, n_bins: int = 6) -> np.ndarray:
    """Rounded, increasing bin edges spanning ``values`` (for a legend in minutes).

    Examples
    --------
    >>> nice_edges(np.array([3.2, 7.9, 18.4, 41.0]), 4).tolist()
    [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.linspace(0.0, 1.0, n_bins + 1)
    lo, hi = float(values.min()), float(values.max())
    raw_step = max((hi - lo) / n_bins, 1e-9)
    magnitude = 10 ** math.floor(math.log10(raw_step))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw_step)
    start = math.floor(lo / step) * step
    stop = math.ceil(hi / step) * step
    if stop <= hi:
        stop += step
    return np.arange(start, stop + 0.5 * step, step)


def binned_colors(
    values: np.ndarray,
    edges: Sequence[float],
    palette: Sequence[tuple[int, int, int]],
    *,
    alpha: int = 180,
) -> np.ndarray:
    """RGBA colour of each value by bin (``edges`` increasing); NaN is grey.

    The palette is stretched over the bins when their numbers differ.
    """
    values = np.asarray(values, dtype=float)
    edges = np.asarray(edges, dtype=float)
    n_bins = len(edges) - 1
    bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n_bins - 1)
    pick = np.round(np.linspace(0, len(palette) - 1, n_bins)).astype(int)
    colours = np.asarray(palette, dtype=np.int64)[pick][bins]
    rgba = np.column_stack([colours, np.full(values.size, alpha)])
    rgba[~np.isfinite(values)] = (160, 160, 160, 90)
    return rgba


def legend_entries(
    edges: Sequence[float], palette: Sequence[tuple[int, int, int]], fmt: Callable[[float], str]
) -> list[tuple[str, str]]:
    """``(label, "#rrggbb")`` per bin, for a legend beside the map."""
    n_bins = len(edges) - 1
    pick = np.round(np.linspace(0, len(palette) - 1, n_bins)).astype(int)
    out = []
    for i in range(n_bins):
        r, g, b = palette[pick[i]]
        out.append((f"{fmt(edges[i])} - {fmt(edges[i + 1])}", f"#{r:02x}{g:02x}{b:02x}"))
    return out


def coverage_colors(
    grid: pd.DataFrame, metric: str, *, n_bins: int = 6
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Fill colours of a coverage grid and the legend, by median time or probability."""
    if metric == "median":
        edges = nice_edges(grid["median_min"].to_numpy(), n_bins)
        colours = binned_colors(grid["median_min"].to_numpy(), edges, _TIME_PALETTE)
        legend = legend_entries(edges, _TIME_PALETTE, lambda v: f"{v:g} min")
        return colours, legend
    if metric == "probability":
        edges = np.asarray(PROBABILITY_EDGES)
        colours = binned_colors(grid["prob_within"].to_numpy(), edges, _PROB_PALETTE)
        legend = legend_entries(edges, _PROB_PALETTE, lambda v: f"{100 * v:g} %")
        return colours, legend
    raise ValueError(f"metric must be one of {COVERAGE_METRICS}, got {metric!r}")


def _export_frame(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float
) -> pd.DataFrame:
    out = grid.drop(columns=["boundary"], errors="ignore").copy()
    out = out.rename(columns={"prob_within": f"p_within_{_fmt_num(threshold_min)}min"})
    out.insert(0, "origin_lat", origin.lat)
    out.insert(1, "origin_lon", origin.lon)
    out.insert(2, "departure", pd.Timestamp(departure).isoformat())
    out.insert(3, "threshold_min", float(threshold_min))
    return out


def coverage_csv(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float, *, synthetic: bool = False
) -> bytes:
    """The coverage table as CSV (UTF-8), one row per zone."""
    out = _export_frame(grid, origin, departure, threshold_min)
    if synthetic:
        out["data"] = "SYNTHETIC (Synthetica, not a real city)"
    for column in ("median_min", "lower80_min", "upper80_min"):
        out[column] = out[column].round(3)
    return out.to_csv(index=False, float_format="%.6g").encode("utf-8")


def coverage_geojson(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float, *, synthetic: bool = False
) -> bytes:
    """The coverage map as a GeoJSON FeatureCollection of zone polygons."""
    props = _export_frame(grid, origin, departure, threshold_min)
    props["boundary"] = grid["boundary"].to_numpy()
    document = zones_geojson(props)
    document["origin"] = {"lat": origin.lat, "lon": origin.lon, "label": origin.label}
    document["departure"] = pd.Timestamp(departure).isoformat()
    document["threshold_min"] = float(threshold_min)
    document["synthetic"] = bool(synthetic)
    return json.dumps(document, allow_nan=False).encode("utf-8")


# ======================================================================================
# Map layer data
# ======================================================================================


def _rgba(rgb: tuple[int, int, int], alpha: int) -> list[int]:
    return [int(rgb[0]), int(rgb[1]), int(rgb[2]), int(alpha)]


def zone_layer_data(
    area: ServiceArea,
    state: ODState,
    *,
    fill: np.ndarray | None = None,
    tips: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Records of the clickable zone layer (grid order, so indices are grid rows).

    One record per zone: ``zone`` (the H3 id the map draws the hexagon from),
    ``label``, ``fill`` (RGBA) and ``tip`` (tooltip HTML). ``fill`` colours a
    choropleth; without it zones are pale and the origin and destination zones take
    their own colours.
    """
    grid = area.grid
    n = len(grid)
    fills = np.tile(np.array([120, 130, 140, 28]), (n, 1)) if fill is None else np.array(fill)
    if fill is None:
        index = area.zone_index
        for place, rgb in ((state.origin, ORIGIN_RGB), (state.dest, DEST_RGB)):
            if place is not None and place.zone in index:
                fills[index[place.zone]] = _rgba(rgb, 200)
    return pd.DataFrame(
        {
            "zone": grid["zone"].to_numpy(),
            "label": grid["label"].to_numpy(),
            "fill": fills.astype(int).tolist(),
            "tip": list(tips) if tips is not None else [""] * n,
        }
    )


def od_zone_data(state: ODState) -> pd.DataFrame:
    """The origin and destination zones, outlined in their colours above the map."""
    rows = [
        {"zone": place.zone, "line": _rgba(rgb, 255)}
        for place, rgb in ((state.origin, ORIGIN_RGB), (state.dest, DEST_RGB))
        if place is not None and place.zone is not None
    ]
    return pd.DataFrame(rows, columns=["zone", "line"])


def marker_data(state: ODState) -> pd.DataFrame:
    """Origin (A) and destination (B) markers."""
    rows = []
    for place, name, rgb in ((state.origin, "A", ORIGIN_RGB), (state.dest, "B", DEST_RGB)):
        if place is not None:
            rows.append(
                {
                    "lat": place.lat,
                    "lon": place.lon,
                    "name": name,
                    "label": place.label,
                    "color": _rgba(rgb, 255),
                }
            )
    return pd.DataFrame(rows, columns=["lat", "lon", "name", "label", "color"])


def boundary_layers(boundaries: Mapping[str, Any] | None) -> dict[str, dict]:
    """Split boundary GeoJSON into ``areas`` (polygons), ``lines`` and ``points`` collections."""
    groups: dict[str, list] = {"areas": [], "lines": [], "points": []}
    for feature in (boundaries or {}).get("features") or []:
        kind = ((feature or {}).get("geometry") or {}).get("type", "")
        if kind in ("Polygon", "MultiPolygon"):
            groups["areas"].append(feature)
        elif kind in ("LineString", "MultiLineString"):
            groups["lines"].append(feature)
        elif kind in ("Point", "MultiPoint"):
            groups["points"].append(feature)
    return {k: {"type": "FeatureCollection", "features": v} for k, v in groups.items() if v}


# ======================================================================================
# Relevance vectors
# ======================================================================================


def relevance_table(model: TravelTimeModel) -> pd.DataFrame:
    """One row per (member, relevance-vector trip), with minutes and distance.

    The columns of :meth:`TravelTimeModel.relevance_trips` plus ``travel_min`` and
    ``distance_km`` (straight line).
    """
    table = model.relevance_trips()
    table["travel_min"] = table["travel_time_s"] / 60.0
    table["distance_km"] = _haversine_km(
        table["origin_lat"], table["origin_lon"], table["dest_lat"], table["dest_lon"]
    )
    return table


def filter_relevance(
    table: pd.DataFrame,
    *,
    members: Sequence[int] | None = None,
    hours: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Rows of chosen members whose start hour lies in ``hours`` (inclusive; wraps).

    Examples
    --------
    >>> t = pd.DataFrame({"member": [0, 1, 1], "hour": [7, 8, 23]})
    >>> filter_relevance(t, members=[1], hours=(22, 8))["hour"].tolist()
    [8, 23]
    """
    mask = np.ones(len(table), dtype=bool)
    if members is not None:
        mask &= table["member"].isin(list(members)).to_numpy()
    if hours is not None:
        lo, hi = int(hours[0]), int(hours[1])
        hour = table["hour"].to_numpy()
        mask &= (hour >= lo) & (hour <= hi) if lo <= hi else (hour >= lo) | (hour <= hi)
    return table.loc[mask].reset_index(drop=True)


_WEIGHT_PALETTE = [(254, 224, 139), (253, 174, 97), (244, 109, 67), (215, 48, 39), (165, 0, 38)]
_WIDTH_PALETTE = [(199, 233, 192), (116, 196, 118), (49, 163, 84), (0, 109, 44), (0, 68, 27)]


def relevance_colors(
    table: pd.DataFrame, by: str = "weight"
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Arc colours by |weight| (quantile bins) or by kernel width (one colour per width)."""
    if by == "weight":
        values = table["weight"].to_numpy(float)
        if values.size == 0:
            return np.empty((0, 4), dtype=np.int64), []
        edges = np.unique(np.quantile(values, np.linspace(0, 1, len(_WEIGHT_PALETTE) + 1)))
        if edges.size < 2:
            edges = np.array([values.min(), values.min() + 1.0])
        colours = binned_colors(values, edges, _WEIGHT_PALETTE, alpha=150)
        return colours, legend_entries(edges, _WEIGHT_PALETTE, lambda v: f"{v:.3g}")
    if by == "width":
        values = table["width"].to_numpy(float)
        widths = np.unique(values[np.isfinite(values)])
        if widths.size == 0:
            return np.tile([150, 150, 150, 200], (len(values), 1)), []
        edges = np.append(widths, widths[-1] + 1.0)
        colours = binned_colors(values, edges, _WIDTH_PALETTE, alpha=150)
        legend = legend_entries(edges, _WIDTH_PALETTE, lambda v: f"{v:.3g}")
        legend = [(f"width {w:.3g}", colour) for w, (_, colour) in zip(widths, legend, strict=True)]
        return colours, legend
    raise ValueError(f"colour arcs 'by' must be 'weight' or 'width', got {by!r}")


def elbo_curves(model: TravelTimeModel) -> pd.DataFrame:
    """Each member's ELBO per iteration (long format: ``member``, ``iteration``, ``elbo``)."""
    frames = []
    for m, member in enumerate(model.members_):
        elbo = np.asarray(getattr(member, "elbo_", []), dtype=float)
        frames.append(
            pd.DataFrame({"member": m, "iteration": np.arange(1, elbo.size + 1), "elbo": elbo})
        )
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["member", "iteration", "elbo"])
    )


def member_table(model: TravelTimeModel) -> pd.DataFrame:
    """Per member: relevance vectors, shard size, noise and the noise as a multiplicative spread.

    For a log-target model the noise standard deviation s is on log-seconds, so a
    trip's noise is a factor exp(+-s): ``noise_pct`` = 100 (exp(s) - 1).
    """
    rows = []
    shard = getattr(model, "shard_sizes_", [None] * len(model.members_))
    for m, member in enumerate(model.members_):
        s = float(member.noise_std_)
        row = {
            "member": m,
            "relevance_vectors": int(member.n_relevance_),
            "shard_trips": None if shard[m] is None else int(shard[m]),
            "noise_std": s,
            "iterations": len(getattr(member, "elbo_", [])),
        }
        row["noise_pct"] = 100.0 * (math.exp(s) - 1.0) if model.target == "log" else None
        rows.append(row)
    return pd.DataFrame(rows)


def noise_sentence(model: TravelTimeModel) -> str:
    """The noise estimate in words."""
    s = np.array([float(m.noise_std_) for m in model.members_])
    if model.target == "log":
        pct = 100.0 * (np.exp(np.median(s)) - 1.0)
        text = (
            f"Noise std {np.median(s):.3f} on log-seconds (median over members, range "
            f"{s.min():.3f}-{s.max():.3f}): an unexplained spread of about ±{pct:.0f} % "
            "of a trip's typical time."
        )
    else:
        text = f"Noise std {np.median(s):.1f} s (median over members)."
    if model.noise_scale_coef_.any():
        km = (0.5, 2.0, 10.0)
        factors = ", ".join(
            f"{g:.2f} times at {k:g} km" for k, g in zip(km, model.noise_scale_at(km), strict=True)
        )
        text += f" The spread is scaled with trip distance ({factors})."
    return text


# ======================================================================================
# Retraining: uploads, training, evaluation, publishing
# ======================================================================================

MAX_UPLOAD_MB = 200
MAX_DECOMPRESSED_MB = 2000
UPLOAD_TYPES = ("csv", "txt", "tsv", "parquet", "pq", "gz", "bz2", "xz", "zip")


class UploadError(ValueError):
    """An upload that cannot be used; the message is meant for the user."""


@dataclass
class UploadOutcome:
    """Result of reading one uploaded file."""

    name: str
    trips: pd.DataFrame | None = None
    report: CleaningReport | None = None
    error: str | None = None
    needs_mapping: bool = False
    columns: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.trips is not None and self.error is None


_GZIP, _BZ2, _XZ, _ZIP = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"PK\x03\x04"


def _decompressed_size(data: bytes, cap: int) -> int:
    """Bytes the upload expands to (stopping once above ``cap``): a zip-bomb guard."""
    if data.startswith(_ZIP):
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as exc:
            raise UploadError(f"the zip archive is damaged ({exc})") from None
        with archive:
            members = [i for i in archive.infolist() if not i.is_dir()]
            if len(members) != 1:
                raise UploadError(
                    f"a zip upload must hold exactly one CSV file, this one holds {len(members)}"
                )
            opened = archive.open(members[0])
    elif data.startswith(_GZIP):
        opened = gzip.GzipFile(fileobj=io.BytesIO(data))
    elif data.startswith(_BZ2):
        opened = bz2.BZ2File(io.BytesIO(data))
    elif data.startswith(_XZ):
        opened = lzma.LZMAFile(io.BytesIO(data))
    else:
        return len(data)
    total = 0
    try:
        with opened as handle:
            while total <= cap and (chunk := handle.read(1 << 20)):
                total += len(chunk)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as exc:
        raise UploadError(f"the compressed data is damaged ({exc})") from None
    return total


def check_upload(name: str, data: bytes, *, max_mb: float = MAX_UPLOAD_MB) -> None:
    """Refuse uploads that are empty, too large, or expand too much (raises UploadError)."""
    size = len(data)
    if size == 0:
        raise UploadError(f"{name} is empty")
    if size > max_mb * 2**20:
        raise UploadError(
            f"{name} is {size / 2**20:.0f} MB, above the {max_mb:g} MB upload limit; split it "
            "into several files"
        )
    cap = int(MAX_DECOMPRESSED_MB * 2**20)
    if _decompressed_size(data, cap) > cap:
        raise UploadError(f"{name} expands to more than {MAX_DECOMPRESSED_MB} MB when decompressed")


def _sniff_delimiter(first_line: str) -> str:
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=counts.get)
    return best if counts[best] > 0 else ","


def _text_head(data: bytes) -> str:
    head = data[:65536]
    if data.startswith(_GZIP):
        head = zlib.decompressobj(wbits=31).decompress(data[:65536], 65536)
    elif data.startswith(_BZ2):
        head = bz2.BZ2Decompressor().decompress(data[:65536], max_length=65536)
    elif data.startswith(_XZ):
        head = lzma.LZMADecompressor().decompress(data[:65536], max_length=65536)
    elif data.startswith(_ZIP):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            with archive.open(archive.infolist()[0]) as handle:
                head = handle.read(65536)
    return head.decode("utf-8-sig", errors="replace")


def upload_columns(data: bytes) -> list[str]:
    """Column names of an uploaded CSV or Parquet file (for the column-mapping form)."""
    if data[:4] == b"PAR1":
        return list(pq.read_schema(io.BytesIO(data)).names)
    first = _text_head(data).splitlines()[0] if data else ""
    header = pd.read_csv(io.StringIO(first), sep=_sniff_delimiter(first), nrows=0)
    return [str(c) for c in header.columns]


def read_upload(
    name: str,
    data: bytes,
    *,
    column_map: Mapping[str, str] | None = None,
    max_mb: float = MAX_UPLOAD_MB,
) -> UploadOutcome:
    """Read one uploaded file into clean trips and a cleaning report, never raising.

    The file is only parsed as CSV text or Parquet (nothing is executed or
    unpickled). An unknown schema yields ``needs_mapping=True`` and the file's
    ``columns`` so the user can name them; any other problem yields ``error``.
    """
    outcome = UploadOutcome(name=name)
    try:
        check_upload(name, data, max_mb=max_mb)
        trips, report = read_trips(
            data, column_map=dict(column_map) if column_map else None, source=name
        )
    except UploadError as exc:
        outcome.error = str(exc)
        return outcome
    except ValueError as exc:
        message = str(exc)
        outcome.error = message
        if "could not recognise the trip schema" in message:
            outcome.needs_mapping = True
            try:
                outcome.columns = upload_columns(data)
            except Exception:  # the header is unreadable: no form then
                outcome.columns = []
                outcome.needs_mapping = False
        return outcome
    except Exception as exc:  # any parser failure is the file's fault
        outcome.error = f"{name} could not be read as a trip table ({type(exc).__name__}: {exc})"
        return outcome
    if len(trips) == 0:
        outcome.report = report
        outcome.error = f"{name}: no row passed the cleaning checks (see the report)"
        return outcome
    outcome.trips, outcome.report = trips, report
    return outcome


def distance_to_store_km(store: TripStore, trips: pd.DataFrame) -> float | None:
    """Distance between the median origins of new trips and of the stored ones.

    Hundreds of kilometres mean another city: training on both would spread the
    model's zones over everything in between.
    """
    center = store.center()
    if center is None or len(trips) == 0:
        return None
    lat = float(trips["origin_lat"].median())
    lon = float(trips["origin_lon"].median())
    return float(_haversine_km(lat, lon, *center))


MAPPING_ROLES = (
    ("start_time", "Start time (pickup)"),
    ("travel_time_s", "Travel time in seconds"),
    ("end_time", "... or end time (drop-off)"),
    ("origin_lat", "Origin latitude"),
    ("origin_lon", "Origin longitude"),
    ("dest_lat", "Destination latitude"),
    ("dest_lon", "Destination longitude"),
)


def guess_column_map(columns: Sequence[str]) -> dict[str, str]:
    """A first guess of the mapping form from common column names.

    Examples
    --------
    >>> guess_column_map(["pickup_time", "duration_s", "plat", "plon", "dlat", "dlon"])
    {'start_time': 'pickup_time', 'travel_time_s': 'duration_s'}
    """
    patterns = {
        "start_time": r"(start|pickup|depart).*(time|date|ts)|^start$",
        "end_time": r"(end|drop|arriv).*(time|date|ts)",
        "travel_time_s": r"(duration|seconds|travel_?time|trip_?sec)",
        "origin_lat": r"(origin|pickup|start|from).*lat",
        "origin_lon": r"(origin|pickup|start|from).*(lon|lng)",
        "dest_lat": r"(dest|dropoff|drop|end|to).*lat",
        "dest_lon": r"(dest|dropoff|drop|end|to).*(lon|lng)",
    }
    guess: dict[str, str] = {}
    for role, pattern in patterns.items():
        for column in columns:
            if re.search(pattern, str(column).lower()) and column not in guess.values():
                guess[role] = str(column)
                break
    if "travel_time_s" in guess:
        guess.pop("end_time", None)
    return guess


def _compression(data: bytes) -> str | None:
    magic = {_GZIP: "gzip", _BZ2: "bz2", _XZ: "xz", _ZIP: "zip"}
    return next((kind for prefix, kind in magic.items() if data.startswith(prefix)), None)


def example_rows(data: bytes, report: CleaningReport, *, per_reason: int = 3) -> pd.DataFrame:
    """The raw rows behind the report's examples, as text, with their reason and row number.

    Row numbers follow :mod:`vrvm.trips` (line numbers with the header as line 1;
    position + 2 for Parquet), so a row can be found in the file.
    """
    wanted: dict[int, str] = {}
    for reason, rows in report.examples.items():
        for row in rows[:per_reason]:
            wanted.setdefault(int(row), reason)
    if not wanted:
        return pd.DataFrame(columns=["reason", "row"])
    try:
        if data[:4] == b"PAR1":
            table = pq.read_table(io.BytesIO(data))
            rows_used = [r for r in sorted(wanted) if 0 <= r - 2 < table.num_rows]
            picked = table.take([r - 2 for r in rows_used]).to_pandas().astype(str)
        else:
            head = _text_head(data)
            first = head.splitlines()[0] if head else ""
            line_numbers = set(wanted)  # 1-based, header = line 1
            picked = pd.read_csv(
                io.BytesIO(data),
                sep=_sniff_delimiter(first),
                dtype=str,
                keep_default_na=False,
                skip_blank_lines=False,
                compression=_compression(data),
                skiprows=lambda i: i != 0 and (i + 1) not in line_numbers,
                encoding="utf-8",
                encoding_errors="replace",
            )
            rows_used = sorted(wanted)[: len(picked)]
    except Exception:  # examples are a courtesy; the report stands alone
        return pd.DataFrame(columns=["reason", "row"])
    picked = picked.reset_index(drop=True)
    picked.insert(0, "row", rows_used)
    picked.insert(0, "reason", [wanted[r] for r in rows_used])
    return picked


def report_table(report: CleaningReport) -> pd.DataFrame:
    """The cleaning report per reason, only the reasons that fired, share in percent."""
    frame = report.to_frame()
    frame = frame.loc[frame["count"] > 0].copy()
    frame["share"] = (100 * frame["share"]).round(2)
    return frame.rename(columns={"share": "share_pct"}).reset_index(drop=True)


def parse_widths(text: str | Sequence[float]) -> str | tuple[float, ...]:
    """``"auto"`` or a list of positive kernel widths from text such as ``"1.5, 3"``.

    Examples
    --------
    >>> parse_widths("auto"), parse_widths("1.5; 3")
    ('auto', (1.5, 3.0))
    """
    if not isinstance(text, str):
        values = tuple(float(v) for v in text)
    else:
        if text.strip().lower() in ("", "auto"):
            return "auto"
        try:
            values = tuple(float(v) for v in re.split(r"[\s,;]+", text.strip()) if v)
        except ValueError:
            raise ValueError(
                f"kernel widths must be 'auto' or numbers such as '1.5, 3', got {text!r}"
            ) from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"kernel widths must be positive numbers, got {text!r}")
    return values


@dataclass(frozen=True)
class TrainingSettings:
    """The retrain form."""

    n_members: int = 4
    kernel_widths: str | tuple[float, ...] = "auto"
    max_basis: int = 500
    holdout_fraction: float = 0.2
    holdout_split: str = "random"  # or "latest" (the most recent trips)
    random_state: int = 0
    n_jobs: int = 1

    def model_params(self) -> dict[str, Any]:
        widths = (
            self.kernel_widths if isinstance(self.kernel_widths, str) else list(self.kernel_widths)
        )
        return {
            "n_members": int(self.n_members),
            "kernel_widths": widths,
            "max_basis": int(self.max_basis),
            "random_state": int(self.random_state),
            "n_jobs": int(self.n_jobs),
        }


def split_holdout(
    trips: pd.DataFrame, fraction: float, *, how: str = "random", seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split trips into training and hold-out parts.

    ``how="random"``: a seeded random share; ``how="latest"``: the most recent trips
    (a forecast-like test of the future).
    """
    if not 0 < fraction < 1:
        raise ValueError(f"the hold-out fraction must lie strictly between 0 and 1, got {fraction}")
    n = len(trips)
    n_hold = round(fraction * n)
    if n_hold < 1 or n - n_hold < 1:
        raise ValueError(f"{n} trips are too few to hold out {100 * fraction:g} % of them")
    if how == "random":
        order = np.random.default_rng(seed).permutation(n)
    elif how == "latest":
        order = np.argsort(trips["start_time"].to_numpy(), kind="stable")[::-1]
    else:
        raise ValueError(f"how must be 'random' or 'latest', got {how!r}")
    hold = np.sort(order[:n_hold])
    keep = np.sort(order[n_hold:])
    train = trips.iloc[keep].reset_index(drop=True)
    holdout = trips.iloc[hold].reset_index(drop=True)
    train.attrs, holdout.attrs = dict(trips.attrs), dict(trips.attrs)
    return train, holdout


def train_model(
    trips: pd.DataFrame,
    settings: TrainingSettings,
    progress: Callable[[int, int, float], Any] | None = None,
) -> TravelTimeModel:
    """Fit a new model (never touches a published one); it records the trips' provenance."""
    return TravelTimeModel(**settings.model_params()).fit(trips, progress=progress)


RETRAIN_FULL = "full"
RETRAIN_UPDATE = "update"


def retrain_options(model_cls: type = TravelTimeModel) -> list[dict[str, Any]]:
    """The ways to produce a candidate model, and whether each is available.

    ``full`` trains from scratch on all stored trips; ``update`` (when the library has
    ``TravelTimeModel.update``) updates a copy of the active model with the trips
    added since it was published.
    """
    return [
        {
            "key": RETRAIN_FULL,
            "label": "Full retrain",
            "available": True,
            "help": "Train a new ensemble from scratch on the trips in the store.",
        },
        {
            "key": RETRAIN_UPDATE,
            "label": "Update with new trips (fast)",
            "available": callable(getattr(model_cls, "update", None)),
            "help": "Update a copy of the active model with the trips added since it was "
            "published (sequential Bayesian update).",
        },
    ]


def update_model(active: TravelTimeModel, new_trips: pd.DataFrame) -> TravelTimeModel:
    """A copy of ``active`` updated with ``new_trips`` (the cached model is not mutated)."""
    if not callable(getattr(active, "update", None)):
        raise NotImplementedError("this vrvm has no TravelTimeModel.update yet")
    candidate = copy.deepcopy(active)
    result = candidate.update(new_trips)
    return result if isinstance(result, TravelTimeModel) else candidate


def share_inside_bbox(model: TravelTimeModel, trips: pd.DataFrame) -> float:
    """Share of trips whose both ends lie in the model's training bounding box.

    Below about one half, the model was trained on another area and its scores on
    these trips are not comparable.
    """
    bbox = (getattr(model, "training_summary_", None) or {}).get("bbox")
    if not bbox or len(trips) == 0:
        return 0.0
    lat_lo, lon_lo, lat_hi, lon_hi = bbox
    inside = np.ones(len(trips), dtype=bool)
    for lat_c, lon_c in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        lat, lon = trips[lat_c].to_numpy(float), trips[lon_c].to_numpy(float)
        inside &= (lat >= lat_lo) & (lat <= lat_hi) & (lon >= lon_lo) & (lon <= lon_hi)
    return float(inside.mean())


def evaluate_models(
    models: Mapping[str, TravelTimeModel], holdout: pd.DataFrame
) -> dict[str, dict]:
    """:meth:`TravelTimeModel.evaluate` of each model on the same hold-out trips."""
    return {name: model.evaluate(holdout) for name, model in models.items()}


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


def predicted_vs_observed(
    model: TravelTimeModel,
    holdout: pd.DataFrame,
    *,
    level: float = 0.8,
    max_points: int = 400,
    seed: int = 0,
) -> pd.DataFrame:
    """Observed vs predicted median with a central interval, in minutes (a sample)."""
    if len(holdout) > max_points:
        rows = np.sort(np.random.default_rng(seed).choice(len(holdout), max_points, replace=False))
        holdout = holdout.iloc[rows]
    dist = model.predict_dist(holdout)
    lo, hi = dist.interval(level)
    observed = holdout["travel_time_s"].to_numpy(float) / 60.0
    frame = pd.DataFrame(
        {
            "observed_min": observed,
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
    model: TravelTimeModel,
    holdout: pd.DataFrame,
    levels: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95),
) -> pd.DataFrame:
    """Observed coverage of central intervals at each nominal level (the diagonal is ideal)."""
    dist = model.predict_dist(holdout)
    y = holdout["travel_time_s"].to_numpy(float)
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


def publish_model(
    home: Path,
    model: TravelTimeModel,
    *,
    metrics: Mapping[str, Any] | None,
    info: Mapping[str, Any],
    training_trips: pd.DataFrame | None = None,
) -> int:
    """Save ``model`` as a new version in the store and activate it.

    The store writes the version atomically and only then moves the active pointer,
    so a failure leaves the active model untouched.
    """
    store = model_store(home)
    if training_trips is not None:
        save_training_trips(home, training_trips)
    record = dict(info)
    record.setdefault("metrics", compact_metrics(metrics))
    record.setdefault("n_members", len(model.members_))
    return store.add(lambda path: model.save(path, metrics=metrics), info=record, activate=True)


def versions_table(store: ModelStore) -> pd.DataFrame:
    """The store's versions, newest first, with what they were trained on and scores."""
    rows = []
    for v in store.versions():
        info = v.info or {}
        metrics = info.get("metrics") or {}
        crps = metrics.get("crps_s")
        data = info.get("data", "")
        n_trips = info.get("n_trips")
        if isinstance(data, Mapping):  # as `vrvm update` records it
            n_trips = data.get("n_trips", n_trips)
            data = data.get("source", "")
        rows.append(
            {
                "version": v.version,
                "active": v.is_active,
                "created (UTC)": v.created.strftime("%Y-%m-%d %H:%M:%S"),
                "kind": info.get("kind", ""),
                "parent": info.get("parent"),
                "trips": n_trips,
                "members": info.get("n_members"),
                "hold-out CRPS (min)": None if crps is None else round(crps / 60.0, 3),
                "synthetic": bool(info.get("synthetic", False)),
                "data": str(data),
            }
        )
    columns = [
        "version",
        "active",
        "created (UTC)",
        "kind",
        "parent",
        "trips",
        "members",
        "hold-out CRPS (min)",
        "synthetic",
        "data",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("version", ascending=False).reset_index(drop=True)


def demo_upload_trips(n_trips: int = 2000, seed: int = 7) -> pd.DataFrame:
    """Synthetic trips an analyst can add to try the retrain flow without data of their own."""
    trips = synthetic_city(n_trips, seed=seed)
    trips.attrs["source"] = f"synthetic demo trips (n={n_trips}, seed={seed}) - SYNTHETIC"
    return trips


@dataclass
class RetrainResult:
    """Candidates trained from the trip store, scored beside the active model.

    Attributes
    ----------
    train, holdout : pandas.DataFrame
        The split of the stored trips (every model is scored on the same ``holdout``).
    candidates : dict of str to TravelTimeModel
        New models by display name (not yet published).
    kinds : dict of str to str
        ``"train"`` or ``"update"`` per candidate (recorded when publishing).
    metrics : dict of str to dict
        Hold-out scores of the candidates and of the active model.
    parent_version : int or None
        The active version when training started.
    errors : dict of str to str
        Options that failed, with the message (the active model is untouched).
    """

    train: pd.DataFrame
    holdout: pd.DataFrame
    settings: TrainingSettings
    candidates: dict[str, TravelTimeModel] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, dict] = field(default_factory=dict)
    parent_version: int | None = None
    active_name: str | None = None
    errors: dict[str, str] = field(default_factory=dict)
    trips_used: dict[str, int] = field(default_factory=dict)
    comparable: bool = True


def run_retrain(
    trips: pd.DataFrame,
    settings: TrainingSettings,
    *,
    options: Sequence[str] = (RETRAIN_FULL,),
    active: TravelTimeModel | None = None,
    active_version: int | None = None,
    new_trips: pd.DataFrame | None = None,
    progress: Callable[[str, int, int, float], Any] | None = None,
) -> RetrainResult:
    """Split the trips, produce the chosen candidates and score everything on the hold-out.

    ``options`` holds ``"full"`` (train from scratch on the training part) and/or
    ``"update"`` (update a copy of ``active`` with the training-part rows of
    ``new_trips``). A failing option is recorded in ``errors``; nothing is published
    and the active model object is never modified.
    """
    from vrvm.tripstore import trip_ids

    train, holdout = split_holdout(
        trips, settings.holdout_fraction, how=settings.holdout_split, seed=settings.random_state
    )
    result = RetrainResult(
        train=train, holdout=holdout, settings=settings, parent_version=active_version
    )

    def reporter(option: str):
        if progress is None:
            return None
        return lambda done, total, elapsed: progress(option, done, total, elapsed)

    labels = {o["key"]: o["label"] for o in retrain_options()}
    for option in options:
        name = labels.get(option, option)
        try:
            if option == RETRAIN_FULL:
                model = train_model(train, settings, progress=reporter(option))
                result.trips_used[name] = len(train)
            elif option == RETRAIN_UPDATE:
                if active is None:
                    raise ValueError("there is no active model to update")
                fresh = (
                    train
                    if new_trips is None
                    else train.loc[np.isin(trip_ids(train), trip_ids(new_trips))]
                )
                if len(fresh) == 0:
                    raise ValueError("no trips were added since the active model was published")
                model = update_model(active, fresh.reset_index(drop=True))
                result.trips_used[name] = len(fresh)
            else:
                raise ValueError(f"unknown retrain option {option!r}")
        except Exception as exc:  # a failed option must not stop the others
            result.errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        result.candidates[name] = model
        result.kinds[name] = option if option == RETRAIN_UPDATE else "train"
    models: dict[str, TravelTimeModel] = dict(result.candidates)
    if active is not None:
        result.active_name = (
            f"active (v{active_version})" if active_version is not None else "active"
        )
        models[result.active_name] = active
        result.comparable = share_inside_bbox(active, holdout) >= 0.5
    result.metrics = evaluate_models(models, holdout)
    return result


def publish_candidate(home: Path, result: RetrainResult, name: str) -> int:
    """Publish one candidate of ``result`` as the new active version."""
    model = result.candidates[name]
    kind = result.kinds.get(name, "train")
    train = result.train
    start, end = train["start_time"].min(), train["start_time"].max()
    info = {
        "kind": kind,
        "parent": result.parent_version,
        "n_trips": result.trips_used.get(name, len(train)),
        "holdout_n": len(result.holdout),
        "data": f"trip store: {len(train):,} trips, {start:%Y-%m-%d} to {end:%Y-%m-%d}",
        "synthetic": bool(train.attrs.get("synthetic", False)),
        "settings": {
            "n_members": result.settings.n_members,
            "kernel_widths": result.settings.kernel_widths
            if isinstance(result.settings.kernel_widths, str)
            else list(result.settings.kernel_widths),
            "max_basis": result.settings.max_basis,
            "holdout_fraction": result.settings.holdout_fraction,
            "holdout_split": result.settings.holdout_split,
        },
    }
    return publish_model(
        home,
        model,
        metrics=result.metrics.get(name),
        info=info,
        training_trips=train if kind == "train" else None,
    )
