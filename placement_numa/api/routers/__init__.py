"""One router per resource; ``ROUTERS`` is the order ``create_app`` includes them in (the
routes of a scheduler's boot first)."""

from __future__ import annotations

from fastapi import APIRouter

from placement_numa.api.routers import (
    aggregates,
    allocation_candidates,
    allocations,
    capacity,
    claims,
    defragment,
    fleet_page,
    inventories,
    numa_candidates,
    numa_topology,
    provider_batch,
    reshaper,
    resource_classes,
    resource_providers,
    root,
    traits,
    usages,
)

__all__ = ["ROUTERS"]

# FastAPI tries routes in this order (a few microseconds each) and the first that matches
# answers: the two a scheduler calls for every boot (GET /allocation_candidates, PUT
# /allocations/{consumer_uuid}) come first. No two routes match one request, so the order
# decides nothing else (tests/test_router_order.py).
ROUTERS: tuple[APIRouter, ...] = (
    allocation_candidates.router,
    allocations.router,
    root.router,
    resource_providers.router,
    provider_batch.router,
    inventories.router,
    aggregates.router,
    traits.router,
    resource_classes.router,
    usages.router,
    claims.router,
    capacity.router,
    defragment.router,
    numa_candidates.router,
    numa_topology.router,
    reshaper.router,
    fleet_page.router,
)
