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
from typing import Annotated, Any, Literal, NotRequired

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

from vrvm.services.planning.data_gaps import MAX_DESTINATIONS
from vrvm.services.planning.stops import MAX_DWELL_MIN, MAX_STOPS
from vrvm.trips.files.time_range import check_departure

__all__ = [
    "MAX_GAP_DEPARTURES",
    "MAX_LEVELS",
    "MAX_SITE_DEPARTURES",
    "MAX_SITE_SOLVE_S",
    "ActiveModel",
    "BaseIn",
    "Cell",
    "CompareModel",
    "ComparePair",
    "CompareReachMap",
    "CompareRequest",
    "CompareResponse",
    "CompareSummary",
    "CoverageMap",
    "CoverageRequest",
    "DemandIn",
    "Departure",
    "DwellIn",
    "Feature",
    "FeatureCollection",
    "GapZone",
    "GapsRequest",
    "GapsResponse",
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
    "SiteAssignment",
    "SiteOut",
    "SiteRequest",
    "SiteResponse",
    "StopIn",
    "StopsDwell",
    "StopsLeg",
    "StopsQuantile",
    "StopsRequest",
    "StopsResponse",
    "StopsStop",
    "StopsTotal",
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


class CompareRequest(BaseModel):
    """What changed between two versions of the home's model: every origin to every
    destination under both (``vrvm compare`` over HTTP)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "version_a": 1,
                    "origins": [{"lat": 41.88, "lon": -87.63, "name": "Loop"}],
                    "destinations": [{"zone": "41"}, {"lat": 41.97, "lon": -87.9}],
                    "depart": "2016-05-03T08:00:00-05:00",
                    "within_s": 1200,
                }
            ]
        },
    )

    version_a: int = Field(
        ..., ge=1, description="A committed version of the home's model store (GET /v1/models)."
    )
    version_b: int | None = Field(
        None, ge=1, description="The other version; default: the one that answers now."
    )
    origins: list[PointIn] = Field(..., min_length=1)
    destinations: list[PointIn] = Field(..., min_length=1)
    depart: Departure | None = Field(
        None, description="Departure time of every pair (as in trips' depart)."
    )
    within_s: float | None = Field(
        None,
        gt=0,
        lt=7 * 86400,
        description="A time t in seconds: also P(T <= t) under each version and its change.",
    )


MAX_GAP_DEPARTURES = 24
"""Most departure times one ``POST /v1/gaps`` averages over."""


class GapsRequest(BaseModel):
    """Where data is missing: each zone's split of the predictive spread into the model's
    own uncertainty and trip-to-trip variation (``vrvm gaps`` over HTTP)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"departures": ["2016-05-03T08:00:00", "2016-05-03T17:30:00"]},
                {"departures": ["2016-05-03T08:00:00"], "origin": {"lat": 41.88, "lon": -87.63}},
            ]
        },
    )

    departures: list[Departure] = Field(
        ...,
        min_length=1,
        max_length=MAX_GAP_DEPARTURES,
        description="The departures the parts are averaged over (as in trips' depart).",
    )
    origin: PointIn | None = Field(
        None,
        description="Null: every zone's trips (to and from the representative destinations); "
        "else the trips from this place to every zone.",
    )
    max_destinations: int = Field(
        MAX_DESTINATIONS,
        ge=1,
        description="Representative destinations: every zone when there are at most this "
        "many, else this many zones with the most demand.",
    )
    demand: list[Annotated[float, Field(ge=0)]] | None = Field(
        None,
        description="One non-negative weight per zone, in the order of GET /v1/zones; "
        "default: the training trips starting in each zone.",
    )


