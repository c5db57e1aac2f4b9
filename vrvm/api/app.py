"""The HTTP API: travel-time distributions for dispatch and planning systems.

:func:`create_app` builds the ASGI application (FastAPI) over the same services the
dashboard uses; ``vrvm serve`` runs it on uvicorn. Endpoints (``docs/api.md`` has
every field and examples; the OpenAPI schema is at ``/openapi.json`` and interactive
docs at ``/docs``):

* ``POST /v1/predict``: trips -> mean, median, quantiles, P(T <= t), reliability
  indices and data support per trip (:func:`vrvm.services.answers.summaries.trip_summaries`,
  gathered across concurrent requests by :class:`vrvm.api.batching.TripBatcher`);
* ``POST /v1/matrix``: origins x destinations at one departure time
  (:func:`vrvm.services.answers.matrix.matrix_frame`), as JSON (long or nested), CSV or
  Parquet by the ``Accept`` header;
* ``GET /v1/reach``, ``GET /v1/isochrone``, ``POST /v1/coverage``: the reach map,
  probability isochrones and fleet coverage as GeoJSON
  (:mod:`vrvm.services.planning.coverage`, :mod:`vrvm.services.planning.isochrones`,
  :mod:`vrvm.services.planning.fleet`);
* ``POST /v1/compare``, ``GET /v1/compare/reach``: what changed between two versions of
  the home's model store, pair by pair or from a base as GeoJSON
  (:mod:`vrvm.services.planning.compare`);
* ``POST /v1/stops``: a trip through ordered stops with dwells, each leg leaving when
  the previous one arrives: the total's distribution and each leg
  (:mod:`vrvm.services.planning.stops`);
* ``POST /v1/site``: where k bases should stand to reach the most demand within T, or
  the fewest bases reaching enough of it, proven optimal with the greedy answer beside it
  (:mod:`vrvm.services.planning.siting`);
* ``POST /v1/gaps``: where data is missing, the model's own share of every zone's
  predictive spread as JSON, CSV or GeoJSON (:mod:`vrvm.services.planning.data_gaps`);
* ``GET /v1/models``, ``GET /v1/models/active``, ``GET /v1/zones``; ``GET /healthz``
  (the process answers) and ``GET /readyz`` (a model is loaded).

The served model follows the data home's active version (:class:`LiveModel`): a
version published or activated from the dashboard or the CLI is answered with within
``check_every_s`` seconds, without a restart and without a failed request; a comparison
loads the other version it names read-only. No endpoint writes to the stores.

Every handler returns an instance of its response model (:mod:`vrvm.api.schemas`,
declared with ``response_model`` so the OpenAPI schema documents it), built with
validation: an answer with a missing or unknown field, a wrong type or a number that is
not finite is the server's fault, a JSON 500 from :class:`~vrvm.api._errors.InternalErrors`
(never a malformed 200), and FastAPI does not validate the instance again. Validation
stays on everywhere; the large answers take pydantic's fast paths instead: a matrix's
pairs are validated as dicts (:class:`~vrvm.api.schemas.MatrixPair`, a TypedDict) and
every JSON answer is written by pydantic's serializer, so a 100 x 100 matrix is built,
checked and written in less CPU time than the dicts and :func:`json.dumps` took before
(``BENCHMARKS.md``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from pydantic import ValidationError
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool

from vrvm._version import __version__
from vrvm.api._errors import InternalErrors
from vrvm.api._inputs import FieldError, departure, parse_latlon_param, place_of, points_frame
from vrvm.api._security import AccessLog, BodyLimit, TokenCheck
from vrvm.api.batching import DEFAULT_MAX_BATCH_TRIPS, TripBatcher
from vrvm.api.schemas import (
    MAX_LEVELS,
    ActiveModel,
    CompareModel,
    CompareReachMap,
    CompareRequest,
    CompareResponse,
    CompareSummary,
    CoverageMap,
    CoverageRequest,
    Departure,
    FeatureCollection,
    GapsRequest,
    GapsResponse,
    GapZone,
    Health,
    IsochroneMap,
    MatrixLong,
    MatrixNested,
    MatrixRequest,
    MatrixResponse,
    ModelRef,
    ModelsResponse,
    NotReady,
    PointIn,
    PredictRequest,
    PredictResponse,
    Problem,
    ReachMap,
    Ready,
    SiteRequest,
    SiteResponse,
    StopsRequest,
    StopsResponse,
    ZoneCount,
    ZonesResponse,
)
from vrvm.engine import single_threaded_blas
from vrvm.services.access.settings import api_token
from vrvm.services.answers.live import LiveModel, NoModelError, Served
from vrvm.services.answers.matrix import matrix_csv, matrix_frame, matrix_parquet
from vrvm.services.answers.summaries import INDEX_SUMMARY_COLUMNS
from vrvm.services.display.formatting import format_number
from vrvm.services.map.places import Place
from vrvm.services.planning import compare as compare_svc
from vrvm.services.planning import coverage as coverage_svc
from vrvm.services.planning import data_gaps as gaps_svc
from vrvm.services.planning import fleet, fleet_files, isochrones, siting
from vrvm.services.planning.stops import NO_DWELL, Dwell, Stop, trip_with_stops
from vrvm.services.versions.models import (
    data_description,
    is_synthetic,
    load_version,
    model_name,
    version_records,
)
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["SETTINGS_ENV", "ApiSettings", "app_from_environment", "create_app"]

logger = logging.getLogger(__name__)

GEOJSON = "application/geo+json"
DOCS_ASSETS = "/docs-assets"
PARQUET_TYPES = ("application/vnd.apache.parquet", "application/x-parquet", "application/parquet")

SERVER_FAULT = {500: {"model": Problem, "description": "A fault of the server, not the request."}}
ERRORS = {
    401: {"model": Problem, "description": "A token is set; the request has none or a wrong one."},
    **SERVER_FAULT,
    503: {"model": Problem, "description": "No model is loaded yet."},
}
"""The error answers of every ``/v1`` endpoint (FastAPI declares the 422 itself)."""
TOO_LARGE = {413: {"model": Problem, "description": "The body is larger than --max-body-bytes."}}
NOT_READY = {503: {"model": NotReady, "description": "No model answers yet."}}


def _as_json(errors: dict) -> dict:
    """``errors`` documented as JSON on a map's route: FastAPI would document an error's
    model under the route's own media type, GeoJSON."""
    return {
        status: {
            "description": error["description"],
            "content": {"application/json": {"schema": error["model"].model_json_schema()}},
        }
        for status, error in errors.items()
    }


