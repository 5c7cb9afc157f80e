"""``GET /allocation_candidates`` as plain dicts: ``render_candidates`` (the readable
reference of the response at every microversion, and the form used below 1.12) and ``summary``,
the one renderer of a provider summary (also used by the NUMA-ranked extensions,
``api/schemas/ranked_candidates.py``, and by the byte encoder, ``candidate_pieces.py``).
Shapes: ``api/schemas/allocation_candidates.py``.
"""

from __future__ import annotations

from typing import Any

from placement_numa.api import microversion as mv
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateResult, FleetSnapshot

__all__ = ["render_candidates", "summary"]


def _ordered_traits(traits: frozenset[str], order: dict[str, int] | None) -> list[str]:
    """``traits`` in database id order (Placement's order: standard traits, synced first, before
    custom ones), or by name when the snapshot carries no ids."""
    if order is None:
        return sorted(traits)
    last = len(order)
    return sorted(traits, key=lambda name: (order.get(name, last), name))


def render_candidates(
    result: CandidateResult,
    query: CandidateQuery,
    version: mv.Microversion,
    *,
    nested_aware: bool,
) -> dict[str, Any]:
    """The response body for ``result`` at ``version``."""
    fleet = result.fleet
    providers = fleet.providers
    uuids = fleet.uuids
    requests: list[dict[str, Any]] = []
    dict_form = version >= mv.ALLOCATIONS_DICT
    with_mappings = version >= mv.CANDIDATE_MAPPINGS
    candidates = result.candidates
    if candidates and dict_form:
        layout = candidates[0].layout
        single = [
            (suffix or "", ks[0])
            for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True)
        ]
        all_single = all(len(ks) == 1 for ks in layout.slots_of_group)
    for candidate in candidates:
        if dict_form:
            allocations: dict[str, Any] = {}
            last = -1
            resources: dict[str, int] = {}
            for p, rc, amount in candidate.allocations:
                if p != last:
                    resources = {}
                    allocations[uuids[p]] = {"resources": resources}
                    last = p
                resources[rc] = amount
            item: dict[str, Any] = {"allocations": allocations}
            if with_mappings:
                if all_single:
                    chosen = candidate.chosen
                    item["mappings"] = {label: [uuids[chosen[k]]] for label, k in single}
                else:
                    item["mappings"] = {
                        suffix or "": [uuids[p] for p in used]
                        for suffix, used in candidate.mappings()
                    }
        else:
            per_provider: dict[str, dict[str, int]] = {}
            for p, rc, amount in candidate.allocations:
                per_provider.setdefault(uuids[p], {})[rc] = amount
            item = {
                "allocations": [
                    {"resource_provider": {"uuid": u}, "resources": r}
                    for u, r in per_provider.items()
                ]
            }
        requests.append(item)

    if nested_aware or not fleet.has_trees:
        summary_ids = result.summary_providers()
    else:  # before 1.29 on a nested fleet: only providers used by the candidates
        summary_ids = sorted({p for c in result.candidates for p, _, _ in c.allocations})
    all_classes = version >= mv.SUMMARIES_ALL_INVENTORIES
    requested = {rc for g in query.groups for rc in g.resources}
    with_traits = version >= mv.CANDIDATES_REQUIRED
    with_tree = version >= mv.NESTED_CANDIDATES
    summaries: dict[str, Any] = {}
    for index in summary_ids:
        summaries[providers[index].uuid] = summary(
            fleet, index, all_classes, with_traits, with_tree, requested
        )
    return {"allocation_requests": requests, "provider_summaries": summaries}


def summary(
    fleet: FleetSnapshot,
    index: int,
    all_classes: bool,
    with_traits: bool,
    with_tree: bool,
    requested: set[str],
) -> dict[str, Any]:
    """Provider ``index``'s entry of ``provider_summaries``: ``resources`` (every class with
    ``all_classes``, else the ``requested`` ones), ``traits`` with ``with_traits``,
    ``parent_provider_uuid``/``root_provider_uuid`` with ``with_tree``."""
    providers = fleet.providers
    info = providers[index]
    found: dict[str, Any] = {
        "resources": {
            rc: {"capacity": inv.capacity, "used": inv.used}
            for rc, inv in sorted(info.inventories.items())
            if all_classes or rc in requested
        }
    }
    if with_traits:
        found["traits"] = _ordered_traits(info.traits, fleet.trait_order)
    if with_tree:
        found["parent_provider_uuid"] = providers[info.parent].uuid if info.parent >= 0 else None
        found["root_provider_uuid"] = providers[info.root].uuid
    return found
