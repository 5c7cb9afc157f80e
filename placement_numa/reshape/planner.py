"""Planning reshapes of one compute node: flat -> NUMA tree (``plan_to_numa``) and back
(``plan_to_flat``). Pure: reads a ``HostState``, returns a ``Plan``; nothing is written.

Rules (Nova spec "NUMA Topology with Resource Providers"; Placement's reshaper, microversion 1.30):

* ``VCPU``, ``PCPU`` move to the NUMA cell providers ``<host>_NUMA<id>`` (``HW_NUMA_ROOT``),
  ``MEMORY_MB`` to one page-size provider per cell and page size (``step_size`` = one page in
  MiB; traits ``MEMORY_PAGE_SIZE_SMALL|LARGE`` and ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>``); every other
  class stays on the compute node.
* Allocation ratios, ``min_unit`` and ``max_unit`` of the flat inventories carry over to the
  cells and small pages (huge pages: ratio 1.0, one page minimum, their total as maximum). The
  flat ``reserved`` of a class goes to the first cell, unless the topology gives
  per-cell reservations.
* Each consumer's ``VCPU``/``PCPU``/``MEMORY_MB`` on the compute node move to one cell, or to
  ``numa_nodes`` distinct cells split evenly, its memory in its page size (small pages unless
  known); its other allocations are carried over unchanged. See ``reshape.fit`` for the search.
* Back to flat: the cells' and page sizes' inventories are summed onto the compute node (the
  allocation ratio is chosen so the summed capacity is kept), children are emptied and listed for
  deletion, and allocations are summed back onto the compute node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import gcd
from typing import Any

from placement_numa.reshape.devices import devices_to_cells, devices_to_root, is_device
from placement_numa.reshape.errors import ConsumerUnplaceable, TopologyInvalid
from placement_numa.reshape.fit import Bin, Item, Limits, Policy, fit, memory_slot
from placement_numa.reshape.model import (
    CPU_CLASSES,
    HW_NUMA_ROOT,
    NUMA_CLASSES,
    PAGE_SIZE_LARGE,
    PAGE_SIZE_SMALL,
    ConsumerState,
    HostState,
    Inventory,
    ProviderState,
    cell_provider_name,
    child_uuid,
    page_provider_name,
    page_size_trait,
)
from placement_numa.reshape.plan import GENERATION_AFTER_CREATE, NewProvider, Plan
from placement_numa.reshape.topology import CellSpec, Topology

__all__ = ["plan_to_numa", "plan_to_flat"]


def _consumer_entry(
    consumer: ConsumerState, allocations: Mapping[str, Mapping[str, int]], typed: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "allocations": {
            rp: {"resources": dict(sorted(res.items()))}
            for rp, res in sorted(allocations.items())
            if any(res.values())
        },
        "project_id": consumer.project_id,
        "user_id": consumer.user_id,
        "consumer_generation": consumer.generation,
    }
    if typed:
        entry["consumer_type"] = consumer.consumer_type
    return entry


def _typed(consumers: list[ConsumerState]) -> bool:
    """Whether every consumer's type is known (the body can then use microversion 1.38)."""
    return all(c.consumer_type not in (None, "unknown") for c in consumers)


def _cell_inventories(
    cell: CellSpec, flat: Mapping[str, Inventory], topology: Topology, first: bool
) -> tuple[dict[str, Inventory], dict[int, Inventory]]:
    """The cell's ``VCPU``/``PCPU`` inventories and its ``{page KiB: MEMORY_MB inventory}``."""
    explicit_reserved = any(
        c.reserved_pcpus or c.reserved_vcpus or any(p.reserved_mb for p in c.pages)
        for c in topology.cells
    )

    def reserved_for(rc: str, given: int, total: int) -> int:
        if explicit_reserved or not first or rc not in flat:
            return given
        return min(flat[rc].reserved, total)

    cpus: dict[str, Inventory] = {}
    for rc, total, given in (
        ("PCPU", cell.pcpus, cell.reserved_pcpus),
        ("VCPU", cell.vcpus, cell.reserved_vcpus),
    ):
        if total <= 0:
            continue
        base = flat.get(rc, Inventory(total=total))
        cpus[rc] = Inventory(
            total=total,
            reserved=reserved_for(rc, given, total),
            min_unit=min(base.min_unit, total),
            max_unit=base.as_dict()["max_unit"] if rc in flat else total,
            step_size=1,
            allocation_ratio=base.allocation_ratio,
        )
    pages: dict[int, Inventory] = {}
    memory = flat.get("MEMORY_MB", Inventory(total=0))
    for page in cell.pages:
        if page.memory_mb <= 0:
            continue
        small = page.size_kb == topology.small_page_size_kb
        reserved = reserved_for("MEMORY_MB", page.reserved_mb, page.memory_mb) if small else 0
        pages[page.size_kb] = Inventory(
            total=page.memory_mb,
            reserved=reserved,
            min_unit=max(page.step_mb, memory.min_unit) if small else page.step_mb,
            max_unit=memory.as_dict()["max_unit"]
            if small and "MEMORY_MB" in flat
            else page.memory_mb,
            step_size=page.step_mb,
            allocation_ratio=memory.allocation_ratio if small else 1.0,
        )
    return cpus, pages


