"""``/metrics``'s fleet NUMA gauges (issue 31): by default the series count does not grow with
the number of hosts (fleet-level and per-aggregate series only); ``per_host`` adds
``2 x cells + 1`` series per compute node."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from placement_numa.engine import FleetSnapshot
from placement_numa.observability.fleet_gauges import FleetNumaCollector
from tests.candidate_fleets import uuid_of

AGGREGATE = "5a5a0000-0000-4000-8000-000000000001"


def fleet(hosts: int) -> FleetSnapshot:
    """``hosts`` compute nodes of two cells (PCPU 8, VCPU 16 with 3 used), the even ones in
    ``AGGREGATE``."""
    rows: list[Any] = []
    inventories: list[Any] = []
    usages: list[Any] = []
    traits: list[Any] = []
    aggregates: list[Any] = []
    for h in range(hosts):
        root = len(rows) + 1
        rows.append((root, uuid_of(root), None, root))
        if h % 2 == 0:
            aggregates.append((root, AGGREGATE))
        for _ in range(2):
            cell = len(rows) + 1
            rows.append((cell, uuid_of(cell), root, root))
            traits.append((cell, "HW_NUMA_ROOT"))
            inventories += [
                (cell, "PCPU", 8, 0, 1, 8, 1, 1.0),
                (cell, "VCPU", 16, 0, 1, 16, 1, 1.0),
            ]
            usages.append((cell, "VCPU", 3))
    return FleetSnapshot.build(1, rows, inventories, usages, traits, aggregates)


def series(hosts: int, per_host: bool) -> list[str]:
    registry = CollectorRegistry()
    snapshot = fleet(hosts)
    registry.register(FleetNumaCollector(lambda: snapshot, per_host=per_host))
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_default_series_do_not_grow_with_hosts() -> None:
    small, large = series(10, False), series(1000, False)
    assert len(small) == len(large) == 2 + 2 + 4  # fleet free x2, aggregate x2, four gauges
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in large}
    assert values['placement_numa_fleet_numa_free{resource_class="VCPU"}'] == 1000 * 2 * 13
    assert values['placement_numa_fleet_numa_free{resource_class="PCPU"}'] == 1000 * 2 * 8
    assert (
        values[
            f'placement_numa_aggregate_numa_free{{aggregate="{AGGREGATE}",resource_class="PCPU"}}'
        ]
        == 500 * 16
    )
    assert values["placement_numa_fleet_numa_cells"] == 2000
    assert values["placement_numa_fleet_numa_compute_nodes"] == 1000


@pytest.mark.parametrize("hosts", [10, 100])
def test_per_host_series_are_opt_in(hosts: int) -> None:
    assert len(series(hosts, True)) == len(series(hosts, False)) + 5 * hosts
