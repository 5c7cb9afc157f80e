"""Benchmark ``POST /allocation_candidates`` (the NUMA flavor form) over HTTP.

Fleet: ``benchmarks/candidates.py``'s SQL-seeded one (``--hosts`` compute nodes of ``--cells``
NUMA cells, 4K and 2M page-size children), plus a SLIT distance matrix on every host (PUT
``/resource_providers/{root}/numa_distances``, 16 client threads). One service process, SQLite.

Times a two-cell flavor (``hw:numa_nodes=2``, dedicated CPUs) with ``limit`` 10 and the same
flavor without ``hw:numa_nodes`` and ``distribute_cpus_across_numa`` (KEP-2902 widths), each
``--repeat`` times sequentially after one untimed warm-up, and prints p50/p95 in ms and the
number of different answers (host and host cells). With ``--cells 8`` also the wide guest: an
8-cell flavor (``hw:numa_nodes=8``), by POST and by GET (its ``explain`` query, ``limit`` 10).

    python benchmarks/numa_candidates_http.py --hosts 1000 --cells 2 --port 19320
    python benchmarks/numa_candidates_http.py --hosts 200 --cells 8 --port 19320

``--keystone``: the service behind a real Keystone, as ``benchmarks/candidates.py --keystone``
(prints Keystone's token validations while the cases were timed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from candidates import (  # benchmarks/candidates.py
    HEADERS,
    seed_sql,
    start_keystone_auth,
    wait_up,
)

CASES: dict[str, dict[str, Any]] = {
    "two-cell": {
        "flavor": {
            "vcpus": 8,
            "memory_mb": 4096,
            "extra_specs": {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"},
        },
        "limit": 10,
    },
    "distribute": {
        "flavor": {"vcpus": 8, "memory_mb": 4096, "extra_specs": {"hw:cpu_policy": "dedicated"}},
        "limit": 10,
        "distribute_cpus_across_numa": True,
    },
}
# the wide guest (issue 13): 8 identical guest cells, on fleets of 8-cell hosts (--cells 8)
WIDE: dict[str, dict[str, Any]] = {
    "eight-cell": {
        "flavor": {
            "vcpus": 16,
            "memory_mb": 8192,
            "extra_specs": {"hw:numa_nodes": "8", "hw:cpu_policy": "dedicated"},
        },
        "limit": 10,
    },
}


def report(name: str, timings: list[float], requests: list[Any]) -> None:
    """One line: candidates, different answers (host, host cells), p50 and p95 in ms."""
    rest = sorted(timings[1:])
    p95 = rest[min(len(rest) - 1, int(round(0.95 * (len(rest) - 1))))]
    different = len({(r["numa"]["host"], tuple(r["numa"]["cells"])) for r in requests})
    print(
        f"{name:<16}{len(requests):>6}{different:>10}{statistics.median(rest):>10.2f}{p95:>10.2f}"
    )


def matrix(cells: int) -> dict[str, dict[str, int]]:
    """A SLIT matrix for ``cells`` cells: 10 on the diagonal, 21 elsewhere."""
    return {str(i): {str(j): 10 if i == j else 21 for j in range(cells)} for i in range(cells)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--port", type=int, default=18779)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--keystone", action="store_true", help="behind a real Keystone")
    parser.add_argument("--keystone-port", type=int, default=18900)
    args = parser.parse_args()

    db_path = os.path.join(tempfile.mkdtemp(prefix="pn-bench-"), "bench.sqlite")
    url = f"sqlite:///{db_path}"
    env = dict(os.environ, PLACEMENT_NUMA_DATABASE_URL=url, PLACEMENT_NUMA_LOG_LEVEL="warning")
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    prepare_database(Settings(database_url=url))
    hosts = seed_sql(db_path, args.hosts, args.cells)
    exe = str(Path(sys.executable).with_name("placement-numa"))
    command = [exe, "serve", "--port", str(args.port), "--workers", "1"]
    command += ["--database-url", url, "--no-migrate"]
    base = f"http://127.0.0.1:{args.port}"
    stack = contextlib.ExitStack()
    auth = ["--auth-strategy", "noauth2"]
    keystone = None
    if args.keystone:
        workdir = Path(db_path).parent
        keystone, auth = start_keystone_auth(stack, workdir, args.keystone_port, base)
    proc = subprocess.Popen(
        [*command, *auth], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_up(base, proc)
        with httpx.Client(base_url=base, timeout=600) as client:
            body = {"generation": None, "distances": matrix(args.cells)}

            def put(host: dict[str, str]) -> None:
                path = f"/resource_providers/{host['root']}/numa_distances"
                r = client.put(path, json=body, headers=HEADERS)
                if r.status_code != 200:
                    raise RuntimeError(r.text)

            with ThreadPoolExecutor(16) as pool:
                list(pool.map(put, hosts))
            print(f"fleet: {args.hosts} hosts x {args.cells} cells, distance matrix on each")
            validations = keystone.validations() if keystone else 0
            print(f"{'case':<16}{'n':>6}{'different':>10}{'p50 ms':>10}{'p95 ms':>10}")
            cases = dict(CASES)
            if args.cells >= 8:
                cases.update(WIDE)
            for name, case in cases.items():
                timings = []
                requests: list[Any] = []
                for _ in range(args.repeat + 1):
                    t0 = time.perf_counter()
                    r = client.post("/allocation_candidates", json=case, headers=HEADERS)
                    timings.append((time.perf_counter() - t0) * 1000)
                    if r.status_code != 200:
                        raise RuntimeError(r.text)
                    requests = r.json()["allocation_requests"]
                report(name, timings, requests)
                if name in WIDE:  # the same query by GET: Placement's semantics, every ordering
                    explain = requests[0]["numa"]["explain"].split("#")[0]  # query only
                    timings = []
                    for _ in range(args.repeat + 1):
                        t0 = time.perf_counter()
                        r = client.get(
                            f"/allocation_candidates?{explain}&limit={case['limit']}",
                            headers=HEADERS,
                        )
                        timings.append((time.perf_counter() - t0) * 1000)
                        if r.status_code != 200:
                            raise RuntimeError(r.text)
                    got = r.json()["allocation_requests"]
                    print(
                        f"{name + ' GET':<16}{len(got):>6}{'':>10}"
                        f"{statistics.median(timings[1:]):>10.2f}"
                    )
            if keystone:
                timed = keystone.validations() - validations
                print(f"Keystone token validations while the cases were timed: {timed}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        stack.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
