"""PCI device providers in a reshape (issue 22): Nova creates one provider per device under the
compute node, named ``<host>_<PCI address>`` (``domain.numa_tree.device_provider_name``, the
name the agent gives its own); on the NUMA tree it belongs under the cell of its NUMA node.
Moving a provider keeps its uuid, inventories and allocations, so its consumers' allocations
move with it (the agent's sync re-parents the same way).

* ``to_numa``: the topology lists each cell's device addresses (``"devices"``); each such
  provider found directly under the compute node moves under its cell;
* ``to_flat``: every child of a cell that is not a page-size provider (it holds no
  ``VCPU``/``PCPU``/``MEMORY_MB``) moves back under the compute node before the cells go.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement_numa.domain.numa_tree import device_provider_name
from placement_numa.reshape.model import NUMA_CLASSES, HostState, ProviderState
from placement_numa.reshape.plan import Reparent
from placement_numa.reshape.topology import Topology

__all__ = ["devices_to_cells", "devices_to_root", "is_device"]


def is_device(provider: ProviderState) -> bool:
    """Whether a child of a cell is a device provider (no class of the NUMA tree)."""
    return not any(rc in NUMA_CLASSES for rc in provider.inventories)


def devices_to_cells(
    host: HostState, topology: Topology, cell_uuid: Mapping[int, str]
) -> tuple[Reparent, ...]:
    """The moves of ``host``'s device providers named in ``topology``'s cells (``cell_uuid``:
    cell id -> the planned cell provider's uuid); addresses without a provider are skipped."""
    under_root = {p.name: p for p in host.children_of(host.root.uuid)}
    moves = []
    for cell in topology.cells:
        for address in cell.devices:
            found = under_root.get(device_provider_name(host.host, address))
            if found is not None:
                moves.append(Reparent(found.uuid, found.name, cell_uuid[cell.id]))
    return tuple(moves)


def devices_to_root(host: HostState) -> tuple[Reparent, ...]:
    """The moves of the device providers under ``host``'s cells back under the compute node."""
    return tuple(
        Reparent(child.uuid, child.name, host.root.uuid)
        for cell in host.cells()
        for child in host.children_of(cell.uuid)
        if is_device(child)
    )
