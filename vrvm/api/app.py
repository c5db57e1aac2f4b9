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
* ``GET /v1/models``, ``GET /v1/models/active``, ``GET /v1/zones``; ``GET /healthz``
  (the process answers) and ``GET /readyz`` (a model is loaded).

The served model follows the data home's active version (:class:`LiveModel`): a
version published or activated from the dashboard or the CLI is answered with within
``check_every_s`` seconds, without a restart and without a failed request. No endpoint
writes to the stores.

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
    CoverageMap,
    CoverageRequest,
    Departure,
    FeatureCollection,
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
from vrvm.services.planning import coverage as coverage_svc
from vrvm.services.planning import fleet, fleet_files, isochrones
from vrvm.services.versions.models import data_description, version_records

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
    table: pd.DataFrame, body: PredictRequest, departs: list, zones: tuple
) -> list[dict]:
    """One result per trip: the columns it asked for, keyed as the API documents."""
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


def _matrix_answer(
    frame: pd.DataFrame, body: MatrixRequest, served: Served, stamp
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
    kind: type[FeatureCollection], document: bytes, served: Served
) -> FeatureCollection:
    """A service's GeoJSON ``document`` with the model that answered, as ``kind``."""
    parsed = json.loads(document)
    parsed["model"] = _model_ref(served)
    parsed["time_zone"] = served.tz
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
        results = _trip_results(table, body, departs, zones_of)
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
                "Accept header, with the headers X-Model-Version and X-Time-Zone.",
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
        if kind == "csv":
            return Response(matrix_csv(frame), media_type="text/csv", headers=headers)
        if kind == "parquet":
            return Response(
                matrix_parquet(frame), media_type="application/vnd.apache.parquet", headers=headers
            )
        return _matrix_answer(frame, body, now, stamp)

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
        return _map_answer(ReachMap, document, now)

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
        return _map_answer(IsochroneMap, document, now)

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
        return _map_answer(CoverageMap, document, now)

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
