"""Use case (extension): a compute node's guests cell by cell, for the host's page
``GET /numa/fleet/hosts/{uuid}`` (issue 31).

The tree's providers come from the fleet snapshot, the allocations against each of them from
the database (``services.allocations.get_for_provider``: one read per provider of the tree,
a handful per host). Each guest (consumer) lists what it holds per host cell id (``None``:
outside the cells: the compute node's own ``DISK_GB``, a host not reshaped to NUMA) and per
resource label (the class; ``MEMORY_MB`` of a page-size provider is ``MEMORY_MB <KiB> KiB``).
"""

from __future__ import annotations

from dataclasses import dataclass

from placement_numa.db.database import Database
from placement_numa.domain.numa_tree import page_size_from_traits
from placement_numa.engine import FleetSnapshot
from placement_numa.errors import ResourceProviderNotFound
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.host_view import host_view
from placement_numa.services.allocations import get_for_provider

__all__ = ["Guest", "host_guests", "root_of"]

CPU_CLASSES = ("PCPU", "VCPU")


@dataclass(frozen=True)
class Guest:
    """One consumer on the host: ``cells`` maps host cell id (``None``: outside the cells) to
    resource label -> amount (units of the class: CPUs, MiB, GiB, devices)."""

    consumer: str
    cells: dict[int | None, dict[str, int]]


def root_of(fleet: FleetSnapshot, uuid: str) -> int:
    """The root provider index of compute node ``uuid``. Raises
    ``ResourceProviderNotFound`` (404) when no root provider has that uuid."""
    index = fleet.index_by_uuid.get(uuid)
    if index is None or fleet.providers[index].parent >= 0:
        raise ResourceProviderNotFound(f"No compute node (root resource provider) {uuid}.")
    return index


def _label(fleet: FleetSnapshot, provider: int, resource_class: str) -> str:
    size = page_size_from_traits(fleet.providers[provider].traits)
    if resource_class == "MEMORY_MB" and size is not None:
        return f"MEMORY_MB {size} KiB"
    return resource_class


def host_guests(
    database: Database, fleet: FleetSnapshot, index: CellIndex, root: int
) -> list[Guest]:
    """The guests on the tree of root provider index ``root``, by consumer uuid. Raises
    ``ServiceUnavailable`` (503) when the database is away."""
    ids, _cells, _number = host_view(fleet, index, CPU_CLASSES).host(fleet, root)
    found: dict[str, dict[int | None, dict[str, int]]] = {}
    for i in fleet.tree.get(root, ()):
        cell = next((ids[a] for a in fleet.ancestors(i) if a in ids), None)
        rows = get_for_provider(database=database, provider_uuid=fleet.uuids[i]).allocations
        for row in rows:
            held = found.setdefault(row.consumer_uuid, {}).setdefault(cell, {})
            label = _label(fleet, i, row.resource_class)
            held[label] = held.get(label, 0) + row.used
    return [Guest(c, found[c]) for c in sorted(found)]
