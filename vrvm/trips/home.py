"""The data home: where a deployment keeps its models, its trips and what models saw.

Layout of ``$VRVM_HOME`` (default ``./.vrvm``)::

    home/
        models/                    the model store (numbered versions, active pointer)
        trips/                     the trip store (every accepted upload)
        training/<sha256>.parquet  each model's training trips, by content hash
        .first-start.lock          held while the first start trains the demo model

The dashboard, the CLI and (later) the HTTP API all find their stores through here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from vrvm.trips.durable import atomic_write, exclusive_lock
from vrvm.trips.model import TravelTimeModel
from vrvm.trips.model_store import ModelStore
from vrvm.trips.table import CANONICAL_COLUMNS, trips_sha256
from vrvm.trips.trip_store import TripStore

__all__ = [
    "HOME_ENV",
    "data_home",
    "first_start_lock",
    "load_training_trips",
    "model_store",
    "save_training_trips",
    "trip_store",
]

HOME_ENV = "VRVM_HOME"
DEFAULT_HOME = ".vrvm"
MODELS_DIR = "models"
TRIPS_DIR = "trips"
TRAINING_DIR = "training"
FIRST_START_LOCK = ".first-start.lock"


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """Directory holding the model store and the trip store.

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


def model_store(home: str | os.PathLike[str]) -> ModelStore:
    """The versioned model store under ``home``."""
    return ModelStore(Path(home) / MODELS_DIR)


def trip_store(home: str | os.PathLike[str]) -> TripStore:
    """The persistent store of accepted trips under ``home``."""
    return TripStore(Path(home) / TRIPS_DIR)


def first_start_lock(home: str | os.PathLike[str]):
    """Exclusive lock so that two processes starting at once train the demo model once."""
    return exclusive_lock(Path(home) / FIRST_START_LOCK)


def training_trips_path(home: str | os.PathLike[str], sha256: str) -> Path:
    """Where the training trips with content hash ``sha256`` are kept."""
    if not re.fullmatch(r"[0-9a-f]{64}", str(sha256)):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return Path(home) / TRAINING_DIR / f"{sha256}.parquet"


def save_training_trips(home: str | os.PathLike[str], trips: pd.DataFrame) -> Path:
    """Keep a model's training trips, content-addressed by :func:`vrvm.trips_sha256`.

    Written atomically; identical data sets share one file. The dashboard overlays them
    on the time-of-day profile and draws the service area from them.
    """
    path = training_trips_path(home, trips_sha256(trips))
    if not path.exists():
        atomic_write(path, lambda tmp: trips[list(CANONICAL_COLUMNS)].to_parquet(tmp, index=False))
    return path


def load_training_trips(
    home: str | os.PathLike[str], model: TravelTimeModel
) -> pd.DataFrame | None:
    """The model's training trips if they were kept in ``home``, else None."""
    try:
        path = training_trips_path(home, model.training_summary_.get("sha256", ""))
    except ValueError:
        return None
    if not path.is_file():
        return None
    trips = pd.read_parquet(path)
    trips["start_time"] = pd.to_datetime(trips["start_time"], utc=True).dt.tz_convert(model.tz_)
    return trips
