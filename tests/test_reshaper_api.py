"""``POST /reshaper`` through the real app on every backend: success, Placement's errors, and
failures injected late in the body that must leave the database exactly as before.

The tree of most tests::

    root   VCPU 8, DISK_GB 100          consumer C: VCPU 2, DISK_GB 5 on root
    └── child  (no inventory)
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from placement_numa.db import tables
from tests.conftest import PlacementAPI


def new_uuid() -> str:
    return str(uuid.uuid4())


def create_provider(api: PlacementAPI, parent: str | None = None) -> str:
    rp = new_uuid()
    body: dict[str, Any] = {"name": f"rp-{rp}", "uuid": rp}
    if parent:
        body["parent_provider_uuid"] = parent
    response = api.post("/resource_providers", json=body)
    assert response.status_code == 200, response.text
    return rp


def generation(api: PlacementAPI, rp: str) -> int:
    response = api.get(f"/resource_providers/{rp}")
    assert response.status_code == 200, response.text
    return int(response.json()["generation"])


def set_inventories(api: PlacementAPI, rp: str, inventories: dict[str, Any]) -> None:
    response = api.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": generation(api, rp), "inventories": inventories},
    )
    assert response.status_code == 200, response.text


def allocate(
    api: PlacementAPI, consumer: str, allocations: dict[str, dict[str, int]], gen: int | None = None
) -> None:
    response = api.put(
        f"/allocations/{consumer}",
        json={
            "allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": gen,
            "consumer_type": "INSTANCE",
        },
    )
    assert response.status_code == 204, response.text


def snapshot(api: PlacementAPI) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (the revision counter included), in a stable order."""
    database = api.client.app.state.database  # type: ignore[attr-defined]
    with database.read() as conn:
        return {
            table.name: sorted(
                (tuple(row) for row in conn.execute(select(table))),
                key=lambda r: tuple(map(str, r)),
            )
            for table in tables.metadata.sorted_tables
        }


