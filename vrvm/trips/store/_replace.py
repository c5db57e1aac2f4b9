"""Replacing a model directory in place: two renames, a set-aside copy, and the rollback.

:func:`vrvm.trips.store.model_dir.save_model_dir` writes a new model beside the old one and
swaps them with two renames (old aside, new in). A process killed between the renames
leaves the path missing and the old model intact in its set-aside copy; the next load
renames it back (:func:`restore_interrupted`), and the next save removes what dead
saves left (:func:`remove_leftovers`). Private to :mod:`vrvm.trips.store.model_dir`, which
re-exports :func:`recover_model_dir`.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path

from vrvm.trips.store._faults import crash_point
from vrvm.trips.store.durable import TMP_PREFIX, fsync_dir
from vrvm.trips.store.errors import ModelFormatError

__all__ = [
    "MODEL_FILE",
    "find_aside_copies",
    "make_sibling_dir",
    "missing_model_error",
    "move_into_place",
    "recover_model_dir",
    "remove_leftovers",
    "restore_interrupted",
]

logger = logging.getLogger("vrvm.trips.store.model_dir")

MODEL_FILE = "model.json"
_ASIDE_PREFIX = ".old-"
# Suffix of a set-aside copy: a UTC timestamp (so names sort chronologically) and a token.
_ASIDE_SUFFIX = re.compile(r"-(\d{8}T\d{12}Z)-[0-9a-f]{8}")


def make_sibling_dir(path: Path, prefix: str) -> Path:
    """Create a fresh, uniquely named directory next to ``path`` (same file system)."""
    while True:
        candidate = path.parent / f"{prefix}{path.name}-{secrets.token_hex(4)}"
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue


def _aside_name(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return path.parent / f"{_ASIDE_PREFIX}{path.name}-{stamp}-{secrets.token_hex(4)}"


def find_aside_copies(path: Path) -> list[Path]:
    """Set-aside copies of the model at ``path`` left by interrupted saves, oldest first."""
    prefix = f"{_ASIDE_PREFIX}{path.name}"
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    found = []
    for name in names:
        # Match the exact suffix so that ".old-model-<stamp>" is not mistaken for a copy of
        # a model named "model-v2".
        if name.startswith(prefix) and _ASIDE_SUFFIX.fullmatch(name[len(prefix) :]):
            found.append(path.parent / name)
    return sorted(found, key=lambda p: p.name[len(prefix) :])


def move_into_place(tmp: Path, path: Path) -> None:
    """Rename the complete model directory ``tmp`` to ``path`` (see save_model_dir Notes)."""
    if not path.exists() or not any(path.iterdir()):
        # rename() atomically replaces a missing or empty directory on POSIX.
        os.rename(tmp, path)
        fsync_dir(path.parent)
        return
    aside = _aside_name(path)
    os.rename(path, aside)
    crash_point("model_dir.aside")
    try:
        os.rename(tmp, path)
    except BaseException as exc:
        try:
            os.rename(aside, path)
        except OSError as rollback_exc:
            exc.add_note(
                f"restoring the previous model also failed ({rollback_exc}); it is intact "
                f"at {aside}: run vrvm.trips.store.model_dir.recover_model_dir({str(path)!r}) "
                "to restore it"
            )
        raise
    fsync_dir(path.parent)
    try:
        shutil.rmtree(aside)
    except OSError as exc:
        # The new model is in place; a leftover copy of the old one wastes space but is
        # harmless (loading ignores it while the model exists).
        logger.warning("could not remove the previous model at %s: %s", aside, exc)


def missing_model_error(path: Path) -> ModelFormatError:
    copies = find_aside_copies(path)
    if copies:
        return ModelFormatError(
            f"model directory {path} does not exist, but a save to it was interrupted: the "
            f"previous model is intact at {copies[-1]}. Run "
            f"vrvm.trips.store.model_dir.recover_model_dir({str(path)!r}) to restore it"
        )
    return ModelFormatError(f"model directory {path} does not exist")


def restore_interrupted(path: Path) -> None:
    """Roll back a save interrupted between its renames, for a reader (see load_model_dir)."""
    try:
        recover_model_dir(path)
    except OSError as exc:  # e.g. a read-only folder: say where the model is
        raise missing_model_error(path) from exc
    remove_leftovers(path)  # the dead save's staging folder


def remove_leftovers(path: Path, keep: Path | None = None) -> None:
    """Remove what interrupted saves to ``path`` left beside it (staging folders and
    set-aside copies), once ``path`` holds a model. Saves to one path are not run
    concurrently (see save_model_dir), so these belong to dead processes."""
    if not (path / MODEL_FILE).is_file():
        return
    staging = re.compile(re.escape(f"{TMP_PREFIX}{path.name}-") + r"[0-9a-f]{8}")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    leftovers = [path.parent / n for n in names if staging.fullmatch(n)]
    for leftover in [*leftovers, *find_aside_copies(path)]:
        if leftover != keep:
            shutil.rmtree(leftover, ignore_errors=True)
            logger.warning("removed %s, left by an interrupted save of %s", leftover.name, path)


def recover_model_dir(path: str | os.PathLike[str]) -> Path:
    """Restore the previous model after a save to ``path`` was interrupted.

    Only needed when a process died between the two renames of
    :func:`save_model_dir`, in which case :func:`load_model_dir` says so. The most recent
    set-aside copy ``.old-<name>-*`` is renamed back to ``path``.

    Parameters
    ----------
    path : str or path-like
        The model directory that is missing.

    Returns
    -------
    pathlib.Path
        ``path``. If it already exists nothing is changed.

    Raises
    ------
    ModelFormatError
        If ``path`` is missing and there is no copy to restore.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from vrvm.trips.store.model_dir import ModelFormatError, recover_model_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         recover_model_dir(Path(tmp) / "never-saved")
    ...     except ModelFormatError as exc:
    ...         print("nothing to recover")
    nothing to recover
    """
    path = Path(path)
    if path.exists():
        return path
    copies = find_aside_copies(path)
    if not copies:
        raise ModelFormatError(
            f"model directory {path} does not exist and no interrupted save left a copy beside it"
        )
    os.rename(copies[-1], path)
    fsync_dir(path.parent)
    logger.warning("restored %s from %s", path, copies[-1])
    return path