class DwellIn(BaseModel):
    """Time spent at a stop before the next leg leaves: fixed minutes, a log-normal by
    its median and 90th percentile, or observed dwells (minutes, equally likely)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"minutes": 10}, {"median_min": 10, "p90_min": 18}]},
    )

    minutes: float | None = Field(None, ge=0, le=MAX_DWELL_MIN, description="A fixed dwell.")
    median_min: float | None = Field(
        None, gt=0, le=MAX_DWELL_MIN, description="Log-normal: the median."
    )
    p90_min: float | None = Field(
        None, gt=0, le=MAX_DWELL_MIN, description="Log-normal: the 90th percentile."
    )
    sample_min: list[Annotated[float, Field(ge=0, le=MAX_DWELL_MIN)]] | None = Field(
        None, min_length=1, max_length=10_000, description="Observed dwells, equally likely."
    )

    @model_validator(mode="after")
    def _one_form(self) -> DwellIn:
        forms = [
            self.minutes is not None,
            self.median_min is not None or self.p90_min is not None,
            self.sample_min is not None,
        ]
        if sum(forms) != 1:
            raise ValueError("give minutes, or median_min with p90_min, or sample_min")
        if forms[1] and (self.median_min is None or self.p90_min is None):
            raise ValueError("a log-normal dwell needs both median_min and p90_min")
        return self


class StopIn(PointIn):
    """A stop: a point or a zone, an optional name, and the dwell there (none at the first
    and the last stop)."""

    dwell: DwellIn | None = Field(None, description="The dwell before the next leg leaves.")


class StopsRequest(BaseModel):
    """A trip through ordered stops, each leg leaving when the previous one arrives
    (``vrvm stops`` over HTTP)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "stops": [
                        {"name": "base", "lat": 41.8786, "lon": -87.6482},
                        {
                            "name": "scene",
                            "lat": 41.9231,
                            "lon": -87.7093,
                            "dwell": {"minutes": 10},
                        },
                        {"name": "hospital", "lat": 41.8745, "lon": -87.6766},
                    ],
                    "depart": "2016-05-03T07:45:00-05:00",
                    "within_s": 2700,
                }
            ]
        },
    )

    stops: list[StopIn] = Field(
        ..., min_length=2, max_length=MAX_STOPS, description="The stops in order."
    )
    depart: Departure | None = Field(
        None, description="Departure from the first stop (as in trips' depart); default now."
    )
    within_s: float | None = Field(
        None, gt=0, lt=7 * 86400, description="A time T in seconds: also P(total <= T)."
    )
    level: float = Field(0.9, gt=0, lt=1, description="Level of the central intervals.")
    quantiles: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        default_factory=list,
        max_length=99,
        description="Levels of the quantile table (the total and each leg); default none, "
        "which keeps the answer fast (0.01, 0.02, ..., 0.99 adds about 2 s).",
    )


MAX_SITE_DEPARTURES = 24
"""Most departure times one ``POST /v1/site`` averages over."""
MAX_SITE_SOLVE_S = 120.0
"""Longest a ``POST /v1/site`` solve may run (``time_limit_s``); the default is half."""


class DemandIn(PointIn):
    """A demand point: a point or a zone, an optional name, and its weight."""

    weight: float = Field(1.0, ge=0, description="The demand there (a count, a rate...).")


