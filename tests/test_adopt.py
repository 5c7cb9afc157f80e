"""Take over a real OpenStack Placement 16 database, serve it unchanged, hand it back (issue 19).

Upstream Placement 16 runs from its own virtualenv (``benchmarks/upstream.py``: gunicorn, one
worker) on PostgreSQL and MariaDB. The round trip, per backend:

1. upstream fills the database through its API: two NUMA hosts (root + two cell children,
   VCPU/MEMORY_MB on the cells with allocation ratios 16.0 and 1.1), a shared disk provider in
   an aggregate, a custom resource class and trait, INSTANCE and MIGRATION consumers in three
   projects; every API view at microversion 1.39 is recorded;
2. ``placement-numa db adopt`` (the CLI), then placement-numa serves: every view is the same
   (``/traits`` also lists our three extension traits, the only difference); a write through
   placement-numa (a provider, its inventory, an allocation);
3. ``placement-numa db release --yes``, upstream serves again: every view equals what
   placement-numa served after its write.

Switch-over (``test_side_by_side_with_upstream``): upstream keeps serving while the database is
adopted and placement-numa serves it too; an allocation through upstream leaves our candidates
within the staleness bound, and claims racing through placement-numa never over-commit. Claims
racing through both services can: upstream Placement 16's own retry after a generation conflict
lets one allocation over capacity (``test_claims_racing_through_both_services_never_over_commit``
documents it, xfail).

Refusals (``test_refusals_change_nothing``): an unfinished upstream online data migration, an
orphan row, an older upstream revision and an empty database are each refused in one line,
exit 1, and the database (rows and schema reflection) is as it was. ``serve`` and the WSGI entry
point refuse an upstream database until it is adopted (exit 6, naming ``db adopt``).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from benchmarks.upstream import ensure_venv, upstream_placement
from placement_numa.db.database import normalise_url
from tests.backends import TestDatabase, drop_database, reachable_database
from tests.servers import HEADERS, free_port, running, service_env
from tests.upstream_oracle import require_upstream

pytestmark = pytest.mark.slow

PORTS = range(19700, 19760)
EXTENSION_TRAITS = {"HW_NON_NUMA", "MEMORY_PAGE_SIZE_LARGE", "MEMORY_PAGE_SIZE_SMALL"}
UPSTREAM_DRIVER = {"postgresql": "postgresql+psycopg2", "mysql": "mysql+pymysql"}


def _port() -> int:
    return free_port(random.sample(list(PORTS), len(PORTS)))


def _upstream_url(db: TestDatabase) -> str:
    """The database URL as upstream's placement.conf spells it (psycopg2 / PyMySQL)."""
    url = make_url(db.url).set(drivername=UPSTREAM_DRIVER[db.backend])
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=["postgresql", "mysql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    require_upstream()
    db = reachable_database(request.param, tmp_path, "adopt")
    yield db
    drop_database(db)


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, f"{response.request.url}: {response.text}"
    return response.json() if response.content else None


def _fill(client: httpx.Client) -> dict[str, list[str]]:
    """Two NUMA hosts, a shared disk, custom names, consumers in three projects."""
    _ok(client.post("/resource_classes", json={"name": "CUSTOM_FPGA_SLOT"}))
    _ok(client.put("/traits/CUSTOM_GOLD"))
    agg = str(uuid.uuid4())
    roots, cells = [], []
    for host in range(2):
        root = _ok(client.post("/resource_providers", json={"name": f"cn{host}"}))["uuid"]
        roots.append(root)
        gen = _ok(client.get(f"/resource_providers/{root}"))["generation"]
        _ok(
            client.put(
                f"/resource_providers/{root}/inventories",
                json={
                    "resource_provider_generation": gen,
                    "inventories": {"CUSTOM_FPGA_SLOT": {"total": 2}},
                },
            )
        )
        gen = _ok(client.get(f"/resource_providers/{root}"))["generation"]
        _ok(
            client.put(
                f"/resource_providers/{root}/aggregates",
                json={"resource_provider_generation": gen, "aggregates": [agg]},
            )
        )
        for cell in range(2):
            child = _ok(
                client.post(
                    "/resource_providers",
                    json={"name": f"cn{host}_numa{cell}", "parent_provider_uuid": root},
                )
            )["uuid"]
            cells.append(child)
            _ok(
                client.put(
                    f"/resource_providers/{child}/inventories",
                    json={
                        "resource_provider_generation": 0,
                        "inventories": {
                            "VCPU": {"total": 8, "allocation_ratio": 16.0 if cell else 1.1},
                            "MEMORY_MB": {"total": 16384, "reserved": 512, "step_size": 256},
                        },
                    },
                )
            )
            _ok(
                client.put(
                    f"/resource_providers/{child}/traits",
                    json={
                        "resource_provider_generation": 1,
                        "traits": ["HW_NUMA_ROOT"] + (["CUSTOM_GOLD"] if host == 0 else []),
                    },
                )
            )
    disk = _ok(client.post("/resource_providers", json={"name": "shared-disk"}))["uuid"]
    _ok(
        client.put(
            f"/resource_providers/{disk}/inventories",
            json={"resource_provider_generation": 0, "inventories": {"DISK_GB": {"total": 1000}}},
        )
    )
    _ok(
        client.put(
            f"/resource_providers/{disk}/traits",
            json={"resource_provider_generation": 1, "traits": ["MISC_SHARES_VIA_AGGREGATE"]},
        )
    )
    _ok(
        client.put(
            f"/resource_providers/{disk}/aggregates",
            json={"resource_provider_generation": 2, "aggregates": [agg]},
        )
    )
    consumers = []
    for n in range(6):
        consumer = str(uuid.uuid4())
        consumers.append(consumer)
        cell = cells[n % len(cells)]
        _ok(
            client.put(
                f"/allocations/{consumer}",
                json={
                    "allocations": {
                        cell: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}},
                        disk: {"resources": {"DISK_GB": 10}},
                    },
                    "project_id": f"project-{n % 3}",
                    "user_id": f"user-{n % 2}",
                    "consumer_generation": None,
                    "consumer_type": "MIGRATION" if n == 5 else "INSTANCE",
                },
            )
        )
    return {"consumers": consumers, "projects": [f"project-{n}" for n in range(3)]}


