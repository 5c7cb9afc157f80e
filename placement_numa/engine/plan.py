"""Planning a query against one snapshot: request groups become search slots in search order.

A *slot* is what the depth-first search (``engine/search.py``) fills with one provider: a
suffixed request group, or one resource class of the unsuffixed group. ``plan_query`` resolves
``in_tree`` uuids, orders the slots (``same_subtree`` groups first, identical suffixed groups
adjacent, then the unsuffixed group's classes) and finds the *interchangeable units* whose
providers may be swapped without changing the candidate (see ``_units``), so the search keeps
one representative per ordering class and ``engine/orderings.py`` produces the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.candidates import Layout
from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["Slot", "QueryPlan", "plan_query", "group_signature"]


@dataclass
class Slot:
    """One search slot: request group ``group`` (index into ``QueryPlan.groups``) asking for
    ``resources`` (``(resource class, amount)`` pairs) from one provider; ``suffixed``: a
    suffixed group (else one class of the unsuffixed group); ``symmetric_with_previous``: an
    identical suffixed group right before it (searched as a multiset)."""

    group: int  # index into plan.groups
    resources: tuple[tuple[str, int], ...]
    suffixed: bool
    symmetric_with_previous: bool = False


@dataclass
class QueryPlan:
    """A query resolved against one snapshot (uuids to indices, slots ordered for the search).

    Given: ``fleet``, ``query``, ``in_tree_root[g]`` (root index of group ``g``'s ``in_tree``),
    ``impossible`` (no candidate can exist), ``slots`` in search order, ``subtree_sets`` (group
    indices per ``same_subtree`` parameter). Derived: ``groups`` and ``isolate`` (from the
    query), ``sets_of_group[g]`` (the subtree sets holding group ``g``), ``slots_of_group[g]``,
    ``layout``, and the interchangeable units (see ``_units``): ``unit_runs`` (runs of units,
    each unit its slots in canonical order), ``lex_first[k]``/``lex_last[k]`` (ordering checks
    between consecutive units).
    """

    fleet: FleetSnapshot
    query: CandidateQuery
    in_tree_root: list[int | None]
    impossible: bool
    slots: list[Slot]
    subtree_sets: list[frozenset[int]]
    groups: tuple[RequestGroup, ...] = field(init=False)
    isolate: bool = field(init=False)
    sets_of_group: list[list[int]] = field(init=False)
    slots_of_group: list[list[int]] = field(init=False)
    layout: Layout = field(init=False)
    unit_runs: list[list[tuple[int, ...]]] = field(init=False)
    lex_first: dict[int, int] = field(init=False)
    lex_last: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = field(init=False)

    def __post_init__(self) -> None:
        groups = self.groups = self.query.groups
        self.isolate = self.query.isolate
        self.sets_of_group = [[] for _ in groups]
        for s, members in enumerate(self.subtree_sets):
            for i in members:
                self.sets_of_group[i].append(s)
        self.slots_of_group = [[] for _ in groups]
        for k, slot in enumerate(self.slots):
            self.slots_of_group[slot.group].append(k)
        self.layout = Layout(
            suffixes=tuple(g.suffix for g in groups),
            slots_of_group=tuple(tuple(ks) for ks in self.slots_of_group),
            slot_resources=tuple(slot.resources for slot in self.slots),
        )
        self.unit_runs, self.lex_first, self.lex_last = _units(
            groups, self.slots, self.subtree_sets, self.sets_of_group
        )


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
    slots = _slots_in_search_order(groups, subtree_sets)
    return QueryPlan(fleet, query, in_tree_root, impossible, slots, subtree_sets)


def _slots_in_search_order(
    groups: tuple[RequestGroup, ...], subtree_sets: list[frozenset[int]]
) -> list[Slot]:
    """Slots: ``same_subtree`` groups first (resourceless, then by set), then other suffixed
    groups (identical ones adjacent), then the unsuffixed group's classes."""
    in_subtree = set().union(*subtree_sets) if subtree_sets else set()
    order: list[int] = []
    for members in _sets_in_search_order(groups, subtree_sets):
        for i in sorted(members, key=lambda i: (bool(groups[i].resources), i)):
            if i not in order:
                order.append(i)
    others = [i for i, g in enumerate(groups) if g.suffix is not None and i not in in_subtree]
    signature = {i: group_signature(groups[i]) for i in others}
    others.sort(key=lambda i: (repr(signature[i]), i))
    slots: list[Slot] = []
    for i in order:
        slots.append(Slot(i, tuple(sorted(groups[i].resources.items())), True))
    previous: int | None = None
    for i in others:
        slots.append(
            Slot(
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
                slots.append(Slot(i, ((rc, amount),), False))
    return slots


def _set_signature(groups: tuple[RequestGroup, ...], members: frozenset[int]) -> str:
    return repr(
        sorted(repr((not groups[i].resources, group_signature(groups[i]))) for i in members)
    )


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
    slots: list[Slot],
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
                            repr(group_signature(groups[slots[k].group])),
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


def group_signature(group: RequestGroup) -> tuple[object, ...]:
    """Everything that makes two request groups match the same providers (suffix aside)."""
    return (
        tuple(sorted(group.resources.items())),
        tuple(sorted(group.required_traits)),
        tuple(sorted(tuple(sorted(s)) for s in group.any_traits)),
        tuple(sorted(group.forbidden_traits)),
        tuple(sorted(tuple(sorted(s)) for s in group.member_of)),
        tuple(sorted(group.forbidden_aggregates)),
        group.in_tree,
    )
