"""The engine at scale, in process: 100,000 compute nodes x 2 cells x 2 page sizes.

Fleet (SQL-seeded into SQLite, like ``candidates.py --seed sql``, but mixed): every host has a
root with ``DISK_GB``, two NUMA cells (``HW_NUMA_ROOT``, ``VCPU`` and ``PCPU``) and per cell a 4K
and a 2M page-size child (``MEMORY_MB``, ``MEMORY_PAGE_SIZE_SMALL``/``_LARGE`` and the custom
page traits), so 7 providers per host; sizes drawn per host from a few shapes (16-64 VCPU
per cell, 64-512 GiB, 500-4000 GB disk) and about 60% of the hosts carry one to three
instances of random sizes (allocation rows, their consumers, project and user).

Measured in this process, on the engine a worker builds (``create_app`` then
``engine_for_state``: ``SqlFleetSource`` under the metrics wrappers), with ``time.perf_counter``
wall and ``time.process_time`` CPU (the CPU figure is what the work costs when other processes
share the cores):

* start-up load of the fleet snapshot (what ``preload_fleet`` does at worker start: the first
  ``engine.snapshot()``) and the process's peak RSS after it and after the queries;
* the two-cell query (``candidates.QUERIES["two-cell"]``) with ``limit=1000``, searched and
  encoded as the GET handler does (``--repeat`` runs, p50);
* an isolate query with no result (8 single-VF groups, ``group_policy=isolate``; no host has
  SR-IOV VFs);
* the two-cell query right after one allocation write, against the same query without one, in
  rounds in the same run: (a) the query on an unchanged snapshot; (b) a new consumer's
  allocations on a random host (root ``DISK_GB``, cell ``VCPU``, 4K page ``MEMORY_MB``) written
  through ``services.allocations.replace`` (what ``PUT /allocations/{consumer}`` calls:
  repository checks, locks, generations, revision bump, change log), then the query (its
  ``engine.search`` refreshes the snapshot as a worker does: change log, trees re-read,
  ``FleetSnapshot.replace_trees``); (c) another write, then the refresh alone, the first search
  on the refreshed snapshot and a second one; (d) the query right after a write while the old
  snapshot is still held (a search in flight on it, as with concurrent requests: the refresh
  copies instead of patching in place). ``gc ms``: CPU in the cyclic garbage collector.

    python benchmarks/scale.py --hosts 100000 --db /tmp/scale.sqlite   # reuses the file
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import resource
import sqlite3
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from candidates import PAGE_SIZES, QUERIES, insert_fleet_rows  # benchmarks/candidates.py
from sqlalchemy import select

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.api.engine_dep import engine_for_state
from placement_numa.api.schemas.allocation_candidates import encode_candidates
from placement_numa.app import create_app, prepare_database
from placement_numa.db import tables
from placement_numa.db.database import Database
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.domain.allocation import ConsumerAllocation
from placement_numa.services import allocations
from placement_numa.settings import Settings

VCPU = (16, 24, 32, 48, 64)
PCPU = (8, 12, 16, 24)
MEMORY_4K = (65536, 131072, 262144, 524288)
MEMORY_2M = (8192, 16384, 32768)
DISK = (500, 1000, 2000, 4000)
ISOLATE = "&".join(f"resources{i}=SRIOV_NET_VF:1" for i in range(1, 9)) + "&group_policy=isolate"


def seed_mixed(db_path: str, hosts: int, seed: int = 13) -> None:
    """Bulk insert the mixed fleet (providers, inventories, traits, usages) into SQLite."""
    rng = random.Random(seed)
    conn = sqlite3.connect(db_path)
    cur = conn.cursor()
    rc = dict(cur.execute("SELECT name, id FROM resource_classes"))
    for name in ("CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"):
        cur.execute("INSERT OR IGNORE INTO traits (name) VALUES (?)", (name,))
    trait = dict(cur.execute("SELECT name, id FROM traits"))
    cur.execute("INSERT INTO projects (external_id) VALUES ('scale')")
    project = cur.lastrowid
    cur.execute("INSERT INTO users (external_id) VALUES ('scale')")
    user = cur.lastrowid
    next_id = (
        int(cur.execute("SELECT COALESCE(MAX(id), 0) FROM resource_providers").fetchone()[0]) + 1
    )
    providers: list[tuple[Any, ...]] = []
    inventories: list[tuple[Any, ...]] = []
    traits: list[tuple[int, int]] = []
    consumers: list[tuple[Any, ...]] = []
    allocations: list[tuple[Any, ...]] = []

    def add(name: str, parent: int | None, root: int | None) -> int:
        nonlocal next_id
        pid = next_id
        next_id += 1
        providers.append((pid, str(uuid.uuid4()), name, 0, root or pid, parent))
        return pid

    def inv(pid: int, name: str, total: int, step: int = 1, ratio: float = 1.0) -> None:
        inventories.append((pid, rc[name], total, 0, 1, total, step, ratio))

    for h in range(hosts):
        root = add(f"cn{h}", None, None)
        disk = rng.choice(DISK)
        inv(root, "DISK_GB", disk)
        vcpu, pcpu = rng.choice(VCPU), rng.choice(PCPU)
        mem4k, mem2m = rng.choice(MEMORY_4K), rng.choice(MEMORY_2M)
        cells = []
        for c in range(2):
            cell = add(f"cn{h}_NUMA{c}", root, root)
            inv(cell, "VCPU", vcpu, ratio=4.0)
            inv(cell, "PCPU", pcpu)
            traits.append((trait["HW_NUMA_ROOT"], cell))
            pages = []
            for (size, page_trait, custom, _, step), mem in zip(
                PAGE_SIZES, (mem4k, mem2m), strict=True
            ):
                page = add(f"cn{h}_NUMA{c}_{size}", cell, root)
                inv(page, "MEMORY_MB", mem, step)
                traits.append((trait[page_trait], page))
                traits.append((trait[custom], page))
                pages.append(page)
            cells.append((cell, pages[0]))
        if rng.random() < 0.6:
            for _ in range(rng.randint(1, 3)):
                consumer = str(uuid.uuid4())
                consumers.append((consumer, project, user, 0))
                cell, page = rng.choice(cells)
                amount = rng.choice((1, 2, 4, 8))
                allocations.append((root, consumer, rc["DISK_GB"], 10 * amount))
                allocations.append((cell, consumer, rc["VCPU"], amount))
                allocations.append((page, consumer, rc["MEMORY_MB"], 1024 * amount))
    insert_fleet_rows(cur, providers, inventories, traits)
    cur.executemany(
        "INSERT INTO consumers (uuid, project_id, user_id, generation) VALUES (?, ?, ?, ?)",
        consumers,
    )
    cur.executemany(
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)"
        " VALUES (?, ?, ?, ?)",
        allocations,
    )
    cur.execute("UPDATE placement_revision SET revision = revision + 1 WHERE id = 1")
    conn.commit()
    conn.close()


def seeded(hosts: int, db_path: str | None) -> str:
    """The SQLite URL of the mixed fleet of ``hosts`` hosts in ``db_path`` (default
    ``/tmp/pn-scale-<hosts>.sqlite``), seeded first when the file is missing (in a child
    process, so this one's memory and caches are a worker's)."""
    db_path = db_path or f"/tmp/pn-scale-{hosts}.sqlite"
    url = f"sqlite:///{db_path}"
    if not os.path.exists(db_path):
        prepare_database(Settings(database_url=url))
        started = time.perf_counter()
        seeding = multiprocessing.get_context("fork").Process(
            target=seed_mixed, args=(db_path, hosts)
        )
        seeding.start()
        seeding.join()
        if seeding.exitcode != 0:
            raise SystemExit("seeding failed")
        print(f"seeded {hosts} hosts in {time.perf_counter() - started:.0f} s")
    return url


def sql_source(engine: Any) -> SqlFleetSource:
    """The ``SqlFleetSource`` under an app's engine and its metrics wrappers."""
    source = getattr(engine, "inner", engine).source
    source = getattr(source, "inner", source)
    assert isinstance(source, SqlFleetSource)
    return source


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(action: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """p50 wall ms, p50 CPU ms, last result."""
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = action()
        cpus.append((time.process_time() - c) * 1000)
        walls.append((time.perf_counter() - w) * 1000)
    return statistics.median(walls), statistics.median(cpus), result


def write_targets(database: Database, hosts: int, rng: random.Random) -> list[dict[str, str]]:
    """Provider uuids of 200 random hosts: root, first cell and that cell's 4K page."""
    picked = rng.sample(range(hosts), min(200, hosts))
    names = {f"cn{h}": h for h in picked}
    names.update({f"cn{h}_NUMA0": h for h in picked})
    names.update({f"cn{h}_NUMA0_4K": h for h in picked})
    found: dict[int, dict[str, str]] = {}
    with database.read() as conn:
        rp = tables.resource_providers
        rows = conn.execute(select(rp.c.name, rp.c.uuid).where(rp.c.name.in_(list(names)))).all()
    for name, provider_uuid in rows:
        role = "root" if "_" not in name else ("cell" if name.endswith("NUMA0") else "page")
        found.setdefault(names[name], {})[role] = provider_uuid
    return [found[h] for h in picked if len(found.get(h, {})) == 3]


def write_one(database: Database, host: dict[str, str]) -> None:
    """One allocation write for a new consumer on ``host``, through the service the ``PUT
    /allocations/{consumer}`` handler calls (``services.allocations.replace``: repository
    checks, row locks, generations, revision bump and change-log rows in one transaction)."""
    allocations.replace(
        database=database,
        consumer_allocations=[
            ConsumerAllocation(
                consumer_uuid=str(uuid.uuid4()),
                project_id="scale",
                user_id="scale",
                resources={
                    host["root"]: {"DISK_GB": 1},
                    host["cell"]: {"VCPU": 1},
                    host["page"]: {"MEMORY_MB": 512},
                },
            )
        ],
    )


class GcClock:
    """CPU time spent in the cyclic garbage collector (``gc.callbacks``) since ``reset``."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.spent += time.process_time() - self._start

    def reset(self) -> None:
        self.spent = 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--db", default=None, help="SQLite file (seeded when missing)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    url = seeded(args.hosts, args.db)
    # the engine a worker builds (app.state: SqlFleetSource, metrics wrappers, settings)
    app = create_app(Settings(database_url=url, preload_fleet=False, auth_strategy="noauth2"))
    database: Database = app.state.database
    engine = engine_for_state(app.state)
    source = sql_source(engine)
    rss_before = peak_rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    fleet = engine.snapshot()  # what preload_fleet does at worker start
    load_wall, load_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"fleet: {args.hosts} hosts, {len(fleet.providers)} providers (mixed sizes and usages);"
        f" start-up load {load_wall:.2f} s wall, {load_cpu:.2f} s CPU;"
        f" peak RSS {peak_rss_mib():.0f} MiB (before load {rss_before:.0f})"
    )
    del fleet  # a worker holds no snapshot between requests
    version = mv.Microversion(1, 39)

    def run(qs: str) -> Callable[[], int]:
        query = parse_candidate_query(parse_qsl(qs), version)

        def action() -> int:
            result = engine.search(query)
            encode_candidates(result, query, version, nested_aware=True)
            found: int = result.stats.returned
            return found

        return action

    cases = {
        "two-cell, limit 1000": QUERIES["two-cell"] + "&limit=1000",
        "isolate, no result": ISOLATE,
    }
    print(f"{'case':<34}{'n':>6}{'p50 wall ms':>13}{'p50 CPU ms':>12}")
    for name, qs in cases.items():
        run(qs)()  # warm
        wall_ms, cpu_ms, count = timed(run(qs), args.repeat)
        print(f"{name:<34}{count:>6}{wall_ms:>13.1f}{cpu_ms:>12.1f}", flush=True)
    # Query right after a write, against the same query without one, interleaved in one run:
    # per round, (a) the query on an unchanged snapshot, (b) one allocation write through the
    # service, then the query (its engine.search refreshes the snapshot as the service does),
    # (c) another write, then the refresh alone, the first search on the patched snapshot and
    # a second one. CPU ms beside wall ms; "gc" is CPU in the cyclic collector.
    rng = random.Random(5)
    targets = write_targets(database, args.hosts, rng)
    clock = GcClock()
    action = run(cases["two-cell, limit 1000"])
    phases: dict[str, list[tuple[float, float, float]]] = {
        name: []
        for name in (
            "without a write",
            "right after a write",
            "  refresh alone",
            "  first search after refresh",
            "  second search",
            "after a write, old snapshot held",
        )
    }

    def measure(name: str, step: Callable[[], Any]) -> None:
        clock.reset()
        wall_ms, cpu_ms, _ = timed(step, 1)
        phases[name].append((wall_ms, cpu_ms, clock.spent * 1000))

    for round_ in range(args.repeat):
        measure("without a write", action)
        write_one(database, targets[(3 * round_) % len(targets)])
        measure("right after a write", action)
        write_one(database, targets[(3 * round_ + 1) % len(targets)])
        measure("  refresh alone", engine.snapshot)
        measure("  first search after refresh", action)
        measure("  second search", action)
        # (d) a search still running on the old snapshot while the next query refreshes (as
        # with concurrent requests): the refresh cannot patch it in place and copies it
        held = engine.snapshot()
        write_one(database, targets[(3 * round_ + 2) % len(targets)])
        measure("after a write, old snapshot held", action)
        del held
    print(
        f"{'query (two-cell, limit 1000)':<34}{'':>6}{'p50 wall ms':>13}{'p50 CPU ms':>12}"
        f"{'p50 gc ms':>11}"
    )
    for name, values in phases.items():
        wall_ms, cpu_ms, gc_ms = (statistics.median(v[k] for v in values) for k in range(3))
        print(f"{name:<34}{'':>6}{wall_ms:>13.1f}{cpu_ms:>12.1f}{gc_ms:>11.1f}")
    before = statistics.median(v[1] for v in phases["without a write"])
    after = statistics.median(v[1] for v in phases["right after a write"])
    print(f"after a write / without one: {after / before:.2f}x CPU")
    print(
        f"peak RSS {peak_rss_mib():.0f} MiB; patches {source.patches}"
        f" ({getattr(source, 'patches_in_place', '?')} in place), full loads {source.full_loads}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
