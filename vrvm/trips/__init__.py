"""Trip data and the travel-time model, in four packages and a data home.

- :mod:`vrvm.trips.places`: distances, H3 zones, zones fitted on trips, zone files,
  time zones.
- :mod:`vrvm.trips.files`: the read pipeline, from a file's bytes to the canonical trip
  table (:mod:`~vrvm.trips.table`), cleaned.
- :mod:`vrvm.trips.model`: :class:`TravelTimeModel` and the parts it owns.
- :mod:`vrvm.trips.store`: atomic writes and locks, model directories and stores, trip
  tables, the audit log.
- :mod:`vrvm.trips.home`: :class:`~vrvm.trips.home.Home`, a data home's stores opened
  together; the one thing services open.

Beside them: the synthetic city (:mod:`~vrvm.trips.synthetic`) and numbers read from the
environment (:mod:`~vrvm.trips.settings`). Imports :mod:`vrvm.engine` only.
"""

from vrvm.trips.files.cleaning import CLEANING_REASONS, CleaningConfig, CleaningReport, clean_trips
from vrvm.trips.files.formats import FormatMismatchError, TimeFormatError
from vrvm.trips.files.layouts import ROLES, SCHEMAS, UnknownLayoutError, detect_schema
from vrvm.trips.files.reader import (
    TripFileError,
    ZonesNeededError,
    propose_options,
    read_layout,
    read_trips,
)
from vrvm.trips.files.recipes import ReadOptions, RecipeBook
from vrvm.trips.home import Home
from vrvm.trips.model.features import TripFeaturizer, raw_distance_km
from vrvm.trips.model.split import split_holdout
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import EARTH_RADIUS_KM, LocalProjection, haversine_km
from vrvm.trips.places.timezones import ZoneUnknownError
from vrvm.trips.places.zone_files import ZoneFile, ZoneFileError
from vrvm.trips.places.zones import (
    choose_h3_resolution,
    latlng_to_zone,
    stratified_shards,
    zone_grid,
    zone_of,
    zones_geojson,
)
from vrvm.trips.store.errors import StorageError, StoreBusyError
from vrvm.trips.store.model_dir import (
    ModelFormatError,
    ModelManifest,
    load_model_dir,
    read_model_manifest,
    recover_model_dir,
    save_model_dir,
)
from vrvm.trips.store.model_store import ModelStore, StoreConflictError, VersionInfo
from vrvm.trips.store.trip_store import TripStore
from vrvm.trips.synthetic import synthetic_city, synthetic_city_geojson
from vrvm.trips.table import CANONICAL_COLUMNS, trip_ids, trips_sha256

__all__ = [
    "CANONICAL_COLUMNS",
    "CLEANING_REASONS",
    "EARTH_RADIUS_KM",
    "ROLES",
    "SCHEMAS",
    "CleaningConfig",
    "CleaningReport",
    "FormatMismatchError",
    "Home",
    "LocalProjection",
    "ModelFormatError",
    "ModelManifest",
    "ModelStore",
    "ReadOptions",
    "RecipeBook",
    "StorageError",
    "StoreBusyError",
    "StoreConflictError",
    "TimeFormatError",
    "TravelTimeModel",
    "TripFeaturizer",
    "TripFileError",
    "TripStore",
    "UnknownLayoutError",
    "VersionInfo",
    "ZoneFile",
    "ZoneFileError",
    "ZoneUnknownError",
    "ZonesNeededError",
    "choose_h3_resolution",
    "clean_trips",
    "detect_schema",
    "haversine_km",
    "latlng_to_zone",
    "load_model_dir",
    "propose_options",
    "raw_distance_km",
    "read_layout",
    "read_model_manifest",
    "read_trips",
    "recover_model_dir",
    "save_model_dir",
    "split_holdout",
    "stratified_shards",
    "synthetic_city",
    "synthetic_city_geojson",
    "trip_ids",
    "trips_sha256",
    "zone_grid",
    "zone_of",
    "zones_geojson",
]
