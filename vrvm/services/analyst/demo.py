"""The built-in demo: Synthetica, the synthetic city, and the model trained on it.

On first start (an empty model store) :func:`ensure_demo_model` generates the synthetic
city, trains the default model (named "Synthetica (synthetic)"), scores it on an
independent synthetic sample and publishes it, once even when several processes start
together. :func:`demo_trips` gives
analysts synthetic trips to try the retrain flow, and :func:`demo_predictions` the
example answers ``vrvm demo`` prints. Everything here is labelled synthetic. A data home
that cannot be written fails the first start with a :class:`StorageError` saying which
path, why, and to set ``VRVM_HOME`` to a writable folder.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vrvm.services.access.policy import ANALYST, Access
from vrvm.services.analyst.retrain import parse_widths
from vrvm.services.versions.models import SYNTHETIC_MODEL_NAME, activate_version, publish_model
from vrvm.trips.home import HOME_ENV, Home
from vrvm.trips.model.travel_time import ProgressCallback, TravelTimeModel
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.settings import env_int
from vrvm.trips.store.durable import StorageError, storage_error
from vrvm.trips.synthetic import SYNTHETIC_CITY_TZ, synthetic_city, synthetic_lat_lon

__all__ = [
    "DEMO_DAY",
    "DEMO_DEPARTURES",
    "DEMO_LEVEL",
    "DEMO_TRIPS",
    "FIRST_START",
    "HOME_ADVICE",
    "DemoSettings",
    "StorageError",
    "demo_predictions",
    "demo_settings",
    "demo_trips",
    "ensure_demo_model",
    "home_advice",
    "prepare_home",
]


FIRST_START = Access(ANALYST, who="vrvm", how="first start")
"""Who publishes the demo model on an empty home (recorded as such)."""
HOME_ADVICE = f"set {HOME_ENV} to a writable folder"
"""What to do when the data home cannot be written."""
_NO_SPACE = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
_FULL_HOME_ADVICE = f"free some space, or set {HOME_ENV} to a folder on another disk"


def home_advice(exc: OSError) -> str:
    """What to do when ``exc`` stopped a write into the data home (a full disk or not)."""
    return _FULL_HOME_ADVICE if exc.errno in _NO_SPACE else HOME_ADVICE


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
    n_members = env_int(environ, "VRVM_DEMO_MEMBERS", 8)
    jobs_default = max(1, min(os.cpu_count() or 1, n_members))
    return DemoSettings(
        n_trips=env_int(environ, "VRVM_DEMO_TRIPS", 20_000, low=100),
        n_members=n_members,
        max_basis=env_int(environ, "VRVM_DEMO_MAX_BASIS", 1000),
        kernel_widths=parse_widths(environ.get("VRVM_DEMO_WIDTHS", "auto")),
        n_jobs=env_int(environ, "VRVM_N_JOBS", jobs_default),
    )


def prepare_home(home: Path) -> Path:
    """Create the data home if it is missing; a :class:`StorageError` if it cannot be.

    A home that exists is left as it is (a read-only home holding a model still serves
    it); a home under a file, or in a folder that cannot be written, fails here with
    the path, why, and what to do (:func:`home_advice`), before anything reads its stores.
    """
    home = Path(home)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(exc, home, advice=home_advice(exc)) from exc
    return home


def ensure_demo_model(
    home: Path,
    settings: DemoSettings | None = None,
    progress: ProgressCallback | None = None,
    stage: Callable[[str], Any] | None = None,
) -> tuple[int, bool]:
    """Make sure the store has an active model, training the demo model if it is empty.

    On first start (an empty model store) the synthetic city is generated, the default
    model trained on it (``progress(done, total, elapsed_s, phase)`` as the fit goes:
    :data:`~vrvm.trips.model.travel_time.ProgressCallback`),
    scored on an independent synthetic sample, and published as version 1. A store
    with versions but no active pointer gets its latest version activated.

    Returns
    -------
    (version, trained) : tuple of int and bool
        The active version, and whether it was trained by this call.

    Raises
    ------
    StorageError
        When the home cannot be written (read-only, full, no permission, a file where
        its folder should be): names the path, why, and what to do
        (:func:`home_advice`: set ``VRVM_HOME`` to a writable folder, or free space).
    """
    home = prepare_home(home)
    try:
        return _ensure_demo_model(home, settings or demo_settings(), progress, stage)
    except OSError as exc:
        raise storage_error(exc, exc.filename or home, advice=home_advice(exc)) from exc


def _ensure_demo_model(
    home: Path,
    settings: DemoSettings,
    progress: ProgressCallback | None,
    stage: Callable[[str], Any] | None,
) -> tuple[int, bool]:
    store = Home(home).models
    active = store.active_version()
    if active is not None:
        return active, False
    with Home(home).first_start_lock():
        active = store.active_version()  # another session may have finished meanwhile
        if active is not None:
            return active, False
        latest = store.latest_version()
        if latest is not None:
            activate_version(home, latest, by=FIRST_START, how="first start: latest version")
            return latest, False
        say = stage or (lambda _message: None)
        say(f"Generating {settings.n_trips:,} synthetic trips in Synthetica (synthetic city)")
        trips = synthetic_city(settings.n_trips, seed=settings.seed)
        holdout = synthetic_city(max(500, settings.n_trips // 10), seed=settings.seed + 1)
        say(f"Training {settings.n_members} ensemble members")
        model = TravelTimeModel(**settings.model_params(), name=SYNTHETIC_MODEL_NAME)
        model.fit(trips, progress=progress)
        say("Scoring on independent synthetic trips and saving")
        metrics = model.evaluate(holdout)
        info = {
            "name": SYNTHETIC_MODEL_NAME,
            "kind": "demo",
            "data": trips.attrs["source"],
            "synthetic": True,
            "n_trips": len(trips),
            "n_members": settings.n_members,
            "fit_time_s": round(float(model.fit_time_s_), 2),
        }
        version = publish_model(
            home, model, metrics=metrics, info=info, training_trips=trips, by=FIRST_START
        )
    return version, True


def demo_trips(n_trips: int = 2000, seed: int = 7) -> pd.DataFrame:
    """Synthetic trips an analyst can add to try the retrain flow without data of their own."""
    trips = synthetic_city(n_trips, seed=seed)
    trips.attrs["source"] = f"synthetic demo trips (n={n_trips}, seed={seed}) - SYNTHETIC"
    return trips


@dataclass(frozen=True)
class DemoTrip:
    """An example trip of ``vrvm demo``; ends in km east / north of Synthetica's centre."""

    label: str
    origin_km: tuple[float, float]
    dest_km: tuple[float, float]


