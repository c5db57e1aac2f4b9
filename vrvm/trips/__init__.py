"""Trip data and the travel-time model.

Reading trip files (:mod:`~vrvm.trips.reader`, :mod:`~vrvm.trips.layouts`,
:mod:`~vrvm.trips.formats`, :mod:`~vrvm.trips.parsing`, :mod:`~vrvm.trips.recipes`,
zone files in :mod:`~vrvm.trips.zone_files`) into the canonical table (:mod:`~vrvm.trips.table`),
cleaning it (:mod:`~vrvm.trips.cleaning`), geography (:mod:`~vrvm.trips.geo`), kernel
inputs (:mod:`~vrvm.trips.features`), H3 zones (:mod:`~vrvm.trips.zones`), the
synthetic city (:mod:`~vrvm.trips.synthetic`), hold-out splits
(:mod:`~vrvm.trips.split`), the ensemble model (:mod:`~vrvm.trips.model`) and where it
is kept: model directories, the model store, the trip store and the data home. Imports
:mod:`vrvm.engine` only.
"""

from vrvm.trips._errors import StorageError, StoreBusyError
from vrvm.trips.cleaning import CLEANING_REASONS, CleaningConfig, CleaningReport, clean_trips
from vrvm.trips.features import TripFeaturizer, raw_distance_km
from vrvm.trips.formats import FormatMismatchError, TimeFormatError
from vrvm.trips.geo import EARTH_RADIUS_KM, LocalProjection, haversine_km
from vrvm.trips.layouts import ROLES, SCHEMAS, UnknownLayoutError, detect_schema
from vrvm.trips.model import TravelTimeModel
from vrvm.trips.model_dir import (
    ModelFormatError,
    ModelManifest,
    load_model_dir,
    read_model_manifest,
    recover_model_dir,
    save_model_dir,
)
from vrvm.trips.model_store import ModelStore, StoreConflictError, VersionInfo
from vrvm.trips.reader import (
    TripFileError,
    ZonesNeededError,
    propose_options,
    read_layout,
    read_trips,
)
from vrvm.trips.recipes import ReadOptions, RecipeBook
from vrvm.trips.split import split_holdout
from vrvm.trips.synthetic import synthetic_city, synthetic_city_geojson
from vrvm.trips.table import CANONICAL_COLUMNS, trip_ids, trips_sha256
from vrvm.trips.timezones import ZoneUnknownError
from vrvm.trips.trip_store import TripStore
from vrvm.trips.zone_files import ZoneFile, ZoneFileError
from vrvm.trips.zones import (
    choose_h3_resolution,
    latlng_to_zone,
    stratified_shards,
    zone_grid,
    zone_of,
    zones_geojson,
)

__all__ = [
    "CANONICAL_COLUMNS",
    "CLEANING_REASONS",
    "EARTH_RADIUS_KM",
    "ROLES",
    "SCHEMAS",
    "CleaningConfig",
    "CleaningReport",
    "FormatMismatchError",
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
