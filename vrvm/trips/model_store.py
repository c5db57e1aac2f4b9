"""The model store: numbered, immutable model versions and the pointer to the active one.

A dashboard keeps serving the active version while a retrain writes the next; a version
is committed whole or not at all (see :class:`ModelStore`), and the pointer moves
atomically. Each version is a model directory (:mod:`vrvm.trips.model_dir`).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from vrvm._version import __version__
from vrvm.trips.durable import TMP_PREFIX, atomic_write_json, fsync_dir
from vrvm.trips.model_dir import (
    MODEL_FILE,
    ModelFormatError,
    loads_strict,
    to_json,
    utc_now_iso,
)

__all__ = ["ModelStore", "VersionInfo"]

logger = logging.getLogger(__name__)

VERSION_FILE = "version.json"
ACTIVE_FILE = "active.json"
VERSIONS_DIR = "versions"
_VERSION_DIR = re.compile(r"v(\d{4,})")


def _check_version_number(version: Any) -> int:
    if not isinstance(version, (int, np.integer)) or isinstance(version, (bool, np.bool_)):
        raise TypeError(f"version must be an integer, got {type(version).__name__}")
    if version < 1:
        raise ValueError(f"version must be >= 1, got {version}")
    return int(version)


@dataclass(frozen=True)
class VersionInfo:
    """One committed version of a :class:`ModelStore`.

    Attributes
    ----------
    version : int
        Version number (1, 2, ...).
    path : pathlib.Path
        The version's model directory (pass it to :func:`load_model_dir`).
    created : datetime.datetime
        When the version was committed (timezone-aware, UTC).
    vrvm_version : str
        Version of vrvm that committed it.
    info : dict
        The ``info`` given to :meth:`ModelStore.add`.
    is_active : bool
        Whether ``active.json`` points to this version.
    """

    version: int
    path: Path
    created: datetime
    vrvm_version: str
    info: dict[str, Any]
    is_active: bool


class ModelStore:
    """Numbered, immutable model versions under one directory, with an active pointer.

    Layout::

        root/
            active.json              {"version": 3, "activated_utc": "..."}
            versions/
                v0001/               a model directory (model.json, arrays.npz)
                    version.json     {"version": 1, "created_utc": ..., "info": {...}}
                v0002/
                ...

    Parameters
    ----------
    root : str or path-like
        Directory of the store. It is created by the first :meth:`add`; reading an
        absent store shows no versions.

    See Also
    --------
    save_model_dir, load_model_dir

    Notes
    -----
    * Versions appear atomically: a version is written in a temporary directory
      ``versions/.tmp-v<N>-<token>`` and renamed onto its number only when the writer
      succeeded (its ``version.json`` is then present). Version numbers are allocated by
      an exclusive ``mkdir`` of ``versions/v<N>``, so concurrent writers, in threads or
      processes sharing the directory, never get the same number. POSIX semantics
      (renaming a directory onto an empty one replaces it) are assumed.
    * A committed version is never modified, so readers never race writers.
    * ``active.json`` is replaced atomically (temporary file, fsync, ``os.replace``).
    * The store never deletes versions. A process killed during :meth:`add` leaves an
      empty ``versions/v<N>`` (its number is skipped, it is not listed) and a
      ``versions/.tmp-*`` directory; both can be deleted when no add is running.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from vrvm.trips.model_dir import load_model_dir, save_model_dir
    >>> from vrvm.trips.model_store import ModelStore
    >>> def write_model(model_dir):
    ...     save_model_dir(model_dir, metadata={"alpha": 1.0}, arrays={"w": np.zeros(3)},
    ...                    format_name="demo", format_version=1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = ModelStore(tmp)
    ...     first = store.add(write_model, info={"kind": "train", "data": "trips-2024.parquet"})
    ...     second = store.add(write_model, info={"kind": "update", "parent": first},
    ...                        activate=False)
    ...     before = [(v.version, v.info["kind"], v.is_active) for v in store.versions()]
    ...     store.activate(second)
    ...     metadata, arrays = load_model_dir(store.active_path(), format_name="demo",
    ...                                       max_format_version=1)
    ...     active = store.active_version()
    >>> before
    [(1, 'train', True), (2, 'update', False)]
    >>> active, metadata
    (2, {'alpha': 1.0})
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ModelStore({str(self.root)!r})"

    @property
    def _versions_dir(self) -> Path:
        return self.root / VERSIONS_DIR

    def _version_dir(self, version: int) -> Path:
        return self._versions_dir / f"v{version:04d}"

    def _numbered_dirs(self) -> dict[int, Path]:
        """All ``v<N>`` directories, committed or merely reserved."""
        try:
            names = os.listdir(self._versions_dir)
        except FileNotFoundError:
            return {}
        found = {}
        for name in names:
            match = _VERSION_DIR.fullmatch(name)
            if match and name == f"v{int(match.group(1)):04d}":
                found[int(match.group(1))] = self._versions_dir / name
        return found

    def _committed(self) -> list[int]:
        return sorted(n for n, p in self._numbered_dirs().items() if (p / VERSION_FILE).is_file())

    def _read_version_record(self, version: int) -> tuple[datetime, str, dict[str, Any]]:
        record_path = self._version_dir(version) / VERSION_FILE
        try:
            record = loads_strict(record_path.read_bytes())
            created = datetime.fromisoformat(record["created_utc"])
            vrvm_version, info = record["vrvm_version"], record["info"]
            if record["version"] != version or not isinstance(info, dict):
                raise ValueError("inconsistent record")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelFormatError(f"{record_path} is damaged ({exc})") from exc
        return created, str(vrvm_version), info

    # ------------------------------------------------------------------- queries
    def path(self, version: int) -> Path:
        """Return the model directory of a committed version.

        Raises
        ------
        ValueError
            If the store has no such version.
        """
        version = _check_version_number(version)
        committed = self._committed()
        if version not in committed:
            raise ValueError(
                f"model store {self.root} has no version {version}; available versions: {committed}"
            )
        return self._version_dir(version)

    def latest_version(self) -> int | None:
        """Return the highest committed version number, or None for an empty store."""
        committed = self._committed()
        return committed[-1] if committed else None

    def versions(self) -> list[VersionInfo]:
        """List the committed versions, oldest first.

        Works even when ``active.json`` is damaged (no version is then marked active), so
        that a user can pick a version to :meth:`activate`. A version whose
        ``version.json`` is damaged is left out with a logged warning.
        """
        try:
            active = self.active_version()
        except ModelFormatError as exc:
            logger.warning("%s", exc)
            active = None
        listing = []
        for version in self._committed():
            try:
                created, vrvm_version, info = self._read_version_record(version)
            except ModelFormatError as exc:
                logger.warning("skipping version %d: %s", version, exc)
                continue
            listing.append(
                VersionInfo(
                    version=version,
                    path=self._version_dir(version),
                    created=created,
                    vrvm_version=vrvm_version,
                    info=info,
                    is_active=version == active,
                )
            )
        return listing

    def active_version(self) -> int | None:
        """Return the active version number, or None if none was ever activated.

        Raises
        ------
        ModelFormatError
            If ``active.json`` is damaged or points to a version that does not exist.
            :meth:`versions` still works; :meth:`activate` repairs the pointer.
        """
        active_path = self.root / ACTIVE_FILE
        repair = (
            f"list the versions with ModelStore({str(self.root)!r}).versions() and "
            "choose one with .activate(version)"
        )
        try:
            raw = active_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ModelFormatError(f"cannot read {active_path}: {exc}") from exc
        try:
            document = loads_strict(raw)
            version = document["version"]
            _check_version_number(version)
        except (ValueError, TypeError, KeyError) as exc:
            raise ModelFormatError(
                f"{active_path} is damaged ({type(exc).__name__}: {exc}); {repair}"
            ) from exc
        if not (self._version_dir(version) / VERSION_FILE).is_file():
            raise ModelFormatError(
                f"{active_path} points to version {version}, which does not exist in "
                f"{self._versions_dir}; {repair}"
            )
        return int(version)

    def active_path(self) -> Path | None:
        """Return the model directory of the active version, or None if there is none.

        Raises
        ------
        ModelFormatError
            As :meth:`active_version`.
        """
        version = self.active_version()
        return None if version is None else self._version_dir(version)

    # ------------------------------------------------------------------- changes
    def activate(self, version: int) -> None:
        """Point ``active.json`` at a committed version (atomically).

        Raises
        ------
        ValueError
            If the store has no such version.
        """
        version = _check_version_number(version)
        self.path(version)  # refuse unknown versions before touching the pointer
        self.root.mkdir(parents=True, exist_ok=True)
        document = {"version": version, "activated_utc": utc_now_iso()}
        atomic_write_json(self.root / ACTIVE_FILE, document)

    def _reserve(self) -> tuple[int, Path]:
        """Claim the next free version number by creating its (empty) directory."""
        version = max(self._numbered_dirs(), default=0) + 1
        while True:
            reserved = self._version_dir(version)
            try:
                # mkdir is atomic and exclusive: exactly one caller creates each number.
                reserved.mkdir()
                return version, reserved
            except FileExistsError:
                version += 1

    def add(
        self,
        writer: Callable[[Path], object],
        *,
        info: Mapping[str, Any] | None = None,
        activate: bool = True,
    ) -> int:
        """Commit a new version written by ``writer`` and optionally activate it.

        Parameters
        ----------
        writer : callable
            Called as ``writer(model_dir)`` with an empty, existing temporary directory;
            it must write a model there, typically with ``save_model_dir(model_dir, ...)``.
        info : dict, optional
            JSON-serialisable description kept in the version's ``version.json``, e.g.
            ``{"kind": "train" or "update", "parent": 3, "data": "...",
            "metrics": {...}, "note": "..."}``.
        activate : bool, default=True
            Whether to make the new version the active one.

        Returns
        -------
        int
            The new version number.

        Raises
        ------
        ModelFormatError
            If ``info`` is not JSON-serialisable or the writer wrote no ``model.json``.
        Exception
            Whatever ``writer`` raised. In both cases the store is exactly as before: no
            new version, the active pointer unchanged, temporaries removed.

        Notes
        -----
        If activating fails after the version was committed, the version is kept (it is
        complete) and the error is raised; the pointer is unchanged.
        """
        info_json = to_json({} if info is None else info, "info", self.root)
        if not isinstance(info_json, dict):
            raise ModelFormatError(f"cannot add to {self.root}: info must be a dict")
        self._versions_dir.mkdir(parents=True, exist_ok=True)
        version, reserved = self._reserve()
        staging = self._versions_dir / f"{TMP_PREFIX}{reserved.name}-{secrets.token_hex(4)}"
        try:
            staging.mkdir()
            model_dir = staging / "model"
            model_dir.mkdir()
            writer(model_dir)
            if model_dir.is_symlink() or not (model_dir / MODEL_FILE).is_file():
                raise ModelFormatError(
                    f"the writer passed to ModelStore.add wrote no model into {model_dir} "
                    f"(no {MODEL_FILE}); use save_model_dir(model_dir, ...)"
                )
            if (model_dir / VERSION_FILE).exists():
                raise ModelFormatError(
                    f"the writer wrote {model_dir / VERSION_FILE}, a name the store reserves"
                )
            record = {
                "version": version,
                "created_utc": utc_now_iso(),
                "vrvm_version": __version__,
                "info": info_json,
            }
            atomic_write_json(model_dir / VERSION_FILE, record)
            # rename() replaces our own empty reservation atomically (POSIX), so the
            # version appears complete or not at all.
            os.rename(model_dir, reserved)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            try:
                reserved.rmdir()
            except OSError as exc:
                logger.warning("could not release reservation %s: %s", reserved, exc)
            raise
        fsync_dir(self._versions_dir)
        shutil.rmtree(staging, ignore_errors=True)
        if activate:
            self.activate(version)
        return version
