"""Routes (extension): ``/resource_providers/{uuid}/numa_distances``, a compute node's NUMA
distance matrix (the kernel's SLIT), used to rank candidates (KEP-3545).

Representation::

    {"resource_provider_uuid": uuid, "generation": int,
     "cells": {"0": <cell provider uuid>, ...},
     "distances": {"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}},
     "sockets": {"0": 0, "1": 1}}

``sockets`` (each cell's ``physical_package_id``, ``null`` when never given) is stored with the
matrix and set by the same ``PUT``; the ``socket`` PCI NUMA affinity policy reads it.

* ``GET``: 200, or 404 (no provider / ``placement_numa.numa_distances.not_found``);
* ``PUT`` ``{"generation": null|int, "distances": {...}}``: 200 with the new representation; 400
  (``placement_numa.numa_distances.invalid``) when the matrix is not square over the tree's NUMA
  cells, a diagonal is not 10, a value is outside 10..254, or the provider is not a root; 409
  (``placement.concurrent_update``) on a stale or missing generation;
* ``DELETE`` (optional ``?generation=N``): 204.

The matrix has its own generation; writing it does not change the provider's generation.
Available at every microversion (it is not part of Placement).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response

from placement_numa.api.deps import DatabaseDep, JsonBody, VersionDep, body_doc, validate
from placement_numa.api.responses import PlacementJSONResponse, json_response, no_content
from placement_numa.api.schemas.numa_topology import NumaDistancesBody
from placement_numa.numa.distances import matrix_to_json
from placement_numa.services import numa_distances as service

__all__ = ["router"]

router = APIRouter(tags=["NUMA distances (extension)"])

_PATH = "/resource_providers/{uuid}/numa_distances"


def _body(result: service.NumaDistances) -> dict[str, Any]:
    return {
        "resource_provider_uuid": result.root_uuid,
        "generation": result.generation,
        "cells": {str(cell): uuid for cell, uuid in sorted(result.cells.items())},
        "distances": matrix_to_json(result.matrix),
        "sockets": (
            {str(c): s for c, s in sorted(result.sockets.items())}
            if result.sockets is not None
            else None
        ),
    }


@router.get(_PATH, summary="Show a compute node's NUMA distance matrix (extension)")
def get_numa_distances(
    uuid: str, version: VersionDep, database: DatabaseDep
) -> PlacementJSONResponse:
    """The SLIT matrix of root provider ``uuid`` keyed by NUMA cell id, with its generation."""
    result = service.get_distances(database=database, uuid=uuid)
    return json_response(_body(result), version, last_modified=result.updated_at)


@router.put(
    _PATH,
    summary="Create or replace a compute node's NUMA distance matrix (extension)",
    openapi_extra=body_doc(NumaDistancesBody, "generation null creates; an integer replaces"),
)
def put_numa_distances(
    uuid: str, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> PlacementJSONResponse:
    """Validate the matrix against the tree's NUMA cells and store it (generation-guarded)."""
    data = validate(NumaDistancesBody, body)
    result = service.set_distances(
        database=database,
        uuid=uuid,
        generation=data.generation,
        distances=data.distances,
        sockets=data.sockets,
    )
    return json_response(_body(result), version, cache=False)


@router.delete(
    _PATH, status_code=204, summary="Delete a compute node's NUMA distance matrix (extension)"
)
def delete_numa_distances(
    uuid: str,
    database: DatabaseDep,
    generation: int | None = Query(None, description="if given, must be the current generation"),
) -> Response:
    """Remove the matrix (ranking then uses the kernel defaults 10/20)."""
    service.delete_distances(database=database, uuid=uuid, generation=generation)
    return no_content()
