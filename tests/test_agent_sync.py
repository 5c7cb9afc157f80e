"""The agent's sync against the real service (every backend), on sysfs trees of real shapes.

The agent's ``PlacementClient`` drives the app through the ``api`` fixture's ``TestClient`` (an
``httpx.Client``); requests are counted with httpx event hooks, so "no writes" means no non-GET
request reached the service.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from placement_numa.agent.client import PlacementClient
from placement_numa.agent.config import AgentSettings
from placement_numa.agent.desired_tree import DesiredTree, build
from placement_numa.agent.sync import SyncReport, sync
from placement_numa.agent.sysfs import discover
from tests.conftest import PlacementAPI
from tests.sysfs_fixtures import (
    HUGE_1G,
    HUGE_2M,
    amd_epyc_nps4,
    one_cell_vm,
    set_hugepages,
    two_socket_intel,
    uneven_hugepages,
)

SHAPES: dict[str, Callable[[Path], Path]] = {
    "two-socket-intel": two_socket_intel,
    "amd-epyc-nps4": amd_epyc_nps4,
    "uneven-hugepages": uneven_hugepages,
    "one-cell-vm": one_cell_vm,
}


class Recorder:
    """Counts the requests that reach the service, by method and path."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> None:
        self.requests.append((request.method, request.url.path))

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    def clear(self) -> None:
        self.requests.clear()


@pytest.fixture
def recorder(api: PlacementAPI) -> Iterator[Recorder]:
    rec = Recorder()
    hooks = api.client.event_hooks
    api.client.event_hooks = {**hooks, "request": [*hooks.get("request", []), rec]}
    yield rec
    api.client.event_hooks = hooks


@pytest.fixture
def agent(api: PlacementAPI) -> PlacementClient:
    return PlacementClient(http=api.client)


def desired(sys: Path, hostname: str = "cn1", **settings: Any) -> DesiredTree:
    host = discover(sys, small_page_kb=4)
    options: dict[str, Any] = {
        "hostname": hostname,
        "disk_gb": 500,
        "reserved_host_memory_mb": 512,
        **settings,
    }
    return build(host, AgentSettings(**options).policy_for(host))


def tree_of(api: PlacementAPI, root_name: str) -> dict[str, dict[str, Any]]:
    """``{name: {"parent": name, "inventories": {...}, "traits": [...]}}`` read over the API."""
    root = api.get(f"/resource_providers?name={root_name}").json()["resource_providers"][0]
    members = api.get(f"/resource_providers?in_tree={root['uuid']}").json()["resource_providers"]
    names = {p["uuid"]: p["name"] for p in members}
    tree = {}
    for p in members:
        tree[p["name"]] = {
            "uuid": p["uuid"],
            "parent": names.get(p["parent_provider_uuid"]),
            "inventories": api.get(f"/resource_providers/{p['uuid']}/inventories").json()[
                "inventories"
            ],
            "traits": sorted(api.get(f"/resource_providers/{p['uuid']}/traits").json()["traits"]),
        }
    return tree


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_first_run_registers_the_tree_and_second_run_writes_nothing(
    api: PlacementAPI, agent: PlacementClient, recorder: Recorder, tmp_path: Path, shape: str
) -> None:
    tree = desired(SHAPES[shape](tmp_path))
    first = sync(agent, tree)
    assert first.writes == len(recorder.writes) > 0
    assert first.notes == [] and first.kept == []

    stored = tree_of(api, "cn1")
    assert set(stored) == {p.name for p in tree.providers}
    by_path = tree.by_path()
    for provider in tree.providers:
        seen = stored[provider.name]
        parent = None if provider.parent_path is None else by_path[provider.parent_path].name
        assert seen["parent"] == parent
        assert seen["traits"] == sorted(provider.traits)
        assert seen["inventories"] == {
            rc: inv.as_dict() for rc, inv in provider.inventories.items()
        }
    if len(tree.cell_ids) > 0:
        matrix = api.get(f"/resource_providers/{stored['cn1']['uuid']}/numa_distances").json()
        assert matrix["distances"]["0"]["0"] == 10
        assert len(matrix["distances"]) == len(tree.cell_ids)

    recorder.clear()
    second = sync(agent, tree)
    assert recorder.writes == []
    assert (second.writes, second.changes) == (0, [])


