"""What the NUMA extension routes under ``/allocation_candidates`` share: ``POST
/allocation_candidates`` (flavor form), ``/claim``, ``/capacity`` and ``/defragment``.

* ``numa_post(router, path, ...)``: the route, gated at microversion 1.36 (``SAME_SUBTREE``, as
  ``GET /allocation_candidates`` with ``same_subtree``: 404 below it) with its JSON body
  documented;
* ``NumaRouteDep``: one dependency bundling the request, its microversion, the database, the
  parsed JSON body (415/400 as ``api.deps.JsonBody``), the candidate engine and the cell index
  cache, resolved in that order;
* ``NumaRoute.indexed_fleet()`` and ``NumaRoute.flavor_ask()``: the fleet snapshot with its
  cell index, and a flavor body made the ask the capacity and defragment services take.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from placement_numa.api import microversion as mv
from placement_numa.api.cell_index_dep import CellIndexDep
from placement_numa.api.deps import DatabaseDep, JsonBody, VersionDep, body_doc, require_version
from placement_numa.api.engine_dep import EngineDep
from placement_numa.api.numa_body import aliases_for
from placement_numa.api.schemas.capacity import CapacityFlavor
from placement_numa.db.database import Database
from placement_numa.engine import CandidateEngine, FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.services.capacity import FlavorAsk
from placement_numa.services.numa_candidates import CellIndexCache

__all__ = ["NumaRoute", "NumaRouteDep", "numa_post"]


@dataclass(frozen=True)
class NumaRoute:
    """One request to a NUMA extension route and what serving it needs (module docstring)."""

    request: Request
    version: mv.Microversion
    database: Database
    body: Any
    engine: CandidateEngine
    index_cache: CellIndexCache

    def indexed_fleet(self) -> tuple[FleetSnapshot, CellIndex]:
        """The engine's fleet snapshot now, and the cell index as of its revision."""
        fleet = self.engine.snapshot()
        return fleet, self.index_cache.get(self.database, fleet.revision)

    def flavor_ask(self, body: CapacityFlavor, default_name: str) -> FlavorAsk:
        """``body`` as the services' ``FlavorAsk``: named ``body.name`` or ``default_name``,
        with its image properties and, when it asks for devices, the ``[pci] alias`` table.

        Raises ``InvalidAliasConfig`` (400 ``placement_numa.pci_alias.invalid``) for a bad
        ``[pci] alias`` line.
        """
        flavor = Flavor(**body.model_dump(exclude={"image"}))
        image = ImageProperties(body.image_properties()) if body.image else None
        aliases = aliases_for(self.request.app.state, flavor)
        return FlavorAsk(flavor.name or default_name, flavor, image, aliases)


async def _numa_route(
    request: Request,
    version: VersionDep,
    database: DatabaseDep,
    body: JsonBody,
    engine: EngineDep,
    index_cache: CellIndexDep,
) -> NumaRoute:
    return NumaRoute(request, version, database, body, engine, index_cache)


NumaRouteDep = Annotated[NumaRoute, Depends(_numa_route)]


def numa_post(
    router: APIRouter,
    path: str,
    *,
    summary: str,
    body: type[BaseModel],
    body_text: str,
    **extra: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``router.post(path, ...)`` for a NUMA extension route: 404 below microversion 1.36, the
    JSON body documented as ``body`` (``body_text`` describes it); ``extra``: further
    ``APIRouter.post`` arguments (``responses=...``)."""
    return router.post(
        path,
        summary=summary,
        dependencies=[Depends(require_version(mv.SAME_SUBTREE))],
        openapi_extra=body_doc(body, body_text),
        **extra,
    )
