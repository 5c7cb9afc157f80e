"""The outermost ASGI middleware: request id, authentication, microversion, common headers.

For every HTTP request it

1. takes the request id the observability middleware assigned (``scope["state"]["request_id"]``;
   a new ``req-<uuid4>`` without it) and sends it as ``x-openstack-request-id``;
2. authenticates with the app's ``Authenticator`` (``placement_numa.api.auth``; the caller's
   ``RequestContext``, with the global request id, in ``scope["state"]["credentials"]`` and in
   ``observability.logs.LOG_CONTEXT`` for the log lines): 401 without a valid token;
3. negotiates the microversion (``scope["state"]["microversion"]``): 400/406 on a bad header;
4. refuses a body without a content type (400);
5. adds ``openstack-api-version: placement X.Y`` and ``vary: openstack-api-version`` to responses.

The ``Accept`` check (406 when JSON is excluded) is a dependency of GET routes
(``api.deps.check_accept``) and the policy check (403) an app-wide dependency
(``api.policy.enforce_policy``), so unknown routes still answer 404 as in Placement.
"""

from __future__ import annotations

from typing import Any

from oslo_context.context import generate_request_id
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_numa.api import microversion as mv
from placement_numa.api.auth import PUBLIC_PATHS, Authenticator
from placement_numa.api.responses import error_payload
from placement_numa.errors import BadRequest, PlacementError
from placement_numa.observability.logs import LOG_CONTEXT

__all__ = ["PlacementMiddleware"]


def _check_content_headers(headers: dict[str, str]) -> None:
    """A body needs a content type (Placement: 400 when content-length > 0 without one)."""
    length = headers.get("content-length")
    if not length:
        return
    try:
        size = int(length)
    except ValueError:
        raise BadRequest("content-length header must be an integer") from None
    if size > 0 and not headers.get("content-type"):
        raise BadRequest("content-type header required when content-length > 0")


class PlacementMiddleware:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: non-HTTP scopes pass through untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        # the observability middleware (outermost) may have assigned it already
        request_id = state.get("request_id") or generate_request_id()
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        state["request_id"] = request_id
        extra: list[tuple[bytes, bytes]] = [(b"x-openstack-request-id", request_id.encode())]
        version: mv.Microversion | None = None
        try:
            if scope["path"] not in PUBLIC_PATHS:
                context = await self.authenticator.authenticate(headers, request_id)
                context.global_request_id = state.get("global_request_id")
                state["credentials"] = context
                LOG_CONTEXT.set(context)  # log lines name the caller from here on
            version = mv.parse_header(headers)
            state["microversion"] = version
            extra.append((b"openstack-api-version", f"{mv.SERVICE_TYPE} {version}".encode()))
            extra.append((b"vary", b"openstack-api-version"))
            _check_content_headers(headers)
        except PlacementError as error:
            await _send_error(send, error, request_id, version, extra, headers.get("accept"))
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _send_error(
    send: Send,
    error: PlacementError,
    request_id: str,
    version: mv.Microversion | None,
    extra: list[tuple[bytes, bytes]],
    accept: str | None,
) -> None:
    body, media_type = error_payload(error, request_id, version, accept)
    headers: list[Any] = [
        (b"content-type", media_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in error.headers.items()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