def test_changing_hugepages_updates_exactly_the_affected_inventories(
    api: PlacementAPI, agent: PlacementClient, recorder: Recorder, tmp_path: Path
) -> None:
    sys = uneven_hugepages(tmp_path)
    sync(agent, desired(sys))
    stored = tree_of(api, "cn1")
    recorder.clear()

    set_hugepages(
        sys, 0, HUGE_2M, 512
    )  # node0: 1024 -> 512 pages of 2 MiB (1 GiB back to small pages)
    report = sync(agent, desired(sys))

    assert sorted(recorder.writes) == sorted(
        [
            ("PUT", f"/resource_providers/{stored['cn1_NUMA0_PAGE_2048KB']['uuid']}/inventories"),
            ("PUT", f"/resource_providers/{stored['cn1_NUMA0_PAGE_4KB']['uuid']}/inventories"),
        ]
    )
    assert len(report.changes) == 2
    after = tree_of(api, "cn1")
    assert after["cn1_NUMA0_PAGE_2048KB"]["inventories"]["MEMORY_MB"]["total"] == 1024
    small_before = stored["cn1_NUMA0_PAGE_4KB"]["inventories"]["MEMORY_MB"]["total"]
    assert after["cn1_NUMA0_PAGE_4KB"]["inventories"]["MEMORY_MB"]["total"] == small_before + 1024

    # Pages of a size appear where there were none: inventory added, tree unchanged.
    recorder.clear()
    set_hugepages(sys, 1, HUGE_1G, 2)
    sync(agent, desired(sys))
    assert sorted(recorder.writes) == sorted(
        [
            (
                "PUT",
                f"/resource_providers/{stored['cn1_NUMA1_PAGE_1048576KB']['uuid']}/inventories",
            ),
            ("PUT", f"/resource_providers/{stored['cn1_NUMA1_PAGE_4KB']['uuid']}/inventories"),
        ]
    )
    one_g = tree_of(api, "cn1")["cn1_NUMA1_PAGE_1048576KB"]["inventories"]["MEMORY_MB"]
    assert (one_g["total"], one_g["step_size"], one_g["min_unit"]) == (2048, 1024, 1024)


def test_cpu_set_change_moves_vcpu_to_pcpu(
    api: PlacementAPI, agent: PlacementClient, tmp_path: Path
) -> None:
    sys = two_socket_intel(tmp_path)
    sync(agent, desired(sys))
    report = sync(agent, desired(sys, cpu_dedicated_set="2-39,42-79", cpu_shared_set="0-1,40-41"))
    cells = tree_of(api, "cn1")
    assert cells["cn1_NUMA0"]["inventories"]["PCPU"]["total"] == 36
    assert cells["cn1_NUMA0"]["inventories"]["VCPU"]["total"] == 4
    assert "VCPU" not in cells["cn1_NUMA1"]["inventories"]
    assert [c for c in report.changes if c.startswith("inventories of")] == [
        "inventories of cn1_NUMA0: +PCPU total=36; VCPU total 40->4, max_unit 40->4",
        "inventories of cn1_NUMA1: +PCPU total=40; -VCPU",
    ]


