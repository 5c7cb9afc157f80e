"""A NUMA flavor query whose search filters candidates (Nova's memory rule: an explicit page
size) leaves no reference cycle holding its snapshot, so the refresh after the next write
patches the snapshot in place (``engine.handover``), with the cyclic collector off (issue 30).
"""

from __future__ import annotations

import gc
from typing import Any

from placement_numa.api.engine_dep import engine_for_state
from placement_numa.engine.handover import YOUNG_COLLECTION_THRESHOLD, young_collections
from tests.conftest import PlacementAPI
from tests.test_cell_index_patch import allocate
from tests.test_numa_api import post, two_cell_host

PAGED = {"vcpus": 2, "memory_mb": 1024, "extra_specs": {"hw:mem_page_size": "small"}}


def test_filtered_flavor_queries_leave_the_snapshot_to_be_patched_in_place(
    api: PlacementAPI,
) -> None:
    state = api.client.app.state  # type: ignore[attr-defined]
    engine = engine_for_state(state)
    outer: Any = getattr(engine, "inner", engine)
    source = getattr(outer.source, "inner", outer.source)
    host = two_cell_host(api, "paged")
    collecting = gc.isenabled()
    gc.disable()  # no collection may free a cycle that still held the snapshot
    try:
        for _ in range(3):
            found = post(api, flavor=PAGED)["allocation_requests"]
            assert {r["numa"]["host"] for r in found} == {"paged"}
            allocate(api, host)
        before = source.patches_in_place
        assert post(api, flavor=PAGED)["allocation_requests"]
    finally:
        if collecting:
            gc.enable()
    assert source.patches_in_place == before + 1


def test_a_frozen_fleet_makes_young_collections_rarer(api: PlacementAPI) -> None:
    """Once a fleet is loaded and frozen, the young generation is collected every
    ``YOUNG_COLLECTION_THRESHOLD`` allocations; a rarer setting, or automatic collection
    turned off (0), is left as it is, and the older generations keep theirs."""
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        two_cell_host(api, "young")
        assert post(api, flavor=PAGED)["allocation_requests"]  # the fleet refreshed
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 11, 12)
        for kept in ((YOUNG_COLLECTION_THRESHOLD * 2, 11, 12), (0, 11, 12)):
            gc.set_threshold(*kept)
            young_collections()
            assert gc.get_threshold() == kept
    finally:
        gc.set_threshold(*saved)