def _views(client: httpx.Client, known: dict[str, list[str]]) -> dict[str, Any]:
    """Every API view at 1.39 (lists sorted: neither service promises an order)."""
    views: dict[str, Any] = {}

    def get(path: str) -> None:
        response = client.get(path)
        body = response.json() if response.content else None
        views[path] = (response.status_code, _sorted(body))

    get("/resource_providers")
    get("/resource_classes")
    get("/traits")
    for rp in sorted(
        p["uuid"] for p in client.get("/resource_providers").json()["resource_providers"]
    ):
        for tail in ("", "/inventories", "/traits", "/aggregates", "/usages", "/allocations"):
            get(f"/resource_providers/{rp}{tail}")
        get(f"/resource_providers?in_tree={rp}")
    for consumer in known["consumers"]:
        get(f"/allocations/{consumer}")
    for project in known["projects"]:
        get(f"/usages?project_id={project}")
        get(f"/usages?project_id={project}&user_id=user-0")
    get("/resource_classes/CUSTOM_FPGA_SLOT")
    get("/traits/CUSTOM_GOLD")
    return views


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_sorted(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _without_extension_traits(views: dict[str, Any]) -> dict[str, Any]:
    status, body = views["/traits"]
    return views | {"/traits": (status, {"traits": sorted(set(body["traits"]) - EXTENSION_TRAITS)})}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement_numa", *args],
        capture_output=True,
        text=True,
        env=service_env(),
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def _ours(db: TestDatabase, tmp_path: Path) -> Any:
    port = _port()
    argv = [sys.executable, "-m", "placement_numa", "serve", "--port", str(port)]
    return running(argv + ["--database-url", db.url], port, tmp_path / "ours.log")


def _upstream_errors(*upstream_views: dict[str, Any]) -> set[str]:
    """Views where upstream itself answers 5xx (listed, not compared): Placement 16 fails
    ``GET /usages?project_id=`` at 1.38+ on these databases."""
    return {p for views in upstream_views for p, (status, _) in views.items() if status >= 500}


def _differences(a: dict[str, Any], b: dict[str, Any], skip: set[str]) -> list[str]:
    """``path: one view | other view`` for each view that differs (but those in ``skip``)."""
    return [
        f"{path}: {a.get(path)} | {b.get(path)}"
        for path in sorted(set(a) | set(b))
        if path not in skip and a.get(path) != b.get(path)
    ]


def test_adopt_serve_release_round_trip(database: TestDatabase, tmp_path: Path) -> None:
    upstream_url = _upstream_url(database)
    with upstream_placement(_port(), database_url=upstream_url, workers=1) as base:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
            known = _fill(client)
            before = _views(client, known)
    assert len(before) > 60

    adopted = _cli("db", "adopt", "--database-url", upstream_url)
    assert adopted.returncode == 0, adopted.stderr
    assert "7 resource providers, 6 consumers, 18 allocations" in adopted.stdout
    # progress: every check, then each step table by table with the rows done of the total
    assert "[13/13] 0 orphan row(s) in resource_provider_aggregates" in adopted.stdout
    assert "[12/12 tables," in adopted.stdout and "[3/4] keys and indexes" in adopted.stdout
    again = _cli("db", "adopt", "--database-url", upstream_url)
    assert again.returncode == 0 and "already adopted" in again.stdout

    with _ours(database, tmp_path) as ours, ours.client() as client:
        served = _views(client, known)
        assert set(served["/traits"][1]["traits"]) - set(before["/traits"][1]["traits"]) == (
            EXTENSION_TRAITS
        )
        skip = _upstream_errors(before)
        assert {p.split("?")[0] for p in skip} <= {"/usages"}, skip
        assert _differences(before, _without_extension_traits(served), skip) == []
        # Writes through placement-numa: a provider with inventory and an allocation.
        rp = _ok(client.post("/resource_providers", json={"name": "written-by-us"}))["uuid"]
        _ok(
            client.put(
                f"/resource_providers/{rp}/inventories",
                json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}},
            )
        )
        consumer = str(uuid.uuid4())
        _ok(
            client.put(
                f"/allocations/{consumer}",
                json={
                    "allocations": {rp: {"resources": {"VCPU": 3}}},
                    "project_id": "project-1",
                    "user_id": "user-0",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                },
            )
        )
        known["consumers"].append(consumer)
        written = _views(client, known)

    released = _cli("db", "release", "--yes", "--database-url", upstream_url)
    assert released.returncode == 0, released.stderr
    assert "released: 8 resource providers, 7 consumers, 19 allocations" in released.stdout
    with upstream_placement(_port(), database_url=upstream_url, workers=1) as base:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
            after = _views(client, known)
    skip = _upstream_errors(before, after)
    assert {p.split("?")[0] for p in skip} <= {"/usages"}, skip
    assert _differences(written, after, skip) == []