# Places of the generative model documented in vrvm.trips.synthetic: downtown is
# [-2.5, 2.5] x [0, 4] km, the airport at (16, -9), and the river runs along
# y = -1.5 + sin(2 pi x / 12), bridged only at x = -6, 0 and 6; from downtown's east
# edge, 6 km south means a detour over a bridge (an 11 km route), 6 km north does not.
DEMO_TRIPS = (
    DemoTrip("Downtown -> airport", (0.0, 2.0), (16.0, -9.0)),
    DemoTrip("Downtown -> 6 km N, same bank", (2.0, 2.0), (3.0, 8.0)),
    DemoTrip("Downtown -> 6 km S, over river", (2.0, 2.0), (3.0, -4.0)),
    DemoTrip("West side -> east side", (-7.0, 5.0), (7.0, 5.0)),
    DemoTrip("Short hop inside downtown", (0.0, 2.0), (2.0, 3.0)),
)
DEMO_DAY = "2024-03-12"  # a Tuesday inside the six weeks the synthetic trips cover
DEMO_DEPARTURES = (("08:15", "rush"), ("03:00", "night"))
DEMO_LEVEL = 0.8


def demo_predictions(model) -> pd.DataFrame:
    """Example predictions of a model of the synthetic city, as ``vrvm demo`` prints them.

    One row per example trip and departure time (08:15 and 03:00 on a Tuesday, the
    city's clock), trip by trip: ``trip``, ``distance_km`` (straight line),
    ``departure``, then in minutes ``median_min``, ``lo_min`` / ``hi_min`` (the
    central 80 % interval) and ``deadline_min`` (T: the trip's 08:15 median plus a
    minute, rounded up to whole 5 minutes), and ``p_within``, P(travel time <= T).
    """
    records = []
    for trip in DEMO_TRIPS:
        origin_lat, origin_lon = synthetic_lat_lon(*trip.origin_km)
        dest_lat, dest_lon = synthetic_lat_lon(*trip.dest_km)
        for clock, _ in DEMO_DEPARTURES:
            records.append(
                {
                    "trip": trip.label,
                    "departure": clock,
                    "origin_lat": origin_lat,
                    "origin_lon": origin_lon,
                    "dest_lat": dest_lat,
                    "dest_lon": dest_lon,
                    "start_time": pd.Timestamp(f"{DEMO_DAY} {clock}", tz=SYNTHETIC_CITY_TZ),
                }
            )
    queries = pd.DataFrame.from_records(records)
    dist = model.predict_dist(queries)
    tail = (1 - DEMO_LEVEL) / 2
    lo, median, hi = dist.ppf(np.array([tail, 0.5, 1 - tail])[:, None])
    # One deadline per trip for both departures: its rush-hour median plus a minute,
    # rounded up to whole 5 minutes (so the rush-hour P(<=T) is clearly above one half).
    first_median = median.reshape(len(DEMO_TRIPS), len(DEMO_DEPARTURES))[:, 0]
    deadline_s = np.repeat(300.0 * np.ceil((first_median + 60.0) / 300.0), len(DEMO_DEPARTURES))
    return pd.DataFrame(
        {
            "trip": queries["trip"],
            "distance_km": haversine_km(
                queries["origin_lat"].to_numpy(),
                queries["origin_lon"].to_numpy(),
                queries["dest_lat"].to_numpy(),
                queries["dest_lon"].to_numpy(),
            ),
            "departure": queries["departure"],
            "median_min": median / 60,
            "lo_min": lo / 60,
            "hi_min": hi / 60,
            "deadline_min": deadline_s / 60,
            "p_within": dist.cdf(deadline_s),
        }
    )