class SiteRequest(BaseModel):
    """Where k bases should stand, or the fewest bases reaching enough demand
    (``vrvm site`` over HTTP)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "bases": 3,
                    "within_s": 480,
                    "departures": ["2016-05-03T08:00:00-05:00"],
                },
                {
                    "candidates": [{"zone": "32"}, {"name": "depot", "lat": 41.88, "lon": -87.63}],
                    "demand": [{"zone": "41", "weight": 12}, {"zone": "76", "weight": 3}],
                    "fixed": [{"zone": "32"}],
                    "min_probability": 0.8,
                    "share": 0.9,
                    "within_s": 600,
                    "departures": ["2016-05-03T08:00:00", "2016-05-03T17:30:00"],
                },
            ]
        },
    )

    candidates: list[PointIn] | None = Field(
        None,
        min_length=1,
        description="Candidate sites (id: the name, else the zone id, else the position); "
        "default: every zone of the served model.",
    )
    demand: list[DemandIn] | None = Field(
        None,
        min_length=1,
        description="Demand points with weights; default: every zone, weighted by the "
        "training trips starting there.",
    )
    fixed: list[PointIn] = Field(
        default_factory=list,
        description="Existing bases kept open (counted in ``bases``): a candidate when its "
        "id and point are a candidate's, else an extra site.",
    )
    within_s: float = Field(..., gt=0, lt=7 * 86400, description="The time T in seconds.")
    departures: list[Departure] = Field(
        ...,
        min_length=1,
        max_length=MAX_SITE_DEPARTURES,
        description="Departures the probabilities are averaged over (as in trips' depart).",
    )
    bases: int | None = Field(
        None, ge=1, description="k: the number of bases, fixed ones included."
    )
    min_probability: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Instead of ``bases``: the fewest bases reaching demand within T with at "
        "least this probability.",
    )
    share: float | None = Field(
        None, gt=0, le=1, description="With ``min_probability``: the share of demand (1)."
    )
    time_limit_s: float = Field(
        MAX_SITE_SOLVE_S / 2,
        gt=0,
        le=MAX_SITE_SOLVE_S,
        description="Stop the solver after this long: the best set found, with a bound.",
    )
    assignments: bool = Field(
        False, description="Also each demand point's best site and its probability."
    )

    @model_validator(mode="after")
    def _one_question(self) -> SiteRequest:
        if (self.bases is None) == (self.min_probability is None):
            raise ValueError("give either bases (k) or min_probability (the fewest bases)")
        if self.share is not None and self.min_probability is None:
            raise ValueError("share goes with min_probability")
        return self


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
    thin: bool = Field(
        description="Fewer than 5 trips, or fewer than 5 of all the training trips on the "
        "departure's kind of day (weekday or weekend): treat the answer with caution."
    )


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
    day_kind_trips: int | None = Field(
        None,
        description="How many of the model's training trips departed on the departure's "
        "kind of day (weekday or weekend), from the model's own record, whether or not "
        "its trips are kept: under 5, the model answers with what it learned on the "
        "other kind (a model of weekdays asked about a Saturday). Null for a model saved "
        "before it recorded them.",
    )


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


def _day_kind_field(answered: str, more: str = ""):
    """The ``day_kind_trips`` field of an answer at one departure, each ``answered`` (a
    pair, a zone) from the same record."""
    return Field(
        None,
        description="How many of the model's training trips departed on the departure's "
        f"kind of day (weekday or weekend), from the model's own record: under 5, every "
        f"{answered} is answered with what it learned on the other kind. Null for a model "
        "saved before it recorded them." + more,
    )


class _MatrixHead(BaseModel):
    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    depart: str = Field(description="The departure of every pair, ISO 8601 in the model's zone.")
    n_origins: int
    n_destinations: int
    day_kind_trips: int | None = _day_kind_field(
        "pair", " CSV and Parquet answers carry it as the header X-Day-Kind-Trips."
    )


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
    day_kind_trips: int | None = _day_kind_field("zone")


class IsochroneMap(FeatureCollection):
    """Probability isochrones: one MultiPolygon per level p, in increasing p, with ``p``,
    ``definition``, ``n_zones``, ``zones`` (their ids) and ``area_km2``."""

    direction: Literal["from", "to"]
    departure: str = Field(description="ISO 8601 in the model's time zone.")
    within_s: float
    synthetic: bool
    model: ModelRef
    time_zone: str
    day_kind_trips: int | None = _day_kind_field("zone")


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
    day_kind_trips: int | None = _day_kind_field("zone")


class CompareModel(BaseModel):
    """One side of a comparison: a version of the home's model store."""

    model_config = _ANSWER

    version: int
    name: str


class CompareSummary(BaseModel):
    """What changed, in a few numbers."""

    model_config = _ANSWER

    n_pairs: int
    confident: float = Field(description="Slower: P(slower) above it; faster: below 1 - it.")
    n_slower: int
    share_slower: float
    n_faster: int
    share_faster: float
    median_change_s: float | None = Field(
        description="The median over the pairs of the change of the median (B - A), seconds."
    )
    n_within_uncertainty: int = Field(
        description="Pairs whose change of the median is within the models' own uncertainty."
    )
    share_within_uncertainty: float


