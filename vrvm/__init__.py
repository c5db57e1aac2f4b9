"""vrvm: probabilistic travel-time prediction with variational relevance vector machines."""

from vrvm.blr import BayesianLinearRegression, NormalGammaPosterior
from vrvm.datasets import synthetic_city, synthetic_city_geojson
from vrvm.distributions import Normal, StudentT
from vrvm.features import LocalProjection, TripFeaturizer, haversine_km, raw_distance_km
from vrvm.metrics import evaluate_distribution
from vrvm.mixture import MixtureDistribution
from vrvm.model import TravelTimeModel, trips_sha256
from vrvm.regressor import VRVMRegressor
from vrvm.storage import (
    ModelFormatError,
    ModelManifest,
    ModelStore,
    VersionInfo,
    load_model_dir,
    read_model_manifest,
    recover_model_dir,
    save_model_dir,
)
from vrvm.trips import (
    CANONICAL_COLUMNS,
    CleaningConfig,
    CleaningReport,
    clean_trips,
    detect_schema,
    read_trips,
)
from vrvm.zones import (
    choose_h3_resolution,
    latlng_to_zone,
    stratified_shards,
    zone_grid,
    zone_of,
    zones_geojson,
)

__version__ = "0.1.0"

__all__ = [
    "CANONICAL_COLUMNS",
    "BayesianLinearRegression",
    "CleaningConfig",
    "CleaningReport",
    "LocalProjection",
    "MixtureDistribution",
    "ModelFormatError",
    "ModelManifest",
    "ModelStore",
    "Normal",
    "NormalGammaPosterior",
    "StudentT",
    "TravelTimeModel",
    "TripFeaturizer",
    "VRVMRegressor",
    "VersionInfo",
    "__version__",
    "choose_h3_resolution",
    "clean_trips",
    "detect_schema",
    "evaluate_distribution",
    "haversine_km",
    "latlng_to_zone",
    "load_model_dir",
    "raw_distance_km",
    "read_model_manifest",
    "read_trips",
    "recover_model_dir",
    "save_model_dir",
    "stratified_shards",
    "synthetic_city",
    "synthetic_city_geojson",
    "trips_sha256",
    "zone_grid",
    "zone_of",
    "zones_geojson",
]
