"""Fleet NUMA gauges, computed from the fleet snapshot at scrape time (never per request) and
cached by the snapshot's revision.

By default only fleet-level series, and per-aggregate ones where compute nodes are in
aggregates, so the series count does not grow with the number of hosts:

* ``placement_numa_fleet_numa_free{resource_class}``: free ``PCPU`` and ``VCPU`` summed over
  every NUMA cell (capacity minus used);
* ``placement_numa_fleet_numa_cells``, ``placement_numa_fleet_numa_compute_nodes``: cells and
  compute nodes with cells;
* ``placement_numa_fleet_numa_free_cpu_stddev_mean``: the mean over compute nodes of the
  population standard deviation of free CPUs (PCPU + VCPU) across a node's cells (KEP-2902's
  balance score, ``numa.rank_spread.spread``);
* ``placement_numa_fleet_numa_cells_without_free_cpus``: cells with no free CPU at all;
* ``placement_numa_aggregate_numa_free{aggregate,resource_class}``: free ``PCPU``/``VCPU`` of
  the cells of the compute nodes (root providers) in each aggregate (2 series per aggregate).

With ``[metrics] per_host_series`` (off by default) the per-host and per-cell series come too,
``2 x cells + 1`` series per compute node (5 for a two-cell host):

* ``placement_numa_fleet_numa_cell_free{compute_node,cell,resource_class}``: free ``PCPU`` and
  ``VCPU`` of each cell (``cell`` is the cell's position under its node, in provider creation
  order, which is the cell id for trees made by the agent or reshape);
* ``placement_numa_fleet_numa_free_cpu_stddev{compute_node}``.

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
    ``None`` before the engine exists); ``per_host``: add the per-host and per-cell series."""

    def __init__(
        self, snapshot: Callable[[], FleetSnapshot | None], *, per_host: bool = False
    ) -> None:
        self.snapshot = snapshot
        self.per_host = per_host
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
            self._cached = (fleet.revision, _families(fleet, self.per_host))
        return iter(self._cached[1])


def _host_cells(fleet: FleetSnapshot, root: int) -> list[dict[str, int]]:
    """Free PCPU/VCPU of each NUMA cell of ``root``'s tree (classes the cell has)."""
    providers = fleet.providers
    return [
        {rc: providers[i].free(rc) for rc in CPU_CLASSES if rc in providers[i].inventories}
        for i in fleet.tree.get(root, ())
        if i != root and NUMA_ROOT in providers[i].traits
    ]


def _families(fleet: FleetSnapshot, per_host: bool) -> list[Any]:
    free_cell = GaugeMetricFamily(
        "placement_numa_fleet_numa_cell_free",
        "Free PCPU/VCPU per NUMA cell of each compute node ([metrics] per_host_series).",
        labels=["compute_node", "cell", "resource_class"],
    )
    stddev = GaugeMetricFamily(
        "placement_numa_fleet_numa_free_cpu_stddev",
        "Population std-dev of free CPUs across a compute node's NUMA cells (KEP-2902)"
        " ([metrics] per_host_series).",
        labels=["compute_node"],
    )
    totals = dict.fromkeys(CPU_CLASSES, 0)
    per_aggregate: dict[str, dict[str, int]] = {}
    empty_cells = cell_count = nodes = 0
    spreads = 0.0
    for root in fleet.roots:
        cells = _host_cells(fleet, root)
        if not cells:
            continue
        nodes += 1
        node = fleet.uuids[root]
        frees = []
        for position, cell in enumerate(cells):
            cell_count += 1
            for rc, amount in cell.items():
                totals[rc] += amount
                for aggregate in fleet.providers[root].aggregates:
                    by_rc = per_aggregate.setdefault(aggregate, dict.fromkeys(CPU_CLASSES, 0))
                    by_rc[rc] += amount
                if per_host:
                    free_cell.add_metric([node, str(position), rc], amount)
            total = sum(cell.values())
            frees.append(total)
            if total <= 0:
                empty_cells += 1
        host_spread = spread(frees)
        spreads += host_spread
        if per_host:
            stddev.add_metric([node], host_spread)
    fleet_free = GaugeMetricFamily(
        "placement_numa_fleet_numa_free",
        "Free PCPU/VCPU summed over every NUMA cell of the fleet.",
        labels=["resource_class"],
    )
    for rc, amount in totals.items():
        fleet_free.add_metric([rc], amount)
    aggregate_free = GaugeMetricFamily(
        "placement_numa_aggregate_numa_free",
        "Free PCPU/VCPU of the NUMA cells of the compute nodes in each aggregate.",
        labels=["aggregate", "resource_class"],
    )
    for aggregate, by_rc in sorted(per_aggregate.items()):
        for rc, amount in by_rc.items():
            aggregate_free.add_metric([aggregate, rc], amount)
    found = [
        fleet_free,
        aggregate_free,
        GaugeMetricFamily(
            "placement_numa_fleet_numa_cells", "NUMA cells in the fleet.", value=cell_count
        ),
        GaugeMetricFamily(
            "placement_numa_fleet_numa_compute_nodes",
            "Compute nodes with NUMA cells.",
            value=nodes,
        ),
        GaugeMetricFamily(
            "placement_numa_fleet_numa_free_cpu_stddev_mean",
            "Mean over compute nodes of the std-dev of free CPUs across their cells (KEP-2902).",
            value=spreads / nodes if nodes else 0.0,
        ),
        GaugeMetricFamily(
            "placement_numa_fleet_numa_cells_without_free_cpus",
            "NUMA cells with no free PCPU or VCPU.",
            value=empty_cells,
        ),
    ]
    return [*found, free_cell, stddev] if per_host else found
