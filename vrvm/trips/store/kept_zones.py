"""The planner's zone files kept in a data home: the files, their index, the map's choices.

``zones/<name>.<sha>.geojson`` holds each file as uploaded (named by its content hash,
so a replacement never overwrites the file the index lists), and ``zones/index.json``
their names, id and name properties and fingerprints, and which one the map draws and
which one is clickable. Every change is made under the folder's lock, file first, index
second, and a replaced file is deleted last.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from vrvm.trips.places.zone_files import DEFAULT_LIMITS, ZoneFile, ZoneFileError, ZoneFileLimits
from vrvm.trips.store.durable import atomic_write, atomic_write_json, exclusive_lock

__all__ = ["ZoneFileEntry", "ZoneShelf", "check_zone_file_name"]

ZONES_INDEX = "index.json"
ZONES_LOCK = ".lock"
_ZONE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


def _entry(record: Mapping) -> ZoneFileEntry:
    """An index record as an entry; fields a later version may add are ignored."""
    return ZoneFileEntry(**{f.name: record[f.name] for f in fields(ZoneFileEntry)})


class ZoneShelf:
    """The zone files kept in one folder of a data home (``home/zones``).

    Parameters
    ----------
    folder : path-like
        The folder; created on the first :meth:`add`.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path(self, name: str) -> Path:
        """Where the zone file ``name`` is kept; KeyError if there is none of that name."""
        entry = self.entry(name)
        if entry is None:
            raise KeyError(f"no zone file named {name!r} in {self.folder}")
        return self.folder / entry.file

    def _read_index(self) -> dict:
        path = self.folder / ZONES_INDEX
        if not path.is_file():
            return {"format": 1, "zone_files": {}, "map": None, "clickable": None}
        index = json.loads(path.read_text(encoding="utf-8"))
        index.setdefault("zone_files", {})
        index.setdefault("map", None)
        index.setdefault("clickable", None)
        return index

    def _write_index(self, index: dict) -> None:
        atomic_write_json(self.folder / ZONES_INDEX, index)

    def entries(self) -> list[ZoneFileEntry]:
        """The zone files kept here, oldest first."""
        entries = [_entry(e) for e in self._read_index()["zone_files"].values()]
        return sorted(entries, key=lambda e: (e.added_at, e.name))

    def entry(self, name: str) -> ZoneFileEntry | None:
        """The index entry of the zone file ``name``, None if there is none."""
        entry = self._read_index()["zone_files"].get(check_zone_file_name(name))
        return _entry(entry) if entry else None

    def add(
        self,
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
        """Check a zone file and keep it as ``name`` (replacing one of that name).

        Parameters
        ----------
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
        folder = self.folder
        with exclusive_lock(folder / ZONES_LOCK):
            atomic_write(folder / entry.file, lambda tmp: tmp.write_bytes(bytes(data)))
            index = self._read_index()
            index["zone_files"][name] = asdict(entry)
            self._write_index(index)
            listed = {e["file"] for e in index["zone_files"].values()}
            for path in folder.glob(f"{glob.escape(name)}.*.geojson"):
                if path.name not in listed and path.name.count(".") == name.count(".") + 2:
                    path.unlink(missing_ok=True)  # replaced, or left by a crash
        return entry, zones

    def load(self, name: str) -> ZoneFile:
        """The zone file ``name`` kept here, read as when it was added.

        Raises
        ------
        KeyError
            No zone file of that name.
        ZoneFileError
            The file no longer reads, or its content changed since it was added (the
            fingerprint differs).
        """
        entry = self.entry(name)
        if entry is None:
            raise KeyError(f"no zone file named {name!r} in {self.folder}")
        zones = ZoneFile.read(
            self.folder / entry.file,
            id_property=entry.id_property,
            name_property=entry.name_property,
            non_polygons=entry.non_polygons,
            ids_from_order=entry.id_property is None,
            label=entry.file_name,
        )
        if zones.fingerprint != entry.fingerprint:
            raise ZoneFileError(entry.file_name, "the kept file changed since it was added")
        return zones

    def remove(self, name: str) -> bool:
        """Forget the zone file ``name`` (index first, then the file); False if absent."""
        check_zone_file_name(name)
        with exclusive_lock(self.folder / ZONES_LOCK):
            index = self._read_index()
            entry = index["zone_files"].pop(name, None)
            if entry is None:
                return False
            for setting in ("map", "clickable"):
                if index.get(setting) == name:
                    index[setting] = None
            self._write_index(index)
            (self.folder / entry["file"]).unlink(missing_ok=True)
        return True

    def _setting(self, setting: str) -> str | None:
        name = self._read_index().get(setting)
        return name if name and self.entry(name) else None

    def _set_setting(self, setting: str, name: str | None) -> None:
        with exclusive_lock(self.folder / ZONES_LOCK):
            index = self._read_index()
            if name is not None and check_zone_file_name(name) not in index["zone_files"]:
                raise KeyError(f"no zone file named {name!r}")
            index[setting] = name
            self._write_index(index)

    def map_choice(self) -> str | None:
        """Name of the zone file drawn on the dashboard's map (and naming its zones), if any."""
        return self._setting("map")

    def choose_map(self, name: str | None) -> None:
        """Draw the kept zone file ``name`` on the map (None: no boundaries)."""
        self._set_setting("map", name)

    def clickable_choice(self) -> str | None:
        """Name of the zone file whose polygons are the map's clickable zones (None: hexagons)."""
        return self._setting("clickable")

    def choose_clickable(self, name: str | None) -> None:
        """Make the kept zone file ``name`` the map's clickable zones (None: H3 hexagons)."""
        self._set_setting("clickable", name)
