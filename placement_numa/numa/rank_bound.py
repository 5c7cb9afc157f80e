"""The best rank key a root can offer, without enumerating its candidates (the engine's
``rank_bound`` hook for the NUMA ranking).

The NUMA rank key of a candidate (``ranking.rank_key``) depends only on the host NUMA cells it
touches and on the CPUs it takes from each cell provider. So the search is relaxed to those: each
slot's options (providers) are collapsed into *classes* ``(cell, on the cell provider itself)``;
a depth-first search assigns one class per slot and keeps the smallest key. Every real candidate
maps to an assignment that passes the relaxed checks and has the same key, so the result is a
lower bound of every candidate's key (and, for the NUMA queries of ``translate``, where page-size
children and cell providers are fixed by the cell, the exact best key).

Checks kept (each exact on what it sees, or dropped where it could not be):

* per slot, only providers the engine would offer (the slot options);
* distinct providers (``group_policy=isolate`` among suffixed groups; the guest cells' anchor
  groups) when a class holds a single provider;
* summed amounts on a single-provider class (the engine's own check, ``engine.fleet.fits_summed``);
* ``same_subtree``: members all in host cells must be in one cell (cells not nested);
* width: a branch touching more cells than the best key found is cut.

Dropped (relaxed): the unsuffixed group's trait union, isolation and sums on classes of several
providers, ``same_subtree`` when a member may sit outside every cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from placement_numa.engine.fleet import FleetSnapshot, fits_summed
from placement_numa.engine.protocol import PlanShape

__all__ = ["relaxed_best_key"]

# (cell id or None, CPUs counted on the cell, the class's provider when it has only one, else -1)
_Class = tuple[int | None, int, int]


def _classes(
    options: Sequence[int],
    cpu_amount: int,
    cell_of: Callable[[int], int | None],
    cell_providers: Mapping[int, int],
) -> list[_Class]:
    found: dict[tuple[int | None, bool], list[int]] = {}
    for p in options:
        found.setdefault((cell_of(p), p in cell_providers), []).append(p)
    return [
        (cell, cpu_amount if own else 0, members[0] if len(members) == 1 else -1)
        for (cell, own), members in found.items()
    ]


def relaxed_best_key(
    plan: PlanShape,
    options: Sequence[Sequence[int]],
    *,
    fleet: FleetSnapshot,
    cell_of: Callable[[int], int | None],
    cell_providers: Mapping[int, int],
    cpu_classes: tuple[str, ...],
    key_of: Callable[[tuple[tuple[int, int], ...]], Any],
    distinct_groups: frozenset[int] = frozenset(),
    nested_cells: bool = False,
) -> Any:
    """The smallest ``key_of(used)`` over relaxed assignments of ``plan``'s slots (see the module
    docstring), or ``None`` when no assignment passes (then the root has no candidate).
    ``plan`` is the engine's public ``PlanShape`` (``engine/protocol.py``), ``options`` what its
    ``RootBoundView.options()`` gives.

    ``options[k]``: providers of slot ``k``; ``cell_of(p)``: host cell id at or above ``p``;
    ``cell_providers``: cell provider index -> cell id; ``used``: ``((cell id, CPUs), ...)``
    sorted, as ``NumaRanker`` scores candidates; keys compare the width first (``key[0]`` is
    the number of cells, as in ``ranking.rank_key``); ``distinct_groups``: group indices whose
    providers must differ (besides ``isolate``); ``nested_cells``: a cell provider lies under
    another (``same_subtree`` is then not checked).
    """
    slots = plan.slots
    cpu = set(cpu_classes)
    classes = [
        _classes(
            options[k], sum(a for rc, a in slot.resources if rc in cpu), cell_of, cell_providers
        )
        for k, slot in enumerate(slots)
    ]
    search = _RelaxedSearch(plan, classes, fleet, key_of)
    search.isolate = [plan.isolate and slot.suffixed for slot in slots]
    search.anchor = [slot.suffixed and slot.group in distinct_groups for slot in slots]
    if not nested_cells:
        search.add_subtree_sets(plan)
        search.link_alike_sets(options)
    search.visit(0)
    return search.best


class _RelaxedSearch:
    """The depth-first search of ``relaxed_best_key``: one class per slot, the smallest key."""

    def __init__(
        self,
        plan: PlanShape,
        classes: list[list[_Class]],
        fleet: FleetSnapshot,
        key_of: Callable[[tuple[tuple[int, int], ...]], Any],
    ) -> None:
        self.slots = plan.slots
        n = len(self.slots)
        self.n = n
        self.classes = classes
        self.by_cell: list[dict[int | None, list[_Class]]] = []
        for cls in classes:
            index: dict[int | None, list[_Class]] = {}
            for c in cls:
                index.setdefault(c[0], []).append(c)
            self.by_cell.append(index)
        self.providers = fleet.providers
        self.key_of = key_of
        self.isolate = [False] * n
        self.anchor = [False] * n
        # same_subtree sets as slot lists; strict sets have no member slot outside every cell
        self.sets: list[list[int]] = []
        self.strict: list[bool] = []
        self.sets_of_slot: list[list[int]] = [[] for _ in range(n)]
        self.last_of_set: list[int] = []
        self.set_cells: list[list[int | None]] = []
        # first slot of the previous alike set, for a set's first slot (``link_alike_sets``)
        self.after: list[int] = [-1] * n
        self.position = [0] * n  # class position taken by each slot
        self.touched: dict[int, int] = {}  # cell -> CPUs taken on the cell provider
        self.slots_on: dict[int, int] = {}  # cell -> slots assigned there
        self.consumption: dict[tuple[int, str], int] = {}
        self.isolated: set[int] = set()
        self.anchored: set[int] = set()
        self.best: Any = None
        self.keys: dict[tuple[tuple[int, int], ...], Any] = {}

    def add_subtree_sets(self, plan: PlanShape) -> None:
        """The plan's ``same_subtree`` sets of more than one slot (cells not nested)."""
        for members in plan.subtree_sets:
            ks = sorted(k for k, slot in enumerate(self.slots) if slot.group in members)
            if len(ks) > 1:
                self.sets.append(ks)
        self.strict = [all(None not in self.by_cell[k] for k in ks) for ks in self.sets]
        for s, ks in enumerate(self.sets):
            for k in ks:
                self.sets_of_slot[k].append(s)
        self.last_of_set = [ks[-1] for ks in self.sets]
        self.set_cells = [[] for _ in self.sets]

    def link_alike_sets(self, options: Sequence[Sequence[int]]) -> None:
        """Interchangeable guest cells: consecutive same_subtree sets of contiguous slots, each
        slot in one set only, slot by slot alike (options, amounts, isolation). Swapping two
        such sets' assignments keeps every check and the key, so only assignments whose first
        slots take non-decreasing class positions are visited (``after``)."""
        slots, isolate, anchor, sets = self.slots, self.isolate, self.anchor, self.sets
        owners = [len(of) for of in self.sets_of_slot]

        def alike(a: list[int], b: list[int]) -> bool:
            return len(a) == len(b) and all(
                options[i] == options[j]
                and slots[i].resources == slots[j].resources
                and isolate[i] == isolate[j]
                and anchor[i] == anchor[j]
                for i, j in zip(a, b, strict=True)
            )

        for s in range(1, len(sets)):
            a, b = sets[s - 1], sets[s]
            if (
                all(owners[k] == 1 for k in a + b)
                and a == list(range(a[0], a[-1] + 1))
                and b == list(range(b[0], b[-1] + 1))
                and alike(a, b)
            ):
                self.after[b[0]] = a[0]

    def admissible(self, k: int, cell: int | None) -> bool:
        """Whether slot ``k`` may take a class on ``cell`` (its same_subtree sets)."""
        for s in self.sets_of_slot[k]:
            cells = self.set_cells[s]
            if self.strict[s]:
                if cells and cells[0] != cell:
                    return False
            elif k == self.last_of_set[s] and cell is not None and None not in cells:
                if any(c != cell for c in cells):
                    return False
        return True

    def passes(self, k: int, choice: _Class) -> bool:
        """Whether slot ``k`` may take ``choice`` given the slots before it."""
        cell, _, single = choice
        best = self.best
        if cell is not None and cell not in self.touched and best is not None:
            if len(self.touched) + 1 > best[0]:
                return False  # wider than the best key found
        if single >= 0:
            if self.isolate[k] and single in self.isolated:
                return False
            if self.anchor[k] and single in self.anchored:
                return False
            inventories = self.providers[single].inventories
            if not fits_summed(inventories, self.consumption, single, self.slots[k].resources):
                return False
        return self.admissible(k, cell)

    def visit(self, k: int) -> None:
        """Try every admissible class for slot ``k`` and the slots after it."""
        if k == self.n:
            used = tuple(sorted(self.touched.items()))
            key = self.keys.get(used)
            if key is None:
                key = self.keys[used] = self.key_of(used)
            if self.best is None or key < self.best:
                self.best = key
            return
        choices: list[_Class] = self.classes[k]
        after = self.after[k]
        start = self.position[after] if after >= 0 else 0
        for s in self.sets_of_slot[k]:
            if self.strict[s] and self.set_cells[s]:
                choices = self.by_cell[k].get(self.set_cells[s][0], [])
                break
        for at in range(start, len(choices)):
            choice = choices[at]
            self.position[k] = at
            if not self.passes(k, choice):
                continue
            self.take(k, choice)
            self.visit(k + 1)
            self.release(k, choice)

    def take(self, k: int, choice: _Class) -> None:
        """Assign ``choice`` to slot ``k``."""
        cell, cpus, single = choice
        if cell is not None:
            self.touched[cell] = self.touched.get(cell, 0) + cpus
            self.slots_on[cell] = self.slots_on.get(cell, 0) + 1
        if single >= 0:
            consumption = self.consumption
            for rc, amount in self.slots[k].resources:
                consumption[(single, rc)] = consumption.get((single, rc), 0) + amount
            if self.isolate[k]:
                self.isolated.add(single)
            if self.anchor[k]:
                self.anchored.add(single)
        for s in self.sets_of_slot[k]:
            self.set_cells[s].append(cell)

    def release(self, k: int, choice: _Class) -> None:
        """Undo ``take(k, choice)``."""
        cell, cpus, single = choice
        for s in self.sets_of_slot[k]:
            self.set_cells[s].pop()
        if single >= 0:
            consumption = self.consumption
            for rc, amount in self.slots[k].resources:
                left = consumption[(single, rc)] - amount
                if left:
                    consumption[(single, rc)] = left
                else:
                    del consumption[(single, rc)]
            if self.isolate[k]:
                self.isolated.discard(single)
            if self.anchor[k]:
                self.anchored.discard(single)
        if cell is not None:
            self.slots_on[cell] -= 1
            if self.slots_on[cell]:
                self.touched[cell] -= cpus
            else:
                del self.slots_on[cell]
                del self.touched[cell]
