"""Atomic, pickle-free storage of trained models, and a store of numbered model versions.

A trained model is stored as a directory holding two files:

``model.json``
    The manifest: format name and version, the vrvm version that wrote it, the creation
    time (UTC, ISO 8601), the caller's metadata (feature configuration, kernel widths,
    training-data summary and content hash, metrics, ...), the SHA-256 of ``arrays.npz``
    and the name, shape and dtype of every array.
``arrays.npz``
    The numeric arrays, one ``.npy`` member per array.

A model directory is untrusted input (it may come from a colleague, a download or a disk
that lost power), so loading never unpickles anything: arrays are read with
``allow_pickle=False``, object and structured dtypes are refused when saving and when
loading, and the checksum and the manifest are verified before anything is returned.
Every problem with a stored model is reported as a :class:`ModelFormatError` whose
message names the offending path.

:func:`save_model_dir` writes a model so that nothing is ever half-written at its path
(see its Notes for the exact guarantee). :class:`ModelStore` keeps numbered, immutable
versions of a model plus an "active" pointer, so that a dashboard can keep serving one
version while a retrain writes the next.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import math
import os
import re
import secrets
import shutil
import time
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ModelFormatError",
    "ModelManifest",
    "ModelStore",
    "VersionInfo",
    "exclusive_lock",
    "load_model_dir",
    "read_model_manifest",
    "recover_model_dir",
    "save_model_dir",
]

logger = logging.getLogger(__name__)

MODEL_FILE = "model.json"
ARRAYS_FILE = "arrays.npz"
VERSION_FILE = "version.json"
ACTIVE_FILE = "active.json"
VERSIONS_DIR = "versions"

_TMP_PREFIX = ".tmp-"
_ASIDE_PREFIX = ".old-"
# Suffix of a set-aside copy: a UTC timestamp (so names sort chronologically) and a token.
_ASIDE_SUFFIX = re.compile(r"-(\d{8}T\d{12}Z)-[0-9a-f]{8}")
# Array names become zip member names, so keep them to a portable, path-free alphabet.
_ARRAY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_VERSION_DIR = re.compile(r"v(\d{4,})")
# Booleans, integers, floats, complex numbers, datetimes/timedeltas and fixed-width
# strings round-trip through .npy without pickle; object and void (structured) data cannot.
_STORABLE_KINDS = frozenset("biufcmMSU")
# How often load_model_dir re-reads a model that was replaced while it was being read.
_LOAD_ATTEMPTS = 3
_LOAD_RETRY_DELAY = 0.05  # seconds


class ModelFormatError(ValueError):
    """A stored model (or model store) is missing, damaged, of another format or unsafe.

    Also raised by :func:`save_model_dir` for metadata or arrays that cannot be stored
    faithfully (NaN in metadata, object arrays, ...). The message always names the path
    concerned and, where there is one, the way to fix the problem.
    """


def _vrvm_version() -> str:
    # Imported lazily: ``vrvm/__init__.py`` imports this module, possibly before it
    # defines ``__version__``.
    from vrvm import __version__

    return __version__


def _utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------- validation
def _to_json(value: Any, where: str, target: Path) -> Any:
    """Return ``value`` as plain JSON types, or raise naming the offending entry.

    numpy scalars become Python scalars and tuples become lists. Everything that would
    not come back unchanged from ``json.loads`` (NaN, non-string keys, arrays, arbitrary
    objects) is refused rather than silently altered.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            raise ModelFormatError(
                f"cannot save {target}: {where} is {number!r}, which JSON cannot represent; "
                "store None or a string instead"
            )
        return number
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ModelFormatError(
                    f"cannot save {target}: {where} has the key {key!r} of type "
                    f"{type(key).__name__}; JSON object keys must be strings"
                )
            result[str(key)] = _to_json(item, f"{where}[{key!r}]", target)
        return result
    if isinstance(value, (list, tuple)):
        return [_to_json(item, f"{where}[{i}]", target) for i, item in enumerate(value)]
    if isinstance(value, np.ndarray):
        raise ModelFormatError(
            f"cannot save {target}: {where} is a numpy array; put arrays in `arrays` "
            "(or convert small ones with .tolist())"
        )
    raise ModelFormatError(
        f"cannot save {target}: {where} has type {type(value).__name__}, which is not "
        "JSON-serialisable (use dict, list, str, int, float, bool or None)"
    )


