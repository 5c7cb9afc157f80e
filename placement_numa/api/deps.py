"""Typed FastAPI dependencies shared by the routers.

* ``VersionDep``: the negotiated microversion of the request;
* ``DatabaseDep``: the process's ``Database`` (from ``app.state``);
* ``JsonBody``: the parsed JSON request body (415 without ``application/json``, 400 if malformed);
* ``require_version(v)``: a dependency that makes a route 404 below microversion ``v``;
* ``validate(model, data)``: pydantic validation turned into Placement's 400.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Depends, Request
from pydantic import BaseModel, TypeAdapter, ValidationError

from placement_numa.api import microversion as mv
from placement_numa.api.limits import check_json, get_limits
from placement_numa.api.openapi_microversions import VersionedJsonSchema
from placement_numa.api.schema_errors import describe
from placement_numa.db.database import Database
from placement_numa.errors import BadRequest, NotAcceptable, NotFound, UnsupportedMediaType

__all__ = [
    "VersionDep",
    "DatabaseDep",
    "JsonBody",
    "get_version",
    "get_database",
    "require_version",
    "validate",
    "body_doc",
    "check_accept",
]

_JSON_MEDIA = ("application/json", "application/*", "*/*")


async def check_accept(request: Request) -> None:
    """406 when a GET's ``Accept`` header names media types but none that gives JSON
    (Placement's ``check_accept``); an absent header is fine. Installed app-wide by
    ``create_app``; it only looks at GET and HEAD requests. ``async`` (it never blocks): FastAPI
    runs it on the event loop instead of handing it to the thread pool."""
    if request.method not in ("GET", "HEAD"):
        return
    accept = request.headers.get("accept")
    if not accept:
        return
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        quality = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            acceptable = float(quality) > 0
        except ValueError:
            acceptable = False
        if acceptable and media.lower() in _JSON_MEDIA:
            return
    raise NotAcceptable("Only application/json is provided")


T = TypeVar("T")


def get_version(request: Request) -> mv.Microversion:
    """The microversion negotiated by ``PlacementMiddleware``."""
    version: mv.Microversion = request.scope["state"].get("microversion", mv.MIN_VERSION)
    return version


def get_database(request: Request) -> Database:
    """The ``Database`` created by ``create_app``."""
    database: Database = request.app.state.database
    return database


async def get_json_body(request: Request) -> Any:
    """Parse the request body as JSON.

    Raises ``UnsupportedMediaType`` (415) unless the content type is ``application/json``,
    ``BadRequest`` (400) when the body is not valid JSON or holds a NUL character and
    ``LimitExceeded`` (400) when it nests deeper than ``max_json_depth`` (``api/limits.py``).
    """
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise UnsupportedMediaType(
            f"The media type {content_type or 'None'} is not supported, use application/json"
        )
    raw = await request.body()
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Malformed JSON: {exc}") from None
    check_json(document, get_limits(request))  # nesting depth and NUL characters
    return document


# The dependencies are ``async`` wrappers of the plain functions: FastAPI hands every ``def``
# dependency to the thread pool (a thread switch and a few hundred microseconds of CPU each);
# these never block, so they run on the event loop.
async def _version_dependency(request: Request) -> mv.Microversion:
    return get_version(request)


async def _database_dependency(request: Request) -> Database:
    return get_database(request)


VersionDep = Annotated[mv.Microversion, Depends(_version_dependency)]
DatabaseDep = Annotated[Database, Depends(_database_dependency)]
JsonBody = Annotated[Any, Depends(get_json_body)]


class _VersionGate:
    """A route dependency: 404 (as Placement) below ``min_version`` (read by the policy check,
    which reports this 404 before a 403, as Placement does)."""

    def __init__(self, min_version: mv.Microversion) -> None:
        self.min_version = min_version

    async def __call__(self, request: Request) -> None:
        if get_version(request) < self.min_version:
            raise NotFound("")  # Placement's detail: its explanation alone


def require_version(minimum: mv.Microversion) -> Callable[[Request], Awaitable[None]]:
    """A route dependency: 404 (as Placement) when the request's microversion is below
    ``minimum``."""
    return _VersionGate(minimum)


def validate(schema: type[T] | TypeAdapter[T], data: Any) -> T:
    """Validate ``data`` against a pydantic model or ``TypeAdapter``.

    Raises ``BadRequest`` ("JSON does not validate: ...") worded as Placement's jsonschema
    errors (``api/schema_errors.py``).
    """
    adapter = schema if isinstance(schema, TypeAdapter) else TypeAdapter(schema)
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        # Worded as Placement's jsonschema errors, which clients and conformance suites match.
        detail = describe(exc.errors(), adapter.json_schema())
        raise BadRequest("JSON does not validate: " + detail) from None


def body_doc(model: type[BaseModel], description: str = "") -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON request body of shape ``model`` (newest
    microversion)."""
    schema = model.model_json_schema(
        ref_template="#/components/schemas/{model}", schema_generator=VersionedJsonSchema
    )
    defs = schema.pop("$defs", {})
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {"application/json": {"schema": schema}},
        },
        "x-component-schemas": defs,
    }
