"""``POST /allocation_candidates/capacity`` on issue 21's mixed fleet, beside os-capacity's
flat arithmetic (issue 31).

Fleet: ``mixed_fleet.host_specs`` (``--hosts`` x ``--cells``, seed ``--seed``: sizes mixed,
1 GiB pages on a quarter of the hosts, 1-3 guests on 30%), seeded with ``POST
/resource_providers/batch`` plus the guests' ``PUT /allocations``; page-size children carry
the standard ``MEMORY_PAGE_SIZE_SMALL``/``_LARGE`` traits beside the custom size trait (the
traits a flavor is translated to). The SQLite file is kept in
``~/.cache/placement-numa/fleets/capacity-seed{S}-{H}x{C}/`` and reused (``--fresh``: a new
temporary one). The service is ``placement-numa serve`` (2 workers).

Times ``--rounds`` requests counting the six ``FLAVORS`` at once (the first after start is
cold: the worker loads the fleet; the others warm), and prints p50 wall, the service's CPU
per request (its processes, from ``/proc``) and the load average; then per flavor our total
beside os-capacity's: per compute node, the tree's free ``VCPU``, ``MEMORY_MB`` (every page
size) and ``DISK_GB`` divided by the flavor's ``vcpus``, ``memory_mb`` and disk, the least
of the three, summed over hosts (os-capacity knows no cells, page sizes or ``PCPU``).

    python benchmarks/capacity.py --hosts 1000 --cells 2 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from mixed_fleet import GIB, HostSpec, batch_entries, host_specs, place_guests
from proc_cpu import cpu_seconds, descendants
from side_by_side import SERVER_PIDS, ours

HEADERS = {
    "x-auth-token": "admin",
    "openstack-api-version": "placement 1.39",
    "content-type": "application/json",
}

FLAVORS: list[dict[str, Any]] = [
    {"name": "one-cell", "vcpus": 2, "memory_mb": 4 * GIB, "root_gb": 20,
     "extra_specs": {"hw:numa_nodes": "1"}},
    {"name": "two-cell", "vcpus": 8, "memory_mb": 16 * GIB, "root_gb": 40,
     "extra_specs": {"hw:numa_nodes": "2"}},
    {"name": "pinned", "vcpus": 4, "memory_mb": 8 * GIB, "root_gb": 20,
     "extra_specs": {"hw:cpu_policy": "dedicated"}},
    {"name": "pinned-two-cell", "vcpus": 8, "memory_mb": 16 * GIB, "root_gb": 40,
     "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}},
    {"name": "1g-pages", "vcpus": 4, "memory_mb": 8 * GIB, "root_gb": 20,
     "extra_specs": {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "1GB"}},
    {"name": "mixed-cpus", "vcpus": 4, "memory_mb": 4 * GIB, "root_gb": 20,
     "extra_specs": {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-1"}},
]  # fmt: skip


def _standard_traits(entries: list[dict[str, Any]]) -> None:
    """Add ``MEMORY_PAGE_SIZE_SMALL``/``_LARGE`` to the page-size children of ``entries``."""
    for entry in entries:
        for trait in list(entry.get("traits", [])):
            if trait.startswith("CUSTOM_MEMORY_PAGE_SIZE_"):
                small = trait == "CUSTOM_MEMORY_PAGE_SIZE_4"
                entry["traits"].append(
                    "MEMORY_PAGE_SIZE_SMALL" if small else "MEMORY_PAGE_SIZE_LARGE"
                )


def seed(client: httpx.Client, specs: list[HostSpec]) -> None:
    """The fleet of ``specs`` with standard page traits, then the guests."""
    for size in ("4", "2048", "1048576"):
        client.put(f"/traits/CUSTOM_MEMORY_PAGE_SIZE_{size}", headers=HEADERS)

    def batch(chunk: list[HostSpec]) -> list[dict[str, str]]:
        entries: list[dict[str, Any]] = []
        trees = []
        for spec in chunk:
            tree, uuids = batch_entries(spec)
            _standard_traits(tree)
            entries += tree
            trees.append(uuids)
        r = client.post("/resource_providers/batch", json={"resource_providers": entries},
                        headers=HEADERS)  # fmt: skip
        r.raise_for_status()
        return trees

    chunks = [specs[i : i + 10] for i in range(0, len(specs), 10)]
    with ThreadPoolExecutor(8) as pool:
        trees = [t for found in pool.map(batch, chunks) for t in found]
        list(pool.map(lambda pair: place_guests(client, *pair), zip(specs, trees, strict=True)))


def flat_counts(client: httpx.Client) -> dict[str, int]:
    """os-capacity's arithmetic per flavor, from Placement's own reads (module docstring)."""
    providers = client.get("/resource_providers", headers=HEADERS).json()["resource_providers"]
    free: dict[str, dict[str, int]] = {}
    for rp in providers:
        inventories = client.get(f"/resource_providers/{rp['uuid']}/inventories",
                                 headers=HEADERS).json()["inventories"]  # fmt: skip
        usages = client.get(f"/resource_providers/{rp['uuid']}/usages",
                            headers=HEADERS).json()["usages"]  # fmt: skip
        host = free.setdefault(rp["root_provider_uuid"], {})
        for rc, inv in inventories.items():
            room = int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
            host[rc] = host.get(rc, 0) + room - usages.get(rc, 0)
    counts = {}
    for flavor in FLAVORS:
        asked = {"VCPU": flavor["vcpus"], "MEMORY_MB": flavor["memory_mb"],
                 "DISK_GB": flavor["root_gb"]}  # fmt: skip
        counts[flavor["name"]] = sum(
            min(host.get(rc, 0) // amount for rc, amount in asked.items()) for host in free.values()
        )
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=18931)
    parser.add_argument("--fresh", action="store_true")
    args = parser.parse_args()
    if args.fresh:
        where = Path(tempfile.mkdtemp(prefix="capacity-"))
    else:
        where = Path.home() / ".cache/placement-numa/fleets"
        where = where / f"capacity-seed{args.seed}-{args.hosts}x{args.cells}"
        where.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{where / 'ours.db'}"
    with ours(args.port, url) as base, httpx.Client(base_url=base, timeout=600) as client:
        if not (where / "ours.seeded").exists():
            started = time.perf_counter()
            seed(client, host_specs(args.hosts, args.cells, args.seed))
            (where / "ours.seeded").write_text("done\n")
            print(f"seeded {args.hosts} hosts in {time.perf_counter() - started:.1f} s")
        pids = descendants(SERVER_PIDS[base])
        body = {"flavors": FLAVORS}
        walls, cpus, answer = [], [], None
        for _ in range(args.rounds):
            cpu = cpu_seconds(pids)
            started = time.perf_counter()
            r = client.post("/allocation_candidates/capacity", json=body, headers=HEADERS)
            walls.append(time.perf_counter() - started)
            cpus.append(cpu_seconds(pids) - cpu)
            r.raise_for_status()
            answer = r.json()
        load = os.getloadavg()[0]
        print(f"capacity of {len(FLAVORS)} flavors, {args.hosts} x {args.cells}: first "
              f"{walls[0] * 1000:.0f} ms wall / {cpus[0] * 1000:.0f} ms CPU; p50 of the rest "
              f"{statistics.median(walls[1:] or walls) * 1000:.0f} ms wall / "
              f"{statistics.median(cpus[1:] or cpus) * 1000:.0f} ms CPU (service, all "
              f"processes); load average {load:.2f}")  # fmt: skip
        flat = flat_counts(client)
        assert answer is not None
        print(f"{'flavor':<18}{'os-capacity (flat)':>20}{'placement-numa':>16}")
        for item in answer["capacity"]:
            print(f"{item['flavor']:<18}{flat[item['flavor']]:>20,}{item['total']:>16,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
