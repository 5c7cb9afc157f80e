"""Route (extension): ``POST /allocation_candidates`` — NUMA-aware candidates for a Nova flavor
or for the JSON form of the GET query, ranked best first (microversion 1.36+, the first with
``same_subtree`` and resourceless groups).

Response: the 1.39 ``GET /allocation_candidates`` shape (``allocation_requests`` with
``allocations`` and ``mappings``, ``provider_summaries`` with ``resources``, ``traits``,
``parent_provider_uuid``, ``root_provider_uuid``), in rank order, each allocation request with a
``numa`` block::

    "numa": {"host": "amd-nps4-1", "cells": [0, 1], "width": 2, "average_distance": 10.5,
             "spread": 1.5, "fallback": false, "aligned": true,
             "devices": [{"resource_class": "CUSTOM_PCI_8086_1572", "provider": rp_uuid,
                          "cell": 0}],
             "explain": "resources_MEM1=MEMORY_MB:4096&..."}

``host`` is the compute node's (root provider's) name. ``fallback`` candidates (hosts not
reshaped to NUMA, flavor form only) come after every NUMA fit and have ``cells`` empty and
null scores. ``devices`` names the provider and host cell (``null``: under the compute node) of
each PCI device the candidate takes (``pci_passthrough:alias`` with ``[pci] alias``);
``aligned`` is false when one sits off the cells of the guest's CPUs and memory. Errors: 400
``placement_numa.flavor.invalid`` naming the offending extra specs, 400 for a malformed body or
query, 400 ``placement_numa.pci_alias.invalid`` for a bad ``[pci] alias`` line.

The same body at the same ``placement_revision`` is answered from the bytes kept for it
(``api.ranked_answers``: per process, dropped when the revision moves).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from placement_numa.api.deps import validate
from placement_numa.api.limits import LimitsDep
from placement_numa.api.numa_body import searched
from placement_numa.api.numa_route import NumaRouteDep, numa_post
from placement_numa.api.ranked_answers import process_answers
from placement_numa.api.responses import json_bytes_response
from placement_numa.api.schemas.candidate_pieces import process_fragments
from placement_numa.api.schemas.numa_candidates import NumaCandidatesBody
from placement_numa.api.schemas.ranked_pieces import encode_ranked
from placement_numa.services import numa_candidates as service

__all__ = ["router"]

router = APIRouter(tags=["allocation candidates"])


@numa_post(
    router,
    "/allocation_candidates",
    summary="NUMA-aware allocation candidates for a flavor or a JSON query (extension)",
    body=NumaCandidatesBody,
    body_text="a Nova flavor (+ image) or the GET query as JSON",
)
def post_allocation_candidates(route: NumaRouteDep, limits: LimitsDep) -> Response:
    """Translate the flavor (Nova spec), search with NUMA ranking (width, KEP-3545 distance,
    KEP-2902 spread), answer in the 1.39 shape with a ``numa`` block per candidate."""
    state = route.request.app.state
    data = validate(NumaCandidatesBody, route.body)  # 400s first, as before any read
    wanted, options = searched(data, state, limits)
    answers = process_answers(state)
    key = None
    if not getattr(getattr(state, "settings", None), "randomize_allocation_candidates", False):
        key = answers.key(route.version, route.body)
    revision = route.engine.snapshot().revision
    if key is not None:
        kept = answers.get(revision, key)
        if kept is not None:  # the same body at the same revision (``api.ranked_answers``)
            return json_bytes_response(kept, route.version, cache=False)
    found = service.candidates_for(
        database=route.database,
        engine=route.engine,
        wanted=wanted,
        options=options,
        index_cache=route.index_cache,
    )
    body = encode_ranked(found, process_fragments(state))
    if key is not None and found and found[0].fleet.revision == revision:
        answers.put(revision, key, body)
    return json_bytes_response(body, route.version, cache=False)
