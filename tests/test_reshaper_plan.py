"""Unit tests of the pure reshape planner (no database): flat -> NUMA -> flat.

The flat host of most tests::

    cn1  VCPU 32 (ratio 4.0), PCPU 16, MEMORY_MB 65536 (reserved 512), DISK_GB 1000
         twelve consumers: 8 shared (2 VCPU, 2048 MiB), 4 pinned (2 PCPU, 4096 MiB),
         10 GiB disk each

and the targets: 2 cells (16 VCPU, 8 PCPU, 32 GiB each) and 4 cells (8 VCPU, 4 PCPU, 16 GiB).
"""

from __future__ import annotations

import uuid

import pytest

from placement_numa.reshape import (
    ConsumerState,
    ConsumerUnplaceable,
    HostState,
    Inventory,
    ProviderState,
    TopologyInvalid,
    parse_topology,
    plan_to_flat,
    plan_to_numa,
)
from placement_numa.reshape.model import NUMA_CLASSES

ROOT = "11111111-1111-1111-1111-111111111111"
SHARED = "22222222-2222-2222-2222-222222222222"  # a sharing DISK provider outside the host


def consumer(n: int, resources: dict[str, int], **kwargs: object) -> ConsumerState:
    return ConsumerState(
        uuid=str(uuid.UUID(int=n)),
        project_id="p",
        user_id="u",
        generation=1,
        allocations={ROOT: resources, SHARED: {"IPV4_ADDRESS": 1}},
        consumer_type="INSTANCE",
        **kwargs,  # type: ignore[arg-type]
    )


