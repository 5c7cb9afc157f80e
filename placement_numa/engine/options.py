"""Which roots may anchor a candidate, and which providers may fill each slot under one root.

Semantics (OpenStack Placement 1.10-1.39, ``objects/allocation_candidate.py`` and
``objects/research_context.py`` read for behaviour):

* a suffixed group is satisfied by one provider that has every requested class with room for the
  amount (``min_unit <= amount <= max_unit``, ``amount % step_size == 0``, ``used + amount <=
  capacity``), all required traits, one of each any-of set, no forbidden trait, is in one of the
  aggregates of each ``member_of`` set and in no forbidden aggregate, and lies in the ``in_tree``
  tree. It anchors the candidate at its own root and, if it is a sharing provider
  (``MISC_SHARES_VIA_AGGREGATE``), at the root of every tree sharing an aggregate with it;
* the unsuffixed group takes each resource class from one provider of the anchor's tree or a
  sharing provider anchored there; ``member_of`` holds if the provider or the anchor root is in
  the aggregates (a sharing provider must itself be); ``in_tree`` restricts it to that tree
  without sharing providers (its required traits are checked on the union, by the search);
* ``root_required``: traits of the anchor root.
"""

from __future__ import annotations

from collections.abc import Iterator

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.fleet import ProviderInfo
from placement_numa.engine.plan import QueryPlan, Slot

__all__ = ["candidate_roots", "slot_options"]


def _aggs_ok(aggregates: frozenset[str], member_of: tuple[frozenset[str], ...]) -> bool:
    return all(not aggregates.isdisjoint(any_of) for any_of in member_of)


def _traits_ok(traits: frozenset[str], group: RequestGroup) -> bool:
    return (
        group.required_traits <= traits
        and all(not traits.isdisjoint(any_of) for any_of in group.any_traits)
        and traits.isdisjoint(group.forbidden_traits)
    )


def _root_ok(root: ProviderInfo, query: CandidateQuery) -> bool:
    traits = root.traits
    return (
        query.root_required <= traits
        and traits.isdisjoint(query.root_forbidden)
        and all(not traits.isdisjoint(any_of) for any_of in query.root_any)
    )


def candidate_roots(plan: QueryPlan) -> Iterator[int]:
    """Roots that may anchor a candidate, in index order (``root_required`` and ``in_tree``),
    lazily."""
    if plan.impossible:
        return iter(())
    fleet = plan.fleet
    allowed: set[int] | None = None
    for group, tree_root in zip(plan.groups, plan.in_tree_root, strict=True):
        if tree_root is None:
            continue
        anchors = {tree_root}
        if group.suffix is not None:
            for index in fleet.tree[tree_root]:
                anchors |= fleet.sharing_anchors.get(index, frozenset())
        allowed = anchors if allowed is None else allowed & anchors
    # a root can anchor a candidate only if its tree (or a sharing provider anchored there)
    # has inventory of every requested class: one set per class, kept per snapshot
    classes = sorted({rc for group in plan.groups for rc in group.resources})
    having = sorted((fleet.roots_having(rc) for rc in classes), key=len)
    if having and len(having[0]) < len(fleet.roots):
        narrowed = set(having[0])
        for other in having[1:]:
            narrowed &= other
        allowed = narrowed if allowed is None else allowed & narrowed
    roots = fleet.roots if allowed is None else sorted(allowed)
    providers = fleet.providers
    query = plan.query
    if not (query.root_required or query.root_forbidden or query.root_any):
        return iter(roots)
    return (r for r in roots if _root_ok(providers[r], query))


def _suffixed_ok(p: ProviderInfo, group: RequestGroup, tree_root: int | None) -> bool:
    if tree_root is not None and p.root != tree_root:
        return False
    inventories = p.inventories
    for rc, amount in group.resources.items():
        inventory = inventories.get(rc)
        if inventory is None or not inventory.fits(amount):
            return False
    return (
        _traits_ok(p.traits, group)
        and _aggs_ok(p.aggregates, group.member_of)
        and p.aggregates.isdisjoint(group.forbidden_aggregates)
    )


def slot_options(plan: QueryPlan, slot: Slot, root: int) -> list[int]:
    """Providers that may fill ``slot`` in a candidate anchored at ``root``, in index order."""
    fleet = plan.fleet
    providers = fleet.providers
    group = plan.groups[slot.group]
    tree_root = plan.in_tree_root[slot.group]
    shared = fleet.shared_into.get(root, ())
    if slot.suffixed:
        found = [i for i in fleet.tree[root] if _suffixed_ok(providers[i], group, tree_root)]
        extra = [
            s
            for s in shared
            if providers[s].root != root and _suffixed_ok(providers[s], group, tree_root)
        ]
        return sorted(found + extra) if extra else found
    if tree_root is not None and tree_root != root:
        return []
    ((rc, amount),) = slot.resources
    anchor = providers[root]
    anchor_in_aggs = _aggs_ok(anchor.aggregates, group.member_of)
    if not anchor.aggregates.isdisjoint(group.forbidden_aggregates):
        return []
    result = []
    for i in fleet.tree[root]:
        p = providers[i]
        inventory = p.inventories.get(rc)
        if (
            inventory is not None
            and inventory.fits(amount)
            and p.traits.isdisjoint(group.forbidden_traits)
            and (anchor_in_aggs or _aggs_ok(p.aggregates, group.member_of))
            and p.aggregates.isdisjoint(group.forbidden_aggregates)
        ):
            result.append(i)
    if tree_root is None and shared:
        members = set(result)
        for s in shared:
            p = providers[s]
            inventory = p.inventories.get(rc)
            if (
                s not in members
                and inventory is not None
                and inventory.fits(amount)
                and p.traits.isdisjoint(group.forbidden_traits)
                and _aggs_ok(p.aggregates, group.member_of)
                and p.aggregates.isdisjoint(group.forbidden_aggregates)
            ):
                result.append(s)
        result.sort()
    return result
