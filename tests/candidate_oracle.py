"""Brute-force allocation candidates: the oracle the engine is tested against.

Enumerates every assignment of request groups to providers (each suffixed group to one provider,
each class of the unsuffixed group to one provider) times every anchor root, and keeps those
satisfying Placement's rules written out directly from the definitions (no pruning, no shared
code with ``placement_numa.engine``). Only for small fleets: the work is
``providers ** slots * roots``.

Returns candidate keys as ``Candidate.key()`` spells them:
``(sorted ((provider, rc, amount), ...), ((suffix, sorted providers), ...))``.
"""

from __future__ import annotations

import itertools

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.fleet import FleetSnapshot, ProviderInfo

SHARING = "MISC_SHARES_VIA_AGGREGATE"


def _in_aggs(p: ProviderInfo, member_of: tuple[frozenset[str], ...]) -> bool:
    return all(p.aggregates & any_of for any_of in member_of)


def _anchors(fleet: FleetSnapshot, p: ProviderInfo) -> set[int]:
    anchors = {p.root}
    if SHARING in p.traits:
        for other in fleet.providers:
            if other.aggregates & p.aggregates:
                anchors.add(other.root)
    return anchors


def _fits(p: ProviderInfo, rc: str, amount: int) -> bool:
    inv = p.inventories.get(rc)
    if inv is None:
        return False
    return (
        inv.min_unit <= amount <= inv.max_unit
        and amount % inv.step_size == 0
        and inv.used + amount <= int((inv.total - inv.reserved) * inv.allocation_ratio)
    )


def _suffixed_ok(fleet: FleetSnapshot, g: RequestGroup, p: ProviderInfo, anchor: int) -> bool:
    if g.in_tree is not None:
        target = fleet.index_by_uuid.get(g.in_tree)
        if target is None or fleet.providers[target].root != p.root:
            return False
    return (
        all(_fits(p, rc, amount) for rc, amount in g.resources.items())
        and g.required_traits <= p.traits
        and all(p.traits & s for s in g.any_traits)
        and not (p.traits & g.forbidden_traits)
        and _in_aggs(p, g.member_of)
        and not (p.aggregates & g.forbidden_aggregates)
        and anchor in _anchors(fleet, p)
    )


def _unsuffixed_ok(
    fleet: FleetSnapshot, g: RequestGroup, p: ProviderInfo, rc: str, anchor: int
) -> bool:
    root = fleet.providers[anchor]
    if not _fits(p, rc, g.resources[rc]) or p.traits & g.forbidden_traits:
        return False
    if g.in_tree is not None:
        target = fleet.index_by_uuid.get(g.in_tree)
        if target is None or fleet.providers[target].root != anchor or p.root != anchor:
            return False
    else:
        via_tree = p.root == anchor
        via_sharing = (
            SHARING in p.traits
            and bool(p.aggregates)
            and anchor in _anchors(fleet, p)
            and (not g.member_of or _in_aggs(p, g.member_of))
        )
        if not (via_tree or via_sharing):
            return False
    if g.member_of and not (_in_aggs(p, g.member_of) or _in_aggs(root, g.member_of)):
        return False
    return not (p.aggregates & g.forbidden_aggregates or root.aggregates & g.forbidden_aggregates)


def _same_subtree(fleet: FleetSnapshot, members: set[int]) -> bool:
    if len(members) <= 1:
        return True
    common = set.intersection(*(set(fleet.ancestors(m)) for m in members))
    return bool(common & members)


def oracle(
    fleet: FleetSnapshot, query: CandidateQuery, *, nested_aware: bool = True
) -> set[tuple[object, ...]]:
    """Every candidate key for ``query`` on ``fleet`` (a set: the oracle has no order)."""
    providers = fleet.providers
    slots: list[tuple[int, str | None]] = []  # (group index, rc for the unsuffixed group)
    for i, g in enumerate(query.groups):
        if g.suffix is None:
            slots.extend((i, rc) for rc in sorted(g.resources))
        else:
            slots.append((i, None))
    results: set[tuple[object, ...]] = set()
    for anchor in fleet.roots:
        root = providers[anchor]
        if not (
            query.root_required <= root.traits
            and not (root.traits & query.root_forbidden)
            and all(root.traits & s for s in query.root_any)
        ):
            continue
        for choice in itertools.product(range(len(providers)), repeat=len(slots)):
            ok = True
            for (gi, rc), p in zip(slots, choice, strict=True):
                g = query.groups[gi]
                if rc is None:
                    ok = _suffixed_ok(fleet, g, providers[p], anchor)
                else:
                    ok = _unsuffixed_ok(fleet, g, providers[p], rc, anchor)
                if not ok:
                    break
            if not ok:
                continue
            by_group: dict[int, set[int]] = {}
            amounts: dict[tuple[int, str], int] = {}
            for (gi, rc), p in zip(slots, choice, strict=True):
                by_group.setdefault(gi, set()).add(p)
                g = query.groups[gi]
                for name, amount in g.resources.items():
                    if rc is None or rc == name:
                        amounts[(p, name)] = amounts.get((p, name), 0) + amount
            un = [gi for gi, g in enumerate(query.groups) if g.suffix is None]
            if un:
                g = query.groups[un[0]]
                traits = set().union(*(providers[p].traits for p in by_group[un[0]]))
                if not (g.required_traits <= traits and all(traits & s for s in g.any_traits)):
                    continue
            if any(
                amount > providers[p].inventories[rc].max_unit
                or providers[p].inventories[rc].used + amount
                > providers[p].inventories[rc].capacity
                for (p, rc), amount in amounts.items()
            ):
                continue
            if query.group_policy == "isolate":
                used = [p for (gi, rc), p in zip(slots, choice, strict=True) if rc is None]
                if len(set(used)) != len(used):
                    continue
            index = {g.suffix: gi for gi, g in enumerate(query.groups)}
            if not all(
                _same_subtree(fleet, set().union(*(by_group[index[s]] for s in names)))
                for names in query.same_subtree
            ):
                continue
            if not nested_aware and fleet.has_trees:
                owners = {p for p, _ in amounts}
                if len({providers[p].root for p in owners}) != len(owners):
                    continue
            allocations = tuple(sorted((p, rc, a) for (p, rc), a in amounts.items()))
            mappings = tuple(
                (g.suffix, tuple(sorted(by_group[gi]))) for gi, g in enumerate(query.groups)
            )
            results.add((allocations, mappings))
    return results