def flat_host(consumers: list[ConsumerState] | None = None) -> HostState:
    if consumers is None:
        consumers = [consumer(i, {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}) for i in range(8)]
        consumers += [
            consumer(100 + i, {"PCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 10}) for i in range(4)
        ]
    root = ProviderState(
        uuid=ROOT,
        name="cn1",
        generation=5,
        inventories={
            "VCPU": Inventory(total=32, allocation_ratio=4.0),
            "PCPU": Inventory(total=16),
            "MEMORY_MB": Inventory(total=65536, reserved=512),
            "DISK_GB": Inventory(total=1000),
        },
    )
    return HostState(root=root, consumers=tuple(consumers))


def topology(cells: int, distances: bool = True, **extra: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "cells": [
            {
                "id": i,
                "vcpus": 32 // cells,
                "pcpus": 16 // cells,
                "memory_mb": {"4": 65536 // cells},
            }
            for i in range(cells)
        ],
        **extra,
    }
    if distances:
        doc["distances"] = [[10 if i == j else 21 for j in range(cells)] for i in range(cells)]
    return doc


def numa_host(plan_host: HostState, cells: int, policy: str = "pack") -> HostState:
    """The host as it is after applying the to_numa plan (to test the way back)."""
    plan = plan_to_numa(plan_host, parse_topology(topology(cells)), policy=policy)  # type: ignore[arg-type]
    body = plan.body
    providers = []
    for new in plan.create_providers:
        invs = body["inventories"][new.uuid]["inventories"]
        providers.append(
            ProviderState(
                uuid=new.uuid,
                name=new.name,
                generation=2,
                parent_uuid=new.parent_provider_uuid,
                inventories={rc: Inventory.from_dict(v) for rc, v in invs.items()},
                traits=frozenset(new.traits),
            )
        )
    root = plan_host.root
    root = ProviderState(
        uuid=root.uuid,
        name=root.name,
        generation=root.generation + 2,
        inventories={
            rc: Inventory.from_dict(v) for rc, v in body["inventories"][ROOT]["inventories"].items()
        },
    )
    consumers = [
        ConsumerState(
            uuid=c.uuid,
            project_id=c.project_id,
            user_id=c.user_id,
            generation=(c.generation or 0) + 1,
            consumer_type=c.consumer_type,
            allocations={
                rp: v["resources"] for rp, v in body["allocations"][c.uuid]["allocations"].items()
            },
        )
        for c in plan_host.consumers
    ]
    return HostState(root=root, descendants=tuple(providers), consumers=tuple(consumers))


def usage_by_class(
    host: HostState, allocations: dict[str, dict[str, object]] | None = None
) -> dict[str, int]:
    totals: dict[str, int] = {}
    for c in host.consumers:
        allocs = (
            {rp: v["resources"] for rp, v in allocations[c.uuid]["allocations"].items()}  # type: ignore[index]
            if allocations and c.uuid in allocations
            else c.allocations
        )
        for res in allocs.values():
            for rc, amount in res.items():
                totals[rc] = totals.get(rc, 0) + amount
    return totals


@pytest.mark.parametrize("cells", [2, 4], ids=["2-cells", "4-cells"])
@pytest.mark.parametrize("policy", ["pack", "spread"])
def test_to_numa_moves_every_consumer_and_keeps_usages(cells: int, policy: str) -> None:
    host = flat_host()
    plan = plan_to_numa(host, parse_topology(topology(cells)), policy=policy)  # type: ignore[arg-type]
    body = plan.body
    assert plan.microversion == "1.38"
    assert len(plan.create_providers) == 2 * cells
    assert set(body["allocations"]) == {c.uuid for c in host.consumers}
    # Root keeps only DISK_GB; NUMA classes went to cells and page sizes.
    assert set(body["inventories"][ROOT]["inventories"]) == {"DISK_GB"}
    assert body["inventories"][ROOT]["resource_provider_generation"] == 5
    assert usage_by_class(host) == usage_by_class(host, body["allocations"])
    assert plan.usages_before == plan.usages_after
    for entry in body["allocations"].values():
        assert entry["consumer_generation"] == 1 and entry["consumer_type"] == "INSTANCE"
        assert entry["allocations"][SHARED] == {"resources": {"IPV4_ADDRESS": 1}}
        assert entry["allocations"][ROOT] == {"resources": {"DISK_GB": 10}}
        assert not set(entry["allocations"][ROOT]["resources"]) & set(NUMA_CLASSES)
    # Nothing over capacity on any new provider.
    for new in plan.create_providers:
        invs = body["inventories"][new.uuid]["inventories"]
        for rc, inv in invs.items():
            used = sum(
                e["allocations"].get(new.uuid, {}).get("resources", {}).get(rc, 0)
                for e in body["allocations"].values()
            )
            assert used <= (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]
    # Flat reserved memory goes to the first cell's small pages.
    first_pages = plan.create_providers[1]
    assert first_pages.name == "cn1_NUMA0_PAGE_4KB"
    assert set(first_pages.traits) == {"MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4"}
    assert body["inventories"][first_pages.uuid]["inventories"]["MEMORY_MB"]["reserved"] == 512
    assert plan.distances is not None and len(plan.distances["distances"]) == cells


def test_pack_fills_low_cells_and_spread_balances() -> None:
    host = flat_host([consumer(i, {"VCPU": 2, "MEMORY_MB": 1024}) for i in range(4)])
    packed = plan_to_numa(host, parse_topology(topology(2)), policy="pack")
    spread = plan_to_numa(host, parse_topology(topology(2)), policy="spread")
    packed_cells = {next(iter(p)) for p in packed.placements.values()}
    spread_cells = [next(iter(p)) for p in spread.placements.values()]
    assert packed_cells == {"cn1_NUMA0"}
    assert sorted(spread_cells) == ["cn1_NUMA0", "cn1_NUMA0", "cn1_NUMA1", "cn1_NUMA1"]


def test_plan_is_reproducible() -> None:
    topo = parse_topology(topology(2))
    assert plan_to_numa(flat_host(), topo).as_dict() == plan_to_numa(flat_host(), topo).as_dict()


def test_page_size_and_numa_nodes_hints() -> None:
    big = consumer(1, {"PCPU": 4, "MEMORY_MB": 8192}, page_size_kb=2048, numa_nodes=2)
    small = consumer(2, {"VCPU": 1, "MEMORY_MB": 512})
    doc = {
        "cells": [
            {"id": i, "vcpus": 8, "pcpus": 8, "memory_mb": {"4": 16384, "2048": 8192}}
            for i in range(2)
        ]
    }
    plan = plan_to_numa(flat_host([big, small]), parse_topology(doc))
    assert plan.placements[big.uuid] == {
        "cn1_NUMA0": {"PCPU": 2},
        "cn1_NUMA0_PAGE_2048KB": {"MEMORY_MB": 4096},
        "cn1_NUMA1": {"PCPU": 2},
        "cn1_NUMA1_PAGE_2048KB": {"MEMORY_MB": 4096},
    }
    assert plan.placements[small.uuid] == {
        "cn1_NUMA0": {"VCPU": 1},
        "cn1_NUMA0_PAGE_4KB": {"MEMORY_MB": 512},
    }
    huge = next(p for p in plan.create_providers if p.name == "cn1_NUMA0_PAGE_2048KB")
    inv = plan.body["inventories"][huge.uuid]["inventories"]["MEMORY_MB"]
    assert inv["step_size"] == 2 and inv["min_unit"] == 2 and inv["allocation_ratio"] == 1.0
    assert set(huge.traits) == {"MEMORY_PAGE_SIZE_LARGE", "CUSTOM_MEMORY_PAGE_SIZE_2048"}
    # Hints may also come from the topology document.
    doc["consumers"] = {small.uuid: {"page_size_kb": 2048}}
    plan = plan_to_numa(flat_host([small]), parse_topology(doc))
    assert plan.placements[small.uuid]["cn1_NUMA0_PAGE_2048KB"] == {"MEMORY_MB": 512}


def test_backtracking_finds_a_packing_greedy_misses() -> None:
    # Cells of 12 PCPU: first-fit decreasing puts 5+5 on cell 0, 4+4+3 on cell 1, and the last 3
    # fits nowhere; 5+4+3 / 5+4+3 works.
    consumers = [consumer(i, {"PCPU": n}) for i, n in enumerate([5, 5, 4, 4, 3, 3])]
    doc = {"cells": [{"id": 0, "pcpus": 12}, {"id": 1, "pcpus": 12}]}
    plan = plan_to_numa(flat_host(consumers), parse_topology(doc))
    per_cell: dict[str, int] = {}
    for where in plan.placements.values():
        for name, res in where.items():
            per_cell[name] = per_cell.get(name, 0) + res["PCPU"]
    assert per_cell == {"cn1_NUMA0": 12, "cn1_NUMA1": 12}


def test_unplaceable_consumer_is_named_with_what_it_lacks() -> None:
    wide = consumer(7, {"PCPU": 12, "MEMORY_MB": 1024})
    with pytest.raises(ConsumerUnplaceable) as info:
        plan_to_numa(flat_host([wide]), parse_topology(topology(2)))
    assert info.value.consumer == wide.uuid
    assert info.value.lacking == {"PCPU": 4}
    assert wide.uuid in str(info.value) and "4 more PCPU" in str(info.value)
    # Asking for large pages the host lacks.
    hugepage = consumer(8, {"VCPU": 1, "MEMORY_MB": 2048}, page_size_kb=1048576)
    with pytest.raises(ConsumerUnplaceable) as info:
        plan_to_numa(flat_host([hugepage]), parse_topology(topology(2)))
    assert info.value.lacking == {"MEMORY_MB:1048576": 2048}
    # More guest cells than host cells.
    split = consumer(9, {"VCPU": 4}, numa_nodes=4)
    with pytest.raises(ConsumerUnplaceable) as info:
        plan_to_numa(flat_host([split]), parse_topology(topology(2)))
    assert info.value.lacking == {"cells": 2}


@pytest.mark.parametrize("cells", [2, 4], ids=["2-cells", "4-cells"])
def test_to_flat_restores_the_flat_host(cells: int) -> None:
    host = flat_host()
    numa = numa_host(host, cells)
    plan = plan_to_flat(numa)
    body = plan.body
    root_invs = body["inventories"][ROOT]["inventories"]
    assert root_invs["VCPU"] == Inventory(total=32, allocation_ratio=4.0).as_dict()
    assert root_invs["PCPU"] == Inventory(total=16).as_dict()
    assert root_invs["MEMORY_MB"] == Inventory(total=65536, reserved=512).as_dict()
    assert root_invs["DISK_GB"] == Inventory(total=1000).as_dict()
    assert len(plan.delete_providers) == 2 * cells
    for child in plan.delete_providers:
        assert body["inventories"][child]["inventories"] == {}
    for c in host.consumers:
        new = {rp: v["resources"] for rp, v in body["allocations"][c.uuid]["allocations"].items()}
        assert new == c.allocations
    assert plan.usages_before == plan.usages_after


def test_to_flat_keeps_capacity_when_ratios_differ() -> None:
    host = numa_host(flat_host([]), 2)
    cell = host.cells()[1]
    invs = dict(cell.inventories)
    invs["VCPU"] = Inventory(total=16, allocation_ratio=2.0)
    changed = ProviderState(
        cell.uuid, cell.name, cell.generation, cell.parent_uuid, invs, cell.traits
    )
    host = HostState(
        host.root, tuple(changed if p.uuid == cell.uuid else p for p in host.descendants), ()
    )
    vcpu = Inventory.from_dict(plan_to_flat(host).body["inventories"][ROOT]["inventories"]["VCPU"])
    assert vcpu.total == 32 and vcpu.capacity == 16 * 4 + 16 * 2


def test_refusals_of_the_wrong_direction() -> None:
    with pytest.raises(TopologyInvalid, match="no NUMA cell"):
        plan_to_flat(flat_host())
    with pytest.raises(TopologyInvalid, match="already has NUMA"):
        plan_to_numa(numa_host(flat_host(), 2), parse_topology(topology(2)))


def test_untyped_consumers_use_microversion_1_30() -> None:
    c = ConsumerState("33333333-3333-3333-3333-333333333333", "p", "u", 0, {ROOT: {"VCPU": 1}})
    plan = plan_to_numa(flat_host([c]), parse_topology(topology(2)))
    assert plan.microversion == "1.30"
    assert "consumer_type" not in plan.body["allocations"][c.uuid]


@pytest.mark.parametrize(
    "doc, message",
    [
        ({}, "cells must be a non-empty list"),
        ({"cells": [{"id": 0}, {"id": 0}]}, "unique"),
        ({"cells": [{"id": 0, "memory_mb": {"2048": 3}}]}, "whole number"),
        ({"cells": [{"id": 0, "memory_mb": {"x": 3}}]}, "not a size in KiB"),
        ({"cells": [{"id": 0}, {"id": 1}], "distances": [[10, 20]]}, "2 rows"),
        ({"cells": [{"id": 0}], "distances": [[11]]}, "diagonal"),
        ({"cells": [{"id": 0, "vcpus": -1}]}, "vcpus"),
        ({"cells": [{"id": 0, "cpus": 1}]}, "unknown keys"),
        ({"cells": [{"id": 0}], "consumers": {"x": {"pages": 1}}}, "hints"),
    ],
    ids=[
        "no-cells",
        "dup-ids",
        "partial-page",
        "bad-page",
        "short-matrix",
        "diagonal",
        "negative",
        "unknown",
        "hint",
    ],
)
def test_topology_validation(doc: dict[str, object], message: str) -> None:
    with pytest.raises(TopologyInvalid, match=message):
        parse_topology(doc)
