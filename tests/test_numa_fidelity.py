"""Regression tests of issue 11's defects (NUMA fidelity with Nova) and of issue 10 item 2
(a flavor's CPU lists bounded before expansion), through the real service on every backend.

Defect 1 is end-to-end: an SMT host and a host without SMT registered by the agent from sysfs
fixtures, then ``hw:cpu_thread_policy=require`` / ``isolate`` flavors against them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from placement_numa.agent.client import PlacementClient
from placement_numa.agent.config import AgentSettings
from placement_numa.agent.desired_tree import build
from placement_numa.agent.sync import sync
from placement_numa.agent.sysfs import discover
from placement_numa.cli.demo import CellShape, HostShape, load_host
from tests.conftest import PlacementAPI
from tests.sysfs_fixtures import Cell, build_numa_host
from tests.test_reshaper_numa import flat_host
from tests.test_reshaper_numa import topology as reshape_topology

V = "1.39"
GiB_KB = 1024 * 1024


def sender(api: PlacementAPI) -> Any:
    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = api.request(method, path, json=body, version=V)
        return response.status_code, (response.json() if response.content else None)

    return send


def ask(api: PlacementAPI, flavor: dict[str, Any]) -> Any:
    return api.post("/allocation_candidates", json={"flavor": flavor}, version=V)


def hosts_of(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return sorted(
        {r["numa"]["host"] for r in response.json()["allocation_requests"] if r["numa"]["host"]}
    )


# --- defect 1: HW_CPU_HYPERTHREADING on the compute node ------------------------------------


def register_with_agent(api: PlacementAPI, base: Path, hostname: str, smt: bool) -> None:
    """One cell, pCPUs 0-3 (SMT: sibling pairs), 4 GiB of small pages, all CPUs dedicated."""
    sys = build_numa_host(
        base,
        [Cell(cpus=[0, 1, 2, 3], memory_kb=4 * GiB_KB)],
        [[10]],
        threads_per_core=2 if smt else 1,
    )
    host = discover(sys, small_page_kb=4)
    settings = AgentSettings(
        hostname=hostname, disk_gb=100, reserved_host_memory_mb=0, cpu_dedicated_set="0-3"
    )
    tree = build(host, settings.policy_for(host))
    sync(PlacementClient(http=api.client), tree)


def test_thread_policies_against_agent_registered_hosts(api: PlacementAPI, tmp_path: Path) -> None:
    register_with_agent(api, tmp_path / "smt", "smt-host", smt=True)
    register_with_agent(api, tmp_path / "plain", "plain-host", smt=False)
    roots = {
        p["name"]: p
        for p in api.get("/resource_providers", version=V).json()["resource_providers"]
        if p["parent_provider_uuid"] is None
    }
    smt_traits = api.get(f"/resource_providers/{roots['smt-host']['uuid']}/traits").json()
    assert "HW_CPU_HYPERTHREADING" in smt_traits["traits"]
    base = {"vcpus": 2, "memory_mb": 1024}
    dedicated = {"hw:cpu_policy": "dedicated"}
    require = ask(api, {**base, "extra_specs": {**dedicated, "hw:cpu_thread_policy": "require"}})
    assert hosts_of(require) == ["smt-host"]
    isolate = ask(api, {**base, "extra_specs": {**dedicated, "hw:cpu_thread_policy": "isolate"}})
    assert hosts_of(isolate) == ["plain-host"]
    prefer = ask(api, {**base, "extra_specs": {**dedicated, "hw:cpu_thread_policy": "prefer"}})
    assert hosts_of(prefer) == ["plain-host", "smt-host"]


def test_reshape_keeps_hyperthreading_on_the_compute_node(api: PlacementAPI) -> None:
    """A flat compute node that carries ``HW_CPU_HYPERTHREADING`` (where Nova's libvirt driver
    reports it) keeps it on the root when the reshape planner moves it onto NUMA cells, so
    ``require`` finds it and ``isolate`` avoids it."""
    root, name, _ = flat_host(api)
    generation = api.get(f"/resource_providers/{root}/traits").json()[
        "resource_provider_generation"
    ]
    put = api.put(
        f"/resource_providers/{root}/traits",
        json={"resource_provider_generation": generation, "traits": ["HW_CPU_HYPERTHREADING"]},
    )
    assert put.status_code == 200, put.text
    applied = api.post("/reshaper/apply", json={"host": name, "topology": reshape_topology(2)})
    assert applied.status_code == 200, applied.text
    assert api.get(f"/resource_providers/{root}/traits").json()["traits"] == [
        "HW_CPU_HYPERTHREADING"
    ]
    providers = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    for provider in providers:
        if provider["uuid"] != root:
            traits = api.get(f"/resource_providers/{provider['uuid']}/traits").json()["traits"]
            assert "HW_CPU_HYPERTHREADING" not in traits
    base = {"vcpus": 2, "memory_mb": 1024, "extra_specs": {"hw:cpu_policy": "dedicated"}}
    require = {**base, "extra_specs": {**base["extra_specs"], "hw:cpu_thread_policy": "require"}}
    isolate = {**base, "extra_specs": {**base["extra_specs"], "hw:cpu_thread_policy": "isolate"}}
    assert hosts_of(ask(api, require)) == [name]
    assert hosts_of(ask(api, isolate)) == []


# --- defect 2: a dedicated mask starting with ^ ----------------------------------------------


def test_caret_mask_means_every_cpu_but_those(api: PlacementAPI) -> None:
    """1-cell host with 3 PCPU and 3 VCPU; 4 vCPUs, mixed, mask ``^0,1``: 3 dedicated + 1
    shared, as Nova reads it (it used to be read as {1} and asked 1 PCPU + 3 VCPU)."""
    load_host(sender(api), HostShape("mixed-host", (CellShape(0, 3, 3, {4: 4096}),)))
    flavor = {
        "vcpus": 4,
        "memory_mb": 1024,
        "extra_specs": {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0,1"},
    }
    response = ask(api, flavor)
    assert hosts_of(response) == ["mixed-host"]
    resources = {
        rc: n
        for alloc in response.json()["allocation_requests"][0]["allocations"].values()
        for rc, n in alloc["resources"].items()
    }
    assert (resources["PCPU"], resources["VCPU"]) == (3, 1)


# --- defect 3: no memory overcommit for pinned and explicit-page-size guests -----------------


@pytest.mark.parametrize(
    ("specs", "placed"),
    [
        ({"hw:numa_nodes": "1"}, True),
        ({"hw:cpu_policy": "dedicated"}, False),
        ({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0"}, False),
        ({"hw:mem_page_size": "small"}, False),
        ({"hw:mem_page_size": "any"}, False),
    ],
    ids=["shared-overcommits", "dedicated", "mixed", "page-size-small", "page-size-any"],
)
def test_pinned_and_paged_guests_never_overcommit_memory(
    api: PlacementAPI, tmp_path: Path, specs: dict[str, str], placed: bool
) -> None:
    """1 cell, ram_allocation_ratio 1.5, 4096 MiB of small pages with 3072 used: a 2048 MiB
    guest fits the Placement capacity (6144 - 3072) but not the free pages (1024), which is
    what Nova checks for pinned guests and guests with an explicit page size."""
    sys = build_numa_host(tmp_path, [Cell(cpus=[0, 1, 2, 3], memory_kb=4 * GiB_KB)], [[10]])
    host = discover(sys, small_page_kb=4)
    settings = AgentSettings(
        hostname="ratio-host",
        disk_gb=100,
        reserved_host_memory_mb=0,
        cpu_dedicated_set="0-1",
        cpu_shared_set="2-3",
        ram_allocation_ratio=1.5,
    )
    tree = build(host, settings.policy_for(host))
    sync(PlacementClient(http=api.client), tree)
    small = tree.by_path()["NUMA0/PAGE_4KB"].uuid
    used = api.put(
        "/allocations/5d0c0000-0000-4000-8000-000000000003",
        json={
            "allocations": {small: {"resources": {"MEMORY_MB": 3072}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
        version=V,
    )
    assert used.status_code == 204, used.text
    response = ask(api, {"vcpus": 2, "memory_mb": 2048, "extra_specs": specs})
    assert hosts_of(response) == (["ratio-host"] if placed else [])


# --- defect 4: valid flavors asking a trait nobody has ---------------------------------------


@pytest.mark.parametrize(
    "specs",
    [
        {"hw:mem_page_size": "524288"},
        {"hw:numa_nodes": "1", "hw:mem_page_size": "16GB"},
        {"hw:numa_nodes": "1", "trait:CUSTOM_NEVER_REPORTED_ANYWHERE": "required"},
    ],
    ids=["page-size-kib", "page-size-unit", "required-custom-trait"],
)
def test_unknown_traits_mean_no_candidates_not_400(
    api: PlacementAPI, specs: dict[str, str]
) -> None:
    load_host(sender(api), HostShape("small-pages", (CellShape(0, 2, 2, {4: 4096}),)))
    response = ask(api, {"vcpus": 2, "memory_mb": 1024, "extra_specs": specs})
    assert response.status_code == 200, response.text
    assert response.json()["allocation_requests"] == []


def test_unknown_forbidden_trait_excludes_nothing(api: PlacementAPI) -> None:
    load_host(sender(api), HostShape("small-pages", (CellShape(0, 2, 2, {4: 4096}),)))
    specs = {"hw:numa_nodes": "1", "trait:CUSTOM_NEVER_REPORTED_ANYWHERE": "forbidden"}
    response = ask(api, {"vcpus": 2, "memory_mb": 1024, "extra_specs": specs})
    assert hosts_of(response) == ["small-pages"]


# --- defect 5: mistyped extra specs ------------------------------------------------------------


def test_mistyped_hw_key_is_refused_with_a_suggestion(api: PlacementAPI) -> None:
    load_host(sender(api), HostShape("small-pages", (CellShape(0, 2, 2, {4: 4096}),)))
    response = ask(api, {"vcpus": 4, "memory_mb": 4096, "extra_specs": {"hw:numa_node": "2"}})
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["code"] == "placement_numa.flavor.invalid"
    assert "hw:numa_node" in error["detail"]
    assert "did you mean 'hw:numa_nodes'?" in error["detail"]


# --- issue 10 item 2: CPU numbers bounded before anything is expanded ------------------------


BOUNDED: list[Any] = [
    pytest.param(
        {"hw:numa_nodes": "1", "hw:numa_cpus.0": "0-99999999", "hw:numa_mem.0": "1024"},
        "larger than max 3",
        id="numa-cpus-hundred-million",
    ),
    pytest.param(
        {"hw:numa_nodes": "1", "hw:numa_cpus.0": "0-4000000000", "hw:numa_mem.0": "1024"},
        "larger than max 3",
        id="numa-cpus-four-billion",
    ),
    pytest.param(
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-4000000000"},
        "larger than max 3",
        id="mask-four-billion",
    ),
    pytest.param(
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-4000000000"},
        "no dedicated CPU",
        id="caret-mask-four-billion",
    ),
    pytest.param({"hw:numa_nodes": "100000"}, "must be <= 128", id="numa-nodes"),
    pytest.param({"hw:numa_nodes": "9" * 5000}, "integer >= 1", id="numa-nodes-5000-digits"),
]


@pytest.mark.parametrize(("specs", "words"), BOUNDED)
def test_cpu_lists_bounded_before_expansion(
    api: PlacementAPI, specs: dict[str, str], words: str
) -> None:
    load_host(sender(api), HostShape("small-pages", (CellShape(0, 2, 2, {4: 4096}),)))
    started = time.monotonic()
    response = ask(api, {"vcpus": 4, "memory_mb": 1024, "extra_specs": specs})
    elapsed = time.monotonic() - started
    assert response.status_code == 400, response.text
    error = response.json()["errors"][0]
    assert error["code"] == "placement_numa.flavor.invalid"
    assert words in error["detail"]
    assert elapsed < 2.0  # expanding 100 million CPUs took seconds and gigabytes
    healthy = ask(api, {"vcpus": 2, "memory_mb": 1024, "extra_specs": {"hw:numa_nodes": "1"}})
    assert hosts_of(healthy) == ["small-pages"]


def test_vcpus_bounded(api: PlacementAPI) -> None:
    response = ask(api, {"vcpus": 10**9, "memory_mb": 1024, "extra_specs": {"hw:numa_nodes": "1"}})
    assert response.status_code == 400
    assert "must be <= 8192" in response.json()["errors"][0]["detail"]
