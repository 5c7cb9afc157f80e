"""CORS from ``[cors]``: oslo.middleware's CORS filter, applied to the ASGI responses.

The options are oslo.middleware's own (``allowed_origin``, ``allow_credentials``,
``expose_headers``, ``max_age``, ``allow_methods``, ``allow_headers``), registered on
``app.state.conf`` by its ``CORS`` filter, which also decides every header: this middleware
runs the application, hands the response's status and headers to ``CORS.process_response``
(oslo.middleware's public filter method) with the request's headers, and sends what it returns.
So a preflight ``OPTIONS`` is answered 200 with the allowed origin, methods and headers (also
for a path the app would answer 405), a request from an allowed ``Origin`` gets
``Access-Control-Allow-Origin``, and other origins get no CORS header.

Defaults are upstream Placement's (``placement.wsgi._set_middleware_defaults``, applied with
oslo.middleware's ``cors.set_defaults`` before the file is read; ``set_middleware_defaults``
here): ``allow_headers`` X-Auth-Token, X-Openstack-Request-Id, X-Identity-Status, X-Roles,
X-Service-Catalog, X-User-Id, X-Tenant-Id, OpenStack-API-Version; ``expose_headers``
X-Auth-Token, X-Openstack-Request-Id, X-Subject-Token, X-Service-Token, OpenStack-API-Version;
``allow_methods`` GET, PUT, POST, DELETE, PATCH. So with only ``allowed_origin`` set, a browser
client sending ``x-auth-token`` and ``openstack-api-version`` passes its preflight and reads
``openstack-api-version`` and ``x-openstack-request-id`` from the answers. The file's values,
when given, replace these lists.

Without ``[cors] allowed_origin`` the middleware is not installed (``cors_middleware`` returns
``None``): the service behaves as without CORS (``OPTIONS`` answers 405).
"""

from __future__ import annotations

from typing import Any

import webob
from oslo_config import cfg
from oslo_middleware import cors
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "ALLOW_HEADERS",
    "ALLOW_METHODS",
    "EXPOSE_HEADERS",
    "CORSMiddleware",
    "cors_filter",
    "set_middleware_defaults",
]

ALLOW_HEADERS = [
    "X-Auth-Token",
    "X-Openstack-Request-Id",
    "X-Identity-Status",
    "X-Roles",
    "X-Service-Catalog",
    "X-User-Id",
    "X-Tenant-Id",
    "OpenStack-API-Version",
]
EXPOSE_HEADERS = [
    "X-Auth-Token",
    "X-Openstack-Request-Id",
    "X-Subject-Token",
    "X-Service-Token",
    "OpenStack-API-Version",
]
ALLOW_METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH"]


def set_middleware_defaults() -> None:
    """Upstream Placement's ``[cors]`` defaults (``ALLOW_HEADERS``, ``EXPOSE_HEADERS``,
    ``ALLOW_METHODS``) through oslo.middleware's ``cors.set_defaults``, which changes the
    defaults of its option objects for the process (as upstream does; the sample config
    generator shows them when this is its ``oslo.config.opts.defaults`` hook)."""
    cors.set_defaults(
        allow_headers=ALLOW_HEADERS, expose_headers=EXPOSE_HEADERS, allow_methods=ALLOW_METHODS
    )


def cors_filter(conf: cfg.ConfigOpts) -> cors.CORS | None:
    """oslo.middleware's CORS filter configured from ``conf``'s ``[cors]``; ``None`` when no
    origin is allowed (CORS off)."""
    set_middleware_defaults()
    conf.register_opts(cors.CORS_OPTS, "cors")
    if not conf.cors.allowed_origin:
        return None
    return cors.CORS(None, conf)


class CORSMiddleware:
    """ASGI middleware applying ``filter`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, filter: cors.CORS) -> None:
        self.app = app
        self.filter = filter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Requests without an ``Origin`` header pass through untouched."""
        if scope["type"] != "http" or not any(k == b"origin" for k, _v in scope["headers"]):
            await self.app(scope, receive, send)
            return
        request = webob.Request.blank(
            scope["path"],
            method=scope["method"],
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]],
        )
        replaced: dict[str, Any] = {}

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                response = webob.Response(status=message["status"])
                response.headerlist = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]
                ]
                result = self.filter.process_response(response, request)
                if result is not response:  # a preflight answered by the filter itself
                    replaced["body"] = result.body
                    result.headers["Content-Length"] = str(len(result.body))
                message = {
                    "type": "http.response.start",
                    "status": result.status_code,
                    "headers": [
                        (k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in result.headerlist
                    ],
                }
            elif message["type"] == "http.response.body" and "body" in replaced:
                if message.get("more_body"):
                    return
                message = {"type": "http.response.body", "body": replaced["body"]}
            await send(message)

        await self.app(scope, receive, send_with_cors)
