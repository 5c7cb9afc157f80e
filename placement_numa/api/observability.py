"""The outermost ASGI middleware but the proxy headers: request ids, the access log, request
metrics, ``/metrics``.

For every HTTP request it

1. assigns the request ids as oslo.middleware's ``request_id`` middleware does: a local
   ``req-<uuid4>`` (oslo.context's ``generate_request_id``) and, when the caller sent
   ``X-Openstack-Request-Id`` matching oslo.middleware's ``ID_FORMAT`` (``req-<uuid>``), that
   value as the global request id (anything else is dropped, as oslo does). They go to
   ``scope["state"]`` (``request_id``, ``global_request_id``) and into a ``RequestContext`` in
   ``observability.logs.LOG_CONTEXT``, so every log line of the request carries
   ``[<global or None> <local> <user identity>]`` (``PlacementMiddleware`` replaces it with the
   authenticated caller's context). Every response carries ``x-openstack-request-id: <local>``.
   oslo.middleware's filter itself is WSGI and wraps the whole response, so it cannot run here;
   its regex and generator are used, so the semantics are the same;
2. logs ``Starting request: <client> "<METHOD> <uri>"`` at DEBUG, as upstream's ``RequestLog``;
3. answers ``/metrics`` itself (see ``_serve_metrics``): to a caller allowed by the policy rule
   ``placement:metrics`` (admin by default; authenticated as the API is), or to
   ``Authorization: Bearer <[metrics] token>`` when a token is configured;
4. after the response: counts the request and its latency by route template and writes one
   access line (logger ``placement_numa.access``, INFO), upstream Placement's line plus the
   time taken::

       127.0.0.1 "GET /resource_providers?name=cn1" status: 200 len: 312 microversion: 1.39
       time: 0.004211

   (one line in the log). ``len`` is the content length, or the bytes sent when there is
   none; ``time`` is in seconds. With ``use_json`` the same facts are keys of the line's
   ``extra``: ``client``, ``method``, ``path``, ``route``, ``status``, ``length``,
   ``microversion``, ``duration_ms``, beside oslo.log's ``context``.
"""

from __future__ import annotations

import hmac
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oslo_context.context import RequestContext, generate_request_id
from oslo_middleware import request_id as oslo_request_id
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_numa.api.responses import error_payload
from placement_numa.errors import PlacementError
from placement_numa.observability.logs import LOG_CONTEXT
from placement_numa.observability.metrics import CONTENT_TYPE_LATEST, Metrics
from placement_numa.policies import METRICS

if TYPE_CHECKING:
    from fastapi import FastAPI

    from placement_numa.settings import Settings

__all__ = [
    "ObservabilityMiddleware",
    "METRICS_PATH",
    "install_observability",
    "global_request_id",
]

METRICS_PATH = "/metrics"
ACCESS_LOG = logging.getLogger("placement_numa.access")
LOG = logging.getLogger("placement_numa.request")
_ID_FORMAT = re.compile(oslo_request_id.ID_FORMAT)
_INBOUND = oslo_request_id.INBOUND_HEADER.lower().encode()
_RESPONSE_HEADER = oslo_request_id.HTTP_RESP_HEADER_REQUEST_ID.encode()


def global_request_id(scope: Scope) -> str | None:
    """The caller's ``X-Openstack-Request-Id`` when it is a valid ``req-<uuid>`` (oslo's
    ``ID_FORMAT``, lower-case hex), else ``None``."""
    for name, value in scope["headers"]:
        if name.lower() == _INBOUND:
            text = value.decode("latin-1")
            return text if _ID_FORMAT.match(text) else None
    return None


