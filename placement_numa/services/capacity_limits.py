"""What stops a host from taking one more instance of a flavor (``limited_by`` of the capacity
answer), read from the host as it stands after the last placement (``services.host_fill``).

For each request group of the flavor's search query and each resource class it asks, the
host's providers that could serve the group (inventory of the class, the group's required,
any-of and forbidden traits) are grouped by the NUMA cell they sit in (``None``: outside any
cell, e.g. ``DISK_GB`` on the compute node). A cell whose best such provider has less free than
the group asks is a ``Shortfall`` of that class on that cell. Free follows the search:
``capacity - used``, and for ``MEMORY_MB`` of a guest whose memory Nova never overcommits
(pinned CPUs or an explicit page size, ``numa.memory_rule``) ``total - reserved - used``.

When no cell is short of any class yet nothing fits, the obstacle is the arrangement (guest
cells on distinct host cells, device affinity, ``same_subtree``): one ``Shortfall`` with
``resource_class=None`` and ``reason="arrangement"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placement_numa.domain.numa_tree import HW_NUMA_ROOT
from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import FleetSnapshot, ProviderInfo
from placement_numa.numa.engine_rank import CellIndex

__all__ = ["Shortfall", "limited_by"]


@dataclass(frozen=True)
class Shortfall:
    """One reason a host takes no more: ``resource_class`` (``None`` for the arrangement),
    ``cell`` (host cell id; ``None``: outside the cells), the best ``free`` amount a provider
    there offers and the ``requested`` amount of one request group (units of the class: MiB,
    GiB, CPUs); ``reason``: ``"short"``, ``"arrangement"`` or ``"cap"`` (the count cap)."""

    reason: str
    resource_class: str | None = None
    cell: int | None = None
    free: int | None = None
    requested: int | None = None

    def as_json(self) -> dict[str, object]:
        """The answer's shape: every field, ``None`` as ``null``."""
        return {
            "reason": self.reason,
            "resource_class": self.resource_class,
            "cell": self.cell,
            "free": self.free,
            "requested": self.requested,
        }


def _serves(group: RequestGroup, provider: ProviderInfo, resource_class: str) -> bool:
    if resource_class not in provider.inventories:
        return False
    traits = provider.traits
    if group.forbidden_traits & traits:
        return False
    if group.suffix is None:  # the unsuffixed group: traits on the union (Placement); not here
        return True
    if not group.required_traits <= traits:
        return False
    return all(any_of & traits for any_of in group.any_traits)


def _free(provider: ProviderInfo, resource_class: str, no_overcommit: bool, added: int) -> int:
    inv = provider.inventories[resource_class]
    used = inv.used + added
    if no_overcommit and resource_class == "MEMORY_MB":
        return min(inv.capacity - used, inv.total - inv.reserved - used)
    return inv.capacity - used


def _cell_ids(fleet: FleetSnapshot, index: CellIndex, root: int) -> dict[int, int]:
    """Cell provider index -> host cell id for ``root``'s tree, as the ranking numbers them
    (``numa.host_view``: the id from the cell's name, else its order among the tree's cells)."""
    ids: dict[int, int] = {}
    order = 0
    for i in fleet.tree[root]:
        if HW_NUMA_ROOT in fleet.providers[i].traits:
            found = index.cell_ids.get(fleet.uuids[i])
            ids[i] = found if found is not None else order
            order += 1
    return ids


def _cell_of(fleet: FleetSnapshot, ids: Mapping[int, int], provider: int) -> int | None:
    """The host cell id of the cell at or above ``provider`` (``None``: none)."""
    for i in fleet.ancestors(provider):
        if i in ids:
            return ids[i]
    return None


def limited_by(
    fleet: FleetSnapshot,
    root: int,
    query: CandidateQuery,
    index: CellIndex,
    *,
    no_overcommit: bool,
    taken: Mapping[tuple[int, str], int] | None = None,
) -> tuple[Shortfall, ...]:
    """The shortfalls of the host ``root`` (an index of ``fleet``) for one more instance asked
    by ``query`` (the flavor's search query), sorted; ``no_overcommit``: the memory rule
    applies (see the module docstring); ``taken``: usage added to ``fleet``'s by
    ``(provider index, resource class)``."""
    taken = taken or {}
    best: dict[tuple[str, int | None], tuple[int, int]] = {}  # (rc, cell) -> (free, requested)
    members = fleet.tree[root]
    ids = _cell_ids(fleet, index, root)
    for group in query.groups:
        for rc, amount in group.resources.items():
            per_cell: dict[int | None, int] = {}
            for i in members:
                provider = fleet.providers[i]
                if _serves(group, provider, rc):
                    cell = _cell_of(fleet, ids, i)
                    free = _free(provider, rc, no_overcommit, taken.get((i, rc), 0))
                    per_cell[cell] = max(free, per_cell.get(cell, free))
            if not per_cell:
                per_cell[None] = 0
            for cell, free in per_cell.items():
                if free < amount:
                    seen = best.get((rc, cell))
                    if seen is None or amount - free > seen[1] - seen[0]:
                        best[(rc, cell)] = (free, amount)
    found = tuple(
        sorted(
            (
                Shortfall("short", rc, cell, free, amount)
                for (rc, cell), (free, amount) in best.items()
            ),
            key=lambda s: (s.cell is not None, s.cell or 0, s.resource_class or ""),
        )
    )
    return found or (Shortfall("arrangement"),)
