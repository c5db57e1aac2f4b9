"""The shapes of the HTTP API's requests and answers (pydantic models, in the OpenAPI schema).

Every request body is validated against these models before any work: a wrong type, a
coordinate out of range, a quantile outside (0, 1) or an unknown field is answered
with status 422 and a list naming each field (``loc``) and its problem (``msg``).
Times are ISO 8601: with a UTC offset (``2016-05-03T08:00:00-05:00``) they are that
instant; without one they are wall-clock times in the model's time zone, which every
answer states (``time_zone``). A number (``1462262400``, ``"-1"``) is refused rather
than read as a Unix time, and so is a time outside the supported range of departures
(:mod:`vrvm.trips.files.time_range`: 1970-01-01 to 2100-01-01 UTC). Fields may be added to
the answers; none is removed.

Every answer is one of the models at the end of this module, validated when the handler
builds it: a field missing, unknown or of the wrong type, or a number that is not
finite, is answered 500 rather than sent (:mod:`vrvm.api.app`).
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
    with_config,
)
from typing_extensions import TypedDict  # extra_items (PEP 728); pydantic needs it < 3.12

from vrvm.trips.files.time_range import check_departure

__all__ = [
    "MAX_LEVELS",
    "ActiveModel",
    "BaseIn",
    "Cell",
    "CoverageMap",
    "CoverageRequest",
    "Departure",
    "Feature",
    "FeatureCollection",
    "Geometry",
    "Health",
    "IsochroneMap",
    "Label",
    "MatrixLong",
    "MatrixNested",
    "MatrixPair",
    "MatrixRequest",
    "MatrixResponse",
    "ModelRef",
    "ModelsResponse",
    "NotReady",
    "PointIn",
    "PredictRequest",
    "PredictResponse",
    "Problem",
    "ReachMap",
    "ReachOrigin",
    "Ready",
    "Support",
    "TripIn",
    "TripResult",
    "VersionRecord",
    "Zone",
    "ZoneCount",
    "ZonesResponse",
]

_STRICT = ConfigDict(extra="forbid")
MAX_LEVELS = 20
"""Most levels in one request: quantiles, thresholds ``within_s``, isochrone ``p``."""

_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
_ISO_EXAMPLE = "2016-05-03T08:15:00-04:00"


def _not_a_number(value: Any) -> Any:
    """Refuse numbers before pydantic reads them as Unix times (``"-1"`` is 1969)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(text, bool | int | float | Decimal) or (
        isinstance(text, str) and _NUMBER.fullmatch(text)
    ):
        raise ValueError(
            f"depart must be an ISO 8601 date-time such as {_ISO_EXAMPLE}, "
            "not a number (Unix times are not accepted)"
        )
    return value


def _in_range(value: datetime) -> datetime:
    check_departure(value, name="depart")
    return value


Departure = Annotated[datetime, BeforeValidator(_not_a_number), AfterValidator(_in_range)]
"""A departure time: an ISO 8601 date-time (never a number) in the supported range
(:data:`~vrvm.trips.files.time_range.EARLIEST_DEPARTURE` ..
:data:`~vrvm.trips.files.time_range.LATEST_DEPARTURE`; a time without offset judged as UTC)."""


