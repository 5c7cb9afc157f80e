"""Planning reshapes of one compute node: flat -> NUMA tree (``plan_to_numa``; back to flat:
``reshape.collapse.plan_to_flat``). Pure: reads a ``HostState``, returns a ``Plan``; nothing
is written.

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
  deletion, and allocations are summed back onto the compute node (``reshape.collapse``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placement_numa.reshape.devices import devices_to_cells
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
from placement_numa.reshape.plan_body import all_typed, consumer_entry, numa_usages, usages_text
from placement_numa.reshape.topology import CellSpec, Topology

__all__ = ["plan_to_numa"]


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
    typed = all_typed(moving)
    allocations = {c.uuid: consumer_entry(c, new_allocs[c.uuid], typed) for c in moving}
    before = numa_usages(moving, {c.uuid: c.allocations for c in moving}, set(tree.names))
    after = numa_usages(moving, new_allocs, set(tree.names))
    summary.append(f"  usages before {usages_text(before)}, after {usages_text(after)}")
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