def _unstorable_reason(dtype: np.dtype) -> str | None:
    """Why arrays of ``dtype`` cannot be stored without pickle, or None if they can."""
    if dtype.hasobject:
        return f"dtype {dtype} holds Python objects, which only pickle could store"
    if dtype.fields is not None or dtype.subdtype is not None:
        return f"structured dtype {dtype} is not supported; store each field as its own array"
    if dtype.kind not in _STORABLE_KINDS:
        return f"dtype {dtype} is not supported"
    return None


def _check_arrays(arrays: Mapping[str, Any], target: Path) -> dict[str, np.ndarray]:
    if not isinstance(arrays, Mapping):
        raise ModelFormatError(
            f"cannot save {target}: arrays must be a dict of name -> array, "
            f"got {type(arrays).__name__}"
        )
    checked = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not _ARRAY_NAME.fullmatch(name):
            raise ModelFormatError(
                f"cannot save {target}: invalid array name {name!r}; use letters, digits, "
                "'_', '.' and '-' (at most 200 characters, not starting with '.' or '-')"
            )
        array = np.asarray(value)
        reason = _unstorable_reason(array.dtype)
        if reason is not None:
            raise ModelFormatError(f"cannot save {target}: array {name!r}: {reason}")
        checked[name] = array
    return checked


def _check_format(format_name: str, format_version: int | None = None) -> None:
    if not isinstance(format_name, str) or not format_name:
        raise ValueError(f"format_name must be a non-empty string, got {format_name!r}")
    if format_version is not None and (
        not isinstance(format_version, int)
        or isinstance(format_version, bool)
        or format_version < 1
    ):
        raise ValueError(f"format version must be an integer >= 1, got {format_version!r}")


