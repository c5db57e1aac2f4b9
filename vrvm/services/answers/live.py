"""The model a long-running server answers with, swapped when a new version is published.

:class:`LiveModel` serves the active model of a data home (or one model directory)
with its zones (:class:`~vrvm.services.map.area.ServiceArea`: the home's chosen zone file,
else hexagons from the training trips, with the trips indexed by zone for the support
counts). A watcher thread reads the home's active-version pointer every
``check_every_s`` seconds; when it names another version (a model published or
re-activated from the dashboard or the CLI), or another zone file was chosen, the new
model and its zones are loaded *beside* the old ones and then swapped in with one
assignment. A request takes :meth:`LiveModel.current` once and uses that
:class:`Served` snapshot to the end, so it never sees half of a swap, and no request
waits for or fails during a load. A version that cannot be loaded is logged and
reported (:attr:`LiveModel.last_error`), and the previous one keeps serving.

Nothing here writes to the stores: the home is healed once when it is opened
(:meth:`~vrvm.trips.home.Home.heal`), as the dashboard and the CLI do.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from vrvm.services.answers.indices import FreeFlowCache
from vrvm.services.map import area as area_svc
from vrvm.services.map.area import ServiceArea
from vrvm.services.versions.models import active_model_path, is_synthetic, model_name
from vrvm.trips.home import Home
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["LiveModel", "NoModelError", "Served"]

logger = logging.getLogger(__name__)


class NoModelError(RuntimeError):
    """The data home has no published model (yet)."""


@dataclass(frozen=True)
class Served:
    """One loaded model with its zones: what a request answers with.

    Attributes
    ----------
    version : int or None
        The store version (None for a model directory served directly).
    model : TravelTimeModel
        The fitted model (never mutated once served).
    area : ServiceArea
        Its zones; ``area.support`` indexes the training trips when they were kept.
    name : str
        The model's name (as the dashboard shows it).
    synthetic : bool
        Whether it was trained on the synthetic city.
    loaded_at : float
        ``time.time()`` when it was loaded.
    free_flow : FreeFlowCache
        This model's free-flow times, kept across requests.
    """

    version: int | None
    model: TravelTimeModel = field(repr=False)
    area: ServiceArea = field(repr=False)
    name: str
    synthetic: bool
    loaded_at: float
    free_flow: FreeFlowCache = field(default_factory=FreeFlowCache, repr=False)

    @property
    def tz(self) -> str:
        """The model's time zone (naive times are wall-clock times there)."""
        return self.model.tz_


def _zone_key(home: Path) -> str:
    entry = area_svc.zone_choice(home)
    return "" if entry is None else f"{entry.name}:{entry.fingerprint}"


def _load(home: Path | None, version: int | None, path: Path) -> Served:
    model = TravelTimeModel.load(path)
    trips = None if home is None else Home(home).training_trip_table(model)
    zones = None
    if home is not None:
        entry = area_svc.zone_choice(home)
        if entry is not None:
            try:
                zones = area_svc.load_zone_choice(home, entry.name)
            except (KeyError, ValueError, OSError) as exc:  # as the dashboard: hexagons
                logger.warning("the chosen zone file cannot be used (%s): hexagons", exc)
    area = area_svc.build_service_area(model, trips=trips, zones=zones)
    return Served(
        version=version,
        model=model,
        area=area,
        name=model_name(model),
        synthetic=is_synthetic(model),
        loaded_at=time.time(),
    )


class LiveModel:
    """The active model of a data home, or one model directory, kept current.

    Parameters
    ----------
    home : path-like, optional
        The data home whose active version is served and followed.
    model_dir : path-like, optional
        A model directory to serve as it is (no store, no swaps); exactly one of
        ``home`` and ``model_dir``.
    check_every_s : float, default=1.0
        Seconds between two reads of the home's active pointer by the watcher.

    Examples
    --------
    >>> import tempfile
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = model.save(Path(tmp) / "m")
    ...     live = LiveModel(model_dir=Path(tmp) / "m")
    ...     served = live.current()
    >>> served.version is None, len(served.model.members_)
    (True, 2)
    """

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        model_dir: str | Path | None = None,
        check_every_s: float = 1.0,
    ) -> None:
        if (home is None) == (model_dir is None):
            raise ValueError("give exactly one of home and model_dir")
        if not check_every_s > 0:
            raise ValueError(f"check_every_s must be positive, got {check_every_s!r}")
        self.home = None if home is None else Path(home)
        self.model_dir = None if model_dir is None else Path(model_dir)
        self.check_every_s = float(check_every_s)
        self.last_error: str | None = None
        self._served: Served | None = None
        self._key: tuple | None = None
        self._loading = threading.Lock()  # one load at a time
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        if self.home is not None:
            for repair in Home(self.home).heal():
                logger.info("healed the data home: %s", repair)
        self.refresh()

    # ------------------------------------------------------------------ reading
    def current(self) -> Served:
        """The model to answer with now (one snapshot: use it for the whole request).

        Raises
        ------
        NoModelError
            When the home has no published model yet.
        """
        served = self._served
        if served is None:
            raise NoModelError(self.last_error or "no model has been published in the data home")
        return served

    @property
    def ready(self) -> bool:
        """Whether a model is loaded."""
        return self._served is not None

    # ------------------------------------------------------------------ swapping
    def _wanted(self) -> tuple | None:
        """What should be served: (version, path, zone key), None when nothing is."""
        if self.model_dir is not None:
            return (None, self.model_dir, "")
        active = active_model_path(self.home)
        if active is None:
            return None
        return (active[0], active[1], _zone_key(self.home))

    def refresh(self) -> bool:
        """Load what the home now says is active, if it changed; True if swapped.

        Errors are logged and kept in :attr:`last_error`; the served model stays.
        """
        with self._loading:
            try:
                wanted = self._wanted()
                if wanted is None or wanted == self._key:
                    return False
                version, path, _ = wanted
                served = _load(self.home, version, path)
            except Exception as exc:  # a damaged version must not stop the server
                message = f"cannot load the active model: {exc}"
                if message != self.last_error:
                    logger.error("%s", message)
                self.last_error = message
                return False
            self._served, self._key, self.last_error = served, wanted, None
            logger.info("serving %s (version %s)", served.name, served.version)
            return True

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every_s):
            self.refresh()

    def start(self) -> LiveModel:
        """Start the watcher thread (a home only); returns self."""
        if self.home is not None and self._watcher is None:
            self._stop.clear()
            self._watcher = threading.Thread(target=self._watch, name="vrvm-model-watcher")
            self._watcher.daemon = True
            self._watcher.start()
        return self

    def stop(self) -> None:
        """Stop the watcher thread and wait for it."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=60)
            self._watcher = None
