"""The write path on PostgreSQL: SQL statements and CPU per request, then 4 concurrent writers.

In process (``TestClient`` over the real app on a fresh PostgreSQL database), it seeds
``--hosts`` hosts of ``--cells`` NUMA cells through the API (``side_by_side.seed_host``) and
reports, per kind of request (create provider, PUT inventories, PUT traits, PUT /allocations of
a new consumer, PUT /allocations replacing a consumer's allocations):

* statements per request: SQLAlchemy ``before_cursor_execute`` events on the app's engine
  (pool pre-ping and session set-up included: they are cursor executions too);
* CPU ms per request: ``time.process_time`` of this process (the client and the app; not the
  PostgreSQL server's CPU);
* wall ms per request (p50).

Then (unless ``--no-http``) it serves a second fresh database with ``placement-numa serve`` on
``--port`` (2 workers), seeds the same fleet over HTTP from 16 threads (``side_by_side.seed``:
providers/s) and runs ``--writers`` PUT /allocations from 4 threads (``side_by_side.writers``,
one keep-alive client per thread): writes/s, p50, p99, max, and the CPU per write of the
service's processes, of the PostgreSQL backends of its database and of this client
(``proc_cpu.py``).

    python benchmarks/writes.py --hosts 20 --cells 2 --writers 400 --port 19500

Wall figures on a shared, loaded machine are noisy; statements and CPU per request are not.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections import defaultdict
from typing import Any

from candidates import HEADERS  # benchmarks/candidates.py
from fastapi.testclient import TestClient
from proc_cpu import cpu_split  # benchmarks/proc_cpu.py
from side_by_side import (
    SERVER_PIDS,
    ours,
    postgres_database,
    seed,
    seed_host,
    writers,
)  # benchmarks/side_by_side.py
from sqlalchemy import event

from placement_numa.app import create_app, prepare_database
from placement_numa.settings import Settings


class Meter:
    """Statements, CPU and wall time per request kind."""

    def __init__(self) -> None:
        self.statements = 0
        self.samples: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
        self.sql: dict[str, list[str]] = {}

    def count(self, *_args: Any) -> None:
        self.statements += 1
        if self._log is not None:
            self._log.append(str(_args[2]).split("\n")[0][:100])

    _log: list[str] | None = None

    def run(self, kind: str, action: Any) -> Any:
        log: list[str] = []
        self._log = log
        before, cpu, wall = self.statements, time.process_time(), time.perf_counter()
        result = action()
        self.samples[kind].append(
            (
                self.statements - before,
                (time.process_time() - cpu) * 1000,
                (time.perf_counter() - wall) * 1000,
            )
        )
        self.sql.setdefault(kind, log)
        self._log = None
        return result

    def report(self) -> None:
        print(f"{'request':34} {'n':>5} {'stmts/req':>9} {'CPU ms/req':>10} {'wall p50':>9}")
        for kind, rows in self.samples.items():
            n = len(rows)
            stmts = sum(r[0] for r in rows) / n
            cpu = sum(r[1] for r in rows) / n
            wall = statistics.median(r[2] for r in rows)
            print(f"{kind:34} {n:5} {stmts:9.1f} {cpu:10.2f} {wall:9.1f}")


class MeteredClient:
    """A ``TestClient`` whose requests are metered by the path's kind."""

    def __init__(self, client: TestClient, meter: Meter) -> None:
        self.client, self.meter = client, meter

    def _kind(self, method: str, url: str) -> str:
        parts = url.split("?")[0].strip("/").split("/")
        return f"{method} /{parts[0]}" + (f"/{{}}/{parts[2]}" if len(parts) > 2 else "")

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        return self.meter.run(
            self._kind(method, url), lambda: self.client.request(method, url, **kwargs)
        )

    def post(self, url: str, **kwargs: Any) -> Any:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> Any:
        return self.request("PUT", url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.request("GET", url, **kwargs)


def allocation_body(host: dict[str, str], generation: int | None, amount: int) -> dict[str, Any]:
    """``PUT /allocations`` body (1.28) on ``host``: ``amount`` GB of disk, ``amount`` VCPU and
    ``256 * amount`` MiB of 4K pages on cell 1, at consumer ``generation`` (None: new)."""
    return {
        "allocations": {
            host["root"]: {"resources": {"DISK_GB": amount}},
            host["cell1"]: {"resources": {"VCPU": amount}},
            host["cell1_4K"]: {"resources": {"MEMORY_MB": 256 * amount}},
        },
        "project_id": "bench",
        "user_id": "bench",
        "consumer_generation": generation,
    }


def in_process(url: str, hosts: int, cells: int, show_sql: bool) -> list[dict[str, str]]:
    """Seed ``hosts`` hosts in process (``TestClient``) on ``url``, replace one allocation per host,
    print the statements per request kind (and each statement with ``show_sql``); returns the
    hosts' uuids."""
    app = create_app(Settings(database_url=url, auto_migrate=False, auth_strategy="noauth2"))
    meter = Meter()
    event.listen(app.state.database.engine, "before_cursor_execute", meter.count)
    headers = dict(HEADERS, **{"openstack-api-version": "placement 1.28"})
    with TestClient(app) as raw:
        for name in ("CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"):
            raw.put(f"/traits/{name}", headers=HEADERS)
        client: Any = MeteredClient(raw, meter)
        found = [seed_host(client, h, cells) for h in range(hosts)]
        for host in found:
            consumer = str(uuid.uuid4())
            r = client.put(
                f"/allocations/{consumer}", json=allocation_body(host, None, 1), headers=headers
            )
            assert r.status_code == 204, r.text
            r = meter.run(
                "PUT /allocations (replace)",
                lambda c=consumer, h=host: raw.put(
                    f"/allocations/{c}", json=allocation_body(h, 1, 2), headers=headers
                ),
            )
            assert r.status_code == 204, r.text
    app.state.database.dispose()
    meter.report()
    if show_sql:
        for kind, log in meter.sql.items():
            print(f"\n{kind}: {len(log)} statements")
            for line in log:
                print("   ", line)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--writers", type=int, default=400, metavar="N", help="N writes, 4 threads")
    parser.add_argument("--port", type=int, default=19500)
    parser.add_argument("--no-http", action="store_true", help="in-process figures only")
    parser.add_argument("--show-sql", action="store_true", help="print one request's statements")
    args = parser.parse_args()
    with postgres_database(f"pn_writes_bench_{args.port}") as url:
        prepare_database(Settings(database_url=url))
        in_process(url, args.hosts, args.cells, args.show_sql)
    if args.no_http:
        return 0
    name = f"pn_writes_http_{args.port}"
    with postgres_database(name) as url:
        prepare_database(Settings(database_url=url))
        with ours(args.port, url) as base:
            found, rate = seed(base, args.hosts, args.cells)
            print(f"seeding over HTTP (16 threads, 2 workers): {rate:.0f} providers/s")
            before = cpu_split(SERVER_PIDS[base], name)
            result = writers(base, found, args.writers)
            after = cpu_split(SERVER_PIDS[base], name)
            service, postgres, client = (
                (b - a) * 1000 / args.writers for a, b in zip(before, after, strict=True)
            )
            print(f"4 writers over HTTP: {result}")
            print(
                f"  CPU ms per write: service {service:.1f} (2 workers), PostgreSQL {postgres:.1f}"
                f" (its backends), client {client:.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
