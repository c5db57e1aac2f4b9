"""Model directories: atomic, pickle-free storage of one trained model.

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
Loading is bounded by what the files hold (issue 32): both files must be regular files
(a symbolic link, a FIFO or a device is refused without blocking), ``model.json`` is at
most :data:`MAX_MANIFEST_BYTES`, ``arrays.npz`` at most what its manifest's arrays need,
its members must be stored uncompressed (as :func:`save_model_dir` writes them: nothing
is ever decompressed), and every member's ``.npy`` header must give the manifest's shape
and dtype and exactly the member's size before any array is allocated. Every problem
with a stored model is reported as a :class:`ModelFormatError` whose message names the
offending path.

:func:`save_model_dir` writes a model so that nothing is ever half-written at its path
(see its Notes for the exact guarantee). Numbered versions of a model with an "active"
pointer are :class:`vrvm.trips.store.model_store.ModelStore`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import re
import shutil
import stat
import time
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from vrvm._version import __version__
from vrvm.trips.store._replace import (
    MODEL_FILE,
    find_aside_copies,
    make_sibling_dir,
    missing_model_error,
    move_into_place,
    recover_model_dir,
    remove_leftovers,
    restore_interrupted,
)
from vrvm.trips.store.durable import TMP_PREFIX, atomic_write, atomic_write_json
from vrvm.trips.store.errors import ModelFormatError

__all__ = [
    "MAX_MANIFEST_BYTES",
    "ModelFormatError",
    "ModelManifest",
    "load_model_dir",
    "read_model_manifest",
    "recover_model_dir",
    "save_model_dir",
]

logger = logging.getLogger(__name__)

ARRAYS_FILE = "arrays.npz"
# Array names become zip member names, so keep them to a portable, path-free alphabet.
_ARRAY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# Booleans, integers, floats, complex numbers, datetimes/timedeltas and fixed-width
# strings round-trip through .npy without pickle; object and void (structured) data cannot.
_STORABLE_KINDS = frozenset("biufcmMSU")
# How often load_model_dir re-reads a model that was replaced while it was being read.
_LOAD_ATTEMPTS = 3
_LOAD_RETRY_DELAY = 0.05  # seconds

MAX_MANIFEST_BYTES = 16 * 2**20
"""Largest ``model.json`` that is read (a model's manifest takes 10-100 KB)."""
# What an archive may hold beyond its arrays' data: per member, the .npy header (numpy
# reads at most 10,000 bytes of it by default) and the zip entries (name, zip64 fields);
# per archive, the end records.
_MEMBER_OVERHEAD_BYTES = 10_000 + 1_024
_ARCHIVE_OVERHEAD_BYTES = 1_024
_NPY_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def utc_now_iso() -> str:
    """Now, in UTC, as ISO 8601 text to the millisecond (the stores' timestamps)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------- validation
def to_json(value: Any, where: str, target: Path) -> Any:
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
            result[str(key)] = to_json(item, f"{where}[{key!r}]", target)
        return result
    if isinstance(value, (list, tuple)):
        return [to_json(item, f"{where}[{i}]", target) for i, item in enumerate(value)]
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
def _write_npz(file_path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write an uncompressed ``.npz`` archive readable by ``np.load``.

    Written member by member (as ``np.savez`` does internally) rather than through
    ``np.savez(file, **arrays)``, whose keyword arguments would clash with arrays named
    ``file`` or ``allow_pickle``.
    """
    with zipfile.ZipFile(
        file_path, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True
    ) as zf:
        for name, array in arrays.items():
            # A fixed timestamp so that saving the same arrays twice gives identical bytes.
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(member, mode="w", force_zip64=True) as out:
                np.lib.format.write_array(out, array, allow_pickle=False)


def _sha256_of(f) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _open_regular(file_path: Path, max_bytes: int) -> tuple[Any, int]:
    """Open a model's file for reading, refusing anything but a regular file of at most
    ``max_bytes``; the open binary file and its size.

    A model directory is untrusted: ``O_NOFOLLOW`` refuses a symbolic link (to
    ``/dev/zero``, say) and ``O_NONBLOCK`` makes opening a FIFO return at once rather
    than wait for a writer; the type and size are then read from the opened file
    (``fstat``), so nothing can be swapped in between the check and the read.
    FileNotFoundError is left to the caller, which knows what a missing file means.
    """
    if not hasattr(os, "O_NOFOLLOW") and file_path.is_symlink():  # Windows
        raise ModelFormatError(f"{file_path} is a symbolic link; refusing to follow it")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file_path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ModelFormatError(
                f"{file_path} is a symbolic link; a model's files must be regular files "
                "in its directory, refusing to follow it"
            ) from None
        raise ModelFormatError(f"cannot open {file_path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ModelFormatError(
                f"{file_path} is {_file_kind(info.st_mode)}, not a regular file; "
                "refusing to read it"
            )
        if info.st_size > max_bytes:
            raise ModelFormatError(
                f"{file_path} has {info.st_size:,} bytes, more than the {max_bytes:,} "
                "it may have; refusing to read it"
            )
        return os.fdopen(fd, "rb"), info.st_size
    except BaseException:
        os.close(fd)
        raise


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
    * If the process dies in that window, the previous model is intact in the aside copy,
      and the next :func:`load_model_dir` renames it back (the interrupted save is rolled
      back, with a logged warning); :func:`recover_model_dir` does the same on demand.
    * If the call raises, nothing changed: the previous model (if any) is at ``path``
      (it is renamed back if the second rename fails; should that also fail, the previous
      model is left in the aside copy and the exception says so). Temporaries are removed.
    * When the call returns, the new model is durable (files and directory entries
      fsynced) and the aside copy is deleted (a failure to delete it is only logged).
    * A process killed before the renames leaves only a ``.tmp-<name>-*`` directory, and
      one killed after them may leave the ``.old-<name>-*`` copy beside the new model.
      Neither is ever read while ``path`` exists; the next save to ``path`` removes them.

    Concurrent saves to the same ``path`` are not supported. A :func:`load_model_dir`
    racing a save retries, so it returns one whole model, old or new. Use
    :class:`ModelStore` when several processes write models.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from vrvm.trips.store.model_dir import load_model_dir, save_model_dir
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
    json_metadata = to_json(metadata, "metadata", path)
    checked_arrays = _check_arrays(arrays, path)

    path.parent.mkdir(parents=True, exist_ok=True)
    _check_replaceable(path)
    tmp = make_sibling_dir(path, TMP_PREFIX)
    try:
        atomic_write(tmp / ARRAYS_FILE, lambda file: _write_npz(file, checked_arrays))
        with open(tmp / ARRAYS_FILE, "rb") as f:
            arrays_sha256 = _sha256_of(f)
        manifest = {
            "format_name": format_name,
            "format_version": format_version,
            "vrvm_version": __version__,
            "created_utc": utc_now_iso(),
            "arrays_sha256": arrays_sha256,
            "arrays": {
                name: {"shape": list(array.shape), "dtype": array.dtype.str}
                for name, array in checked_arrays.items()
            },
            "metadata": json_metadata,
        }
        # The manifest is written last: a directory with model.json is a finished one.
        atomic_write_json(tmp / MODEL_FILE, manifest)
        move_into_place(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    remove_leftovers(path)
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


def loads_strict(raw: bytes) -> Any:
    """Decode UTF-8 JSON, refusing the non-standard NaN and Infinity (ValueError)."""
    return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)


def _read_manifest_bytes(path: Path) -> bytes:
    if not path.exists():
        raise missing_model_error(path)
    if not path.is_dir():
        raise ModelFormatError(f"{path} is not a model directory (it is a file)")
    manifest_path = path / MODEL_FILE
    try:
        f, _ = _open_regular(manifest_path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise ModelFormatError(
            f"{path} is not a model directory: {MODEL_FILE} is missing"
        ) from None
    with f:
        try:
            # one byte more than allowed: a file that grew since it was opened is refused too
            raw = f.read(MAX_MANIFEST_BYTES + 1)
        except OSError as exc:
            raise ModelFormatError(f"cannot read {manifest_path}: {exc}") from exc
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ModelFormatError(
            f"{manifest_path} has more than {MAX_MANIFEST_BYTES:,} bytes; refusing to read it"
        )
    return raw


def _parse_manifest(
    path: Path, raw: bytes, format_name: str, max_format_version: int
) -> ModelManifest:
    manifest_path = path / MODEL_FILE
    try:
        document = loads_strict(raw)
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
            f"{format_name!r}; this vrvm ({__version__}) reads versions up to "
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
    >>> from vrvm.trips.store.model_dir import read_model_manifest, save_model_dir
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


def _archive_limit(manifest: ModelManifest) -> int:
    """The most bytes ``arrays.npz`` may have: its arrays' data plus the archive's overhead.

    Raises if the arrays alone would not fit in this machine's memory (a manifest
    claiming 10^12 elements): then no archive could be loaded anyway.
    """
    data_bytes = sum(
        math.prod(shape) * np.dtype(dtype_str).itemsize
        for shape, dtype_str in manifest.arrays.values()
    )
    memory = _physical_memory_bytes()
    if memory is not None and data_bytes > memory:
        raise ModelFormatError(
            f"{manifest.path / MODEL_FILE} lists arrays of {data_bytes:,} bytes, more than "
            f"this machine's memory ({memory:,} bytes); refusing to load them"
        )
    return data_bytes + len(manifest.arrays) * _MEMBER_OVERHEAD_BYTES + _ARCHIVE_OVERHEAD_BYTES


def _physical_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX
        return None


def _archive_members(
    npz_path: Path, archive: zipfile.ZipFile, manifest: ModelManifest, size: int
) -> dict[str, zipfile.ZipInfo]:
    """The archive's member of each array in the manifest, each checked to be stored
    uncompressed and within the archive's ``size`` bytes."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        name = info.filename.removesuffix(".npy")
        if name in members:
            raise ModelFormatError(f"{npz_path} holds the member {info.filename!r} twice")
        members[name] = info
    missing = sorted(set(manifest.arrays) - set(members))
    extra = sorted(set(members) - set(manifest.arrays))
    if missing or extra:
        raise ModelFormatError(
            f"{npz_path} does not hold the arrays listed in its manifest "
            f"(missing: {missing}, unexpected: {extra})"
        )
    for name, info in members.items():
        where = f"{npz_path}: array {name!r}"
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            # vrvm stores arrays uncompressed: a compressed member (a few KB that may
            # expand to gigabytes) is never decompressed
            raise ModelFormatError(
                f"{where} is compressed or encrypted; vrvm writes model arrays "
                "uncompressed and refuses to decompress them"
            )
        if info.file_size != info.compress_size or info.header_offset + info.file_size > size:
            raise ModelFormatError(
                f"{where} claims {info.file_size:,} bytes, more than the archive's "
                f"{size:,} bytes hold"
            )
    return members


def _read_member(
    npz_path: Path,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    spec: tuple[tuple[int, ...], str],
) -> np.ndarray:
    """One array, read only once its ``.npy`` header matches the manifest and the size."""
    where = f"{npz_path}: array {name!r}"
    shape, dtype_str = spec
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _NPY_HEADER_READERS:
            raise ModelFormatError(f"{where} has .npy format version {version}, not 1.0 or 2.0")
        stored_shape, _, dtype = _NPY_HEADER_READERS[version](member)
        reason = _unstorable_reason(dtype)
        if reason is not None:
            raise ModelFormatError(f"{where}: {reason}; refusing to load it")
        if stored_shape != shape or dtype.str != dtype_str:
            raise ModelFormatError(
                f"{where} has shape {stored_shape} and dtype {dtype.str}, but the manifest "
                f"says {shape} and {dtype_str}"
            )
        data_bytes = info.file_size - member.tell()
        if data_bytes != math.prod(shape) * dtype.itemsize:
            raise ModelFormatError(
                f"{where} holds {data_bytes:,} bytes of data, but {shape} values of dtype "
                f"{dtype_str} take {math.prod(shape) * dtype.itemsize:,}"
            )
        member.seek(0)
        return np.lib.format.read_array(member, allow_pickle=False)


def _read_arrays(path: Path, manifest: ModelManifest) -> dict[str, np.ndarray]:
    """Load ``arrays.npz`` after checking it against the manifest (checksum, members,
    shapes, dtypes and sizes), allocating nothing the file does not hold."""
    npz_path = path / ARRAYS_FILE
    try:
        f, size = _open_regular(npz_path, _archive_limit(manifest))
    except FileNotFoundError:
        raise ModelFormatError(
            f"{npz_path} is missing: the model directory is incomplete"
        ) from None
    with f:
        # Hash and parse the same open file, so the checked bytes are the loaded bytes.
        if _sha256_of(f) != manifest.arrays_sha256:
            raise ModelFormatError(
                f"{npz_path} does not match the checksum recorded in {path / MODEL_FILE}: "
                "the file is truncated, damaged or was modified"
            )
        f.seek(0)
        try:
            try:
                archive = zipfile.ZipFile(f)
            except zipfile.BadZipFile as exc:
                raise ModelFormatError(
                    f"{npz_path} cannot be read: it is not an .npz archive ({exc})"
                ) from exc
            with archive:
                members = _archive_members(npz_path, archive, manifest, size)
                return {
                    name: _read_member(npz_path, archive, members[name], name, spec)
                    for name, spec in manifest.arrays.items()
                }
        except ModelFormatError:
            raise
        except (
            ValueError,
            OSError,
            EOFError,
            KeyError,
            zipfile.BadZipFile,
            zlib.error,
        ) as exc:
            # allow_pickle=False makes numpy raise ValueError for object arrays, so a
            # pickle payload ends up here instead of being executed.
            raise ModelFormatError(
                f"{npz_path} cannot be read as a pickle-free .npz archive "
                f"({type(exc).__name__}: {exc})"
            ) from exc


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
        manifest; or if either file is not a regular file (a symbolic link, a FIFO, a
        device), is larger than it may be, or ``arrays.npz`` holds compressed members or
        headers claiming more than its bytes (see the module's docstring). The message
        names the path.

    See Also
    --------
    read_model_manifest : Only the manifest, without the arrays.

    Notes
    -----
    If the model is replaced by a concurrent :func:`save_model_dir` while being read, the
    read is retried, so the metadata and arrays returned always belong to one model. If
    the directory is missing while a set-aside copy exists (a save between its two
    renames), the read is retried after short pauses; still missing, the save was
    interrupted and the previous model is renamed back (a logged warning), then read.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from vrvm.trips.store.model_dir import ModelFormatError, load_model_dir, save_model_dir
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
            # renames right now (microseconds) or one was interrupted. Wait briefly;
            # still missing after the pauses, the save's process died: roll it back.
            if path.exists() or not find_aside_copies(path):
                raise
            if not last_attempt:
                time.sleep(_LOAD_RETRY_DELAY)
                continue
            restore_interrupted(path)
            raw = _read_manifest_bytes(path)
        manifest = _parse_manifest(path, raw, format_name, max_format_version)
        try:
            return manifest.metadata, _read_arrays(path, manifest)
        except ModelFormatError:
            # A concurrent save may have swapped the directory between reading model.json
            # and arrays.npz; then the manifest changed too and a fresh read succeeds.
            try:
                replaced = _read_manifest_bytes(path) != raw
            except ModelFormatError:
                replaced = True
            if not replaced or last_attempt:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
