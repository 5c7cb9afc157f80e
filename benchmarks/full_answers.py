"""Full answers in process: search and encode ``GET /allocation_candidates`` without HTTP.

Builds ``candidates.py``'s fleet (``--hosts`` x ``--cells`` cells x 2 page sizes, an instance on
every fourth host) as a ``FleetSnapshot`` in memory, then times the engine's search and the
body's encoding (``encode_candidates``, what the GET handler does) for each query of
``candidates.QUERIES`` named by ``--only`` without a limit (or ``--limit``): p50 of
``--repeat`` runs, wall and CPU (``time.process_time``; the CPU figure holds on a loaded machine).
``--fleet mixed`` builds issue 21's fleet instead (``mixed_fleet.py``, ``--seed``, its
``QUERIES``); ``--warm`` keeps one ``FragmentCache`` across runs, as a serving process does
(else each encoding starts from an empty one).

    python benchmarks/full_answers.py --hosts 1000 --cells 2
    python benchmarks/full_answers.py --hosts 1000 --cells 4 --only two-cell
    python benchmarks/full_answers.py --fleet mixed --seed 21 --warm --only two-cell hugepage
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

from candidates import CELL_INVENTORY, PAGE_SIZES, QUERIES  # benchmarks/candidates.py

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.api.schemas.allocation_candidates import FragmentCache, encode_candidates
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import FleetSnapshot


def build(hosts: int, cells: int) -> FleetSnapshot:
    """``candidates.py``'s fleet as a snapshot (same inventories, traits and usages)."""
    rows: list[Any] = []
    inventories: list[Any] = []
    traits: list[Any] = []
    usages: list[Any] = []
    next_id = 1

    def add(parent: int | None, root: int | None) -> int:
        nonlocal next_id
        pid = next_id
        next_id += 1
        rows.append((pid, str(uuid.uuid4()), parent, root or pid))
        return pid

    for h in range(hosts):
        root = add(None, None)
        inventories.append((root, "DISK_GB", 1000, 0, 1, 1000, 1, 1.0))
        used = h % 4 == 0
        if used:
            usages.append((root, "DISK_GB", 20))
        for c in range(cells):
            cell = add(root, root)
            for rc, spec in CELL_INVENTORY.items():
                fields: dict[str, Any] = dict(spec)  # type: ignore[call-overload]
                total = int(fields["total"])
                ratio = float(fields.get("allocation_ratio", 1.0))
                inventories.append((cell, rc, total, 0, 1, total, 1, ratio))
            traits.append((cell, "HW_NUMA_ROOT"))
            if used and c == 0:
                usages.append((cell, "VCPU", 4))
            for size, trait, custom, mem, step in PAGE_SIZES:
                page = add(cell, root)
                inventories.append((page, "MEMORY_MB", mem, 0, 1, mem, step, 1.0))
                traits += [(page, trait), (page, custom)]
                if used and c == 0 and size == "4K":
                    usages.append((page, "MEMORY_MB", 4096))
    return FleetSnapshot.build(1, rows, inventories, usages, traits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=["two-cell", "flat"])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--fleet", choices=("uniform", "mixed"), default="uniform")
    parser.add_argument("--seed", type=int, default=21, help="the mixed fleet's random seed")
    parser.add_argument("--warm", action="store_true", help="one FragmentCache for every run")
    args = parser.parse_args()
    queries = QUERIES
    if args.fleet == "mixed":
        import mixed_fleet  # benchmarks/mixed_fleet.py

        specs = mixed_fleet.host_specs(args.hosts, args.cells, args.seed)
        fleet = FleetSnapshot.build(1, *mixed_fleet.snapshot_rows(specs))
        queries = mixed_fleet.QUERIES
    else:
        fleet = build(args.hosts, args.cells)
    fragments = FragmentCache() if args.warm else None
    engine = SnapshotEngine(StaticFleetSource(fleet))
    version = mv.Microversion(1, 39)
    print(
        f"fleet: {args.hosts} hosts x {args.cells} cells, {len(fleet.providers)} providers;"
        f" limit {args.limit or 'none'}; p50 of {args.repeat} runs"
    )
    print(f"{'query':<10}{'n':>7}{'MB':>6}{'search ms wall/CPU':>22}{'encode ms wall/CPU':>22}")
    for name in args.only:
        qs = queries[name] + (f"&limit={args.limit}" if args.limit else "")
        query = parse_candidate_query(parse_qsl(qs), version)
        search_wall, search_cpu, encode_wall, encode_cpu = [], [], [], []
        size = count = 0
        for _ in range(args.repeat + 1):
            w, c = time.perf_counter(), time.process_time()
            result = engine.search(query)
            w2, c2 = time.perf_counter(), time.process_time()
            body = encode_candidates(result, query, version, nested_aware=True, fragments=fragments)
            w3, c3 = time.perf_counter(), time.process_time()
            search_wall.append((w2 - w) * 1000)
            search_cpu.append((c2 - c) * 1000)
            encode_wall.append((w3 - w2) * 1000)
            encode_cpu.append((c3 - c2) * 1000)
            size, count = len(body), len(result.candidates)
        p50 = [statistics.median(x[1:]) for x in (search_wall, search_cpu, encode_wall, encode_cpu)]
        print(
            f"{name:<10}{count:>7}{size / 1e6:>6.1f}{p50[0]:>12.1f}/{p50[1]:<9.1f}"
            f"{p50[2]:>12.1f}/{p50[3]:<9.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
