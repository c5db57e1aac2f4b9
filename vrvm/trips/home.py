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

The dashboard, the CLI and the HTTP API all find their stores through here, and open a
home with :func:`heal_home`. A **read-only home** (:func:`read_only_reason`: the
``VRVM_READ_ONLY`` setting, a read-only file system, or a folder without write
permission, which vrvm honours even as root) is served as committed: it is not
healed (what would be repaired is reported), and this process writes nothing in it
(:func:`vrvm.trips.store.durable.refuse_writes`): no lock file, no cache, no log line.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pandas as pd

from vrvm.trips.files.recipes import RecipeBook
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.zone_files import DEFAULT_LIMITS, ZoneFile, ZoneFileError, ZoneFileLimits
from vrvm.trips.settings import keep_versions
from vrvm.trips.store.audit import AuditLog
from vrvm.trips.store.durable import (
    atomic_write,
    atomic_write_json,
    exclusive_lock,
    refuse_writes,
    remove_temporaries,
    write_refusal,
)
from vrvm.trips.store.errors import StoreBusyError
from vrvm.trips.store.model_store import ModelStore
from vrvm.trips.store.trip_store import TripStore
from vrvm.trips.store.trip_table import ROW_GROUP_ROWS, TripTable
from vrvm.trips.table import CANONICAL_COLUMNS, trips_sha256

__all__ = [
    "HOME_ENV",
    "READ_ONLY_ENV",
    "ZoneFileEntry",
    "add_zone_file",
    "audit_log",
    "clickable_zone_file",
    "data_home",
    "first_start_lock",
    "heal_home",
    "list_zone_files",
    "load_training_trips",
    "load_zone_file",
    "map_zone_file",
    "model_store",
    "read_only_reason",
    "recipe_book",
    "remove_zone_file",
    "save_training_trips",
    "set_clickable_zone_file",
    "set_map_zone_file",
    "training_trip_table",
    "trip_store",
    "zone_file_entry",
    "zone_file_path",
]

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
ZONES_INDEX = "index.json"
ZONES_LOCK = ".lock"
_ZONE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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
    """The versioned model store under ``home``, keeping :func:`keep_versions` versions;
    its publishes and activations are audited in the home's :func:`audit_log`."""
    return ModelStore(Path(home) / MODELS_DIR, keep_last=keep_versions(), audit_log=audit_log(home))


def trip_store(home: str | os.PathLike[str]) -> TripStore:
    """The persistent store of accepted trips under ``home``."""
    return TripStore(Path(home) / TRIPS_DIR)


STALE_AFTER_S = 15 * 60
"""Age (seconds) after which a temporary file outside the stores is a crash's leftover:
no atomic write of vrvm takes that long, and these files have no lock to ask."""