class GeoJSONResponse(JSONResponse):
    """A map as ``application/geo+json``, written by pydantic's serializer.

    FastAPI's own fast path (``dump_json``) is only for its default response class; with
    :func:`json.dumps` the reach map of the demo model (463 zones, 390 kB) took 36 ms of
    CPU to write instead of 22 ms.
    """

    media_type = GEOJSON

    def render(self, content) -> bytes:
        return to_json(content)


@dataclass(frozen=True)
class ApiSettings:
    """How the API serves: what, and its limits.

    Attributes
    ----------
    home : Path or None
        The data home whose active model is served (and followed).
    model_dir : Path or None
        A model directory served as it is (exactly one of ``home`` and ``model_dir``).
    token : str or None
        The bearer token every endpoint but the health checks requires (None: open).
    max_body_bytes : int
        Largest request body accepted (413 above).
    max_trips : int
        Most trips in one ``POST /v1/predict``.
    max_pairs : int
        Most origin-destination pairs in one ``POST /v1/matrix``.
    cors_origins : tuple of str
        Origins allowed by CORS (empty: CORS off, browsers on other sites refused).
    check_every_s : float
        Seconds between two looks at the home's active version.
    docs : bool
        Whether ``/docs`` and ``/openapi.json`` are served.
    max_batch_trips : int
        Most trips answered in one model call across concurrent requests.
    log_level : str
        Level of the ``vrvm`` logs a worker process writes to stderr (several workers).
    """

    home: Path | None = None
    model_dir: Path | None = None
    token: str | None = None
    max_body_bytes: int = 1 << 20
    max_trips: int = 1000
    max_pairs: int = 40_000
    cors_origins: tuple[str, ...] = ()
    check_every_s: float = 1.0
    docs: bool = True
    max_batch_trips: int = DEFAULT_MAX_BATCH_TRIPS
    log_level: str = "INFO"

    @classmethod
    def from_environment(cls, **values) -> ApiSettings:
        """Settings with the token read from ``VRVM_API_TOKEN`` unless given."""
        values.setdefault("token", api_token())
        return cls(**values)

    def to_json(self) -> str:
        """The settings but the token, as JSON (handed to worker processes)."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.pop("token")
        for name in ("home", "model_dir"):
            values[name] = None if values[name] is None else str(values[name])
        values["cors_origins"] = list(values["cors_origins"])
        return json.dumps(values)

    @classmethod
    def from_json(cls, text: str) -> ApiSettings:
        """Settings from :meth:`to_json`, with the token read from the environment."""
        values = json.loads(text)
        for name in ("home", "model_dir"):
            values[name] = None if values[name] is None else Path(values[name])
        values["cors_origins"] = tuple(values["cors_origins"])
        return cls.from_environment(**values)


SETTINGS_ENV = "VRVM_API_SETTINGS"
"""How ``vrvm serve --workers N`` hands its settings to each worker process."""


def app_from_environment() -> FastAPI:
    """The application of :data:`SETTINGS_ENV` (uvicorn's factory for several workers).

    Each worker process loads the model and follows the home on its own; the token is
    read from ``VRVM_API_TOKEN`` in each, never written into the environment.
    """
    text = os.environ.get(SETTINGS_ENV)
    if not text:
        raise RuntimeError(f"{SETTINGS_ENV} is not set: start workers with vrvm serve")
    settings = ApiSettings.from_json(text)
    vrvm_logger = logging.getLogger("vrvm")
    if not vrvm_logger.handlers:  # a fresh worker process: log as the CLI does
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(f"vrvm[{os.getpid()}]: %(levelname)s: %(message)s"))
        vrvm_logger.addHandler(handler)
        vrvm_logger.setLevel(settings.log_level)
    return create_app(settings)


def _model_fields(served: Served) -> dict:
    return {
        "name": served.name,
        "version": served.version,
        "synthetic": served.synthetic,
        "time_zone": served.tz,
    }


def _model_ref(served: Served) -> ModelRef:
    return ModelRef(**_model_fields(served))


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _trip_results(
    table: pd.DataFrame, body: PredictRequest, departs: list, zones: tuple, day_trips
) -> list[dict]:
    """One result per trip: the columns it asked for, keyed as the API documents, and
    ``day_trips``, the training trips on each departure's kind of day (None: unknown)."""
    q_cols = {format_number(q): f"q{format_number(q)}_s" for q in body.quantiles}
    t_cols = {format_number(t): f"p_within_{format_number(t)}s" for t in body.within_s}
    columns = {name: table[name].to_numpy() for name in table.columns}
    origin_zones, dest_zones = zones
    results = []
    for i in range(len(table)):
        result = {
            "depart": departs[i].isoformat(),
            "mean_s": float(columns["mean_s"][i]),
            "median_s": float(columns["median_s"][i]),
            "quantiles_s": {k: float(columns[c][i]) for k, c in q_cols.items()},
            "prob_within": {k: float(columns[c][i]) for k, c in t_cols.items()},
            "origin_zone": origin_zones[i],
            "destination_zone": dest_zones[i],
        }
        for name in INDEX_SUMMARY_COLUMNS:  # every field in every answer: null when not asked
            result[name] = _finite(columns[name][i]) if body.indices else None
        result["support"] = None
        if body.support and "support_trips" in columns:
            result["support"] = {
                "trips": int(columns["support_trips"][i]),
                "trips_at_time": int(columns["support_trips_at_time"][i]),
                "thin": bool(columns["thin"][i]),
            }
        result["day_kind_trips"] = None if day_trips is None else int(day_trips[i])
        results.append(result)
    return results


def _trip_queries(served: Served, body: PredictRequest) -> tuple[pd.DataFrame, list, tuple]:
    """The model's queries of the request's trips, their departures and zones."""
    area = served.area
    origins = points_frame(
        area, [t.origin for t in body.trips], lambda i: ["body", "trips", i, "origin"]
    )
    dests = points_frame(
        area, [t.destination for t in body.trips], lambda i: ["body", "trips", i, "destination"]
    )
    departs = [
        departure(trip.depart, served.tz, ["body", "trips", i, "depart"])
        for i, trip in enumerate(body.trips)
    ]
    utc = np.fromiter((d.value for d in departs), dtype=np.int64, count=len(departs))
    queries = pd.DataFrame(
        {
            "origin_lat": origins["lat"],
            "origin_lon": origins["lon"],
            "dest_lat": dests["lat"],
            "dest_lon": dests["lon"],
            "start_time": pd.DatetimeIndex(utc.astype("datetime64[ns]"), tz="UTC").tz_convert(
                served.tz
            ),
        }
    )
    return queries, departs, (origins["zone"], dests["zone"])


def _wants(request: Request) -> str:
    accept = request.headers.get("accept", "").lower()
    if any(kind in accept for kind in PARQUET_TYPES):
        return "parquet"
    if "text/csv" in accept:
        return "csv"
    return "json"


def _json_column(column: pd.Series) -> list:
    """A column as Python values, a float that is not finite as None (JSON has no NaN)."""
    values = column.to_numpy()
    out = values.tolist()
    if values.dtype.kind == "f":
        for i in np.flatnonzero(~np.isfinite(values)):
            out[i] = None
    return out


def _day_kind_trips(served: Served, stamp) -> int | None:
    """The model's training trips on the kind of day of the departure ``stamp`` (None:
    a model saved before it recorded them)."""
    counts = served.model.trips_on_day_kind(pd.DataFrame({"start_time": [stamp]}))
    return None if counts is None else int(counts[0])


def _matrix_answer(
    frame: pd.DataFrame, body: MatrixRequest, served: Served, stamp, day_trips: int | None
) -> MatrixLong | MatrixNested:
    """The matrix as JSON in the layout asked for, validated as it is built (the pairs
    as dicts, :class:`~vrvm.api.schemas.MatrixPair`: a fifth of the time of models)."""
    columns = {name: _json_column(frame[name]) for name in frame.columns}
    head = {
        "model": _model_ref(served),
        "time_zone": served.tz,
        "depart": stamp.isoformat(),
        "n_origins": len(body.origins),
        "n_destinations": len(body.destinations),
        "day_kind_trips": day_trips,
    }
    if body.layout == "nested":
        m, n = len(body.origins), len(body.destinations)
        values = [name for name in frame.columns if name not in ("origin", "destination")]
        return MatrixNested.model_validate(
            {
                **head,
                "layout": "nested",
                "origins": columns["origin"][::n],
                "destinations": columns["destination"][:n],
                "values": {
                    name: [columns[name][i * n : (i + 1) * n] for i in range(m)] for name in values
                },
            }
        )
    names = list(columns)
    pairs = [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    return MatrixLong.model_validate({**head, "layout": "long", "pairs": pairs})


def _map_answer(
    kind: type[FeatureCollection], document: bytes, served: Served, stamp
) -> FeatureCollection:
    """A service's GeoJSON ``document`` with the model that answered and what it learned
    of the departure ``stamp``'s kind of day, as ``kind``."""
    parsed = json.loads(document)
    parsed["model"] = _model_ref(served)
    parsed["time_zone"] = served.tz
    parsed["day_kind_trips"] = _day_kind_trips(served, stamp)
    return kind.model_validate(parsed)


def _one_place(served: Served, origin: str | None, origin_zone: str | None, name: str) -> Place:
    if (origin is None) == (origin_zone is None):
        raise FieldError(["query", name], f"give either {name}=lat,lon or {name}_zone=ID")
    if origin_zone is not None:
        loc = ["query", f"{name}_zone"]
        try:
            point = PointIn(zone=origin_zone)
        except ValidationError as exc:  # a request's fault: named, without its value
            raise FieldError(loc, exc.errors(include_input=False)[0]["msg"]) from None
        return place_of(served.area, point, loc)
    lat, lon = parse_latlon_param(origin, ["query", name])
    return place_of(served.area, PointIn(lat=lat, lon=lon), ["query", name])


def _within_min(within: float) -> float:
    if not 0 < within < 7 * 86400:
        raise FieldError(
            ["query", "within"], f"expected seconds between 0 and one week, got {within}"
        )
    return within / 60.0


COMPARE_PAIR_COST = 100
"""Matrix pairs one compared pair costs: ``POST /v1/compare`` takes at most
``max_pairs // COMPARE_PAIR_COST`` pairs (measured on the demo model with two members:
6.5 ms a compared pair against 51 us a matrix pair, for the 2 x 512 quantile solves)."""

GAPS_PAIR_ALLOWANCE = 5
"""``POST /v1/gaps`` predicts at most ``GAPS_PAIR_ALLOWANCE * max_pairs`` trips (zones x
representative destinations x departures, both ways when the destinations are not every
zone): the default question on the demo model's 449 zones is 180,000 trips (about 12 s
on two busy cores), asked once per area, not per dispatch."""

INDEPENDENCE = (
    "P(slower) compares the two versions' predictives as two independent travel times; "
    "intervals of T_B - T_A are too wide when the same conditions drive both."
)
"""What P(slower) assumes (:mod:`vrvm.services.planning.compare`), in every comparison."""

STOPS_ASSUMPTION = (
    "Each leg is predicted for when it actually leaves (a slower leg makes the next leave "
    "later, into different traffic); legs are otherwise independent, and dwells independent "
    "of the traffic and of each other."
)
"""What a trip with stops assumes (:mod:`vrvm.services.planning.stops`), in every answer."""

_THRESHOLD_COLUMNS = ("p_within_a", "p_within_b", "p_within_change")


def _compare_columns(frame: pd.DataFrame, within_s: float | None) -> pd.DataFrame:
    """A comparison table with its threshold columns named as the API's fields (the
    threshold is the answer's ``within_s``)."""
    if within_s is None:
        return frame
    names = compare_svc.compare_columns(within_s)[-3:]
    return frame.rename(columns=dict(zip(names, _THRESHOLD_COLUMNS, strict=True)))


def _compare_summary(frame: pd.DataFrame) -> CompareSummary:
    summary = compare_svc.compare_summary(frame)
    summary["median_change_s"] = _finite(summary["median_change_s"])
    return CompareSummary(**summary)


def _gaps_answer(table: pd.DataFrame, served: Served) -> GapsResponse:
    """A gaps table as JSON: one :class:`~vrvm.api.schemas.GapZone` per zone, with the
    columns the table has (the figures of the origin's own zone null)."""
    fields = set(GapZone.model_fields)
    frame = table.drop(columns=[c for c in table.columns if c not in fields])
    frame = frame.astype({"zone": str})
    columns = {name: _json_column(frame[name]) for name in frame.columns}
    names = list(columns)
    zones = [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    attrs = table.attrs
    return GapsResponse.model_validate(
        {
            "model": _model_ref(served),
            "time_zone": served.tz,
            "scale": attrs["scale"],
            "departures": list(attrs["departures"]),
            "demand_source": attrs["demand"],
            "recalibrated": bool(attrs["recalibrated"]),
            "epistemic_share": _finite(gaps_svc.gaps_summary(table)["epistemic_share"]),
            "origin": attrs.get("origin"),
            "synthetic": served.synthetic,
            "zones": zones,
        }
    )


def _stops_of(body: StopsRequest, served: Served) -> list[Stop]:
    """The request's stops as the service's: points in the served area, named (the name,
    else the zone id, else "stop 1", "stop 2", ...), with their dwells."""
    points = points_frame(served.area, body.stops, lambda i: ["body", "stops", i])
    stops = []
    for i, stop in enumerate(body.stops):
        name = stop.name or stop.zone or f"stop {i + 1}"
        dwell, lat, lon = stop.dwell, float(points["lat"][i]), float(points["lon"][i])
        try:
            if dwell is None:
                read = NO_DWELL
            elif dwell.minutes is not None:
                read = Dwell.fixed(dwell.minutes)
            elif dwell.sample_min is not None:
                read = Dwell.empirical(dwell.sample_min)
            else:
                read = Dwell.lognormal(dwell.median_min, dwell.p90_min)
            stops.append(Stop(lat, lon, name, read))
        except ValueError as exc:
            raise FieldError(["body", "stops", i, "dwell"], str(exc)) from None
    return stops


SITE_PAIR_ALLOWANCE = 10
"""``POST /v1/site`` predicts at most ``SITE_PAIR_ALLOWANCE * max_pairs`` (candidate, demand
point, departure) triples (400,000 by default). Measured with the demo model: every zone to
every zone at one departure (463 x 463) took 33 s to predict and 1.4 s to solve on two
busy cores; the solve itself is capped by ``time_limit_s``."""


def _site_points(served: Served, points: list, name: str) -> pd.DataFrame:
    """Candidate or demand points as the siting service's table: ``id`` (the name, else the
    zone id, else the position), ``lat``, ``lon``; repeated ids are refused."""
    frame = points_frame(served.area, points, lambda i: ["body", name, i])
    table = pd.DataFrame(
        {"id": [str(label) for label in frame["label"]], "lat": frame["lat"], "lon": frame["lon"]}
    )
    repeated = table["id"][table["id"].duplicated()].unique().tolist()
    if repeated:
        raise FieldError(["body", name], f"ids must differ (give names); repeated: {repeated[:10]}")
    return table


def _site_field(message: str) -> list:
    """The request field a siting service's refusal is about."""
    if message.startswith("fixed") or "fixed base ids" in message:
        return ["body", "fixed"]
    for word, name in (("bases", "bases"), ("demand", "demand"), ("candidate", "candidates")):
        if word in message:
            return ["body", name]
    return ["body"]


def _site_definition(result: siting.SitingResult) -> str:
    t = f"{format_number(result.within_s / 60.0)} min"
    over = (
        "at the departure"
        if len(result.departures) == 1
        else f"averaged over {len(result.departures)} departures"
    )
    if result.problem == "cover":
        return (
            f"the fewest bases such that {format_number(100 * result.share)} % of the demand is "
            f"reached within {t} with probability at least "
            f"{format_number(result.min_probability)} by some base ({over})"
        )
    return (
        f"the demand-weighted probability that the best of the {len(result.sites)} bases "
        f"reaches each demand point within {t} ({over}); dispatch sends the best open base, "
        "one vehicle per base, always available"
    )


def _site_answer(result: siting.SitingResult, served: Served, assignments: bool) -> SiteResponse:
    sites = result.sites.astype({"id": str})
    columns = {name: _json_column(sites[name]) for name in sites.columns}
    rows = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    document = {
        "model": _model_ref(served),
        "time_zone": served.tz,
        "problem": result.problem,
        "definition": _site_definition(result),
        "sites": rows,
        "objective": float(result.objective),
        "greedy_objective": float(result.greedy_objective),
        "greedy_sites": [str(s) for s in result.greedy_sites],
        "gap": _finite(result.gap),
        "bound": _finite(result.bound),
        "status": result.status,
        "mip_status": result.mip_status,
        "mip_gap": _finite(result.mip_gap),
        "covered_share": _finite(result.covered_share),
        "within_s": result.within_s,
        "departures": [d.isoformat() for d in result.departures],
        "min_probability": result.min_probability,
        "share": result.share,
        "predict_s": result.predict_s,
        "solve_s": result.solve_s,
        "synthetic": served.synthetic,
    }
    if assignments:
        table = result.demand_table().astype({"id": str, "site": str})
        columns = {name: _json_column(table[name]) for name in table.columns}
        document["assignments"] = [
            dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)
        ]
    return SiteResponse.model_validate(document)


def create_app(settings: ApiSettings, *, live: LiveModel | None = None) -> FastAPI:
    """The ASGI application serving ``settings.home`` (or ``settings.model_dir``).

    ``live`` gives an already opened :class:`LiveModel` (tests); otherwise one is
    opened on start-up and its watcher stopped on shutdown.
    """
    state: dict = {"live": live}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        own = state["live"] is None
        if own:
            state["live"] = await run_in_threadpool(
                LiveModel,
                settings.home,
                model_dir=settings.model_dir,
                check_every_s=settings.check_every_s,
            )
        state["live"].start()
        batcher = TripBatcher(state["live"], max_trips=settings.max_batch_trips)
        await batcher.start()
        state["batcher"] = batcher
        # BLAS on one thread for the server's life: requests are many and small, and a
        # limit set and lifted per batch leaves OpenBLAS's threads spinning (a 100 x 100
        # matrix after a burst of predictions took 1.4 s instead of 0.26 s)
        blas = single_threaded_blas()
        blas.__enter__()
        try:
            yield
        finally:
            blas.__exit__(None, None, None)
            await batcher.stop()
            if own:
                state["live"].stop()

    about = {
        "title": "vrvm travel-time API",
        "version": __version__,
        "summary": "Probabilistic travel times: distributions, not single numbers.",
        "lifespan": lifespan,
    }
    if settings.docs:
        # Swagger UI (/docs) and ReDoc (/redoc) with their files served by this server:
        # FastAPI's own pages load them from a CDN, blank on a closed network
        app = FastAPIOffline(docs_url="/docs", redoc_url="/redoc", static_url=DOCS_ASSETS, **about)
    else:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, **about)

    def served() -> Served:
        return state["live"].current()

    @app.exception_handler(FieldError)
    async def _field_error(request: Request, exc: FieldError):
        return JSONResponse({"detail": exc.detail()}, status_code=422)

    @app.exception_handler(NoModelError)
    async def _no_model(request: Request, exc: NoModelError):
        return JSONResponse({"detail": f"no model to answer with: {exc}"}, status_code=503)

    @app.exception_handler(ValueError)
    async def _value_error(request: Request, exc: ValueError):
        return JSONResponse(
            {"detail": [{"loc": ["body"], "msg": str(exc), "type": "value_error"}]},
            status_code=422,
        )

    @app.exception_handler(ValidationError)  # a handler's answer failed its model
    @app.exception_handler(ResponseValidationError)  # FastAPI's check of a non-model answer
    async def _answer_unlike_its_model(request: Request, exc: Exception):
        # the server's fault, never the request's (that is RequestValidationError): on to
        # InternalErrors, a logged JSON 500. The log names the fields without their values,
        # which may be the request's places; `from None` keeps the values out of it too.
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors()
        )
        raise RuntimeError(f"an answer is not its response model: {problems}") from None

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        # FastAPI's shape without echoing the input back (coordinates are personal data)
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": errors}, status_code=422)

    # ------------------------------------------------------------------ health
    @app.get(
        "/healthz",
        tags=["health"],
        summary="The process answers",
        response_model=Health,
        responses=SERVER_FAULT,
    )
    async def healthz() -> Health:
        return Health(status="ok")

    @app.get(
        "/readyz",
        tags=["health"],
        summary="A model is loaded and answers",
        response_model=Ready,
        # the warning only when there is one: unset fields are left out
        response_model_exclude_unset=True,
        responses={**NOT_READY, **SERVER_FAULT},
    )
    async def readyz() -> Ready | JSONResponse:
        live_model: LiveModel = state["live"]
        if live_model is None or not live_model.ready:
            reason = None if live_model is None else live_model.last_error
            refusal = NotReady(status="not ready", reason=reason or "no model loaded yet")
            return JSONResponse(refusal.model_dump(), status_code=503)
        fields = {"status": "ready", "model": _model_ref(live_model.current())}
        if live_model.last_error:
            fields["warning"] = live_model.last_error
        return Ready(**fields)

    v1 = APIRouter(
        prefix="/v1", dependencies=[Depends(TokenCheck(settings.token))], responses=ERRORS
    )

    # ------------------------------------------------------------------ models
    @v1.get(
        "/models",
        tags=["models"],
        summary="The model versions and which one answers",
        response_model=ModelsResponse,
    )
    def models() -> ModelsResponse:
        now = served()
        versions = [] if settings.home is None else version_records(settings.home)
        return ModelsResponse(serving=_model_ref(now), versions=versions)

    @v1.get(
        "/models/active",
        tags=["models"],
        summary="The model that answers now",
        response_model=ActiveModel,
    )
    def active_model() -> ActiveModel:
        now = served()
        model = now.model
        return ActiveModel(
            **_model_fields(now),
            trained_on=data_description(model),
            n_members=len(model.members_),
            relevance_vectors=int(sum(m.n_relevance_ for m in model.members_)),
            zones=ZoneCount(kind=now.area.kind, count=len(now.area.grid)),
        )

    @v1.get(
        "/zones",
        tags=["models"],
        summary="The served model's zones",
        response_model=ZonesResponse,
    )
    def zones() -> ZonesResponse:
        now = served()
        grid = now.area.grid
        table = grid[["zone", "label", "lat", "lon", "n_points"]].rename(
            columns={"n_points": "trip_ends"}
        )
        return ZonesResponse(
            model=_model_ref(now),
            kind=now.area.kind,
            zones=table.astype({"zone": str}).to_dict(orient="records"),
        )

    # ------------------------------------------------------------------ predict
    @v1.post(
        "/predict",
        tags=["predict"],
        summary="Travel-time distributions of trips",
        response_model=PredictResponse,
        responses=TOO_LARGE,
    )
    async def predict(body: PredictRequest) -> PredictResponse:
        if len(body.trips) > settings.max_trips:
            raise FieldError(
                ["body", "trips"],
                f"{len(body.trips):,} trips is more than the limit of {settings.max_trips:,} "
                "per request",
            )
        now = served()
        queries, departs, zones_of = _trip_queries(now, body)
        used, table = await state["batcher"].answer(
            queries,
            quantiles=body.quantiles,
            within_s=body.within_s,
            indices=body.indices,
            support=body.support,
        )
        if used is not now:  # the model changed in between: the zones came from `now`
            zones_of = tuple([None] * len(body.trips) for _ in range(2))
        day_trips = used.model.trips_on_day_kind(queries)  # the model's record, index or not
        results = _trip_results(table, body, departs, zones_of, day_trips)
        return PredictResponse.model_validate(
            {"model": _model_ref(used), "time_zone": used.tz, "results": results}
        )

    @v1.post(
        "/matrix",
        tags=["predict"],
        summary="Every origin to every destination at one departure time",
        response_model=MatrixResponse,
        responses={
            200: {
                "description": "JSON by default; CSV or Parquet (the long layout) by the "
                "Accept header, with the headers X-Model-Version, X-Time-Zone and "
                "X-Day-Kind-Trips (see day_kind_trips).",
                "content": {
                    "text/csv": {"schema": {"type": "string"}},
                    "application/vnd.apache.parquet": {
                        "schema": {"type": "string", "format": "binary"}
                    },
                },
            },
            **TOO_LARGE,
        },
    )
    def matrix(body: MatrixRequest, request: Request) -> MatrixLong | MatrixNested | Response:
        pairs = len(body.origins) * len(body.destinations)
        if pairs > settings.max_pairs:
            raise FieldError(
                ["body"],
                f"{pairs:,} pairs is more than the limit of {settings.max_pairs:,} per request",
            )
        now = served()
        origins = pd.DataFrame(
            points_frame(now.area, body.origins, lambda i: ["body", "origins", i])
        )
        destinations = pd.DataFrame(
            points_frame(now.area, body.destinations, lambda i: ["body", "destinations", i])
        )
        stamp = departure(body.depart, now.tz, ["body", "depart"])
        frame = matrix_frame(
            now.model,
            origins,
            destinations,
            stamp,
            quantiles=body.quantiles,
            thresholds_s=body.within_s,
            indices=body.indices,
            area=now.area if body.support else None,
            max_pairs=settings.max_pairs,
        )
        kind = _wants(request)
        headers = {"X-Model-Version": str(now.version), "X-Time-Zone": now.tz}
        day_trips = _day_kind_trips(now, stamp)
        if day_trips is not None:
            headers["X-Day-Kind-Trips"] = str(day_trips)
        if kind == "csv":
            return Response(matrix_csv(frame), media_type="text/csv", headers=headers)
        if kind == "parquet":
            return Response(
                matrix_parquet(frame), media_type="application/vnd.apache.parquet", headers=headers
            )
        return _matrix_answer(frame, body, now, stamp, day_trips)

    # ------------------------------------------------------------------ maps
    @v1.get(
        "/reach",
        tags=["maps"],
        summary="Reach map: P(arrive within t) and the median time to every zone",
        response_model=ReachMap,
        response_class=GeoJSONResponse,
        responses=_as_json(ERRORS),
    )
    def reach(
        within: Annotated[float, Query(description="The time t in seconds.")],
        origin: Annotated[str | None, Query(description="'lat,lon' in degrees.")] = None,
        origin_zone: Annotated[str | None, Query(description="A zone id instead.")] = None,
        depart: Annotated[
            Departure | None, Query(description="ISO 8601 (not a number); default now.")
        ] = None,
    ) -> ReachMap:
        now = served()
        place = _one_place(now, origin, origin_zone, "origin")
        stamp = departure(depart, now.tz, ["query", "depart"])
        minutes = _within_min(within)
        grid = coverage_svc.coverage_grid(now.model, now.area, place, stamp, minutes)
        document = coverage_svc.coverage_geojson(
            grid, place, stamp, minutes, synthetic=now.synthetic
        )
        return _map_answer(ReachMap, document, now, stamp)

    @v1.get(
        "/isochrone",
        tags=["maps"],
        summary="Probability isochrones: where P(T <= t) >= p",
        response_model=IsochroneMap,
        response_class=GeoJSONResponse,
        responses=_as_json(ERRORS),
    )
    def isochrone(
        within: Annotated[float, Query(description="The time t in seconds.")],
        origin: Annotated[str | None, Query(description="'lat,lon' in degrees.")] = None,
        origin_zone: Annotated[str | None, Query(description="A zone id instead.")] = None,
        depart: Annotated[
            Departure | None, Query(description="ISO 8601 (not a number); default now.")
        ] = None,
        p: Annotated[
            list[float] | None,
            Query(
                max_length=MAX_LEVELS,
                description=f"Probabilities (repeat for several; at most {MAX_LEVELS}).",
            ),
        ] = None,
        direction: Annotated[str, Query(pattern="^(from|to)$")] = "from",
    ) -> IsochroneMap:
        now = served()
        place = _one_place(now, origin, origin_zone, "origin")
        stamp = departure(depart, now.tz, ["query", "depart"])
        probabilities = p or list(isochrones.DEFAULT_PROBABILITIES)
        try:
            result = isochrones.probability_isochrones(
                now.model,
                now.area,
                place,
                stamp,
                _within_min(within),
                probabilities,
                direction=direction,
            )
        except ValueError as exc:
            raise FieldError(["query"], str(exc)) from None
        document = isochrones.isochrones_geojson(result, synthetic=now.synthetic)
        return _map_answer(IsochroneMap, document, now, stamp)

    @v1.post(
        "/coverage",
        tags=["maps"],
        summary="Fleet coverage: P(some base arrives within t) in every zone",
        response_model=CoverageMap,
        response_class=GeoJSONResponse,
        responses=_as_json({**ERRORS, **TOO_LARGE}),
    )
    def coverage(body: CoverageRequest) -> CoverageMap:
        now = served()
        if len(body.bases) > fleet.MAX_BASES:
            raise FieldError(["body", "bases"], f"at most {fleet.MAX_BASES} bases")
        tables = []
        for i, base in enumerate(body.bases):
            place = place_of(now.area, base, ["body", "bases", i])
            name = base.name or (place.label if base.zone is not None else f"Base {i + 1}")
            tables.append(fleet.bases_at_points(now.area, [name], [place.lat], [place.lon]))
        try:
            bases = fleet.combine_bases(*tables)
        except ValueError as exc:
            raise FieldError(["body", "bases"], str(exc)) from None
        stamp = departure(body.depart, now.tz, ["body", "depart"])
        result = fleet.fleet_coverage(now.model, now.area, bases, stamp, body.within_s / 60.0)
        demand, _ = fleet.zone_demand(now.area)
        document = fleet_files.fleet_geojson(result, demand, synthetic=now.synthetic)
        return _map_answer(CoverageMap, document, now, stamp)

    # ------------------------------------------------------------------ plan
    @functools.lru_cache(maxsize=2)
    def stored_model(version: int, created: str) -> TravelTimeModel:
        # a committed version never changes: loaded once, read-only, beside the served one
        # (``created`` tells it from a later version that reused its number)
        del created
        return load_version(settings.home, version)

    def version_model(
        now: Served, version: int | None, loc: list
    ) -> tuple[CompareModel, TravelTimeModel]:
        """A version of the home's store (None: the one answering), and its model."""
        if settings.home is None or now.version is None:
            raise FieldError(
                loc,
                "this server answers with one model directory, not a data home: there are "
                "no versions to compare (serve a home with vrvm serve --home)",
            )
        version = now.version if version is None else version
        if version == now.version:
            model = now.model
        else:
            known = {r["version"]: r["created"] for r in version_records(settings.home)}
            if version not in known:
                raise FieldError(
                    loc,
                    f"the home's model store has no version {version}; its versions are "
                    f"{', '.join(map(str, sorted(known)))} (GET /v1/models)",
                )
            model = stored_model(version, known[version])
        if len(model.members_) < 2:
            raise FieldError(
                loc,
                f"version {version} has one member: the change of the median needs the "
                "spread of at least two members",
            )
        return CompareModel(version=version, name=model_name(model)), model

    def comparable(model_a, model_b, points: pd.DataFrame | None, loc: list) -> None:
        try:
            compare_svc.check_comparable(model_a, model_b, points)
        except compare_svc.DifferentAreasError as exc:
            raise FieldError(loc, str(exc)) from None

    @v1.post(
        "/compare",
        tags=["plan"],
        summary="What changed between two versions: every origin to every destination",
        response_model=CompareResponse,
        responses={
            200: {
                "description": "JSON by default; CSV or Parquet (the table of vrvm compare) "
                "by the Accept header, with the headers X-Model-Versions (A,B) and "
                "X-Time-Zone.",
                "content": {
                    "text/csv": {"schema": {"type": "string"}},
                    "application/vnd.apache.parquet": {
                        "schema": {"type": "string", "format": "binary"}
                    },
                },
            },
            **TOO_LARGE,
        },
    )
    def compare(body: CompareRequest, request: Request) -> CompareResponse | Response:
        pairs = len(body.origins) * len(body.destinations)
        limit = max(1, settings.max_pairs // COMPARE_PAIR_COST)
        if pairs > limit:
            raise FieldError(
                ["body"],
                f"{pairs:,} pairs is more than the limit of {limit:,} per comparison (a "
                f"compared pair costs about {COMPARE_PAIR_COST} matrix pairs)",
            )
        now = served()
        ref_a, model_a = version_model(now, body.version_a, ["body", "version_a"])
        ref_b, model_b = version_model(now, body.version_b, ["body", "version_b"])
        comparable(model_a, model_b, None, ["body"])
        points = {}
        for name in ("origins", "destinations"):
            points[name] = pd.DataFrame(
                points_frame(now.area, getattr(body, name), lambda i, n=name: ["body", n, i])
            )
            comparable(model_a, model_b, points[name], ["body", name])
        stamp = departure(body.depart, model_a.tz_, ["body", "depart"])
        frame = compare_svc.compare_matrix(
            model_a,
            model_b,
            points["origins"],
            points["destinations"],
            stamp,
            threshold_s=body.within_s,
            max_pairs=limit,
        )
        kind = _wants(request)
        headers = {
            "X-Model-Versions": f"{ref_a.version},{ref_b.version}",
            "X-Time-Zone": model_a.tz_,
        }
        if kind == "csv":
            return Response(matrix_csv(frame), media_type="text/csv", headers=headers)
        if kind == "parquet":
            return Response(
                matrix_parquet(frame), media_type="application/vnd.apache.parquet", headers=headers
            )
        named = _compare_columns(frame, body.within_s)
        columns = {name: _json_column(named[name]) for name in named.columns}
        names = list(columns)
        rows = [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]
        return CompareResponse.model_validate(
            {
                "model_a": ref_a,
                "model_b": ref_b,
                "time_zone": model_a.tz_,
                "depart": stamp.isoformat(),
                "within_s": body.within_s,
                "independence": INDEPENDENCE,
                "summary": _compare_summary(frame),
                "pairs": rows,
            }
        )

    @v1.get(
        "/compare/reach",
        tags=["maps"],
        summary="What changed from a base: every zone under two versions",
        response_model=CompareReachMap,
        response_class=GeoJSONResponse,
        responses=_as_json(ERRORS),
    )
    def compare_reach(
        version_a: Annotated[
            int, Query(ge=1, description="A committed version of the home's model store.")
        ],
        version_b: Annotated[
            int | None, Query(ge=1, description="The other version; default: the active one.")
        ] = None,
        origin: Annotated[str | None, Query(description="'lat,lon' in degrees.")] = None,
        origin_zone: Annotated[str | None, Query(description="A zone id instead.")] = None,
        depart: Annotated[
            Departure | None, Query(description="ISO 8601 (not a number); default now.")
        ] = None,
        within: Annotated[
            float | None, Query(description="A time t in seconds: also P(T <= t) and its change.")
        ] = None,
    ) -> CompareReachMap:
        now = served()
        ref_a, model_a = version_model(now, version_a, ["query", "version_a"])
        ref_b, model_b = version_model(now, version_b, ["query", "version_b"])
        comparable(model_a, model_b, None, ["query"])
        place = _one_place(now, origin, origin_zone, "origin")
        where = ["query", "origin" if origin is not None else "origin_zone"]
        start = pd.DataFrame({"label": [place.label], "lat": [place.lat], "lon": [place.lon]})
        comparable(model_a, model_b, start, where)
        stamp = departure(depart, model_a.tz_, ["query", "depart"])
        if within is not None:
            _within_min(within)
        try:
            table = compare_svc.compare_reach(
                model_a, model_b, now.area, place, stamp, threshold_s=within
            )
        except compare_svc.DifferentAreasError as exc:  # zones outside a version's area
            raise FieldError(["query"], str(exc)) from None
        named = _compare_columns(table, within)
        props = named.drop(columns=["number", "boundary", "geometry"], errors="ignore")
        document = coverage_svc.zone_collection(props.astype({"zone": str}), table)
        document.update(
            {
                "origin": {"lat": place.lat, "lon": place.lon, "label": place.label},
                "departure": stamp.isoformat(),
                "within_s": within,
                "model_a": ref_a,
                "model_b": ref_b,
                "independence": INDEPENDENCE,
                "summary": _compare_summary(table),
                "synthetic": is_synthetic(model_a) or is_synthetic(model_b),
                "time_zone": model_a.tz_,
            }
        )
        return CompareReachMap.model_validate(document)

    @v1.post(
        "/stops",
        tags=["plan"],
        summary="A trip through ordered stops: the total time and each leg",
        response_model=StopsResponse,
        responses={**ERRORS, **TOO_LARGE},
    )
    def stops(body: StopsRequest) -> StopsResponse:
        now = served()
        trip_stops = _stops_of(body, now)
        stamp = departure(body.depart, now.tz, ["body", "depart"])
        try:
            trip = trip_with_stops(now.model, trip_stops, stamp)
        except ValueError as exc:  # the same point twice, a dwell at an end, a leg refused
            raise FieldError(["body", "stops"], str(exc)) from None
        # the table at one level when none is asked for (dropped): the legs and the total
        # are what a dispatcher waits for
        levels = body.quantiles or [0.5]
        document = trip.to_dict(within_s=body.within_s, level=body.level, levels=levels)
        if not body.quantiles:
            document["quantiles"] = []
        return StopsResponse.model_validate(
            {"model": _model_ref(now), "assumption": STOPS_ASSUMPTION, **document}
        )

    @v1.post(
        "/gaps",
        tags=["plan"],
        summary="Where data is missing: the model's own uncertainty in every zone",
        response_model=GapsResponse,
        # the standard deviations of the model's scale only (_log or _s): unset are left out
        response_model_exclude_unset=True,
        responses={
            200: {
                "description": "JSON by default; CSV (text/csv) or GeoJSON "
                "(application/geo+json) of the zones by the Accept header, with the "
                "headers X-Model-Version and X-Time-Zone.",
                "content": {
                    "text/csv": {"schema": {"type": "string"}},
                    GEOJSON: {"schema": {"type": "object"}},
                },
            },
            **TOO_LARGE,
        },
    )
    def gaps(body: GapsRequest, request: Request) -> GapsResponse | Response:
        now = served()
        n = len(now.area.grid)
        departs = [
            departure(value, now.tz, ["body", "departures", i])
            for i, value in enumerate(body.departures)
        ]
        if body.demand is not None:
            if len(body.demand) != n:
                raise FieldError(
                    ["body", "demand"],
                    f"{len(body.demand):,} weights for {n:,} zones: give one per zone, in the "
                    "order of GET /v1/zones",
                )
            if sum(body.demand) <= 0:
                raise FieldError(["body", "demand"], "demand is zero in every zone")
        if body.origin is None:
            chosen = min(body.max_destinations, n)
            trips = n * chosen * len(departs) * (1 if chosen == n else 2)
            limit = GAPS_PAIR_ALLOWANCE * settings.max_pairs
            if trips > limit:
                raise FieldError(
                    ["body", "max_destinations"],
                    f"{trips:,} trips to predict ({n:,} zones, {chosen:,} destinations, "
                    f"{len(departs)} departures) is more than the limit of {limit:,}: ask "
                    "for fewer destinations or departures",
                )
            table = gaps_svc.zone_gaps(
                now.model,
                now.area,
                departs,
                max_destinations=body.max_destinations,
                demand=body.demand,
            )
        else:
            place = place_of(now.area, body.origin, ["body", "origin"])
            table = gaps_svc.origin_gaps(now.model, now.area, place, departs, demand=body.demand)
        accept = request.headers.get("accept", "").lower()
        headers = {"X-Model-Version": str(now.version), "X-Time-Zone": now.tz}
        if GEOJSON in accept:
            document = gaps_svc.gaps_geojson(table, synthetic=now.synthetic)
            return Response(document, media_type=GEOJSON, headers=headers)
        if "text/csv" in accept:
            document = gaps_svc.gaps_csv(table, synthetic=now.synthetic)
            return Response(document, media_type="text/csv", headers=headers)
        return _gaps_answer(table, now)

    @v1.post(
        "/site",
        tags=["plan"],
        summary="Where k bases should stand, or the fewest bases: proven optimal",
        response_model=SiteResponse,
        responses={**ERRORS, **TOO_LARGE},
    )
    def site(body: SiteRequest) -> SiteResponse | JSONResponse:
        now = served()
        area = now.area
        if body.candidates is None:
            candidates = siting.area_points(area)
        else:
            candidates = _site_points(now, body.candidates, "candidates")
        if body.demand is None:
            demand = siting.area_points(area, what="demand")
        else:
            demand = _site_points(now, body.demand, "demand")
            demand["weight"] = [point.weight for point in body.demand]
        triples = (len(candidates) + len(body.fixed)) * len(demand) * len(body.departures)
        limit = SITE_PAIR_ALLOWANCE * settings.max_pairs
        if triples > limit:
            raise FieldError(
                ["body"],
                f"{triples:,} probabilities to predict ({len(candidates):,} candidates and "
                f"{len(body.fixed)} fixed bases x {len(demand):,} demand points x "
                f"{len(body.departures)} departures) is more than the limit of {limit:,}: ask "
                "for fewer, or run vrvm site on the command line",
            )
        departs = [
            departure(value, now.tz, ["body", "departures", i])
            for i, value in enumerate(body.departures)
        ]
        fixed = None
        if body.fixed:
            found = points_frame(area, body.fixed, lambda i: ["body", "fixed", i])
            ids = [
                point.name or point.zone or f"fixed {i + 1}" for i, point in enumerate(body.fixed)
            ]
            fixed = pd.DataFrame({"id": ids, "lat": found["lat"], "lon": found["lon"]})
        try:
            if body.bases is not None:
                result = siting.site_bases(
                    now.model,
                    candidates,
                    demand,
                    body.bases,
                    body.within_s,
                    departs,
                    fixed=fixed,
                    time_limit_s=body.time_limit_s,
                )
            else:
                result = siting.fewest_bases(
                    now.model,
                    candidates,
                    demand,
                    body.within_s,
                    departs,
                    body.min_probability,
                    share=1.0 if body.share is None else body.share,
                    fixed=fixed,
                    time_limit_s=body.time_limit_s,
                )
        except siting.InfeasibleTarget as exc:
            error = {
                "loc": ["body", "min_probability"],
                "msg": str(exc),
                "type": "value_error",
                "unreachable": [str(i) for i in exc.unreachable],
            }
            return JSONResponse({"detail": [error]}, status_code=422)
        except ValueError as exc:
            raise FieldError(_site_field(str(exc)), str(exc)) from None
        return _site_answer(result, now, body.assignments)

    app.include_router(v1)
    # innermost, so the access log and CORS see its 500 like any other answer
    app.add_middleware(InternalErrors)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
        )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(AccessLog)
    return app
