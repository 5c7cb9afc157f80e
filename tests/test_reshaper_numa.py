"""Reshape a flat compute node carrying a dozen consumers onto 2 and 4 NUMA cells and back,
through the real app on every backend (plan API, the CLI's applier over HTTP, POST /reshaper).

The flat host::

    cn-<id>  VCPU 32 (ratio 4.0), PCPU 16, MEMORY_MB 65536 (reserved 512), DISK_GB 1000
             8 shared consumers: VCPU 2, MEMORY_MB 2048, DISK_GB 10
             4 pinned consumers: PCPU 2, MEMORY_MB 4096, DISK_GB 10

Usages (per provider class summed over the tree, and per project) must be equal before, after
the reshape and after the way back: nothing lost or doubled.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from placement_numa.cli import reshape as cli
from tests.conftest import PlacementAPI
from tests.test_reshaper_api import allocate, create_provider, set_inventories, snapshot

FLAT_INVENTORIES = {
    "VCPU": {"total": 32, "allocation_ratio": 4.0},
    "PCPU": {"total": 16},
    "MEMORY_MB": {"total": 65536, "reserved": 512},
    "DISK_GB": {"total": 1000},
}


def topology(cells: int) -> dict[str, Any]:
    return {
        "cells": [
            {
                "id": i,
                "vcpus": 32 // cells,
                "pcpus": 16 // cells,
                "memory_mb": {"4": 65536 // cells},
            }
            for i in range(cells)
        ],
        "distances": [[10 if i == j else 21 for j in range(cells)] for i in range(cells)],
    }


def flat_host(api: PlacementAPI) -> tuple[str, str, list[str]]:
    api.client.headers["x-auth-token"] = "admin"
    api.client.headers["x-roles"] = "admin,service"
    root = create_provider(api)
    name = f"cn-{root[:8]}"
    assert api.put(f"/resource_providers/{root}", json={"name": name}).status_code == 200
    set_inventories(api, root, FLAT_INVENTORIES)
    consumers = []
    for i in range(12):
        consumer = str(uuid.uuid4())
        cpu = {"VCPU": 2, "MEMORY_MB": 2048} if i < 8 else {"PCPU": 2, "MEMORY_MB": 4096}
        allocate(api, consumer, {root: {**cpu, "DISK_GB": 10}})
        consumers.append(consumer)
    return root, name, consumers


def tree_usages(api: PlacementAPI, root: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for rp in api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]:
        for rc, used in (
            api.get(f"/resource_providers/{rp['uuid']}/usages").json()["usages"].items()
        ):
            totals[rc] = totals.get(rc, 0) + used
    return {rc: v for rc, v in totals.items() if v}


def consumer_allocations(
    api: PlacementAPI, consumers: list[str]
) -> dict[str, dict[str, dict[str, int]]]:
    return {
        c: {
            rp: v["resources"]
            for rp, v in api.get(f"/allocations/{c}").json()["allocations"].items()
        }
        for c in consumers
    }


def plan(api: PlacementAPI, **body: Any) -> dict[str, Any]:
    response = api.post("/reshaper/plan", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("cells", [2, 4], ids=["2-cells", "4-cells"])
def test_reshape_to_numa_and_back(api: PlacementAPI, cells: int) -> None:
    root, name, consumers = flat_host(api)
    usages = tree_usages(api, root)
    assert usages == {"VCPU": 16, "PCPU": 8, "MEMORY_MB": 32768, "DISK_GB": 120}
    project = api.get("/usages?project_id=p").json()["usages"]
    original = consumer_allocations(api, consumers)
    original_inventories = api.get(f"/resource_providers/{root}/inventories").json()["inventories"]

    # The plan API and the CLI's planner (over HTTP) agree, and planning writes nothing.
    before = snapshot(api)
    planned = plan(api, host=name, topology=topology(cells), policy="spread")
    local = cli.make_plan(api.client, name, topology(cells), policy="spread")
    assert snapshot(api) == before
    assert local.as_dict() == planned
    assert planned["usages"]["before"] == planned["usages"]["after"]
    assert len(planned["create_providers"]) == 2 * cells

    cli.apply_plan(api.client, local)
    providers = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    assert len(providers) == 1 + 2 * cells
    cell_uuids = [
        p["uuid"] for p in providers if p["name"].endswith(tuple(f"_NUMA{i}" for i in range(cells)))
    ]
    assert len(cell_uuids) == cells
    for cell in cell_uuids:
        assert api.get(f"/resource_providers/{cell}/traits").json()["traits"] == ["HW_NUMA_ROOT"]
    assert set(api.get(f"/resource_providers/{root}/inventories").json()["inventories"]) == {
        "DISK_GB"
    }
    assert tree_usages(api, root) == usages
    assert api.get("/usages?project_id=p").json()["usages"] == project
    distances = api.get(f"/resource_providers/{root}/numa_distances").json()["distances"]
    assert distances == {
        str(i): {str(j): 10 if i == j else 21 for j in range(cells)} for i in range(cells)
    }
    moved = consumer_allocations(api, consumers)
    for c in consumers:
        assert moved[c][root] == {"DISK_GB": 10}
        assert api.get(f"/allocations/{c}").json()["consumer_generation"] == 2
    # Spread: every cell carries some of the shared consumers.
    for cell in cell_uuids:
        assert api.get(f"/resource_providers/{cell}/usages").json()["usages"].get("VCPU", 0) > 0

    # Re-planning the NUMA host onto NUMA is refused; the way back restores the flat host.
    refused = api.post("/reshaper/plan", json={"host": name, "topology": topology(cells)})
    assert (
        refused.status_code == 400 and "already has NUMA" in refused.json()["errors"][0]["detail"]
    )
    back = plan(api, host=name, direction="to_flat")
    assert back["usages"]["before"] == back["usages"]["after"]
    cli.apply_plan(api.client, cli.make_plan(api.client, name, None))
    providers = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    assert [p["uuid"] for p in providers] == [root]
    assert api.get(f"/resource_providers/{root}/numa_distances").status_code == 404
    assert (
        api.get(f"/resource_providers/{root}/inventories").json()["inventories"]
        == original_inventories
    )
    assert consumer_allocations(api, consumers) == original
    assert tree_usages(api, root) == usages
    assert api.get("/usages?project_id=p").json()["usages"] == project


def test_unplaceable_consumer_is_refused_by_name(api: PlacementAPI) -> None:
    root, name, consumers = flat_host(api)
    wide = str(uuid.uuid4())
    allocate(api, wide, {root: {"PCPU": 6, "MEMORY_MB": 1024}})
    before = snapshot(api)
    response = api.post("/reshaper/plan", json={"host": name, "topology": topology(4)})
    assert response.status_code == 409, response.text
    item = response.json()["errors"][0]
    assert item["code"] == "placement_numa.reshape.unplaceable"
    assert item["consumer"] == wide and item["lacking"] == {"PCPU": 2}
    assert wide in item["detail"] and "2 more PCPU" in item["detail"]
    with pytest.raises(cli.PlanError, match=wide):
        cli.make_plan(api.client, name, topology(4))
    assert snapshot(api) == before


def test_plan_errors(api: PlacementAPI) -> None:
    root, name, _ = flat_host(api)
    assert (
        api.post("/reshaper/plan", json={"host": "nope", "topology": topology(2)}).status_code
        == 404
    )
    assert api.post("/reshaper/plan", json={"host": name}).status_code == 400
    bad = api.post("/reshaper/plan", json={"host": name, "topology": {"cells": []}})
    assert (
        bad.status_code == 400
        and "cells must be a non-empty list" in bad.json()["errors"][0]["detail"]
    )
    assert (
        api.post("/reshaper/plan", json={"host": name, "direction": "to_flat"}).status_code == 400
    )
    assert (
        api.post(
            "/reshaper/plan", json={"host": name, "topology": topology(2)}, version="1.29"
        ).status_code
        == 404
    )


def test_refused_reshape_removes_the_providers_it_created(api: PlacementAPI) -> None:
    root, name, consumers = flat_host(api)
    planned = cli.make_plan(api.client, name, topology(2))
    # A consumer moves meanwhile: its generation in the plan is stale.
    allocate(api, consumers[0], {root: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}, gen=1)
    with pytest.raises(cli.PlacementRefused, match="consumer generation conflict"):
        cli.apply_plan(api.client, planned)
    providers = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    assert [p["uuid"] for p in providers] == [root]


def test_atomic_apply_endpoint_to_numa_and_back(api: PlacementAPI) -> None:
    root, name, consumers = flat_host(api)
    usages = tree_usages(api, root)
    original = consumer_allocations(api, consumers)
    # A provider already holds the name planned for cell 1's small pages: the apply fails after
    # cell 0's providers were created inside the transaction, and leaves nothing behind.
    squatter = create_provider(api)
    assert (
        api.put(
            f"/resource_providers/{squatter}", json={"name": f"{name}_NUMA1_PAGE_4KB"}
        ).status_code
        == 200
    )
    before = snapshot(api)
    response = api.post("/reshaper/apply", json={"host": name, "topology": topology(4)})
    assert response.status_code == 409, response.text
    assert response.json()["errors"][0]["code"] == "placement.duplicate_name"
    assert snapshot(api) == before
    assert api.delete(f"/resource_providers/{squatter}").status_code == 204

    applied = api.post(
        "/reshaper/apply", json={"host": name, "topology": topology(4), "policy": "pack"}
    )
    assert applied.status_code == 200, applied.text
    providers = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    assert len(providers) == 9
    assert tree_usages(api, root) == usages
    assert len(api.get(f"/resource_providers/{root}/numa_distances").json()["distances"]) == 4
    back = api.post("/reshaper/apply", json={"host": name, "direction": "to_flat"})
    assert back.status_code == 200, back.text
    assert [
        p["uuid"]
        for p in api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    ] == [root]
    assert consumer_allocations(api, consumers) == original
    assert api.get(f"/resource_providers/{root}/numa_distances").status_code == 404


def _with_nova_devices(api: PlacementAPI) -> tuple[str, str, dict[str, str], str]:
    """A flat host plus two device providers Nova made under it (``<host>_<address>``) and a
    consumer holding CPUs, memory and one VF of the first."""
    root, name, _ = flat_host(api)
    devices = {}
    for address in ("0000:81:00.0", "0000:d8:00.0"):
        rp = create_provider(api, root)
        assert (
            api.put(
                f"/resource_providers/{rp}",
                json={"name": f"{name}_{address}", "parent_provider_uuid": root},
            ).status_code
            == 200
        )
        assert api.put("/resource_classes/CUSTOM_PCI_8086_1572").status_code in (201, 204)
        set_inventories(api, rp, {"CUSTOM_PCI_8086_1572": {"total": 8}})
        devices[address] = rp
    guest = str(uuid.uuid4())
    allocate(
        api,
        guest,
        {
            root: {"PCPU": 2, "MEMORY_MB": 2048},
            devices["0000:81:00.0"]: {"CUSTOM_PCI_8086_1572": 1},
        },
    )
    return root, name, devices, guest


def _parents(api: PlacementAPI, root: str) -> dict[str, str | None]:
    listed = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    return {p["name"]: p["parent_provider_uuid"] for p in listed}


@pytest.mark.parametrize("applier", ["endpoint", "cli"])
def test_device_providers_move_onto_their_cells_and_back(api: PlacementAPI, applier: str) -> None:
    root, name, devices, guest = _with_nova_devices(api)
    shape = topology(2)
    shape["cells"][1]["devices"] = ["0000:81:00.0"]  # the other stays under the compute node
    planned = plan(api, host=name, topology=shape)
    cell1 = next(p["uuid"] for p in planned["create_providers"] if p["name"] == f"{name}_NUMA1")
    assert planned["reparent_providers"] == [
        {
            "uuid": devices["0000:81:00.0"],
            "name": f"{name}_0000:81:00.0",
            "parent_provider_uuid": cell1,
        }
    ]
    assert f"  move device provider {name}_0000:81:00.0 under {name}_NUMA1" in planned["summary"]
    if applier == "endpoint":
        applied = api.post("/reshaper/apply", json={"host": name, "topology": shape})
        assert applied.status_code == 200, applied.text
    else:
        cli.apply_plan(api.client, cli.make_plan(api.client, name, shape))
    parents = _parents(api, root)
    assert parents[f"{name}_0000:81:00.0"] == cell1
    assert parents[f"{name}_0000:d8:00.0"] == root
    held = api.get(f"/allocations/{guest}").json()["allocations"]
    assert held[devices["0000:81:00.0"]]["resources"] == {"CUSTOM_PCI_8086_1572": 1}
    # back to flat: the device goes back under the compute node, the cells go
    back = api.post("/reshaper/apply", json={"host": name, "direction": "to_flat"})
    assert back.status_code == 200, back.text
    parents = _parents(api, root)
    assert parents[f"{name}_0000:81:00.0"] == root and f"{name}_NUMA1" not in parents
    held = api.get(f"/allocations/{guest}").json()["allocations"]
    assert held[devices["0000:81:00.0"]]["resources"] == {"CUSTOM_PCI_8086_1572": 1}
