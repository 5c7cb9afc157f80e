"""The NUMA flavor path at fleet scale, in process through the real app (``TestClient``).

Fleet: ``benchmarks/scale.py``'s mixed one (``--hosts`` compute nodes x 2 NUMA cells x 4K and
2M page-size children, mixed sizes, about 60% of the hosts with one to three instances),
SQLite, seeded once into ``--db`` and reused.

Times, p50 over ``--repeat`` runs with wall (``time.perf_counter``) and CPU
(``time.process_time``) ms and the load average beside them:

* ``POST /allocation_candidates`` with a two-cell flavor (``hw:numa_nodes=2``, dedicated CPUs)
  at ``limit=10`` and ``limit=1000``, repeated (the same flavor again) and first-time (a flavor
  size not asked before in this process);
* a one-cell flavor (``hw:numa_nodes=1``) at ``limit=10``, first-time;
* ``POST /allocation_candidates/claim`` with the two-cell flavor (a new consumer each time, so
  every claim writes and the next search sees a changed tree).

``--profile``: cProfile of the route functions (search, claim, rendering), after the timed cases
(a warm process): ``--repeat`` first-time two-cell queries at ``limit=10`` and at ``limit=1000``
and ``--repeat`` claims (top 30 by cumulative time, then by own time).

    python benchmarks/numa_scale.py --hosts 10000 --db /tmp/pn-scale-10000.sqlite
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import pstats
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import fastapi.routing
from fastapi.testclient import TestClient
from scale import seeded  # benchmarks/scale.py
from starlette.concurrency import run_in_threadpool

from placement_numa.app import create_app
from placement_numa.settings import Settings

HEADERS = {
    "x-auth-token": "admin",
    "openstack-api-version": "placement 1.39",
    "content-type": "application/json",
}
_sizes = itertools.count(1)


def flavor(cells: int, *, fresh: bool) -> dict[str, Any]:
    """A dedicated-CPU flavor of ``cells`` guest cells; ``fresh``: a memory size not asked
    before in this process (so no kept answer serves it)."""
    memory = 2048 + (128 * next(_sizes) if fresh else 0)
    return {
        "vcpus": 2 * cells,
        "memory_mb": memory * cells,
        "extra_specs": {"hw:numa_nodes": str(cells), "hw:cpu_policy": "dedicated"},
    }


def timed(action: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """p50 wall ms, p50 CPU ms of ``repeat`` runs of ``action``."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        action()
        cpus.append((time.process_time() - c) * 1000)
        walls.append((time.perf_counter() - w) * 1000)
    return statistics.median(walls), statistics.median(cpus)


class RouteProfile:
    """cProfile of the route functions FastAPI runs in its thread pool (sync endpoints: the
    search, the claim and the rendering), while ``active``."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()
        self.active = False
        original = run_in_threadpool

        async def run(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            def profiled(*args: Any, **kwargs: Any) -> Any:
                if not self.active:
                    return func(*args, **kwargs)
                self.profile.enable()
                try:
                    return func(*args, **kwargs)
                finally:
                    self.profile.disable()

            return await original(profiled, *args, **kwargs)

        setattr(fastapi.routing, "run_in_threadpool", run)  # noqa: B010 - what FastAPI calls

    def report(self, top: int = 30) -> None:
        """Print the top ``top`` functions by cumulative time, then by their own time."""
        stats = pstats.Stats(self.profile)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--db", default=None, help="SQLite file (seeded when missing)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    url = seeded(args.hosts, args.db)
    profiler = RouteProfile() if args.profile else None
    app = create_app(Settings(database_url=url, auth_strategy="noauth2"))
    with TestClient(app) as client:

        def post(path: str, body: dict[str, Any]) -> Callable[[], None]:
            def action() -> None:
                answer = client.post(path, json=body, headers=HEADERS)
                assert answer.status_code == 200, answer.text

            return action

        def first_time(cells: int, limit: int) -> Callable[[], None]:
            def action() -> None:
                body = {"flavor": flavor(cells, fresh=True), "limit": limit}
                post("/allocation_candidates", body)()

            return action

        def claim() -> None:
            body = {
                "flavor": flavor(2, fresh=False),
                "consumer_uuid": str(uuid.uuid4()),
                "consumer_generation": None,
                "project_id": "bench",
                "user_id": "bench",
            }
            post("/allocation_candidates/claim", body)()

        post("/allocation_candidates", {"flavor": flavor(2, fresh=False), "limit": 10})()
        cases: dict[str, Callable[[], None]] = {}
        for limit in (10, 1000):
            body = {"flavor": flavor(2, fresh=False), "limit": limit}
            cases[f"two-cell, limit {limit}, repeated"] = post("/allocation_candidates", body)
            cases[f"two-cell, limit {limit}, first-time"] = first_time(2, limit)
        cases["one-cell, limit 10, first-time"] = first_time(1, 10)
        cases["claim, two-cell"] = claim
        print(f"{args.hosts} hosts; load average {os.getloadavg()[0]:.2f} at start")
        print(f"{'case':<38}{'p50 wall ms':>13}{'p50 CPU ms':>12}{'load':>7}")
        for name, action in cases.items():
            action()
            wall, cpu = timed(action, args.repeat)
            print(f"{name:<38}{wall:>13.1f}{cpu:>12.1f}{os.getloadavg()[0]:>7.2f}", flush=True)
        if profiler is not None:  # a warm process, as the cases above ran
            profiler.active = True
            for limit in (10, 1000):
                for _ in range(args.repeat):
                    first_time(2, limit)()
            for _ in range(args.repeat):
                claim()
            profiler.active = False
            profiler.report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
