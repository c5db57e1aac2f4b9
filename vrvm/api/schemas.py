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
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from vrvm.trips.files.time_range import check_departure

__all__ = [
    "MAX_LEVELS",
    "BaseIn",
    "CoverageRequest",
    "Departure",
    "MatrixRequest",
    "ModelRef",
    "PointIn",
    "PredictRequest",
    "PredictResponse",
    "Support",
    "TripIn",
    "TripResult",
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


class ModelRef(BaseModel):
    """Which model answered."""

    name: str
    version: int | None = Field(None, description="Store version; null for a model directory.")
    synthetic: bool = Field(description="Trained on the synthetic city (not real data).")
    time_zone: str


class Support(BaseModel):
    """Training trips behind an answer (from near the origin to near the destination)."""

    trips: int
    trips_at_time: int = Field(description="Those within an hour of the departure's time of day.")
    thin: bool = Field(description="Fewer than 5 trips: treat the answer with caution.")


class TripResult(BaseModel):
    """One trip's travel-time distribution, summarised (seconds)."""

    depart: str = Field(description="The departure used, ISO 8601 in the model's time zone.")
    mean_s: float
    median_s: float
    quantiles_s: dict[str, float] = Field(description="Quantile level -> seconds.")
    prob_within: dict[str, float] = Field(description="Seconds t -> P(T <= t).")
    free_flow_s: float | None = None
    p95_s: float | None = None
    planning_time_index: float | None = None
    buffer_index: float | None = None
    misery_index: float | None = None
    support: Support | None = None
    origin_zone: str | None = None
    destination_zone: str | None = None


class PredictResponse(BaseModel):
    """The answers, one per trip in the order asked."""

    model: ModelRef
    time_zone: str
    results: list[TripResult]
