"""Route: ``GET /allocation_candidates`` (Placement 1.10+; 404 below).

Parses the query string (``api/candidate_query.py``), asks the candidate engine
(``EngineDep``), renders the per-microversion body (``api/schemas/allocation_candidates.py``).
A ``def`` handler: the search runs in the thread pool, never on the event loop; the body is
written piece by piece as it is sent, so the client reads its start while the rest is encoded.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.api.deps import VersionDep, require_version
from placement_numa.api.engine_dep import EngineDep
from placement_numa.api.limits import LimitsDep, check_candidate_query
from placement_numa.api.responses import json_pieces_response
from placement_numa.api.schemas.allocation_candidates import candidate_body_pieces
from placement_numa.api.schemas.candidate_pieces import process_fragments

__all__ = ["router"]

router = APIRouter(tags=["allocation_candidates"])


@router.get(
    "/allocation_candidates",
    dependencies=[Depends(require_version(mv.ALLOCATION_CANDIDATES))],
    summary="Allocation candidates for request groups",
)
def list_allocation_candidates(
    request: Request, version: VersionDep, engine: EngineDep, limits: LimitsDep
) -> Response:
    """Candidates satisfying every request group: ``resources$S``, ``required$S``,
    ``member_of$S``, ``in_tree$S``, ``group_policy``, ``same_subtree``, ``root_required``,
    ``limit``. 400 with ``placement.query.*`` codes for malformed queries, unknown resource
    classes or traits; 400 ``placement.limit.*`` past the caps of ``api/limits.py``.
    Answers reflect every write committed before the request started."""
    query = parse_candidate_query(list(request.query_params.multi_items()), version)
    check_candidate_query(query, limits)
    nested_aware = version >= mv.NESTED_CANDIDATES
    result = engine.search(query, nested_aware=nested_aware)
    # written while it is sent (api/responses.py: json_pieces_response)
    pieces = candidate_body_pieces(
        result,
        query,
        version,
        nested_aware=nested_aware,
        fragments=process_fragments(request.app.state),
    )
    return json_pieces_response(pieces, version)
