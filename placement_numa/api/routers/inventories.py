"""Routes: ``/resource_providers/{uuid}/inventories[/{resource_class}]`` (Placement 1.0+).

Representations (as Placement):

* collection: ``{"resource_provider_generation": int, "inventories": {RC: {total, reserved,
  min_unit, max_unit, step_size, allocation_ratio}}}``
* one inventory: ``{total, reserved, min_unit, max_unit, step_size, allocation_ratio,
  resource_provider_generation}`` (the generation is left out while it is 0, as Placement does)

``DELETE .../inventories`` exists from 1.5 (405 below). From 1.15 responses carry
``last-modified`` (the newest inventory change; absent for an empty collection) and
``cache-control: no-cache``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response

from placement_numa.api import microversion as mv
from placement_numa.api.deps import DatabaseDep, JsonBody, VersionDep, body_doc, validate
from placement_numa.api.responses import PlacementJSONResponse, json_response, newest, no_content
from placement_numa.api.schemas.inventories import (
    InventoriesBody,
    InventoryBody,
    InventoryPostBody,
)
from placement_numa.domain.inventory import InventoryFields
from placement_numa.errors import MethodNotAllowed
from placement_numa.services import inventories as service
from placement_numa.services import providers as provider_service

__all__ = ["router"]

router = APIRouter(tags=["inventories"])

_COLLECTION = "/resource_providers/{uuid}/inventories"
_ITEM = "/resource_providers/{uuid}/inventories/{resource_class}"


def _one(fields: InventoryFields, generation: int) -> dict[str, Any]:
    body: dict[str, Any] = fields.as_dict()
    if generation:
        body["resource_provider_generation"] = generation
    return body


def _collection(
    version: mv.Microversion,
    generation: int,
    inventories: dict[str, InventoryFields],
    last_modified: datetime | None,
) -> PlacementJSONResponse:
    body = {
        "resource_provider_generation": generation,
        "inventories": {name: fields.as_dict() for name, fields in inventories.items()},
    }
    response = json_response(body, version, last_modified=last_modified, cache=bool(inventories))
    if version >= mv.CACHE_HEADERS:
        response.headers["cache-control"] = "no-cache"
    return response


@router.get(_COLLECTION, summary="List the inventories of a resource provider")
def get_inventories(uuid: str, version: VersionDep, database: DatabaseDep) -> Response:
    """200 with the collection; 404 for an unknown provider."""
    provider, records = service.list_inventories(database=database, provider_uuid=uuid)
    return _collection(
        version,
        provider.generation,
        {name: rec.fields for name, rec in records.items()},
        newest(r.last_modified for r in records.values()),
    )


@router.put(
    _COLLECTION,
    summary="Replace all inventories of a resource provider",
    openapi_extra=body_doc(InventoriesBody),
)
def put_inventories(
    uuid: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """200 with the new collection; 400 (schema, capacity, unknown class), 404, 409
    (``placement.concurrent_update`` on a stale generation, ``placement.inventory.inuse`` when a
    removed class has allocations)."""
    provider_service.get_provider(database, uuid=uuid)  # 404 before body errors, as Placement
    data = validate(InventoriesBody, body)
    inventories = {name: record.to_fields() for name, record in data.inventories.items()}
    generation = service.set_inventories(
        database=database,
        provider_uuid=uuid,
        generation=data.resource_provider_generation,
        inventories=inventories,
        reserved_may_equal_total=version >= mv.RESERVED_EQUALS_TOTAL,
    )
    return _collection(version, generation, inventories, None)


@router.post(
    _COLLECTION,
    summary="Add one inventory to a resource provider",
    status_code=201,
    openapi_extra=body_doc(InventoryPostBody),
)
def post_inventory(
    uuid: str, request: Request, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """201 with the inventory and a ``location``; 400 (schema, capacity, unknown class), 404,
    409 when the class already has an inventory."""
    provider_service.get_provider(database, uuid=uuid)  # 404 before body errors, as Placement
    data = validate(InventoryPostBody, body)
    fields = data.to_fields()
    generation = service.create_inventory(
        database=database,
        provider_uuid=uuid,
        resource_class=data.resource_class,
        fields=fields,
        reserved_may_equal_total=version >= mv.RESERVED_EQUALS_TOTAL,
    )
    base = str(request.base_url).rstrip("/")
    location = f"{base}/resource_providers/{uuid}/inventories/{data.resource_class}"
    return json_response(
        _one(fields, generation), version, status=201, headers={"location": location}
    )


@router.delete(_COLLECTION, summary="Delete all inventories of a resource provider (1.5+)")
def delete_inventories(uuid: str, version: VersionDep, database: DatabaseDep) -> Response:
    """204; 404; 409 ``placement.inventory.inuse`` when any class has allocations; 405 below 1.5."""
    if version < mv.DELETE_ALL_INVENTORIES:
        raise MethodNotAllowed("The method DELETE is not allowed for this resource.")
    service.delete_inventories(database=database, provider_uuid=uuid)
    return no_content()


@router.get(_ITEM, summary="Show one inventory of a resource provider")
def get_inventory(
    uuid: str, resource_class: str, version: VersionDep, database: DatabaseDep
) -> Response:
    """200 with the inventory; 404 for an unknown provider or a class without inventory."""
    provider, record = service.show_inventory(
        database=database, provider_uuid=uuid, resource_class=resource_class
    )
    return json_response(
        _one(record.fields, provider.generation), version, last_modified=record.last_modified
    )


@router.put(
    _ITEM,
    summary="Update one inventory of a resource provider",
    openapi_extra=body_doc(InventoryBody),
)
def put_inventory(
    uuid: str, resource_class: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """200 with the inventory; 400 (schema, capacity, no inventory of the class), 404 (provider
    or resource class unknown), 409 ``placement.concurrent_update`` on a stale generation."""
    provider_service.get_provider(database, uuid=uuid)  # 404 before body errors, as Placement
    data = validate(InventoryBody, body)
    fields = data.to_fields()
    generation = service.update_inventory(
        database=database,
        provider_uuid=uuid,
        resource_class=resource_class,
        generation=data.resource_provider_generation,
        fields=fields,
        reserved_may_equal_total=version >= mv.RESERVED_EQUALS_TOTAL,
    )
    return json_response(_one(fields, generation), version)


@router.delete(_ITEM, summary="Delete one inventory of a resource provider")
def delete_inventory(uuid: str, resource_class: str, database: DatabaseDep) -> Response:
    """204; 404 (provider, class or inventory unknown); 409 when the class has allocations."""
    service.delete_inventory(database=database, provider_uuid=uuid, resource_class=resource_class)
    return no_content()
