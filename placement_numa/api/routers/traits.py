"""Routes: ``/traits[/{name}]`` and ``/resource_providers/{uuid}/traits`` (Placement 1.6+;
404 below).

* ``GET /traits?name=in:A,B|startswith:PREFIX&associated=true|false`` -> ``{"traits": [...]}``
* ``GET /traits/{name}`` -> 204 (exists) or 404; ``PUT`` creates a custom trait (201, 204 when it
  exists, with ``location``); ``DELETE`` removes an unused custom trait.
* ``GET|PUT /resource_providers/{uuid}/traits`` -> ``{"traits": [...],
  "resource_provider_generation": int}``; ``DELETE`` removes them all.

Trait lists are sorted by name. From 1.15 responses carry ``last-modified`` (the newest change of
the traits listed, or now) and ``cache-control: no-cache``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import TypeAdapter, ValidationError

from placement_numa.api import microversion as mv
from placement_numa.api.deps import (
    DatabaseDep,
    JsonBody,
    VersionDep,
    body_doc,
    require_version,
    validate,
)
from placement_numa.api.responses import http_date, json_response, newest, no_content
from placement_numa.api.schemas.traits import (
    CUSTOM_TRAIT_PROBLEM,
    CustomTraitName,
    ProviderTraitsBody,
)
from placement_numa.errors import BadRequest
from placement_numa.services import traits as service

__all__ = ["router"]

router = APIRouter(tags=["traits"], dependencies=[Depends(require_version(mv.TRAITS))])

_CUSTOM_TRAIT = TypeAdapter(CustomTraitName)
_LIST_PARAMETERS = ("name", "associated")


def _cache_headers(version: mv.Microversion, moment: datetime | None) -> dict[str, str]:
    if version < mv.CACHE_HEADERS:
        return {}
    return {"last-modified": http_date(moment), "cache-control": "no-cache"}


def _list_filters(request: Request) -> dict[str, Any]:
    """Parse ``name`` and ``associated`` as Placement does; any other parameter is a 400."""
    params = request.query_params
    unexpected = sorted(set(params.keys()) - set(_LIST_PARAMETERS))
    if unexpected:
        raise BadRequest(
            "Invalid query string parameters: Additional properties are not allowed"
            f" ({', '.join(repr(k) for k in unexpected)} unexpected)"
        )
    filters: dict[str, Any] = {}
    name = params.get("name")
    if name is not None:
        op, sep, value = name.partition(":")
        if not sep:
            raise BadRequest(
                "Badly formatted name parameter. Expected name query string parameter in form:"
                f' ?name=[in|startswith]:[name1,name2|prefix]. Got: "{name}"'
            )
        if op == "in":
            filters["name_in"] = value.split(",")
        elif op == "startswith":
            filters["prefix"] = value
        # Any other operator is ignored, as in Placement.
    associated = params.get("associated")
    if associated is not None:
        if associated.lower() not in ("true", "false"):
            raise BadRequest('The query parameter "associated" only accepts "true" or "false"')
        filters["associated"] = associated.lower() == "true"
    return filters


@router.get("/traits", summary="List traits")
def list_traits(request: Request, version: VersionDep, database: DatabaseDep) -> Response:
    """200 ``{"traits": [...]}``; 400 for a malformed ``name`` or ``associated`` or an unknown
    parameter."""
    rows = service.list_traits(database=database, **_list_filters(request))
    return json_response(
        {"traits": [row.name for row in rows]},
        version,
        last_modified=newest(row.last_modified for row in rows),
    )


@router.get("/traits/{name}", summary="Check that a trait exists")
def get_trait(name: str, version: VersionDep, database: DatabaseDep) -> Response:
    """204 when the trait exists; 404 otherwise."""
    row = service.show_trait(database=database, name=name)
    return no_content(_cache_headers(version, row.created_at))


@router.put("/traits/{name}", summary="Create a custom trait")
def put_trait(name: str, request: Request, version: VersionDep, database: DatabaseDep) -> Response:
    """201 (created) or 204 (exists), with a ``location``; 400 unless ``name`` is a custom name
    (standard traits cannot be created)."""
    try:
        _CUSTOM_TRAIT.validate_python(name)
    except ValidationError:
        raise BadRequest(CUSTOM_TRAIT_PROBLEM) from None
    row, created = service.ensure_trait(database=database, name=name)
    headers = {"location": f"{str(request.base_url).rstrip('/')}/traits/{row.name}"}
    headers.update(_cache_headers(version, row.created_at))
    return Response(status_code=201 if created else 204, headers=headers)


@router.delete("/traits/{name}", summary="Delete a custom trait")
def delete_trait(name: str, database: DatabaseDep) -> Response:
    """204; 400 for a standard trait; 404 when unknown; 409 when a provider has it."""
    service.delete_trait(database=database, name=name)
    return no_content()


@router.get("/resource_providers/{uuid}/traits", summary="List the traits of a resource provider")
def get_provider_traits(uuid: str, version: VersionDep, database: DatabaseDep) -> Response:
    """200 ``{"traits": [...], "resource_provider_generation": int}``; 404 for an unknown
    provider."""
    provider, rows = service.provider_traits(database=database, provider_uuid=uuid)
    body = {
        "traits": [row.name for row in rows],
        "resource_provider_generation": provider.generation,
    }
    return json_response(body, version, last_modified=newest(row.last_modified for row in rows))


@router.put(
    "/resource_providers/{uuid}/traits",
    summary="Replace the traits of a resource provider",
    openapi_extra=body_doc(ProviderTraitsBody),
)
def put_provider_traits(
    uuid: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """200 with the new trait set and generation; 400 (schema, unknown trait), 404, 409
    ``placement.concurrent_update`` on a stale generation."""
    data = validate(ProviderTraitsBody, body)
    generation, rows = service.set_provider_traits(
        database=database,
        provider_uuid=uuid,
        generation=data.resource_provider_generation,
        names=data.traits,
    )
    body_out = {"traits": [row.name for row in rows], "resource_provider_generation": generation}
    return json_response(body_out, version, last_modified=newest(row.last_modified for row in rows))


@router.delete(
    "/resource_providers/{uuid}/traits", summary="Remove all traits of a resource provider"
)
def delete_provider_traits(uuid: str, database: DatabaseDep) -> Response:
    """204; 404 for an unknown provider."""
    service.delete_provider_traits(database=database, provider_uuid=uuid)
    return no_content()
