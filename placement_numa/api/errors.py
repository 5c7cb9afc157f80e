"""Exception handlers: every error the app can produce leaves in Placement's error format.

Domain errors (``placement_numa.errors``) carry their status and code. Starlette's 404/405 for
unknown routes and methods, FastAPI's request validation errors (never a bare 422: they become
400 ``placement.query.bad_value`` or a JSON-schema 400) and unexpected exceptions (500) are
translated here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from placement_numa.api import microversion as mv
from placement_numa.api.responses import error_payload
from placement_numa.errors import (
    BadRequest,
    MethodNotAllowed,
    NotFound,
    PlacementError,
    QueryBadValue,
)

__all__ = ["install_error_handlers", "render_error"]

LOG = logging.getLogger(__name__)


def _leaf_routes(routes: Iterable[Any]) -> Iterator[Any]:
    """Routes with a path, looking inside included routers (none of ours has a prefix)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _leaf_routes(inner.routes)
        elif hasattr(route, "path"):
            yield route


def _allowed_methods(request: Request) -> list[str]:
    """The methods of the route the request's path is, for ``allow`` (HEAD left out).

    A path can match several route templates (``/resource_providers/batch`` matches
    ``/resource_providers/{uuid}`` too); the path is the most specific of them: the template
    with the fewest path parameters, then the most literal characters. Its methods are those of
    every route with that template (one route per method here), in route order.
    """
    scope = {"type": "http", "path": request.url.path, "method": "", "root_path": ""}
    matching = [
        route
        for route in _leaf_routes(request.app.router.routes)
        if route.matches(scope)[0] != Match.NONE
    ]
    if not matching:
        return []
    template = min(
        (route.path for route in matching),
        key=lambda path: (path.count("{"), -len(re.sub(r"\{[^}]*\}", "", path))),
    )
    methods: list[str] = []
    for route in matching:
        if route.path != template:
            continue
        for method in sorted(getattr(route, "methods", None) or ()):
            if method not in methods and method != "HEAD":
                methods.append(method)
    return methods


def render_error(request: Request, error: PlacementError) -> Response:
    """Render ``error`` for ``request`` (request id and microversion from the middleware), as
    JSON unless the ``Accept`` header asks for HTML or plain text only."""
    state = request.scope.get("state", {})
    version: mv.Microversion | None = state.get("microversion")
    body, media_type = error_payload(
        error, state.get("request_id"), version, request.headers.get("accept")
    )
    return Response(
        body, status_code=error.status, headers=error.headers or None, media_type=media_type
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(PlacementError)
    async def _placement_error(request: Request, exc: PlacementError) -> Response:
        return render_error(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        error: PlacementError
        if exc.status_code == 404:
            # No route: Placement's detail is its explanation alone (nothing after it).
            error = NotFound(str(exc.detail) if exc.detail != "Not Found" else "")
        elif exc.status_code == 405:
            allow = ", ".join(_allowed_methods(request)) or (exc.headers or {}).get("Allow", "")
            error = MethodNotAllowed(
                "The method specified is not allowed for this resource.",
                headers={"allow": allow} if allow else None,
            )
            error.explanation = f"The method {request.method} is not allowed for this resource."
        else:
            error = PlacementError(str(exc.detail))
            error.status = exc.status_code  # type: ignore[misc]
        return render_error(request, error)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        messages = []
        for item in exc.errors():
            where = ".".join(str(p) for p in item.get("loc", ()) if p not in ("query", "body"))
            messages.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
        detail = "; ".join(messages) or "Invalid request."
        locations = {str(item.get("loc", ("",))[0]) for item in exc.errors()}
        error: PlacementError
        if locations <= {"query", "path"}:
            error = QueryBadValue(f"Invalid query string parameters: {detail}")
        else:
            error = BadRequest(f"JSON does not validate: {detail}")
        return render_error(request, error)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        LOG.exception("unexpected error serving %s %s", request.method, request.url.path)
        return render_error(request, PlacementError("An unexpected error occurred."))
