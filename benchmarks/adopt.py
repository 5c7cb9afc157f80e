"""How long ``db adopt`` and ``db release`` take on a large OpenStack Placement 16 database.

Builds the database as upstream leaves it (``placement-manage db sync`` from the upstream
virtualenv, ``benchmarks/upstream.py``), bulk-inserts ``--hosts`` NUMA hosts (7 providers
each: root with DISK_GB, two cells with VCPU/PCPU and HW_NUMA_ROOT, a 4K and a 2M page child
per cell with MEMORY_MB) and instances on 60% of the hosts (three allocation rows each), then
times ``adopt`` and ``release`` (``placement_numa.db.adopt``) in this process: wall time and
this process's CPU (the database server's work is in the wall time only). Between the two it
times the foreign-write watcher's reads (``db.foreign_writes``: the full ``fingerprint``
and the steady-state ``summary``) on the adopted database. ``--progress`` prints adopt's and
release's progress lines.

    python benchmarks/adopt.py --backend postgresql --hosts 10000
    python benchmarks/adopt.py --backend mysql --hosts 10000
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from upstream import ensure_venv  # benchmarks/upstream.py

from placement_numa.db import adopt
from placement_numa.db.database import normalise_url
from placement_numa.db.foreign_writes import PROVIDERS, TOTALS, fingerprint, summary
from placement_numa.db.standard_names import sync_standard_names

SERVERS = {
    "postgresql": "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/mysql",
}


def create(backend: str, name: str) -> str:
    """A fresh database ``name``; returns its upstream-style URL."""
    server = SERVERS[backend]
    engine = create_engine(normalise_url(server), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def sync(url: str) -> None:
    """``placement-manage db sync`` into ``url``."""
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "placement.conf"
        conf.write_text(f"[placement_database]\nconnection = {url}\n")
        manage = ensure_venv() / "bin" / "placement-manage"
        subprocess.run([str(manage), "--config-file", str(conf), "db", "sync"], check=True)


def fill(conn: Connection, hosts: int, seed: int = 13) -> None:
    """Bulk-insert ``hosts`` NUMA hosts and their instances (see the module docstring)."""
    rng = random.Random(seed)
    if conn.dialect.name == "mysql":  # resource_classes.id is AUTO_INCREMENT upstream: VCPU is 0
        conn.execute(text("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'"))
    sync_standard_names(conn)  # what upstream does at its first start
    rc: dict[str, int] = dict(conn.execute(text("SELECT name, id FROM resource_classes")).all())
    trait: dict[str, int] = dict(conn.execute(text("SELECT name, id FROM traits")).all())
    conn.execute(text("INSERT INTO projects (external_id) VALUES ('p')"))
    conn.execute(text("INSERT INTO users (external_id) VALUES ('u')"))
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in ("rp", "inv", "tr", "co", "al")}
    next_id = 1

    def add(name: str, parent: int | None, root: int | None) -> int:
        nonlocal next_id
        pid, next_id = next_id, next_id + 1
        rows["rp"].append(
            {"i": pid, "u": str(uuid.uuid4()), "n": name, "r": root or pid, "p": parent}
        )
        return pid

    def inv(pid: int, name: str, total: int, ratio: float = 1.0) -> None:
        rows["inv"].append({"p": pid, "c": rc[name], "t": total, "a": ratio})

    for h in range(hosts):
        root = add(f"cn{h}", None, None)
        inv(root, "DISK_GB", 2000)
        pages = []
        for c in range(2):
            cell = add(f"cn{h}_NUMA{c}", root, root)
            inv(cell, "VCPU", 32, 4.0)
            inv(cell, "PCPU", 16)
            rows["tr"].append({"t": trait["HW_NUMA_ROOT"], "p": cell})
            for size in ("4K", "2M"):
                page = add(f"cn{h}_NUMA{c}_{size}", cell, root)
                inv(page, "MEMORY_MB", 131072)
                pages.append((cell, page))
        if rng.random() < 0.6:
            consumer = str(uuid.uuid4())
            rows["co"].append({"u": consumer})
            cell, page = rng.choice(pages)
            for pid, name, used in (
                (root, "DISK_GB", 20),
                (cell, "VCPU", 2),
                (page, "MEMORY_MB", 2048),
            ):
                rows["al"].append({"p": pid, "c": consumer, "r": rc[name], "n": used})
    statements = {
        "rp": "INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id,"
        " parent_provider_id) VALUES (:i, :u, :n, 1, :r, :p)",
        "inv": "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,"
        " min_unit, max_unit, step_size, allocation_ratio) VALUES (:p, :c, :t, 0, 1, :t, 1, :a)",
        "tr": "INSERT INTO resource_provider_traits (trait_id, resource_provider_id)"
        " VALUES (:t, :p)",
        "co": "INSERT INTO consumers (uuid, project_id, user_id, generation)"
        " SELECT :u, MAX(p.id), MAX(s.id), 1 FROM projects p, users s",
        "al": "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id,"
        " used) VALUES (:p, :c, :r, :n)",
    }
    for key, sql in statements.items():
        for start in range(0, len(rows[key]), 5000):
            conn.execute(text(sql), rows[key][start : start + 5000])


def timed(label: str, run: Any) -> None:
    """Run ``run()`` and print its wall and CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    print(
        f"{label}: {time.perf_counter() - wall:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU in this process -> {result}",
        flush=True,
    )


def watcher_read(engine: Engine, repeat: int = 5) -> None:
    """Time the foreign-write watcher's reads on the adopted database, median of ``repeat``:
    the full read (``fingerprint``: every provider's generation, the name tables, the table
    totals; the baseline, and a check after a foreign write), the steady-state read
    (``summary``: the one-row provider aggregate in place of the generations; what each worker
    reads every ``foreign_write_staleness / 2`` seconds while nothing foreign happens), and
    its parts: the provider aggregate and the table totals."""
    for label, run in (
        ("watcher full read (baseline, after a foreign write)", fingerprint),
        ("watcher steady-state check", summary),
        ("  of which provider aggregate", lambda conn: conn.execute(PROVIDERS).one()),
        ("  of which table totals", lambda conn: conn.execute(TOTALS).one()),
    ):
        times = []
        with engine.connect() as conn:
            for _ in range(repeat):
                started = time.perf_counter()
                run(conn)
                times.append(time.perf_counter() - started)
                conn.rollback()
        print(f"{label}: {sorted(times)[len(times) // 2] * 1000:.0f} ms (median of {repeat})")


def main() -> int:
    """Build, adopt, release; print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=sorted(SERVERS), default="postgresql")
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--progress", action="store_true", help="print adopt's progress lines")
    args = parser.parse_args()
    name = f"pn_adopt_bench_{args.hosts}"
    url = create(args.backend, name)
    sync(url)
    engine = create_engine(normalise_url(url))
    started = time.perf_counter()
    with engine.begin() as conn:
        fill(conn, args.hosts)
    print(f"{args.backend}, {args.hosts} hosts built in {time.perf_counter() - started:.1f} s")
    log = print if args.progress else lambda _line: None
    timed("adopt", lambda: adopt.adopt(engine, log=log))
    timed("adopt again (no-op)", lambda: adopt.adopt(engine, log=log))
    watcher_read(engine)
    timed("release", lambda: adopt.release(engine, log=log))
    engine.dispose()
    if not args.keep:
        create(args.backend, name)  # emptied
        admin = create_engine(normalise_url(SERVERS[args.backend]), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
