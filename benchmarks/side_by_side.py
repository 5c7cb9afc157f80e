"""placement-numa and OpenStack Placement 16 side by side, on the same fleet seeded over REST.

Both services get issue 21's mixed fleet (``benchmarks/mixed_fleet.py``, ``--seed``; the
default), or with ``--fleet uniform`` the fleet of ``benchmarks/candidates.py`` (``--hosts``
compute nodes of ``--cells`` NUMA cells with 4K/2M page-size children, an instance on every
fourth host), through their APIs (16 client threads), on SQLite or PostgreSQL, with 2 workers
each. Then, from one client, each query of the fleet's ``QUERIES`` (``--only``) at each limit
(``--limits``) is timed on both (``--repeat`` runs, p50 in ms), with the candidate counts
(which must match) and the ratio.
It also reports seeding throughput (providers/s), the distinct hosts of a limit-50 answer under
each generation strategy, and 4 concurrent allocation writers (``--writers``: p50/p99/max, 5xx).

Seeding: upstream the only way Placement has, three requests per provider (``POST
/resource_providers``, ``PUT .../inventories``, ``PUT .../traits``); ours with the extension
``POST /resource_providers/batch``, ``--batch-hosts`` host trees (parents first) per request
(``--ours-seed rest`` seeds ours the Placement way too). The report says which way each side was
seeded, with the seeding's wall time, the services' CPU seconds (every process this script
started: workers and masters, not the database server) and the client's.

    python benchmarks/side_by_side.py --hosts 1000 --cells 2
    python benchmarks/side_by_side.py --hosts 200 --cells 2 --backend postgresql --writers 400

Ports: ``--port`` (ours) and ``--port + 1`` (upstream); default 19310/19311. Figures are noisy on
a shared machine: run it when the machine is quiet, or read them as ranges.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from candidates import (  # benchmarks/candidates.py
    BATCH_HOSTS,
    CELL_INVENTORY,
    HEADERS,
    PAGE_SIZES,
    QUERIES,
    allocate,
    create,
    host_chunks,
    seed_hosts_batch,
    wait_up,
)
from proc_cpu import cpu_seconds, descendants  # benchmarks/proc_cpu.py
from upstream import upstream_placement  # benchmarks/upstream.py

# Upstream knows no MEMORY_PAGE_SIZE_* standard traits (ours are an extension): both services
# get only the CUSTOM_MEMORY_PAGE_SIZE_* traits, and the queries ask for those.
UPSTREAM_SAFE = {
    "MEMORY_PAGE_SIZE_SMALL": "CUSTOM_MEMORY_PAGE_SIZE_4",
    "MEMORY_PAGE_SIZE_LARGE": "CUSTOM_MEMORY_PAGE_SIZE_2048",
}


FLEET: dict[str, Any] = {"kind": "mixed", "seed": 21}  # --fleet and --seed, set by main


def query(name: str) -> str:
    """The query ``name`` of the fleet in use: ``mixed_fleet.QUERIES`` (issue 21's), or
    ``candidates.QUERIES`` with the page-size traits both services know."""
    if FLEET["kind"] == "mixed":
        import mixed_fleet  # benchmarks/mixed_fleet.py (it imports this module)

        return mixed_fleet.QUERIES[name]
    text = QUERIES[name]
    for ours_only, custom in UPSTREAM_SAFE.items():
        text = text.replace(ours_only, custom)
    return text


def seed_host(client: httpx.Client, h: int, cells: int) -> dict[str, str]:
    """``candidates.seed_host_api`` with custom page-size traits only."""
    root = create(client, f"cn{h}", None, {"DISK_GB": {"total": 1000}}, [])
    found = {"root": root}
    for c in range(cells):
        cell = create(client, f"cn{h}_NUMA{c}", root, CELL_INVENTORY, ["HW_NUMA_ROOT"])
        found[f"cell{c}"] = cell
        for size, _trait, custom, mem, step in PAGE_SIZES:
            found[f"cell{c}_{size}"] = create(
                client,
                f"cn{h}_NUMA{c}_{size}",
                cell,
                {"MEMORY_MB": {"total": mem, "step_size": step}},
                [custom],
            )
    return found


PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextmanager
def postgres_database(name: str) -> Iterator[str]:
    """A fresh PostgreSQL database ``name`` (dropped afterwards); yields its plain URL."""
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


SERVER_PIDS: dict[str, int] = {}  # base URL -> pid of the ``placement-numa serve`` it runs


@contextmanager
def ours(port: int, database_url: str, workers: int = 2, **env: str) -> Iterator[str]:
    """``placement-numa serve`` on ``port`` (noauth2); yields the base URL."""
    exe = str(Path(sys.executable).with_name("placement-numa"))
    environment = dict(
        os.environ,
        PLACEMENT_NUMA_AUTH_STRATEGY="noauth2",
        PLACEMENT_NUMA_LOG_LEVEL="warning",
        **env,
    )
    # a fleet file kept from an earlier run may be behind this version's schema
    subprocess.run(
        [exe, "db", "upgrade", "--database-url", database_url],
        env=environment,
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(port), "--workers", str(workers)]
        + ["--database-url", database_url],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    SERVER_PIDS[base] = proc.pid
    try:
        wait_up(base, proc)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class RetryingClient(httpx.Client):
    """Retries a request answered 5xx (upstream on SQLite: "database is locked") or cut off by
    the server (a gunicorn worker restarted mid-seeding: connection reset), up to 10 times;
    ``retries`` counts them."""

    retries = 0

    def request(self, *args: Any, **kwargs: Any) -> httpx.Response:
        for attempt in range(10):
            try:
                response = super().request(*args, **kwargs)
            except httpx.TransportError:
                if attempt == 9:
                    raise
            else:
                if response.status_code < 500:
                    return response
            RetryingClient.retries += 1
            time.sleep(0.05)
        return response


def services_cpu_seconds() -> float:
    """User + system CPU seconds of the services this process started (masters and workers:
    every live process below it), from ``/proc``."""
    return cpu_seconds(descendants(os.getpid())[1:])


def seed(base: str, hosts: int, cells: int) -> tuple[list[dict[str, str]], float]:
    """Seed the fleet the Placement way (three requests per provider, 16 client threads);
    returns the hosts' provider uuids and providers per second."""
    found, figures = seed_measured(base, hosts, cells, "rest")
    return found, float(figures["rate"])


def seed_measured(
    base: str, hosts: int, cells: int, way: str, batch_hosts: int = BATCH_HOSTS
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Seed the fleet ``way`` ("batch": ``batch_hosts`` host trees per ``POST
    /resource_providers/batch``; "rest": three requests per provider), 16 client threads.
    Returns the hosts' provider uuids and the seeding's figures: providers/s, wall, the
    services' and the client's CPU seconds, how it was seeded."""
    if FLEET["kind"] == "mixed":
        return _seed_mixed(base, hosts, cells, way)
    providers = hosts * (1 + cells * (1 + len(PAGE_SIZES)))
    limits = httpx.Limits(max_connections=32)
    with RetryingClient(base_url=base, timeout=600, limits=limits) as c:
        for name in ("CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"):
            c.put(f"/traits/{name}", headers=HEADERS)
        cpu_services, cpu_client = services_cpu_seconds(), time.process_time()
        started = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            if way == "batch":
                chunks = pool.map(
                    lambda hs: seed_hosts_batch(c, hs, cells, custom_only=True),
                    host_chunks(hosts, batch_hosts),
                )
                found = [host for chunk in chunks for host in chunk]
            else:
                found = list(pool.map(lambda h: seed_host(c, h, cells), range(hosts)))
        wall = time.perf_counter() - started
        figures = {
            "rate": providers / wall,
            "wall": wall,
            "cpu_services": services_cpu_seconds() - cpu_services,
            "cpu_client": time.process_time() - cpu_client,
            "how": (
                f"POST /resource_providers/batch, {min(batch_hosts, hosts)} hosts"
                f" ({min(batch_hosts, hosts) * providers // hosts} providers) per request"
                if way == "batch"
                else "POST /resource_providers + PUT inventories + PUT traits per provider"
            ),
        }
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda host: allocate(c, host), found[::4]))
    return found, figures


def _seed_mixed(
    base: str, hosts: int, cells: int, way: str
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """``seed_measured`` for issue 21's mixed fleet (``benchmarks/mixed_fleet.py``, its guests
    included; ``--seed``)."""
    import mixed_fleet  # benchmarks/mixed_fleet.py (it imports this module)

    specs = mixed_fleet.host_specs(hosts, cells, int(FLEET["seed"]))
    cpu_services, cpu_client = services_cpu_seconds(), time.process_time()
    started = time.perf_counter()
    found = mixed_fleet.seed_trees(base, specs, way)
    wall = time.perf_counter() - started
    providers = len(mixed_fleet.snapshot_rows(specs)[0])
    figures = {
        "rate": providers / wall,
        "wall": wall,
        "cpu_services": services_cpu_seconds() - cpu_services,
        "cpu_client": time.process_time() - cpu_client,
        "how": "POST /resource_providers/batch, 10 hosts per request"
        if way == "batch"
        else "POST /resource_providers + PUT inventories + PUT traits per provider",
    }
    return found, figures


def timed(client: httpx.Client, url: str, repeat: int) -> tuple[float, httpx.Response]:
    """GET ``url`` once to warm up, then ``repeat`` times: ``(p50 in ms to the last byte of the
    body, last response)``; ``RuntimeError`` on a status other than 200."""
    timings = []
    response = None
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        response = client.get(url, headers=HEADERS)
        timings.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.text[:300]}")
    assert response is not None
    return statistics.median(timings[1:]), response


def distinct_hosts(body: dict[str, Any]) -> int:
    """How many compute nodes (root providers) the allocation requests of ``body`` use."""
    summaries = body["provider_summaries"]
    roots = set()
    for request in body["allocation_requests"]:
        for u in request["allocations"]:
            roots.add(summaries[u]["root_provider_uuid"])
    return len(roots)


def writers(base: str, hosts: list[dict[str, str]], count: int, threads: int = 4) -> str:
    """``count`` allocation writes (PUT /allocations, new consumers) from ``threads`` threads.

    Each thread keeps one ``httpx.Client`` (a keep-alive connection), as a service's client
    (keystoneauth's session) does. A new client per write cost ~50 ms of the client's CPU
    (``httpx.Client()`` builds an SSL context with the CA bundle even for ``http://``), five
    times what the write costs the service, on the same cores: the timed writes then waited
    on the load generator (its other threads holding the GIL) more than on the service.
    """
    latencies: list[float] = []
    failures = [0, 0]  # 5xx, other non-2xx
    lock = threading.Lock()
    local = threading.local()
    clients: list[httpx.Client] = []
    headers = dict(HEADERS, **{"openstack-api-version": "placement 1.28"})

    def one(n: int) -> None:
        host = hosts[n % len(hosts)]
        body = {
            "allocations": {
                host["root"]: {"resources": {"DISK_GB": 1}},
                host["cell1"]: {"resources": {"VCPU": 1}},
                host["cell1_4K"]: {"resources": {"MEMORY_MB": 256}},
            },
            "project_id": "bench",
            "user_id": "bench",
            "consumer_generation": None,
        }
        client: httpx.Client | None = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=base, timeout=60)
            with lock:
                clients.append(client)
        t0 = time.perf_counter()
        r = client.put(f"/allocations/{uuid.uuid4()}", json=body, headers=headers)
        elapsed = (time.perf_counter() - t0) * 1000
        with lock:
            latencies.append(elapsed)
            if r.status_code >= 500:
                failures[0] += 1
            elif r.status_code >= 300:
                failures[1] += 1

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(count)))
    finally:
        for client in clients:
            client.close()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (
        f"{count / wall:6.0f} writes/s  p50 {statistics.median(ordered):6.1f}  p99 {p99:6.1f}"
        f"  max {ordered[-1]:7.1f} ms  5xx {failures[0]}  other non-2xx {failures[1]}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument(
        "--fleet",
        choices=("mixed", "uniform"),
        default="mixed",
        help="issue 21's mixed fleet (benchmarks/mixed_fleet.py, default) or candidates.py's",
    )
    parser.add_argument("--seed", type=int, default=21, help="the mixed fleet's random seed")
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--port", type=int, default=19310)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=["two-cell", "flat"])
    parser.add_argument("--limits", nargs="*", default=["none", "1000"])
    parser.add_argument("--writers", type=int, default=0, metavar="N", help="N writes, 4 threads")
    parser.add_argument("--skip-upstream", action="store_true")
    parser.add_argument(
        "--ours-seed",
        choices=("batch", "rest"),
        default="batch",
        help="seed ours with POST /resource_providers/batch (default) or the Placement way",
    )
    parser.add_argument(
        "--batch-hosts", type=int, default=BATCH_HOSTS, help="host trees per batch request"
    )
    args = parser.parse_args()
    FLEET.update(kind=args.fleet, seed=args.seed)

    workdir = Path(tempfile.mkdtemp(prefix="pn-side-"))
    results: dict[str, dict[object, Any]] = {}
    for side in ("ours", "upstream"):
        if side == "upstream" and args.skip_upstream:
            continue
        with _database(args.backend, side, workdir) as url:
            if side == "ours":
                server = ours(args.port, url)
            else:
                upstream_url = url.replace("postgresql://", "postgresql+psycopg2://")
                server = upstream_placement(args.port + 1, database_url=upstream_url)
            with server as base:
                RetryingClient.retries = 0
                way = args.ours_seed if side == "ours" else "rest"
                hosts, seeding = seed_measured(base, args.hosts, args.cells, way, args.batch_hosts)
                results[side] = {"seed": seeding, "retries": RetryingClient.retries}
                print(
                    f"{side:9}seeded {seeding['rate']:.0f} providers/s in {seeding['wall']:.1f} s"
                    f" wall, services {seeding['cpu_services']:.1f} s CPU, client"
                    f" {seeding['cpu_client']:.1f} s CPU ({seeding['how']}; 16 threads)",
                    flush=True,
                )
                with httpx.Client(base_url=base, timeout=1200) as client:
                    for name in args.only:
                        for limit in args.limits:
                            qs = query(name) + ("" if limit == "none" else f"&limit={limit}")
                            repeat = args.repeat if limit != "none" else max(3, args.repeat // 2)
                            if side == "upstream":
                                repeat = max(2, repeat // 3)
                            p50, r = timed(client, "/allocation_candidates?" + qs, repeat)
                            n = len(r.json()["allocation_requests"])
                            results[side][(name, limit)] = (p50, n)
                            print(f"{side:9}{name:10}{limit:>6}{n:>7}{p50:10.1f} ms", flush=True)
                        r = client.get(
                            "/allocation_candidates?" + query(name) + "&limit=50",
                            headers=HEADERS,
                        )
                        results[side][(name, "hosts50")] = distinct_hosts(r.json())
                    # item 7: the unfiltered provider list (every provider of the fleet)
                    p50, r = timed(client, "/resource_providers", args.repeat)
                    results[side]["list"] = (p50, len(r.json()["resource_providers"]))
                    print(f"{side:9}GET /resource_providers {p50:10.1f} ms", flush=True)
                if args.writers:
                    results[side]["writers"] = writers(base, hosts, args.writers)
                    print(f"{side:9}writers   {results[side]['writers']}", flush=True)
            if side == "ours":
                # breadth-first: restart on the same database with the other strategy
                with (
                    ours(
                        args.port,
                        url,
                        PLACEMENT_NUMA_ALLOCATION_CANDIDATES_GENERATION_STRATEGY="breadth-first",
                    ) as base,
                    httpx.Client(base_url=base, timeout=600) as client,
                ):
                    for name in args.only:
                        r = client.get(
                            "/allocation_candidates?" + query(name) + "&limit=50",
                            headers=HEADERS,
                        )
                        results[side][(name, "hosts50-bf")] = distinct_hosts(r.json())

    providers = args.hosts * (1 + args.cells * (1 + len(PAGE_SIZES)))
    shape = f"x 2 page sizes = {providers} providers"
    if args.fleet == "mixed":
        shape = f"(mixed, --seed {args.seed}, guests on 30% of hosts)"
    print()
    print(
        f"fleet: {args.hosts} hosts x {args.cells} cells {shape};"
        f" {args.backend}; 2 workers each; seeded through the API (16 threads)"
    )
    up = results.get("upstream", {})
    mine = results["ours"]
    print("| case | ours p50 | upstream p50 | ratio | candidates (ours/upstream) |")
    print("|---|---|---|---|---|")
    for name in args.only:
        for limit in args.limits:
            p50, n = mine[(name, limit)]
            if (name, limit) in up:
                up50, upn = up[(name, limit)]
                print(
                    f"| {name}, {args.hosts}x{args.cells}, limit {limit} | {p50:.1f} ms"
                    f" | {up50:.1f} ms | {up50 / p50:.0f}x | {n}/{upn} |"
                )
            else:
                print(
                    f"| {name}, {args.hosts}x{args.cells}, limit {limit} | {p50:.1f} ms | | | {n} |"
                )
    seed_up = up.get("seed")
    ratio = f"{mine['seed']['rate'] / seed_up['rate']:.1f}x" if seed_up else ""
    cpu_ratio = ""
    if seed_up and mine["seed"]["cpu_services"]:
        less = seed_up["cpu_services"] / mine["seed"]["cpu_services"]
        cpu_ratio = f" (services' CPU per provider: {less:.1f}x)"
    print(
        f"| seeding through the API | {mine['seed']['rate']:.0f} providers/s"
        f" ({mine['seed']['how']}; {mine['retries']} retried 5xx)"
        f" | {seed_up['rate'] if seed_up else 0:.0f} providers/s"
        f" ({seed_up['how'] if seed_up else '-'}; {up.get('retries', 0)} retried 5xx)"
        f" | {ratio}{cpu_ratio} | |"
    )
    for name in args.only:
        print(
            f"| distinct hosts, {name} limit 50 | depth-first {mine[(name, 'hosts50')]},"
            f" breadth-first {mine[(name, 'hosts50-bf')]} | {up.get((name, 'hosts50'), '-')} | | |"
        )
    listed, count = mine["list"]
    up_listed = up["list"][0] if "list" in up else None
    print(
        f"| GET /resource_providers ({count} providers) | {listed:.1f} ms"
        f" | {f'{up_listed:.1f} ms' if up_listed else '-'}"
        f" | {f'{up_listed / listed:.0f}x' if up_listed else ''} | |"
    )
    if args.writers:
        print(f"| 4 writers, ours | {mine['writers']} |")
        if "writers" in up:
            print(f"| 4 writers, upstream | {up['writers']} |")
    return 0


@contextmanager
def _database(backend: str, side: str, workdir: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{workdir / (side + '.sqlite')}"
        return
    with postgres_database(f"pn_side_{side}_{os.getpid()}") as url:
        yield url


if __name__ == "__main__":
    raise SystemExit(main())
