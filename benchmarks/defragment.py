"""``POST /allocation_candidates/defragment`` on issue 21's mixed fleet (issue 31).

Three cases, on a copy of the fleet ``benchmarks/capacity.py`` seeded and kept
(``~/.cache/placement-numa/fleets/capacity-seed{S}-{H}x{C}/ours.db``; run it first):

* a flavor that fits now (answers ``fits_now``);
* a flavor that fits nowhere at any cost (140 GiB on one cell: ``found: false``), with a
  5,000 ms budget and with a 300 ms one (``timed_out: true``, answered within the budget);
* the real case: ``FILL`` (96 GiB + 4 vCPUs on one cell) claimed through
  ``POST /allocation_candidates/claim`` until it fits nowhere (as many times as
  ``POST /allocation_candidates/capacity`` counts, then once more, which must answer 409), then
  a plan asked for one more instance (``--instances`` more, ``--max-moves``). The filled
  fleet is kept beside the seeded one (``filled-ours.db``) and reused.

Each answer prints wall time, the service's CPU (its processes, from ``/proc``), the load
average, the number of moves and whether a plan was found:

    python benchmarks/defragment.py --hosts 1000 --cells 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from capacity import HEADERS
from proc_cpu import cpu_seconds, descendants
from side_by_side import SERVER_PIDS, ours

GIB = 1024
FILL: dict[str, Any] = {
    "name": "big-one-cell",
    "vcpus": 4,
    "memory_mb": 96 * GIB,
    "extra_specs": {"hw:numa_nodes": "1"},
}
NOWHERE = {"vcpus": 2, "memory_mb": 143360, "extra_specs": {"hw:numa_nodes": "1"}}
CASES: dict[str, dict[str, Any]] = {
    "fits now (8 PCPU + 60 GiB, one cell)": {
        "vcpus": 8,
        "memory_mb": 61440,
        "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "1"},
    },
    "fits nowhere (140 GiB on one cell)": NOWHERE,
}


def _claim(client: httpx.Client) -> int:
    body = {"flavor": FILL, "consumer_uuid": str(uuid.uuid4()), "consumer_generation": None,
            "project_id": "bench", "user_id": "bench"}  # fmt: skip
    return client.post("/allocation_candidates/claim", json=body, headers=HEADERS).status_code


def fill(client: httpx.Client) -> tuple[int, int]:
    """Claim ``FILL`` as many times as the capacity answer counts; (count, the next claim's
    status: 409 when the count was exact)."""
    answer = client.post(
        "/allocation_candidates/capacity", json={"flavors": [FILL]}, headers=HEADERS
    ).json()
    count = answer["capacity"][0]["total"]
    with ThreadPoolExecutor(2) as pool:
        statuses = list(pool.map(lambda _: _claim(client), range(count)))
    assert all(s == 200 for s in statuses), sorted(set(statuses))
    return count, _claim(client)


def ask(client: httpx.Client, pids: list[int], name: str, body: dict[str, Any]) -> None:
    """One defragment request, timed (module docstring)."""
    cpu = cpu_seconds(pids)
    started = time.perf_counter()
    answer = client.post("/allocation_candidates/defragment", json=body, headers=HEADERS)
    wall = time.perf_counter() - started
    cpu = cpu_seconds(pids) - cpu
    got = answer.json()
    print(
        f"{name}: {answer.status_code} in {wall:.2f} s wall / {cpu:.2f} s CPU (service);"
        f" fits_now {got['fits_now']}, found {got['found']}, timed_out {got['timed_out']},"
        f" {len(got['moves'])} moves; load average {os.getloadavg()[0]:.2f}"
    )


def _copy(source: Path, target: Path) -> None:
    """Copy an SQLite database whole (its write-ahead log included)."""
    target.unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--port", type=int, default=18941)
    parser.add_argument("--instances", type=int, default=1, help="instances to make room for")
    parser.add_argument("--max-moves", type=int, default=3, help="1 to 4")
    args = parser.parse_args()
    where = Path.home() / ".cache/placement-numa/fleets"
    where = where / f"capacity-seed{args.seed}-{args.hosts}x{args.cells}"
    if not (where / "ours.db").exists():
        print(f"no fleet at {where / 'ours.db'}: run benchmarks/capacity.py first")
        return 1
    filled = where / "filled-ours.db"
    copy = Path(tempfile.mkdtemp(prefix="defragment-")) / "ours.db"
    url = f"sqlite:///{copy}"
    _copy(where / "ours.db", copy)
    with ours(args.port, url) as base, httpx.Client(base_url=base, timeout=600) as c:
        pids = descendants(SERVER_PIDS[base])
        warm = {"flavors": [{"vcpus": 1, "memory_mb": 1}]}
        c.post("/allocation_candidates/capacity", json=warm, headers=HEADERS)  # fleet loaded
        for name, flavor in CASES.items():
            ask(c, pids, name, {"flavor": flavor, "time_budget_ms": 5000})
        short = {"flavor": NOWHERE, "time_budget_ms": 300}  # runs out: answered within it?
        ask(c, pids, "fits nowhere, 300 ms budget", short)
        if not filled.exists():
            started = time.perf_counter()
            count, after = fill(c)
            print(f"filled: {count} x {FILL['name']} claimed in "
                  f"{time.perf_counter() - started:.0f} s; one more answers {after}")  # fmt: skip
    if not filled.exists():
        _copy(copy, filled)
    _copy(filled, copy)
    with ours(args.port, url) as base, httpx.Client(base_url=base, timeout=600) as c:
        pids = descendants(SERVER_PIDS[base])
        c.post("/allocation_candidates/capacity", json=warm, headers=HEADERS)  # fleet loaded
        body = {"flavor": FILL, "time_budget_ms": 5000, "max_moves": args.max_moves}
        if args.instances > 1:
            body["instances"] = args.instances
        ask(c, pids, f"filled, room for {args.instances} more {FILL['name']}", body)
    shutil.rmtree(copy.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
