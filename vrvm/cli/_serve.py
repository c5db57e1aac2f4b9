"""``vrvm serve``: the HTTP API (``docs/api.md``) on uvicorn.

Serves the active model of a data home (``--home``, default ``$VRVM_HOME`` or
``./.vrvm``), following it as new versions are published, or one model directory
given as an argument. A home without any model first gets the demo model of
Synthetica, the synthetic city, as the dashboard's first start does. Bound to
127.0.0.1 unless ``--host`` says otherwise; the bearer token, when wanted, comes from
``VRVM_API_TOKEN``. Logs go to stderr: the model served and every swap, one line per
request (method, path without its query string, status, time), never a body.

A read-only home (``--read-only``, ``VRVM_READ_ONLY=1``, a read-only file system or a
folder without write permission: :func:`vrvm.trips.home.read_only_reason`) is served
as committed, and nothing is written in it: no healing (what a crash left is reported
on stderr), no lock file, no cache (derived zones are kept in memory).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
from pathlib import Path
from typing import IO

from vrvm.services.access.settings import API_TOKEN_ENV as TOKEN_ENV
from vrvm.services.access.settings import api_token
from vrvm.services.analyst import demo
from vrvm.services.versions.models import active_model_path, data_home
from vrvm.trips.home import READ_ONLY_ENV, Home

__all__ = ["add_parser", "cmd_serve"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm serve`` on the sub-command parsers ``commands``."""
    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="answer travel-time questions over HTTP (JSON, GeoJSON, CSV, Parquet)",
        description="Run the HTTP API: POST /v1/predict, POST /v1/matrix, GET /v1/reach, "
        "GET /v1/isochrone, POST /v1/coverage, GET /v1/models, GET /healthz, GET /readyz; "
        "interactive docs at /docs. Serves the data home's active model and follows it "
        "when a new version is published, or MODEL_DIR as it is. Set "
        f"{TOKEN_ENV} to require 'Authorization: Bearer <token>' on every endpoint but "
        "the health checks.",
    )
    serve.add_argument("model_dir", nargs="?", metavar="MODEL_DIR", help="a model directory")
    serve.add_argument(
        "--home", metavar="DIR", help="data home to serve (default: $VRVM_HOME or ./.vrvm)"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="server processes, each with the model loaded (default 1; one per core "
        "serves the most requests)",
    )
    serve.add_argument(
        "--max-trips", type=_positive_int, default=1000, help="trips per /v1/predict (1000)"
    )
    serve.add_argument(
        "--max-pairs", type=_positive_int, default=40_000, help="pairs per /v1/matrix (40000)"
    )
    serve.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=1 << 20,
        help="largest request body in bytes (1048576)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="URL",
        help="allow browsers on this origin (repeat for several; default: none)",
    )
    serve.add_argument(
        "--check-every",
        type=_seconds,
        default=1.0,
        metavar="SECONDS",
        help="how often to look for a newly published model (1 s)",
    )
    serve.add_argument(
        "--no-docs", action="store_true", help="do not serve /docs, /redoc and the schema"
    )
    serve.add_argument(
        "--read-only",
        action="store_true",
        help=f"never write the data home (as {READ_ONLY_ENV}=1): serve what is committed, "
        "report instead of repairing what a crash left (a home that cannot be written "
        "is served so anyway)",
    )
    serve.set_defaults(handler=cmd_serve)
    return serve


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ensure_model(home: Path, stderr: IO[str], quiet: bool) -> None:
    """A home without a model gets the demo model first (as the dashboard's first start);
    a read-only one is served as it is (said on stderr)."""
    reason = Home(home).read_only_reason()
    if reason is not None and not quiet:
        stderr.write(f"vrvm serve: {home} is served read-only ({reason}): nothing is written\n")
    if active_model_path(home) is not None:
        return
    if reason is not None:
        raise ValueError(
            f"no model is active in {home}, which is read-only ({reason}): publish a model "
            "there first, or serve a writable home"
        )
    if not quiet:
        stderr.write(
            f"vrvm serve: no model in {home}: building the demo model on Synthetica, a "
            "SYNTHETIC city (once)\n"
        )
    demo.prepare_home(home)
    demo.ensure_demo_model(home, demo.demo_settings())


def cmd_serve(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run the server until interrupted."""
    try:  # the API's own dependencies (the "api" extra), only for this command
        from vrvm.api.app import ApiSettings
        from vrvm.api.server import serve
    except ImportError as exc:
        raise ValueError(
            f"vrvm serve needs FastAPI and uvicorn ({exc}): "
            "python3 -m pip install 'vrvm[api]' (or -e '.[api]' in a checkout)"
        ) from None

    if args.model_dir is not None and args.home is not None:
        raise ValueError("give a MODEL_DIR or --home, not both")
    token = api_token()  # a blank or malformed token refuses to start, before any write
    if args.read_only:  # the environment reaches every server process
        os.environ[READ_ONLY_ENV] = "1"
    home = None
    if args.model_dir is None:
        home = Path(args.home).expanduser() if args.home else data_home()
        _ensure_model(home, stderr, args.quiet)
    settings = ApiSettings(
        home=home,
        model_dir=None if args.model_dir is None else Path(args.model_dir),
        token=token,
        max_body_bytes=args.max_body_bytes,
        max_trips=args.max_trips,
        max_pairs=args.max_pairs,
        cors_origins=tuple(args.cors_origin),
        check_every_s=args.check_every,
        docs=not args.no_docs,
        log_level="WARNING" if args.quiet else "INFO",
    )
    if not _loopback(args.host) and settings.token is None:
        stderr.write(
            f"vrvm serve: warning: listening on {args.host} without a token: anyone who "
            f"can reach this machine can query the model (set {TOKEN_ENV})\n"
        )
    level = logging.WARNING if args.quiet else logging.INFO
    logging.getLogger("vrvm").setLevel(level)
    if not args.quiet:
        stderr.write(
            f"vrvm serve: http://{args.host}:{args.port} (docs: /docs; stop with Ctrl+C)\n"
        )
        stderr.flush()
    options = {
        "host": args.host,
        "port": args.port,
        "log_level": "warning" if args.quiet else "info",
        "access_log": False,  # its lines hold query strings, which hold coordinates
        "server_header": False,
        "timeout_graceful_shutdown": 10,
        "log_config": None,  # keep the CLI's logging (stderr)
    }
    serve(settings, workers=args.workers, **options)
    return 0