def _split(amount: int, parts: int, step: int) -> list[int]:
    """Split ``amount`` into ``parts`` multiples of ``step`` as evenly as possible (larger
    first)."""
    units, rest = divmod(amount, step)
    base, extra = divmod(units, parts)
    return [(base + (1 if i < extra else 0)) * step + (rest if i == 0 else 0) for i in range(parts)]


def plan_to_numa(host: HostState, topology: Topology, *, policy: Policy = "pack") -> Plan:
    """Plan moving a flat compute node onto its NUMA tree.

    Raises ``TopologyInvalid`` when the host already has NUMA cells, and ``ConsumerUnplaceable``
    (naming the consumer and what it lacked) when some consumer fits on no cell.
    """
    if host.cells():
        raise TopologyInvalid(
            f"host {host.host} already has NUMA cell providers; plan to_flat first"
        )
    root = host.root
    name = host.host
    tree = _numa_tree(root, name, topology)
    summary = [f"host {name}: reshape flat -> {len(topology.cells)} NUMA cells ({policy})"]
    summary += tree.summary
    moving = [
        c
        for c in host.consumers
        if any(c.allocations.get(root.uuid, {}).get(rc) for rc in NUMA_CLASSES)
    ]
    items = [_item(c, topology, root) for c in moving]
    placed = fit(items, tree.bins, policy=policy)
    new_allocs: dict[str, dict[str, dict[str, int]]] = {}
    placements: dict[str, dict[str, dict[str, int]]] = {}
    for consumer in moving:
        new_allocs[consumer.uuid], placements[consumer.uuid] = _placed_allocations(
            consumer, placed[consumer.uuid], root.uuid, tree
        )
        summary.append(
            f"  consumer {consumer.uuid} -> "
            + "; ".join(
                f"{p}: " + ", ".join(f"{rc} {v}" for rc, v in sorted(r.items()))
                for p, r in sorted(placements[consumer.uuid].items())
            )
        )
    typed = _typed(moving)
    allocations = {c.uuid: _consumer_entry(c, new_allocs[c.uuid], typed) for c in moving}
    before = _numa_usages(moving, {c.uuid: c.allocations for c in moving}, set(tree.names))
    after = _numa_usages(moving, new_allocs, set(tree.names))
    summary.append(f"  usages before {_usages_text(before)}, after {_usages_text(after)}")
    if topology.distances is None:
        summary.append("  no distance matrix given")
    moves = devices_to_cells(host, topology, tree.cell_uuid)
    summary += [
        f"  move device provider {m.name} under {tree.names[m.parent_provider_uuid]}" for m in moves
    ]
    return Plan(
        direction="to_numa",
        host=name,
        root_provider_uuid=root.uuid,
        microversion="1.38" if typed else "1.30",
        body={"inventories": tree.inventories, "allocations": allocations},
        create_providers=tuple(tree.created),
        reparent_providers=moves,
        distances=topology.distance_document(),
        placements=placements,
        usages_before=before,
        usages_after=after,
        summary=tuple(summary),
    )


