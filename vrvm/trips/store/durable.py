"""Durable writes: a file is replaced whole or not at all, and survives a power cut.

Every store of vrvm writes through here: :func:`atomic_write` writes into a temporary
sibling (named ``.tmp-<name>.<random>``), flushes it to disk, renames it over the target
and makes the rename durable by syncing the directory; :func:`exclusive_lock` serialises
writers across processes on one machine. A crash leaves the previous file intact and at
most a ``.tmp-*`` file beside it, which no reader ever opens. Both raise a
:class:`~vrvm.trips.store.errors.StorageError` naming the target when the disk refuses
(full, read-only, no permission, a file where a folder should be).

Both also refuse, before touching anything, to write where :func:`write_refusal` says
no: a read-only file system, a folder without any write bit (refused even for root,
whom permission bits do not stop: the operator made it read-only on purpose), or a
folder this process was told to leave alone (:func:`refuse_writes`, a read-only data
home). So serving a read-only home never writes in it, whoever runs the server.

Why the lock is vrvm's own and not ``filelock``
-----------------------------------------------
``filelock`` 4.3 was measured in its place (``benchmarks/bench_locks.py``; BENCHMARKS.md,
"Store locks"), wrapped to keep every guarantee: re-entrant per path and thread
(``is_singleton=True``, else a nested lock in one thread raises "Deadlock"), ``flock``
only and the file kept (``preserve_lock_file=True``, ``fallback_to_soft=False``; its
soft fallback is another mechanism: a marker file removed on release, judged stale
from its holder's pid), the holder named (``on_acquired``), its
``Timeout`` (a ``TimeoutError``, hence an ``OSError``) turned into
:class:`~vrvm.trips.store.errors.StoreBusyError`. That wrapper passed the store tests
(crashes, read-only homes, busy stores), so no guarantee was lost, but speed was, on a
2-core machine:

* hand-over: filelock polls even when the caller waits as long as it takes (the trip
  store, the audit log, the zones, the first start), so a waiter ran 28-31 ms (median)
  after the holder let go, against 0.16-0.26 ms for ``flock`` waiting in the kernel
  here; polling every 5 ms still took 1.7-3.9 ms, at 200 wake-ups a second per waiter.
  Two processes taking turns made 135-166 locked writes a second, against 384-415;
* a nested (re-entrant) acquire: 470-480 us against 21-63 us; a free lock: 0.4-1.1 ms
  against 0.1-0.5 ms (both with the same write refusal check and holder record);
* 17-33 ms to import (0.3-0.4 MiB), a 15,700-line package for about 100 lines here.

With a timeout (the model store) both poll every 50 ms (:data:`LOCK_POLL_S`); both
recover from a holder killed with SIGKILL within tens of ms (the kernel drops its
``flock``: no stale lock, nothing to clean).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vrvm.trips.store._faults import crash_point
from vrvm.trips.store.errors import TMP_PREFIX, StorageError, StoreBusyError, storage_error

__all__ = [
    "TMP_PREFIX",
    "StorageError",
    "StoreBusyError",
    "atomic_write",
    "atomic_write_json",
    "exclusive_lock",
    "fsync_dir",
    "refuse_writes",
    "remove_temporaries",
    "write_refusal",
]

logger = logging.getLogger(__name__)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make new entries and renames in ``directory`` durable (a no-op off POSIX)."""
    if os.name != "posix":  # pragma: no cover - Windows has no directory fsync
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems (certain network mounts) cannot fsync a directory. The files
        # themselves are already synced, so the directory entry is best effort there.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


# Folders this process must not write under (resolved path -> why): read-only homes.
_REFUSED: dict[str, str] = {}
_REFUSED_GUARD = threading.Lock()


def refuse_writes(folder: str | os.PathLike[str], reason: str | None) -> None:
    """From now on, refuse every write of this process under ``folder`` (None: allow again).

    :func:`atomic_write` and :func:`exclusive_lock` then raise a
    :class:`~vrvm.trips.store.errors.StorageError` naming the target and ``reason``, before
    creating anything. Used for a data home served read-only
    (:func:`vrvm.trips.home.read_only_reason`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     refuse_writes(tmp, "served read-only")
    ...     try:
    ...         atomic_write(Path(tmp) / "a.txt", lambda p: p.write_text("x"))
    ...     except StorageError as exc:
    ...         said = str(exc).endswith("served read-only; nothing was written")
    ...     refuse_writes(tmp, None)
    ...     left = sorted(p.name for p in Path(tmp).iterdir())
    >>> said, left
    (True, [])
    """
    key = os.path.realpath(folder)
    with _REFUSED_GUARD:
        if reason is None:
            _REFUSED.pop(key, None)
        else:
            _REFUSED[key] = str(reason)


