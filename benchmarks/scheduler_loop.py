"""A scheduler's loop, side by side with upstream Placement 16: varied flavors, each query
followed at once by a claim of its first candidate.

What a Nova scheduler does for every boot: ``GET /allocation_candidates`` for the flavor, then
``PUT /allocations/{consumer}`` of the candidate it picked (here the first). Flavors are drawn
from a catalogue (``CATALOGUE``: one-cell, two-cell and 2M-page NUMA guests as grouped
``same_subtree`` queries, and flat guests), each with sizes drawn per boot (VCPU 1-8, memory
512 MiB steps, disk 5-40 GiB), so almost every query is asked for the first time, and every
claim changes the tree the next query may land on: the cases the engine's kept answers cannot
serve. Each boot is timed at ``limit=1000`` and without a limit (two loops).

Both services on copies of the mixed fleet ``mixed_fleet.py`` seeded and cached
(``~/.cache/placement-numa/fleets/mixed-seed{S}-{H}x{C}``; run ``mixed_fleet.py`` with these
sizes first), 2 workers each, the same boots in the same order, alternating per block of
boots (ours, upstream, ours, ...). Prints per loop the median GET and PUT wall ms of each
side, their ratio, the whole loop per boot (GET + PUT) wall and each service's CPU per boot
(all its processes, from ``/proc``), and the load average.

    python benchmarks/scheduler_loop.py --hosts 1000 --cells 2 --boots 40 --upstream-boots 8

``--flavors N`` draws the boots from N fixed flavors instead (a catalogue as clouds define
it): most queries are then repeated, each right after the previous boot's claim changed one
tree.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed_fleet import _service_pids, fleet_cache  # noqa: E402
from proc_cpu import cpu_seconds  # noqa: E402
from side_by_side import ours  # noqa: E402
from upstream import upstream_placement  # noqa: E402

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
PAGE_4K, PAGE_2M = "CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"


def _cell(n: int, vcpu: int, memory_mb: int, page: str) -> str:
    return (
        f"resources_PROC{n}=VCPU:{vcpu}&resources_MEM{n}=MEMORY_MB:{memory_mb}"
        f"&required_MEM{n}={page}&required_NUMA{n}=HW_NUMA_ROOT"
        f"&same_subtree=_PROC{n},_MEM{n},_NUMA{n}"
    )


def _numa(cells: int, page: str) -> Any:
    def query(vcpu: int, memory_mb: int, disk_gb: int) -> str:
        per_cell = "&".join(
            _cell(n, max(1, vcpu // cells), memory_mb // cells, page) for n in range(1, cells + 1)
        )
        return f"resources=DISK_GB:{disk_gb}&{per_cell}&group_policy=none"

    return query


def _flat(vcpu: int, memory_mb: int, disk_gb: int) -> str:
    return f"resources=VCPU:{vcpu},MEMORY_MB:{memory_mb},DISK_GB:{disk_gb}"


CATALOGUE = {
    "one-cell": _numa(1, PAGE_4K),
    "two-cell": _numa(2, PAGE_4K),
    "two-cell 2M": _numa(2, PAGE_2M),
    "flat": _flat,
}


def boots(count: int, seed: int, flavors: int = 0) -> list[tuple[str, str]]:
    """``count`` boots: ``(flavor kind, query string)``, sizes drawn per boot, or, with
    ``flavors``, each boot one of that many flavors drawn first (a cloud's flavor catalogue:
    fixed sizes, so queries repeat, each right after the previous boot's claim)."""
    rng = random.Random(seed)
    found = []
    for _ in range(flavors or count):
        kind = rng.choice(list(CATALOGUE))
        vcpu = rng.choice((1, 2, 2, 4, 4, 8))
        memory_mb = 512 * rng.randint(1, 16) * (2 if kind.startswith("two") else 1)
        found.append((kind, CATALOGUE[kind](vcpu, memory_mb, rng.randint(5, 40))))
    if flavors:
        return [rng.choice(found) for _ in range(count)]
    return found


def claim_body(request: dict[str, Any]) -> dict[str, Any]:
    """The ``PUT /allocations/{consumer}`` body (1.38+) claiming one allocation request of an
    answer, for a new consumer of project and user ``scheduler``."""
    return {
        "allocations": request["allocations"],
        "project_id": "scheduler",
        "user_id": "scheduler",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }


def boot(client: httpx.Client, query: str, limit: str) -> tuple[float, float, bool]:
    """One boot: GET the candidates, PUT the first (a new consumer). ``(GET ms, PUT ms,
    claimed)``; no PUT when there is no candidate."""
    suffix = "" if limit == "none" else f"&limit={limit}"
    started = time.perf_counter()
    answer = client.get(f"/allocation_candidates?{query}{suffix}")
    get_ms = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, answer.text[:300]
    requests = answer.json()["allocation_requests"]
    if not requests:
        return get_ms, 0.0, False
    started = time.perf_counter()
    put = client.put(f"/allocations/{uuid.uuid4()}", json=claim_body(requests[0]))
    put_ms = (time.perf_counter() - started) * 1000
    assert put.status_code == 204, put.text[:300]
    return get_ms, put_ms, True


def run_block(
    base: str, block: list[tuple[str, str]], limit: str
) -> tuple[list[tuple[str, float, float]], float]:
    """The boots of ``block`` on one service: ``([(kind, GET ms, PUT ms)], CPU seconds)``."""
    pids = _service_pids(base)
    cpu = cpu_seconds(pids)
    timed = []
    with httpx.Client(base_url=base, headers=HEADERS, timeout=1200) as client:
        for kind, query in block:
            get_ms, put_ms, _ = boot(client, query, limit)
            timed.append((kind, get_ms, put_ms))
    return timed, cpu_seconds(pids) - cpu


def _summary(timed: list[tuple[str, float, float]], cpu: float) -> dict[str, float]:
    return {
        "get": statistics.median(g for _, g, _ in timed),
        "put": statistics.median(p for _, _, p in timed if p) if any(p for *_, p in timed) else 0,
        "loop": statistics.fmean(g + p for _, g, p in timed),
        "cpu": 1000 * cpu / len(timed),
    }


def report(limit: str, mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    """One loop's table (markdown)."""
    ours_all, up_all = _summary(*mine["all"]), _summary(*theirs["all"])
    print(f"\nlimit={limit}: {len(mine['all'][0])} boots ours, {len(theirs['all'][0])} upstream")
    print("| | ours | upstream 16 | ratio |")
    print("|---|---|---|---|")
    for label, key in (
        ("median GET ms", "get"),
        ("median PUT ms", "put"),
        ("loop per boot ms (GET + PUT, mean)", "loop"),
        ("service CPU per boot ms", "cpu"),
    ):
        a, b = ours_all[key], up_all[key]
        print(f"| {label} | {a:.1f} | {b:,.1f} | {b / max(a, 0.01):.0f}x |")
    for kind in CATALOGUE:
        a_gets = [g for k, g, _ in mine["all"][0] if k == kind]
        b_gets = [g for k, g, _ in theirs["all"][0] if k == kind]
        if a_gets and b_gets:
            a, b = statistics.median(a_gets), statistics.median(b_gets)
            print(f"| median GET ms, {kind} | {a:.1f} | {b:,.1f} | {b / a:.0f}x |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--boots", type=int, default=40, help="boots per loop, ours")
    parser.add_argument("--upstream-boots", type=int, default=8, help="boots per loop, upstream")
    parser.add_argument("--blocks", type=int, default=2, help="alternations per loop")
    parser.add_argument("--limits", nargs="*", default=["1000", "none"])
    parser.add_argument(
        "--flavors",
        type=int,
        default=0,
        help="boots drawn from this many fixed flavors (default 0: sizes drawn per boot)",
    )
    parser.add_argument("--port", type=int, default=19700)
    args = parser.parse_args()
    cached = fleet_cache(args.seed, args.hosts, args.cells)
    if not (cached / "ours.seeded").exists() or not (cached / "upstream.seeded").exists():
        sys.exit(f"no seeded fleet in {cached}: run benchmarks/mixed_fleet.py with these sizes")
    work = Path(tempfile.mkdtemp(prefix="pn-loop-"))
    for side in ("ours", "upstream"):  # with what the write-ahead log still holds
        with sqlite3.connect(cached / f"{side}.db") as source:
            with sqlite3.connect(work / f"{side}.db") as copy:
                source.backup(copy)
    cpu0 = os.times()
    print(f"{args.hosts} hosts x {args.cells} cells; load average {os.getloadavg()[0]:.1f}")
    try:
        with ExitStack() as stack:
            bases = {
                "ours": stack.enter_context(ours(args.port, f"sqlite:///{work / 'ours.db'}")),
                "upstream": stack.enter_context(
                    upstream_placement(
                        args.port + 1, database_url=f"sqlite:///{work / 'upstream.db'}"
                    )
                ),
            }
            for base in bases.values():  # fleets loaded, first requests served
                for _kind, query in boots(len(CATALOGUE) * 2, args.seed - 1):
                    url = f"{base}/allocation_candidates?{query}&limit=1"
                    httpx.get(url, headers=HEADERS, timeout=600)
            counts = {"ours": args.boots, "upstream": args.upstream_boots}
            for n, limit in enumerate(args.limits):
                plan = boots(args.boots, args.seed + n, args.flavors)
                results: dict[str, dict[str, Any]] = {}
                for block in range(args.blocks):
                    for side, base in bases.items():
                        size = counts[side] // args.blocks
                        timed, cpu = run_block(base, plan[block * size : (block + 1) * size], limit)
                        got = results.setdefault(side, {"all": ([], 0.0)})
                        got["all"] = (got["all"][0] + timed, got["all"][1] + cpu)
                report(limit, results["ours"], results["upstream"])
                print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    spent = os.times()
    print(f"client CPU {spent.user - cpu0.user + spent.system - cpu0.system:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