def tree(api: PlacementAPI) -> tuple[str, str, str]:
    root = create_provider(api)
    child = create_provider(api, parent=root)
    set_inventories(api, root, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    consumer = new_uuid()
    allocate(api, consumer, {root: {"VCPU": 2, "DISK_GB": 5}})
    return root, child, consumer


def move_body(
    root: str, child: str, consumer: str, root_gen: int, **overrides: Any
) -> dict[str, Any]:
    entry = {
        "allocations": {root: {"resources": {"DISK_GB": 5}}, child: {"resources": {"VCPU": 2}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": 1,
        "consumer_type": "INSTANCE",
    }
    entry.update(overrides)
    return {
        "inventories": {
            root: {
                "resource_provider_generation": root_gen,
                "inventories": {"DISK_GB": {"total": 100}},
            },
            child: {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
        },
        "allocations": {consumer: entry},
    }


def test_reshape_moves_inventory_and_allocations(api: PlacementAPI) -> None:
    root, child, consumer = tree(api)
    root_gen = generation(api, root)
    response = api.post(
        "/reshaper", json=move_body(root, child, consumer, root_gen), version="1.38"
    )
    assert response.status_code == 204, response.text
    assert response.content == b""
    # Generations move as in Placement: interim, allocations, final.
    assert generation(api, root) == root_gen + 3
    assert generation(api, child) == 3
    got = api.get(f"/allocations/{consumer}", version="1.38").json()
    assert {rp: v["resources"] for rp, v in got["allocations"].items()} == {
        root: {"DISK_GB": 5},
        child: {"VCPU": 2},
    }
    assert got["consumer_generation"] == 2 and got["consumer_type"] == "INSTANCE"
    assert set(api.get(f"/resource_providers/{root}/inventories").json()["inventories"]) == {
        "DISK_GB"
    }
    assert api.get(f"/resource_providers/{child}/usages").json()["usages"] == {"VCPU": 2}


def test_reshape_at_1_30_without_consumer_type(api: PlacementAPI) -> None:
    root, child, consumer = tree(api)
    body = move_body(root, child, consumer, generation(api, root))
    del body["allocations"][consumer]["consumer_type"]
    assert api.post("/reshaper", json=body, version="1.30").status_code == 204
    # The consumer type is kept below 1.38.
    assert api.get(f"/allocations/{consumer}", version="1.38").json()["consumer_type"] == "INSTANCE"


def error(response: Any, status: int, code: str | None = None, detail: str = "") -> None:
    assert response.status_code == status, response.text
    item = response.json()["errors"][0]
    if code is not None:
        assert item["code"] == code, item
    assert detail in item["detail"], item


def test_placement_errors(api: PlacementAPI) -> None:
    root, child, consumer = tree(api)
    gen = generation(api, root)
    before = snapshot(api)
    error(api.post("/reshaper", json={}, version="1.29"), 404)
    error(api.post("/reshaper", json={"inventories": {}, "allocations": {}}, version="1.30"), 400)
    error(
        api.post(
            "/reshaper",
            json={"inventories": {root: {"resource_provider_generation": gen, "inventories": {}}}},
            version="1.30",
        ),
        400,
    )
    missing = new_uuid()
    error(
        api.post(
            "/reshaper",
            json={
                "inventories": {missing: {"resource_provider_generation": 0, "inventories": {}}},
                "allocations": {},
            },
            version="1.30",
        ),
        400,
        "placement.resource_provider.not_found",
        f"Resource provider {missing} in inventories not found",
    )
    error(
        api.post(
            "/reshaper",
            json={
                "inventories": {root: {"resource_provider_generation": 99, "inventories": {}}},
                "allocations": {},
            },
            version="1.30",
        ),
        409,
        "placement.concurrent_update",
        f"provider {root}: actual: {gen}, given: 99",
    )
    error(
        api.post(
            "/reshaper",
            json={
                "inventories": {
                    root: {
                        "resource_provider_generation": gen,
                        "inventories": {"DISK_GB": {"total": 100}},
                    }
                },
                "allocations": {},
            },
            version="1.30",
        ),
        409,
        "placement.inventory.inuse",
        "update conflict: Inventory for 'VCPU'",
    )
    error(
        api.post(
            "/reshaper",
            json=move_body(root, child, consumer, gen, consumer_generation=7),
            version="1.38",
        ),
        409,
        "placement.concurrent_update",
        "consumer generation conflict",
    )
    body = move_body(root, child, consumer, gen)
    del body["allocations"][consumer]["consumer_type"]
    error(api.post("/reshaper", json=body, version="1.38"), 400, None, "consumer_type")
    body = move_body(root, child, consumer, gen)
    body["allocations"][consumer]["allocations"] = {missing: {"resources": {"VCPU": 1}}}
    error(
        api.post("/reshaper", json=body, version="1.38"),
        400,
        None,
        f"resource provider '{missing}' that does not exist",
    )
    error(
        api.post(
            "/reshaper",
            json={
                "inventories": {
                    root: {
                        "resource_provider_generation": gen,
                        "inventories": {"CUSTOM_NOPE": {"total": 1}},
                    }
                },
                "allocations": {},
            },
            version="1.30",
        ),
        400,
        None,
        "No such resource class CUSTOM_NOPE",
    )
    body = move_body(root, child, consumer, gen)
    body["inventories"][child]["inventories"]["VCPU"]["total"] = 1
    error(
        api.post("/reshaper", json=body, version="1.38"), 409, None, "Unable to allocate inventory"
    )
    error(
        api.post(
            "/reshaper", content=b"{}", headers={"content-type": "text/plain"}, version="1.30"
        ),
        415,
    )
    assert snapshot(api) == before


def test_late_failures_leave_no_trace(api: PlacementAPI) -> None:
    """A dozen consumers move; the failure comes last (after inventories and most allocations
    were written inside the transaction): nothing of it survives."""
    root = create_provider(api)
    child = create_provider(api, parent=root)
    set_inventories(api, root, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 4096}})
    consumers = sorted(new_uuid() for _ in range(12))
    for c in consumers:
        allocate(api, c, {root: {"VCPU": 2, "MEMORY_MB": 128}})
    gen = generation(api, root)

    def body(last_generation: int, root_inventories: dict[str, Any]) -> dict[str, Any]:
        allocations = {
            c: {
                "allocations": {
                    root: {"resources": {"MEMORY_MB": 128}},
                    child: {"resources": {"VCPU": 2}},
                },
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": last_generation if c == consumers[-1] else 1,
                "consumer_type": "INSTANCE",
            }
            for c in consumers
        }
        return {
            "inventories": {
                child: {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 64}}},
                root: {"resource_provider_generation": gen, "inventories": root_inventories},
            },
            "allocations": allocations,
        }

    before = snapshot(api)
    # The last consumer (by uuid, the order allocations are written in) has a stale generation.
    error(
        api.post("/reshaper", json=body(5, {"MEMORY_MB": {"total": 4096}})),
        409,
        "placement.concurrent_update",
    )
    assert snapshot(api) == before
    # Every allocation fits, but the final inventory of root (last in the body) drops MEMORY_MB,
    # still in use.
    error(
        api.post("/reshaper", json=body(1, {"DISK_GB": {"total": 10}})),
        409,
        "placement.inventory.inuse",
    )
    assert snapshot(api) == before
    # And the body that is right goes through.
    assert api.post("/reshaper", json=body(1, {"MEMORY_MB": {"total": 4096}})).status_code == 204
    assert api.get(f"/resource_providers/{child}/usages").json()["usages"] == {"VCPU": 24}
    assert api.get(f"/resource_providers/{root}/usages").json()["usages"] == {"MEMORY_MB": 1536}
