"""The depth-first search of one root: every way to fill the slots from their options.

Given each slot's options under one root (``engine/options.py``), ``search_assignments`` assigns
slots in plan order, checking as it goes: capacity (with ``group_policy=none`` amounts of
several slots on one provider are summed and must fit ``used + sum <= capacity`` and ``sum <=
max_unit``), isolation (``group_policy=isolate``: every suffixed group, resourceless ones too,
on a distinct provider), a necessary ``same_subtree`` condition (the providers of the listed
groups all descend from one of them: some group still to place can sit at or above the lowest
common ancestor of those placed), the unsuffixed group's required traits on the union of its
providers, and the order of interchangeable units (one representative per ordering class:
identical suffixed groups in non-decreasing option order, alike ``same_subtree`` sets in
non-decreasing provider tuples; ``engine/orderings.py`` gives the rest). Dead branches die
early, so eight single-VF groups over eight children cost the candidates returned, not 8! dead
ends. Iterative (no recursion per slot: a query may have thousands of slots).
"""

from __future__ import annotations

from collections.abc import Iterator

from placement_numa.domain.request_groups import RequestGroup
from placement_numa.engine.fleet import FleetSnapshot, fits_summed
from placement_numa.engine.plan import QueryPlan

__all__ = ["Assignment", "search_assignments"]

# (provider per slot, consolidated allocations: sorted (provider, resource class, amount))
Assignment = tuple[list[int], tuple[tuple[int, str, int], ...]]


def search_assignments(plan: QueryPlan, options: list[list[int]]) -> Iterator[Assignment]:
    """Every full assignment of ``plan``'s slots from ``options`` (provider indices per slot),
    lazily, in depth-first order, one per ordering class of interchangeable units."""
    state = _State(plan, options)
    n = len(plan.slots)
    if n == 0 or not state.unsuffixed_traits_possible():
        return
    next_pos = [0] * n  # the next option position to try in slot k
    next_pos[0] = state.first_pos(0)
    k = 0
    while k >= 0:
        pos = next_pos[k]
        count = len(options[k])
        while pos < count and not state.try_apply(k, pos):
            pos += 1
        if pos == count:  # exhausted: back to the previous slot's next option
            k -= 1
            if k >= 0:
                state.undo(k)
                next_pos[k] = state.chosen_pos[k] + 1
            continue
        next_pos[k] = pos + 1
        if k + 1 < n:
            k += 1
            next_pos[k] = state.first_pos(k)
            continue
        yield list(state.chosen), state.allocations()
        state.undo(k)


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


def _traits_hold(group: RequestGroup, union: frozenset[str]) -> bool:
    return group.required_traits <= union and all(
        not union.isdisjoint(any_of) for any_of in group.any_traits
    )


