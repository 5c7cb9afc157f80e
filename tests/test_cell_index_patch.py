"""The cell index cache reads only the trees a write changed (issue 30): after an allocation
write the next flavor query re-reads that tree's cell names and matrix and keeps the same index
object when nothing in it changed; a renamed compute node and a new host show at once.
"""

from __future__ import annotations

import uuid
from typing import Any

from placement_numa.api.cell_index_dep import cell_index_for_state
from tests.conftest import PlacementAPI
from tests.test_numa_api import V, post, two_cell_host

FLAVOR = {"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:numa_nodes": "2"}}


def hosts_found(api: PlacementAPI) -> set[str]:
    return {r["numa"]["host"] for r in post(api, flavor=FLAVOR)["allocation_requests"]}


def allocate(api: PlacementAPI, host: dict[str, Any]) -> None:
    body = {
        "allocations": {host["cells"][0]: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    answer = api.put(f"/allocations/{uuid.uuid4()}", json=body, version=V)
    assert answer.status_code == 204, answer.text


def test_writes_to_trees_patch_the_index(api: PlacementAPI) -> None:
    first = two_cell_host(api, "first")
    assert hosts_found(api) == {"first"}
    cache = cell_index_for_state(api.client.app.state)  # type: ignore[attr-defined]
    loads, patches = cache.loads, cache.patches
    index = cache.get(api.client.app.state.database, 0)  # type: ignore[attr-defined]

    allocate(api, first)
    assert hosts_found(api) == {"first"}
    assert (cache.loads, cache.patches) == (loads, patches + 1)
    assert cache.get(api.client.app.state.database, 0) is index  # nothing in it changed

    two_cell_host(api, "second")  # a new tree
    assert hosts_found(api) == {"first", "second"}
    root = api.get(f"/resource_providers/{first['root']}", version=V).json()
    renamed = api.put(
        f"/resource_providers/{first['root']}",
        json={"name": "renamed", "parent_provider_uuid": None},
        version=V,
    )
    assert renamed.status_code == 200, renamed.text
    assert root["name"] == "first"
    assert hosts_found(api) == {"renamed", "second"}
