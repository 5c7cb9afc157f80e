"""Writes made around placement-numa (raw SQL as upstream Placement or an operator writes them)
reach our allocation candidates within ``[placement] foreign_write_staleness`` seconds, and
never let an allocation through us over-commit (issue 19, live switch-over).

A real ``placement-numa serve`` on PostgreSQL and MariaDB with a staleness of 1 s:

1. a provider with VCPU 4 is a candidate for VCPU:4;
2. another writer allocates all 4 VCPU by SQL (consumer, project and user rows, allocation,
   provider generation bumped, as upstream's ``replace_all`` does);
3. at once, before the watcher can have seen it, an allocation through us of VCPU:1 is refused
   409 (capacity is re-checked in SQL under the provider's row lock);
4. within the staleness bound (plus a fleet load) the candidate is gone;
5. the other writer raises the inventory to 8 by SQL: the candidate is back within the bound.
"""

from __future__ import annotations

import random
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.backends import TestDatabase, drop_database, reachable_database
from tests.servers import free_port, running, service_env

pytestmark = pytest.mark.slow

PORTS = range(19760, 19800)
STALENESS = 1.0
BOUND = STALENESS + 4.0  # a loaded 2-core machine: staleness plus a fleet load and a request


@pytest.fixture(params=["postgresql", "mysql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    db = reachable_database(request.param, tmp_path, "foreign")
    yield db
    drop_database(db)


def _candidates(client: httpx.Client, vcpu: int) -> int:
    response = client.get(f"/allocation_candidates?resources=VCPU:{vcpu}")
    assert response.status_code == 200, response.text
    return len(response.json()["allocation_requests"])


def _until(client: httpx.Client, vcpu: int, expected: int) -> float:
    """Seconds until every answer (several, so both workers answer) shows ``expected``."""
    started = time.monotonic()
    while time.monotonic() - started < 30:
        if all(_candidates(client, vcpu) == expected for _ in range(6)):
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"VCPU:{vcpu} never showed {expected} candidate(s)")


def test_foreign_writes_reach_candidates(database: TestDatabase, tmp_path: Path) -> None:
    port = free_port(random.sample(list(PORTS), len(PORTS)))
    argv = [sys.executable, "-m", "placement_numa", "serve", "--port", str(port)]
    argv += ["--workers", "1", "--database-url", database.url]
    env = service_env(PLACEMENT_NUMA_FOREIGN_WRITE_STALENESS=str(STALENESS))
    with running(argv, port, tmp_path / "serve.log", env=env) as service:
        with service.client() as client:
            rp = str(uuid.uuid4())
            assert client.post("/resource_providers", json={"uuid": rp, "name": "h1"}).is_success
            inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}
            assert client.put(f"/resource_providers/{rp}/inventories", json=inventory).is_success
            _until(client, 4, 1)

            engine = create_engine(database.url)
            with engine.begin() as conn:  # what upstream Placement writes for one allocation
                rp_id = conn.execute(
                    text("SELECT id FROM resource_providers WHERE uuid = :u"), {"u": rp}
                ).scalar_one()
                conn.execute(text("INSERT INTO projects (external_id) VALUES ('p-foreign')"))
                conn.execute(text("INSERT INTO users (external_id) VALUES ('u-foreign')"))
                consumer = str(uuid.uuid4())
                conn.execute(
                    text(
                        "INSERT INTO consumers (uuid, project_id, user_id, generation) SELECT"
                        " :c, p.id, u.id, 1 FROM projects p, users u"
                        " WHERE p.external_id = 'p-foreign' AND u.external_id = 'u-foreign'"
                    ),
                    {"c": consumer},
                )
                conn.execute(
                    text(
                        "INSERT INTO allocations (resource_provider_id, consumer_id,"
                        " resource_class_id, used) VALUES (:rp, :c, 0, 4)"
                    ),
                    {"rp": rp_id, "c": consumer},
                )
                conn.execute(
                    text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :i"),
                    {"i": rp_id},
                )
            # Over-commit is refused at once, whatever the snapshot says.
            refused = client.put(
                f"/allocations/{uuid.uuid4()}",
                json={
                    "allocations": {rp: {"resources": {"VCPU": 1}}},
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                },
            )
            assert refused.status_code == 409, refused.text

            seen = _until(client, 1, 0)
            assert seen <= BOUND, f"foreign allocation seen after {seen:.1f} s"

            with engine.begin() as conn:  # an operator raises the inventory by SQL
                conn.execute(
                    text("UPDATE inventories SET total = 8 WHERE resource_provider_id = :i"),
                    {"i": rp_id},
                )
                conn.execute(
                    text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :i"),
                    {"i": rp_id},
                )
            seen = _until(client, 4, 1)
            assert seen <= BOUND, f"foreign inventory change seen after {seen:.1f} s"
            engine.dispose()
