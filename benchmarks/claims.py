"""Schedulers racing to fill a NUMA fleet: GET + PUT (upstream Placement 16, placement-numa)
against one ``POST /allocation_candidates/claim`` (issue 14).

Fleet: ``--hosts`` compute nodes (``DISK_GB``) of two NUMA cells each (``HW_NUMA_ROOT``,
``PCPU`` ``--cell-pcpu``, ``MEMORY_MB`` ``--cell-memory-mb``; SLIT 10/21, stored with
placement-numa's ``numa_distances`` extension where the service has it). The guest is pinned
over two cells: ``PCPU:2,MEMORY_MB:1024`` on each of two distinct cells, the same query for
every mode::

    resources_C1=PCPU:2,MEMORY_MB:1024&required_C1=HW_NUMA_ROOT
    &resources_C2=PCPU:2,MEMORY_MB:1024&required_C2=HW_NUMA_ROOT&group_policy=isolate

``--schedulers`` threads place guests until the fleet refuses them:

* ``a`` upstream Placement 16 (``benchmarks/upstream.py``) and ``b`` placement-numa: Nova's
  way: ``GET /allocation_candidates?...&limit=--limit``, ``PUT /allocations/{new consumer}``
  with the first candidate; on 409 the next candidate (an alternate); when the list is used up,
  a new GET (a retry); a GET with no candidate ends the scheduler;
* ``c`` placement-numa: ``POST /allocation_candidates/claim`` with the query; a 409
  ``placement_numa.claim.no_room`` ends the scheduler. ``--claim-strategy`` sets the server's
  ``claim_strategy``: ``spread`` (default) or ``ordered`` (the baseline walk).

Reported per mode: instances placed per second, p50/p99 latency of placing one instance (all
its calls), client-visible 409s and retries (extra GETs in a/b, extra rounds reported by the
server in c), refusals while room remained (a scheduler told "no room" before another
scheduler's later-started placement succeeded: room only shrinks, so that placement proves it),
over-commits (every cell's usages against its inventories at the end), the final packing (cells
used, hosts used, guests placed of the fleet's capacity, average NUMA distance of the guests'
cells under the SLIT, KEP-3545's average over ordered pairs).

Each run starts a fresh service on a fresh PostgreSQL database (``--database sqlite`` for SQLite
files), seeds through the API with 8 threads, runs, checks, stops it (``--max-seconds`` stops
the schedulers early, for the slow modes; the row then says ``stopped_at_max_seconds``)::

    python benchmarks/claims.py --modes a --hosts 100
    python benchmarks/claims.py --modes b,c --hosts 1000

The machine's load (other jobs) makes every figure noisy: compare modes run back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from upstream import upstream_placement  # noqa: E402  (benchmarks/upstream.py)

VERSION = "1.36"
SLIT = {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _query(per_cell_pcpu: int, per_cell_mb: int) -> dict[str, str]:
    group = f"PCPU:{per_cell_pcpu},MEMORY_MB:{per_cell_mb}"
    return {
        "resources_C1": group,
        "required_C1": "HW_NUMA_ROOT",
        "resources_C2": group,
        "required_C2": "HW_NUMA_ROOT",
        "group_policy": "isolate",
    }


@dataclass
class Host:
    """One compute node: root and cell uuids (cell id -> uuid)."""

    root: str
    cells: dict[int, str]


@dataclass
class Tally:
    """What the schedulers saw (lists are appended from many threads; the GIL keeps it safe)."""

    latencies: list[float] = field(default_factory=list)
    placed: list[tuple[float, float]] = field(default_factory=list)  # (sent, received)
    refused: list[float] = field(default_factory=list)  # received
    conflicts: int = 0
    retries: int = 0
    attempts: int = 0  # mode c: candidates tried under lock, server side
    errors: list[str] = field(default_factory=list)
    deadline: float = float("inf")  # monotonic; schedulers stop starting placements after it

    def expired(self) -> bool:
        """True once ``--max-seconds`` have passed (the fleet is then not full)."""
        return time.monotonic() > self.deadline


def _client(base: str) -> httpx.Client:
    return httpx.Client(
        base_url=base,
        timeout=600,
        headers={"x-auth-token": "admin", "openstack-api-version": f"placement {VERSION}"},
    )


def _ok(r: httpx.Response, *codes: int) -> httpx.Response:
    if r.status_code not in codes:
        raise RuntimeError(f"{r.request.method} {r.request.url} -> {r.status_code}: {r.text[:300]}")
    return r


def _seed_host(client: httpx.Client, index: int, args: argparse.Namespace, numa: bool) -> Host:
    def provider(name: str, parent: str | None) -> str:
        rp = str(uuid.uuid4())
        body: dict[str, Any] = {"name": name, "uuid": rp}
        if parent:
            body["parent_provider_uuid"] = parent
        _ok(client.post("/resource_providers", json=body), 200, 201)
        return rp

    def inventory(rp: str, inventories: dict[str, Any]) -> None:
        body = {"resource_provider_generation": 0, "inventories": inventories}
        _ok(client.put(f"/resource_providers/{rp}/inventories", json=body), 200)

    root = provider(f"cn{index:05d}", None)
    inventory(root, {"DISK_GB": {"total": 1000}})
    cells = {}
    for cell in (0, 1):
        rp = provider(f"cn{index:05d}_NUMA{cell}", root)
        inventory(
            rp,
            {"PCPU": {"total": args.cell_pcpu}, "MEMORY_MB": {"total": args.cell_memory_mb}},
        )
        body = {"resource_provider_generation": 1, "traits": ["HW_NUMA_ROOT"]}
        _ok(client.put(f"/resource_providers/{rp}/traits", json=body), 200)
        cells[cell] = rp
    if numa:
        distances = {str(a): {str(b): d for b, d in row.items()} for a, row in SLIT.items()}
        _ok(
            client.put(
                f"/resource_providers/{root}/numa_distances",
                json={"generation": None, "distances": distances},
                headers={"openstack-api-version": "placement 1.39"},
            ),
            200,
        )
    return Host(root, cells)


def seed(base: str, args: argparse.Namespace, numa: bool) -> list[Host]:
    """The fleet through the API, 8 client threads; prints how long it took."""
    started = time.monotonic()
    local = threading.local()

    def one(index: int) -> Host:
        if not hasattr(local, "client"):
            local.client = _client(base)
        return _seed_host(local.client, index, args, numa)

    with ThreadPoolExecutor(8) as pool:
        hosts = list(pool.map(one, range(args.hosts)))
    print(f"  seeded {args.hosts} hosts in {time.monotonic() - started:.0f} s", flush=True)
    return hosts


def _put(client: httpx.Client, request: dict[str, Any]) -> httpx.Response:
    body = {
        "allocations": {
            rp: {"resources": a["resources"]} for rp, a in request["allocations"].items()
        },
        "project_id": "bench",
        "user_id": "bench",
        "consumer_generation": None,
    }
    return client.put(f"/allocations/{uuid.uuid4()}", json=body)


def get_put_scheduler(base: str, args: argparse.Namespace, tally: Tally) -> None:
    """Nova's loop (modes a and b): GET, PUT the first, next alternate on 409, GET again."""
    params = {**_query(args.guest_pcpu // 2, args.guest_memory_mb // 2), "limit": str(args.limit)}
    with _client(base) as client:
        while not tally.expired():
            sent = time.monotonic()
            placed = False
            gets = 0
            while not placed:
                r = client.get("/allocation_candidates", params=params)
                gets += 1
                if r.status_code != 200:
                    tally.errors.append(f"GET {r.status_code}: {r.text[:200]}")
                    return
                requests = r.json()["allocation_requests"]
                if not requests:
                    tally.refused.append(time.monotonic())
                    tally.retries += gets - 1
                    return
                for request in requests:
                    w = _put(client, request)
                    if w.status_code == 204:
                        placed = True
                        break
                    if w.status_code != 409:
                        tally.errors.append(f"PUT {w.status_code}: {w.text[:200]}")
                        return
                    tally.conflicts += 1
            received = time.monotonic()
            tally.retries += gets - 1
            tally.latencies.append(received - sent)
            tally.placed.append((sent, received))


def claim_scheduler(base: str, args: argparse.Namespace, tally: Tally) -> None:
    """Mode c: one ``POST /allocation_candidates/claim`` per guest."""
    query = _query(args.guest_pcpu // 2, args.guest_memory_mb // 2)
    with _client(base) as client:
        while not tally.expired():
            sent = time.monotonic()
            r = client.post(
                "/allocation_candidates/claim",
                json={
                    "query": query,
                    "consumer_uuid": str(uuid.uuid4()),
                    "consumer_generation": None,
                    "project_id": "bench",
                    "user_id": "bench",
                },
            )
            received = time.monotonic()
            if r.status_code == 200:
                claim = r.json()["claim"]
                tally.retries += int(claim["rounds"]) - 1
                tally.attempts += int(claim["attempts"])
                tally.latencies.append(received - sent)
                tally.placed.append((sent, received))
                continue
            code = r.json()["errors"][0].get("code") if r.status_code == 409 else None
            if code == "placement_numa.claim.no_room":
                tally.refused.append(received)
                return
            if r.status_code == 409:
                tally.conflicts += 1
                continue
            tally.errors.append(f"claim {r.status_code}: {r.text[:200]}")
            return


def run_schedulers(base: str, args: argparse.Namespace, mode: str) -> tuple[Tally, float]:
    """Run ``args.schedulers`` scheduler threads of ``mode`` ("c": claims; else GET candidates then
    PUT allocations) against ``base`` until they stop; returns their tally and the wall seconds."""
    tally = Tally()
    if args.max_seconds:
        tally.deadline = time.monotonic() + args.max_seconds
    loop = claim_scheduler if mode == "c" else get_put_scheduler
    started = time.monotonic()
    threads = [
        threading.Thread(target=loop, args=(base, args, tally)) for _ in range(args.schedulers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally, time.monotonic() - started


def check(base: str, hosts: list[Host], args: argparse.Namespace) -> dict[str, Any]:
    """Over-commits and packing from every cell's usages and inventories, and the guests'
    cells from ``GET /resource_providers/{cell}/allocations``."""
    local = threading.local()

    def read(cell: str) -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:
        if not hasattr(local, "client"):
            local.client = _client(base)
        client = local.client
        usages = _ok(client.get(f"/resource_providers/{cell}/usages"), 200).json()["usages"]
        inventories = _ok(client.get(f"/resource_providers/{cell}/inventories"), 200).json()
        allocations = _ok(client.get(f"/resource_providers/{cell}/allocations"), 200).json()
        return usages, inventories["inventories"], allocations["allocations"]

    cells = [(h, cid, rp) for h in hosts for cid, rp in h.cells.items()]
    with ThreadPoolExecutor(8) as pool:
        read_back = list(pool.map(lambda c: read(c[2]), cells))
    over, used_cells, used_hosts = 0, 0, set()
    guest_cells: dict[str, list[tuple[str, int]]] = {}
    for (host, cid, _), (usages, inventories, allocations) in zip(cells, read_back, strict=True):
        for rc, used in usages.items():
            inv = inventories[rc]
            if used > int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"]):
                over += 1
        if usages.get("PCPU"):
            used_cells += 1
            used_hosts.add(host.root)
        for consumer in allocations:
            guest_cells.setdefault(consumer, []).append((host.root, cid))
    distances = []
    for placed in guest_cells.values():
        ids = [cid for _, cid in placed]
        distances.append(statistics.fmean(SLIT[a][b] for a in ids for b in ids))
    per_host = min(  # a guest takes a share of both cells
        args.cell_pcpu // (args.guest_pcpu // 2), args.cell_memory_mb // (args.guest_memory_mb // 2)
    )
    return {
        "over_commits": over,
        "cells_used": used_cells,
        "hosts_used": len(used_hosts),
        "guests": len(guest_cells),
        "capacity": per_host * len(hosts),
        "split_guests": sum(1 for p in guest_cells.values() if len({r for r, _ in p}) > 1),
        "avg_distance": round(statistics.fmean(distances), 3) if distances else None,
    }


def report(
    mode: str, args: argparse.Namespace, tally: Tally, seconds: float, final: dict[str, Any]
) -> dict[str, Any]:
    """One mode's row, printed as a JSON line and returned: instances placed per second,
    p50/p99 latency (ms), 409 conflicts, retries, refusals while room was left, errors, and
    ``final`` (the over-commit and packing check)."""
    latencies = sorted(tally.latencies)

    def pct(q: float) -> float:
        return round(1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1)

    last_sent = max((s for s, _ in tally.placed), default=0.0)
    row = {
        "mode": mode if mode != "c" else f"c-{args.claim_strategy}",
        "hosts": args.hosts,
        "placed": len(tally.placed),
        "seconds": round(seconds, 1),
        "instances_per_s": round(len(tally.placed) / seconds, 1) if seconds else 0,
        "p50_ms": pct(0.50) if latencies else None,
        "p99_ms": pct(0.99) if latencies else None,
        "conflicts_409": tally.conflicts,
        "retries": tally.retries,
        "server_attempts": tally.attempts,
        "refused_with_room": sum(1 for t in tally.refused if t < last_sent),
        "errors": len(tally.errors),
        "stopped_at_max_seconds": tally.expired(),
        **final,
    }
    print("  " + json.dumps(row), flush=True)
    for error in tally.errors[:5]:
        print(f"  error: {error}", flush=True)
    return row


def _pg_database() -> tuple[str, str]:
    from sqlalchemy import create_engine, text

    name = f"pn_bench_claims_{uuid.uuid4().hex[:8]}"
    engine = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return name, f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def _drop_pg(name: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    engine.dispose()


@contextmanager
def database(kind: str, workdir: Path) -> Iterator[str]:
    """A fresh empty database URL (SQLAlchemy form, psycopg 3 for PostgreSQL)."""
    if kind == "sqlite":
        yield f"sqlite:///{workdir / f'{uuid.uuid4().hex[:8]}.sqlite'}"
        return
    name, url = _pg_database()
    try:
        yield url
    finally:
        _drop_pg(name)


@contextmanager
def placement_numa(port: int, url: str, workdir: Path, strategy: str) -> Iterator[str]:
    """``placement-numa serve --workers 2`` on ``port`` (noauth2, ``claim_strategy``)."""
    exe = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
    log = workdir / f"serve-{port}.log"
    env = {
        **os.environ,
        "PLACEMENT_NUMA_AUTH_STRATEGY": "noauth2",
        "PLACEMENT_NUMA_CLAIM_STRATEGY": strategy,
        "PYTHONUNBUFFERED": "1",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, "serve", "--workers", "2", "--host", "127.0.0.1", "--port", str(port)]
            + ["--database-url", url],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"placement-numa exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def service(mode: str, args: argparse.Namespace, workdir: Path) -> Iterator[str]:
    """The service of ``mode`` on ``args.port`` ("a": upstream Placement 16; else placement-numa
    with ``args.claim_strategy``) over ``args.database``; yields its base URL."""
    with database(args.database, workdir) as url:
        if mode == "a":
            upstream_url = url.replace("+psycopg:", "+psycopg2:")
            with upstream_placement(args.port, database_url=upstream_url, workers=2) as base:
                yield base
        else:
            with placement_numa(args.port, url, workdir, args.claim_strategy) as base:
                yield base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="a,b,c", help="comma-separated: a, b, c")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--schedulers", type=int, default=16)
    parser.add_argument("--cell-pcpu", type=int, default=4)
    parser.add_argument("--cell-memory-mb", type=int, default=4096)
    parser.add_argument("--guest-pcpu", type=int, default=4, help="split evenly over 2 cells")
    parser.add_argument("--guest-memory-mb", type=int, default=2048)
    parser.add_argument("--limit", type=int, default=100, help="GET limit in modes a and b")
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument(
        "--max-seconds", type=float, default=0, help="stop placing after this long (0: until full)"
    )
    parser.add_argument(
        "--claim-strategy", choices=("spread", "ordered"), default="spread", help="mode c's walk"
    )
    parser.add_argument("--port", type=int, default=19480)
    parser.add_argument("--json", type=Path, help="append each result row to this file")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="pn-bench-claims-"))
    try:
        for mode in args.modes.split(","):
            print(f"mode {mode}: {args.hosts} hosts, {args.schedulers} schedulers", flush=True)
            with service(mode, args, workdir) as base:
                hosts = seed(base, args, numa=mode != "a")
                tally, seconds = run_schedulers(base, args, mode)
                row = report(mode, args, tally, seconds, check(base, hosts, args))
            if args.json:
                with args.json.open("a") as out:
                    out.write(json.dumps(row) + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
