"""The cell index cache reads only the trees a write changed (issue 30): after an allocation
write the next flavor query reads nothing of it again (the change log says only its usage
changed) and keeps the same index object; a renamed compute node and a new host show at once.
"""

from __future__ import annotations

import gc
import uuid
from typing import Any

import pytest
from sqlalchemy import event

from placement_numa.api.cell_index_dep import cell_index_for_state
from placement_numa.services import numa_candidates
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
    sent: list[str] = []

    def before(_c: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    engine = api.client.app.state.database.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", before)
    try:
        assert hosts_found(api) == {"first"}
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert (cache.loads, cache.patches) == (loads, patches + 1)
    assert cache.get(api.client.app.state.database, 0) is index  # nothing in it changed
    # an allocation write changes no cell name nor matrix: none is read again
    assert not [s for s in sent if "numa_distances" in s], sent

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


def test_flavor_queries_leave_the_snapshot_to_be_patched_in_place(api: PlacementAPI) -> None:
    """A flavor query keeps no reference to its snapshot (the ranker's host view holds it
    weakly), so the refresh after the next write patches it in place (``engine.handover``)."""
    from placement_numa.api.engine_dep import engine_for_state

    state = api.client.app.state  # type: ignore[attr-defined]
    engine = engine_for_state(state)
    source = getattr(engine, "inner", engine).source
    source = getattr(source, "inner", source)
    first = two_cell_host(api, "first")
    for _ in range(3):
        assert hosts_found(api) == {"first"}
        allocate(api, first)
    copied = source.patches - source.patches_in_place
    collecting = gc.isenabled()
    gc.disable()  # no collection may free a cycle that still held the snapshot
    try:
        assert hosts_found(api) == {"first"}
        allocate(api, first)
        assert hosts_found(api) == {"first"}
    finally:
        if collecting:
            gc.enable()
    assert source.patches - source.patches_in_place == copied  # every patch in place


def test_a_query_after_several_writes_patches_what_they_changed(api: PlacementAPI) -> None:
    """The first flavor query after several refreshes (a prefork worker's, after the claims
    and queries it answered since the supervisor read the index) patches the cell index and
    derives the host view from those read before (``FleetSnapshot.changes_since``), and sees
    every write: claims and a renamed compute node."""
    from placement_numa.api.engine_dep import engine_for_state
    from placement_numa.numa.host_view import host_view

    state = api.client.app.state  # type: ignore[attr-defined]
    first = two_cell_host(api, "first")
    two_cell_host(api, "second")
    assert hosts_found(api) == {"first", "second"}
    cache = cell_index_for_state(state)
    loads, patches = cache.loads, cache.patches
    engine = engine_for_state(state)
    seen = engine.snapshot().revision

    def refreshed() -> None:  # a query that is not a flavor's refreshes the snapshot
        assert api.get("/allocation_candidates?resources=VCPU:1", version=V).status_code == 200

    for _ in range(3):
        allocate(api, first)
        refreshed()
    renamed = api.put(
        f"/resource_providers/{first['root']}",
        json={"name": "renamed", "parent_provider_uuid": None},
        version=V,
    )
    assert renamed.status_code == 200, renamed.text
    refreshed()
    fleet = engine.snapshot()
    assert fleet.patched_from is not None and fleet.patched_from > seen  # several patches
    assert hosts_found(api) == {"renamed", "second"}
    assert (cache.loads, cache.patches) == (loads, patches + 1)
    index = cache.get(state.database, fleet.revision, fleet)
    assert host_view(fleet, index, ("VCPU",)).derived_from == seen


def test_more_trees_than_the_bound_read_the_index_whole(
    api: PlacementAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_PATCHED_ROOTS`` trees changed since the cached index, it is read whole (the
    trees' providers are read by id lists, bounded for the databases' bind limits)."""
    monkeypatch.setattr(numa_candidates, "MAX_PATCHED_ROOTS", 0)
    first = two_cell_host(api, "first")
    assert hosts_found(api) == {"first"}
    cache = cell_index_for_state(api.client.app.state)  # type: ignore[attr-defined]
    loads, patches = cache.loads, cache.patches
    allocate(api, first)  # one tree changed: more than 0
    assert hosts_found(api) == {"first"}
    assert (cache.loads, cache.patches) == (loads + 1, patches)