class ObservabilityMiddleware:
    """See the module docstring. ``metrics`` ``None``: no metrics and no ``/metrics``."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics | None,
        metrics_token: str | None = None,
        access_log: bool = True,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.token = metrics_token
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: non-HTTP scopes pass through untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = generate_request_id()
        global_id = global_request_id(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state["global_request_id"] = global_id
        context = RequestContext(
            request_id=request_id, global_request_id=global_id, overwrite=False
        )
        token = LOG_CONTEXT.set(context)
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug('Starting request: %s "%s %s"', _client(scope), scope["method"], _uri(scope))
        started = time.perf_counter()
        response: dict[str, Any] = {"status": 500, "length": None, "sent": 0}

        async def send_observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = int(message["status"])
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _value in headers}
                if _RESPONSE_HEADER not in names:
                    headers.append((_RESPONSE_HEADER, request_id.encode()))
                    message = {**message, "headers": headers}
                for name, value in headers:
                    if name.lower() == b"content-length":
                        response["length"] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                response["sent"] += len(message.get("body", b""))
            await send(message)

        if self.metrics is not None and scope["path"] == METRICS_PATH:
            try:  # a scrape is logged, not counted
                await self._serve_metrics(scope, send_observed, request_id)
                self._record(scope, response["status"], response, time.perf_counter() - started)
            finally:
                LOG_CONTEXT.reset(token)
            return
        try:
            await self.app(scope, receive, send_observed)
        except BaseException:
            # LOG_CONTEXT left set: Starlette's error handler logs the failure outside this
            # middleware, in this request's own task, and its line should carry the ids too
            self._record(scope, 500, response, time.perf_counter() - started, count=True)
            raise
        self._record(scope, response["status"], response, time.perf_counter() - started, count=True)
        LOG_CONTEXT.reset(token)

    def _record(
        self,
        scope: Scope,
        status: int,
        response: dict[str, Any],
        seconds: float,
        *,
        count: bool = False,
    ) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method = scope["method"]
        if self.metrics is not None and count:
            self.metrics.http_requests.labels(method, route, str(status)).inc()
            self.metrics.http_duration.labels(method, route).observe(seconds)
        if not (self.access_log and ACCESS_LOG.isEnabledFor(logging.INFO)):
            return
        state = scope.get("state", {})
        version = state.get("microversion")
        microversion = str(version) if version is not None else "-"
        length = response["length"] if response["length"] is not None else str(response["sent"])
        client = _client(scope)
        uri = _uri(scope)
        ACCESS_LOG.info(
            '%s "%s %s" status: %d len: %s microversion: %s time: %.6f',
            client,
            method,
            uri,
            status,
            length,
            microversion,
            seconds,
            extra={
                "context": state.get("credentials") or LOG_CONTEXT.get(),
                "extra": {
                    "client": client,
                    "method": method,
                    "path": uri,
                    "route": route,
                    "status": status,
                    "length": int(length) if length.isdigit() else None,
                    "microversion": microversion,
                    "duration_ms": round(seconds * 1000, 3),
                },
            },
        )

    async def _serve_metrics(self, scope: Scope, send: Send, request_id: str) -> None:
        """``GET|HEAD /metrics``: the bearer token when configured and given, else the caller's
        token (authenticated as the API: 401) and the ``placement:metrics`` rule (403)."""
        assert self.metrics is not None
        if self.token is None or not _bearer_matches(scope, self.token):
            try:
                await _authorize_metrics(scope, request_id)
            except PlacementError as error:
                body, media_type = error_payload(error, request_id, None, None)
                await _plain(send, error.status, body, media_type, request_id, error.headers)
                return
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"GET only\n", "text/plain", request_id)
            return
        body = self.metrics.render()
        await _plain(
            send, 200, b"" if scope["method"] == "HEAD" else body, CONTENT_TYPE_LATEST, request_id
        )


async def _authorize_metrics(scope: Scope, request_id: str) -> None:
    """Authenticate with the app's authenticator and check ``placement:metrics``. Raises
    ``Unauthorized`` (401), ``Forbidden`` (403) or ``KeystoneUnavailable`` (503)."""
    from placement_numa.api.policy import authorize

    state = scope["app"].state
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    context = await state.authenticator.authenticate(headers, request_id)
    context.global_request_id = scope["state"].get("global_request_id")
    LOG_CONTEXT.set(context)
    target = {"project_id": context.project_id, "user_id": context.user_id}
    authorize(state.enforcer, context, METRICS, target)


def install_observability(app: FastAPI, settings: Settings) -> None:
    """``app.state.metrics`` (``None`` when disabled; the candidate engine and the database
    pool report to it) and the middleware. Call it after the other middleware of
    ``create_app`` (only the proxy headers go outside). Logging is a process's concern, set
    up by the entry points (``service_logging.setup_service_logging``), not here."""
    from placement_numa.observability.fleet_gauges import FleetNumaCollector
    from placement_numa.observability.pool import observe_pool

    metrics = Metrics() if settings.metrics_enabled else None
    app.state.metrics = metrics
    if metrics is not None:
        observe_pool(app.state.database.engine, metrics)

        def snapshot() -> Any:
            return _engine(app).snapshot()

        per_host = settings.metrics_per_host_series
        metrics.add_collector(FleetNumaCollector(snapshot, per_host=per_host))
        if settings.metrics_flavors_file is not None:
            _catalogue_gauges(app, metrics, settings.metrics_flavors_file, snapshot)
    app.add_middleware(
        ObservabilityMiddleware,
        metrics=metrics,
        metrics_token=settings.metrics_token,
        access_log=settings.access_log,
    )


def _catalogue_gauges(
    app: FastAPI, metrics: Metrics, path: Path, snapshot: Callable[[], Any]
) -> None:
    """The flavor capacity gauges of the catalogue in ``path`` (``[metrics] flavors_file``);
    a file that cannot be read is one warning line and no such gauges."""
    from placement_numa.api.cell_index_dep import cell_index_for_state
    from placement_numa.api.numa_body import aliases_for
    from placement_numa.observability.capacity_gauges import CatalogueCollector
    from placement_numa.services.flavor_catalogue import (
        CatalogueError,
        catalogue_figures,
        load_catalogue,
    )

    try:
        flavors = load_catalogue(path)
    except CatalogueError as exc:
        LOG.warning("[metrics] flavors_file: %s; no flavor capacity gauges", exc)
        return

    def compute() -> Any:
        fleet = snapshot()
        index = cell_index_for_state(app.state).get(app.state.database, fleet.revision)
        asks = [replace(a, aliases=aliases_for(app.state, a.flavor)) for a in flavors]
        return catalogue_figures(_engine(app), index, asks)

    def revision() -> int | None:
        fleet = snapshot()
        return None if fleet is None else int(fleet.revision)

    collector = CatalogueCollector(revision, compute)
    app.state.catalogue_collector = collector
    metrics.add_collector(collector)


def _engine(app: FastAPI) -> Any:
    """The app's candidate engine (created on first use)."""
    engine = getattr(app.state, "candidate_engine", None)
    if engine is None:
        from placement_numa.api.engine_dep import engine_for_state

        engine = engine_for_state(app.state)
    return engine


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "-"


def _uri(scope: Scope) -> str:
    path: str = scope["path"]
    query = scope.get("query_string", b"")
    return path + "?" + query.decode("latin-1") if query else path


def _bearer_matches(scope: Scope, token: str) -> bool:
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _sep, given = value.decode("latin-1").partition(" ")
            return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)
    return False


async def _plain(
    send: Send,
    status: int,
    body: bytes,
    content_type: str,
    request_id: str,
    extra: dict[str, str] | None = None,
) -> None:
    headers: list[Any] = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (_RESPONSE_HEADER, request_id.encode()),
        *((k.lower().encode(), v.encode()) for k, v in (extra or {}).items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