class _State:
    """The partial assignment of one depth-first search and the bookkeeping of its checks."""

    def __init__(self, plan: QueryPlan, options: list[list[int]]) -> None:
        self.plan = plan
        self.fleet = plan.fleet
        self.providers = plan.fleet.providers
        self.slots = plan.slots
        self.options = options
        self.option_sets = [set(o) for o in options]
        n = len(plan.slots)
        self.chosen = [0] * n  # provider per slot
        self.chosen_pos = [0] * n  # option position per slot (for symmetric groups)
        self.consumption: dict[tuple[int, str], int] = {}
        self.isolated: set[int] = set()
        self.set_members: list[list[int]] = [[] for _ in plan.subtree_sets]
        self.set_lca = [-1 for _ in plan.subtree_sets]
        self.remaining_in_set = [len(members) for members in plan.subtree_sets]
        self.saved_lca: list[list[int]] = [[] for _ in range(n)]
        self.depth_now = 0
        # the unsuffixed group's trait requirements are checked on its last slot
        self.unsuffixed: RequestGroup | None = None
        self.unsuffixed_slots: list[int] = []
        self.check_traits_at = -1
        for i, group in enumerate(plan.groups):
            if group.suffix is None and (group.required_traits or group.any_traits):
                self.unsuffixed = group
                self.unsuffixed_slots = plan.slots_of_group[i]
                self.check_traits_at = self.unsuffixed_slots[-1]

    def unsuffixed_traits_possible(self) -> bool:
        """Whether the union of every option of the unsuffixed group can hold its traits."""
        if self.unsuffixed is None:
            return True
        providers, options = self.providers, self.options
        union: frozenset[str] = frozenset().union(
            *(providers[i].traits for k in self.unsuffixed_slots for i in options[k])
        )
        return _traits_hold(self.unsuffixed, union)

    def first_pos(self, k: int) -> int:
        """Where slot ``k``'s options start (after the previous one's for a symmetric slot)."""
        if self.slots[k].symmetric_with_previous:
            return self.chosen_pos[k - 1] + (1 if self.plan.isolate else 0)
        return 0

    def allocations(self) -> tuple[tuple[int, str, int], ...]:
        """The consolidated allocations of the current assignment, sorted."""
        return tuple(sorted((p, rc, amount) for (p, rc), amount in self.consumption.items()))

    def fits(self, k: int, p: int) -> bool:
        """Whether slot ``k``'s resources still fit on provider ``p`` (isolation, order of
        interchangeable units, summed capacity)."""
        slot = self.slots[k]
        if self.plan.isolate and slot.suffixed and p in self.isolated:
            return False
        before = self.plan.lex_first.get(k)
        if before is not None and p < self.chosen[before]:
            return False
        return fits_summed(self.providers[p].inventories, self.consumption, p, slot.resources)

    def try_apply(self, k: int, pos: int) -> bool:
        """Put option ``pos`` into slot ``k`` if every check passes (state applied then)."""
        p = self.options[k][pos]
        if not self.fits(k, p):
            return False
        slot = self.slots[k]
        consumption = self.consumption
        for rc, amount in slot.resources:
            consumption[(p, rc)] = consumption.get((p, rc), 0) + amount
        self.chosen[k] = p
        self.chosen_pos[k] = pos
        if self.plan.isolate and slot.suffixed:
            self.isolated.add(p)
        group_sets = self.plan.sets_of_group[slot.group] if slot.suffixed else []
        saved = self.saved_lca[k]
        saved.clear()
        for s in group_sets:
            saved.append(self.set_lca[s])
            self.set_lca[s] = p if not self.set_members[s] else _lca(self.fleet, self.set_lca[s], p)
            self.set_members[s].append(p)
            self.remaining_in_set[s] -= 1
        self.depth_now = k + 1
        if all(self.subtree_ok(s) for s in group_sets) and self.complete_ok(k):
            return True
        self.undo(k)
        return False

    def complete_ok(self, k: int) -> bool:
        """Checks that need slot ``k`` set: the unsuffixed group's traits on its last slot,
        the order of two alike ``same_subtree`` sets on the later one's last slot."""
        chosen = self.chosen
        if k == self.check_traits_at and self.unsuffixed is not None:
            union = frozenset().union(
                *(self.providers[chosen[j]].traits for j in self.unsuffixed_slots)
            )
            if not _traits_hold(self.unsuffixed, union):
                return False
        pair = self.plan.lex_last.get(k)
        if pair is not None:
            earlier, this = pair
            return tuple(chosen[j] for j in earlier) <= tuple(chosen[j] for j in this)
        return True

    def subtree_ok(self, s: int) -> bool:
        """Whether ``same_subtree`` set ``s`` can still hold: its placed providers' lowest common
        ancestor is one of them, or a group still to place may sit at or above it."""
        members = self.set_members[s]
        lca = self.set_lca[s]
        if lca < 0:
            return False
        if lca in members:
            return True
        if self.remaining_in_set[s] == 0:
            return False
        ancestors = self.fleet.ancestors(lca)
        for g in self.plan.subtree_sets[s]:
            for k in self.plan.slots_of_group[g]:
                if k >= self.depth_now and not self.option_sets[k].isdisjoint(ancestors):
                    return True
        return False

    def undo(self, k: int) -> None:
        """Take slot ``k``'s provider out again (the state as before ``try_apply(k, ...)``)."""
        slot = self.slots[k]
        p = self.chosen[k]
        group_sets = self.plan.sets_of_group[slot.group] if slot.suffixed else []
        for s, old in zip(reversed(group_sets), reversed(self.saved_lca[k]), strict=True):
            self.set_members[s].pop()
            self.set_lca[s] = old
            self.remaining_in_set[s] += 1
        if self.plan.isolate and slot.suffixed:
            self.isolated.discard(p)
        consumption = self.consumption
        for rc, amount in slot.resources:
            left = consumption[(p, rc)] - amount
            if left:
                consumption[(p, rc)] = left
            else:
                del consumption[(p, rc)]
        self.depth_now = k