def _existing_folder(path: Path) -> Path | None:
    """``path`` if it is a folder, else its nearest existing ancestor."""
    for candidate in (path, *path.parents):
        try:
            if candidate.is_dir():
                return candidate
        except OSError:
            return None
    return None


def write_refusal(folder: str | os.PathLike[str]) -> str | None:
    """Why nothing may be written in ``folder`` (or where it would be created), or None.

    * a folder this process was told to leave alone (:func:`refuse_writes`);
    * a read-only file system (``statvfs`` flag ``ST_RDONLY``);
    * a folder with no write bit for anyone (``chmod a-w``), which vrvm honours even as
      root (root would otherwise write there; ``os.access`` says yes for root too);
    * a folder this process may not write (``os.access``, for other users).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     before = write_refusal(tmp)
    ...     os.chmod(tmp, 0o555)
    ...     after = write_refusal(tmp)
    ...     os.chmod(tmp, 0o755)
    >>> before, after
    (None, 'the folder has no write permission')
    """
    path = Path(os.path.realpath(folder))
    with _REFUSED_GUARD:
        for root, reason in _REFUSED.items():
            if path == Path(root) or Path(root) in path.parents:
                return reason
    existing = _existing_folder(path)
    if existing is None:
        return None
    try:
        if hasattr(os, "statvfs") and os.statvfs(existing).f_flag & os.ST_RDONLY:
            return "read-only file system"
        mode = existing.stat().st_mode
    except OSError:
        return None  # the write itself will say what is wrong
    if not mode & 0o222 or not os.access(existing, os.W_OK):
        return "the folder has no write permission"
    return None


def _check_writable(target: Path) -> None:
    """Raise :class:`StorageError` naming ``target`` if its folder refuses writes."""
    reason = write_refusal(target.parent)
    if reason is not None:
        code = errno.EROFS if "read-only" in reason else errno.EACCES
        raise StorageError(code, target, why=reason, advice="nothing was written")


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Write ``path`` through ``write(tmp_path)``, atomically and durably.

    Parameters
    ----------
    path : str or path-like
        The file to create or replace. Missing parent directories are created.
    write : callable
        Called with the path of a fresh temporary file in the same directory (it
        exists and is empty); it writes the whole content there, for example
        ``lambda tmp: frame.to_parquet(tmp)``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    StorageError
        An ``OSError`` naming ``path`` (never the temporary file), why in words and what
        to do, when its folder cannot be made or the file cannot be written, synced or
        renamed, or when :func:`write_refusal` refuses its folder (nothing is created);
        an ``OSError`` that ``write`` raises is reported as one of writing ``path``.
        Other exceptions of ``write`` pass unchanged.

    Notes
    -----
    Readers see the old file or the complete new one, never a partial one: the
    content is fsynced before the rename (``os.replace``, atomic on POSIX) and the
    directory after it. If ``write`` raises, the temporary file is removed and ``path``
    is unchanged.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = atomic_write(Path(tmp) / "a.txt", lambda p: p.write_text("hello"))
    ...     text, names = target.read_text(), sorted(p.name for p in Path(tmp).iterdir())
    >>> text, names
    ('hello', ['a.txt'])
    """
    path = Path(path)
    _check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise storage_error(exc, path) from exc
    tmp = Path(name)
    try:
        write(tmp)
        _fsync_file(tmp)
        crash_point("atomic_write.synced")
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, StorageError):
            raise storage_error(exc, path) from exc
        raise
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        raise storage_error(exc, path.parent) from exc
    return path


def remove_temporaries(
    folder: str | os.PathLike[str], *, older_than_s: float | None = None
) -> list[str]:
    """Remove what interrupted writes left directly in ``folder`` (``.tmp-*`` files and
    folders); returns the names removed, sorted.

    Call it holding the lock every writer of ``folder`` takes, so that only dead
    writers' temporaries are there; where there is no such lock, ``older_than_s``
    spares anything younger (a live write). A missing folder has nothing to remove.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     (Path(tmp) / ".tmp-v0002-ab12").mkdir()
    ...     sizes = [(Path(tmp) / n).write_text("{}") for n in (".tmp-a.json.x1", "kept.json")]
    ...     removed, left = remove_temporaries(tmp), sorted(p.name for p in Path(tmp).iterdir())
    >>> removed, left
    (['.tmp-a.json.x1', '.tmp-v0002-ab12'], ['kept.json'])
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    now = time.time()
    removed = []
    for leftover in sorted(folder.glob(f"{TMP_PREFIX}*")):
        try:
            if older_than_s is not None and now - leftover.lstat().st_mtime <= older_than_s:
                continue
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
        except OSError as exc:  # gone meanwhile, or not ours to remove: leave it
            if not isinstance(exc, FileNotFoundError):
                logger.warning("cannot remove %s: %s", leftover, exc)
            continue
        removed.append(leftover.name)
    return removed


