"""The model store: numbered, immutable model versions and the pointer to the active one.

A dashboard keeps serving the active version while a retrain writes the next; a version
is committed whole or not at all (see :class:`ModelStore`), and the pointer moves
atomically. Publishing is one locked transaction, ordered across threads and processes;
each version records its parent, and :meth:`ModelStore.heal` finishes or rolls back
what a crash left. Each version is a model directory (:mod:`vrvm.trips.store.model_dir`).
"""

from __future__ import annotations

import json
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
from vrvm.trips.store._faults import crash_point
from vrvm.trips.store.audit import AuditLog
from vrvm.trips.store.durable import (
    TMP_PREFIX,
    atomic_write_json,
    exclusive_lock,
    fsync_dir,
    remove_temporaries,
)
from vrvm.trips.store.model_dir import (
    MODEL_FILE,
    ModelFormatError,
    loads_strict,
    to_json,
    utc_now_iso,
)

__all__ = ["DEFAULT_WAIT_S", "UNCHECKED", "ModelStore", "StoreConflictError", "VersionInfo"]

logger = logging.getLogger(__name__)

VERSION_FILE = "version.json"
ACTIVE_FILE = "active.json"
VERSIONS_DIR = "versions"
LOCK_FILE = ".lock"
JOURNAL_DIR = "journal"
PRUNED_FILE = "pruned.json"
_VERSION_DIR = re.compile(r"v(\d{4,})")
_JOURNAL_ENTRY = re.compile(r"v(\d{4,})\.json")
_ACTIVATION_ENTRY = re.compile(r"activate-([0-9a-f]{16})\.json")
_KEPT_COMMITS = 64  # activation tokens kept in active.json (a few KiB)
DEFAULT_WAIT_S = 60.0
"""Seconds a writer waits for another one to finish before :class:`StoreBusyError`."""
_ANY = object()


class _Unchecked:
    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Any = _Unchecked()
"""The default ``expect_active`` of :meth:`ModelStore.add`: the active version is not checked."""