@with_config(ConfigDict(allow_inf_nan=False, hide_input_in_errors=True))
class ComparePair(TypedDict):
    """One origin-destination pair under both versions (seconds; B - A for changes).

    ``p_within_a``, ``p_within_b`` and ``p_within_change`` only with ``within_s``.
    """

    origin: Label
    destination: Label
    median_a_s: float | None
    median_b_s: float | None
    p_slower: float | None
    lower90_a_s: float | None
    upper90_a_s: float | None
    lower90_b_s: float | None
    upper90_b_s: float | None
    median_change_s: float | None
    median_change_lower90_s: float | None
    median_change_upper90_s: float | None
    within_uncertainty: bool
    diff_lower90_s: float | None
    diff_upper90_s: float | None
    p_within_a: NotRequired[float | None]
    p_within_b: NotRequired[float | None]
    p_within_change: NotRequired[float | None]


class CompareResponse(BaseModel):
    """Every pair under versions A and B, origin by origin, and the summary."""

    model_config = _ANSWER

    model_a: CompareModel
    model_b: CompareModel
    time_zone: str
    depart: str = Field(description="The departure of every pair, ISO 8601 in the models' zone.")
    within_s: float | None
    independence: str = Field(description="What P(slower) assumes, in words.")
    summary: CompareSummary
    pairs: list[ComparePair]


class CompareReachMap(FeatureCollection):
    """What changed from a base: one polygon per zone with ``zone``, ``label``, ``lat``,
    ``lon`` and the fields of :class:`ComparePair` (but ``origin`` and ``destination``)."""

    origin: ReachOrigin
    departure: str = Field(description="ISO 8601 in the models' time zone.")
    within_s: float | None
    model_a: CompareModel
    model_b: CompareModel
    independence: str
    summary: CompareSummary
    synthetic: bool
    time_zone: str


class GapZone(BaseModel):
    """One zone's split of the predictive spread (on the ``scale`` of the answer).

    The standard deviations end in ``_log`` for a model of log-seconds, ``_s`` for one of
    seconds; the support fields are there when the training trips were kept
    (``support_trips_at_time`` only from an origin). Figures that cannot be computed
    (the origin's own zone) are null.
    """

    model_config = _ANSWER

    zone: str
    number: int
    label: str
    name: str | None = Field(None, description="The planner's name of a polygon zone.")
    lat: float
    lon: float
    epistemic_share: float | None = Field(
        description="The model's own share of the predictive variance."
    )
    epistemic_sd_log: float | None = None
    noise_sd_log: float | None = None
    total_sd_log: float | None = None
    between_sd_log: float | None = None
    weights_sd_log: float | None = None
    epistemic_sd_s: float | None = None
    noise_sd_s: float | None = None
    total_sd_s: float | None = None
    between_sd_s: float | None = None
    weights_sd_s: float | None = None
    demand_weight: float
    sharpening: float | None = Field(
        description="The share of the demand-weighted variance more trips here would remove."
    )
    rank: int = Field(description="1: where more trips would sharpen the answers most.")
    support_trips: int | None = None
    support_trips_at_time: int | None = None
    thin: bool | None = None


class GapsResponse(BaseModel):
    """Where more trips would sharpen the answers: every zone, ranked."""

    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    scale: str = Field(description="log-seconds or seconds: the scale of the sd fields.")
    departures: list[str] = Field(description="ISO 8601 in the model's time zone.")
    demand_source: str
    recalibrated: bool
    epistemic_share: float | None = Field(
        description="The demand-weighted share of the model's own uncertainty overall."
    )
    origin: ReachOrigin | None
    synthetic: bool
    zones: list[GapZone]


class StopsDwell(BaseModel):
    """A dwell as the service read it: ``fixed`` (one number), ``lognormal`` (median and
    90th percentile) or ``empirical`` (the observed dwells), in minutes."""

    model_config = _ANSWER

    kind: Literal["fixed", "lognormal", "empirical"]
    minutes: list[float]


class StopsStop(BaseModel):
    """A stop of the trip: its name, point and dwell."""

    model_config = _ANSWER

    name: str
    lat: float
    lon: float
    dwell: StopsDwell


