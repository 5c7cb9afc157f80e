"""Routes: ``/resource_classes[/{name}]`` (Placement 1.2+; 404 below).

A resource class is shown as ``{"name": ..., "links": [{"rel": "self", "href":
"/resource_classes/<name>"}]}``. ``PUT /resource_classes/{name}`` renames a custom class (body
``{"name"}``, 200) from 1.2 to 1.6, and from 1.7 creates it without a body (201, or 204 when it
exists). GETs carry ``last-modified``/``cache-control`` from 1.15.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from placement_numa.api import microversion as mv
from placement_numa.api.deps import (
    DatabaseDep,
    JsonBody,
    VersionDep,
    body_doc,
    get_json_body,
    get_version,
    require_version,
    validate,
)
from placement_numa.api.responses import json_response, newest, no_content
from placement_numa.api.schemas.resource_classes import ResourceClassBody
from placement_numa.db.repositories.resource_classes import ResourceClassRow
from placement_numa.services import resource_classes as service

__all__ = ["router"]

router = APIRouter(
    tags=["resource classes"],
    dependencies=[Depends(require_version(mv.CUSTOM_RESOURCE_CLASSES))],
)


def _href(request: Request, name: str) -> str:
    return f"{request.scope.get('root_path', '')}/resource_classes/{name}"


def _location(request: Request, name: str) -> str:
    return f"{str(request.base_url).rstrip('/')}/resource_classes/{name}"


def _represent(request: Request, row: ResourceClassRow) -> dict[str, Any]:
    return {"name": row.name, "links": [{"rel": "self", "href": _href(request, row.name)}]}


async def _rename_body(request: Request) -> Any:
    """The JSON body of a rename (before 1.7); from 1.7 the PUT has no body and none is read."""
    if get_version(request) >= mv.RESOURCE_CLASS_PUT_CREATE:
        return None
    return await get_json_body(request)


@router.get("/resource_classes", summary="List resource classes")
def list_resource_classes(request: Request, version: VersionDep, database: DatabaseDep) -> Response:
    """200 ``{"resource_classes": [...]}``, standard classes first."""
    rows = service.list_resource_classes(database=database)
    return json_response(
        {"resource_classes": [_represent(request, row) for row in rows]},
        version,
        last_modified=newest(row.last_modified for row in rows),
    )


@router.post(
    "/resource_classes",
    summary="Create a custom resource class",
    status_code=201,
    openapi_extra=body_doc(ResourceClassBody),
)
def create_resource_class(request: Request, database: DatabaseDep, body: JsonBody) -> Response:
    """201 with a ``location``; 400 for a name not ``CUSTOM_[A-Z0-9_]+``; 409 when it exists."""
    data = validate(ResourceClassBody, body)
    row = service.create_resource_class(database=database, name=data.name)
    return Response(status_code=201, headers={"location": _location(request, row.name)})


@router.get("/resource_classes/{name}", summary="Show a resource class")
def get_resource_class(
    name: str, request: Request, version: VersionDep, database: DatabaseDep
) -> Response:
    """200 with the class; 404 when unknown."""
    row = service.show_resource_class(database=database, name=name)
    return json_response(_represent(request, row), version, last_modified=row.last_modified)


@router.put(
    "/resource_classes/{name}",
    summary="Create a custom resource class (1.7+) or rename one (1.2-1.6)",
    openapi_extra={
        "responses": {"201": {"description": "Created"}, "204": {"description": "Exists"}}
    },
)
def put_resource_class(
    name: str,
    request: Request,
    version: VersionDep,
    database: DatabaseDep,
    body: Annotated[Any, Depends(_rename_body)],
) -> Response:
    """From 1.7: 201 (created) or 204 (exists), with a ``location``; 400 for a name not
    ``CUSTOM_...`` (standard classes included). Before 1.7: rename to ``body["name"]``, 200 with
    the renamed class; 400 (schema, standard class), 404, 409 (name taken)."""
    if version >= mv.RESOURCE_CLASS_PUT_CREATE:
        validate(ResourceClassBody, {"name": name})
        row, created = service.ensure_resource_class(database=database, name=name)
        return Response(
            status_code=201 if created else 204,
            headers={"location": _location(request, row.name)},
        )
    data = validate(ResourceClassBody, body)
    row = service.rename_resource_class(database=database, name=name, new_name=data.name)
    return json_response(_represent(request, row), version, cache=False)


@router.delete("/resource_classes/{name}", summary="Delete a custom resource class")
def delete_resource_class(name: str, database: DatabaseDep) -> Response:
    """204; 400 for a standard class; 404 when unknown; 409 when an inventory uses it."""
    service.delete_resource_class(database=database, name=name)
    return no_content()
