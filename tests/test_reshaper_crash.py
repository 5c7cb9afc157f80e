"""A process that dies in the middle of a reshape leaves the database exactly as before.

A child process opens the write transaction (``Database.write()``), applies a whole reshape of
a dozen consumers inside it (interim inventories, allocations, final inventories), reports what
it sees inside the transaction, and is killed with SIGKILL before it can commit. The parent then
compares every row of every table with the snapshot taken before, and checks the same reshape
still goes through (no lock was left behind). Runs on every backend; PostgreSQL and MariaDB are
the point (the server must roll back a transaction whose client vanished).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from tests import backends
from tests.conftest import PlacementAPI
from tests.test_reshaper_api import allocate, create_provider, generation, set_inventories, snapshot

CHILD = r"""
import json, sys, time
from placement_numa.db.database import Database
from placement_numa.db.repositories import inventories, providers
from placement_numa.domain.allocation import ConsumerAllocation
from placement_numa.domain.inventory import InventoryFields
from placement_numa.services.reshaper import ProviderInventories, apply_reshape

url, body = sys.argv[1], json.loads(sys.argv[2])
database = Database(url)
with database.write() as conn:
    apply_reshape(
        conn,
        inventories={
            rp: ProviderInventories(
                e["resource_provider_generation"],
                {rc: InventoryFields(**f) for rc, f in e["inventories"].items()},
            )
            for rp, e in body["inventories"].items()
        },
        allocations=[
            ConsumerAllocation(c, e["project_id"], e["user_id"],
                               {rp: a["resources"] for rp, a in e["allocations"].items()},
                               e["consumer_type"], e["consumer_generation"], True)
            for c, e in body["allocations"].items()
        ],
    )
    child = providers.get_by_uuid(conn, body["child"])
    print(json.dumps(inventories.usage_by_class(conn, child.id)), flush=True)
    time.sleep(300)
"""


def test_sigkill_before_commit_leaves_no_trace(
    api: PlacementAPI, test_database: backends.TestDatabase
) -> None:
    root = create_provider(api)
    child = create_provider(api, parent=root)
    set_inventories(api, root, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 4096}})
    consumers = [str(uuid.uuid4()) for _ in range(12)]
    for c in consumers:
        allocate(api, c, {root: {"VCPU": 2, "MEMORY_MB": 128}})
    body = {
        "inventories": {
            root: {
                "resource_provider_generation": generation(api, root),
                "inventories": {"MEMORY_MB": {"total": 4096}},
            },
            child: {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 64}}},
        },
        "allocations": {
            c: {
                "allocations": {
                    root: {"resources": {"MEMORY_MB": 128}},
                    child: {"resources": {"VCPU": 2}},
                },
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 1,
                "consumer_type": "INSTANCE",
            }
            for c in consumers
        },
    }
    before = snapshot(api)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, test_database.url, json.dumps({**body, "child": child})],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else ""
        # Inside the uncommitted transaction the reshape was complete.
        assert json.loads(line) == {"VCPU": 24}
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert snapshot(api) == before
    # Nothing was left locked: the same reshape now commits.
    response = api.post("/reshaper", json=body)
    assert response.status_code == 204, response.text
    assert api.get(f"/resource_providers/{child}/usages").json()["usages"] == {"VCPU": 24}