def read_only_reason(
    home: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> str | None:
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
    ...     print(read_only_reason(tmp, {}), "|", read_only_reason(tmp, {READ_ONLY_ENV: "1"}))
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
    home = Path(home)
    for folder in (home, home / MODELS_DIR, home / TRIPS_DIR):
        if folder is home or folder.is_dir():
            reason = write_refusal(folder)
            if reason is not None:
                return f"{folder}: {reason}" if folder is not home else reason
    return None


def _pending_repairs(home: Path) -> list[str]:
    """What :func:`heal_home` would repair, found without writing."""
    pending = [f"models: {p}" for p in model_store(home).pending_repairs()]
    derived = sorted((home / TRAINING_DIR).glob(f"*{DERIVED_SUFFIX}"))
    trips = home / TRIPS_DIR
    for folder in (home, home / TRAINING_DIR, home / ZONES_DIR, *derived, trips, trips / "parts"):
        for leftover in sorted(folder.glob(".tmp-*")) if folder.is_dir() else ():
            pending.append(f"{leftover.relative_to(home)} was left by an interrupted write")
    return pending


def heal_home(home: str | os.PathLike[str]) -> list[str]:
    """Finish or roll back what crashed writers left in the data home; returns the repairs.

    The model store and the trip store heal under their own locks
    (:meth:`ModelStore.heal`, :meth:`TripStore.heal`); temporary files elsewhere in the
    home (zone files, recipes, training trips) are removed once older than
    :data:`STALE_AFTER_S`. Every repair is logged. Run by the dashboard, the command
    line and the API when they open a home; a store busy with another writer is left
    for the next open.

    A read-only home (:func:`read_only_reason`) is not written at all: this process
    refuses every later write in it (:func:`~vrvm.trips.store.durable.refuse_writes`), and
    what would be repaired is logged and returned as ``"not repaired (<why>): ..."``;
    the committed state is what is served.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     heal_home(tmp)
    []
    """
    home = Path(home)
    reason = read_only_reason(home)
    if reason is not None:
        if not reason.startswith(_READ_ONLY_HOME):  # not yet refused by this process
            refuse_writes(home, f"{_READ_ONLY_HOME} ({reason})")
        pending = [f"not repaired ({reason}): {p}" for p in _pending_repairs(home)]
        for line in pending:
            logger.warning("data home %s: %s", home, line)
        return pending
    repairs = []
    for name, store in (("models", model_store(home)), ("trips", trip_store(home))):
        try:
            repairs += [f"{name}: {r}" for r in store.heal()]
        except StoreBusyError as exc:
            logger.info("not healing %s now: %s", store.root, exc)
    derived = sorted((home / TRAINING_DIR).glob(f"*{DERIVED_SUFFIX}"))
    for folder in (home, home / TRAINING_DIR, home / ZONES_DIR, *derived):
        for name in remove_temporaries(folder, older_than_s=STALE_AFTER_S):
            repairs.append(f"removed {(folder / name).relative_to(home)}, left by a crash")
            logger.warning("data home %s: removed %s", home, name)
    return repairs


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

    Written atomically, in row groups of :data:`~vrvm.trips.store.trip_table.ROW_GROUP_ROWS`
    trips (so that a bounded read can pick some); identical data sets share one file.
    The dashboard overlays them on the time-of-day profile and draws the service area
    from them (:func:`training_trip_table`).
    """
    path = training_trips_path(home, trips_sha256(trips))
    if not path.exists():
        atomic_write(
            path,
            lambda tmp: trips[list(CANONICAL_COLUMNS)].to_parquet(
                tmp, index=False, row_group_size=ROW_GROUP_ROWS
            ),
        )
    return path


def _kept_training_path(home: str | os.PathLike[str], model: TravelTimeModel) -> Path | None:
    try:
        path = training_trips_path(home, model.training_summary_.get("sha256", ""))
    except ValueError:
        return None
    return path if path.is_file() else None


def load_training_trips(
    home: str | os.PathLike[str], model: TravelTimeModel
) -> pd.DataFrame | None:
    """The model's training trips if they were kept in ``home``, else None.

    Reads every trip: for training and for small tables. The dashboard asks
    :func:`training_trip_table` instead, which reads only what each question needs.
    """
    path = _kept_training_path(home, model)
    if path is None:
        return None
    trips = pd.read_parquet(path)
    trips["start_time"] = pd.to_datetime(trips["start_time"], utc=True).dt.tz_convert(model.tz_)
    return trips


def training_trip_table(home: str | os.PathLike[str], model: TravelTimeModel) -> TripTable | None:
    """The model's kept training trips as a :class:`~vrvm.trips.store.trip_table.TripTable`.

    Opening it reads the file's footer only; what is derived from all the trips once
    (the map's zones and their index, the model's area) is kept beside the file in
    ``training/<sha256>.derived/``. None when the trips were not kept.
    """
    path = _kept_training_path(home, model)
    if path is None:
        return None
    return TripTable.open(path, tz=model.tz_, cache_dir=path.with_suffix(DERIVED_SUFFIX))


# ---------------------------------------------------------------------- zone files


@dataclass(frozen=True)
class ZoneFileEntry:
    """One zone file kept in the data home, as listed in ``zones/index.json``.

    Attributes
    ----------
    name : str
        Its name in the home.
    file_name : str
        The name it was uploaded or given under.
    file : str
        The kept file in ``zones/``: ``<name>.<first 16 hex digits of its SHA-256>.geojson``,
        so a replacement never overwrites the file the index lists.
    id_property, name_property : str or None
        The properties of its zone ids and names (``id_property`` None: ids are the
        feature order, for boundary files drawn on the map).
    non_polygons : {"error", "skip"}
        Whether point and line features were allowed (and skipped) when it was read.
    fingerprint : str
        :attr:`ZoneFile.fingerprint` when it was added; checked on every load.
    n_zones : int
        Number of zones.
    added_at : str
        When it was added (ISO 8601, UTC).
    """

    name: str
    file_name: str
    file: str
    id_property: str | None
    name_property: str | None
    non_polygons: Literal["error", "skip"]
    fingerprint: str
    n_zones: int
    added_at: str


def _zones_dir(home: str | os.PathLike[str]) -> Path:
    return Path(home) / ZONES_DIR


def check_zone_file_name(name: str) -> str:
    """``name`` if it can name a zone file in the home, else ValueError.

    Letters, digits, ``_``, ``.`` and ``-``, starting with a letter or digit, at most 64
    characters: no path separators, no ``..``, nothing hidden.

    Examples
    --------
    >>> check_zone_file_name("nyc-taxi-zones")
    'nyc-taxi-zones'
    >>> check_zone_file_name("../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: not a valid zone file name: '../etc/passwd' (use letters, digits, '_', '.' and '-')
    """
    if not isinstance(name, str) or not _ZONE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"not a valid zone file name: {name!r} (use letters, digits, '_', '.' and '-')"
        )
    return name


def zone_file_path(home: str | os.PathLike[str], name: str) -> Path:
    """Where the zone file ``name`` is kept; KeyError if there is none of that name."""
    entry = zone_file_entry(home, name)
    if entry is None:
        raise KeyError(f"no zone file named {name!r} in {_zones_dir(home)}")
    return _zones_dir(home) / entry.file


def _read_index(home: str | os.PathLike[str]) -> dict:
    path = _zones_dir(home) / ZONES_INDEX
    if not path.is_file():
        return {"format": 1, "zone_files": {}, "map": None, "clickable": None}
    index = json.loads(path.read_text(encoding="utf-8"))
    index.setdefault("zone_files", {})
    index.setdefault("map", None)
    index.setdefault("clickable", None)
    return index


def _write_index(home: str | os.PathLike[str], index: dict) -> None:
    atomic_write_json(_zones_dir(home) / ZONES_INDEX, index)


def list_zone_files(home: str | os.PathLike[str]) -> list[ZoneFileEntry]:
    """The zone files kept in ``home``, oldest first."""
    entries = [_entry(e) for e in _read_index(home)["zone_files"].values()]
    return sorted(entries, key=lambda e: (e.added_at, e.name))


def zone_file_entry(home: str | os.PathLike[str], name: str) -> ZoneFileEntry | None:
    """The index entry of the zone file ``name``, None if there is none."""
    entry = _read_index(home)["zone_files"].get(check_zone_file_name(name))
    return _entry(entry) if entry else None


def _entry(record: Mapping) -> ZoneFileEntry:
    """An index record as an entry; fields a later version may add are ignored."""
    return ZoneFileEntry(**{f.name: record[f.name] for f in fields(ZoneFileEntry)})


def add_zone_file(
    home: str | os.PathLike[str],
    name: str,
    data: bytes,
    *,
    file_name: str | None = None,
    id_property: str | None = None,
    name_property: str | None = None,
    non_polygons: Literal["error", "skip"] = "error",
    ids_from_order: bool = False,
    limits: ZoneFileLimits = DEFAULT_LIMITS,
) -> tuple[ZoneFileEntry, ZoneFile]:
    """Check a zone file and keep it in ``home`` as ``name`` (replacing one of that name).

    Parameters
    ----------
    home : path-like
        The data home.
    name : str
        Its name in the home (see :func:`check_zone_file_name`).
    data : bytes
        The GeoJSON file as uploaded; kept byte for byte once it reads.
    file_name : str, optional
        The name it was uploaded under, for messages (default ``name``).
    id_property, name_property, non_polygons, ids_from_order, limits
        How to read it: :meth:`ZoneFile.read`. The properties found are recorded, so
        every later load reads the same ids.

    Returns
    -------
    entry : ZoneFileEntry
    zones : ZoneFile

    Raises
    ------
    ZoneFileError
        When the file does not read (nothing is written then).

    Notes
    -----
    The GeoJSON file is written atomically under a new name (its content hash) first,
    then the index, and only then is a replaced file deleted: a crash at any point
    leaves the previous index and every file it lists intact, and at most an unlisted
    file, which the next add of that name deletes.
    """
    check_zone_file_name(name)
    label = file_name or name
    zones = ZoneFile.read(
        data,
        id_property=id_property,
        name_property=name_property,
        non_polygons=non_polygons,
        ids_from_order=ids_from_order,
        limits=limits,
        label=label,
    )
    entry = ZoneFileEntry(
        name=name,
        file_name=label,
        file=f"{name}.{hashlib.sha256(data).hexdigest()[:16]}.geojson",
        id_property=zones.id_property,
        name_property=zones.name_property,
        non_polygons=non_polygons,
        fingerprint=zones.fingerprint,
        n_zones=len(zones),
        added_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    folder = _zones_dir(home)
    with exclusive_lock(folder / ZONES_LOCK):
        atomic_write(folder / entry.file, lambda tmp: tmp.write_bytes(bytes(data)))
        index = _read_index(home)
        index["zone_files"][name] = asdict(entry)
        _write_index(home, index)
        listed = {e["file"] for e in index["zone_files"].values()}
        for path in folder.glob(f"{glob.escape(name)}.*.geojson"):
            if path.name not in listed and path.name.count(".") == name.count(".") + 2:
                path.unlink(missing_ok=True)  # replaced, or left by a crash
    return entry, zones


def load_zone_file(home: str | os.PathLike[str], name: str) -> ZoneFile:
    """The zone file ``name`` kept in ``home``, read as when it was added.

    Raises
    ------
    KeyError
        No zone file of that name.
    ZoneFileError
        The file no longer reads, or its content changed since it was added (the
        fingerprint differs).
    """
    entry = zone_file_entry(home, name)
    if entry is None:
        raise KeyError(f"no zone file named {name!r} in {_zones_dir(home)}")
    zones = ZoneFile.read(
        _zones_dir(home) / entry.file,
        id_property=entry.id_property,
        name_property=entry.name_property,
        non_polygons=entry.non_polygons,
        ids_from_order=entry.id_property is None,
        label=entry.file_name,
    )
    if zones.fingerprint != entry.fingerprint:
        raise ZoneFileError(entry.file_name, "the kept file changed since it was added")
    return zones


def remove_zone_file(home: str | os.PathLike[str], name: str) -> bool:
    """Forget the zone file ``name`` (index first, then the file); False if absent."""
    check_zone_file_name(name)
    with exclusive_lock(_zones_dir(home) / ZONES_LOCK):
        index = _read_index(home)
        entry = index["zone_files"].pop(name, None)
        if entry is None:
            return False
        for setting in ("map", "clickable"):
            if index.get(setting) == name:
                index[setting] = None
        _write_index(home, index)
        (_zones_dir(home) / entry["file"]).unlink(missing_ok=True)
    return True


def _zone_setting(home: str | os.PathLike[str], setting: str) -> str | None:
    name = _read_index(home).get(setting)
    return name if name and zone_file_entry(home, name) else None


def _set_zone_setting(home: str | os.PathLike[str], setting: str, name: str | None) -> None:
    with exclusive_lock(_zones_dir(home) / ZONES_LOCK):
        index = _read_index(home)
        if name is not None and check_zone_file_name(name) not in index["zone_files"]:
            raise KeyError(f"no zone file named {name!r}")
        index[setting] = name
        _write_index(home, index)


def map_zone_file(home: str | os.PathLike[str]) -> str | None:
    """Name of the zone file drawn on the dashboard's map (and naming its zones), if any."""
    return _zone_setting(home, "map")


def set_map_zone_file(home: str | os.PathLike[str], name: str | None) -> None:
    """Draw the kept zone file ``name`` on the map (None: no boundaries)."""
    _set_zone_setting(home, "map", name)


def clickable_zone_file(home: str | os.PathLike[str]) -> str | None:
    """Name of the zone file whose polygons are the map's clickable zones (None: hexagons)."""
    return _zone_setting(home, "clickable")


def set_clickable_zone_file(home: str | os.PathLike[str], name: str | None) -> None:
    """Make the kept zone file ``name`` the map's clickable zones (None: H3 hexagons)."""
    _set_zone_setting(home, "clickable", name)


def recipe_book(home: str | os.PathLike[str]) -> RecipeBook:
    """The named read recipes (column maps and formats) kept in ``home``."""
    return RecipeBook(Path(home) / RECIPES_FILE)


def audit_log(home: str | os.PathLike[str]) -> AuditLog:
    """The home's append-only audit log (``audit.jsonl``): who changed what, and when."""
    return AuditLog(Path(home) / AUDIT_FILE)
