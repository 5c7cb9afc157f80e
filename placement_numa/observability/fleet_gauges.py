"""Fleet NUMA gauges, computed from the fleet snapshot at scrape time (never per request) and
cached by the snapshot's revision.

For every compute node (root provider) with NUMA cells (children with ``HW_NUMA_ROOT``):

* ``placement_numa_fleet_numa_cell_free{compute_node,cell,resource_class}``: free ``PCPU`` and
  ``VCPU`` of each cell (capacity minus used; ``cell`` is the cell's position under its node,
  in provider creation order, which is the cell id for trees made by the agent or reshape);
* ``placement_numa_fleet_numa_free_cpu_stddev{compute_node}``: the population standard
  deviation of free CPUs (PCPU + VCPU) across the node's cells, KEP-2902's balance score
  (``numa.rank_spread.spread``) as a fleet view of ``cpu_manager_numa_allocation_spread``;
* ``placement_numa_fleet_numa_cells_without_free_cpus``: cells with no free CPU at all.

``compute_node`` is the root provider's uuid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import os_traits
from prometheus_client.core import GaugeMetricFamily

from placement_numa.engine import FleetSnapshot
from placement_numa.numa.rank_spread import spread

__all__ = ["FleetNumaCollector"]

NUMA_ROOT = os_traits.HW_NUMA_ROOT
CPU_CLASSES = ("PCPU", "VCPU")


class FleetNumaCollector:
    """A prometheus-client collector over ``snapshot()`` (the engine's current snapshot, or
    ``None`` before the engine exists)."""

    def __init__(self, snapshot: Callable[[], FleetSnapshot | None]) -> None:
        self.snapshot = snapshot
        self._cached: tuple[int, list[Any]] | None = None

    def describe(self) -> list[Any]:
        """No description up front (the series depend on the fleet)."""
        return []

    def collect(self) -> Iterator[Any]:
        """The gauges for the current snapshot (recomputed only when its revision moved)."""
        fleet = self.snapshot()
        if fleet is None:
            return iter(())
        if self._cached is None or self._cached[0] != fleet.revision:
            self._cached = (fleet.revision, _families(fleet))
        return iter(self._cached[1])


def _families(fleet: FleetSnapshot) -> list[Any]:
    free = GaugeMetricFamily(
        "placement_numa_fleet_numa_cell_free",
        "Free PCPU/VCPU per NUMA cell of each compute node.",
        labels=["compute_node", "cell", "resource_class"],
    )
    stddev = GaugeMetricFamily(
        "placement_numa_fleet_numa_free_cpu_stddev",
        "Population std-dev of free CPUs across a compute node's NUMA cells (KEP-2902).",
        labels=["compute_node"],
    )
    empty_cells = 0
    for root in fleet.roots:
        cells = [
            fleet.providers[i]
            for i in fleet.tree.get(root, ())
            if i != root and NUMA_ROOT in fleet.providers[i].traits
        ]
        if not cells:
            continue
        node = fleet.uuids[root]
        frees = []
        for position, cell in enumerate(cells):
            total = 0
            for rc in CPU_CLASSES:
                if rc in cell.inventories:
                    amount = cell.free(rc)
                    free.add_metric([node, str(position), rc], amount)
                    total += amount
            frees.append(total)
            if total <= 0:
                empty_cells += 1
        stddev.add_metric([node], spread(frees))
    without = GaugeMetricFamily(
        "placement_numa_fleet_numa_cells_without_free_cpus",
        "NUMA cells with no free PCPU or VCPU.",
        value=empty_cells,
    )
    return [free, stddev, without]
