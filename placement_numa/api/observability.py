"""The outermost ASGI middleware: request ids, the access log, request metrics, ``/metrics``.

For every HTTP request it

1. assigns the request id ``req-<uuid4>`` (``scope["state"]["request_id"]``, which
   ``PlacementMiddleware`` sends as ``x-openstack-request-id``) and sets it in
   ``observability.logs.REQUEST_ID``, so every log line of the request carries it;
2. answers ``GET /metrics`` itself (before authentication) when metrics are enabled: with
   ``metrics_token`` set, only to ``Authorization: Bearer <token>`` (else 401);
3. after the response: counts the request and its latency by route template (``/resource_
   providers/{uuid}``; ``unmatched`` for a path no route has), method and status, and writes
   one access log line (logger ``placement_numa.access``): request id, user, project, method,
   route, status, duration.
"""

from __future__ import annotations

import hmac
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_numa.observability.logs import REQUEST_ID, configure_logging
from placement_numa.observability.metrics import CONTENT_TYPE_LATEST, Metrics

if TYPE_CHECKING:
    from fastapi import FastAPI

    from placement_numa.settings import Settings

__all__ = ["ObservabilityMiddleware", "METRICS_PATH", "install_observability"]

METRICS_PATH = "/metrics"
ACCESS_LOG = logging.getLogger("placement_numa.access")


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
        if self.metrics is not None and scope["path"] == METRICS_PATH:
            await self._serve_metrics(scope, send)
            return
        request_id = f"req-{uuid.uuid4()}"
        scope.setdefault("state", {})["request_id"] = request_id
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        except BaseException:
            # left set: Starlette's error handler logs the failure outside this middleware, in
            # this request's own task, and its line should carry the request id too
            self._record(scope, 500, time.perf_counter() - started)
            raise
        self._record(scope, status, time.perf_counter() - started)
        REQUEST_ID.reset(token)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        method = scope["method"]
        if self.metrics is not None:
            self.metrics.http_requests.labels(method, route, str(status)).inc()
            self.metrics.http_duration.labels(method, route).observe(seconds)
        if self.access_log and ACCESS_LOG.isEnabledFor(logging.INFO):
            credentials = scope.get("state", {}).get("credentials")
            user = getattr(credentials, "user_id", None) or "-"
            project = getattr(credentials, "project_id", None) or "-"
            duration_ms = round(seconds * 1000, 1)
            ACCESS_LOG.info(
                "%s %s %s %s -> %d in %.1f ms (user %s, project %s)",
                method,
                route,
                scope["path"],
                _query(scope),
                status,
                duration_ms,
                user,
                project,
                extra={
                    "user_id": user,
                    "project_id": project,
                    "method": method,
                    "route": route,
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": duration_ms,
                },
            )

    async def _serve_metrics(self, scope: Scope, send: Send) -> None:
        assert self.metrics is not None
        if self.token is not None and not _bearer_matches(scope, self.token):
            await _plain(send, 401, b"metrics need Authorization: Bearer <token>\n", "text/plain")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"GET only\n", "text/plain")
            return
        body = self.metrics.render()
        await _plain(send, 200, b"" if scope["method"] == "HEAD" else body, CONTENT_TYPE_LATEST)


def install_observability(app: FastAPI, settings: Settings) -> None:
    """Logging (request ids, text or JSON), ``app.state.metrics`` (``None`` when disabled;
    the candidate engine and the database pool report to it) and the middleware, outermost.
    Call it last in ``create_app``."""
    from placement_numa.observability.fleet_gauges import FleetNumaCollector
    from placement_numa.observability.pool import observe_pool

    configure_logging(settings.log_level, json_lines=settings.log_json)
    metrics = Metrics() if settings.metrics_enabled else None
    app.state.metrics = metrics
    if metrics is not None:
        observe_pool(app.state.database.engine, metrics)

        def snapshot() -> Any:
            engine = getattr(app.state, "candidate_engine", None)
            if engine is None:
                from placement_numa.api.engine_dep import engine_for_state

                engine = engine_for_state(app.state)
            return engine.snapshot()

        metrics.add_collector(FleetNumaCollector(snapshot))
    app.add_middleware(
        ObservabilityMiddleware,
        metrics=metrics,
        metrics_token=settings.metrics_token,
        access_log=settings.access_log,
    )


def _query(scope: Scope) -> str:
    query = scope.get("query_string", b"")
    return "?" + query.decode("latin-1")[:200] if query else ""


def _bearer_matches(scope: Scope, token: str) -> bool:
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _sep, given = value.decode("latin-1").partition(" ")
            return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)
    return False


async def _plain(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers: list[Any] = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
