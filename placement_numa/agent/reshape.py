"""Reshaping a flat compute node onto its NUMA tree, through the service's reshape planner.

The agent describes the host in the planner's topology format (``topology_document``), asks the
service for a plan (``POST /reshaper/plan``, placement-numa's extension; 404/405 means there is
no planner), then applies it: creates the planned providers with their traits, re-reads their
generations and sends the plan's body to ``POST /reshaper`` (atomic, Placement 1.30+). The
sync that follows fills in the rest of the desired tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from placement_numa.agent.client import PlacementClient, PlacementClientError, ProviderRecord
from placement_numa.agent.sync_report import SyncReport

if TYPE_CHECKING:
    from placement_numa.agent.desired_tree import DesiredTree

__all__ = ["PLAN_PATH", "topology_document", "reshape_with_planner", "apply_plan"]

PLAN_PATH = "/reshaper/plan"


def topology_document(tree: DesiredTree) -> dict[str, Any]:
    """The reshape planner's topology document for ``tree`` (``placement_numa.reshape.topology``):
    per cell the PCPU and VCPU counts, MiB per page size (sizes without pages left out), the
    reserved small-page memory and VCPUs, the PCI addresses of the devices on the cell (the
    planner moves Nova's providers of them under the cell); the distance matrix; the small page
    size."""
    cells = []
    small_kb = 4
    for cell in tree.cells():
        memory: dict[str, int] = {}
        reserved: dict[str, int] = {}
        devices: list[str] = []
        for child in tree.providers:
            if child.parent_path != cell.path:
                continue
            if child.path.startswith("PCI_"):
                devices.append(child.path.removeprefix("PCI_"))
                continue
            size_kb = int(child.path.rsplit("PAGE_", 1)[1].removesuffix("KB"))
            inventory = child.inventories.get("MEMORY_MB")
            if "MEMORY_PAGE_SIZE_SMALL" in child.traits:
                small_kb = size_kb
                if inventory is not None and inventory.reserved:
                    reserved["MEMORY_MB"] = inventory.reserved
            if inventory is not None:
                memory[str(size_kb)] = inventory.total
        vcpu = cell.inventories.get("VCPU")
        pcpu = cell.inventories.get("PCPU")
        if vcpu is not None and vcpu.reserved:
            reserved["VCPU"] = vcpu.reserved
        entry: dict[str, Any] = {
            "id": cell.cell_id,
            "pcpus": pcpu.total if pcpu else 0,
            "vcpus": vcpu.total if vcpu else 0,
            "memory_mb": memory,
        }
        if reserved:
            entry["reserved"] = reserved
        if devices:
            entry["devices"] = devices
        cells.append(entry)
    return {
        "cells": cells,
        "distances": [list(row) for row in tree.distances],
        "small_page_size_kb": small_kb,
    }


def apply_plan(client: PlacementClient, plan: dict[str, Any], report: SyncReport) -> None:
    """Create the plan's providers (with traits), then POST its body to ``/reshaper`` with the
    generations read back. Raises ``PlacementClientError`` when a step is refused."""
    generations: dict[str, int] = {}
    for new in plan.get("create_providers", []):
        if client.get_provider(new["uuid"]) is None:
            client.create_provider(
                name=new["name"], uuid=new["uuid"], parent_uuid=new["parent_provider_uuid"]
            )
            report.change(f"reshape: created provider {new['name']} ({new['uuid']})")
        generation, traits = client.get_traits(new["uuid"])
        wanted = set(traits) | set(new.get("traits", []))
        if wanted != set(traits):
            custom = {t for t in wanted if t.startswith("CUSTOM_")}
            for trait in sorted(custom - client.existing_traits(custom)):
                client.create_trait(trait)
            generation = client.put_traits(new["uuid"], generation, wanted)
        generations[new["uuid"]] = generation
    body = plan["reshaper"]
    for uuid, entry in body["inventories"].items():
        if uuid in generations:
            entry["resource_provider_generation"] = generations[uuid]
        else:
            entry["resource_provider_generation"], _ = client.get_inventories(uuid)
    client.send_json("POST", "/reshaper", body, ok=(204,), version=plan.get("microversion", "1.30"))
    for move in plan.get("reparent_providers", []):  # device providers: allocations stay
        client.update_provider(
            uuid=move["uuid"], name=move["name"], parent_uuid=move["parent_provider_uuid"]
        )
        report.change(
            f"reshape: moved provider {move['name']} under {move['parent_provider_uuid']}"
        )
    for line in plan.get("summary", []):
        report.change(f"reshape: {line}")


def reshape_with_planner(
    client: PlacementClient, tree: DesiredTree, root: ProviderRecord, report: SyncReport
) -> bool:
    """Reshape the flat compute node ``root`` onto ``tree``'s cells; False (with a note) when the
    service has no planner or the planner refuses (e.g. a consumer fits on no cell)."""
    request = {
        "root_provider_uuid": root.uuid,
        "direction": "to_numa",
        "topology": topology_document(tree),
    }
    try:
        status, plan = client.send_json("POST", PLAN_PATH, request, ok=(200, 404, 405))
    except PlacementClientError as exc:
        report.note(f"reshape planner refused {root.name}: {exc}")
        return False
    if status != 200 or not isinstance(plan, dict) or "reshaper" not in plan:
        report.note("the service has no reshape planner (POST /reshaper/plan)")
        return False
    try:
        apply_plan(client, plan, report)
    except PlacementClientError as exc:
        report.note(f"reshape of {root.name} failed: {exc}")
        return False
    return True
