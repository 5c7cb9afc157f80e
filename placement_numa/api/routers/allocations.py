"""Routes: allocations of consumers (``/allocations``) and of a provider.

* ``GET /allocations/{consumer_uuid}``: ``{"allocations": {rp_uuid: {"resources", "generation"}}}``
  plus ``project_id``/``user_id`` (1.12+), ``consumer_generation`` (1.28+), ``consumer_type``
  (1.38+) when the consumer has allocations;
* ``PUT /allocations/{consumer_uuid}``: replace the consumer's allocations (shapes per
  microversion in ``api/schemas/allocations.py``), 204;
* ``POST /allocations`` (1.13+): replace the allocations of several consumers atomically, 204;
* ``DELETE /allocations/{consumer_uuid}``: 204, 404 when it has none;
* ``GET /resource_providers/{uuid}/allocations``: ``{"allocations": {consumer_uuid:
  {"resources", "consumer_generation" (1.28+)}}, "resource_provider_generation"}``.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from fastapi import APIRouter, Depends, Response

from placement_numa.api import microversion as mv
from placement_numa.api.deps import (
    DatabaseDep,
    JsonBody,
    VersionDep,
    body_doc,
    require_version,
    validate,
)
from placement_numa.api.responses import json_response, newest, no_content
from placement_numa.api.schemas import allocations as schemas
from placement_numa.domain.allocation import (
    INCOMPLETE_CONSUMER_ID,
    UNKNOWN_CONSUMER_TYPE,
    ConsumerAllocation,
)
from placement_numa.errors import BadRequest
from placement_numa.services import allocations as service

__all__ = ["router"]

router = APIRouter(tags=["allocations"])


def _normalized_uuid(text: str) -> str:
    """``text`` as a canonical uuid (Placement accepts any form ``uuid.UUID`` reads); 400 if not."""
    stripped = text.lower().replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "")
    try:
        value = uuidlib.UUID(text)
    except ValueError:
        value = None
    if value is None or value.hex != stripped:
        raise BadRequest(f"Malformed consumer_uuid: {text}")
    return str(value)


@router.get("/allocations/{consumer_uuid}", summary="List allocations of a consumer")
def get_consumer_allocations(
    consumer_uuid: str, version: VersionDep, database: DatabaseDep
) -> Response:
    """Allocations of ``consumer_uuid`` by provider; ``{"allocations": {}}`` when it has none."""
    found = service.get_for_consumer(database=database, consumer_uuid=consumer_uuid)
    by_provider: dict[str, dict[str, Any]] = {}
    for row in found.allocations:
        entry = by_provider.setdefault(row.resource_provider_uuid, {"resources": {}})
        entry["resources"][row.resource_class] = row.used
        entry["generation"] = row.resource_provider_generation
    body: dict[str, Any] = {"allocations": by_provider}
    consumer = found.consumer
    if consumer is not None and version >= mv.ALLOCATIONS_DICT:
        body["project_id"] = consumer.project_external_id
        body["user_id"] = consumer.user_external_id
        if version >= mv.CONSUMER_GENERATION:
            body["consumer_generation"] = consumer.generation
        if version >= mv.CONSUMER_TYPES:
            body["consumer_type"] = consumer.consumer_type or UNKNOWN_CONSUMER_TYPE
    stamps = [row.updated_at or row.created_at for row in found.allocations]
    return json_response(body, version, last_modified=newest(stamps))


def _from_body(consumer_uuid: str, data: Any, version: mv.Microversion) -> ConsumerAllocation:
    """A validated PUT/POST body of one consumer as a ``ConsumerAllocation``."""
    if version >= mv.ALLOCATIONS_DICT:
        resources = {rp: dict(alloc.resources) for rp, alloc in data.allocations.items()}
    else:
        resources = {}
        for item in data.allocations:
            resources[item.resource_provider.uuid] = dict(item.resources)
    return ConsumerAllocation(
        consumer_uuid=consumer_uuid,
        project_id=getattr(data, "project_id", None) or INCOMPLETE_CONSUMER_ID,
        user_id=getattr(data, "user_id", None) or INCOMPLETE_CONSUMER_ID,
        resources=resources,
        consumer_type=getattr(data, "consumer_type", None),
        consumer_generation=getattr(data, "consumer_generation", None),
        check_generation=version >= mv.CONSUMER_GENERATION,
    )


@router.put(
    "/allocations/{consumer_uuid}",
    status_code=204,
    summary="Replace the allocations of a consumer",
    openapi_extra=body_doc(schemas.AllocationsPutV1_38),
)
def put_consumer_allocations(
    consumer_uuid: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """Replace all allocations of ``consumer_uuid``; ``{}`` (1.28+) removes them.

    400 for a bad body, unknown provider or resource class; 409 on a consumer generation
    mismatch (``placement.concurrent_update``), missing inventory or exceeded capacity.
    """
    consumer_uuid = _normalized_uuid(consumer_uuid)
    data = validate(schemas.put_schema(version), body)
    item = _from_body(consumer_uuid, data, version)
    service.replace(database=database, consumer_allocations=[item])
    return no_content()


@router.post(
    "/allocations",
    status_code=204,
    summary="Replace the allocations of several consumers atomically",
    dependencies=[Depends(require_version(mv.POST_ALLOCATIONS))],
    openapi_extra=body_doc(schemas.AllocationsPostV1_38),
)
def post_allocations(version: VersionDep, database: DatabaseDep, body: JsonBody) -> Response:
    """``{consumer_uuid: {allocations, project_id, user_id, ...}}``: all or nothing."""
    data = validate(schemas.post_schema(version), body)
    items = [_from_body(c, one, version) for c, one in data.root.items()]
    service.replace(database=database, consumer_allocations=items)
    return no_content()


@router.delete(
    "/allocations/{consumer_uuid}", status_code=204, summary="Delete a consumer's allocations"
)
def delete_consumer_allocations(consumer_uuid: str, database: DatabaseDep) -> Response:
    """Remove every allocation of ``consumer_uuid``; 404 when it has none."""
    service.delete_for_consumer(database=database, consumer_uuid=consumer_uuid)
    return no_content()


@router.get("/resource_providers/{uuid}/allocations", summary="List allocations against a provider")
def get_provider_allocations(uuid: str, version: VersionDep, database: DatabaseDep) -> Response:
    """Allocations against provider ``uuid`` by consumer, with ``resource_provider_generation``."""
    found = service.get_for_provider(database=database, provider_uuid=uuid)
    by_consumer: dict[str, dict[str, Any]] = {}
    for row in found.allocations:
        entry = by_consumer.setdefault(row.consumer_uuid, {"resources": {}})
        entry["resources"][row.resource_class] = row.used
        if version >= mv.CONSUMER_GENERATION:
            entry["consumer_generation"] = row.consumer_generation
    body = {
        "allocations": by_consumer,
        "resource_provider_generation": found.provider.generation,
    }
    stamps = [row.updated_at or row.created_at for row in found.allocations]
    return json_response(body, version, last_modified=newest(stamps))
