"""Benchmark the NUMA layer in process: translation + ranked candidate search + KEP-2902
widening, on an in-memory fleet (no HTTP, no SQL: the engine over a ``StaticFleetSource``).

Fleet: ``--hosts`` compute nodes, alternating AMD EPYC NPS4 (4 cells, KEP-3545's 4-cell table)
and two-socket EPYC (8 cells, the 8-cell table); per cell 8 PCPU + 8 VCPU (ratio 4) and a small
page child (56 GiB) and a 2 MiB page child (8 GiB); every third host has 6 PCPUs used on cell 0.

    /work/venv/bin/python benchmarks/numa_ranking.py --hosts 1000
    /work/venv/bin/python benchmarks/numa_ranking.py --hosts 1000 --exhaustive  # the reference path
    /work/venv/bin/python benchmarks/numa_ranking.py --hosts 10000 --cases "limit 10"

Ranked searches are bounded (roots searched best bound first, stop at ``limit``); with
``--exhaustive`` the service's reference path ranks every candidate of every root (and tries
KEP-2902 widths host by host), which is what the figures before the bound measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from placement_numa.cli.demo import kep_eight_cells, kep_four_cells
from placement_numa.engine import FleetSnapshot, SnapshotEngine, StaticFleetSource
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor
from placement_numa.numa.page_sizes import provider_traits
from placement_numa.services.numa_candidates import NumaOptions, flavor_candidates


def build(hosts: int) -> tuple[FleetSnapshot, CellIndex]:
    """A snapshot of ``hosts`` hosts alternating 4 and 8 NUMA cells (8 PCPU, 8 VCPU, 56 GiB of 4K
    and 8 GiB of 2M pages per cell; KEP-3545's distance matrices; every third host's cell 0
    mostly pinned) and its ``CellIndex``."""
    providers, inventories, usages, traits = [], [], [], []
    cell_ids: dict[str, int] = {}
    distances: dict[str, Any] = {}
    names: dict[str, str] = {}
    pid = 0

    def add(parent: int | None, root: int | None) -> int:
        nonlocal pid
        pid += 1
        providers.append((pid, f"00000000-0000-0000-0000-{pid:012d}", parent, root or pid))
        return pid

    for h in range(hosts):
        cells = 4 if h % 2 == 0 else 8
        root = add(None, None)
        uuid = providers[-1][1]
        names[uuid] = f"host-{h}"
        distances[uuid] = kep_four_cells() if cells == 4 else kep_eight_cells()
        inventories.append((root, "DISK_GB", 1000, 0, 1, 1000, 1, 1.0))
        for c in range(cells):
            cell = add(root, root)
            cell_ids[providers[-1][1]] = c
            traits.append((cell, "HW_NUMA_ROOT"))
            inventories.append((cell, "PCPU", 8, 0, 1, 8, 1, 1.0))
            inventories.append((cell, "VCPU", 8, 0, 1, 8, 1, 4.0))
            if c == 0 and h % 3 == 0:
                usages.append((cell, "PCPU", 6))
            for size_kb, mb in ((4, 56 * 1024), (2048, 8 * 1024)):
                page = add(cell, root)
                step = max(1, size_kb // 1024)
                inventories.append((page, "MEMORY_MB", mb, 0, step, mb, step, 1.0))
                traits.extend((page, t) for t in provider_traits(size_kb))
    return FleetSnapshot.build(1, providers, inventories, usages, traits), CellIndex(
        cell_ids, distances, names
    )


PINNED_2M = {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated", "hw:mem_page_size": "2MB"}
CASES = {
    "2-cell pinned 2M pages, limit 10": (
        Flavor(8, 4096, extra_specs=PINNED_2M),
        NumaOptions(limit=10),
    ),
    "2-cell pinned 2M pages, limit 1000": (
        Flavor(8, 4096, extra_specs=PINNED_2M),
        NumaOptions(limit=1000),
    ),
    "2-cell pinned, limit 10": (
        Flavor(8, 8192, extra_specs={"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"}),
        NumaOptions(limit=10),
    ),
    "2-cell pinned, all": (
        Flavor(8, 8192, extra_specs={"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"}),
        NumaOptions(),
    ),
    "1-cell 2M pages, limit 10": (
        Flavor(4, 4096, extra_specs={"hw:mem_page_size": "2MB"}),
        NumaOptions(limit=10),
    ),
    "20 pinned, distribute, limit 50": (
        Flavor(20, 16384, extra_specs={"hw:cpu_policy": "dedicated"}),
        NumaOptions(limit=50, distribute=True),
    ),
    "20 pinned, distribute, limit 1000": (
        Flavor(20, 16384, extra_specs={"hw:cpu_policy": "dedicated"}),
        NumaOptions(limit=1000, distribute=True),
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--exhaustive", action="store_true", help="time the reference path")
    parser.add_argument("--cases", default="", help="only cases whose name contains this text")
    args = parser.parse_args()
    start = time.perf_counter()
    fleet, index = build(args.hosts)
    print(f"built in {time.perf_counter() - start:.1f} s")
    engine = SnapshotEngine(StaticFleetSource(fleet))
    print(f"{args.hosts} hosts, {len(fleet.providers)} providers")
    for name, (flavor, options) in CASES.items():
        if args.cases not in name:
            continue
        times, count = [], 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            found = flavor_candidates(
                database=None,
                engine=engine,
                flavor=flavor,
                image=None,
                options=options,
                index=index,
                exhaustive=bool(args.exhaustive),
            )
            times.append(time.perf_counter() - start)
            count = len(found)
        print(
            f"{name:34} {count:6} candidates  p50 {statistics.median(times) * 1000:8.1f} ms"
            f"  max {max(times) * 1000:8.1f} ms"
        )


if __name__ == "__main__":
    main()