class PointIn(BaseModel):
    """An origin or a destination: ``lat`` and ``lon`` in degrees, or a ``zone`` id."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"lat": 41.88, "lon": -87.63}, {"zone": "32"}]},
    )

    lat: float | None = Field(None, ge=-90, le=90, description="Latitude in degrees (WGS84).")
    lon: float | None = Field(None, ge=-180, le=180, description="Longitude in degrees.")
    zone: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="A zone id of the served model (GET /v1/zones): its point is used.",
    )
    name: str | None = Field(
        None, max_length=60, description="A name for the point, echoed in matrix answers."
    )

    @model_validator(mode="after")
    def _one_place(self) -> PointIn:
        has_coordinates = self.lat is not None and self.lon is not None
        if (self.lat is None) != (self.lon is None):
            raise ValueError("give both lat and lon")
        if has_coordinates == (self.zone is not None):
            raise ValueError("give either lat and lon, or zone")
        return self


class TripIn(BaseModel):
    """One trip: where from, where to, and when it leaves."""

    model_config = _STRICT

    origin: PointIn
    destination: PointIn
    depart: Departure | None = Field(
        None,
        description="Departure time (ISO 8601, 1970-01-01 to 2100-01-01; not a number). "
        "Without an offset: the model's time zone. Default: now.",
    )


_QUANTILES = Field(
    default_factory=list,
    max_length=MAX_LEVELS,
    description="Levels q in (0, 1) of the quantiles wanted (quantiles_s).",
)
_WITHIN = Field(
    default_factory=list,
    max_length=MAX_LEVELS,
    description="Times t in seconds of the probabilities P(T <= t) wanted (prob_within).",
)


class PredictRequest(BaseModel):
    """Trips to predict, and which summaries of each distribution to return."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "trips": [
                        {
                            "origin": {"lat": 41.88, "lon": -87.63},
                            "destination": {"lat": 41.97, "lon": -87.9},
                            "depart": "2016-05-03T08:00:00-05:00",
                        }
                    ],
                    "quantiles": [0.5, 0.9],
                    "within_s": [600],
                }
            ]
        },
    )

    trips: list[TripIn] = Field(..., min_length=1, description="The trips, answered in order.")
    quantiles: list[float] = _QUANTILES
    within_s: list[float] = _WITHIN
    indices: bool = Field(True, description="Return the reliability indices.")
    support: bool = Field(True, description="Return the training trips behind each answer.")

    @model_validator(mode="after")
    def _levels(self) -> PredictRequest:
        _check_levels(self.quantiles, self.within_s)
        return self


def _check_levels(quantiles: list[float], within_s: list[float]) -> None:
    for q in quantiles:
        if not 0 < q < 1:
            raise ValueError(f"quantiles must lie strictly between 0 and 1, got {q!r}")
    for t in within_s:
        if not 0 < t < 7 * 86400:
            raise ValueError(f"within_s must be seconds between 0 and one week, got {t!r}")


class MatrixRequest(BaseModel):
    """Every origin to every destination at one departure time."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "origins": [{"lat": 41.88, "lon": -87.63, "name": "Loop"}],
                    "destinations": [{"zone": "76"}, {"lat": 41.97, "lon": -87.9}],
                    "depart": "2016-05-03T08:00:00-05:00",
                    "quantiles": [0.9],
                    "within_s": [900],
                    "layout": "long",
                }
            ]
        },
    )

    origins: list[PointIn] = Field(..., min_length=1)
    destinations: list[PointIn] = Field(..., min_length=1)
    depart: Departure | None = Field(
        None, description="Departure time of every pair (as in trips' depart)."
    )
    quantiles: list[float] = _QUANTILES
    within_s: list[float] = _WITHIN
    indices: bool = Field(False, description="Also the reliability indices (about 4x the work).")
    support: bool = Field(False, description="Also the training trips behind each pair.")
    layout: str = Field(
        "long",
        pattern="^(long|nested)$",
        description="JSON layout: 'long' (one record per pair, origin by origin) or "
        "'nested' (per field, a list per origin of values per destination).",
    )

    @model_validator(mode="after")
    def _levels(self) -> MatrixRequest:
        _check_levels(self.quantiles, self.within_s)
        return self


class BaseIn(PointIn):
    """A base of a fleet: a point or a zone, with an optional name."""


class CoverageRequest(BaseModel):
    """Several bases: the probability that each zone is reached within the time."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "bases": [{"name": "Station 1", "lat": 41.88, "lon": -87.63}],
                    "depart": "2016-05-03T08:00:00-05:00",
                    "within_s": 480,
                }
            ]
        },
    )

    bases: list[BaseIn] = Field(..., min_length=1)
    depart: Departure | None = Field(None, description="Departure time (as in trips' depart).")
    within_s: float = Field(..., gt=0, lt=7 * 86400, description="The time T in seconds.")


# ---------------------------------------------------------------------------- answers
# Every handler returns one of these, so every answer is checked before it is sent: a
# missing or unknown field, a wrong type or a value that is not finite is the server's
# fault, answered 500 (never a malformed 200), and the error names no value of the answer
# (``hide_input_in_errors``: answers hold the request's places and times).

