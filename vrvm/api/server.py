"""Running the API on uvicorn: one process, or several sharing one listening socket.

With several workers uvicorn binds the socket itself with ``proto`` 0; accepted
connections inherit it and asyncio then leaves Nagle's algorithm on, so every
keep-alive answer waited ~40 ms for the client's delayed ACK (measured: 60 ms per
request instead of 18; uvicorn issue #3149). :class:`TcpConfig` binds a socket that
says ``IPPROTO_TCP``, so asyncio sets ``TCP_NODELAY`` on every connection.
"""

from __future__ import annotations

import os
import socket

import uvicorn
from uvicorn.supervisors import Multiprocess

from vrvm.api.app import SETTINGS_ENV, ApiSettings, create_app

__all__ = ["WORKER_HEALTHCHECK_S", "TcpConfig", "serve"]

WORKER_HEALTHCHECK_S = 60
"""Seconds a worker may take to answer uvicorn's health check before it is killed and
replaced. uvicorn's 5 s is shorter than a worker's start on a busy machine (imports
and the model load: measured > 5 s at a load average of 14 on 2 cores, so every
worker was killed before it served and ``vrvm serve --workers 2`` never became
ready), and a worker killed mid-answer resets its clients' connections."""


class TcpConfig(uvicorn.Config):
    """uvicorn's Config whose listening socket says it is TCP (see the module)."""

    def bind_socket(self) -> socket.socket:
        sock = super().bind_socket()
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.proto == 0:
            sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, sock.detach())
            sock.set_inheritable(True)
        return sock


def serve(settings: ApiSettings, *, workers: int = 1, **options) -> None:
    """Serve until interrupted; ``options`` are uvicorn's (host, port, log_level, ...)."""
    if workers == 1:
        uvicorn.run(create_app(settings), **options)
        return
    # each worker process builds its own app from the settings (never the token)
    os.environ[SETTINGS_ENV] = settings.to_json()
    options.setdefault("timeout_worker_healthcheck", WORKER_HEALTHCHECK_S)
    config = TcpConfig(
        "vrvm.api.app:app_from_environment", factory=True, workers=workers, **options
    )
    try:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    except KeyboardInterrupt:
        pass
