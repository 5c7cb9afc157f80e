"""Planning the collapse of a compute node's NUMA tree back onto the flat compute node
(``plan_to_flat``, a rollback of ``reshape.planner.plan_to_numa``). Pure: reads a
``HostState``, returns a ``Plan``; nothing is written.

Rules (see ``reshape.planner``): the cells' and page sizes' inventories are summed onto the
compute node (the allocation ratio is chosen so the summed capacity is kept), children are
emptied and listed for deletion, and allocations are summed back onto the compute node; device
providers move back under it (``reshape.devices``).
"""

from __future__ import annotations

from math import gcd
from typing import Any

from placement_numa.reshape.devices import devices_to_root, is_device
from placement_numa.reshape.errors import TopologyInvalid
from placement_numa.reshape.model import NUMA_CLASSES, HostState, Inventory, ProviderState
from placement_numa.reshape.plan import Plan
from placement_numa.reshape.plan_body import all_typed, consumer_entry, numa_usages, usages_text

__all__ = ["plan_to_flat"]


def _combine(invs: list[Inventory]) -> Inventory:
    """One flat inventory of the sum of ``invs`` with the same capacity (ratio adjusted if the
    ratios differ)."""
    total = sum(i.total for i in invs)
    reserved = sum(i.reserved for i in invs)
    ratios = {i.allocation_ratio for i in invs}
    if len(ratios) == 1:
        ratio = ratios.pop()
    else:
        usable = total - reserved
        capacity = sum(i.capacity for i in invs)
        ratio = capacity / usable if usable else 1.0
        while int(usable * ratio) < capacity:
            ratio += 1e-9
    step = 0
    for inv in invs:
        step = gcd(step, inv.step_size)
    return Inventory(
        total=total,
        reserved=reserved,
        min_unit=min(i.min_unit for i in invs),
        max_unit=max(i.as_dict()["max_unit"] for i in invs),
        step_size=step or 1,
        allocation_ratio=ratio,
    )


def _collapsed_children(host: HostState, cells: list[ProviderState]) -> list[ProviderState]:
    """The providers a collapse empties and deletes: each cell's page-size providers, then the
    cell (device providers are moved, not deleted: ``reshape.devices``).

    Raises ``TopologyInvalid`` when a page-size provider has children of its own.
    """
    children: list[ProviderState] = []
    for cell in cells:
        pages = [p for p in host.children_of(cell.uuid) if not is_device(p)]
        for page in pages:
            if host.children_of(page.uuid):
                raise TopologyInvalid(f"provider {page.name} has children; cannot collapse it")
        children.extend(pages)
        children.append(cell)
    return children


def _flat_inventories(host: HostState, children: list[ProviderState]) -> dict[str, Inventory]:
    """The compute node's inventories after the collapse: its own, plus the children's NUMA
    classes each summed into one (``_combine``).

    Raises ``TopologyInvalid`` when a child holds a class other than ``VCPU``/``PCPU``/
    ``MEMORY_MB``, or when the compute node holds one of those classes itself.
    """
    root = host.root
    by_class: dict[str, list[Inventory]] = {}
    for provider in children:
        for rc, inv in provider.inventories.items():
            if rc not in NUMA_CLASSES:
                raise TopologyInvalid(
                    f"provider {provider.name} has {rc} inventory; cannot collapse it"
                )
            by_class.setdefault(rc, []).append(inv)
    clash = sorted(set(by_class) & set(root.inventories))
    if clash:
        raise TopologyInvalid(
            f"host {host.host} has {clash} on both the compute node and its cells"
        )
    final_root = dict(root.inventories)
    final_root.update({rc: _combine(invs) for rc, invs in by_class.items()})
    return final_root


def plan_to_flat(host: HostState) -> Plan:
    """Plan collapsing a NUMA tree back onto its flat compute node (a rollback).

    Raises ``TopologyInvalid`` when the host has no NUMA cell providers, or when a cell or page
    size provider has children or inventories of other classes that the flat host cannot take.
    """
    cells = host.cells()
    if not cells:
        raise TopologyInvalid(f"host {host.host} has no NUMA cell providers; nothing to collapse")
    root = host.root
    children = _collapsed_children(host, cells)
    final_root = _flat_inventories(host, children)
    inventories: dict[str, dict[str, Any]] = {
        root.uuid: {
            "resource_provider_generation": root.generation,
            "inventories": {rc: inv.as_dict() for rc, inv in sorted(final_root.items())},
        }
    }
    for provider in children:
        inventories[provider.uuid] = {
            "resource_provider_generation": provider.generation,
            "inventories": {},
        }
    child_ids = {p.uuid for p in children}
    moving = [c for c in host.consumers if child_ids & set(c.allocations)]
    new_allocs: dict[str, dict[str, dict[str, int]]] = {}
    for consumer in moving:
        allocs: dict[str, dict[str, int]] = {}
        for rp, res in consumer.allocations.items():
            target = root.uuid if rp in child_ids else rp
            for rc, amount in res.items():
                allocs.setdefault(target, {})[rc] = allocs.get(target, {}).get(rc, 0) + amount
        new_allocs[consumer.uuid] = allocs
    typed = all_typed(moving)
    tree = child_ids | {root.uuid}
    before = numa_usages(moving, {c.uuid: c.allocations for c in moving}, tree)
    after = numa_usages(moving, new_allocs, tree)
    summary = [f"host {host.host}: collapse {len(cells)} NUMA cells -> flat compute node"]
    summary += [
        f"  {rc}: {inv.total} (reserved {inv.reserved}, ratio {inv.allocation_ratio:g})"
        for rc, inv in sorted(final_root.items())
    ]
    summary.append(
        f"  {len(moving)} consumers moved back to {host.host};"
        f" delete {len(children)} child providers"
    )
    summary.append(f"  usages before {usages_text(before)}, after {usages_text(after)}")
    summary.append("  the host's NUMA distance matrix no longer applies (apply removes it)")
    summary += [f"  move device provider {m.name} under {host.host}" for m in devices_to_root(host)]
    return Plan(
        direction="to_flat",
        host=host.host,
        root_provider_uuid=root.uuid,
        microversion="1.38" if typed else "1.30",
        body={
            "inventories": inventories,
            "allocations": {c.uuid: consumer_entry(c, new_allocs[c.uuid], typed) for c in moving},
        },
        delete_providers=tuple(p.uuid for p in children),
        reparent_providers=devices_to_root(host),
        placements={c.uuid: {host.host: new_allocs[c.uuid].get(root.uuid, {})} for c in moving},
        usages_before=before,
        usages_after=after,
        summary=tuple(summary),
    )