_ANSWER = ConfigDict(extra="forbid", allow_inf_nan=False, hide_input_in_errors=True)

Label = str | int
"""A matrix point's label: its name, else its zone id, else its position in the list
(an integer when no point of the list has a name or a zone, text otherwise)."""

Cell = float | int | bool | None
"""A matrix value: seconds or a probability (null when not finite), a trip count, or
the ``thin`` flag. Float first: most values are floats, and pydantic tries the members in
order (bool first took four times as long); an int or a bool still keeps its type."""


class Problem(BaseModel):
    """An error that is not about one field (401, 413, 500, 503); never echoes the request."""

    model_config = _ANSWER

    detail: str


class Health(BaseModel):
    """The process answers."""

    model_config = _ANSWER

    status: Literal["ok"]


class ModelRef(BaseModel):
    """Which model answered."""

    model_config = _ANSWER

    name: str
    version: int | None = Field(None, description="Store version; null for a model directory.")
    synthetic: bool = Field(description="Trained on the synthetic city (not real data).")
    time_zone: str


class Ready(BaseModel):
    """A model is loaded and answers."""

    model_config = _ANSWER

    status: Literal["ready"]
    model: ModelRef
    warning: str | None = Field(
        None,
        description="Why a newer version could not be loaded (the one named answers); "
        "absent when there is nothing to report.",
    )


class NotReady(BaseModel):
    """No model answers yet (status 503)."""

    model_config = _ANSWER

    status: Literal["not ready"]
    reason: str


class VersionRecord(BaseModel):
    """One version of the data home's model store."""

    model_config = _ANSWER

    version: int
    name: str
    active: bool = Field(description="The version that answers requests.")
    state: str = Field(description="The version's state in the store (e.g. active, ready).")
    created: str = Field(description="When it was published, ISO 8601 (UTC).")
    kind: str = Field(description="How it was made (demo, train, update, ...).")
    parent: int | None = Field(description="The version it was updated from.")
    trips: int | None = Field(description="Training trips.")
    members: int | None = Field(description="Ensemble members.")
    metrics: dict[str, float] = Field(
        description="Held-out scores when measured: crps_s, mae_s (seconds), coverage_90."
    )
    synthetic: bool
    data: str = Field(description="What it was trained on (file names, no folders).")


class ModelsResponse(BaseModel):
    """The model answering now and every version of the home's store (newest first)."""

    model_config = _ANSWER

    serving: ModelRef
    versions: list[VersionRecord] = Field(description="Empty when serving a model directory.")


class ZoneCount(BaseModel):
    """The served zones: their kind (hexagons or a planner's polygons) and how many."""

    model_config = _ANSWER

    kind: str
    count: int


class ActiveModel(ModelRef):
    """The model answering now, described."""

    trained_on: str = Field(description="Its training data in one line (no paths).")
    n_members: int
    relevance_vectors: int = Field(description="Relevance vectors over all members.")
    zones: ZoneCount


class Zone(BaseModel):
    """A zone of the served model: its id (for ``{"zone": ID}``), label and point."""

    model_config = _ANSWER

    zone: str
    label: str
    lat: float
    lon: float
    trip_ends: int = Field(description="Training trips starting or ending in the zone.")


class ZonesResponse(BaseModel):
    """The served model's zones."""

    model_config = _ANSWER

    model: ModelRef
    kind: str
    zones: list[Zone]


class Support(BaseModel):
    """Training trips behind an answer (from near the origin to near the destination)."""

    model_config = _ANSWER

    trips: int
    trips_at_time: int = Field(description="Those within an hour of the departure's time of day.")
    thin: bool = Field(description="Fewer than 5 trips: treat the answer with caution.")


class TripResult(BaseModel):
    """One trip's travel-time distribution, summarised (seconds)."""

    model_config = _ANSWER

    depart: str = Field(description="The departure used, ISO 8601 in the model's time zone.")
    mean_s: float
    median_s: float
    quantiles_s: dict[str, float] = Field(description="Quantile level -> seconds.")
    prob_within: dict[str, float] = Field(description="Seconds t -> P(T <= t).")
    origin_zone: str | None = None
    destination_zone: str | None = None
    free_flow_s: float | None = None
    p95_s: float | None = None
    planning_time_index: float | None = None
    buffer_index: float | None = None
    misery_index: float | None = None
    support: Support | None = None


