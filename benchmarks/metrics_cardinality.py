"""``/metrics``'s fleet gauges at fleet scale (issue 31), in process: series count, bytes and
time of one scrape's rendering of the fleet NUMA gauges, default and with
``[metrics] per_host_series``, on issue 21's mixed fleet (``mixed_fleet.host_specs``), and the
flavor catalogue gauges (``benchmarks/capacity.py``'s six flavors): the time their background
computation takes and the scrape that reads them.

    python benchmarks/metrics_cardinality.py --hosts 10000 --cells 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from capacity import FLAVORS  # benchmarks/capacity.py
from mixed_fleet import host_specs, snapshot_rows
from prometheus_client import CollectorRegistry, generate_latest

from placement_numa.engine import FleetSnapshot, SnapshotEngine, StaticFleetSource
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor
from placement_numa.observability.capacity_gauges import CatalogueCollector
from placement_numa.observability.fleet_gauges import FleetNumaCollector
from placement_numa.services.capacity import FlavorAsk
from placement_numa.services.flavor_catalogue import catalogue_figures


def scrape(registry: CollectorRegistry, rounds: int = 5) -> tuple[int, int, float, float]:
    """(series, bytes, p50 ms wall, p50 ms CPU) of ``rounds`` renderings."""
    walls, cpus, text = [], [], b""
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        text = generate_latest(registry)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    lines = [x for x in text.decode().splitlines() if x and not x.startswith("#")]
    return len(lines), len(text), statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    rows = snapshot_rows(host_specs(args.hosts, args.cells, args.seed), standard_page_traits=True)
    fleet = FleetSnapshot.build(1, *rows)
    for per_host in (False, True):
        registry = CollectorRegistry()
        registry.register(FleetNumaCollector(lambda: fleet, per_host=per_host))
        generate_latest(registry)  # first scrape of a revision computes the gauges
        series, size, wall, cpu = scrape(registry)
        print(
            f"fleet gauges, per_host_series={per_host}, {args.hosts} x {args.cells}: "
            f"{series:,} series, {size:,} bytes, scrape {wall:.1f} ms wall / {cpu:.1f} ms CPU"
        )
    engine = SnapshotEngine(StaticFleetSource(fleet))
    flavors = [
        FlavorAsk(f["name"], Flavor(**{k: v for k, v in f.items() if k != "name"})) for f in FLAVORS
    ]
    collector = CatalogueCollector(
        lambda: fleet.revision, lambda: catalogue_figures(engine, CellIndex(), flavors)
    )
    cpu = time.process_time()
    collector.refresh(wait=True)
    computed = time.process_time() - cpu
    registry = CollectorRegistry()
    registry.register(collector)
    series, size, wall, cpu_ms = scrape(registry)
    print(f"catalogue gauges ({len(flavors)} flavors): computed in the background in "
          f"{computed:.2f} s CPU; scrape {series} series, {size:,} bytes, {wall:.1f} ms wall / "
          f"{cpu_ms:.1f} ms CPU; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