@dataclass
class _NumaTree:
    """The NUMA tree a to_numa plan creates under the compute node, as the plan's pieces.

    ``created``: the cell and page-size providers, parents first; ``inventories``: the reshaper
    body's inventories by provider uuid (the compute node's without the NUMA classes, then each
    new provider's); ``bins``: the cells' capacities and limits for ``fit`` (CPU classes and
    ``MEMORY_MB:<KiB>`` page slots); ``cell_uuid``: cell id -> provider uuid; ``page_uuid``:
    (cell id, page KiB) -> provider uuid; ``names``: provider uuid -> name (the compute node
    included); ``summary``: one ``create`` line per cell.
    """

    created: list[NewProvider] = field(default_factory=list)
    inventories: dict[str, dict[str, Any]] = field(default_factory=dict)
    bins: list[Bin] = field(default_factory=list)
    cell_uuid: dict[int, str] = field(default_factory=dict)
    page_uuid: dict[tuple[int, int], str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)


def _numa_tree(root: ProviderState, name: str, topology: Topology) -> _NumaTree:
    """The cell and page-size providers of ``topology`` under the compute node ``root`` (named
    ``name``), their inventories carried over from its flat ones (module docstring's rules)."""
    flat = {rc: inv for rc, inv in root.inventories.items() if rc in NUMA_CLASSES}
    tree = _NumaTree(names={root.uuid: name})
    tree.inventories[root.uuid] = {
        "resource_provider_generation": root.generation,
        "inventories": {
            rc: inv.as_dict()
            for rc, inv in sorted(root.inventories.items())
            if rc not in NUMA_CLASSES
        },
    }
    for index, cell in enumerate(topology.cells):
        cpus, pages = _cell_inventories(cell, flat, topology, first=index == 0)
        cname = cell_provider_name(name, cell.id)
        cuuid = child_uuid(root.uuid, cname)
        tree.cell_uuid[cell.id] = cuuid
        tree.names[cuuid] = cname
        tree.created.append(NewProvider(cuuid, cname, root.uuid, (HW_NUMA_ROOT,)))
        tree.inventories[cuuid] = {
            "resource_provider_generation": GENERATION_AFTER_CREATE,
            "inventories": {rc: inv.as_dict() for rc, inv in sorted(cpus.items())},
        }
        capacity: dict[str, int] = {rc: inv.capacity for rc, inv in cpus.items()}
        limits = {
            rc: Limits(inv.min_unit, inv.as_dict()["max_unit"], inv.step_size)
            for rc, inv in cpus.items()
        }
        described = [f"{rc} {inv.total}" for rc, inv in sorted(cpus.items())]
        for size_kb, inv in sorted(pages.items()):
            pname = page_provider_name(name, cell.id, size_kb)
            puuid = child_uuid(root.uuid, pname)
            tree.page_uuid[(cell.id, size_kb)] = puuid
            tree.names[puuid] = pname
            kind = PAGE_SIZE_SMALL if size_kb == topology.small_page_size_kb else PAGE_SIZE_LARGE
            tree.created.append(NewProvider(puuid, pname, cuuid, (kind, page_size_trait(size_kb))))
            tree.inventories[puuid] = {
                "resource_provider_generation": GENERATION_AFTER_CREATE,
                "inventories": {"MEMORY_MB": inv.as_dict()},
            }
            slot = memory_slot(size_kb)
            capacity[slot] = inv.capacity
            limits[slot] = Limits(inv.min_unit, inv.as_dict()["max_unit"], inv.step_size)
            described.append(f"MEMORY_MB {inv.total} in {size_kb} KiB pages")
        tree.bins.append(Bin(cell.id, capacity, limits))
        tree.summary.append(f"  create {cname}: " + ", ".join(described))
    return tree


