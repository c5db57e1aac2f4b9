"""Storage errors: an ``OSError`` while writing, said as which path, why and what to do.

Every writer of vrvm (the atomic write, the lock, the first start) turns the
``OSError`` it meets into a :class:`StorageError` naming the path it could not write, so
the dashboard and the command line print one clear line instead of a traceback::

    cannot write /srv/vrvm/models: read-only file system; choose a writable folder

The caller that knows the context replaces the advice (:meth:`StorageError.advise`):
the dashboard's first start says to set ``VRVM_HOME``, the command line to choose
another ``--out``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = [
    "TMP_PREFIX",
    "ModelFormatError",
    "StorageError",
    "StoreBusyError",
    "shown_path",
    "storage_error",
    "why_not_written",
]

TMP_PREFIX = ".tmp-"
"""Prefix of every temporary file or directory vrvm writes beside its target."""

_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
_NOT_ALLOWED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_IN_THE_WAY = frozenset({errno.ENOTDIR, errno.EEXIST})
_WORDS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.ENOENT: "its folder does not exist",
    errno.ENAMETOOLONG: "the name is too long",
}
if hasattr(errno, "EDQUOT"):  # not on every platform
    _WORDS[errno.EDQUOT] = "disk quota exceeded"


def _file_in_the_way(path: Path) -> Path | None:
    """The first of ``path``'s ancestors, or ``path`` itself, that exists and is no folder."""
    for ancestor in [*reversed(path.parents), path]:
        try:
            if ancestor.exists() and not ancestor.is_dir():
                return ancestor
        except OSError:
            return None
    return None


