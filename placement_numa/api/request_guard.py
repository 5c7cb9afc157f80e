"""ASGI middleware that bounds what a request may send before any handler runs.

For every HTTP request it

1. refuses a query string longer than ``max_query_string_length`` bytes (400
   ``placement.limit.query_length``) and a NUL character (``%00``) in the path or query string
   (400 ``placement.query.bad_value``: no Placement value may hold one; PostgreSQL cannot store
   it);
2. refuses a ``content-length`` above ``max_request_body_size`` at once (413
   ``placement.limit.body_size``, oslo.middleware's ``RequestBodySizeLimiter`` convention), and
   stops reading a body without one (chunked) as soon as it grows past the limit;
3. gives up on a body that stops arriving: each chunk must come within ``body_timeout`` seconds
   (408 ``placement.request.timeout``), so a promised body that never arrives does not hold a
   worker.

The body limit is oslo.middleware's ``sizelimit`` (``RequestBodySizeLimiter``) semantics under
its option name, ``[oslo_middleware] max_request_body_size``, kept as our own code on purpose:
oslo's filter is WSGI (it wraps ``wsgi.input`` in a ``LimitingReader``, which an ASGI receive
channel is not) and answers webob's text/HTML 413, where a Placement client expects the JSON
error body with ``placement.limit.body_size``; and the byte count here also covers chunked
bodies and the per-chunk timeout (3), which oslo's filter does not have. The default stays
1 MiB (oslo's is 112 KiB), the value this service shipped with, so an upgrade refuses no body
it accepted before.

It sits inside ``PlacementMiddleware`` (request id, microversion and common headers are set).
Errors raised while the handler reads the body reach the app's exception handlers; errors found
before are rendered here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_numa.api import microversion as mv
from placement_numa.api.responses import error_payload
from placement_numa.errors import LimitExceeded, PayloadTooLarge, PlacementError, QueryBadValue

__all__ = ["RequestGuardMiddleware", "RequestTimeout"]


class RequestTimeout(PlacementError):
    """408: the client stopped sending its request body."""

    status = 408
    title = "Request Timeout"
    default_code = "placement.request.timeout"


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"Request is too large: the body exceeds {limit} bytes"
        " ([oslo_middleware] max_request_body_size)."
    )


class RequestGuardMiddleware:
    """See the module docstring. ``body_timeout`` in seconds (``None``: no timeout)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_size: int,
        max_query_length: int,
        body_timeout: float | None,
    ) -> None:
        self.app = app
        self.max_body_size = max_body_size
        self.max_query_length = max_query_length
        self.body_timeout = body_timeout

    def _check_head(self, scope: Scope) -> None:
        query: bytes = scope.get("query_string", b"")
        if len(query) > self.max_query_length:
            raise LimitExceeded(
                f"The query string is {len(query)} bytes long; at most {self.max_query_length}"
                " are allowed ([placement] max_query_string_length).",
                code="placement.limit.query_length",
            )
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
        if b"%00" in query or b"\x00" in query or b"%00" in raw_path or "\x00" in scope["path"]:
            raise QueryBadValue("NUL characters (%00) are not allowed in the URL.")
        for key, value in scope["headers"]:
            if key.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return  # PlacementMiddleware answers a malformed length
                if declared > self.max_body_size:
                    raise _too_large(self.max_body_size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: non-HTTP scopes pass through untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_head(scope)
        except PlacementError as error:
            await _send_error(scope, send, error)
            return
        received = 0
        body_done = False

        async def guarded_receive() -> Message:
            nonlocal received, body_done
            if self.body_timeout is None or body_done:
                message = await receive()
            else:
                try:
                    message = await asyncio.wait_for(receive(), self.body_timeout)
                except TimeoutError:
                    raise RequestTimeout(
                        f"The request body did not arrive within {self.body_timeout:g} s"
                        " (body_read_timeout)."
                    ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.max_body_size:
                    raise _too_large(self.max_body_size)
            return message

        await self.app(scope, guarded_receive, send)


async def _send_error(scope: Scope, send: Send, error: PlacementError) -> None:
    state = scope.get("state", {})
    version: mv.Microversion | None = state.get("microversion")
    accept = None
    for key, value in scope["headers"]:
        if key.lower() == b"accept":
            accept = value.decode("latin-1")
    body, media_type = error_payload(error, state.get("request_id"), version, accept)
    headers: list[Any] = [
        (b"content-type", media_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if isinstance(error, PayloadTooLarge):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
