"""What guards the API: a bearer token, a limit on request bodies, quiet access logs.

* **Token.** When :data:`TOKEN_ENV` is set, every endpoint but ``/healthz`` and
  ``/readyz`` requires ``Authorization: Bearer <token>``; the token is compared in
  constant time (:func:`hmac.compare_digest`) and a wrong or missing one is answered
  401 without saying which. Unset, the API is open (bound to 127.0.0.1 by default).
  Set but blank or malformed, it is an error (:func:`vrvm.services.access.settings.api_token`):
  ``vrvm serve`` refuses to start, naming it, and :class:`TokenCheck` refuses a blank
  token, so a blank token never means an open API.
* **Body size.** Bodies longer than the limit are refused with 413 before they are
  read: by their ``Content-Length``, or, when streamed without one, as soon as the
  bytes received pass it.
* **Logs.** Trip coordinates are personal data: the access log line names the method,
  the path *without* its query string (which holds coordinates), the status and the
  time taken, never a body.
"""

from __future__ import annotations

import hmac
import json
import logging
import time

from fastapi import HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from vrvm.services.access.settings import API_TOKEN_ENV as TOKEN_ENV

__all__ = ["TOKEN_ENV", "AccessLog", "BodyLimit", "TokenCheck"]

access_logger = logging.getLogger("vrvm.api.access")


class TokenCheck:
    """A FastAPI dependency: the request carries the bearer token (when one is set).

    Examples
    --------
    >>> TokenCheck("  ")
    Traceback (most recent call last):
    ...
    ValueError: the API token is blank: give a token, or None for an open API
    """

    def __init__(self, token: str | None) -> None:
        if token is not None and not token.strip():  # "" would match a missing header
            raise ValueError("the API token is blank: give a token, or None for an open API")
        self.token = token
        self.scheme = HTTPBearer(auto_error=False, description="The token in " + TOKEN_ENV)

    async def __call__(self, request: Request) -> None:
        if self.token is None:
            return
        credentials: HTTPAuthorizationCredentials | None = await self.scheme(request)
        given = "" if credentials is None else credentials.credentials
        if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            raise HTTPException(
                status_code=401,
                detail="a valid bearer token is required (Authorization: Bearer <token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )


async def _refuse(send, max_bytes: int) -> None:
    body = json.dumps(
        {"detail": f"the request body is larger than the limit of {max_bytes:,} bytes"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``max_bytes`` with 413."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_long = int(value) > self.max_bytes
                except ValueError:
                    too_long = True
                if too_long:
                    return await _refuse(send, self.max_bytes)
        received = 0
        refused = False

        async def counted_receive():
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                received += len(message.get("body", b""))
                if received > self.max_bytes:  # answer now; the app sees the client leave
                    refused = True
                    await _refuse(send, self.max_bytes)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not refused:  # after a refusal, whatever the app answers is dropped
                await send(message)

        await self.app(scope, counted_receive, guarded_send)


class AccessLog:
    """ASGI middleware: one log line per request, without query strings or bodies."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500

        async def watched_send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            access_logger.info(
                "%s %s %d %.1f ms",
                scope.get("method", "?"),
                scope.get("path", "?"),
                status,
                1e3 * (time.perf_counter() - started),
            )
