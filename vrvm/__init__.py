"""vrvm: probabilistic travel-time prediction with variational relevance vector machines.

Layers, each importing only those below it: :mod:`vrvm.engine` (the numerical library),
:mod:`vrvm.trips` (trip data, the travel-time model and its stores), :mod:`vrvm.services`
(what the dashboard, the CLI and an HTTP API show) and :mod:`vrvm.cli`. The names below
are the public API; the notebook functions (:data:`NOTEBOOK_FUNCTIONS`: answers as
DataFrames and GeoDataFrames, :mod:`vrvm.services.notebook`) are loaded on first use, so
that ``import vrvm`` does not load the services.
"""

from vrvm._version import __version__
from vrvm.engine import (
    BayesianLinearRegression,
    MixtureDistribution,
    Normal,
    NormalGammaPosterior,
    PitMap,
    RecalibratedMixture,
    StudentT,
    VRVMRegressor,
    evaluate_distribution,
)
from vrvm.trips import (
    CANONICAL_COLUMNS,
    CleaningConfig,
    CleaningReport,
    FormatMismatchError,
    Home,
    LocalProjection,
    ModelFormatError,
    ModelManifest,
    ModelStore,
    ReadOptions,
    StorageError,
    StoreBusyError,
    StoreConflictError,
    TimeFormatError,
    TravelTimeModel,
    TripFeaturizer,
    TripFileError,
    TripStore,
    UnknownLayoutError,
    VersionInfo,
    ZoneFile,
    ZoneFileError,
    ZonesNeededError,
    ZoneUnknownError,
    choose_h3_resolution,
    clean_trips,
    detect_schema,
    haversine_km,
    latlng_to_zone,
    load_model_dir,
    propose_options,
    raw_distance_km,
    read_layout,
    read_model_manifest,
    read_trips,
    recover_model_dir,
    save_model_dir,
    split_holdout,
    stratified_shards,
    synthetic_city,
    synthetic_city_geojson,
    trip_ids,
    trips_sha256,
    zone_grid,
    zone_of,
    zones_geojson,
)

__all__ = [
    "CANONICAL_COLUMNS",
    "ArriveByPlan",
    "BayesianLinearRegression",
    "CleaningConfig",
    "CleaningReport",
    "FormatMismatchError",
    "Home",
    "LocalProjection",
    "MixtureDistribution",
    "ModelFormatError",
    "ModelManifest",
    "ModelStore",
    "Normal",
    "NormalGammaPosterior",
    "PitMap",
    "ReadOptions",
    "RecalibratedMixture",
    "StorageError",
    "StoreBusyError",
    "StoreConflictError",
    "StudentT",
    "TimeFormatError",
    "TravelTimeModel",
    "TripFeaturizer",
    "TripFileError",
    "TripStore",
    "UnknownLayoutError",
    "VRVMRegressor",
    "VersionInfo",
    "ZoneFile",
    "ZoneFileError",
    "ZoneUnknownError",
    "ZonesNeededError",
    "__version__",
    "arrive_by",
    "choose_h3_resolution",
    "clean_trips",
    "coverage_matrix",
    "detect_schema",
    "evaluate_distribution",
    "haversine_km",
    "isochrones",
    "latlng_to_zone",
    "load_model_dir",
    "propose_options",
    "raw_distance_km",
    "reach",
    "read_layout",
    "read_model_manifest",
    "read_trips",
    "recover_model_dir",
    "save_model_dir",
    "split_holdout",
    "stratified_shards",
    "synthetic_city",
    "synthetic_city_geojson",
    "travel_time_matrix",
    "trip_ids",
    "trips_sha256",
    "zone_grid",
    "zone_of",
    "zones_geojson",
]

NOTEBOOK_FUNCTIONS = (
    "ArriveByPlan",
    "arrive_by",
    "coverage_matrix",
    "isochrones",
    "reach",
    "travel_time_matrix",
)
"""The names :mod:`vrvm.services.notebook` gives the package (PEP 562 lazy attributes)."""


def __getattr__(name: str):
    if name in NOTEBOOK_FUNCTIONS:
        from vrvm.services import notebook

        value = getattr(notebook, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'vrvm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(NOTEBOOK_FUNCTIONS))
