"""Routes: ``/resource_providers/{uuid}/aggregates`` (1.1+).

* 1.1-1.18: ``GET`` -> ``{"aggregates": [uuid, ...]}``; ``PUT`` takes a list of uuids and leaves
  the provider generation alone;
* 1.19+: both answer ``{"aggregates": [...], "resource_provider_generation": N}``; ``PUT`` takes
  that object and 409s (``placement.concurrent_update``) when the generation is stale.

Aggregates are created on first use.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from placement_numa.api import microversion as mv
from placement_numa.api.deps import (
    DatabaseDep,
    JsonBody,
    VersionDep,
    body_doc,
    require_version,
    validate,
)
from placement_numa.api.responses import PlacementJSONResponse, json_response
from placement_numa.api.schemas.aggregates import AGGREGATES_V1_1, SetAggregatesV1_19
from placement_numa.services import aggregates as service
from placement_numa.services import providers as provider_service

__all__ = ["router"]

router = APIRouter(tags=["resource provider aggregates"])


def _body(aggregates: list[str], generation: int, version: mv.Microversion) -> dict[str, object]:
    body: dict[str, object] = {"aggregates": aggregates}
    if version >= mv.AGGREGATE_GENERATION:
        body["resource_provider_generation"] = generation
    return body


@router.get(
    "/resource_providers/{uuid}/aggregates",
    summary="List the aggregates of a resource provider",
    dependencies=[Depends(require_version(mv.AGGREGATES))],
)
def get_aggregates(uuid: str, version: VersionDep, database: DatabaseDep) -> PlacementJSONResponse:
    """The uuids of the provider's aggregates (and its generation from 1.19). 404 unknown."""
    provider, aggregates = service.get_aggregates(database, uuid=uuid)
    return json_response(_body(aggregates, provider.generation, version), version)


@router.put(
    "/resource_providers/{uuid}/aggregates",
    summary="Replace the aggregates of a resource provider",
    dependencies=[Depends(require_version(mv.AGGREGATES))],
    openapi_extra=body_doc(SetAggregatesV1_19),
)
def set_aggregates(
    uuid: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> PlacementJSONResponse:
    """Make the given aggregates exactly the provider's. Body: a list of unique uuids (1.1) or
    ``{"aggregates": [...], "resource_provider_generation": N}`` (1.19, which bumps the
    generation). 404 unknown provider; 400 bad body; 409 ``placement.concurrent_update``."""
    provider_service.get_provider(database, uuid=uuid)  # 404 before body errors, as Placement
    if version >= mv.AGGREGATE_GENERATION:
        data = validate(SetAggregatesV1_19, body)
        aggregates, generation = data.aggregates, data.resource_provider_generation
    else:
        aggregates, generation = validate(AGGREGATES_V1_1, body), None
    provider = service.set_aggregates(
        database, uuid=uuid, aggregates=aggregates, generation=generation
    )
    return json_response(_body(list(aggregates), provider.generation, version), version)
