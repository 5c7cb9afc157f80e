"""The pure candidate search: per anchor root, lazy backtracking over request groups.

Semantics (OpenStack Placement 1.10-1.39, ``objects/allocation_candidate.py`` and
``objects/research_context.py`` read for behaviour):

* a suffixed group is satisfied by one provider that has every requested class with room for the
  amount (``min_unit <= amount <= max_unit``, ``amount % step_size == 0``, ``used + amount <=
  capacity``), all required traits, one of each any-of set, no forbidden trait, is in one of the
  aggregates of each ``member_of`` set and in no forbidden aggregate, and lies in the ``in_tree``
  tree. It anchors the candidate at its own root and, if it is a sharing provider
  (``MISC_SHARES_VIA_AGGREGATE``), at the root of every tree sharing an aggregate with it;
* the unsuffixed group takes each resource class from one provider of the anchor's tree or a
  sharing provider anchored there; the union of traits of the providers it uses must hold the
  required traits, none of them may have a forbidden trait; ``member_of`` holds if the provider
  or the anchor root is in the aggregates (a sharing provider must itself be); ``in_tree``
  restricts it to that tree without sharing providers;
* with ``group_policy=none`` amounts of several groups on one provider are summed and must fit
  ``used + sum <= capacity`` and ``sum <= max_unit``; with ``isolate`` every suffixed group
  (resourceless ones too) uses a distinct provider;
* ``same_subtree``: the providers of the listed groups all descend from one of them;
* ``root_required``: traits of the anchor root.

The search (design notes, "search per root, best first, lazily"): for each anchor root, the
options of every slot (a suffixed group, or one class of the unsuffixed group) are computed from
that tree only, then a depth-first search assigns slots, checking capacity, isolation and a
necessary ``same_subtree`` condition as it goes, so dead branches die early. Identical suffixed
groups outside ``same_subtree`` are searched as a multiset (non-decreasing option order) and
expanded into their distinct permutations only when a full assignment succeeds, so eight
single-VF groups over eight children cost the candidates returned, not 8! dead ends.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.candidates import Candidate, Layout, TemplateEntry
from placement_numa.engine.fleet import FleetSnapshot, ProviderInfo

__all__ = [
    "QueryPlan",
    "plan_query",
    "search_root",
    "candidate_roots",
    "RootSearch",
    "RootView",
    "RankBoundFn",
    "bounded_merge",
    "expand",
]


def _aggs_ok(aggregates: frozenset[str], member_of: tuple[frozenset[str], ...]) -> bool:
    return all(not aggregates.isdisjoint(any_of) for any_of in member_of)


def _traits_ok(traits: frozenset[str], group: RequestGroup) -> bool:
    return (
        group.required_traits <= traits
        and all(not traits.isdisjoint(any_of) for any_of in group.any_traits)
        and traits.isdisjoint(group.forbidden_traits)
    )


@dataclass
class _Slot:
    group: int  # index into plan.groups
    resources: tuple[tuple[str, int], ...]
    suffixed: bool
    symmetric_with_previous: bool = False


@dataclass
class QueryPlan:
    """A query resolved against one snapshot (uuids to indices, slots ordered for the search)."""

    fleet: FleetSnapshot
    query: CandidateQuery
    groups: tuple[RequestGroup, ...]
    in_tree_root: list[int | None]
    impossible: bool
    slots: list[_Slot]
    subtree_sets: list[frozenset[int]]  # group indices per same_subtree parameter
    sets_of_group: list[list[int]] = field(default_factory=list)
    isolate: bool = False
    slots_of_group: list[list[int]] = field(default_factory=list)
    layout: Layout | None = None
    # interchangeable units (see ``_units``): runs of units, each unit its slots in canonical
    # order; ``lex_first[k]``/``lex_last[k]``: ordering checks between consecutive units
    unit_runs: list[list[tuple[int, ...]]] = field(default_factory=list)
    lex_first: dict[int, int] = field(default_factory=dict)
    lex_last: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)


def plan_query(fleet: FleetSnapshot, query: CandidateQuery) -> QueryPlan:
    """Resolve ``query`` on ``fleet``: ``in_tree`` uuids to roots, slots in search order."""
    groups = query.groups
    impossible = not groups
    in_tree_root: list[int | None] = []
    for group in groups:
        if group.in_tree is None:
            in_tree_root.append(None)
            continue
        index = fleet.index_by_uuid.get(group.in_tree)
        if index is None:
            impossible = True
            in_tree_root.append(None)
        else:
            in_tree_root.append(fleet.providers[index].root)
    suffix_index = {g.suffix: i for i, g in enumerate(groups)}
    subtree_sets = [
        frozenset(suffix_index[s] for s in names if s in suffix_index)
        for names in query.same_subtree
    ]
    in_subtree = set().union(*subtree_sets) if subtree_sets else set()
    # Slots: same_subtree groups first (resourceless, then by set), then other suffixed groups
    # (identical ones adjacent), then the unsuffixed group's classes.
    order: list[int] = []
    for members in _sets_in_search_order(groups, subtree_sets):
        for i in sorted(members, key=lambda i: (bool(groups[i].resources), i)):
            if i not in order:
                order.append(i)
    others = [i for i, g in enumerate(groups) if g.suffix is not None and i not in in_subtree]
    signature = {i: _signature(groups[i]) for i in others}
    others.sort(key=lambda i: (repr(signature[i]), i))
    slots: list[_Slot] = []
    for i in order:
        slots.append(_Slot(i, tuple(sorted(groups[i].resources.items())), True))
    previous: int | None = None
    for i in others:
        slots.append(
            _Slot(
                i,
                tuple(sorted(groups[i].resources.items())),
                True,
                previous is not None and signature[previous] == signature[i],
            )
        )
        previous = i
    for i, group in enumerate(groups):
        if group.suffix is None:
            for rc, amount in sorted(group.resources.items()):
                slots.append(_Slot(i, ((rc, amount),), False))
    sets_of_group: list[list[int]] = [[] for _ in groups]
    for s, members in enumerate(subtree_sets):
        for i in members:
            sets_of_group[i].append(s)
    slots_of_group: list[list[int]] = [[] for _ in groups]
    for k, slot in enumerate(slots):
        slots_of_group[slot.group].append(k)
    layout = Layout(
        suffixes=tuple(g.suffix for g in groups),
        slots_of_group=tuple(tuple(ks) for ks in slots_of_group),
        slot_resources=tuple(slot.resources for slot in slots),
    )
    unit_runs, lex_first, lex_last = _units(groups, slots, subtree_sets, sets_of_group)
    return QueryPlan(
        unit_runs=unit_runs,
        lex_first=lex_first,
        lex_last=lex_last,
        layout=layout,
        slots_of_group=slots_of_group,
        fleet=fleet,
        query=query,
        groups=groups,
        in_tree_root=in_tree_root,
        impossible=impossible,
        slots=slots,
        subtree_sets=subtree_sets,
        sets_of_group=sets_of_group,
        isolate=query.isolate,
    )


def _set_signature(groups: tuple[RequestGroup, ...], members: frozenset[int]) -> str:
    return repr(sorted(repr((not groups[i].resources, _signature(groups[i]))) for i in members))


def _sets_in_search_order(
    groups: tuple[RequestGroup, ...], subtree_sets: list[frozenset[int]]
) -> list[frozenset[int]]:
    """``same_subtree`` sets in query order, except that sets looking alike (same member
    signatures) are moved next to the first of them, so interchangeable sets are adjacent."""
    first_seen: dict[str, int] = {}
    keyed = []
    for n, members in enumerate(subtree_sets):
        key = _set_signature(groups, members)
        keyed.append((first_seen.setdefault(key, n), n, members))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [members for _, _, members in keyed]


def _units(
    groups: tuple[RequestGroup, ...],
    slots: list[_Slot],
    subtree_sets: list[frozenset[int]],
    sets_of_group: list[list[int]],
) -> tuple[
    list[list[tuple[int, ...]]],
    dict[int, int],
    dict[int, tuple[tuple[int, ...], tuple[int, ...]]],
]:
    """Interchangeable units of a plan: runs of identical suffixed groups outside
    ``same_subtree`` (one slot each), and runs of alike ``same_subtree`` sets whose groups are in
    no other set (a NUMA guest's identical cells). Swapping the providers of two units of a run
    turns a candidate into another one (same resources, traits, aggregates, isolation and
    subtree rules), so the search keeps one representative per multiset (units' provider tuples
    in non-decreasing order) and ``expand`` produces the others.

    Returns ``(runs, lex_first, lex_last)``: ``runs`` lists units (slot tuples in canonical
    order); for a set unit that follows another of its run, ``lex_first[k] = j`` says slot
    ``k`` (its first canonical slot) must hold a provider ``>=`` slot ``j``'s, and
    ``lex_last[k] = (previous unit, this unit)`` asks the full tuple comparison once slot ``k``
    (its last slot in search order) is set.
    """
    slots_of_group: list[list[int]] = [[] for _ in groups]
    for k, slot in enumerate(slots):
        slots_of_group[slot.group].append(k)
    runs: list[list[tuple[int, ...]]] = []
    # single suffixed groups outside same_subtree (``symmetric_with_previous``)
    current: list[tuple[int, ...]] = []
    for k, slot in enumerate(slots):
        if slot.suffixed and not sets_of_group[slot.group]:
            if slot.symmetric_with_previous and current:
                current.append((k,))
                continue
            if len(current) > 1:
                runs.append(current)
            current = [(k,)]
        else:
            if len(current) > 1:
                runs.append(current)
            current = []
    if len(current) > 1:
        runs.append(current)
    # same_subtree sets
    lex_first: dict[int, int] = {}
    lex_last: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    eligible = []
    for s, members in enumerate(subtree_sets):
        if members and all(sets_of_group[i] == [s] for i in members):
            ks = [k for i in members for k in slots_of_group[i]]
            ks.sort()
            if ks == list(range(ks[0], ks[0] + len(ks))):
                canonical = tuple(
                    sorted(
                        ks,
                        key=lambda k: (
                            not groups[slots[k].group].resources,
                            repr(_signature(groups[slots[k].group])),
                            k,
                        ),
                    )
                )
                eligible.append((ks[0], _set_signature(groups, members), canonical))
    eligible.sort()
    previous: tuple[int, str, tuple[int, ...]] | None = None
    set_run: list[tuple[int, ...]] = []
    for first, key, canonical in eligible:
        if previous is not None and previous[1] == key and first == previous[0] + len(previous[2]):
            set_run.append(canonical)
            lex_first[canonical[0]] = previous[2][0]
            lex_last[first + len(canonical) - 1] = (previous[2], canonical)
        else:
            if len(set_run) > 1:
                runs.append(set_run)
            set_run = [canonical]
        previous = (first, key, canonical)
    if len(set_run) > 1:
        runs.append(set_run)
    return runs, lex_first, lex_last


def _signature(group: RequestGroup) -> tuple[object, ...]:
    return (
        tuple(sorted(group.resources.items())),
        tuple(sorted(group.required_traits)),
        tuple(sorted(tuple(sorted(s)) for s in group.any_traits)),
        tuple(sorted(group.forbidden_traits)),
        tuple(sorted(tuple(sorted(s)) for s in group.member_of)),
        tuple(sorted(group.forbidden_aggregates)),
        group.in_tree,
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


def _slot_options(plan: QueryPlan, slot: _Slot, root: int) -> list[int]:
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


def _lca(fleet: FleetSnapshot, a: int, b: int) -> int:
    """Lowest common ancestor of two providers, -1 when they are in different trees."""
    providers = fleet.providers
    while providers[a].depth > providers[b].depth:
        a = providers[a].parent
    while providers[b].depth > providers[a].depth:
        b = providers[b].parent
    while a != b:
        a, b = providers[a].parent, providers[b].parent
        if a < 0 or b < 0:
            return -1
    return a


def _search_raw(
    plan: QueryPlan, options: list[list[int]]
) -> Iterator[tuple[list[int], tuple[tuple[int, str, int], ...]]]:
    """Depth-first search over slots given each slot's options: yields ``(provider per slot,
    consolidated allocations)`` for every full assignment with interchangeable units in
    non-decreasing order (one representative per ordering class; ``expand`` gives the rest)."""
    fleet = plan.fleet
    providers = fleet.providers
    slots = plan.slots
    groups = plan.groups
    option_sets = [set(o) for o in options]
    slots_of_group: list[list[int]] = [[] for _ in groups]
    for k, slot in enumerate(slots):
        slots_of_group[slot.group].append(k)
    # the unsuffixed group's trait requirements are checked on its last slot
    unsuffixed = [i for i, g in enumerate(groups) if g.suffix is None]
    unsuffixed_group = groups[unsuffixed[0]] if unsuffixed else None
    if unsuffixed_group is not None and (
        unsuffixed_group.required_traits or unsuffixed_group.any_traits
    ):
        k_un = slots_of_group[unsuffixed[0]]
        union: frozenset[str] = frozenset().union(
            *(providers[i].traits for k in k_un for i in options[k])
        )
        if not (
            unsuffixed_group.required_traits <= union
            and all(not union.isdisjoint(s) for s in unsuffixed_group.any_traits)
        ):
            return
        check_traits_at = k_un[-1]
    else:
        check_traits_at = -1
    unsuffixed_slots = slots_of_group[unsuffixed[0]] if unsuffixed else []

    n = len(slots)
    chosen = [0] * n  # provider per slot
    chosen_pos = [0] * n  # option position per slot (for symmetric groups)
    consumption: dict[tuple[int, str], int] = {}
    isolated: set[int] = set()
    set_members: list[list[int]] = [[] for _ in plan.subtree_sets]
    set_lca: list[int] = [-1 for _ in plan.subtree_sets]
    remaining_in_set = [len(members) for members in plan.subtree_sets]
    isolate = plan.isolate
    lex_first, lex_last = plan.lex_first, plan.lex_last
    depth_now = 0

    def subtree_ok(s: int) -> bool:
        members = set_members[s]
        lca = set_lca[s]
        if lca < 0:
            return False
        if lca in members:
            return True
        if remaining_in_set[s] == 0:
            return False
        # one of the groups still to place must be able to sit at or above the LCA
        ancestors = fleet.ancestors(lca)
        for g in plan.subtree_sets[s]:
            for k in slots_of_group[g]:
                if k >= depth_now and not option_sets[k].isdisjoint(ancestors):
                    return True
        return False

    saved_lca: list[list[int]] = [[] for _ in range(n)]

    def undo(k: int) -> None:
        slot = slots[k]
        p = chosen[k]
        group_sets = plan.sets_of_group[slot.group] if slot.suffixed else ()
        saved = saved_lca[k]
        for s, old in zip(reversed(group_sets), reversed(saved), strict=True):
            set_members[s].pop()
            set_lca[s] = old
            remaining_in_set[s] += 1
        if isolate and slot.suffixed:
            isolated.discard(p)
        for rc, amount in slot.resources:
            left = consumption[(p, rc)] - amount
            if left:
                consumption[(p, rc)] = left
            else:
                del consumption[(p, rc)]

    def try_apply(k: int, pos: int) -> bool:
        """Put option ``pos`` into slot ``k`` if every check passes (state applied then)."""
        nonlocal depth_now
        slot = slots[k]
        p = options[k][pos]
        if isolate and slot.suffixed and p in isolated:
            return False
        before = lex_first.get(k)
        if before is not None and p < chosen[before]:
            return False
        inventories = providers[p].inventories
        for rc, amount in slot.resources:
            total = consumption.get((p, rc), 0) + amount
            inventory = inventories[rc]
            if total > inventory.max_unit or inventory.used + total > inventory.capacity:
                return False
        for rc, amount in slot.resources:
            consumption[(p, rc)] = consumption.get((p, rc), 0) + amount
        chosen[k] = p
        chosen_pos[k] = pos
        if isolate and slot.suffixed:
            isolated.add(p)
        group_sets = plan.sets_of_group[slot.group] if slot.suffixed else ()
        saved = saved_lca[k]
        saved.clear()
        for s in group_sets:
            saved.append(set_lca[s])
            set_lca[s] = p if not set_members[s] else _lca(fleet, set_lca[s], p)
            set_members[s].append(p)
            remaining_in_set[s] -= 1
        depth_now = k + 1
        good = all(subtree_ok(s) for s in group_sets)
        if good and k == check_traits_at:
            union = frozenset().union(*(providers[chosen[j]].traits for j in unsuffixed_slots))
            good = unsuffixed_group is not None and (
                unsuffixed_group.required_traits <= union
                and all(not union.isdisjoint(a) for a in unsuffixed_group.any_traits)
            )
        if good:
            pair = lex_last.get(k)
            if pair is not None:
                earlier, this = pair
                good = tuple(chosen[j] for j in earlier) <= tuple(chosen[j] for j in this)
        if not good:
            undo(k)
            depth_now = k
            return False
        return True

    def first_pos(k: int) -> int:
        if slots[k].symmetric_with_previous:
            return chosen_pos[k - 1] + (1 if isolate else 0)
        return 0

    if n == 0:
        return
    # Iterative depth-first search (no recursion per slot: a query may have thousands of slots).
    # next_pos[k]: the next option position to try in slot k.
    next_pos = [0] * n
    next_pos[0] = first_pos(0)
    k = 0
    while k >= 0:
        slot_options = options[k]
        placed = False
        pos = next_pos[k]
        while pos < len(slot_options):
            if try_apply(k, pos):
                placed = True
                break
            pos += 1
        if not placed:
            k -= 1
            if k >= 0:
                undo(k)
                depth_now = k
                next_pos[k] = chosen_pos[k] + 1
            continue
        next_pos[k] = pos + 1
        if k + 1 < n:
            k += 1
            next_pos[k] = first_pos(k)
            continue
        # a full assignment
        yield (
            list(chosen),
            tuple(sorted((p, rc, amount) for (p, rc), amount in consumption.items())),
        )
        undo(k)
        depth_now = k
        # next_pos[k] already points past the option just used


def expand(base: list[int], runs: Sequence[Sequence[tuple[int, ...]]]) -> Iterator[list[int]]:
    """Every distinct way to hand the provider tuples chosen for each run of interchangeable
    units to the units of the run (distinct permutations of a multiset, lexicographic), for
    every run at once (their product, first run varying slowest); ``base`` first. Lazy and
    iterative (no recursion per run)."""
    if not runs:
        yield base
        return
    tuples_per_run = [[tuple(base[k] for k in unit) for unit in run] for run in runs]
    iterators: list[Iterator[list[tuple[int, ...]]]] = []
    current: list[list[tuple[int, ...]]] = []
    for tuples in tuples_per_run:
        it = _distinct_permutations(sorted(tuples))
        iterators.append(it)
        current.append(next(it))
    while True:
        variant = list(base)
        for run, perm in zip(runs, current, strict=True):
            for unit, values in zip(run, perm, strict=True):
                for k, value in zip(unit, values, strict=True):
                    variant[k] = value
        yield variant
        r = len(runs) - 1
        while r >= 0:
            following = next(iterators[r], None)
            if following is not None:
                current[r] = following
                break
            iterators[r] = _distinct_permutations(sorted(tuples_per_run[r]))
            current[r] = next(iterators[r])
            r -= 1
        if r < 0:
            return


def _distinct_permutations(values: list[Any]) -> Iterator[list[Any]]:
    """Distinct permutations of a sorted multiset, lexicographic; work per permutation is
    O(len(values)) (Knuth, TAOCP 7.2.1.2, Algorithm L)."""
    a = list(values)
    n = len(a)
    while True:
        yield list(a)
        j = n - 2
        while j >= 0 and a[j] >= a[j + 1]:
            j -= 1
        if j < 0:
            return
        m = n - 1
        while a[m] <= a[j]:
            m -= 1
        a[j], a[m] = a[m], a[j]
        a[j + 1 :] = reversed(a[j + 1 :])


class RootSearch:
    """Searches roots one at a time for one ``QueryPlan``, reusing work across look-alike roots.

    Two roots whose slot options, ancestry among those options, room per requested class
    (``min(max_unit, capacity - used)``) and relevant traits look the same (by position) have the
    same candidates up to renaming providers; the first root's results are kept as a template
    (positions) and replayed for the others. Results are identical to searching each root.
    """

    MAX_TEMPLATES = 4096

    def __init__(self, plan: QueryPlan) -> None:
        self.plan = plan
        assert plan.layout is not None  # set by plan_query
        self.layout = plan.layout
        self.templates: dict[tuple[object, ...], list[TemplateEntry]] = {}
        self.rcs = sorted({rc for g in plan.groups for rc in g.resources})
        names: set[str] = set()
        for g in plan.groups:
            if g.suffix is None:
                names |= g.required_traits
                for any_of in g.any_traits:
                    names |= any_of
        self.trait_names = frozenset(names)
        self.by_profile = all(t is None for t in plan.in_tree_root)
        self.profile_templates: dict[int, list[TemplateEntry]] = {}
        # per profile: every ordering of each entry (orderings=True replays)
        self.expanded_templates: dict[int, list[TemplateEntry]] = {}
        self.bound_cache: dict[object, object] = {}  # see RootView.cache
        self.slot_keys = [
            (
                slot.suffixed,
                slot.resources,
                _signature(plan.groups[slot.group]),
                plan.in_tree_root[slot.group],
            )
            for slot in plan.slots
        ]

    def options(self, root: int) -> list[list[int]] | None:
        """Options per slot for ``root``, or ``None`` when a slot has none."""
        found: dict[object, list[int]] = {}
        options = []
        for slot, key in zip(self.plan.slots, self.slot_keys, strict=True):
            opts = found.get(key)
            if opts is None:
                opts = _slot_options(self.plan, slot, root)
                if not opts:
                    return None
                found[key] = opts
            options.append(opts)
        return options

    def candidates(self, root: int, *, orderings: bool = True) -> Iterator[Candidate]:
        """Every candidate anchored at ``root``, lazily, in a deterministic depth-first order;
        ``orderings=False``: one per ordering class of interchangeable units (``_units``)."""
        runs = self.plan.unit_runs
        if not orderings or not runs:
            yield from self.bases(root)
            return
        profile = self._profile(root)
        if profile >= 0:
            known = self.expanded_templates.get(profile)
            if known is None and profile in self.profile_templates:
                known = self.expanded_templates[profile] = [
                    variant
                    for entry in self.profile_templates[profile]
                    for variant in self._entry_orderings(entry)
                ]
            if known is not None:
                members = self.plan.fleet.tree[root]
                layout = self.layout
                for entry in known:
                    yield Candidate.replayed(root, members, entry, layout)
                return
        for base in self.bases(root):
            yield from self.orderings(base)

    def _entry_orderings(self, entry: TemplateEntry) -> Iterator[TemplateEntry]:
        """``entry`` and its reorderings, in positions."""
        first = True
        for chosen in expand(list(entry.chosen), self.plan.unit_runs):
            if first:
                first = False
                yield entry
            else:
                yield TemplateEntry(tuple(chosen), entry.allocations)

    def orderings(self, base: Candidate) -> Iterator[Candidate]:
        """``base`` and every other candidate from reordering its interchangeable units (the
        same resources, providers and allocations), lazily; ``base`` first."""
        runs = self.plan.unit_runs
        if not runs:
            yield base
            return
        first = True
        for chosen in expand(list(base.chosen), runs):
            if first:
                first = False
                yield base
                continue
            yield Candidate(base.anchor, tuple(chosen), base.allocations, base.layout)

    def _profile(self, root: int) -> int:
        if self.by_profile and root not in self.plan.fleet.shared_into:
            return self.plan.fleet.root_profiles[root]
        return -1

    def bases(self, root: int) -> Iterator[Candidate]:
        """Candidates anchored at ``root`` with interchangeable units in non-decreasing order
        (one per ordering class), lazily, in a deterministic depth-first order."""
        plan = self.plan
        fleet = plan.fleet
        layout = self.layout
        profile = self._profile(root)
        if profile >= 0:
            known = self.profile_templates.get(profile)
            if known is not None:
                members = fleet.tree[root]
                for entry in known:
                    yield Candidate.replayed(root, members, entry, layout)
                return
        options = self.options(root)
        if options is None:
            if profile >= 0 and len(self.profile_templates) < self.MAX_TEMPLATES:
                self.profile_templates[profile] = []
            return
        relevant = sorted(set().union(*options))
        pos = {p: k for k, p in enumerate(relevant)}
        signature = self._signature(options, relevant, pos)
        template = self.templates.get(signature)
        if template is not None:
            results: Iterator[TemplateEntry] = iter(template)
        else:
            results = (
                TemplateEntry(
                    tuple([pos[p] for p in chosen]),
                    tuple([(pos[p], rc, a) for p, rc, a in allocations]),
                )
                for chosen, allocations in _search_raw(plan, options)
            )
        recorded = []
        by_member = []
        where = {m: k for k, m in enumerate(fleet.tree[root])} if profile >= 0 else {}
        for entry in results:
            if template is None:
                recorded.append(entry)
            candidate = Candidate.replayed(root, relevant, entry, layout)
            if profile >= 0:
                chosen = candidate.chosen
                allocations = candidate.allocations
                by_member.append(
                    TemplateEntry(
                        tuple([where[p] for p in chosen]),
                        tuple([(where[p], rc, a) for p, rc, a in allocations]),
                    )
                )
            yield candidate
        if template is None and len(self.templates) < self.MAX_TEMPLATES:
            self.templates[signature] = recorded
        if profile >= 0 and len(self.profile_templates) < self.MAX_TEMPLATES:
            self.profile_templates[profile] = by_member

    def _signature(
        self, options: list[list[int]], relevant: list[int], pos: dict[int, int]
    ) -> tuple[object, ...]:
        providers = self.plan.fleet.providers
        rooms = []
        for p in relevant:
            inventories = providers[p].inventories
            for rc in self.rcs:
                inv = inventories.get(rc)
                rooms.append(-1 if inv is None else min(inv.max_unit, inv.capacity - inv.used))
        ancestry: tuple[object, ...] = ()
        if self.plan.subtree_sets:
            chains = self.plan.fleet.chains
            ancestry = tuple(tuple(pos[a] for a in chains[p] if a in pos) for p in relevant)
        traits: tuple[object, ...] = ()
        if self.trait_names:
            traits = tuple(providers[p].traits & self.trait_names for p in relevant)
        return (
            tuple(tuple(pos[p] for p in opts) for opts in options),
            tuple(rooms),
            ancestry,
            traits,
        )


def search_root(plan: QueryPlan, root: int) -> Iterator[Candidate]:
    """Every candidate anchored at ``root`` (no template reuse; see ``RootSearch``)."""
    searcher = RootSearch(plan)
    return searcher.candidates(root)


class RootView:
    """What a rank bound (``RankBoundFn``) may read about one anchor root before it is searched.

    * ``root``: the root's index; ``plan``: the ``QueryPlan`` (``plan.slots[k]``: ``.group``,
      ``.suffixed``, ``.resources``; ``plan.subtree_sets``; ``plan.isolate``; ``plan.groups``);
    * ``profile``: ``fleet.root_profiles[root]`` when the root's options and candidates depend
      only on its tree's look (no ``in_tree``, no sharing provider anchored there), else ``None``;
      two roots with the same profile have the same options position by position;
    * ``cache``: a dict shared by every view of one search (for per-profile memos);
    * ``options()``: providers per slot for this root (``None``: some slot has none, so the
      root has no candidate).
    """

    __slots__ = ("searcher", "root", "profile")

    def __init__(self, searcher: RootSearch, root: int) -> None:
        self.searcher = searcher
        self.root = root
        fleet = searcher.plan.fleet
        self.profile: int | None = (
            fleet.root_profiles[root]
            if searcher.by_profile and root not in fleet.shared_into
            else None
        )

    @property
    def plan(self) -> QueryPlan:
        """The ``QueryPlan`` being searched."""
        return self.searcher.plan

    @property
    def fleet(self) -> FleetSnapshot:
        """The ``FleetSnapshot`` the plan was made for."""
        return self.searcher.plan.fleet

    @property
    def cache(self) -> dict[object, object]:
        """A dict shared by every view of one search (per-profile memos of a rank bound)."""
        return self.searcher.bound_cache

    def options(self) -> list[list[int]] | None:
        """Provider indices per slot for this root; ``None`` when some slot has none."""
        return self.searcher.options(self.root)


# ``bound(view) -> key``: a lower bound of the rank key of every candidate anchored at
# ``view.root`` (``None`` only when the root provably has no candidate).
RankBoundFn = Callable[[RootView], Any]
RankFnT = Callable[[Candidate, FleetSnapshot], Any]


def bounded_merge(
    searcher: RootSearch,
    roots: Iterable[int],
    per_root: Callable[[int], Iterator[Candidate]],
    rank: RankFnT,
    bound: RankBoundFn,
) -> Iterator[Candidate]:
    """Ranked candidates of ``roots`` in the exhaustive order (rank key, then root order, then
    each root's depth-first order), searching roots lazily in ascending bound order.

    Every root gets a bound first (cheap, see ``RankBoundFn``); roots are then searched in
    ``(bound, root order)`` order, each root's candidates sorted by key and merged with a heap;
    a candidate is yielded once it precedes ``(bound, order)`` of every root not searched yet, so
    the work follows the roots whose best candidates are returned (design notes, "search per
    root, best first"). Roots whose candidates may also be found from another anchor (sharing
    providers, ``fleet.roots_with_sharing``) are all searched first, in root order, so the
    dedup of ``per_root`` keeps the same copy as the exhaustive merge.
    """
    fleet = searcher.plan.fleet
    sharing_roots = fleet.roots_with_sharing
    pending: list[tuple[Any, int, int]] = []  # (bound, order, root)
    shared: list[tuple[int, int]] = []  # (order, root)
    for order, root in enumerate(roots):
        if root in sharing_roots:
            shared.append((order, root))
            continue
        key = bound(RootView(searcher, root))
        if key is not None:
            pending.append((key, order, root))
    pending.sort(key=lambda item: (item[0], item[1]))
    heap: list[tuple[Any, int, int, Candidate]] = []
    queues: dict[int, Iterator[tuple[Any, int, Candidate]]] = {}

    def expand(order: int, root: int) -> None:
        ranked = sorted(
            ((rank(c, fleet), n, c) for n, c in enumerate(per_root(root))),
            key=lambda item: (item[0], item[1]),
        )
        if ranked:
            queue = iter(ranked)
            key, n, candidate = next(queue)
            queues[order] = queue
            heapq.heappush(heap, (key, order, n, candidate))

    def pop() -> Candidate:
        _, order, _, candidate = heapq.heappop(heap)
        following = next(queues[order], None)
        if following is not None:
            heapq.heappush(heap, (following[0], order, following[1], following[2]))
        return candidate

    for order, root in shared:
        expand(order, root)
    for key, order, root in pending:
        while heap and (heap[0][0], heap[0][1]) < (key, order):
            yield pop()
        expand(order, root)
    while heap:
        yield pop()