def shown_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a user knows it: cut before its first temporary (``.tmp-*``) part.

    Examples
    --------
    >>> str(shown_path("/srv/vrvm/models/versions/.tmp-v3-1a2b/model/arrays.npz"))
    '/srv/vrvm/models/versions'
    >>> str(shown_path("/srv/out/trips.csv"))
    '/srv/out/trips.csv'
    """
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part.startswith(TMP_PREFIX) and i > 0:
            return Path(*parts[:i])
    return Path(path)


def why_not_written(exc: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """Why ``exc`` stopped a write of ``path``, in words.

    Examples
    --------
    >>> why_not_written(OSError(errno.ENOSPC, "No space left on device"))
    'no space left on device'
    >>> why_not_written(OSError(errno.EIO, "Input/output error"))
    'input/output error'
    >>> why_not_written(OSError("disk full"))
    'disk full'
    """
    code = exc.errno
    if code in _IN_THE_WAY and path is not None:
        blocker = _file_in_the_way(Path(path))
        if blocker is not None:
            return f"{blocker} is a file, not a folder"
    if code in _WORDS:
        return _WORDS[code]
    if code is not None:
        text = exc.strerror or os.strerror(code)
        return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


def _default_advice(code: int | None) -> str:
    if code in _NO_SPACE:
        return "free some space or write elsewhere"
    if code in _NOT_ALLOWED:
        return "choose a writable folder"
    if code in _IN_THE_WAY:
        return "move that file or choose another folder"
    return "check the folder or choose another one"


class StorageError(OSError):
    """Writing ``filename`` failed: which path, why in words, and what to do.

    An ``OSError`` (``errno``, ``strerror`` and ``filename`` kept), so code catching
    ``OSError`` still catches it; its message reads
    ``cannot write <path>: <why>; <what to do>``.

    Attributes
    ----------
    errno : int or None
        The operating system's error number (``errno.ENOSPC``...), None if it gave none.
    filename : str
        The path that could not be written (the target, never a temporary name:
        see :func:`shown_path`).
    why : str
        The reason in words ("no space left on device", "permission denied", ...).
    advice : str
        What to do about it.

    Examples
    --------
    >>> exc = StorageError(errno.EROFS, "/srv/vrvm", advice="set VRVM_HOME to a writable folder")
    >>> str(exc)
    'cannot write /srv/vrvm: read-only file system; set VRVM_HOME to a writable folder'
    >>> isinstance(exc, OSError), exc.errno == errno.EROFS
    (True, True)
    """

    def __init__(
        self,
        code: int | None,
        filename: str | os.PathLike[str],
        *,
        why: str | None = None,
        advice: str | None = None,
    ):
        strerror = os.strerror(code) if code is not None else (why or "unknown error")
        super().__init__(code, strerror, str(filename))
        if why is None:
            why = why_not_written(OSError(code, strerror), filename) if code else strerror
        self.why = why
        self.advice = advice or _default_advice(code)

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.why}; {self.advice}"

    def __reduce__(self):  # picklable across processes despite the keyword arguments
        return (_rebuild, (self.errno, self.filename, self.why, self.advice))

    def advise(self, advice: str, filename: str | os.PathLike[str] | None = None) -> StorageError:
        """The same error with other advice (and optionally another path named)."""
        new = StorageError(
            self.errno,
            self.filename if filename is None else filename,
            why=self.why,
            advice=advice,
        )
        new.__cause__ = self.__cause__ or self
        return new


def _rebuild(code, filename, why, advice) -> StorageError:
    return StorageError(code, filename, why=why, advice=advice)


def storage_error(
    exc: OSError, path: str | os.PathLike[str], *, advice: str | None = None
) -> StorageError:
    """``exc``, raised while writing ``path``, as a :class:`StorageError` naming ``path``.

    A :class:`StorageError` already is one and is returned as it is (with ``advice``
    if given). Use as ``raise storage_error(exc, path) from exc``.

    Examples
    --------
    >>> str(storage_error(PermissionError(errno.EACCES, "Permission denied"), "/x/a.json"))
    'cannot write /x/a.json: permission denied; choose a writable folder'
    """
    if isinstance(exc, StorageError):
        return exc if advice is None else exc.advise(advice)
    why = why_not_written(exc, exc.filename or path)
    if exc.filename and why == why_not_written(exc):  # no file in the way of exc.filename
        why = why_not_written(exc, path)
    return StorageError(exc.errno, shown_path(path), why=why, advice=advice)


class ModelFormatError(ValueError):
    """A stored model (or model store) is missing, damaged, of another format or unsafe.

    Also raised by :func:`save_model_dir` for metadata or arrays that cannot be stored
    faithfully (NaN in metadata, object arrays, ...). The message always names the path
    concerned and, where there is one, the way to fix the problem.
    """


class StoreBusyError(RuntimeError):
    """A store stayed locked by another writer longer than the caller would wait.

    Nothing was changed; trying again once the other writer is done succeeds. The
    message names the store, who holds it (when known) and how long the caller waited.
    Not an ``OSError`` (nor a ``TimeoutError``, which is one): the handlers that say
    "cannot write ..." for a full or read-only disk must not catch it.

    Attributes
    ----------
    path : str
        The store (its folder).
    holder : str
        What the lock file says of its holder (``"pid 1234 since ..."``), or ``""``.
    waited_s : float
        Seconds waited before giving up.

    Examples
    --------
    >>> str(StoreBusyError("/srv/vrvm/models", "pid 41 since 2026-11-24T08:00:00Z", 30.0))
    '/srv/vrvm/models is busy: another process (pid 41 since 2026-11-24T08:00:00Z) is \
writing to it and held it for the 30 s waited; try again in a moment'
    """

    def __init__(self, path: str | os.PathLike[str], holder: str, waited_s: float):
        self.path, self.holder, self.waited_s = str(path), holder, float(waited_s)
        who = f"another process ({holder})" if holder else "another process"
        super().__init__(
            f"{self.path} is busy: {who} is writing to it and held it for the "
            f"{self.waited_s:g} s waited; try again in a moment"
        )

    def __reduce__(self):  # picklable across processes
        return (StoreBusyError, (self.path, self.holder, self.waited_s))