class StoreConflictError(RuntimeError):
    """A publish that expected another active version: the store changed under it.

    Raised by :meth:`ModelStore.add` with ``expect_active`` when a concurrent writer
    published or activated a version since the caller read the store; nothing was
    written. Rebuild the model on the new active version and publish again.

    Attributes
    ----------
    expected, active : int or None
        The active version the caller built on, and the one the store has now.
    """

    def __init__(self, root: Path, expected: int | None, active: int | None) -> None:
        self.expected, self.active = expected, active
        super().__init__(
            f"{root}: the active model changed while this one was being made (it was "
            f"built on version {expected}, the store's active version is now {active}); "
            "nothing was published: build it again on the new active version"
        )


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
    parent : int or None
        The version it was made from (an update's base, a retrain's predecessor), None
        for a first model or a model of another area.
    by_hand : bool
        Whether a user ever activated it on purpose (:meth:`ModelStore.activate`);
        retention never removes such a version.
    never_activated : bool
        Whether it is newer than every version ever activated: published with
        ``activate=False``, or by a writer that died before its journal entry was
        written (:meth:`ModelStore.heal` activates those whose journal says so).
    """

    version: int
    path: Path
    created: datetime
    vrvm_version: str
    info: dict[str, Any]
    is_active: bool
    parent: int | None = None
    by_hand: bool = False
    never_activated: bool = False


class ModelStore:
    """Numbered, immutable model versions under one directory, with an active pointer.

    Layout::

        root/
            .lock                    held by writers (names its holder's pid)
            active.json              {"version": 3, "activated_utc": ..., "how": ...,
                                      "by_hand": [...], "highest_activated": 3,
                                      "commits": [<tokens of audited activations>]}
            journal/v0004.json       a publish in progress (removed when it is done)
            journal/activate-<token>.json  an audited activation in progress
            pruned.json              the records of versions removed by retention
            versions/
                v0001/               a model directory (model.json, arrays.npz)
                    version.json     {"version": 1, "parent": null, "created_utc": ...,
                                      "info": {...}}
                v0002/
                ...

    Parameters
    ----------
    root : str or path-like
        Directory of the store. It is created by the first :meth:`add`; reading an
        absent store shows no versions.
    keep_last : int or None, default=None
        Retention: after each publish keep only the ``keep_last`` newest versions, plus
        the active one and every version ever activated by hand; None keeps all. The
        records of removed versions stay in ``pruned.json``, so lineages stay whole.
    wait_s : float or None, default=60
        Seconds a writer waits for another writer's lock before
        :class:`~vrvm.trips.store.durable.StoreBusyError`; None waits as long as it takes.
    audit_log : AuditLog, optional
        The data home's audit log (:func:`vrvm.trips.home.model_store` passes it): a
        publish or activation given ``audit=`` records its entry there in the same
        durable step as the change (see Notes).

    See Also
    --------
    save_model_dir, load_model_dir

    Notes
    -----
    * **One ordered transaction.** :meth:`add` holds the store's lock (``flock`` on
      ``root/.lock``, re-entrant within a thread) from reserving a number to moving the
      pointer, so publishes are serialised across threads and processes: the pointer
      only ever moves to the newest version a publish made, or to the version a user
      chose (:meth:`activate`). A read-modify-publish (an online update) takes
      :meth:`lock` around its read of the active version and its :meth:`add`, or passes
      ``expect_active`` so that a publish built on a stale version is refused
      (:class:`StoreConflictError`) instead of silently forking the lineage.
    * **Versions appear atomically.** A version is written in ``versions/.tmp-v<N>-*``
      and renamed onto its (reserved, empty) number only when complete; POSIX
      semantics (renaming a directory onto an empty one replaces it) are assumed. A
      committed version is never modified, so readers never lock and never race.
    * **A journal for the window between commit and activation.** Before writing, a
      publish records ``journal/v<N>.json`` (the version and whether to activate it);
      when it is done the entry is removed. :meth:`heal`, run when a program opens the
      store, finishes what a killed writer left: a committed version whose journal
      asked for activation is activated, staging folders, empty reservations and
      half-deleted versions are removed, and every repair is logged.
    * ``active.json`` is replaced atomically (temporary file, fsync, ``os.replace``).
    * **The audit entry is part of the change.** A publish (or an activation) given
      ``audit=`` writes its audit entry, with a random ``commit`` token, into its journal
      entry before the change commits, appends it to :attr:`audit_log` after the
      change, and only then removes the journal entry. A writer killed in between (or
      a log that could not be written) leaves the journal entry, and :meth:`heal`
      appends the entry (``healed: true``) unless the log already holds its token: a
      committed change is never without its entry, and never recorded twice. An
      activation whose pointer never moved is rolled back with no entry.
      :meth:`unaudited_versions` lists committed versions without a ``publish`` entry.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from vrvm.trips.store.model_dir import load_model_dir, save_model_dir
    >>> from vrvm.trips.store.model_store import ModelStore
    >>> def write_model(model_dir):
    ...     save_model_dir(model_dir, metadata={"alpha": 1.0}, arrays={"w": np.zeros(3)},
    ...                    format_name="demo", format_version=1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = ModelStore(tmp)
    ...     first = store.add(write_model, info={"kind": "train", "data": "trips-2024.parquet"})
    ...     with store.lock():  # read the active version and publish on it, as one step
    ...         base = store.active_version()
    ...         second = store.add(write_model, info={"kind": "update"}, parent=base,
    ...                            activate=False)
    ...     before = [(v.version, v.parent, v.is_active) for v in store.versions()]
    ...     store.activate(second)
    ...     metadata, arrays = load_model_dir(store.active_path(), format_name="demo",
    ...                                       max_format_version=1)
    ...     active, lineage = store.active_version(), store.lineage(second)
    >>> before
    [(1, None, True), (2, 1, False)]
    >>> active, metadata, lineage
    (2, {'alpha': 1.0}, [2, 1])
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        keep_last: int | None = None,
        wait_s: float | None = DEFAULT_WAIT_S,
        audit_log: AuditLog | None = None,
    ) -> None:
        self.root = Path(root)
        self.keep_last = keep_last
        self.wait_s = wait_s
        self.audit_log = audit_log

    def __repr__(self) -> str:
        return f"ModelStore({str(self.root)!r})"

    @property
    def _versions_dir(self) -> Path:
        return self.root / VERSIONS_DIR

    @property
    def _journal_dir(self) -> Path:
        return self.root / JOURNAL_DIR

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

    def _read_record(self, version: int) -> dict[str, Any]:
        record_path = self._version_dir(version) / VERSION_FILE
        try:
            record = loads_strict(record_path.read_bytes())
            record["created"] = datetime.fromisoformat(record["created_utc"])
            if record["version"] != version or not isinstance(record["info"], dict):
                raise ValueError("inconsistent record")
            str(record["vrvm_version"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelFormatError(f"{record_path} is damaged ({exc})") from exc
        parent = record.get("parent", record["info"].get("parent"))  # older records: in info
        valid = isinstance(parent, int) and not isinstance(parent, bool) and parent >= 1
        record["parent"] = parent if valid else None
        return record

    def _pointer(self) -> dict[str, Any]:
        """``active.json`` as a dict, ``{}`` when absent or damaged (for bookkeeping only)."""
        try:
            document = loads_strict((self.root / ACTIVE_FILE).read_bytes())
        except (OSError, ValueError):
            return {}
        return document if isinstance(document, dict) else {}

    @staticmethod
    def _numbers(values: Any) -> set[int]:
        if not isinstance(values, list):
            return set()
        return {v for v in values if isinstance(v, int) and not isinstance(v, bool)}

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
        pointer = self._pointer()
        by_hand = self._numbers(pointer.get("by_hand"))
        highest = pointer.get("highest_activated", active)
        highest = highest if isinstance(highest, int) else (active or 0)
        listing = []
        for version in self._committed():
            try:
                record = self._read_record(version)
            except ModelFormatError as exc:
                logger.warning("skipping version %d: %s", version, exc)
                continue
            listing.append(
                VersionInfo(
                    version=version,
                    path=self._version_dir(version),
                    created=record["created"],
                    vrvm_version=str(record["vrvm_version"]),
                    info=record["info"],
                    is_active=version == active,
                    parent=record["parent"],
                    by_hand=version in by_hand,
                    never_activated=version > highest,
                )
            )
        return listing

    def pruned(self) -> dict[int, dict[str, Any]]:
        """Records of the versions removed by retention: ``{version: {"parent", "created_utc",
        "kind", "name", "pruned_utc"}}``."""
        try:
            document = loads_strict((self.root / PRUNED_FILE).read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("cannot read %s: %s", self.root / PRUNED_FILE, exc)
            return {}
        entries = document.get("versions", {}) if isinstance(document, dict) else {}
        out = {}
        for key, entry in entries.items() if isinstance(entries, dict) else ():
            if key.isdigit() and isinstance(entry, dict):
                out[int(key)] = entry
        return out

    def lineage(self, version: int | None = None) -> list[int]:
        """The chain of parents of ``version`` (the active one by default), newest first.

        Follows each version's recorded parent, through the records of versions removed
        by retention (:meth:`pruned`), until a version without a parent. Empty for an
        empty store.

        Raises
        ------
        ValueError
            If ``version`` is neither committed nor pruned.
        """
        if version is None:
            version = self.active_version()
            if version is None:
                return []
        version = _check_version_number(version)
        chains = self.lineages()
        if version not in chains:
            raise ValueError(f"model store {self.root} has no version {version}")
        return chains[version]

    def lineages(self, listing: list[VersionInfo] | None = None) -> dict[int, list[int]]:
        """:meth:`lineage` of every version, committed or pruned, from one listing.

        Parameters
        ----------
        listing : list of VersionInfo, optional
            :meth:`versions` when the caller already has it.
        """
        listing = self.versions() if listing is None else listing
        parents: dict[int, int | None] = {}
        for number, entry in self.pruned().items():
            parent = entry.get("parent")
            valid = isinstance(parent, int) and not isinstance(parent, bool) and parent >= 1
            parents[number] = parent if valid else None
        parents.update({v.version: v.parent for v in listing})
        chains = {}
        for version in parents:
            chain: list[int] = []
            current: int | None = version
            # a parent is older than its child, so the walk ends; the bound (and the
            # membership test) guard against hand-edited records that loop
            for _ in range(len(parents)):
                if current is None or current in chain:
                    break
                chain.append(current)
                current = parents.get(current)
            chains[version] = chain
        return chains

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
    def lock(self, timeout: float | object | None = _ANY):
        """The store's writer lock, as a context manager (re-entrant within a thread).

        Hold it around a read of the store and the publish that depends on it (an
        online update: read the active version, update it, :meth:`add`) so that no
        other writer publishes in between.

        Parameters
        ----------
        timeout : float or None, optional
            Seconds to wait for another writer (default: the store's ``wait_s``).

        Raises
        ------
        StoreBusyError
            When another writer held the lock for all of ``timeout``.
        StorageError
            When the store's folder cannot be written.
        """
        return exclusive_lock(
            self.root / LOCK_FILE, timeout=self.wait_s if timeout is _ANY else timeout
        )

    def activate(
        self, version: int, *, how: str = "by hand", audit: Mapping[str, Any] | None = None
    ) -> None:
        """Point ``active.json`` at a committed version (atomically), under the lock.

        Parameters
        ----------
        version : int
            A committed version.
        how : str, default="by hand"
            Why it is activated, kept in ``active.json``. ``"by hand"`` (a user's
            choice, e.g. a rollback) also marks the version as one retention keeps.
        audit : dict, optional
            ``who``, ``how`` and ``via`` of whoever activates it, and any details: an
            ``activate`` entry (with ``version`` and ``previous``, the version it
            replaced) is recorded in :attr:`audit_log` in the same durable step as the
            pointer (class Notes).

        Raises
        ------
        ValueError
            If the store has no such version, or ``audit`` is not a valid entry.
        StoreBusyError
            When another writer held the lock for the store's ``wait_s``.
        """
        version = _check_version_number(version)
        with self.lock():
            self.path(version)  # refuse unknown versions before touching the pointer
            if audit is None:
                self._point(version, how=how)
                return
            previous = self._pointer().get("version")
            token = secrets.token_hex(8)
            entry = self._audit_entry(
                "activate",
                audit,
                version=version,
                previous=previous if isinstance(previous, int) else None,
                commit=token,
            )
            journal = self._journal_dir / f"activate-{token}.json"
            atomic_write_json(journal, {"version": version, "audit": entry})
            self._point(version, how=how, commit=token)
            crash_point("model_store.pointed")
            if self._record(entry):
                journal.unlink(missing_ok=True)

    def _audit_entry(self, action: str, audit: Mapping[str, Any], **facts: Any) -> dict[str, Any]:
        """The audit entry of a change, checked before anything is written."""
        entry = {**dict(audit), **facts, "action": action}
        missing = [k for k in ("who", "how", "via") if not isinstance(entry.get(k), str)]
        if missing:
            raise ValueError(f"audit needs who, how and via as text; missing {missing}")
        try:
            json.dumps(entry, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"audit details must be JSON: {exc}") from None
        return entry

    def _record(self, entry: Mapping[str, Any], **extra: Any) -> bool:
        """Append ``entry`` to the audit log; False (logged) when it cannot be written,
        so that the journal entry stays and :meth:`heal` writes it later."""
        if self.audit_log is None:
            logger.error(
                "%s: no audit log to record %s of version %s; the journal keeps it",
                self.root,
                entry["action"],
                entry.get("version"),
            )
            return False
        fields = {k: v for k, v in entry.items() if k != "action"}
        try:
            self.audit_log.append(entry["action"], **fields, **extra)
        except (OSError, ValueError) as exc:
            logger.error(
                "%s: the audit entry of %s of version %s is not written yet (%s); the "
                "next open of the store writes it",
                self.root,
                entry["action"],
                entry.get("version"),
                exc,
            )
            return False
        crash_point("model_store.logged")
        return True

    def _point(self, version: int, *, how: str, commit: str | None = None) -> None:
        """Move the pointer (the caller holds the lock and checked the version)."""
        pointer = self._pointer()
        by_hand = self._numbers(pointer.get("by_hand"))
        if how == "by hand":
            by_hand.add(version)
        highest = pointer.get("highest_activated", pointer.get("version", 0))
        highest = max(highest if isinstance(highest, int) else 0, version)
        document = {
            "version": version,
            "activated_utc": utc_now_iso(),
            "how": how,
            "by_hand": sorted(by_hand),
            "highest_activated": highest,
        }
        # the tokens of the latest audited activations: a later activation does not hide
        # from heal() that an interrupted one moved the pointer
        commits = [c for c in pointer.get("commits", []) if isinstance(c, str)]
        if commit is not None:
            commits.append(commit)
        if commits:
            document["commits"] = commits[-_KEPT_COMMITS:]
        atomic_write_json(self.root / ACTIVE_FILE, document)

    def _reserve(self) -> tuple[int, Path]:
        """Claim the next free version number by creating its (empty) directory."""
        version = max([*self._numbered_dirs(), *self.pruned()], default=0) + 1
        while True:
            reserved = self._version_dir(version)
            try:
                # mkdir is atomic and exclusive: exactly one caller creates each number.
                reserved.mkdir()
                return version, reserved
            except FileExistsError:
                version += 1

    def _journal_entry(self, version: int) -> Path:
        return self._journal_dir / f"v{version:04d}.json"

    def add(
        self,
        writer: Callable[[Path], object],
        *,
        info: Mapping[str, Any] | None = None,
        activate: bool = True,
        parent: int | None = None,
        expect_active: int | object | None = UNCHECKED,
        audit: Mapping[str, Any] | None = None,
    ) -> int:
        """Commit a new version written by ``writer`` and optionally activate it.

        Parameters
        ----------
        writer : callable
            Called as ``writer(model_dir)`` with an empty, existing temporary directory;
            it must write a model there, typically with ``save_model_dir(model_dir, ...)``.
        info : dict, optional
            JSON-serialisable description kept in the version's ``version.json``, e.g.
            ``{"kind": "train" or "update", "data": "...", "metrics": {...}}``.
        activate : bool, default=True
            Whether to make the new version the active one.
        parent : int or None, default=None
            The version the new one was made from (recorded; shown as its lineage).
        expect_active : int or None, optional
            The active version the caller built on: if the store's active version is
            another one when the lock is taken (a concurrent publish), nothing is
            written and :class:`StoreConflictError` is raised. Not checked by default.
        audit : dict, optional
            ``who``, ``how`` and ``via`` of the publisher, and details (name, kind,
            trips, ...): a ``publish`` entry (with ``version``) is recorded in
            :attr:`audit_log` in the same durable step as the version (class Notes).

        Returns
        -------
        int
            The new version number.

        Raises
        ------
        ModelFormatError
            If ``info`` is not JSON-serialisable or the writer wrote no ``model.json``.
        ValueError
            If ``audit`` is not a valid entry (nothing is written).
        StoreConflictError
            See ``expect_active``.
        StoreBusyError
            When another writer held the lock for the store's ``wait_s``.
        Exception
            Whatever ``writer`` raised. In all these cases the store is exactly as
            before: no new version, the active pointer unchanged, temporaries removed.

        Notes
        -----
        The whole publish, from reserving the number to moving the pointer (and pruning
        old versions when ``keep_last`` is set), holds the store's lock. If the process
        dies after the version was committed and before the pointer moved, the journal
        entry lets :meth:`heal` finish the activation.
        """
        info_json = to_json({} if info is None else info, "info", self.root)
        if not isinstance(info_json, dict):
            raise ModelFormatError(f"cannot add to {self.root}: info must be a dict")
        if parent is not None:
            parent = _check_version_number(parent)
        if audit is not None:
            self._audit_entry("publish", audit, version=0, commit="")  # checked up front
        with self.lock():
            self._versions_dir.mkdir(parents=True, exist_ok=True)
            if expect_active is not UNCHECKED:
                current = self.active_version()
                if current != expect_active:
                    raise StoreConflictError(self.root, expect_active, current)  # type: ignore[arg-type]
            version, reserved = self._reserve()
            crash_point("model_store.reserved")
            entry = self._journal_entry(version)
            staging = self._versions_dir / f"{TMP_PREFIX}{reserved.name}-{secrets.token_hex(4)}"
            intent = {"version": version, "activate": bool(activate), "pid": os.getpid()}
            if audit is not None:
                token = secrets.token_hex(8)
                intent["audit"] = self._audit_entry("publish", audit, version=version, commit=token)
            try:
                atomic_write_json(entry, intent)
                crash_point("model_store.intent")
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
                    "parent": parent,
                    "created_utc": utc_now_iso(),
                    "vrvm_version": __version__,
                    "info": info_json,
                }
                atomic_write_json(model_dir / VERSION_FILE, record)
                crash_point("model_store.staged")
                # rename() replaces our own empty reservation atomically (POSIX), so the
                # version appears complete or not at all.
                os.rename(model_dir, reserved)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                try:
                    reserved.rmdir()
                except OSError as exc:
                    logger.warning("could not release reservation %s: %s", reserved, exc)
                entry.unlink(missing_ok=True)
                raise
            fsync_dir(self._versions_dir)
            crash_point("model_store.committed")
            shutil.rmtree(staging, ignore_errors=True)
            if activate:
                self._point(version, how="publish")
                crash_point("model_store.activated")
            if "audit" not in intent or self._record(intent["audit"]):
                entry.unlink(missing_ok=True)  # else the next heal writes the entry
            if self.keep_last is not None:
                self._prune(self.keep_last)
        return version

    # ------------------------------------------------------------------ upkeep
    def prune(self, keep_last: int) -> list[int]:
        """Remove old versions: keep the ``keep_last`` newest, the active one and every
        version ever activated by hand. Returns the removed numbers.

        Each removed version's record (parent, time, kind, name) goes to
        ``pruned.json`` first, so :meth:`lineage` still walks through it; the version is
        then renamed aside (one atomic step: readers see it whole or not at all) and
        deleted.
        """
        if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 1:
            raise ValueError(f"keep_last must be a positive integer, got {keep_last!r}")
        with self.lock():
            return self._prune(keep_last)

    def _prune(self, keep_last: int) -> list[int]:
        committed = self._committed()
        pointer = self._pointer()
        keep = set(committed[-keep_last:]) | self._numbers(pointer.get("by_hand"))
        if isinstance(pointer.get("version"), int):
            keep.add(pointer["version"])
        doomed = [v for v in committed if v not in keep]
        if not doomed:
            return []
        pruned = self.pruned()
        for version in doomed:
            try:
                record = self._read_record(version)
            except ModelFormatError:
                record = {"parent": None, "created_utc": None, "info": {}}
            pruned[version] = {
                "parent": record["parent"],
                "created_utc": record.get("created_utc"),
                "kind": record["info"].get("kind"),
                "name": record["info"].get("name"),
                "pruned_utc": utc_now_iso(),
            }
        document = {"versions": {str(v): pruned[v] for v in sorted(pruned)}}
        atomic_write_json(self.root / PRUNED_FILE, document)
        for version in doomed:
            aside = self._versions_dir / f"{TMP_PREFIX}pruned-v{version:04d}"
            os.rename(self._version_dir(version), aside)
            crash_point("model_store.pruning")
            shutil.rmtree(aside, ignore_errors=True)
        fsync_dir(self._versions_dir)
        logger.info("retention removed versions %s of %s", doomed, self.root)
        return doomed

    def heal(self) -> list[str]:
        """Finish or roll back what a crashed writer left; returns what was repaired.

        Takes the lock, so no writer is running: whatever a writer leaves is a crash's.

        * A journal entry whose version was committed and meant to be activated, and
          which is newer than the active one: the version is activated (the publish's
          intent). An entry whose version never got committed: rolled back.
        * A journal entry of a committed change (a publish, or an activation whose
          pointer moved) whose audit entry is not in :attr:`audit_log`: the entry is
          appended, marked ``healed``. An activation whose pointer never moved: rolled
          back. An entry whose audit entry cannot be written stays for the next heal.
        * Staging folders (``versions/.tmp-*``), empty reservations ``versions/v<N>``,
          half-removed versions and temporary files of the pointer: removed.

        Each repair is logged (warning) and returned as a sentence. Committed versions
        are never touched. Versions newer than any ever activated and not in the
        journal are left as they are; :meth:`versions` marks them ``never_activated``.
        """
        if not self.root.is_dir():
            return []
        repairs: list[str] = []
        with self.lock():
            committed = set(self._committed())
            for entry, version, document in self._journal():
                done = True
                if entry.name.startswith("activate-"):
                    done = self._heal_activation(entry, version, document, repairs)
                elif version in committed:
                    active = self._pointer().get("version")
                    active = active if isinstance(active, int) else 0
                    if document.get("activate") and version > active:
                        self._point(version, how="repair")
                        repairs.append(
                            f"activated version {version}: it was committed, but the "
                            "process publishing it stopped before making it active"
                        )
                    done = self._heal_audit(document, f"publish of version {version}", repairs)
                else:
                    repairs.append(f"rolled back the unfinished publish of version {version}")
                if done:
                    entry.unlink(missing_ok=True)
            repairs += self._remove_leftovers(committed)
        for repair in repairs:
            logger.warning("model store %s: %s", self.root, repair)
        return repairs

    def _heal_activation(self, entry: Path, version: int, document: dict, repairs: list) -> bool:
        token = (document.get("audit") or {}).get("commit")
        if token is None or token not in (self._pointer().get("commits") or []):
            repairs.append(
                f"rolled back the unfinished activation of version {version} (the "
                "pointer never moved)"
            )
            return True
        return self._heal_audit(document, f"activation of version {version}", repairs)

    def _heal_audit(self, document: dict, what: str, repairs: list) -> bool:
        """Append the journal's audit entry unless the log has it; False if it cannot."""
        audit = document.get("audit")
        if not isinstance(audit, dict) or not audit.get("commit"):
            return True
        if self.audit_log is not None and self.audit_log.has_entry(commit=audit["commit"]):
            return True
        if not self._record(audit, healed=True):
            return False
        repairs.append(
            f"wrote the audit entry of the {what}: the process making it stopped before writing it"
        )
        return True

    def pending_repairs(self) -> list[str]:
        """What :meth:`heal` would repair, found without the lock and without writing.

        For a store that must not be written (a read-only home): it is served as
        committed, and these are reported instead of repaired.
        """
        if not self.root.is_dir():
            return []
        committed = set(self._committed())
        active = self._pointer().get("version")
        pending = []
        for entry, version, document in self._journal():
            if entry.name.startswith("activate-"):
                pending.append(f"an activation of version {version} was interrupted")
            elif version not in committed:
                pending.append(f"the publish of version {version} was interrupted")
            elif document.get("activate") and version > (active or 0):
                pending.append(f"version {version} was committed but not made active")
            else:
                pending.append(f"the audit entry of version {version} may be missing")
        for folder in (self._versions_dir, self.root):
            try:
                names = sorted(os.listdir(folder))
            except FileNotFoundError:
                continue
            pending += [
                f"{name} was left by an interrupted write"
                for name in names
                if name.startswith(TMP_PREFIX)
            ]
        reserved = set(self._numbered_dirs()) - committed
        pending += [f"the version number {v} was reserved and never used" for v in sorted(reserved)]
        return pending

    def unaudited_versions(self) -> list[int]:
        """Committed versions without a ``publish`` entry in :attr:`audit_log`.

        After :meth:`heal`, a version published with ``audit=`` always has one; those
        listed were published without (by an older vrvm, or by code that named nobody),
        or their entry was removed from the log.

        Raises
        ------
        ValueError
            When the store has no audit log.
        """
        if self.audit_log is None:
            raise ValueError(f"{self.root}: this store was opened without its audit log")
        logged = {
            e.get("version") for e in self.audit_log.entries() if e.get("action") == "publish"
        }
        return [v for v in self._committed() if v not in logged]

    def _remove_leftovers(self, committed: set[int]) -> list[str]:
        """Remove what interrupted writes left (the caller holds the lock)."""
        removed = []
        try:
            names = sorted(os.listdir(self._versions_dir))
        except FileNotFoundError:
            names = []
        for name in names:
            path = self._versions_dir / name
            number = _VERSION_DIR.fullmatch(name)
            if number and int(number.group(1)) not in committed and path.is_dir():
                try:
                    path.rmdir()
                    removed.append(f"released the unused version number {name}")
                except OSError:
                    logger.warning("%s holds files but no %s; left as it is", path, VERSION_FILE)
        for name in remove_temporaries(self._versions_dir) + remove_temporaries(self.root):
            removed.append(f"removed {name}, left by an interrupted write")
        return removed

    def _journal(self) -> list[tuple[Path, int, dict[str, Any]]]:
        """The journal's entries ``(file, version, document)``, oldest version first
        (a torn entry reads as ``{}``: its change cannot have committed)."""
        try:
            names = os.listdir(self._journal_dir)
        except FileNotFoundError:
            return []
        entries = []
        for name in names:
            path = self._journal_dir / name
            match = _JOURNAL_ENTRY.fullmatch(name) or _ACTIVATION_ENTRY.fullmatch(name)
            if not match:
                if name.startswith(TMP_PREFIX):
                    path.unlink(missing_ok=True)
                continue
            try:
                document = loads_strict(path.read_bytes())
                document = document if isinstance(document, dict) else {}
            except (OSError, ValueError):
                document = {}
            version = document.get("version") if name.startswith("activate-") else None
            if version is None:
                version = int(match.group(1)) if name.startswith("v") else 0
            entries.append((path, int(version) if isinstance(version, int) else 0, document))
        return sorted(entries, key=lambda e: (e[1], e[0].name))
