"""Unexpected errors answered on a connection that stays usable.

Bad input is answered 4xx by the request models and the handlers in
:mod:`vrvm.api.app`; this is the net under them. Starlette's own last resort sends a
500 and then re-raises the exception, and uvicorn, seeing an exception after the
answer started, closes the connection: a client that reuses its keep-alive connection
then gets a reset on its *next*, valid, request (issue 32: a departure in year 9999
did exactly that). :class:`InternalErrors` instead answers the 500 itself, as JSON,
logs the traceback, and returns normally, so the connection stays open. Only when
part of an answer was already sent is the exception re-raised, because closing the
connection is then the only way to tell the client the answer is incomplete.
"""

from __future__ import annotations

import json
import logging

__all__ = ["INTERNAL_ERROR", "InternalErrors"]

logger = logging.getLogger("vrvm.api")

INTERNAL_ERROR = "internal error: the server could not answer this request (see its log)"
"""The ``detail`` of a 500 answer; never the exception's text, which may hold input."""


class InternalErrors:
    """ASGI middleware: an unexpected exception becomes a JSON 500; the connection stays."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def watched_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception:
            # the path without its query string, which may hold coordinates
            logger.exception("%s %s failed", scope.get("method", "?"), scope.get("path", "?"))
            if started:
                raise
            body = json.dumps({"detail": INTERNAL_ERROR}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
