"""Routes: the reshaper.

* ``POST /reshaper`` (1.30+; 404 below): move inventories and allocations atomically. Body shapes
  per microversion in ``api/schemas/reshaper.py`` (consumer generations as 1.28, mappings 1.34,
  consumer types 1.38); 204. 400 for a bad body, unknown providers or resource classes; 409
  (``placement.concurrent_update``) on any provider or consumer generation mismatch, 409
  (``placement.inventory.inuse``) when an inventory still allocated would vanish, 409 when the
  allocations do not fit. Nothing is written on any error.
* ``POST /reshaper/plan`` (extension, 1.30+): plan moving a flat compute node onto its NUMA tree
  (or back) and return the plan with the ``POST /reshaper`` body, without applying anything.
* ``POST /reshaper/apply`` (extension, 1.30+): the same plan, applied in ONE transaction (child
  providers and traits created, reshape, distance matrix stored; or, to flat, children deleted).
"""

from __future__ import annotations

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
from placement_numa.api.responses import json_response, no_content
from placement_numa.api.schemas import reshaper as schemas
from placement_numa.domain.allocation import INCOMPLETE_CONSUMER_ID, ConsumerAllocation
from placement_numa.services import reshaper as service

__all__ = ["router"]

router = APIRouter(tags=["reshaper"])


def _allocations(data: Any, version: mv.Microversion) -> list[ConsumerAllocation]:
    return [
        ConsumerAllocation(
            consumer_uuid=consumer_uuid,
            project_id=entry.project_id or INCOMPLETE_CONSUMER_ID,
            user_id=entry.user_id or INCOMPLETE_CONSUMER_ID,
            resources={rp: dict(alloc.resources) for rp, alloc in entry.allocations.items()},
            consumer_type=getattr(entry, "consumer_type", None),
            consumer_generation=entry.consumer_generation,
            check_generation=version >= mv.CONSUMER_GENERATION,
        )
        for consumer_uuid, entry in data.allocations.items()
    ]


@router.post(
    "/reshaper",
    status_code=204,
    summary="Reshape provider inventories and allocations atomically",
    dependencies=[Depends(require_version(mv.RESHAPER))],
    openapi_extra=body_doc(
        schemas.ReshaperV1_38, "New inventories of providers and allocations of consumers."
    ),
    responses={
        204: {"description": "Reshaped"},
        400: {"description": "Bad body, unknown provider or class"},
        409: {
            "description": "Generation conflict, inventory in use, or allocations that do not fit"
        },
    },
)
def post_reshaper(version: VersionDep, database: DatabaseDep, body: JsonBody) -> Response:
    """Replace inventories and allocations in one transaction (Placement's reshaper)."""
    data = validate(schemas.reshaper_schema(version), body)
    inventories = {
        uuid: service.ProviderInventories(
            generation=entry.resource_provider_generation,
            inventories={rc: inv.to_fields() for rc, inv in entry.inventories.items()},
        )
        for uuid, entry in data.inventories.items()  # type: ignore[attr-defined]
    }
    service.reshape(
        database=database, inventories=inventories, allocations=_allocations(data, version)
    )
    return no_content()


_PLAN_REQUEST_DOC = {
    **body_doc(
        schemas.ReshapePlanRequest, "The compute node, the direction and the target topology."
    ),
    "x-placement-numa-extension": True,
}


def _plan_request(body: Any) -> dict[str, Any]:
    """The keyword arguments of ``service.plan``/``service.apply_plan`` from a plan request body
    (``ReshapePlanRequest``); raises ``BadRequest`` (400) for an invalid body."""
    request = validate(schemas.ReshapePlanRequest, body)
    return {
        "host": request.host,
        "root_uuid": request.root_provider_uuid,
        "direction": request.direction,
        "topology": request.topology,
        "policy": request.policy,
    }


@router.post(
    "/reshaper/plan",
    summary="Plan a NUMA reshape of a compute node (extension)",
    dependencies=[Depends(require_version(mv.RESHAPER))],
    openapi_extra=_PLAN_REQUEST_DOC,
    responses={
        200: {
            "description": (
                "The plan: providers to create or delete, the POST /reshaper body, a summary"
            )
        },
        404: {"description": "No such compute node"},
        409: {
            "description": (
                "A consumer fits on no NUMA cell (code placement_numa.reshape.unplaceable)"
            )
        },
    },
)
def post_reshaper_plan(version: VersionDep, database: DatabaseDep, body: JsonBody) -> Response:
    """Return the plan (shape in ``placement_numa.reshape.plan``) without applying it.

    Apply it by creating ``create_providers`` (with their traits), then ``POST /reshaper`` with
    ``reshaper`` at ``microversion`` (generations re-read), then deleting ``delete_providers``.
    """
    planned = service.plan(database=database, **_plan_request(body))
    return json_response(planned.as_dict(), version, cache=False)


@router.post(
    "/reshaper/apply",
    summary="Plan and apply a NUMA reshape of a compute node atomically (extension)",
    dependencies=[Depends(require_version(mv.RESHAPER))],
    openapi_extra=_PLAN_REQUEST_DOC,
    responses={
        200: {"description": "The plan that was applied"},
        404: {"description": "No such compute node"},
        409: {
            "description": "Unplaceable consumer, generation conflict, or a planned provider exists"
        },
    },
)
def post_reshaper_apply(version: VersionDep, database: DatabaseDep, body: JsonBody) -> Response:
    """Plan and apply in one transaction: the providers of ``create_providers`` with their
    traits, the ``reshaper`` body, the distance matrix; to flat, the emptied children deleted."""
    applied = service.apply_plan(database=database, **_plan_request(body))
    return json_response(applied.as_dict(), version, cache=False)