class StopsTotal(BaseModel):
    """The total time from the first stop to the last, dwells included (seconds)."""

    model_config = _ANSWER

    median_s: float | None
    lo_s: float | None = Field(description="Lower end of the central interval of ``level``.")
    hi_s: float | None = Field(description="Upper end (null when beyond the resolved range).")
    level: float
    mean_s: float | None
    arrive: str | None = Field(description="Median arrival at the last stop, ISO 8601.")
    unresolved_probability: float = Field(
        description="Probability beyond the resolved range: the cdf is understated by at "
        "most this much."
    )
    within_s: float | None = None
    p_within: float | None = Field(None, description="P(total <= within_s); null without it.")


class StopsLeg(BaseModel):
    """One leg: when it leaves, its own travel time, when it arrives (clock times ISO 8601
    with the central interval of the answer's ``level``; times in seconds)."""

    model_config = ConfigDict(**_ANSWER, populate_by_name=True)

    leg: int
    from_: str = Field(alias="from")
    to: str
    depart: str | None
    depart_lo: str | None
    depart_hi: str | None
    median_s: float | None
    lo_s: float | None
    hi_s: float | None
    arrive: str | None
    arrive_lo: str | None
    arrive_hi: str | None
    dwell: str = Field(description="The dwell at ``to``, in words.")
    dwell_median_s: float


class StopsQuantile(BaseModel):
    """One row of the quantile table: the total's (``part`` "total", ``leg`` 0) or a
    leg's own travel time at ``level``, and the clock time of arrival at ``to``."""

    model_config = ConfigDict(**_ANSWER, populate_by_name=True)

    part: Literal["total", "leg"]
    leg: int
    from_: str = Field(alias="from")
    to: str
    level: float
    time_s: float | None
    arrive: str | None


class StopsResponse(BaseModel):
    """A trip through ordered stops: the total's distribution and each leg."""

    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    departure: str = Field(description="Departure from the first stop, ISO 8601.")
    assumption: str = Field(description="What dependence between the legs is assumed.")
    stops: list[StopsStop]
    total: StopsTotal
    legs: list[StopsLeg]
    quantiles: list[StopsQuantile] = Field(description="Empty unless levels were asked for.")


class SiteOut(BaseModel):
    """A chosen site: its id and point, whether it was fixed, the demand points it is the
    best base of, their share of the demand and their demand-weighted P(best base within T)."""

    model_config = _ANSWER

    id: str
    lat: float
    lon: float
    fixed: bool
    zones: int
    demand_share: float
    p_served: float | None = Field(description="Null when it serves no demand.")


class SiteAssignment(BaseModel):
    """A demand point and its best chosen site."""

    model_config = _ANSWER

    id: str
    lat: float
    lon: float
    weight: float
    site: str
    probability: float = Field(description="P(that site within T).")
    reached: bool | None = Field(
        None, description="The fewest bases: probability >= min_probability."
    )


class SiteResponse(BaseModel):
    """The chosen sites, the optimum beside the greedy answer, and the solver's word."""

    model_config = _ANSWER

    model: ModelRef
    time_zone: str
    problem: Literal["coverage", "cover"] = Field(
        description="coverage: k bases, most demand reached; cover: fewest bases."
    )
    definition: str = Field(description="What is optimised, in words.")
    sites: list[SiteOut] = Field(description="Fixed sites first, then by demand share.")
    objective: float = Field(
        description="coverage: demand-weighted P(best base within T); cover: the number of sites."
    )
    greedy_objective: float
    greedy_sites: list[str] = Field(description="The greedy answer, in the order added.")
    gap: float | None = Field(description="How much worse greedy is, relative to the optimum.")
    bound: float | None = Field(description="The proven bound on the optimum.")
    status: str = Field(description="optimal, time limit, no choice or stopped.")
    mip_status: str = Field(description="HiGHS's message; empty when no MILP was needed.")
    mip_gap: float | None = Field(description="HiGHS's own gap; null when no MILP ran.")
    covered_share: float | None = Field(
        description="cover: the share of demand reached with probability >= min_probability."
    )
    within_s: float
    departures: list[str] = Field(description="ISO 8601 in the model's time zone.")
    min_probability: float | None
    share: float | None
    predict_s: float
    solve_s: float
    synthetic: bool
    assignments: list[SiteAssignment] | None = Field(
        None, description="Each demand point's best site, when asked for."
    )