def atomic_write_json(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Path:
    """:func:`atomic_write` of a JSON document (indented, UTF-8, NaN refused)."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# Locks this process holds, by resolved path and thread: flock conflicts between two
# opens of one file even within a process, so a nested acquire by the holder must not
# open the file again (it would wait for itself).
_HELD: dict[tuple[str, int], int] = {}
_HELD_GUARD = threading.Lock()
#: Seconds between attempts while waiting for a lock held by another writer.
LOCK_POLL_S = 0.05


#: Bytes of the holder's record at the start of a lock file (``pid ... since ...``, padded).
HOLDER_RECORD_BYTES = 64


def _name_holder(fd: int) -> None:
    """Write ``pid 1234 since <UTC time>`` over the start of the lock file ``fd``.

    In place, padded to :data:`HOLDER_RECORD_BYTES`, never truncating: on ext4 a file
    truncated to zero and rewritten is flushed to disk when closed (``auto_da_alloc``),
    which made a free lock cost 0.4-2.2 ms instead of 0.1-0.5 ms (BENCHMARKS.md, "Store
    locks"; the more the disk is busy, the more it costs).
    """
    record = f"pid {os.getpid()} since {_utc_now()}".ljust(HOLDER_RECORD_BYTES - 1) + "\n"
    with contextlib.suppress(OSError):  # the holder's name is a courtesy
        if os.fstat(fd).st_size > HOLDER_RECORD_BYTES:  # not written by this function
            os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)


def _holder_text(fd: int) -> str:
    try:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str], *, timeout: float | None = None):
    """Hold an exclusive advisory lock (``flock``) on the file ``path`` inside the block.

    The file and its folder are created if missing. Serialises writers across processes
    on one machine (two dashboard sessions, a CLI next to the app) and across threads
    of one process. The lock is re-entrant: a thread already holding it passes straight
    through (so a locked transaction may call methods that lock too). While held, the
    file names its holder (``pid 1234 since <UTC time>``), which a waiter that gives up
    reports. Without ``fcntl`` (not POSIX) the block runs unlocked: single-process use
    only.

    Parameters
    ----------
    path : str or path-like
        The lock file.
    timeout : float or None, default=None
        Seconds to wait for another holder to let go; None waits as long as it takes.

    Raises
    ------
    StorageError
        When the lock file or its folder cannot be created or opened, or when
        :func:`write_refusal` refuses its folder (nothing is created; what the block
        itself raises passes unchanged).
    StoreBusyError
        When another holder kept the lock for all of ``timeout`` seconds; nothing was
        done.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with exclusive_lock(Path(tmp) / ".lock"):
    ...         with exclusive_lock(Path(tmp) / ".lock", timeout=0):  # re-entrant
    ...             held = (Path(tmp) / ".lock").read_text().startswith("pid ")
    >>> held
    True
    """
    path = Path(path)
    key = (os.path.realpath(path), threading.get_ident())
    with _HELD_GUARD:
        depth = _HELD.get(key, 0)
        if depth:
            _HELD[key] = depth + 1
    if depth:
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key] -= 1
        return
    _check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not O_APPEND: the holder's record is written in place at offset 0 (pwrite).
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise storage_error(exc, path) from exc
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        _acquire(fd, fcntl, path, timeout)
        with _HELD_GUARD:
            _HELD[key] = 1
        try:
            _name_holder(fd)
            yield
        finally:
            with _HELD_GUARD:
                del _HELD[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _acquire(fd: int, fcntl, path: Path, timeout: float | None) -> None:
    """``flock`` ``fd``, giving up with :class:`StoreBusyError` after ``timeout`` s."""
    if timeout is None:
        # A wait in the kernel: the waiter runs as soon as the holder lets go (0.2-0.7 ms
        # here), where polling would take half a poll interval on average.
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    started = time.monotonic()
    deadline = started + max(0.0, float(timeout))
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    path.parent, _holder_text(fd), time.monotonic() - started
                ) from None
            time.sleep(LOCK_POLL_S)
