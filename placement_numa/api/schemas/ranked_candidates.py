"""Response bodies of the NUMA-ranked extensions: ``POST /allocation_candidates`` and the
allocation requests of ``POST /allocation_candidates/claim``.

An allocation request is the 1.39 ``GET /allocation_candidates`` shape plus a ``numa`` block::

    {"allocations": {rp_uuid: {"resources": {"PCPU": 4, "MEMORY_MB": 4096}}},
     "mappings": {"_PROC1": [rp_uuid], ...},
     "numa": {"host": "cn1", "cells": [0, 1], "width": 2, "average_distance": 15.5,
              "spread": 0.0, "fallback": false, "aligned": true, "devices": [],
              "explain": "resources_PROC1=PCPU:4&..."}}
"""

from __future__ import annotations

from typing import Any

from placement_numa.api.schemas.candidate_dicts import summary
from placement_numa.services.numa_candidates import RankedCandidate

__all__ = ["allocation_request", "numa_block", "render_ranked"]


def numa_block(ranked: RankedCandidate) -> dict[str, Any]:
    """The ``numa`` block of one ranked candidate: compute node name, NUMA cell ids, width
    (cells CPUs and memory come from), average NUMA distance (KEP-3545, over those cells and
    the devices') and CPU spread (KEP-2902), rounded to 4 places; ``aligned`` (every device on
    one of ``cells``) and ``devices`` (``resource_class``, ``provider`` uuid, host ``cell`` or
    null per device unit); a ``fallback`` candidate (host not reshaped to NUMA) has ``cells``
    empty and null scores."""
    score = ranked.score
    return {
        "host": ranked.host,
        "cells": list(score.cells.ids) if score else [],
        "width": score.width if score else None,
        "average_distance": round(score.average_distance, 4) if score else None,
        "spread": round(score.spread, 4) if score else None,
        "fallback": ranked.fallback,
        "aligned": score.aligned if score else None,
        "devices": [
            {"resource_class": rc, "provider": provider, "cell": cell}
            for rc, provider, cell in ranked.devices
        ],
        "explain": ranked.explain,
    }


def allocation_request(ranked: RankedCandidate) -> dict[str, Any]:
    """One ranked candidate as an allocation request (1.39 shape, amounts of one class on one
    provider summed, as Placement does) with its ``numa`` block."""
    providers = ranked.fleet.providers
    allocations: dict[str, dict[str, dict[str, int]]] = {}
    for index, rc, amount in ranked.candidate.allocations:
        resources = allocations.setdefault(providers[index].uuid, {"resources": {}})["resources"]
        resources[rc] = resources.get(rc, 0) + amount
    mappings = {
        (suffix or ""): [providers[p].uuid for p in chosen]
        for suffix, chosen in ranked.candidate.mappings()
    }
    return {"allocations": allocations, "mappings": mappings, "numa": numa_block(ranked)}


def render_ranked(found: list[RankedCandidate]) -> dict[str, Any]:
    """``{"allocation_requests": [...], "provider_summaries": {uuid: {...}}}`` for ranked
    candidates, in their order; summaries (1.39 shape: every inventory's ``capacity`` and
    ``used``, traits, parent and root uuids; ``candidate_dicts.summary``, the renderer
    of ``GET /allocation_candidates``) cover every provider of each candidate's tree."""
    requests: list[dict[str, Any]] = []
    summaries: dict[str, Any] = {}
    for ranked in found:
        fleet, candidate = ranked.fleet, ranked.candidate
        providers = fleet.providers
        requests.append(allocation_request(ranked))
        kept: dict[int, tuple[object, dict[str, Any]]] = fleet.derived.setdefault(_KEPT, {})
        for root in {providers[p].root for p, _, _ in candidate.allocations}:
            for index in fleet.tree[root]:
                info = providers[index]
                if info.uuid in summaries:
                    continue
                hit = kept.get(index)
                if hit is None or hit[0] is not info:
                    if len(kept) >= MAX_KEPT_SUMMARIES:
                        kept.clear()
                    hit = kept[index] = (info, summary(fleet, index, True, True, True, set()))
                summaries[info.uuid] = hit[1]
    return {"allocation_requests": requests, "provider_summaries": summaries}


# Provider summaries kept across requests, per snapshot lineage (``FleetSnapshot.derived``),
# each with the ``ProviderInfo`` it was rendered from: a refresh replaces the info of every
# provider it touched, so an entry is used only while its provider is unchanged (issue 30).
_KEPT = "ranked-provider-summaries"
MAX_KEPT_SUMMARIES = 20_000