# ----------------------------------------------------------------------- file helpers
@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str]):
    """Hold an exclusive advisory lock (``flock``) on the file ``path`` inside the block.

    The file and its folder are created if missing. Serialises writers across processes
    on one machine (two dashboard sessions, a CLI next to the app). Without ``fcntl``
    (not POSIX) the block runs unlocked: single-process use only.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
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


def _fsync_dir(directory: Path) -> None:
    """Make new entries and renames in ``directory`` durable (a no-op off POSIX)."""
    if os.name != "posix":
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


def _write_json(file_path: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` to a new file and fsync it."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with open(file_path, "x", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _write_npz(file_path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write an uncompressed ``.npz`` archive readable by ``np.load``, and fsync it.

    Written member by member (as ``np.savez`` does internally) rather than through
    ``np.savez(file, **arrays)``, whose keyword arguments would clash with arrays named
    ``file`` or ``allow_pickle``.
    """
    with open(file_path, "xb") as f:
        with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, array in arrays.items():
                # A fixed timestamp so that saving the same arrays twice gives identical bytes.
                member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                with zf.open(member, mode="w", force_zip64=True) as out:
                    np.lib.format.write_array(out, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def _sha256_of(f) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _make_sibling_dir(path: Path, prefix: str) -> Path:
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


def _find_aside_copies(path: Path) -> list[Path]:
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


def _check_replaceable(path: Path) -> None:
    """Refuse to replace anything at ``path`` that is not a model directory (or empty)."""
    if path.is_symlink():
        raise FileExistsError(
            f"{path} is a symbolic link; save to the directory it points to instead"
        )
    if not path.exists():
        return
    if not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a directory; refusing to replace it")
    if not (path / MODEL_FILE).is_file() and any(path.iterdir()):
        raise FileExistsError(
            f"{path} exists and is not a model directory (no {MODEL_FILE}); refusing to replace it"
        )


def _move_into_place(tmp: Path, path: Path) -> None:
    """Rename the complete model directory ``tmp`` to ``path`` (see save_model_dir Notes)."""
    if not path.exists() or not any(path.iterdir()):
        # rename() atomically replaces a missing or empty directory on POSIX.
        os.rename(tmp, path)
        _fsync_dir(path.parent)
        return
    aside = _aside_name(path)
    os.rename(path, aside)
    try:
        os.rename(tmp, path)
    except BaseException as exc:
        try:
            os.rename(aside, path)
        except OSError as rollback_exc:
            exc.add_note(
                f"restoring the previous model also failed ({rollback_exc}); it is intact "
                f"at {aside}: run vrvm.storage.recover_model_dir({str(path)!r}) to restore it"
            )
        raise
    _fsync_dir(path.parent)
    try:
        shutil.rmtree(aside)
    except OSError as exc:
        # The new model is in place; a leftover copy of the old one wastes space but is
        # harmless (loading ignores it while the model exists).
        logger.warning("could not remove the previous model at %s: %s", aside, exc)


# ----------------------------------------------------------------------- save / load
def save_model_dir(
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    format_name: str,
    format_version: int,
) -> Path:
    """Write a model directory atomically, replacing any model already at ``path``.

    Parameters
    ----------
    path : str or path-like
        Directory to write. Missing parent directories are created. An existing model
        directory (or empty directory) there is replaced; anything else is refused.
    metadata : dict
        JSON-serialisable description of the model (feature configuration, kernel
        widths, training-data summary and hash, metrics, ...). numpy scalars are
        converted to Python scalars and tuples to lists; NaN and infinities, non-string
        keys and arrays are refused.
    arrays : dict of str to numpy.ndarray
        Numeric arrays (bool, integer, float, complex, datetime or fixed-width string;
        any shape, including 0-d). Names may contain letters, digits, ``_``, ``.``
        and ``-``.
    format_name : str
        Name of the model format, checked again by :func:`load_model_dir`.
    format_version : int
        Version (>= 1) of that format.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ModelFormatError
        If the metadata or arrays cannot be stored faithfully and without pickle.
    FileExistsError
        If ``path`` exists and is not a model directory, an empty directory or missing.

    See Also
    --------
    load_model_dir : Read the model back.
    ModelStore : Numbered versions, safe for concurrent writers and readers.

    Notes
    -----
    The model is written into a fresh sibling directory ``.tmp-<name>-<token>`` (files
    and directory fsynced) and renamed into place, so the guarantee, on a local POSIX
    file system where ``rename`` is atomic, is:

    * At every instant ``path`` holds nothing, the complete previous model or the
      complete new model, never a partial or mixed one, with one exception: when a model
      already exists, it is first renamed aside to ``.old-<name>-<UTC stamp>-<token>`` and
      the new one is then renamed in. Between these two renames ``path`` does not exist.
    * If the process dies in that window, the previous model is intact in the aside copy.
      :func:`load_model_dir` then raises a :class:`ModelFormatError` naming that copy, and
      :func:`recover_model_dir` renames it back (the interrupted save is rolled back).
    * If the call raises, nothing changed: the previous model (if any) is at ``path``
      (it is renamed back if the second rename fails; should that also fail, the previous
      model is left in the aside copy and the exception says so). Temporaries are removed.
    * When the call returns, the new model is durable (files and directory entries
      fsynced) and the aside copy is deleted (a failure to delete it is only logged).
    * A process killed before the renames leaves only a ``.tmp-<name>-*`` directory, and
      one killed after them may leave the ``.old-<name>-*`` copy beside the new model.
      Neither is ever read while ``path`` exists; both can be deleted.

    Concurrent saves to the same ``path`` are not supported. A :func:`load_model_dir`
    racing a save retries, so it returns one whole model, old or new. Use
    :class:`ModelStore` when several processes write models.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from vrvm.storage import load_model_dir, save_model_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = save_model_dir(
    ...         Path(tmp) / "model",
    ...         metadata={"kernel_width": np.float64(0.5), "features": ["hour", "h3"]},
    ...         arrays={"weights": np.arange(3.0), "n_members": np.array(4)},
    ...         format_name="demo",
    ...         format_version=1,
    ...     )
    ...     metadata, arrays = load_model_dir(target, format_name="demo", max_format_version=1)
    >>> metadata
    {'kernel_width': 0.5, 'features': ['hour', 'h3']}
    >>> arrays["weights"], arrays["n_members"]
    (array([0., 1., 2.]), array(4))
    """
    path = Path(path)
    _check_format(format_name, format_version)
    if not isinstance(metadata, Mapping):
        raise ModelFormatError(
            f"cannot save {path}: metadata must be a dict, got {type(metadata).__name__}"
        )
    json_metadata = _to_json(metadata, "metadata", path)
    checked_arrays = _check_arrays(arrays, path)

    path.parent.mkdir(parents=True, exist_ok=True)
    _check_replaceable(path)
    tmp = _make_sibling_dir(path, _TMP_PREFIX)
    try:
        _write_npz(tmp / ARRAYS_FILE, checked_arrays)
        with open(tmp / ARRAYS_FILE, "rb") as f:
            arrays_sha256 = _sha256_of(f)
        manifest = {
            "format_name": format_name,
            "format_version": format_version,
            "vrvm_version": _vrvm_version(),
            "created_utc": _utc_now_iso(),
            "arrays_sha256": arrays_sha256,
            "arrays": {
                name: {"shape": list(array.shape), "dtype": array.dtype.str}
                for name, array in checked_arrays.items()
            },
            "metadata": json_metadata,
        }
        # The manifest is written last: a directory with model.json is a finished one.
        _write_json(tmp / MODEL_FILE, manifest)
        _fsync_dir(tmp)
        _move_into_place(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


@dataclass(frozen=True)
class ModelManifest:
    """The validated content of a model's ``model.json``.

    Attributes
    ----------
    path : pathlib.Path
        The model directory.
    format_name : str
        Format name recorded by the writer.
    format_version : int
        Format version recorded by the writer.
    vrvm_version : str
        Version of vrvm that wrote the model.
    created : datetime.datetime
        When the model was written (timezone-aware, UTC).
    arrays_sha256 : str
        Hex SHA-256 of ``arrays.npz``.
    arrays : dict of str to (tuple of int, str)
        Shape and dtype string (``numpy.dtype.str``) of each stored array.
    metadata : dict
        The caller's metadata.
    """

    path: Path
    format_name: str
    format_version: int
    vrvm_version: str
    created: datetime
    arrays_sha256: str
    arrays: dict[str, tuple[tuple[int, ...], str]]
    metadata: dict[str, Any]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _missing_model_error(path: Path) -> ModelFormatError:
    copies = _find_aside_copies(path)
    if copies:
        return ModelFormatError(
            f"model directory {path} does not exist, but a save to it was interrupted: the "
            f"previous model is intact at {copies[-1]}. Run "
            f"vrvm.storage.recover_model_dir({str(path)!r}) to restore it"
        )
    return ModelFormatError(f"model directory {path} does not exist")


def _read_manifest_bytes(path: Path) -> bytes:
    if not path.exists():
        raise _missing_model_error(path)
    if not path.is_dir():
        raise ModelFormatError(f"{path} is not a model directory (it is a file)")
    manifest_path = path / MODEL_FILE
    try:
        return manifest_path.read_bytes()
    except FileNotFoundError:
        raise ModelFormatError(
            f"{path} is not a model directory: {MODEL_FILE} is missing"
        ) from None
    except OSError as exc:
        raise ModelFormatError(f"cannot read {manifest_path}: {exc}") from exc


def _parse_manifest(
    path: Path, raw: bytes, format_name: str, max_format_version: int
) -> ModelManifest:
    manifest_path = path / MODEL_FILE
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except ValueError as exc:  # includes JSONDecodeError and UnicodeDecodeError
        raise ModelFormatError(
            f"{manifest_path} is not valid JSON ({exc}); the file is damaged or was not "
            "written by vrvm"
        ) from exc
    if not isinstance(document, dict):
        raise ModelFormatError(f"{manifest_path} does not hold a JSON object")

    def field(key: str, kind: type, description: str) -> Any:
        value = document.get(key)
        # bool is a subclass of int, but true/false is never a valid number here.
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ModelFormatError(
                f"{manifest_path}: field {key!r} is missing or not {description}"
            )
        return value

    stored_name = field("format_name", str, "a string")
    if stored_name != format_name:
        raise ModelFormatError(
            f"{path} holds a model of format {stored_name!r}, not {format_name!r}"
        )
    version = field("format_version", int, "an integer")
    vrvm_version = field("vrvm_version", str, "a string")
    if version < 1:
        raise ModelFormatError(f"{manifest_path}: invalid format version {version}")
    if version > max_format_version:
        raise ModelFormatError(
            f"{path} was written by vrvm {vrvm_version} with format version {version} of "
            f"{format_name!r}; this vrvm ({_vrvm_version()}) reads versions up to "
            f"{max_format_version}: upgrade vrvm"
        )
    try:
        created = datetime.fromisoformat(field("created_utc", str, "a string"))
    except ValueError as exc:
        raise ModelFormatError(f"{manifest_path}: invalid created_utc ({exc})") from exc
    sha = field("arrays_sha256", str, "a string")
    if not _SHA256_HEX.fullmatch(sha):
        raise ModelFormatError(f"{manifest_path}: arrays_sha256 is not a SHA-256 hex digest")

    specs: dict[str, tuple[tuple[int, ...], str]] = {}
    for name, spec in field("arrays", dict, "an object").items():
        where = f"{manifest_path}: array {name!r}"
        if not _ARRAY_NAME.fullmatch(name) or not isinstance(spec, dict):
            raise ModelFormatError(f"{where} has an invalid name or description")
        shape, dtype_str = spec.get("shape"), spec.get("dtype")
        if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
        ):
            raise ModelFormatError(f"{where}: shape must be a list of non-negative integers")
        try:
            dtype = np.dtype(dtype_str)
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"{where}: invalid dtype {dtype_str!r}") from exc
        reason = _unstorable_reason(dtype)
        if reason is not None:
            raise ModelFormatError(f"{where}: {reason}; refusing to load it")
        specs[name] = (tuple(shape), dtype.str)

    return ModelManifest(
        path=path,
        format_name=stored_name,
        format_version=version,
        vrvm_version=vrvm_version,
        created=created,
        arrays_sha256=sha,
        arrays=specs,
        metadata=field("metadata", dict, "an object"),
    )


