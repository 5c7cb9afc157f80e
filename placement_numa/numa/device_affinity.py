"""PCI device NUMA affinity as a constraint of the search (the engine's ``accept`` hook).

Nova checks ``hw:pci_numa_affinity_policy`` after Placement, in its PCI and NUMA filters
(``nova.pci.stats.PciDeviceStats._filter_pools_for_numa_cells``); here it is a constraint on
each candidate, over the cells of the guest (the host cells its anchors land on):

* ``required``: the device's cell is one of the guest's cells (a device under the compute node,
  with no NUMA node, is refused);
* ``legacy`` (Nova's default): as ``required`` for a device on a cell; a device without one is
  accepted;
* ``socket``: the device's cell is on the same socket (``physical_package_id``) as one of the
  guest's cells; where a socket is unknown, as ``required``; a device without cell is refused;
* ``preferred`` and ``none``: anything (``preferred`` ranks aligned candidates first:
  ``ranking``).

A device may come from any of the guest's cells, and two devices from two different guest cells
(Nova: "one of the NUMA nodes the instance uses"). Device groups tied to the guest's only cell by
``same_subtree`` (``DeviceGroup.in_subtree``) are enforced by the query and not checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from placement_numa.engine.candidates import Candidate
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.translate import HW_NUMA_ROOT, NumaQuery

__all__ = ["device_accept", "admits"]


def admits(
    policy: str,
    device_cell: int | None,
    guest_cells: frozenset[int],
    sockets: Mapping[int, int] | None = None,
) -> bool:
    """Whether a device on host cell ``device_cell`` (provider index of the cell; ``None``:
    under the compute node) satisfies ``policy`` for a guest on ``guest_cells`` (cell provider
    indices); ``sockets``: cell provider index -> socket, where known."""
    if policy in ("preferred", "none"):
        return True
    if device_cell is None:
        return policy == "legacy"
    if device_cell in guest_cells:
        return True
    if policy == "socket" and sockets:
        socket = sockets.get(device_cell)
        if socket is None:
            return False
        return any(sockets.get(cell) == socket for cell in guest_cells)
    return False


def _cell_provider(fleet: FleetSnapshot, provider: int) -> int | None:
    """The nearest ``HW_NUMA_ROOT`` provider at or above ``provider`` (``None``: none)."""
    providers = fleet.providers
    for a in fleet.ancestors(provider):
        if HW_NUMA_ROOT in providers[a].traits:
            return a
    return None


def _sockets(fleet: FleetSnapshot, index: CellIndex, root: int) -> dict[int, int]:
    """Cell provider index -> socket of one host (cells whose id or socket is unknown left
    out)."""
    by_id = index.sockets.get(fleet.uuids[root])
    if not by_id:
        return {}
    found: dict[int, int] = {}
    for member in fleet.tree.get(root, []):
        if HW_NUMA_ROOT in fleet.providers[member].traits:
            cell_id = index.cell_ids.get(fleet.uuids[member])
            if cell_id is not None and cell_id in by_id:
                found[member] = by_id[cell_id]
    return found


def device_accept(
    numa: NumaQuery, fleet: FleetSnapshot, index: CellIndex
) -> Callable[[Candidate], bool] | None:
    """The ``accept`` filter enforcing the devices' affinity policies of ``numa`` on ``fleet``
    (``None`` when nothing is left to check)."""
    checked = {
        d.suffix: d.policy
        for d in numa.devices
        if not d.in_subtree and d.policy in ("required", "legacy", "socket")
    }
    if not checked:
        return None
    anchors = frozenset(c.anchor for c in numa.search_cells or numa.cells)
    needs_sockets = "socket" in checked.values()
    cells_of: dict[int, int | None] = {}
    sockets_of: dict[int, dict[int, int]] = {}

    def cell(provider: int) -> int | None:
        if provider not in cells_of:
            cells_of[provider] = _cell_provider(fleet, provider)
        return cells_of[provider]

    def accept(candidate: Candidate) -> bool:
        guest: set[int] = set()
        devices: list[tuple[str, int]] = []
        for group in candidate.groups:
            if group.suffix in anchors:
                for p in group.providers:
                    found = cell(p)
                    if found is not None:
                        guest.add(found)
            elif group.suffix in checked:
                devices.extend((checked[group.suffix], p) for p in group.providers)
        sockets: dict[int, int] | None = None
        if needs_sockets:
            root = candidate.anchor
            if root not in sockets_of:
                sockets_of[root] = _sockets(fleet, index, root)
            sockets = sockets_of[root]
        frozen = frozenset(guest)
        return all(admits(policy, cell(p), frozen, sockets) for policy, p in devices)

    return accept
