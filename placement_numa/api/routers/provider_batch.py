"""Route (extension): ``POST /resource_providers/batch`` — create many providers, with their
inventories and traits, in one request and one transaction.

Microversion 1.20+ (404 below), where ``POST /resource_providers`` answers 200 with the provider;
nested providers (1.14) included. Body (``api/schemas/resource_providers.py``)::

    {"resource_providers": [
        {"uuid": "...", "name": "cn1",
         "inventories": {"DISK_GB": {"total": 1000}}},
        {"uuid": "...", "name": "cn1_NUMA0", "parent_provider_uuid": "<cn1's uuid>",
         "inventories": {"VCPU": {"total": 32, "allocation_ratio": 4.0}},
         "traits": ["HW_NUMA_ROOT"]}]}

A parent is an existing provider or one earlier in the list; ``uuid`` is generated when absent;
``inventories`` and ``traits`` are optional. 200 with ``{"resource_providers": [provider, ...]}``,
each as ``GET /resource_providers/{uuid}`` shows it (generation 0), in request order.

All or nothing: 400 for a bad body, an empty name, a parent that is neither existing nor earlier
in the list, an unusable inventory, an unknown resource class or trait; 409
``placement.duplicate_name`` for a uuid or name taken (by an existing provider or earlier in the
list); 400 ``placement.limit.batch_providers`` past ``[api] max_batch_providers`` providers
(checked before anything else), 413 past the body size limit.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from placement_numa.api import microversion as mv
from placement_numa.api.deps import (
    DatabaseDep,
    JsonBody,
    VersionDep,
    body_doc,
    require_version,
    validate,
)
from placement_numa.api.limits import check_batch_size, get_limits
from placement_numa.api.responses import json_response
from placement_numa.api.routers.resource_providers import serialize_provider
from placement_numa.api.schemas.resource_providers import CreateProvidersBatch
from placement_numa.services import provider_batch as service

__all__ = ["router"]

router = APIRouter(tags=["resource providers"])


@router.post(
    "/resource_providers/batch",
    summary="Create many resource providers with inventories and traits, atomically (extension)",
    dependencies=[Depends(require_version(mv.POST_PROVIDER_RETURNS_BODY))],
    openapi_extra={
        **body_doc(
            CreateProvidersBatch,
            "Providers in creation order (a parent before its children), each with its"
            " inventories and traits.",
        ),
        "x-placement-numa-extension": True,
    },
    responses={
        200: {"description": "The created providers, in request order"},
        400: {
            "description": (
                "Bad body, unknown parent, resource class or trait, unusable inventory, or more"
                " providers than [api] max_batch_providers (placement.limit.batch_providers)"
            )
        },
        409: {"description": "A uuid or name is taken (placement.duplicate_name)"},
    },
)
def create_resource_providers_batch(
    request: Request, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """Create every provider of the body with its inventories and traits, in one transaction.

    200 ``{"resource_providers": [provider, ...]}`` in request order; nothing is written on any
    error (see the module docstring for the errors).
    """
    items = body.get("resource_providers") if isinstance(body, dict) else None
    if isinstance(items, list):
        check_batch_size(len(items), get_limits(request))
    data = validate(CreateProvidersBatch, body)
    created = service.create_providers(
        database,
        [
            service.ProviderSpec(
                name=item.name,
                uuid=item.uuid,
                parent_uuid=item.parent_provider_uuid,
                inventories={rc: inv.to_fields() for rc, inv in item.inventories.items()},
                traits=frozenset(item.traits),
            )
            for item in data.resource_providers
        ],
        reserved_may_equal_total=version >= mv.RESERVED_EQUALS_TOTAL,
    )
    return json_response(
        {"resource_providers": [serialize_provider(request, p, version) for p in created]},
        version,
        last_modified=created[0].created_at if created else None,
    )
