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
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool

from vrvm._version import __version__
from vrvm.api._errors import InternalErrors
from vrvm.api._inputs import FieldError, departure, parse_latlon_param, place_of, points_frame
from vrvm.api._security import AccessLog, BodyLimit, TokenCheck
from vrvm.api.batching import DEFAULT_MAX_BATCH_TRIPS, TripBatcher
from vrvm.api.schemas import (
    MAX_LEVELS,
    CoverageRequest,
    Departure,
    MatrixRequest,
    ModelRef,
    PredictRequest,
    PredictResponse,
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


def _model_ref(served: Served) -> dict:
    return ModelRef(
        name=served.name, version=served.version, synthetic=served.synthetic, time_zone=served.tz
    ).model_dump()


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


def _matrix_json(frame: pd.DataFrame, body: MatrixRequest, served: Served, stamp) -> dict:
    values = [c for c in frame.columns if c not in ("origin", "destination")]
    document = {
        "model": _model_ref(served),
        "time_zone": served.tz,
        "depart": stamp.isoformat(),
        "n_origins": len(body.origins),
        "n_destinations": len(body.destinations),
        "layout": body.layout,
    }
    clean = frame.astype({c: object for c in values if frame[c].dtype.kind == "f"})
    for column in values:
        if frame[column].dtype.kind == "f":
            raw = frame[column].to_numpy()
            clean[column] = np.where(np.isfinite(raw), raw, None)
    if body.layout == "nested":
        m, n = len(body.origins), len(body.destinations)
        document["origins"] = frame["origin"].to_numpy()[::n].tolist()
        document["destinations"] = frame["destination"].to_numpy()[:n].tolist()
        document["values"] = {c: clean[c].to_numpy().reshape(m, n).tolist() for c in values}
    else:
        document["pairs"] = clean.to_dict(orient="records")
    return document


def _geojson_with_model(document: bytes, served: Served) -> Response:
    parsed = json.loads(document)
    parsed["model"] = _model_ref(served)
    parsed["time_zone"] = served.tz
    return Response(json.dumps(parsed, allow_nan=False), media_type=GEOJSON)


def _one_place(served: Served, origin: str | None, origin_zone: str | None, name: str) -> Place:
    from vrvm.api.schemas import PointIn

    if (origin is None) == (origin_zone is None):
        raise FieldError(["query", name], f"give either {name}=lat,lon or {name}_zone=ID")
    if origin_zone is not None:
        return place_of(served.area, PointIn(zone=origin_zone), ["query", f"{name}_zone"])
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

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        # FastAPI's shape without echoing the input back (coordinates are personal data)
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": errors}, status_code=422)

    # ------------------------------------------------------------------ health
    @app.get("/healthz", tags=["health"], summary="The process answers")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], summary="A model is loaded and answers")
    async def readyz():
        live_model: LiveModel = state["live"]
        if live_model is None or not live_model.ready:
            reason = None if live_model is None else live_model.last_error
            return JSONResponse(
                {"status": "not ready", "reason": reason or "no model loaded yet"},
                status_code=503,
            )
        document = {"status": "ready", "model": _model_ref(live_model.current())}
        if live_model.last_error:
            document["warning"] = live_model.last_error
        return document

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(TokenCheck(settings.token))])

    # ------------------------------------------------------------------ models
    @v1.get("/models", tags=["models"], summary="The model versions and which one answers")
    def models() -> dict:
        now = served()
        versions = [] if settings.home is None else version_records(settings.home)
        return {"serving": _model_ref(now), "versions": versions}

    @v1.get("/models/active", tags=["models"], summary="The model that answers now")
    def active_model() -> dict:
        now = served()
        model = now.model
        return {
            **_model_ref(now),
            "trained_on": data_description(model),
            "n_members": len(model.members_),
            "relevance_vectors": int(sum(m.n_relevance_ for m in model.members_)),
            "zones": {"kind": now.area.kind, "count": len(now.area.grid)},
        }

    @v1.get("/zones", tags=["models"], summary="The served model's zones")
    def zones() -> dict:
        now = served()
        grid = now.area.grid
        table = grid[["zone", "label", "lat", "lon", "n_points"]].rename(
            columns={"n_points": "trip_ends"}
        )
        return {
            "model": _model_ref(now),
            "kind": now.area.kind,
            "zones": table.astype({"zone": str}).to_dict(orient="records"),
        }

    # ------------------------------------------------------------------ predict
    @v1.post(
        "/predict",
        tags=["predict"],
        summary="Travel-time distributions of trips",
        response_model=PredictResponse,
    )
    async def predict(body: PredictRequest):
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
        return JSONResponse({"model": _model_ref(used), "time_zone": used.tz, "results": results})

    @v1.post(
        "/matrix",
        tags=["predict"],
        summary="Every origin to every destination at one departure time",
        responses={
            200: {
                "content": {
                    "application/json": {},
                    "text/csv": {},
                    "application/vnd.apache.parquet": {},
                }
            }
        },
    )
    def matrix(body: MatrixRequest, request: Request):
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
        return JSONResponse(_matrix_json(frame, body, now, stamp))

    # ------------------------------------------------------------------ maps
    @v1.get(
        "/reach",
        tags=["maps"],
        summary="Reach map: P(arrive within t) and the median time to every zone",
        response_class=Response,
        responses={200: {"content": {GEOJSON: {}}}},
    )
    def reach(
        within: Annotated[float, Query(description="The time t in seconds.")],
        origin: Annotated[str | None, Query(description="'lat,lon' in degrees.")] = None,
        origin_zone: Annotated[str | None, Query(description="A zone id instead.")] = None,
        depart: Annotated[
            Departure | None, Query(description="ISO 8601 (not a number); default now.")
        ] = None,
    ):
        now = served()
        place = _one_place(now, origin, origin_zone, "origin")
        stamp = departure(depart, now.tz, ["query", "depart"])
        minutes = _within_min(within)
        grid = coverage_svc.coverage_grid(now.model, now.area, place, stamp, minutes)
        document = coverage_svc.coverage_geojson(
            grid, place, stamp, minutes, synthetic=now.synthetic
        )
        return _geojson_with_model(document, now)

    @v1.get(
        "/isochrone",
        tags=["maps"],
        summary="Probability isochrones: where P(T <= t) >= p",
        response_class=Response,
        responses={200: {"content": {GEOJSON: {}}}},
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
    ):
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
        return _geojson_with_model(document, now)

    @v1.post(
        "/coverage",
        tags=["maps"],
        summary="Fleet coverage: P(some base arrives within t) in every zone",
        response_class=Response,
        responses={200: {"content": {GEOJSON: {}}}},
    )
    def coverage(body: CoverageRequest):
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
        return _geojson_with_model(document, now)

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
