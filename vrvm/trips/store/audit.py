"""The audit log: an append-only record of who changed what in a data home, and when.

One JSON object per line (``audit.jsonl`` in the home, :func:`vrvm.trips.home.audit_log`):
``time`` (UTC, ISO 8601), ``who`` (the signed-in analyst, or the OS user of the command
line), ``how`` they were identified (``oidc``, ``passphrase``, ``open`` when no sign-in
is configured, ``os``, ``library``), ``via`` (``dashboard``, ``cli``, ``python``), the
``action`` (``upload``, ``train``, ``publish``, ``activate``, ``delete``, ``export``,
``sign in``, ...) and its details (file names, counts, version numbers: never a trip,
never a passphrase), and ``prev``, the SHA-256 of the line before it.

**Durable appends.** A writer takes the log's lock, ends a line a crashed writer left
unfinished with a newline, and appends its line with one ``write`` to a file opened in
append mode, then ``fsync``. A crash can therefore leave at most one torn line at the end,
which the next append closes off; readers skip it (and :meth:`AuditLog.check` reports
it), so a crashed writer never costs an earlier entry. Nothing here ever rewrites or
truncates the file. The ``prev`` chain makes an edit or a deleted line in the middle
visible to :meth:`AuditLog.check`; it does not stop someone who can write the home from
rewriting the whole file (see ``docs/security.md``).

**In the same durable step as the change.** A change of the model store (a publish, an
activation by hand) writes its entry into the store's journal *before* the change
commits, with a random ``commit`` token that the entry carries; the entry is appended
after the change, and the journal entry removed only then. A writer killed in between
leaves the journal entry, and the next open of the home
(:meth:`vrvm.trips.store.model_store.ModelStore.heal`) appends what is missing (marked
``healed``), so a committed change never lacks its entry (:meth:`AuditLog.has_entry`
finds whether it was written).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vrvm.trips.store._faults import crash_armed, crash_point
from vrvm.trips.store.durable import exclusive_lock, fsync_dir
from vrvm.trips.store.errors import storage_error

__all__ = ["AUDIT_ACTIONS", "AuditCheck", "AuditLog"]

logger = logging.getLogger(__name__)

AUDIT_ACTIONS = (
    "upload",
    "train",
    "publish",
    "activate",
    "delete",
    "export",
    "zones",
    "recipe",
    "sign in",
    "sign in refused",
    "sign out",
)
"""The actions the dashboard, the command line and the services record."""

_TAIL_BYTES = 1 << 16  # enough for the last line: entries are a few hundred bytes
_FIELDS = ("time", "who", "how", "via", "action", "prev")


@dataclass(frozen=True)
class AuditCheck:
    """What :meth:`AuditLog.check` found: entries read, lines skipped, chain breaks.

    Attributes
    ----------
    n_entries : int
        Entries that read.
    torn : list of int
        Line numbers (1-based) that are not a complete entry (a crashed writer's).
    broken : list of int
        Line numbers whose ``prev`` is not the hash of the line before: a line was
        changed, inserted or removed there.
    """

    n_entries: int
    torn: list[int]
    broken: list[int]

    @property
    def ok(self) -> bool:
        """No torn line and an unbroken chain."""
        return not self.torn and not self.broken


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()


class AuditLog:
    """An append-only JSON Lines file of who did what, with a lock for its writers.

    Parameters
    ----------
    path : str or path-like
        The log file (created by the first :meth:`append`; a missing log is empty).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     log = AuditLog(Path(tmp) / "audit.jsonl")
    ...     _ = log.append("upload", who="ana", how="passphrase", via="dashboard",
    ...                    file="week1.csv", kept=700)
    ...     _ = log.append("publish", who="ana", how="passphrase", via="dashboard", version=2)
    ...     entries, check = log.entries(), log.check()
    >>> [(e["who"], e["action"]) for e in entries], entries[0]["file"], check.ok
    ([('ana', 'upload'), ('ana', 'publish')], 'week1.csv', True)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"

    @property
    def _lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    def _tail(self, handle) -> tuple[bytes, bool]:
        """The last line of the open file (without its newline) and whether the file
        ends with a newline (True for an empty file)."""
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return b"", True
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
        ended = tail.endswith(b"\n")
        lines = [line for line in tail.split(b"\n") if line.strip()]
        return (lines[-1] if lines else b""), ended

    def append(
        self, action: str, *, who: str, how: str, via: str, **details: Any
    ) -> dict[str, Any]:
        """Record ``action`` by ``who``; returns the entry as written.

        Parameters
        ----------
        action : str
            What was done (one of :data:`AUDIT_ACTIONS`).
        who, how, via : str
            Who did it, how they were identified and through which interface.
        **details
            JSON-serialisable facts about it (file names, counts, versions). Keys may not
            be those of the entry itself (``time``, ``who``, ...).

        Raises
        ------
        StorageError
            When the log cannot be written (what to do is in the message).
        ValueError
            For an unknown action, a reserved key or details that are not JSON.
        """
        if action not in AUDIT_ACTIONS:
            raise ValueError(f"unknown audit action {action!r}; one of {AUDIT_ACTIONS}")
        clash = sorted(set(details) & set(_FIELDS))
        if clash:
            raise ValueError(f"audit details may not be named {clash}")
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "who": str(who),
            "how": str(how),
            "via": str(via),
            "action": action,
            **details,
        }
        try:
            json.dumps(entry, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"audit details must be JSON: {exc}") from None
        with exclusive_lock(self._lock_path):
            try:
                self._append_locked(entry)
            except OSError as exc:
                raise storage_error(exc, self.path) from exc
        return entry

    def _append_locked(self, entry: dict[str, Any]) -> None:
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        with os.fdopen(fd, "r+b", buffering=0) as handle:
            last, ended = self._tail(handle)
            entry["prev"] = _line_hash(last) if last else None
            line = json.dumps(entry, ensure_ascii=False, allow_nan=False).encode("utf-8")
            # a line a crashed writer left unfinished is closed off, never continued
            data = (b"" if ended else b"\n") + line + b"\n"
            if crash_armed("audit.torn"):  # the crash tests: half a line, then death
                os.write(handle.fileno(), data[: len(data) // 2])
                os.fsync(handle.fileno())
                crash_point("audit.torn")
            os.write(handle.fileno(), data)  # O_APPEND: one write, at the end
            os.fsync(handle.fileno())
        if created:
            fsync_dir(self.path.parent)

    def has_entry(self, **fields: Any) -> bool:
        """Whether some entry holds every one of ``fields`` (``commit="3f2a..."``).

        Reads the whole log (for healing after a crash, not for every request), but
        parses only the lines holding the text values sought, as :meth:`append` wrote
        them: a token among 100,000 entries takes a fraction of a second.
        """
        needles = [
            json.dumps(v, ensure_ascii=False).encode("utf-8")
            for v in fields.values()
            if isinstance(v, str)
        ]
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if not all(needle in data for needle in needles):  # one scan of the bytes
            return False
        for line in data.split(b"\n"):
            if not line.strip() or not all(needle in line for needle in needles):
                continue
            entry = self._parse(line)
            if entry is not None and all(entry.get(k) == v for k, v in fields.items()):
                return True
        return False

    def _lines(self) -> list[bytes]:
        try:
            return self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return []

    def entries(self, *, last: int | None = None) -> list[dict[str, Any]]:
        """The entries that read, oldest first (the ``last`` ones when given).

        A torn line (a crashed writer's) is skipped with a logged warning.
        """
        entries = []
        for number, line in enumerate(self._lines(), start=1):
            if not line.strip():
                continue
            entry = self._parse(line)
            if entry is None:
                logger.warning("%s: line %d is not a complete entry; skipped", self.path, number)
                continue
            entries.append(entry)
        return entries if last is None else entries[-last:] if last > 0 else []

    @staticmethod
    def _parse(line: bytes) -> dict[str, Any] | None:
        try:
            entry = json.loads(line)
        except (UnicodeDecodeError, ValueError):
            return None
        if not isinstance(entry, Mapping) or not all(k in entry for k in _FIELDS):
            return None
        return dict(entry)

    def check(self) -> AuditCheck:
        """Read the whole log: torn lines and breaks of the ``prev`` chain."""
        torn, broken, n = [], [], 0
        previous: bytes | None = None
        for number, line in enumerate(self._lines(), start=1):
            if not line.strip():
                continue
            entry = self._parse(line)
            if entry is None:
                torn.append(number)
            else:
                n += 1
                expected = None if previous is None else _line_hash(previous)
                if entry["prev"] != expected:
                    broken.append(number)
            previous = line
        return AuditCheck(n_entries=n, torn=torn, broken=broken)
