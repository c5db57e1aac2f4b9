"""Where things are kept: atomic writes and locks, model directories and stores, trip tables.

:mod:`~vrvm.trips.store.durable` (the one atomic write, the lock with a timeout, the
removal of dead writers' temporaries), :mod:`~vrvm.trips.store.errors` (what cannot be
written and why), :mod:`~vrvm.trips.store.model_dir` (a pickle-free model directory,
replaced in place with a rollback after a crash), :mod:`~vrvm.trips.store.model_store`
(numbered, immutable versions and the active pointer), :mod:`~vrvm.trips.store.trip_store`
(the append-only Parquet store of trips), :mod:`~vrvm.trips.store.trip_table` (kept
trips read a row group at a time), :mod:`~vrvm.trips.store.zone_index` (trips sorted by
origin zone) and :mod:`~vrvm.trips.store.audit` (the append-only record of who changed
what). Knows nothing of the model but its saved files; :class:`vrvm.trips.home.Home`
opens these stores for a data home.
"""

from vrvm.trips.store.audit import AuditLog
from vrvm.trips.store.errors import ModelFormatError, StorageError, StoreBusyError
from vrvm.trips.store.model_dir import (
    ModelManifest,
    load_model_dir,
    read_model_manifest,
    recover_model_dir,
    save_model_dir,
)
from vrvm.trips.store.model_store import ModelStore, StoreConflictError, VersionInfo
from vrvm.trips.store.trip_store import TripStore
from vrvm.trips.store.trip_table import TripTable

__all__ = [
    "AuditLog",
    "ModelFormatError",
    "ModelManifest",
    "ModelStore",
    "StorageError",
    "StoreBusyError",
    "StoreConflictError",
    "TripStore",
    "TripTable",
    "VersionInfo",
    "load_model_dir",
    "read_model_manifest",
    "recover_model_dir",
    "save_model_dir",
]
