"""Route (extension): ``POST /allocation_candidates/defragment`` — guest moves after which a
flavor fits (``services/defragment.py``; answered, never applied). Microversion 1.36+.

Body: ``{"flavor": {...}, "image": {...}, "instances": 1, "max_moves": 3,
"time_budget_ms": 2000, "prefer_closest_numa_nodes": true, "topology_policy": null}``
(``instances``: 1 to 16, how many must fit after the moves). Response (200)::

    {"fits_now": false, "found": true, "host": "cn7", "timed_out": false,
     "moves": [{"consumer": "<uuid>", "from": {"host": "cn7", "uuid": "...", "cells": [0]},
                "to": {"host": "cn2", "uuid": "...", "cells": [1]},
                "allocations": {"<rp uuid>": {"resources": {"PCPU": 2}}, ...}}]}

Applying a move is one ``PUT /allocations/{consumer}`` with its ``allocations`` (the guest
migrated by the operator's tooling). Errors: 400 for a bad body or flavor.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from placement_numa.api.deps import validate as validate_body
from placement_numa.api.numa_route import NumaRouteDep, numa_post
from placement_numa.api.responses import PlacementJSONResponse, json_response
from placement_numa.api.schemas.capacity import CapacityFlavor
from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.numa.request import NumaOptions
from placement_numa.services import defragment as service

__all__ = ["router"]

router = APIRouter(tags=["allocation candidates"])


class DefragmentBody(BaseModel):
    """A flavor (+ image) to make room for, and the search's bounds."""

    model_config = ConfigDict(extra="forbid")

    flavor: CapacityFlavor
    max_moves: Annotated[JsonInt, Field(ge=1, le=service.MAX_MOVES)] = 3
    instances: Annotated[JsonInt, Field(ge=1, le=service.MAX_INSTANCES)] = Field(
        1, description="how many instances of the flavor must fit after the moves"
    )
    time_budget_ms: Annotated[JsonInt, Field(ge=1, le=int(service.MAX_BUDGET_S * 1000))] = 2000
    prefer_closest_numa_nodes: StrictBool = True
    topology_policy: str | None = Field(
        None, pattern="^(none|best-effort|restricted|single-numa-node)$"
    )


def _end(names: dict[str, str], uuid: str, cells: tuple[int, ...]) -> dict[str, Any]:
    return {"host": names.get(uuid, uuid), "uuid": uuid, "cells": list(cells)}


@numa_post(
    router,
    "/allocation_candidates/defragment",
    summary="Guest moves after which a flavor fits (extension; answered, never applied)",
    body=DefragmentBody,
    body_text="the flavor to make room for and the search's bounds",
)
def post_defragment(route: NumaRouteDep) -> PlacementJSONResponse:
    """A short list of moves after which ``instances`` (default 1) instances of the flavor fit
    (``services/defragment.py``); writes nothing. ``host``: the host room was made on first
    (every move's ``from`` host gains room)."""
    data = validate_body(DefragmentBody, route.body)
    ask = route.flavor_ask(data.flavor, "flavor")
    _fleet, index = route.indexed_fleet()
    plan = service.defragment(
        database=route.database,
        engine=route.engine,
        index=index,
        ask=ask,
        options=NumaOptions(
            prefer_closest=data.prefer_closest_numa_nodes, topology_policy=data.topology_policy
        ),
        max_moves=data.max_moves,
        budget_s=data.time_budget_ms / 1000,
        instances=data.instances,
    )
    names = dict(index.host_names)
    answer = {
        "fits_now": plan.fits_now,
        "found": plan.found,
        "host": names.get(plan.host, plan.host) if plan.host else None,
        "timed_out": plan.timed_out,
        "moves": [
            {
                "consumer": m.consumer,
                "from": _end(names, m.from_host, m.from_cells),
                "to": _end(names, m.to_host, m.to_cells),
                "allocations": {rp: {"resources": dict(r)} for rp, r in m.allocations.items()},
            }
            for m in plan.moves
        ],
    }
    return json_response(answer, route.version, cache=False)
