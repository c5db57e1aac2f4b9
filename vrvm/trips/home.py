"""The data home: where a deployment keeps its models, its trips and what models saw.

Layout of ``$VRVM_HOME`` (default ``./.vrvm``)::

    home/
        models/                    the model store (numbered versions, active pointer)
        trips/                     the trip store (every accepted upload)
        training/<sha256>.parquet  each model's training trips, by content hash
        training/<sha256>.derived/ what the dashboard derives once from them (its zones,
                                   their index, the model's area): see TripTable
        zones/<name>.<sha>.geojson the planner's zone files (polygons), as uploaded
        zones/index.json           their names, id and name properties, fingerprints, and
                                   which one the map draws and which one is clickable
        recipes.json               named read recipes: column maps and formats per header
        audit.jsonl                who changed what, and when (append-only; see AuditLog)
        .first-start.lock          held while the first start trains the demo model

:class:`Home` owns a home's stores: the dashboard, the CLI and the HTTP API open a
``Home`` and reach the model store, the trip store, the audit log, the recipes, the kept
zone files and the training trips through it, and heal it with :meth:`Home.heal`. A
**read-only home** (:meth:`Home.read_only_reason`: the ``VRVM_READ_ONLY`` setting, a
read-only file system, or a folder without write permission, which vrvm honours even as
root) is served as committed: it is not healed (what would be repaired is reported), and
this process writes nothing in it
(:func:`vrvm.trips.store.durable.refuse_writes`): no lock file, no cache, no log line.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vrvm.trips.files.recipes import RecipeBook
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.settings import keep_versions
from vrvm.trips.store.audit import AuditLog
from vrvm.trips.store.durable import (
    atomic_write,
    exclusive_lock,
    refuse_writes,
    remove_temporaries,
    write_refusal,
)
from vrvm.trips.store.errors import StoreBusyError
from vrvm.trips.store.kept_zones import ZoneShelf
from vrvm.trips.store.model_store import ModelStore
from vrvm.trips.store.trip_store import TripStore
from vrvm.trips.store.trip_table import ROW_GROUP_ROWS, TripTable
from vrvm.trips.table import CANONICAL_COLUMNS, trips_sha256

__all__ = ["HOME_ENV", "READ_ONLY_ENV", "Home", "data_home"]

logger = logging.getLogger(__name__)

HOME_ENV = "VRVM_HOME"
READ_ONLY_ENV = "VRVM_READ_ONLY"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
_READ_ONLY_HOME = "the data home is read-only"
DEFAULT_HOME = ".vrvm"
MODELS_DIR = "models"
TRIPS_DIR = "trips"
TRAINING_DIR = "training"
DERIVED_SUFFIX = ".derived"
FIRST_START_LOCK = ".first-start.lock"
RECIPES_FILE = "recipes.json"
AUDIT_FILE = "audit.jsonl"
ZONES_DIR = "zones"

STALE_AFTER_S = 15 * 60
"""Age (seconds) after which a temporary file outside the stores is a crash's leftover:
no atomic write of vrvm takes that long, and these files have no lock to ask."""


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


@dataclass(frozen=True)
class Home:
    """A data home and the stores it owns: the one thing services open.

    Opening one reads nothing; each store is opened when asked for. See the module
    docstring for the layout.

    Parameters
    ----------
    path : pathlib.Path
        The home's folder (``$VRVM_HOME``; :meth:`from_env`).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     home = Home(Path(tmp))
    ...     print(home.models.root.name, home.trips.root.name, home.heal())
    models trips []
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Home:
        """The home named by ``$VRVM_HOME`` (:func:`data_home`)."""
        return cls(data_home(environ))

    @property
    def models(self) -> ModelStore:
        """The versioned model store under ``home``, keeping :func:`keep_versions` versions;
        its publishes and activations are audited in the home's :attr:`audit`."""
        return ModelStore(self.path / MODELS_DIR, keep_last=keep_versions(), audit_log=self.audit)

    @property
    def trips(self) -> TripStore:
        """The persistent store of accepted trips under ``home``."""
        return TripStore(self.path / TRIPS_DIR)

    @property
    def audit(self) -> AuditLog:
        """The home's append-only audit log (``audit.jsonl``): who changed what, and when."""
        return AuditLog(self.path / AUDIT_FILE)

    @property
    def recipes(self) -> RecipeBook:
        """The named read recipes (column maps and formats) kept in ``home``."""
        return RecipeBook(self.path / RECIPES_FILE)

    @property
    def zones(self) -> ZoneShelf:
        """The planner's zone files kept in the home (``zones/``)."""
        return ZoneShelf(self.path / ZONES_DIR)

    def read_only_reason(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why the data home must not be written, or None when it may be.

        ``$VRVM_READ_ONLY`` set to ``1``/``true``/``yes``/``on`` (``vrvm serve --read-only``
        sets it); else :func:`~vrvm.trips.store.durable.write_refusal` of the home, its model
        store or its trip store: a read-only file system, or a folder without write
        permission (honoured even as root, whom permission bits do not stop).

        Raises
        ------
        ValueError
            For another value of ``$VRVM_READ_ONLY``: a setting that cannot be read is
            refused, not guessed.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     home = Home(tmp)
        ...     print(home.read_only_reason({}), "|", home.read_only_reason({READ_ONLY_ENV: "1"}))
        None | VRVM_READ_ONLY is set
        """
        environ = os.environ if environ is None else environ
        value = environ.get(READ_ONLY_ENV, "").strip().lower()
        if value in _TRUE:
            return f"{READ_ONLY_ENV} is set"
        if value not in _FALSE:
            raise ValueError(
                f"{READ_ONLY_ENV}={environ[READ_ONLY_ENV]!r}: expected 1, true, yes or on "
                "(serve the home read-only) or 0, false, no, off or nothing"
            )
        home = self.path
        for folder in (home, home / MODELS_DIR, home / TRIPS_DIR):
            if folder is home or folder.is_dir():
                reason = write_refusal(folder)
                if reason is not None:
                    return f"{folder}: {reason}" if folder is not home else reason
        return None

    def _pending_repairs(self) -> list[str]:
        """What :meth:`heal` would repair, found without writing."""
        pending = [f"models: {p}" for p in self.models.pending_repairs()]
        derived = sorted((self.path / TRAINING_DIR).glob(f"*{DERIVED_SUFFIX}"))
        trips = self.path / TRIPS_DIR
        for folder in (
            self.path,
            self.path / TRAINING_DIR,
            self.path / ZONES_DIR,
            *derived,
            trips,
            trips / "parts",
        ):
            for leftover in sorted(folder.glob(".tmp-*")) if folder.is_dir() else ():
                pending.append(
                    f"{leftover.relative_to(self.path)} was left by an interrupted write"
                )
        return pending

    def heal(self) -> list[str]:
        """Finish or roll back what crashed writers left in the data home; returns the repairs.

        The model store and the trip store heal under their own locks
        (:meth:`ModelStore.heal`, :meth:`TripStore.heal`); temporary files elsewhere in the
        home (zone files, recipes, training trips) are removed once older than
        :data:`STALE_AFTER_S`. Every repair is logged. Run by the dashboard, the command
        line and the API when they open a home; a store busy with another writer is left
        for the next open.

        A read-only home (:meth:`read_only_reason`) is not written at all: this process
        refuses every later write in it (:func:`~vrvm.trips.store.durable.refuse_writes`), and
        what would be repaired is logged and returned as ``"not repaired (<why>): ..."``;
        the committed state is what is served.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     Home(tmp).heal()
        []
        """
        reason = self.read_only_reason()
        if reason is not None:
            if not reason.startswith(_READ_ONLY_HOME):  # not yet refused by this process
                refuse_writes(self.path, f"{_READ_ONLY_HOME} ({reason})")
            pending = [f"not repaired ({reason}): {p}" for p in self._pending_repairs()]
            for line in pending:
                logger.warning("data home %s: %s", self.path, line)
            return pending
        repairs = []
        for name, store in (("models", self.models), ("trips", self.trips)):
            try:
                repairs += [f"{name}: {r}" for r in store.heal()]
            except StoreBusyError as exc:
                logger.info("not healing %s now: %s", store.root, exc)
        derived = sorted((self.path / TRAINING_DIR).glob(f"*{DERIVED_SUFFIX}"))
        for folder in (self.path, self.path / TRAINING_DIR, self.path / ZONES_DIR, *derived):
            for name in remove_temporaries(folder, older_than_s=STALE_AFTER_S):
                repairs.append(f"removed {(folder / name).relative_to(self.path)}, left by a crash")
                logger.warning("data home %s: removed %s", self.path, name)
        return repairs

    def first_start_lock(self):
        """Exclusive lock so that two processes starting at once train the demo model once."""
        return exclusive_lock(self.path / FIRST_START_LOCK)

    def training_trips_path(self, sha256: str) -> Path:
        """Where the training trips with content hash ``sha256`` are kept."""
        if not re.fullmatch(r"[0-9a-f]{64}", str(sha256)):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return self.path / TRAINING_DIR / f"{sha256}.parquet"

    def save_training_trips(self, trips: pd.DataFrame) -> Path:
        """Keep a model's training trips, content-addressed by :func:`vrvm.trips_sha256`.

        Written atomically, in row groups of :data:`~vrvm.trips.store.trip_table.ROW_GROUP_ROWS`
        trips (so that a bounded read can pick some); identical data sets share one file.
        The dashboard overlays them on the time-of-day profile and draws the service area
        from them (:meth:`training_trip_table`).
        """
        path = self.training_trips_path(trips_sha256(trips))
        if not path.exists():
            atomic_write(
                path,
                lambda tmp: trips[list(CANONICAL_COLUMNS)].to_parquet(
                    tmp, index=False, row_group_size=ROW_GROUP_ROWS
                ),
            )
        return path

    def _kept_training_path(self, model: TravelTimeModel) -> Path | None:
        try:
            path = self.training_trips_path(model.training_summary_.get("sha256", ""))
        except ValueError:
            return None
        return path if path.is_file() else None

    def load_training_trips(self, model: TravelTimeModel) -> pd.DataFrame | None:
        """The model's training trips if they were kept in ``home``, else None.

        Reads every trip: for training and for small tables. The dashboard asks
        :meth:`training_trip_table` instead, which reads only what each question needs.
        """
        path = self._kept_training_path(model)
        if path is None:
            return None
        trips = pd.read_parquet(path)
        trips["start_time"] = pd.to_datetime(trips["start_time"], utc=True).dt.tz_convert(model.tz_)
        return trips

    def training_trip_table(self, model: TravelTimeModel) -> TripTable | None:
        """The model's kept training trips as a :class:`~vrvm.trips.store.trip_table.TripTable`.

        Opening it reads the file's footer only; what is derived from all the trips once
        (the map's zones and their index, the model's area) is kept beside the file in
        ``training/<sha256>.derived/``. None when the trips were not kept.
        """
        path = self._kept_training_path(model)
        if path is None:
            return None
        return TripTable.open(path, tz=model.tz_, cache_dir=path.with_suffix(DERIVED_SUFFIX))
