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

``--http PORT``: the same cases over HTTP, as a Nova filter or a scheduler calls: ``placement-numa
serve --workers 1`` on ``PORT`` (noauth2) on the same database, and a thin client
(``http.client``, one kept connection: it reads a body in one call, where ``httpx``'s pure
Python HTTP parser spends 8-10 ms of client CPU on a 2.8 MB ``limit=1000`` answer); the CPU
column is then the service's (all its processes, from ``/proc``), a mean per request (``/proc``
counts in clock ticks, too coarse for one request's p50). In process, ``TestClient`` adds its
own cost (about 3-4 ms a request on this machine, more for a large body).

``--profile``: cProfile of the route functions (search, claim, rendering), after the timed cases
(a warm process): ``--repeat`` first-time two-cell queries at ``limit=10`` and at ``limit=1000``
and ``--repeat`` claims (top 30 by cumulative time, then by own time).

    python benchmarks/numa_scale.py --hosts 10000 --db /tmp/pn-scale-10000.sqlite
    python benchmarks/numa_scale.py --hosts 10000 --db /tmp/pn-scale-10000.sqlite --http 19340
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import http.client
import itertools
import os
import pstats
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import fastapi.routing
import orjson
from fastapi.testclient import TestClient
from scale import seeded  # benchmarks/scale.py
from side_by_side import ours, services_cpu_seconds  # benchmarks/side_by_side.py
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


def timed(action: Callable[[], Any], repeat: int, *, http: bool = False) -> tuple[float, float]:
    """p50 wall ms and CPU ms of ``repeat`` runs of ``action``: this process's p50 in process,
    the service's mean with ``http`` (its processes' CPU over the runs, divided by ``repeat``)."""
    walls, cpus = [], []
    service = services_cpu_seconds() if http else 0.0
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        action()
        cpus.append((time.process_time() - c) * 1000)
        walls.append((time.perf_counter() - w) * 1000)
    if http:
        return statistics.median(walls), (services_cpu_seconds() - service) * 1000 / repeat
    return statistics.median(walls), statistics.median(cpus)


class Answer(NamedTuple):
    """What a case reads of a response."""

    status_code: int
    text: str


class HttpClient:
    """``post(path, json=..., headers=...)`` over one kept ``http.client`` connection."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, path: str, *, json: Any, headers: dict[str, str]) -> Answer:
        self.connection.request("POST", path, orjson.dumps(json), headers)
        response = self.connection.getresponse()
        body = response.read()
        return Answer(response.status, body[:2000].decode(errors="replace"))


@contextlib.contextmanager
def client_for(url: str, port: int | None) -> Iterator[TestClient | HttpClient]:
    """The client the cases use: ``TestClient`` on the app in this process, or (``port``) an
    ``HttpClient`` on ``placement-numa serve --workers 1`` at ``port``."""
    if port is None:
        with TestClient(create_app(Settings(database_url=url, auth_strategy="noauth2"))) as c:
            yield c
        return
    with ours(port, url, workers=1):
        client = HttpClient(port)
        try:
            yield client
        finally:
            client.connection.close()


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
    parser.add_argument("--http", type=int, metavar="PORT", default=None)
    args = parser.parse_args()
    if args.profile and args.http is not None:
        parser.error("--profile profiles this process: not with --http")
    url = seeded(args.hosts, args.db)
    profiler = RouteProfile() if args.profile else None
    with client_for(url, args.http) as client:

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
        http = args.http is not None
        where = "over HTTP (CPU: the service's, mean)" if http else "in process"
        print(f"{args.hosts} hosts, {where}; load average {os.getloadavg()[0]:.2f} at start")
        print(f"{'case':<38}{'p50 wall ms':>13}{'CPU ms':>12}{'load':>7}")
        for name, action in cases.items():
            action()
            wall, cpu = timed(action, args.repeat, http=http)
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