def _snapshot(url: str) -> dict[str, Any]:
    """Every row of every table and the reflected schema: equal means nothing changed."""
    engine = create_engine(normalise_url(url))
    try:
        with engine.connect() as conn:
            inspector = inspect(conn)
            found: dict[str, Any] = {}
            for table in sorted(inspector.get_table_names()):
                rows = conn.execute(text(f"SELECT * FROM {table}")).all()
                found[table] = {
                    "rows": sorted(repr(tuple(r)) for r in rows),
                    "columns": [repr(c) for c in inspector.get_columns(table)],
                    "indexes": sorted(repr(i) for i in inspector.get_indexes(table)),
                    "uniques": sorted(repr(u) for u in inspector.get_unique_constraints(table)),
                    "fks": sorted(repr(f) for f in inspector.get_foreign_keys(table)),
                    "pk": repr(inspector.get_pk_constraint(table)),
                }
            return found
    finally:
        engine.dispose()


def _sync_upstream(db: TestDatabase, tmp_path: Path) -> str:
    """``placement-manage db sync`` into ``db``; returns the upstream URL."""
    url = _upstream_url(db)
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = {url}\n")
    manage = ensure_venv() / "bin" / "placement-manage"
    done = subprocess.run(
        [str(manage), "--config-file", str(conf), "db", "sync"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return url


REFUSALS = [
    (
        "unfinished-online-migration",
        ["UPDATE resource_providers SET root_provider_id = NULL WHERE name = 'orphan-root'"],
        "without a root provider",
    ),
    (
        "orphan-inventory",
        ["DELETE FROM resource_classes WHERE name = 'CUSTOM_GONE'"],
        "orphan row(s) in inventories",
    ),
    (
        "older-upstream-revision",
        ["UPDATE alembic_version SET version_num = '422ece571366'"],
        "older revision 422ece571366",
    ),
]


def test_refusals_change_nothing(database: TestDatabase, tmp_path: Path) -> None:
    empty = _cli("db", "adopt", "--database-url", database.url)
    assert empty.returncode == 1 and "no Placement database here" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1

    url = _sync_upstream(database, tmp_path)
    engine = create_engine(normalise_url(url))
    with engine.begin() as conn:  # rows as upstream writes them
        conn.execute(
            text(
                "INSERT INTO resource_providers (uuid, name, generation) "
                "VALUES (:u, 'orphan-root', 0)"
            ),
            {"u": str(uuid.uuid4())},
        )
        conn.execute(text("UPDATE resource_providers SET root_provider_id = id"))
        conn.execute(text("INSERT INTO resource_classes (id, name) VALUES (10000, 'CUSTOM_GONE')"))
        conn.execute(
            text(
                "INSERT INTO inventories (resource_provider_id, resource_class_id, total,"
                " reserved, min_unit, max_unit, step_size, allocation_ratio)"
                " SELECT id, 10000, 4, 0, 1, 4, 1, 1.0 FROM resource_providers"
            )
        )
    healthy = _snapshot(url)
    for name, statements, message in REFUSALS:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
        broken = _snapshot(url)
        refused = _cli("db", "adopt", "--database-url", url)
        assert refused.returncode == 1, (name, refused.stdout, refused.stderr)
        assert message in refused.stderr, (name, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert _snapshot(url) == broken, name
        # put it back for the next case
        with engine.begin() as conn:
            conn.execute(text("UPDATE resource_providers SET root_provider_id = id"))
            conn.execute(text("UPDATE alembic_version SET version_num = 'a082b8bb98d0'"))
            if name == "orphan-inventory":
                conn.execute(
                    text("INSERT INTO resource_classes (id, name) VALUES (10000, 'CUSTOM_GONE')")
                )
        assert _snapshot(url) == healthy
    engine.dispose()
    # migrating an upstream database is refused in one line until it is adopted
    served = _cli("db", "upgrade", "--database-url", url)
    assert served.returncode == 6 and "db adopt" in served.stderr
    assert _snapshot(url) == healthy


def _one_line(done: subprocess.CompletedProcess[str], exit_code: int, words: str) -> None:
    assert done.returncode == exit_code, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_serving_an_upstream_database_is_refused_until_adopted(
    database: TestDatabase, tmp_path: Path
) -> None:
    """``serve`` (with or without ``--no-migrate``) and the WSGI entry point refuse to start
    on a database at upstream's head, naming ``db adopt`` (exit 6), rather than answer 500 to
    every request; nothing changes. Once adopted, a schema of ours behind head with
    ``--no-migrate`` is refused naming ``db upgrade``."""
    url = _sync_upstream(database, tmp_path)
    before = _snapshot(url)
    port = str(_port())
    for flags in (["--no-migrate"], []):
        served = _cli("serve", "--port", port, "--database-url", url, *flags)
        _one_line(served, 6, "run 'placement-numa db adopt'")
    log = tmp_path / "gunicorn.log"
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=url, PLACEMENT_NUMA_AUTO_MIGRATE="false")
    with open(log, "wb") as out:
        wsgi = subprocess.run(
            [sys.executable, "-m", "gunicorn", "-w", "1", "-b", f"127.0.0.1:{port}",
             "placement_numa.wsgi:application"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
    assert wsgi.returncode != 0
    assert "run 'placement-numa db adopt' to take it over first" in log.read_text()
    assert _snapshot(url) == before

    assert _cli("db", "adopt", "--database-url", url).returncode == 0
    engine = create_engine(normalise_url(url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0003_placement_changes'"))
    engine.dispose()
    served = _cli("serve", "--port", port, "--database-url", url, "--no-migrate")
    _one_line(served, 6, "run 'placement-numa db upgrade'")


@dataclass
class SideBySide:
    """Upstream Placement and placement-numa serving one adopted database: one provider
    ``cell`` with VCPU 8, 4 of them allocated through upstream."""

    upstream: httpx.Client
    upstream_base: str
    ours_base: str
    ours: httpx.Client
    cell: str

    def allocate(self, http: httpx.Client, vcpu: int) -> int:
        """``PUT /allocations`` of ``vcpu`` VCPU on the cell for a new consumer; the status."""
        return http.put(
            f"/allocations/{uuid.uuid4()}",
            json={
                "allocations": {self.cell: {"resources": {"VCPU": vcpu}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            },
        ).status_code

    def race(self, bases: list[str]) -> list[int]:
        """Four claims of 1 VCPU through each of ``bases`` at once (a thread each); the
        statuses. Afterwards the usage is what the successes add up to."""
        import threading

        results: list[int] = []
        lock = threading.Lock()

        def claim(http_base: str) -> None:
            with httpx.Client(base_url=http_base, headers=HEADERS, timeout=60) as http:
                for _ in range(4):
                    status = self.allocate(http, 1)
                    with lock:
                        results.append(status)

        threads = [threading.Thread(target=claim, args=(b,)) for b in bases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        used = self.ours.get(f"/resource_providers/{self.cell}/usages").json()["usages"]["VCPU"]
        assert used == 4 + results.count(204) and set(results) <= {204, 409}, (used, results)
        return results


@pytest.fixture
def side_by_side(database: TestDatabase, tmp_path: Path) -> Iterator[SideBySide]:
    """Upstream serves while the database is adopted, then placement-numa serves it too
    (staleness 1 s); upstream allocates 4 of the cell's 8 VCPU, which our candidates show
    within the staleness bound."""
    upstream_url = _upstream_url(database)
    with upstream_placement(_port(), database_url=upstream_url, workers=1) as base:
        up = httpx.Client(base_url=base, headers=HEADERS, timeout=60)
        cell = _ok(up.post("/resource_providers", json={"name": "cn-race"}))["uuid"]
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}
        _ok(up.put(f"/resource_providers/{cell}/inventories", json=inventory))
        adopted = _cli("db", "adopt", "--database-url", upstream_url)
        assert adopted.returncode == 0, adopted.stderr
        port = _port()
        argv = [sys.executable, "-m", "placement_numa", "serve", "--port", str(port)]
        env = service_env(PLACEMENT_NUMA_FOREIGN_WRITE_STALENESS="1")
        with (
            running(
                argv + ["--database-url", database.url], port, tmp_path / "ours.log", env=env
            ) as ours,
            ours.client() as client,
        ):
            both = SideBySide(up, base, ours.base_url, client, cell)
            candidates = "/allocation_candidates?resources=VCPU:5"
            assert len(client.get(candidates).json()["allocation_requests"]) == 1
            assert both.allocate(up, 4) == 204
            started = time.monotonic()
            while client.get(candidates).json()["allocation_requests"]:
                assert time.monotonic() - started < 8.0, "upstream's write not seen in time"
                time.sleep(0.1)
            yield both
        up.close()


def test_side_by_side_with_upstream(side_by_side: SideBySide) -> None:
    """Switch-over: upstream's allocation reached our candidates within the staleness bound
    (the fixture); claims racing through placement-numa while upstream's write is fresh never
    over-commit the cell."""
    results = side_by_side.race([side_by_side.ours_base] * 2)
    assert results.count(204) == 4, results


@pytest.mark.xfail(
    reason="upstream Placement 16 over-commits by one allocation after a generation conflict:"
    " replace_all retries inside the request's transaction, and the retry's 'previous usage'"
    " counts the failed attempt's own rows (its log: 'Over capacity ... but allocation of 1"
    " reduces existing overage from 9 to 9'); any concurrent writer triggers it, placement-numa"
    " or another upstream worker. Not fixable from our side.",
    strict=False,
)
def test_claims_racing_through_both_services_never_over_commit(
    side_by_side: SideBySide,
) -> None:
    both = side_by_side
    results = both.race([both.upstream_base, both.ours_base] * 2)
    assert results.count(204) <= 4, results
