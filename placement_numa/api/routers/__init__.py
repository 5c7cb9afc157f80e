"""One router per resource; ``ROUTERS`` is the order ``create_app`` includes them in."""

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

ROUTERS: tuple[APIRouter, ...] = (
    root.router,
    resource_providers.router,
    provider_batch.router,
    inventories.router,
    aggregates.router,
    traits.router,
    resource_classes.router,
    allocations.router,
    usages.router,
    allocation_candidates.router,
    claims.router,
    capacity.router,
    defragment.router,
    numa_candidates.router,
    numa_topology.router,
    reshaper.router,
    fleet_page.router,
)