def allocate(api: PlacementAPI, consumer: str, allocations: dict[str, dict[str, int]]) -> None:
    body = {
        "allocations": {rp: {"resources": res} for rp, res in allocations.items()},
        "project_id": "00000000-0000-0000-0000-00000000000a",
        "user_id": "00000000-0000-0000-0000-00000000000b",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    response = api.put(f"/allocations/{consumer}", json=body)
    assert response.status_code == 204, response.text


def test_vanished_providers_are_deleted_unless_allocated(
    api: PlacementAPI, agent: PlacementClient, tmp_path: Path
) -> None:
    sys = uneven_hugepages(tmp_path)
    sync(agent, desired(sys))
    stored = tree_of(api, "cn1")
    consumer = "11111111-2222-3333-4444-555555555555"
    allocate(api, consumer, {stored["cn1_NUMA0_PAGE_1048576KB"]["uuid"]: {"MEMORY_MB": 2048}})

    # The kernel stops offering 1 GiB pages on both cells (e.g. booted without hugepagesz=1G).
    for node in (0, 1):
        for name in ("nr_hugepages", "free_hugepages"):
            (
                sys / f"devices/system/node/node{node}/hugepages/hugepages-{HUGE_1G}kB/{name}"
            ).unlink()
        (sys / f"devices/system/node/node{node}/hugepages/hugepages-{HUGE_1G}kB").rmdir()
    report = sync(agent, desired(sys))

    after = tree_of(api, "cn1")
    assert "cn1_NUMA1_PAGE_1048576KB" not in after  # empty: deleted
    assert "cn1_NUMA0_PAGE_1048576KB" in after  # allocated: kept, reported
    assert report.changes[-1].startswith("deleted vanished provider cn1_NUMA1_PAGE_1048576KB")
    assert len(report.kept) == 1 and consumer in report.kept[0]
    # Its inventory is left alone while the guest runs.
    assert after["cn1_NUMA0_PAGE_1048576KB"]["inventories"]["MEMORY_MB"]["total"] == 4096

    # Once the guest is gone, the next run removes it.
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    report = sync(agent, desired(sys))
    assert "cn1_NUMA0_PAGE_1048576KB" not in tree_of(api, "cn1")
    assert report.kept == []


def test_generation_conflict_is_retried_after_rereading(
    api: PlacementAPI, agent: PlacementClient, tmp_path: Path
) -> None:
    """An operator tags a cell between the agent's read and its write: the agent's PUT gets 409
    (placement.concurrent_update), it re-reads and succeeds, keeping the operator's trait."""
    sys = one_cell_vm(tmp_path)
    sync(agent, desired(sys))
    cell_uuid = tree_of(api, "cn1")["cn1_NUMA0"]["uuid"]
    assert api.put("/traits/CUSTOM_OPERATOR_TAG").status_code == 201
    fired: list[int] = []

    def concurrent_writer(request: httpx.Request) -> None:
        if (
            request.method == "PUT"
            and request.url.path == f"/resource_providers/{cell_uuid}/inventories"
            and not fired
        ):
            fired.append(1)
            generation = api.get(f"/resource_providers/{cell_uuid}/traits").json()[
                "resource_provider_generation"
            ]
            body = {
                "resource_provider_generation": generation,
                "traits": ["HW_NUMA_ROOT", "CUSTOM_OPERATOR_TAG"],
            }
            assert api.put(f"/resource_providers/{cell_uuid}/traits", json=body).status_code == 200

    hooks = api.client.event_hooks
    api.client.event_hooks = {**hooks, "request": [*hooks.get("request", []), concurrent_writer]}
    try:
        report = sync(agent, desired(sys, cpu_allocation_ratio=8.0))
    finally:
        api.client.event_hooks = hooks
    assert fired == [1]
    cell = tree_of(api, "cn1")["cn1_NUMA0"]
    assert cell["inventories"]["VCPU"]["allocation_ratio"] == 8.0
    assert cell["traits"] == ["CUSTOM_OPERATOR_TAG", "HW_NUMA_ROOT"]
    assert isinstance(report, SyncReport) and len(report.changes) == 1


def test_adopts_a_flat_root_without_allocations_and_keeps_foreign_resources(
    api: PlacementAPI, agent: PlacementClient, tmp_path: Path
) -> None:
    """A compute node registered flat by Nova (its own uuid), with VCPU/MEMORY_MB/DISK_GB and a
    VGPU inventory, no guests: the agent keeps the uuid and VGPU, moves VCPU/MEMORY_MB down."""
    root_uuid = "9a0c41d6-0c7b-4c0e-8b52-4b6f8f1f0c11"
    assert (
        api.post("/resource_providers", json={"name": "cn1", "uuid": root_uuid}).status_code == 200
    )
    flat = {
        "resource_provider_generation": 0,
        "inventories": {
            "VCPU": {"total": 4},
            "MEMORY_MB": {"total": 8192},
            "DISK_GB": {"total": 10},
            "VGPU": {"total": 2},
        },
    }
    assert api.put(f"/resource_providers/{root_uuid}/inventories", json=flat).status_code == 200

    sync(agent, desired(one_cell_vm(tmp_path)), take_over=True)  # nova-compute stopped for good
    stored = tree_of(api, "cn1")
    assert stored["cn1"]["uuid"] == root_uuid
    assert set(stored["cn1"]["inventories"]) == {"DISK_GB", "VGPU"}
    assert stored["cn1"]["inventories"]["DISK_GB"]["total"] == 500
    assert stored["cn1_NUMA0"]["parent"] == "cn1"
    assert stored["cn1_NUMA0"]["inventories"]["VCPU"]["total"] == 4


def test_flat_root_with_allocations_is_reshaped(
    api: PlacementAPI, agent: PlacementClient, tmp_path: Path
) -> None:
    """A flat compute node with a running guest: the agent plans and applies a reshape, the
    guest's VCPU and MEMORY_MB move to the cell, and a second run writes nothing."""
    root_uuid = "9a0c41d6-0c7b-4c0e-8b52-4b6f8f1f0c12"
    assert (
        api.post("/resource_providers", json={"name": "cn1", "uuid": root_uuid}).status_code == 200
    )
    flat = {
        "resource_provider_generation": 0,
        "inventories": {
            "VCPU": {"total": 4, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 8192, "reserved": 512},
            "DISK_GB": {"total": 500},
        },
    }
    assert api.put(f"/resource_providers/{root_uuid}/inventories", json=flat).status_code == 200
    consumer = "22222222-2222-3333-4444-555555555555"
    allocate(api, consumer, {root_uuid: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}})

    from placement_numa.agent.reshape import reshape_with_planner

    sys = one_cell_vm(tmp_path)
    report = sync(agent, desired(sys), reshape=reshape_with_planner, take_over=True)
    assert report.notes == ["taking over cn1 from nova-compute (MEMORY_MB, VCPU)"]
    stored = tree_of(api, "cn1")
    usages = {
        name: api.get(f"/resource_providers/{p['uuid']}/usages").json()["usages"]
        for name, p in stored.items()
    }
    assert usages["cn1"] == {"DISK_GB": 20}
    assert usages["cn1_NUMA0"] == {"VCPU": 2}
    assert usages["cn1_NUMA0_PAGE_4KB"] == {"MEMORY_MB": 2048}
    assert set(stored) == {"cn1", "cn1_NUMA0", "cn1_NUMA0_PAGE_4KB", "cn1_NUMA0_PAGE_2048KB"}

    again = sync(agent, desired(sys), reshape=reshape_with_planner)
    assert again.writes == 0


def test_flat_root_with_allocations_without_planner_stops_before_writing(
    api: PlacementAPI, agent: PlacementClient, recorder: Recorder, tmp_path: Path
) -> None:
    from placement_numa.agent.sync import ReshapeRequired

    root_uuid = "9a0c41d6-0c7b-4c0e-8b52-4b6f8f1f0c13"
    api.post("/resource_providers", json={"name": "cn1", "uuid": root_uuid})
    api.put(
        f"/resource_providers/{root_uuid}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}},
    )
    allocate(api, "33333333-2222-3333-4444-555555555555", {root_uuid: {"VCPU": 1}})
    recorder.clear()
    with pytest.raises(ReshapeRequired, match="still carries VCPU/PCPU/MEMORY_MB with allocations"):
        sync(agent, desired(one_cell_vm(tmp_path)), take_over=True)
    assert recorder.writes == []