class PredictResponse(BaseModel):
    """The answers, one per trip in the order asked."""

    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    results: list[TripResult]


# a dict rather than a model: a matrix has up to --max-pairs of them, and validating
# 10,000 dicts takes a fifth of the time of building 10,000 model objects (8 ms, 40 ms)
@with_config(ConfigDict(allow_inf_nan=False, hide_input_in_errors=True))
class MatrixPair(TypedDict, extra_items=Cell):
    """One origin-destination pair of a matrix (``layout: "long"``).

    Besides the fields below, the columns asked for: ``q<q>_s`` per quantile,
    ``p_within_<t>s`` per threshold, the index columns (``free_flow_s``, ``p95_s``,
    ``planning_time_index``, ``buffer_index``, ``misery_index``) and the support columns
    (``support_trips``, ``support_trips_at_time``, ``thin``).
    """

    origin: Label
    destination: Label
    mean_s: float | None
    median_s: float | None


class _MatrixHead(BaseModel):
    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    depart: str = Field(description="The departure of every pair, ISO 8601 in the model's zone.")
    n_origins: int
    n_destinations: int


class MatrixLong(_MatrixHead):
    """The matrix as one record per pair, origin by origin (destinations in the order given)."""

    layout: Literal["long"]
    pairs: list[MatrixPair]


class MatrixNested(_MatrixHead):
    """The matrix per field: a list per origin of the values per destination."""

    layout: Literal["nested"]
    origins: list[Label]
    destinations: list[Label]
    values: dict[str, list[list[Cell]]] = Field(
        description="Field (mean_s, median_s, q<q>_s, ...) -> origins x destinations."
    )


MatrixResponse = Annotated[MatrixLong | MatrixNested, Field(discriminator="layout")]
"""A matrix answered as JSON, in the layout asked for."""


class Geometry(BaseModel):
    """A GeoJSON geometry (RFC 7946), longitude before latitude, in degrees."""

    model_config = _ANSWER

    type: Literal["Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon"]
    coordinates: list = Field(description="Positions [lon, lat], nested as the type says.")


class Feature(BaseModel):
    """A GeoJSON feature: a zone, a region or a base, with what is known of it."""

    model_config = _ANSWER

    type: Literal["Feature"]
    properties: dict[str, Any]
    geometry: Geometry


class FeatureCollection(BaseModel):
    """A GeoJSON FeatureCollection."""

    model_config = _ANSWER

    type: Literal["FeatureCollection"]
    features: list[Feature]


class ReachOrigin(BaseModel):
    """The origin of a reach map: where its trips start."""

    model_config = _ANSWER

    lat: float
    lon: float
    label: str


class ReachMap(FeatureCollection):
    """The reach map: one polygon per zone with ``median_min``, ``lower80_min``,
    ``upper80_min``, ``p_within_<T>min``, ``support_trips``, ``support_trips_at_time`` and
    ``thin`` (and the zone's ``zone``, ``label``, ``lat``, ``lon``)."""

    origin: ReachOrigin
    departure: str = Field(description="ISO 8601 in the model's time zone.")
    threshold_min: float
    synthetic: bool
    model: ModelRef
    time_zone: str


class IsochroneMap(FeatureCollection):
    """Probability isochrones: one MultiPolygon per level p, in increasing p, with ``p``,
    ``definition``, ``n_zones``, ``zones`` (their ids) and ``area_km2``."""

    direction: Literal["from", "to"]
    departure: str = Field(description="ISO 8601 in the model's time zone.")
    within_s: float
    synthetic: bool
    model: ModelRef
    time_zone: str


class CoverageMap(FeatureCollection):
    """Fleet coverage: one polygon per zone with ``best_base``,
    ``p_best_base_within_<T>min``, ``p_any_base_within_<T>min`` and ``demand``."""

    bases: FeatureCollection = Field(
        description="The bases as points, with their share of demand and p_best_served."
    )
    departure: str = Field(description="ISO 8601 in the model's time zone.")
    threshold_min: float
    definitions: dict[str, str] = Field(description="Both probabilities, in words.")
    synthetic: bool
    model: ModelRef
    time_zone: str
