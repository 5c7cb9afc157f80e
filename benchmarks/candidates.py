"""Benchmark GET /allocation_candidates end to end over HTTP on a NUMA fleet.

Fleet (issue 3): ``--hosts`` compute nodes, each a root with ``DISK_GB``; ``--cells`` NUMA cells
per host with ``HW_NUMA_ROOT``, ``VCPU`` and ``PCPU``; per cell a 4K page-size child
(``MEMORY_MB``, ``MEMORY_PAGE_SIZE_SMALL``, ``CUSTOM_MEMORY_PAGE_SIZE_4``) and a 2M one
(``MEMORY_PAGE_SIZE_LARGE``, ``CUSTOM_MEMORY_PAGE_SIZE_2048``); an instance allocated on every
fourth host. Plus one host with 8 children of one ``SRIOV_NET_VF`` each (the wide-tree case).

Seeding: ``--seed api`` writes every provider with its inventories and traits through the HTTP
API with ``POST /resource_providers/batch`` (``BATCH_HOSTS`` host trees per request, 16 client
threads); ``--seed rest`` the Placement way, three requests per provider (``POST
/resource_providers``, ``PUT .../inventories``, ``PUT .../traits``); ``--seed sql`` bulk-inserts
providers, inventories and traits straight into the SQLite file (for the 10,000-host fleet),
then bumps the revision counter; allocations always go through the API.

Then it times each query (flat, the Nova spec one-cell and two-cell ``same_subtree`` queries, a
hugepage variant, the 8-groups ``isolate`` wide case), each with ``limit=1000`` and without,
sequentially from one client, and prints p50/p95 in ms, the number of candidates, and the peak
resident memory (VmHWM) of each service process.

    /work/venv/bin/python benchmarks/candidates.py --hosts 1000 --cells 2
    /work/venv/bin/python benchmarks/candidates.py --hosts 10000 --cells 2 --seed sql

``--keystone`` runs the service with ``auth_strategy = keystone`` against a real Keystone
(``tests/keystone_service.py``: its virtualenv ``.keystone-venv``, on ``--keystone-port``), every
request carrying a real token of the service user ``nova``, and prints how many times Keystone
was asked to validate a token while the queries were timed (the token cache makes it 0).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from proc_cpu import descendants  # benchmarks/proc_cpu.py

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
PAGE_SIZES = (
    ("4K", "MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4", 65536, 1),
    ("2M", "MEMORY_PAGE_SIZE_LARGE", "CUSTOM_MEMORY_PAGE_SIZE_2048", 16384, 2),
)
CELL_INVENTORY = {"VCPU": {"total": 32, "allocation_ratio": 4.0}, "PCPU": {"total": 16}}


def _cell_group(n: int, vcpu: int, mem: int, page_trait: str | None) -> str:
    parts = [
        f"resources_PROC{n}=VCPU:{vcpu}",
        f"resources_MEM{n}=MEMORY_MB:{mem}",
        f"required_NUMA{n}=HW_NUMA_ROOT",
        f"same_subtree=_PROC{n},_MEM{n},_NUMA{n}",
    ]
    if page_trait:
        parts.insert(2, f"required_MEM{n}={page_trait}")
    return "&".join(parts)


QUERIES = {
    "flat": "resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20",
    "one-cell": _cell_group(1, 8, 8192, "MEMORY_PAGE_SIZE_SMALL")
    + "&resources=DISK_GB:20&group_policy=none",
    "two-cell": _cell_group(1, 4, 4096, "MEMORY_PAGE_SIZE_SMALL")
    + "&"
    + _cell_group(2, 4, 4096, "MEMORY_PAGE_SIZE_SMALL")
    + "&group_policy=none",
    "hugepage": _cell_group(1, 1, 2048, "CUSTOM_MEMORY_PAGE_SIZE_2048")
    + "&"
    + _cell_group(2, 1, 2048, "CUSTOM_MEMORY_PAGE_SIZE_2048")
    + "&group_policy=none",
    "wide-isolate": "&".join(f"resources{i}=SRIOV_NET_VF:1" for i in range(1, 9))
    + "&group_policy=isolate",
}


def peak_rss_mib(pid: int) -> float:
    """Peak resident set size of process ``pid`` in MiB (``VmHWM`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def put(client: httpx.Client, path: str, body: Any, version: str = "1.39") -> httpx.Response:
    """PUT ``body`` as JSON to ``path`` at microversion ``version``; ``RuntimeError`` on 4xx/5xx."""
    headers = dict(HEADERS, **{"openstack-api-version": f"placement {version}"})
    r = client.put(path, json=body, headers=headers)
    if r.status_code >= 400:
        raise RuntimeError(f"PUT {path}: {r.status_code} {r.text}")
    return r


def create(
    client: httpx.Client,
    name: str,
    parent: str | None,
    inventories: dict[str, Any],
    traits: list[str],
) -> str:
    """Create provider ``name`` (under ``parent``, if any) with ``inventories`` and ``traits``,
    the Placement way: POST, PUT inventories, PUT traits. Returns its new uuid; ``RuntimeError``
    on a refused request."""
    u = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": u}
    if parent:
        body["parent_provider_uuid"] = parent
    r = client.post("/resource_providers", json=body, headers=HEADERS)
    if r.status_code != 200:
        raise RuntimeError(r.text)
    gen = 0
    if inventories:
        gen = put(
            client,
            f"/resource_providers/{u}/inventories",
            {"resource_provider_generation": gen, "inventories": inventories},
        ).json()["resource_provider_generation"]
    if traits:
        put(
            client,
            f"/resource_providers/{u}/traits",
            {"resource_provider_generation": gen, "traits": traits},
        )
    return u


def seed_host_api(client: httpx.Client, h: int, cells: int) -> dict[str, str]:
    """Create host ``cn{h}`` through the API, the Placement way (three requests per provider):
    the root (DISK_GB), ``cells`` NUMA cells and their page-size children. Returns the uuids keyed
    ``root``, ``cell{c}``, ``cell{c}_{size}``."""
    root = create(client, f"cn{h}", None, {"DISK_GB": {"total": 1000}}, [])
    found = {"root": root}
    for c in range(cells):
        cell = create(client, f"cn{h}_NUMA{c}", root, CELL_INVENTORY, ["HW_NUMA_ROOT"])
        found[f"cell{c}"] = cell
        for size, trait, custom, mem, step in PAGE_SIZES:
            found[f"cell{c}_{size}"] = create(
                client,
                f"cn{h}_NUMA{c}_{size}",
                cell,
                {"MEMORY_MB": {"total": mem, "step_size": step}},
                [trait, custom],
            )
    return found


BATCH_HOSTS = 10  # host trees per POST /resource_providers/batch (70 providers at 2 cells)


def host_batch(
    h: int, cells: int, *, custom_only: bool = False
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Host ``cn{h}`` as ``POST /resource_providers/batch`` entries (parents first) and its
    uuids keyed as ``seed_host_api`` returns them; ``custom_only``: page-size children get only
    the ``CUSTOM_MEMORY_PAGE_SIZE_*`` trait (what upstream Placement knows)."""
    root = str(uuid.uuid4())
    entries: list[dict[str, Any]] = [
        {"uuid": root, "name": f"cn{h}", "inventories": {"DISK_GB": {"total": 1000}}}
    ]
    found = {"root": root}
    for c in range(cells):
        cell = found[f"cell{c}"] = str(uuid.uuid4())
        entries.append(
            {
                "uuid": cell,
                "name": f"cn{h}_NUMA{c}",
                "parent_provider_uuid": root,
                "inventories": CELL_INVENTORY,
                "traits": ["HW_NUMA_ROOT"],
            }
        )
        for size, trait, custom, mem, step in PAGE_SIZES:
            page = found[f"cell{c}_{size}"] = str(uuid.uuid4())
            entries.append(
                {
                    "uuid": page,
                    "name": f"cn{h}_NUMA{c}_{size}",
                    "parent_provider_uuid": cell,
                    "inventories": {"MEMORY_MB": {"total": mem, "step_size": step}},
                    "traits": [custom] if custom_only else [trait, custom],
                }
            )
    return entries, found


def seed_hosts_batch(
    client: httpx.Client, hosts: range, cells: int, *, custom_only: bool = False
) -> list[dict[str, str]]:
    """Create the trees of ``hosts`` in ONE ``POST /resource_providers/batch``; returns each
    host's uuids (as ``seed_host_api``)."""
    entries: list[dict[str, Any]] = []
    found = []
    for h in hosts:
        tree, uuids = host_batch(h, cells, custom_only=custom_only)
        entries += tree
        found.append(uuids)
    r = client.post(
        "/resource_providers/batch", json={"resource_providers": entries}, headers=HEADERS
    )
    if r.status_code != 200:
        raise RuntimeError(f"POST /resource_providers/batch: {r.status_code} {r.text[:300]}")
    return found


def host_chunks(hosts: int, size: int = BATCH_HOSTS) -> list[range]:
    """``range(hosts)`` cut into runs of ``size`` host numbers (one batch request each)."""
    return [range(start, min(hosts, start + size)) for start in range(0, hosts, size)]


def insert_fleet_rows(
    cur: sqlite3.Cursor,
    providers: list[tuple[Any, ...]],
    inventories: list[tuple[Any, ...]],
    traits: list[tuple[int, int]],
) -> None:
    """Bulk-insert SQL-seeded fleet rows into the SQLite schema: ``providers`` as ``(id, uuid,
    name, generation, root_provider_id, parent_provider_id)``, ``inventories`` as
    ``(resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size,
    allocation_ratio)``, ``traits`` as ``(trait_id, resource_provider_id)``."""
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


def seed_sql(db_path: str, hosts: int, cells: int) -> list[dict[str, str]]:
    """Bulk insert the fleet into SQLite (same rows the API would write)."""

    conn = sqlite3.connect(db_path)
    cur = conn.cursor()
    rc = dict(cur.execute("SELECT name, id FROM resource_classes"))
    for name in ("CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"):
        cur.execute("INSERT OR IGNORE INTO traits (name) VALUES (?)", (name,))
    trait = dict(cur.execute("SELECT name, id FROM traits"))
    next_id = (cur.execute("SELECT COALESCE(MAX(id), 0) FROM resource_providers").fetchone()[0]) + 1
    providers, inventories, traits = [], [], []
    found: list[dict[str, str]] = []

    def add(name: str, parent: int | None, root: int | None) -> tuple[int, str]:
        nonlocal next_id
        pid, u = next_id, str(uuid.uuid4())
        next_id += 1
        providers.append((pid, u, name, 0, root or pid, parent))
        return pid, u

    def inv(pid: int, name: str, total: int, step: int = 1, ratio: float = 1.0) -> None:
        inventories.append((pid, rc[name], total, 0, 1, total, step, ratio))

    for h in range(hosts):
        root, root_uuid = add(f"cn{h}", None, None)
        inv(root, "DISK_GB", 1000)
        host = {"root": root_uuid}
        for c in range(cells):
            cell, cell_uuid = add(f"cn{h}_NUMA{c}", root, root)
            host[f"cell{c}"] = cell_uuid
            inv(cell, "VCPU", 32, ratio=4.0)
            inv(cell, "PCPU", 16)
            traits.append((trait["HW_NUMA_ROOT"], cell))
            for size, page_trait, custom, mem, step in PAGE_SIZES:
                page, page_uuid = add(f"cn{h}_NUMA{c}_{size}", cell, root)
                host[f"cell{c}_{size}"] = page_uuid
                inv(page, "MEMORY_MB", mem, step)
                traits.append((trait[page_trait], page))
                traits.append((trait[custom], page))
        found.append(host)
    insert_fleet_rows(cur, providers, inventories, traits)
    cur.execute("UPDATE placement_revision SET revision = revision + 1 WHERE id = 1")
    conn.commit()
    conn.close()
    return found


def allocate(client: httpx.Client, host: dict[str, str]) -> None:
    """Allocate one small instance (20 GB disk, 4 VCPU and 4096 MiB of 4K pages on cell 0) on
    ``host`` (``seed_host_api``'s uuids) for a new consumer."""
    body = {
        "allocations": {
            host["root"]: {"resources": {"DISK_GB": 20}},
            host["cell0"]: {"resources": {"VCPU": 4}},
            host["cell0_4K"]: {"resources": {"MEMORY_MB": 4096}},
        },
        "project_id": "bench",
        "user_id": "bench",
        "consumer_generation": None,
    }
    put(client, f"/allocations/{uuid.uuid4()}", body, version="1.28")


def host_tree(client: httpx.Client, h: int) -> dict[str, str]:
    """Uuids of host ``cn{h}``'s providers keyed as ``seed_host_api`` returns them."""
    r = client.get("/resource_providers", params={"name": f"cn{h}"}, headers=HEADERS)
    root = r.json()["resource_providers"][0]["uuid"]
    r = client.get("/resource_providers", params={"in_tree": root}, headers=HEADERS)
    found = {"root": root}
    for rp in r.json()["resource_providers"]:
        if rp["name"] != f"cn{h}":
            found[rp["name"].split("_", 1)[1].replace("NUMA", "cell")] = rp["uuid"]
    return found


def mixed(client: httpx.Client, base: str, hosts: int, rounds: int) -> None:
    """The scheduler's loop: query, then write one allocation, repeat. The write goes through a
    second connection (it may land on the other worker); every query follows a write."""
    import random

    rng = random.Random(7)
    targets = [host_tree(client, h) for h in rng.sample(range(hosts), min(hosts, 50))]
    qs = "/allocation_candidates?" + QUERIES["two-cell"] + "&limit=1000"
    after_write, writes, read_only = [], [], []
    with httpx.Client(base_url=base, timeout=600) as writer:
        for _ in range(max(5, rounds // 2)):
            t0 = time.perf_counter()
            r = client.get(qs, headers=HEADERS)
            read_only.append((time.perf_counter() - t0) * 1000)
        for i in range(rounds + 1):
            t0 = time.perf_counter()
            r = client.get(qs, headers=HEADERS)
            if i:
                after_write.append((time.perf_counter() - t0) * 1000)
            if r.status_code != 200:
                raise RuntimeError(r.text)
            host = targets[i % len(targets)]
            body = {
                "allocations": {
                    host["root"]: {"resources": {"DISK_GB": 1}},
                    host["cell0"]: {"resources": {"VCPU": 1}},
                    host["cell0_4K"]: {"resources": {"MEMORY_MB": 512}},
                },
                "project_id": "bench",
                "user_id": "bench",
                "consumer_generation": None,
            }
            t0 = time.perf_counter()
            put(writer, f"/allocations/{uuid.uuid4()}", body, version="1.28")
            writes.append((time.perf_counter() - t0) * 1000)

    def pct(values: list[float]) -> str:
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
        return f"p50 {statistics.median(ordered):8.1f}  p95 {p95:8.1f}"

    print(f"mixed workload, two-cell limit=1000, {rounds} rounds:")
    print(f"  query, no write before   {pct(read_only)}")
    print(f"  query right after write  {pct(after_write)}")
    print(f"  write (one allocation)   {pct(writes)}", flush=True)


def wait_up(base: str, proc: subprocess.Popen[bytes]) -> None:
    """Wait (up to ~60 s) until ``GET base/`` answers 200; ``RuntimeError`` if ``proc`` exits or
    the service never answers."""
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError("service exited")
        try:
            if httpx.get(base + "/", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("service did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", choices=("api", "rest", "sql"), default="api")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=18778)
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per query")
    parser.add_argument(
        "--db",
        help="SQLite file (default: a temporary one); an already seeded file is reused as is",
    )
    parser.add_argument("--only", nargs="*", help="query names to run")
    parser.add_argument(
        "--limits",
        nargs="*",
        default=["1000", "none"],
        help='limits to time ("none" = no limit); default: 1000 none',
    )
    parser.add_argument(
        "--mixed",
        type=int,
        default=0,
        metavar="N",
        help="then run N rounds of: two-cell query (limit=1000), write one"
        " allocation; print p50/p95 of the query right after a write",
    )
    parser.add_argument(
        "--keystone",
        action="store_true",
        help="auth_strategy keystone against a real Keystone (.keystone-venv)",
    )
    parser.add_argument("--keystone-port", type=int, default=18900)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="pn-bench-")
    db_path = args.db or os.path.join(workdir, "bench.sqlite")
    url = f"sqlite:///{db_path}"
    env = dict(os.environ, PLACEMENT_NUMA_DATABASE_URL=url, PLACEMENT_NUMA_LOG_LEVEL="warning")
    exe = str(Path(sys.executable).with_name("placement-numa"))
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    reuse = bool(args.db) and os.path.exists(db_path)
    prepare_database(Settings(database_url=url))
    started = time.perf_counter()
    hosts: list[dict[str, str]] = []
    if reuse:
        args.seed = "reused"
    elif args.seed == "sql":
        hosts = seed_sql(db_path, args.hosts, args.cells)
    base = f"http://127.0.0.1:{args.port}"
    stack = contextlib.ExitStack()
    auth = ["--auth-strategy", "noauth2"]
    keystone = None
    if args.keystone:
        keystone, auth = start_keystone_auth(stack, Path(workdir), args.keystone_port, base)
    proc = subprocess.Popen(
        [
            exe,
            "serve",
            "--port",
            str(args.port),
            "--workers",
            str(args.workers),
            "--database-url",
            url,
            "--no-migrate",
            *auth,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_up(base, proc)
        limits = httpx.Limits(max_connections=32)
        with httpx.Client(base_url=base, timeout=600, limits=limits) as client:
            for name in ("CUSTOM_MEMORY_PAGE_SIZE_4", "CUSTOM_MEMORY_PAGE_SIZE_2048"):
                client.put(f"/traits/{name}", headers=HEADERS)
            if not reuse:
                with ThreadPoolExecutor(16) as pool:
                    if args.seed == "api":
                        chunks = pool.map(
                            lambda hs: seed_hosts_batch(client, hs, args.cells),
                            host_chunks(args.hosts),
                        )
                        hosts = [host for chunk in chunks for host in chunk]
                    elif args.seed == "rest":
                        hosts = list(
                            pool.map(
                                lambda h: seed_host_api(client, h, args.cells), range(args.hosts)
                            )
                        )
                    list(pool.map(lambda host: allocate(client, host), hosts[::4]))
                wide = create(client, "wide", None, {}, [])
                for i in range(8):
                    create(client, f"wide_pf{i}", wide, {"SRIOV_NET_VF": {"total": 1}}, [])
            seeded = time.perf_counter() - started
            print(
                f"fleet: {args.hosts} hosts x {args.cells} cells x {len(PAGE_SIZES)} page sizes"
                f" = {args.hosts * (1 + args.cells * (1 + len(PAGE_SIZES))) + 9} providers,"
                f" {(args.hosts + 3) // 4} instances; seeded ({args.seed}) in {seeded:.0f} s;"
                f" {args.workers} workers, SQLite"
            )
            validations = keystone.validations() if keystone else 0
            print(f"{'query':<14}{'limit':>6}{'n':>8}{'p50 ms':>10}{'p95 ms':>10}{'first ms':>10}")
            for name, query in QUERIES.items():
                if args.only and name not in args.only:
                    continue
                for limit in [None if x == "none" else int(x) for x in args.limits]:
                    qs = query + (f"&limit={limit}" if limit else "")
                    timings = []
                    count = 0
                    runs = args.repeat if limit else max(3, args.repeat // 4)
                    for _ in range(runs + 1):
                        t0 = time.perf_counter()
                        r = client.get("/allocation_candidates?" + qs, headers=HEADERS)
                        timings.append((time.perf_counter() - t0) * 1000)
                        if r.status_code != 200:
                            raise RuntimeError(r.text)
                        count = len(r.json()["allocation_requests"])
                    first, rest = timings[0], sorted(timings[1:])
                    p50 = statistics.median(rest)
                    p95 = rest[min(len(rest) - 1, int(round(0.95 * (len(rest) - 1))))]
                    print(
                        f"{name:<14}{str(limit or '-'):>6}{count:>8}{p50:>10.1f}{p95:>10.1f}"
                        f"{first:>10.1f}",
                        flush=True,
                    )
            if keystone:
                print(
                    "Keystone token validations while the queries were timed:"
                    f" {keystone.validations() - validations}"
                    f" ({keystone.validations()} in the whole run, {args.workers} workers)"
                )
            if args.mixed:
                mixed(client, base, args.hosts, args.mixed)
        rss = {pid: peak_rss_mib(pid) for pid in descendants(proc.pid)}
        print(
            "peak RSS (MiB) per service process:",
            ", ".join(f"{pid}: {mib:.0f}" for pid, mib in rss.items()),
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        stack.close()
    return 0


def start_keystone_auth(
    stack: contextlib.ExitStack, workdir: Path, port: int, base: str
) -> tuple[Any, list[str]]:
    """Start a real Keystone (tests/keystone_service.py) for ``--keystone``; put a token of the
    service user ``nova`` in ``HEADERS``; the Keystone and the ``serve`` arguments."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.keystone_service import PASSWORD, start_keystone

    keystone = stack.enter_context(start_keystone(workdir, port, base))
    conf = workdir / "placement.conf"
    conf.write_text(
        "[keystone_authtoken]\n"
        f"www_authenticate_uri = {keystone.url}\nauth_url = {keystone.url}\n"
        "auth_type = password\nproject_domain_name = Default\nuser_domain_name = Default\n"
        f"project_name = service\nusername = placement\npassword = {PASSWORD}\n"
        "[oslo_policy]\nenforce_new_defaults = true\n"
    )
    HEADERS["x-auth-token"] = keystone.token("nova")
    return keystone, ["--auth-strategy", "keystone", "--config-file", str(conf)]


if __name__ == "__main__":
    raise SystemExit(main())
