"""Route (extension): ``POST /allocation_candidates/claim`` — schedule and claim in one call.

Takes the body of ``POST /allocation_candidates`` plus the consumer of a ``PUT /allocations``
(``api/schemas/claims.py``), searches the NUMA-ranked candidates and, in one transaction,
claims the first one that still fits (``services/claims.py``). Microversion 1.36+, as
``POST /allocation_candidates``. Response (200)::

    {"consumer_uuid": "7c0c...", "consumer_generation": 1,
     "allocation_request": {"allocations": {rp_uuid: {"resources": {...}}},
                            "mappings": {suffix: [rp_uuid]},
                            "numa": {"host": "cn1", "cells": [0, 1], "width": 2, ...}},
     "alternates": [<allocation requests on other hosts, best first>],
     "claim": {"attempts": 1, "rounds": 1}}

Errors: 400 for a bad body or flavor (``placement_numa.flavor.invalid``); 409
``placement_numa.claim.no_room`` when nothing fits (``requested`` and ``lacking`` per resource
class in the error object), 409 ``placement.concurrent_update`` for a stale consumer
generation, 409 ``placement_numa.claim.contended`` when every fresh candidate was taken by
others first (retry).
"""

from __future__ import annotations

import uuid as uuidlib

from fastapi import APIRouter

from placement_numa.api.deps import validate as validate_body
from placement_numa.api.limits import LimitsDep
from placement_numa.api.numa_body import searched
from placement_numa.api.numa_route import NumaRouteDep, numa_post
from placement_numa.api.responses import PlacementJSONResponse, json_response
from placement_numa.api.schemas.claims import ClaimBody
from placement_numa.api.schemas.ranked_candidates import allocation_request
from placement_numa.errors import BadRequest
from placement_numa.services import claims as service

__all__ = ["router"]

router = APIRouter(tags=["allocation candidates"])


@numa_post(
    router,
    "/allocation_candidates/claim",
    summary="Search NUMA-ranked candidates and claim the best that fits, atomically (extension)",
    body=ClaimBody,
    body_text="what POST /allocation_candidates takes, plus the consumer to claim for",
    responses={
        200: {"description": "The claimed allocation request, the consumer's new generation"},
        409: {
            "description": (
                "Nothing fits (placement_numa.claim.no_room, with requested and lacking), a stale"
                " consumer generation (placement.concurrent_update), or every fresh candidate"
                " claimed by others first (placement_numa.claim.contended)"
            )
        },
    },
)
def post_claim(route: NumaRouteDep, limits: LimitsDep) -> PlacementJSONResponse:
    """Claim the best NUMA fit for a consumer in one transaction (``services/claims.py``; the
    walk follows the ``claim_strategy`` setting)."""
    data = validate_body(ClaimBody, route.body)
    settings = getattr(route.request.app.state, "settings", None)
    strategy: service.ClaimStrategy = getattr(settings, "claim_strategy", "spread")
    try:
        consumer_uuid = str(uuidlib.UUID(data.consumer_uuid))
    except ValueError:
        raise BadRequest(f"consumer_uuid {data.consumer_uuid!r} is not a UUID") from None
    claim = service.ClaimRequest(
        consumer_uuid=consumer_uuid,
        project_id=data.project_id,
        user_id=data.user_id,
        consumer_generation=data.consumer_generation,
        consumer_type=data.consumer_type,
        alternates=data.alternates,
    )
    window = data.limit or service.DEFAULT_WINDOW
    wanted, options = searched(data, route.request.app.state, limits)
    claimed = service.claim_for(
        database=route.database,
        engine=route.engine,
        wanted=wanted,
        options=options,
        request=claim,
        window=window,
        strategy=strategy,
        index_cache=route.index_cache,
    )
    answer = {
        "consumer_uuid": claim.consumer_uuid,
        "consumer_generation": claimed.consumer_generation,
        "allocation_request": allocation_request(claimed.chosen),
        "alternates": [allocation_request(r) for r in claimed.alternates],
        "claim": {"attempts": claimed.attempts, "rounds": claimed.rounds},
    }
    return json_response(answer, route.version, cache=False)
