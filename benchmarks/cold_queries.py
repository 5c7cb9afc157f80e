"""Candidates when the engine's kept answers do not help: first-time queries and queries right
after a write, on issue 21's mixed fleet, side by side with upstream Placement 16.

``mixed_fleet.py`` repeats the same query on a fleet that does not change: there the engine
answers from what it kept per (query, tree profile) and the API from the bytes it kept per tree.
A scheduler asks many flavors, and claims change trees between queries. This benchmark times
the cases those caches cannot serve, on the fleet ``mixed_fleet.py`` seeded and cached
(``~/.cache/placement-numa/fleets/mixed-seed{S}-{H}x{C}``; run ``mixed_fleet.py`` first):

* **cold**: the two-cell query with ``VCPU:k`` and ``MEMORY_MB:m`` amounts never asked before
  (every request a new query), ``limit`` none and 1000;
* **after a write**: a ``PUT /allocations`` of 1 VCPU on a random cell (then its delete), and at
  once the same two-cell query (``limit=1000``): the tree just changed, so its kept answers
  and rendered bytes are gone.

Both services on copies of the cached SQLite files, 2 workers each. Prints p50 wall time per
case and each service's CPU per request (all its processes, from ``/proc``).

    python benchmarks/cold_queries.py --hosts 1000 --cells 2 --requests 20
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed_fleet import _cell, _service_pids  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402
from side_by_side import ours  # noqa: E402
from upstream import upstream_placement  # noqa: E402

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}


def two_cell(vcpu: int, memory_mb: int) -> str:
    """Issue 21's two-cell query with other amounts."""
    cells = "&".join(
        _cell(n, "CUSTOM_MEMORY_PAGE_SIZE_4")
        .replace("VCPU:4", f"VCPU:{vcpu}")
        .replace("MEMORY_MB:4096", f"MEMORY_MB:{memory_mb}")
        for n in (1, 2)
    )
    return f"/allocation_candidates?resources=DISK_GB:10&{cells}&group_policy=none"


def _cells(client: httpx.Client) -> list[str]:
    """Uuids of the providers with VCPU inventory (the NUMA cells)."""
    answer = client.get("/resource_providers?resources=VCPU:1").json()
    return [rp["uuid"] for rp in answer["resource_providers"]]


def _timed(client: httpx.Client, pids: list[int], path: str) -> tuple[float, float]:
    cpu = cpu_seconds(pids)
    started = time.perf_counter()
    response = client.get(path)
    wall = time.perf_counter() - started
    assert response.status_code == 200, response.text[:300]
    return wall, cpu_seconds(pids) - cpu


def run(base: str, requests: int, offset: int) -> dict[str, tuple[float, float]]:
    """``{case: (p50 wall ms, mean CPU ms)}`` for one service."""
    pids = _service_pids(base)
    results: dict[str, list[tuple[float, float]]] = {}
    with httpx.Client(base_url=base, headers=HEADERS, timeout=600) as client:
        client.get(two_cell(4, 4096))  # the fleet loaded
        for limit in ("none", "1000"):
            suffix = "" if limit == "none" else f"&limit={limit}"
            for i in range(requests):  # amounts never asked before on this service
                path = two_cell(
                    1 + (offset + i) % 7, 1024 + 8 * (offset + i) + 512 * (limit == "1000")
                )
                results.setdefault(f"cold, limit={limit}", []).append(
                    _timed(client, pids, path + suffix)
                )
        cells = _cells(client)
        for i in range(requests):
            consumer = str(uuid.uuid4())
            body = {
                "allocations": {cells[(7 * i) % len(cells)]: {"resources": {"VCPU": 1}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            assert client.put(f"/allocations/{consumer}", json=body).status_code == 204
            results.setdefault("after a write, limit=1000", []).append(
                _timed(client, pids, two_cell(4, 4096) + "&limit=1000")
            )
            client.delete(f"/allocations/{consumer}")
    return {
        case: (
            1000 * statistics.median(w for w, _ in times),
            1000 * statistics.fmean(c for _, c in times),
        )
        for case, times in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--upstream-requests", type=int, default=5)
    parser.add_argument("--port", type=int, default=18900)
    args = parser.parse_args()
    cached = (
        Path.home()
        / ".cache/placement-numa/fleets"
        / (f"mixed-seed{args.seed}-{args.hosts}x{args.cells}")
    )
    if not (cached / "ours.seeded").exists() or not (cached / "upstream.seeded").exists():
        sys.exit(
            f"no seeded fleet in {cached}: run benchmarks/mixed_fleet.py with these sizes first"
        )
    work = Path(tempfile.mkdtemp(prefix="pn-cold-"))
    for side in ("ours", "upstream"):
        shutil.copy(cached / f"{side}.db", work / f"{side}.db")
    try:
        with ExitStack() as stack:
            base = stack.enter_context(ours(args.port, f"sqlite:///{work / 'ours.db'}"))
            mine = run(base, args.requests, 0)
            stack.close()
            base = stack.enter_context(
                upstream_placement(args.port + 1, database_url=f"sqlite:///{work / 'upstream.db'}")
            )
            theirs = run(base, args.upstream_requests, 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"{args.hosts} hosts x {args.cells} cells, seed {args.seed}; load average {load:.1f}")
    print("| case | ours p50 / CPU | upstream 16 p50 / CPU | ratio wall / CPU |")
    print("|---|---|---|---|")
    for case, (wall, cpu) in mine.items():
        up_wall, up_cpu = theirs[case]
        print(
            f"| {case} | {wall:.1f} ms / {cpu:.1f} ms | {up_wall:,.0f} ms / {up_cpu:,.0f} ms"
            f" | {up_wall / wall:.0f}x / {up_cpu / max(cpu, 0.01):.0f}x |"
        )


if __name__ == "__main__":
    main()