def _placed_allocations(
    consumer: ConsumerState,
    pieces: list[tuple[int, Mapping[str, int]]],
    root_uuid: str,
    tree: _NumaTree,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """A moving consumer's allocations once ``fit`` placed it (``pieces``: (cell id, {slot:
    amount}), slots ``VCPU``/``PCPU`` or ``MEMORY_MB:<KiB>``): ``({provider uuid: {class:
    amount}}, {provider name: {class: amount}})``, the second only what moved onto the tree.
    Its NUMA classes leave the compute node ``root_uuid``; its other allocations stay."""
    allocs = {rp: dict(res) for rp, res in consumer.allocations.items()}
    allocs[root_uuid] = {
        rc: v for rc, v in allocs.get(root_uuid, {}).items() if rc not in NUMA_CLASSES
    }
    where: dict[str, dict[str, int]] = {}
    for cell_id, piece in pieces:
        for slot, amount in piece.items():
            if not amount:
                continue
            if slot in CPU_CLASSES:
                rp, rc = tree.cell_uuid[cell_id], slot
            else:
                rp, rc = tree.page_uuid[(cell_id, int(slot.split(":")[1]))], "MEMORY_MB"
            allocs.setdefault(rp, {})[rc] = allocs.get(rp, {}).get(rc, 0) + amount
            where.setdefault(tree.names[rp], {})[rc] = amount
    return {rp: res for rp, res in allocs.items() if any(res.values())}, where


def _usages_text(usages: Mapping[str, int]) -> str:
    """``{"DISK_GB": 100, "VCPU": 12}`` as ``DISK_GB 100, VCPU 12`` (no Python reprs in output)."""
    return ", ".join(f"{rc} {amount}" for rc, amount in sorted(usages.items())) or "none"


def _numa_usages(
    consumers: list[ConsumerState],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    tree: set[str],
) -> dict[str, int]:
    totals: dict[str, int] = {}
    for consumer in consumers:
        for rp, resources in allocations[consumer.uuid].items():
            if rp in tree:
                for rc, amount in resources.items():
                    totals[rc] = totals.get(rc, 0) + amount
    return dict(sorted(totals.items()))


def _item(consumer: ConsumerState, topology: Topology, root: ProviderState) -> Item:
    hint = topology.hints.get(consumer.uuid)
    page_kb = (
        consumer.page_size_kb
        or (hint.page_size_kb if hint else None)
        or topology.small_page_size_kb
    )
    nodes = consumer.numa_nodes or (hint.numa_nodes if hint else None) or 1
    on_root = consumer.allocations.get(root.uuid, {})
    step = max(1, page_kb // 1024)
    pieces: list[dict[str, int]] = [{} for _ in range(nodes)]
    for rc in NUMA_CLASSES:
        amount = on_root.get(rc, 0)
        if not amount:
            continue
        slot = memory_slot(page_kb) if rc == "MEMORY_MB" else rc
        if rc == "MEMORY_MB" and amount % step:
            raise ConsumerUnplaceable(
                f"consumer {consumer.uuid} cannot be placed: MEMORY_MB {amount} is not a whole"
                f" number of {page_kb} KiB pages",
                consumer=consumer.uuid,
                lacking={"MEMORY_MB": step - amount % step},
            )
        for piece, part in zip(
            pieces, _split(amount, nodes, step if rc == "MEMORY_MB" else 1), strict=False
        ):
            piece[slot] = part
    return Item(consumer.uuid, tuple(pieces))


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
    typed = _typed(moving)
    tree = child_ids | {root.uuid}
    before = _numa_usages(moving, {c.uuid: c.allocations for c in moving}, tree)
    after = _numa_usages(moving, new_allocs, tree)
    summary = [f"host {host.host}: collapse {len(cells)} NUMA cells -> flat compute node"]
    summary += [
        f"  {rc}: {inv.total} (reserved {inv.reserved}, ratio {inv.allocation_ratio:g})"
        for rc, inv in sorted(final_root.items())
    ]
    summary.append(
        f"  {len(moving)} consumers moved back to {host.host};"
        f" delete {len(children)} child providers"
    )
    summary.append(f"  usages before {_usages_text(before)}, after {_usages_text(after)}")
    summary.append("  the host's NUMA distance matrix no longer applies (apply removes it)")
    summary += [f"  move device provider {m.name} under {host.host}" for m in devices_to_root(host)]
    return Plan(
        direction="to_flat",
        host=host.host,
        root_provider_uuid=root.uuid,
        microversion="1.38" if typed else "1.30",
        body={
            "inventories": inventories,
            "allocations": {c.uuid: _consumer_entry(c, new_allocs[c.uuid], typed) for c in moving},
        },
        delete_providers=tuple(p.uuid for p in children),
        reparent_providers=devices_to_root(host),
        placements={c.uuid: {host.host: new_allocs[c.uuid].get(root.uuid, {})} for c in moving},
        usages_before=before,
        usages_after=after,
        summary=tuple(summary),
    )
