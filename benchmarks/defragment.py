"""``POST /allocation_candidates/defragment`` on issue 21's mixed fleet (issue 31): the answer's
time for a flavor that fits now and for one that fits nowhere (the search runs until its time
budget, 5,000 ms, and answers ``found: false, timed_out: true``).

Runs on a copy of the fleet ``benchmarks/capacity.py`` seeded and kept
(``~/.cache/placement-numa/fleets/capacity-seed{S}-{H}x{C}/ours.db``; run it first):

    python benchmarks/defragment.py --hosts 1000 --cells 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx
from capacity import HEADERS
from side_by_side import ours

CASES = {
    "fits now (8 PCPU + 60 GiB, one cell)": {
        "vcpus": 8,
        "memory_mb": 61440,
        "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "1"},
    },
    "fits nowhere (140 GiB on one cell)": {
        "vcpus": 2,
        "memory_mb": 143360,
        "extra_specs": {"hw:numa_nodes": "1"},
    },
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--port", type=int, default=18941)
    args = parser.parse_args()
    kept = Path.home() / ".cache/placement-numa/fleets"
    kept = kept / f"capacity-seed{args.seed}-{args.hosts}x{args.cells}" / "ours.db"
    if not kept.exists():
        print(f"no fleet at {kept}: run benchmarks/capacity.py first")
        return 1
    copy = Path(tempfile.mkdtemp(prefix="defragment-")) / "ours.db"
    shutil.copy(kept, copy)
    with ours(args.port, f"sqlite:///{copy}") as base, httpx.Client(base_url=base, timeout=60) as c:
        warm = {"flavors": [{"vcpus": 1, "memory_mb": 1}]}
        c.post("/allocation_candidates/capacity", json=warm, headers=HEADERS)  # fleet loaded
        for name, flavor in CASES.items():
            body = {"flavor": flavor, "time_budget_ms": 5000}
            started = time.perf_counter()
            answer = c.post("/allocation_candidates/defragment", json=body, headers=HEADERS)
            wall = time.perf_counter() - started
            got = answer.json()
            print(
                f"{name}: {answer.status_code} in {wall:.2f} s wall; fits_now {got['fits_now']},"
                f" found {got['found']}, timed_out {got['timed_out']}, {len(got['moves'])} moves;"
                f" load average {os.getloadavg()[0]:.2f}"
            )
    shutil.rmtree(copy.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