def read_model_manifest(
    path: str | os.PathLike[str], *, format_name: str, max_format_version: int
) -> ModelManifest:
    """Read and validate a model's ``model.json`` without loading its arrays.

    Cheap enough for listings (a CLI ``info`` command, a dashboard's model picker).

    Parameters
    ----------
    path : str or path-like
        The model directory.
    format_name : str
        Expected format name.
    max_format_version : int
        Newest format version the caller can read.

    Returns
    -------
    ModelManifest

    Raises
    ------
    ModelFormatError
        As :func:`load_model_dir`, except for problems only visible in ``arrays.npz``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from vrvm.storage import read_model_manifest, save_model_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = save_model_dir(Path(tmp) / "m", metadata={}, arrays={"w": np.zeros((2, 3))},
    ...                             format_name="demo", format_version=2)
    ...     manifest = read_model_manifest(target, format_name="demo", max_format_version=2)
    >>> manifest.format_version, manifest.arrays
    (2, {'w': ((2, 3), '<f8')})
    """
    path = Path(path)
    _check_format(format_name, max_format_version)
    return _parse_manifest(path, _read_manifest_bytes(path), format_name, max_format_version)


def _read_arrays(path: Path, manifest: ModelManifest) -> dict[str, np.ndarray]:
    """Load ``arrays.npz`` after checking it against the manifest's checksum."""
    npz_path = path / ARRAYS_FILE
    try:
        f = open(npz_path, "rb")
    except FileNotFoundError:
        raise ModelFormatError(
            f"{npz_path} is missing: the model directory is incomplete"
        ) from None
    except OSError as exc:
        raise ModelFormatError(f"cannot open {npz_path}: {exc}") from exc
    with f:
        # Hash and parse the same open file, so the checked bytes are the loaded bytes.
        if _sha256_of(f) != manifest.arrays_sha256:
            raise ModelFormatError(
                f"{npz_path} does not match the checksum recorded in {path / MODEL_FILE}: "
                "the file is truncated, damaged or was modified"
            )
        f.seek(0)
        try:
            loaded = np.load(f, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise ModelFormatError(f"{npz_path} is not an .npz archive")
            with loaded:
                names = set(loaded.files)
                missing = sorted(set(manifest.arrays) - names)
                extra = sorted(names - set(manifest.arrays))
                if missing or extra:
                    raise ModelFormatError(
                        f"{npz_path} does not hold the arrays listed in its manifest "
                        f"(missing: {missing}, unexpected: {extra})"
                    )
                arrays = {name: loaded[name] for name in manifest.arrays}
        except ModelFormatError:
            raise
        except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
            # allow_pickle=False makes numpy raise ValueError for object arrays, so a
            # pickle payload ends up here instead of being executed.
            raise ModelFormatError(
                f"{npz_path} cannot be read as a pickle-free .npz archive "
                f"({type(exc).__name__}: {exc})"
            ) from exc

    for name, array in arrays.items():
        shape, dtype_str = manifest.arrays[name]
        reason = _unstorable_reason(array.dtype)
        if reason is not None:
            raise ModelFormatError(f"{npz_path}: array {name!r}: {reason}; refusing to load it")
        if array.shape != shape or array.dtype.str != dtype_str:
            raise ModelFormatError(
                f"{npz_path}: array {name!r} has shape {array.shape} and dtype "
                f"{array.dtype.str}, but the manifest says {shape} and {dtype_str}"
            )
    return arrays


def load_model_dir(
    path: str | os.PathLike[str], *, format_name: str, max_format_version: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a model directory written by :func:`save_model_dir`, verifying everything.

    Nothing is unpickled: the archive is read with ``allow_pickle=False`` and object or
    structured dtypes are refused, so a malicious model directory cannot run code.

    Parameters
    ----------
    path : str or path-like
        The model directory.
    format_name : str
        Expected format name; a model of another format is refused.
    max_format_version : int
        Newest format version the caller can read; newer models are refused with a
        message asking to upgrade vrvm.

    Returns
    -------
    metadata : dict
        The metadata given to :func:`save_model_dir` (as JSON types).
    arrays : dict of str to numpy.ndarray
        The arrays, with their saved shapes and dtypes.

    Raises
    ------
    ModelFormatError
        If the directory or one of its files is missing (naming the previous model's
        copy if a save was interrupted, see :func:`save_model_dir`), ``model.json`` is
        not valid JSON or not a vrvm manifest, the format name differs, the format
        version is newer than ``max_format_version``, ``arrays.npz`` does not match its
        checksum or cannot be read without pickle, or its arrays differ from the
        manifest. The message names the path.

    See Also
    --------
    read_model_manifest : Only the manifest, without the arrays.

    Notes
    -----
    If the model is replaced by a concurrent :func:`save_model_dir` while being read, the
    read is retried, so the metadata and arrays returned always belong to one model. If
    the directory is missing while a set-aside copy exists (a save between its two
    renames), the read is retried after a short pause before the interruption is reported.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from vrvm.storage import ModelFormatError, load_model_dir, save_model_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = save_model_dir(Path(tmp) / "m", metadata={"note": "v3 model"},
    ...                             arrays={"w": np.ones(2)}, format_name="demo",
    ...                             format_version=3)
    ...     try:
    ...         load_model_dir(target, format_name="demo", max_format_version=2)
    ...     except ModelFormatError as exc:
    ...         message = str(exc)
    >>> message.endswith("reads versions up to 2: upgrade vrvm")
    True
    """
    path = Path(path)
    _check_format(format_name, max_format_version)
    for attempt in range(_LOAD_ATTEMPTS):
        last_attempt = attempt == _LOAD_ATTEMPTS - 1
        try:
            raw = _read_manifest_bytes(path)
        except ModelFormatError:
            # Missing with a set-aside copy beside it: either a save is between its two
            # renames right now (microseconds) or one was interrupted. Wait briefly so
            # that only the second case is reported.
            if last_attempt or path.exists() or not _find_aside_copies(path):
                raise
            time.sleep(_LOAD_RETRY_DELAY)
            continue
        manifest = _parse_manifest(path, raw, format_name, max_format_version)
        try:
            return manifest.metadata, _read_arrays(path, manifest)
        except ModelFormatError:
            # A concurrent save may have swapped the directory between reading model.json
            # and arrays.npz; then the manifest changed too and a fresh read succeeds.
            try:
                replaced = (path / MODEL_FILE).read_bytes() != raw
            except OSError:
                replaced = True
            if not replaced or last_attempt:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


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
    >>> from vrvm.storage import ModelFormatError, recover_model_dir
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
    copies = _find_aside_copies(path)
    if not copies:
        raise ModelFormatError(
            f"model directory {path} does not exist and no interrupted save left a copy beside it"
        )
    os.rename(copies[-1], path)
    _fsync_dir(path.parent)
    logger.warning("restored %s from %s", path, copies[-1])
    return path


# -------------------------------------------------------------------------- the store
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
    >>> from vrvm.storage import ModelStore, load_model_dir, save_model_dir
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
            record = json.loads(record_path.read_text(encoding="utf-8"))
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
            document = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
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
        document = {"version": version, "activated_utc": _utc_now_iso()}
        tmp = self.root / f"{_TMP_PREFIX}{ACTIVE_FILE}-{secrets.token_hex(4)}"
        try:
            _write_json(tmp, document)
            os.replace(tmp, self.root / ACTIVE_FILE)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(self.root)

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
        info_json = _to_json({} if info is None else info, "info", self.root)
        if not isinstance(info_json, dict):
            raise ModelFormatError(f"cannot add to {self.root}: info must be a dict")
        self._versions_dir.mkdir(parents=True, exist_ok=True)
        version, reserved = self._reserve()
        staging = self._versions_dir / f"{_TMP_PREFIX}{reserved.name}-{secrets.token_hex(4)}"
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
                "created_utc": _utc_now_iso(),
                "vrvm_version": _vrvm_version(),
                "info": info_json,
            }
            _write_json(model_dir / VERSION_FILE, record)
            _fsync_dir(model_dir)
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
        _fsync_dir(self._versions_dir)
        shutil.rmtree(staging, ignore_errors=True)
        if activate:
            self.activate(version)
        return version
