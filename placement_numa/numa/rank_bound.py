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
    n = len(slots)
    providers = fleet.providers
    cpu = set(cpu_classes)
    classes: list[list[_Class]] = []
    by_cell: list[dict[int | None, list[_Class]]] = []
    for k, slot in enumerate(slots):
        amount = sum(a for rc, a in slot.resources if rc in cpu)
        cls = _classes(options[k], amount, cell_of, cell_providers)
        classes.append(cls)
        index: dict[int | None, list[_Class]] = {}
        for c in cls:
            index.setdefault(c[0], []).append(c)
        by_cell.append(index)
    isolate = [plan.isolate and slot.suffixed for slot in slots]
    anchor = [slot.suffixed and slot.group in distinct_groups for slot in slots]
    # same_subtree sets as slot lists; strict sets have no member slot outside every cell
    sets: list[list[int]] = []
    if not nested_cells:
        for members in plan.subtree_sets:
            ks = sorted(k for k, slot in enumerate(slots) if slot.group in members)
            if len(ks) > 1:
                sets.append(ks)
    strict = [all(None not in by_cell[k] for k in ks) for ks in sets]
    sets_of_slot: list[list[int]] = [[] for _ in range(n)]
    for s, ks in enumerate(sets):
        for k in ks:
            sets_of_slot[k].append(s)
    last_of_set = [ks[-1] for ks in sets]
    set_cells: list[list[int | None]] = [[] for _ in sets]
    # Interchangeable guest cells: consecutive same_subtree sets of contiguous slots, each slot
    # in one set only, slot by slot alike (options, amounts, isolation). Swapping two such sets'
    # assignments keeps every check and the key, so only assignments whose first slots take
    # non-decreasing class positions are visited.
    after: list[int] = [-1] * n  # first slot of the previous alike set, for a set's first slot
    if not nested_cells:
        owners = [len(sets_of_slot[k]) for k in range(n)]

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
                after[b[0]] = a[0]
    position = [0] * n  # class position taken by each slot

    touched: dict[int, int] = {}  # cell -> CPUs taken on the cell provider
    slots_on: dict[int, int] = {}  # cell -> slots assigned there
    consumption: dict[tuple[int, str], int] = {}
    isolated: set[int] = set()
    anchored: set[int] = set()
    best: list[Any] = [None]
    keys: dict[tuple[tuple[int, int], ...], Any] = {}

    def fits(p: int, resources: tuple[tuple[str, int], ...]) -> bool:
        return fits_summed(providers[p].inventories, consumption, p, resources)

    def admissible(k: int, cell: int | None) -> bool:
        for s in sets_of_slot[k]:
            cells = set_cells[s]
            if strict[s]:
                if cells and cells[0] != cell:
                    return False
            elif k == last_of_set[s] and cell is not None and None not in cells:
                if any(c != cell for c in cells):
                    return False
        return True

    def visit(k: int) -> None:
        if k == n:
            used = tuple(sorted(touched.items()))
            key = keys.get(used)
            if key is None:
                key = keys[used] = key_of(used)
            if best[0] is None or key < best[0]:
                best[0] = key
            return
        choices: list[_Class] = classes[k]
        start = position[after[k]] if after[k] >= 0 else 0
        for s in sets_of_slot[k]:
            if strict[s] and set_cells[s]:
                choices = by_cell[k].get(set_cells[s][0], [])
                break
        resources = slots[k].resources
        for at in range(start, len(choices)):
            cell, cpus, single = choices[at]
            position[k] = at
            if (
                cell is not None
                and cell not in touched
                and best[0] is not None
                and len(touched) + 1 > best[0][0]
            ):
                continue  # wider than the best key found
            if single >= 0 and (
                (isolate[k] and single in isolated)
                or (anchor[k] and single in anchored)
                or not fits(single, resources)
            ):
                continue
            if not admissible(k, cell):
                continue
            if cell is not None:
                touched[cell] = touched.get(cell, 0) + cpus
                slots_on[cell] = slots_on.get(cell, 0) + 1
            if single >= 0:
                for rc, amount in resources:
                    consumption[(single, rc)] = consumption.get((single, rc), 0) + amount
                if isolate[k]:
                    isolated.add(single)
                if anchor[k]:
                    anchored.add(single)
            for s in sets_of_slot[k]:
                set_cells[s].append(cell)
            visit(k + 1)
            for s in sets_of_slot[k]:
                set_cells[s].pop()
            if single >= 0:
                for rc, amount in resources:
                    left = consumption[(single, rc)] - amount
                    if left:
                        consumption[(single, rc)] = left
                    else:
                        del consumption[(single, rc)]
                if isolate[k]:
                    isolated.discard(single)
                if anchor[k]:
                    anchored.discard(single)
            if cell is not None:
                slots_on[cell] -= 1
                if slots_on[cell]:
                    touched[cell] -= cpus
                else:
                    del slots_on[cell]
                    del touched[cell]

    visit(0)
    return best[0]
