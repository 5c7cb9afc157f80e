"""``[oslo_middleware] enable_proxy_headers_parsing``: oslo.middleware's ``HTTPProxyToWSGI``,
applied to ASGI scopes.

Behind a TLS-terminating proxy the service must see the client's scheme, host and address, not
the proxy's. As in upstream Placement (whose pipeline runs ``HTTPProxyToWSGI`` first), when the
option is true the ``Forwarded`` header (RFC 7239; the first proxy's ``proto``, ``host`` and
``for``) or else ``X-Forwarded-Proto``, ``X-Forwarded-Host`` and ``X-Forwarded-For`` are
believed, from any peer (the operator says that only the proxy reaches the service), and
``X-Forwarded-Prefix`` is prepended to the script name (``root_path``). When false (the
default) they are ignored, whoever sends them: ``placement-numa serve`` runs uvicorn without
its own proxy-header handling, so this option alone decides.

The decisions are oslo.middleware's: this middleware builds the WSGI environ of the request's
headers, runs ``HTTPProxyToWSGI.process_request`` on it, and copies ``wsgi.url_scheme``,
``HTTP_HOST``, ``REMOTE_ADDR`` and ``SCRIPT_NAME`` back into the scope (``scheme``, the
``host`` header, ``client``, ``root_path``), which the access log, redirects and
``request.url`` read.
"""

from __future__ import annotations

from typing import Any

import webob
from oslo_config import cfg
from oslo_middleware import http_proxy_to_wsgi
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ProxyHeadersMiddleware", "proxy_filter"]

_PROXY_HEADERS = frozenset(
    {b"forwarded", b"x-forwarded-proto", b"x-forwarded-host", b"x-forwarded-for"}
    | {b"x-forwarded-prefix"}
)


def proxy_filter(conf: cfg.ConfigOpts) -> http_proxy_to_wsgi.HTTPProxyToWSGI | None:
    """oslo.middleware's filter on ``conf`` (it registers ``[oslo_middleware]
    enable_proxy_headers_parsing``); ``None`` when the option is false."""
    proxy = http_proxy_to_wsgi.HTTPProxyToWSGI(None, conf)
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return None
    return proxy


class ProxyHeadersMiddleware:
    """ASGI middleware applying ``proxy`` (see the module docstring); outermost."""

    def __init__(self, app: ASGIApp, proxy: http_proxy_to_wsgi.HTTPProxyToWSGI) -> None:
        self.app = app
        self.proxy = proxy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Requests without a proxy header pass through untouched."""
        if scope["type"] in ("http", "websocket") and any(
            name.lower() in _PROXY_HEADERS for name, _value in scope["headers"]
        ):
            scope = self._apply(scope)
        await self.app(scope, receive, send)

    def _apply(self, scope: Scope) -> Scope:
        client = scope.get("client") or ("", 0)
        environ: dict[str, Any] = {
            "REQUEST_METHOD": scope.get("method", "GET"),
            "SCRIPT_NAME": scope.get("root_path", ""),
            "PATH_INFO": scope["path"],
            "wsgi.url_scheme": scope.get("scheme", "http"),
            "REMOTE_ADDR": client[0],
        }
        for name, value in scope["headers"]:
            key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
            text = value.decode("latin-1")
            environ[key] = f"{environ[key]},{text}" if key in environ else text
        before = dict(environ)
        self.proxy.process_request(webob.Request(environ))
        if environ == before:
            return scope
        scope = dict(scope)
        scope["scheme"] = environ["wsgi.url_scheme"]
        scope["root_path"] = environ["SCRIPT_NAME"]
        if environ["REMOTE_ADDR"] != client[0]:
            scope["client"] = (environ["REMOTE_ADDR"], 0)
        if environ.get("HTTP_HOST") != before.get("HTTP_HOST"):
            host = environ["HTTP_HOST"].encode("latin-1")
            scope["headers"] = [
                *((k, v) for k, v in scope["headers"] if k.lower() != b"host"),
                (b"host", host),
            ]
        return scope
