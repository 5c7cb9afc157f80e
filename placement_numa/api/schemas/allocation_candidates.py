"""Response shapes of ``GET /allocation_candidates`` per microversion (plain dicts, for orjson).

* ``allocation_requests``: 1.10-1.11 a list form ``{"allocations": [{"resource_provider":
  {"uuid"}, "resources": {...}}]}``; from 1.12 ``{"allocations": {uuid: {"resources": {...}}}}``
  plus ``mappings`` ``{suffix: [uuid, ...]}`` from 1.34 (``""`` for the unsuffixed group);
* ``provider_summaries``: ``{uuid: {"resources": {rc: {"capacity", "used"}}}}``; only the
  requested classes before 1.27, every inventoried class after; ``traits`` (in database order)
  from 1.17; ``parent_provider_uuid`` and ``root_provider_uuid`` from 1.29.

Pydantic models here document the newest shape in OpenAPI. ``render_candidates`` builds the
document as plain dicts (the readable reference, and the form used below microversion 1.12);
``candidate_body_pieces`` and ``encode_candidates`` (``api/schemas/candidate_pieces.py``, also
exported here) write the same document as JSON bytes from fragments kept per process.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.candidate_pieces import (
    FragmentCache,
    candidate_body_pieces,
    encode_candidates,
)
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateResult, FleetSnapshot

__all__ = [
    "FragmentCache",
    "render_candidates",
    "encode_candidates",
    "candidate_body_pieces",
    "AllocationCandidatesResponse",
    "summary",
]


class _Resources(BaseModel):
    resources: dict[str, int]


def _since(version: mv.Microversion) -> Any:
    """A field that appeared at ``version`` (``x-min-microversion`` in the OpenAPI document)."""
    return Field(json_schema_extra={"x-min-microversion": str(version)})


class _AllocationRequest(BaseModel):
    allocations: dict[str, _Resources]
    mappings: dict[str, list[str]] = _since(mv.CANDIDATE_MAPPINGS)


class _Capacity(BaseModel):
    capacity: int
    used: int


class _Summary(BaseModel):
    resources: dict[str, _Capacity]
    traits: list[str] = _since(mv.CANDIDATES_REQUIRED)
    parent_provider_uuid: str | None = _since(mv.NESTED_CANDIDATES)
    root_provider_uuid: str = _since(mv.NESTED_CANDIDATES)


class AllocationCandidatesResponse(BaseModel):
    """Body of ``GET /allocation_candidates`` at the newest microversion."""

    allocation_requests: list[_AllocationRequest]
    provider_summaries: dict[str, _Summary]


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
