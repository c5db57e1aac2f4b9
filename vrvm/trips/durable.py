"""Durable writes: a file is replaced whole or not at all, and survives a power cut.

Every store of vrvm writes through here: :func:`atomic_write` writes into a temporary
sibling (named ``.tmp-<name>.<random>``), flushes it to disk, renames it over the target
and makes the rename durable by syncing the directory; :func:`exclusive_lock` serialises
writers across processes on one machine. A crash leaves the previous file intact and at
most a ``.tmp-*`` file beside it, which no reader ever opens. Both raise a
:class:`~vrvm.trips._errors.StorageError` naming the target when the disk refuses
(full, read-only, no permission, a file where a folder should be).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vrvm.trips._errors import TMP_PREFIX, StorageError, storage_error

__all__ = [
    "TMP_PREFIX",
    "StorageError",
    "atomic_write",
    "atomic_write_json",
    "exclusive_lock",
    "fsync_dir",
]


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
        renamed; an ``OSError`` that ``write`` raises is reported as one of writing
        ``path``. Other exceptions of ``write`` pass unchanged.

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


def atomic_write_json(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Path:
    """:func:`atomic_write` of a JSON document (indented, UTF-8, NaN refused)."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str]):
    """Hold an exclusive advisory lock (``flock``) on the file ``path`` inside the block.

    The file and its folder are created if missing. Serialises writers across processes
    on one machine (two dashboard sessions, a CLI next to the app). Without ``fcntl``
    (not POSIX) the block runs unlocked: single-process use only.

    Raises
    ------
    StorageError
        When the lock file or its folder cannot be created or opened (what the block
        itself raises passes unchanged).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+b")  # closed by the with below
    except OSError as exc:
        raise storage_error(exc, path) from exc
    with handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
