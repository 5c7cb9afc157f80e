"""The outermost ASGI middleware: request id, authentication, microversion, common headers.

For every HTTP request it

1. assigns ``req-<uuid4>`` (``scope["state"]["request_id"]``, header ``x-openstack-request-id``);
2. authenticates (``placement_numa.api.auth``): 401/403 in Placement's error format;
3. negotiates the microversion (``scope["state"]["microversion"]``): 400/406 on a bad header;
4. refuses an ``Accept`` header that excludes JSON with 406;
5. adds ``openstack-api-version: placement X.Y`` and ``vary: openstack-api-version`` to responses.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_numa.api import microversion as mv
from placement_numa.api.auth import authenticate
from placement_numa.api.responses import error_body
from placement_numa.errors import NotAcceptable, PlacementError

__all__ = ["PlacementMiddleware"]

_JSON_ACCEPT = ("application/json", "application/*", "*/*")


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in _JSON_ACCEPT:
            return True
    return False


class PlacementMiddleware:
    """See the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = f"req-{uuid.uuid4()}"
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        extra: list[tuple[bytes, bytes]] = [(b"x-openstack-request-id", request_id.encode())]
        version: mv.Microversion | None = None
        try:
            state["role"] = authenticate(scope["path"], headers)
            version = mv.parse_header(headers)
            state["microversion"] = version
            extra.append((b"openstack-api-version", f"{mv.SERVICE_TYPE} {version}".encode()))
            extra.append((b"vary", b"openstack-api-version"))
            if not _accepts_json(headers.get("accept")):
                raise NotAcceptable("Only application/json is provided")
        except PlacementError as error:
            await _send_error(send, error, request_id, version, extra)
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
) -> None:
    body = orjson.dumps(error_body(error, request_id, version))
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
