"""The engine at scale, in process: 100,000 compute nodes x 2 cells x 2 page sizes.

Fleet (SQL-seeded into SQLite, like ``candidates.py --seed sql``, but mixed): every host has a
root with ``DISK_GB``, two NUMA cells (``HW_NUMA_ROOT``, ``VCPU`` and ``PCPU``) and per cell a 4K
and a 2M page-size child (``MEMORY_MB``, ``MEMORY_PAGE_SIZE_SMALL``/``_LARGE`` and the custom
page traits), so 7 providers per host; sizes drawn per host from a few shapes (16-64 VCPU
per cell, 64-512 GiB, 500-4000 GB disk) and about 60% of the hosts carry one to three
instances of random sizes (allocation rows, their consumers, project and user).

Measured in this process (``time.perf_counter`` wall and ``time.process_time`` CPU: the CPU
figure is what the work costs when other processes share the cores):

* start-up load of the fleet snapshot (``SqlFleetSource.snapshot()`` on a cold source, what a
  worker does at start) and the process's peak RSS after it and after the queries;
* the two-cell query (``candidates.QUERIES["two-cell"]``) with ``limit=1000``, searched and
  encoded as the GET handler does (``--repeat`` runs, p50);
* an isolate query with no result (8 single-VF groups, ``group_policy=isolate``; no host has
  SR-IOV VFs);
* the two-cell query right after one allocation write (a new consumer on a random host): the
  snapshot is patched, then searched.

    python benchmarks/scale.py --hosts 100000 --db /tmp/scale.sqlite   # reuses the file
"""

from __future__ import annotations

import argparse
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

from candidates import PAGE_SIZES, QUERIES  # benchmarks/candidates.py

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.api.schemas.allocation_candidates import encode_candidates
from placement_numa.app import prepare_database
from placement_numa.db.database import Database
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine import SnapshotEngine
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
    cur.executemany(
        "INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id,"
        " parent_provider_id) VALUES (?, ?, ?, ?, ?, ?)",
        providers,
    )
    cur.executemany(
        "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,"
        " min_unit, max_unit, step_size, allocation_ratio) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        inventories,
    )
    cur.executemany(
        "INSERT INTO resource_provider_traits (trait_id, resource_provider_id) VALUES (?, ?)",
        traits,
    )
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


def write_one(db_path: str, rng: random.Random) -> None:
    """One allocation for a new consumer on a random cell, as ``Database.write`` would record
    it (usage rows, revision bump, change-log rows of the touched providers)."""
    database = Database(f"sqlite:///{db_path}")
    try:
        with database.write() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()
            cell_id = rng.choice(
                cur.execute(
                    "SELECT id FROM resource_providers WHERE parent_provider_id IS NOT NULL"
                    " AND name LIKE 'cn1%' AND name LIKE '%NUMA0' LIMIT 500"
                ).fetchall()
            )[0]
            vcpu = cur.execute("SELECT id FROM resource_classes WHERE name = 'VCPU'").fetchone()
            consumer = str(uuid.uuid4())
            cur.execute(
                "INSERT INTO consumers (uuid, project_id, user_id, generation) VALUES (?, 1, 1, 0)",
                (consumer,),
            )
            cur.execute(
                "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id,"
                " used) VALUES (?, ?, ?, 1)",
                (cell_id, consumer, vcpu[0]),
            )
            from placement_numa.db.repositories import changes

            changes.touch(conn, [cell_id])
    finally:
        database.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--db", default=None, help="SQLite file (seeded when missing)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    db_path = args.db or f"/tmp/pn-scale-{args.hosts}.sqlite"
    url = f"sqlite:///{db_path}"
    if not os.path.exists(db_path):
        prepare_database(Settings(database_url=url))
        started = time.perf_counter()
        seed_mixed(db_path, args.hosts)
        print(f"seeded {args.hosts} hosts in {time.perf_counter() - started:.0f} s")
    database = Database(url)
    source = SqlFleetSource(database)
    engine = SnapshotEngine(source, max_candidates=-1)
    rss_before = peak_rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    fleet = engine.snapshot()
    load_wall, load_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"fleet: {args.hosts} hosts, {len(fleet.providers)} providers (mixed sizes and usages);"
        f" start-up load {load_wall:.2f} s wall, {load_cpu:.2f} s CPU;"
        f" peak RSS {peak_rss_mib():.0f} MiB (before load {rss_before:.0f})"
    )
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
    rng = random.Random(5)
    after_wall, after_cpu = [], []
    action = run(cases["two-cell, limit 1000"])
    refresh_cpu = []
    for _ in range(args.repeat):
        write_one(db_path, rng)
        wall_ms, cpu_ms, count = timed(action, 1)
        after_wall.append(wall_ms)
        after_cpu.append(cpu_ms)
        write_one(db_path, rng)
        cpu = time.process_time()
        engine.snapshot()  # the refresh alone
        refresh_cpu.append((time.process_time() - cpu) * 1000)
    print(
        f"{'two-cell, limit 1000, after write':<34}{count:>6}"
        f"{statistics.median(after_wall):>13.1f}{statistics.median(after_cpu):>12.1f}"
    )
    print(f"{'refresh after one write':<34}{'':>6}{'':>13}{statistics.median(refresh_cpu):>12.1f}")
    print(f"peak RSS {peak_rss_mib():.0f} MiB; patches {source.patches}, loads {source.full_loads}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
