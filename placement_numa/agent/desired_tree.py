"""The provider tree a host should have in Placement (pure dataclasses).

Tree (Nova spec "NUMA Topology with Resource Providers"), names as the reshape planner's::

    <host>                          root: DISK_GB; HW_CPU_HYPERTHREADING when SMT
    ├── <host>_NUMA0                PCPU (cpu_dedicated_set on the cell), VCPU (cpu_shared_set on
    │   │                           the cell); HW_NUMA_ROOT
    │   ├── <host>_NUMA0_PAGE_4KB   MEMORY_MB: cell memory - huge pages, reserved = the cell's share
    │   │                           of reserved_host_memory_mb; MEMORY_PAGE_SIZE_SMALL,
    │   │                           CUSTOM_MEMORY_PAGE_SIZE_4
    │   └── <host>_NUMA0_PAGE_2048KB  MEMORY_MB: pages x 2 MiB, step_size = min_unit = 2 (one
    │                               page); MEMORY_PAGE_SIZE_LARGE, CUSTOM_MEMORY_PAGE_SIZE_2048
    │   └── <host>_0000:81:00.0     a PCI device on cell 0 (``agent.pci``): one class, inventory
    │                               = assignable functions; spec traits, COMPUTE_MANAGED_PCI_DEVICE
    ├── <host>_NUMA1 ...
    └── <host>_0000:d8:00.0         a PCI device with no NUMA node (numa_node -1)

Choices, written down:

* ``HW_CPU_HYPERTHREADING`` is a trait of the compute node (the root), as Nova's libvirt driver
  reports it: set when any CPU the host reports (dedicated or shared) has an SMT sibling. The
  flavor translation asks for it there (``root_required`` for ``hw:cpu_thread_policy=require``,
  forbidden for ``isolate``); the reshape planner keeps the root's traits, the demo fleet sets it
  on the root.
* Every huge page size the kernel offers gets a page-size provider, with ``MEMORY_MB`` only while
  pages of that size exist (Placement rejects a total of 0). Changing huge page counts then
  changes inventories, never the tree.
* ``reserved_host_cpus`` are reserved on VCPU, lowest cells first; ``reserved_host_memory_mb`` is
  spread evenly over the cells' small pages (remainder to the lowest cells; a cell's share is
  capped at its small-page total, the rest moves on).
* Free huge pages (``free_hugepages``) are discovered but not reported: guests on them are
  Placement allocations already.
* Provider uuids are uuid5 of ``<hostname>/<path>`` so the same host always gets the same uuids.
* Device providers are named ``<hostname>_<PCI address>`` as Nova names its PCI providers, so a
  provider Nova created under the compute node is found by name and moved under its cell (its
  uuid, and so its consumers' allocations, stay); path ``PCI_<address>``.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement_numa.agent.config import HostPolicy
from placement_numa.agent.pci import pci_providers
from placement_numa.agent.sysfs import HostTopology, NumaCell
from placement_numa.domain.numa_tree import (
    HW_NUMA_ROOT,
    PAGE_TRAIT_PREFIX,
    Inventory,
    cell_provider_name,
    device_provider_name,
    page_provider_name,
    page_size_trait,
)

__all__ = [
    "Inventory",
    "DesiredProvider",
    "DesiredTree",
    "build",
    "provider_uuid",
    "device_provider_name",
    "cell_provider_name",
    "page_provider_name",
    "page_size_trait",
    "is_agent_trait",
    "ROOT_CLASSES",
]

_NAMESPACE = uuid_lib.UUID("0d4f3c1e-7a52-4b8e-9c61-5e2a4b7d8f10")
AGENT_TRAITS = frozenset(
    {HW_NUMA_ROOT, "HW_CPU_HYPERTHREADING", "MEMORY_PAGE_SIZE_SMALL", "MEMORY_PAGE_SIZE_LARGE"}
)
# Classes the agent reports on the root, or that a flat compute node carries there.
ROOT_CLASSES = frozenset({"DISK_GB", "VCPU", "PCPU", "MEMORY_MB"})


@dataclass(frozen=True)
class DesiredProvider:
    """One provider of the desired tree. ``path`` is ``""`` (root), ``NUMA<id>`` or
    ``NUMA<id>/PAGE_<KiB>KB`` or ``PCI_<address>``; ``parent_path`` is None for the root.
    ``cell_id`` is set on cell providers."""

    path: str
    name: str
    uuid: str
    parent_path: str | None
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    cell_id: int | None = None


@dataclass(frozen=True)
class DesiredTree:
    """The providers (parents before children, root first), the distance matrix between
    cells (rows and columns in the order of ``cell_ids``) and each cell's socket (same order;
    ``None`` when unknown)."""

    providers: tuple[DesiredProvider, ...]
    cell_ids: tuple[int, ...]
    distances: tuple[tuple[int, ...], ...]
    sockets: tuple[int | None, ...] = ()

    @property
    def root(self) -> DesiredProvider:
        """The root provider (always first)."""
        return self.providers[0]

    def by_path(self) -> dict[str, DesiredProvider]:
        """``{path: provider}`` of every provider of the tree."""
        return {provider.path: provider for provider in self.providers}

    def cells(self) -> list[DesiredProvider]:
        """The cell providers in ``cell_ids`` order."""
        return [p for p in self.providers if p.cell_id is not None]


def provider_uuid(hostname: str, path: str) -> str:
    """The deterministic uuid of the provider at ``path`` of ``hostname``'s tree (uuid5)."""
    return str(uuid_lib.uuid5(_NAMESPACE, f"{hostname}/{path}"))


def is_agent_trait(trait: str) -> bool:
    """True for the traits the agent owns on the providers it creates."""
    return trait in AGENT_TRAITS or trait.startswith(PAGE_TRAIT_PREFIX)


def _spread(amount: int, capacities: list[int], *, evenly: bool) -> list[int]:
    """Split ``amount`` over bins with ``capacities``: evenly (remainder to the first bins) or
    first-bins-first; each share capped at its capacity, overflow moving on."""
    shares = [0] * len(capacities)
    left = amount
    while left > 0:
        open_bins = [i for i, cap in enumerate(capacities) if shares[i] < cap]
        if not open_bins:
            break
        if evenly:
            base, extra = divmod(left, len(open_bins))
            for rank, i in enumerate(open_bins):
                want = base + (1 if rank < extra else 0)
                give = min(want, capacities[i] - shares[i])
                shares[i] += give
                left -= give
        else:
            i = open_bins[0]
            give = min(left, capacities[i] - shares[i])
            shares[i] += give
            left -= give
    return shares


def _page_providers(
    host: HostTopology,
    policy: HostPolicy,
    cell: NumaCell,
    reserved_mb: int,
) -> list[DesiredProvider]:
    parent = f"NUMA{cell.id}"
    pages = []
    small_kb = host.small_page_kb
    small_total = (cell.memory_kb - cell.hugepage_memory_kb) // 1024
    sizes: list[tuple[int, int, bool]] = [(small_kb, small_total, False)]
    sizes += [(pool.size_kb, pool.memory_kb // 1024, True) for pool in cell.hugepages]
    for size_kb, total_mb, large in sizes:
        path = f"{parent}/PAGE_{size_kb}KB"
        inventories: dict[str, Inventory] = {}
        if total_mb > 0:
            step = max(1, size_kb // 1024)
            inventories["MEMORY_MB"] = Inventory(
                total=total_mb,
                reserved=0 if large else reserved_mb,
                min_unit=step,
                step_size=step,
                allocation_ratio=1.0 if large else policy.ram_allocation_ratio,
            )
        pages.append(
            DesiredProvider(
                path=path,
                name=page_provider_name(policy.hostname, cell.id, size_kb),
                uuid=provider_uuid(policy.hostname, path),
                parent_path=parent,
                inventories=inventories,
                traits=frozenset(
                    {
                        "MEMORY_PAGE_SIZE_LARGE" if large else "MEMORY_PAGE_SIZE_SMALL",
                        page_size_trait(size_kb),
                    }
                ),
            )
        )
    return pages


def build(host: HostTopology, policy: HostPolicy) -> DesiredTree:
    """The desired tree of ``host`` under ``policy`` (see the module docstring for the shape)."""
    hostname = policy.hostname
    root_inventories: dict[str, Inventory] = {}
    if policy.disk_gb > 0:
        root_inventories["DISK_GB"] = Inventory(
            total=policy.disk_gb,
            reserved=min(policy.reserved_host_disk_gb, policy.disk_gb),
            allocation_ratio=policy.disk_allocation_ratio,
        )
    reported = frozenset().union(*(c.cpus & (policy.pcpus | policy.vcpus) for c in host.cells))
    providers = [
        DesiredProvider(
            path="",
            name=hostname,
            uuid=provider_uuid(hostname, ""),
            parent_path=None,
            inventories=root_inventories,
            traits=frozenset({"HW_CPU_HYPERTHREADING"}) if host.has_smt(reported) else frozenset(),
        )
    ]
    vcpu_counts = [len(cell.cpus & policy.vcpus) for cell in host.cells]
    cpu_reserved = _spread(policy.reserved_host_cpus, vcpu_counts, evenly=False)
    small_mb = [(c.memory_kb - c.hugepage_memory_kb) // 1024 for c in host.cells]
    mem_reserved = _spread(policy.reserved_host_memory_mb, small_mb, evenly=True)
    for index, cell in enumerate(host.cells):
        path = f"NUMA{cell.id}"
        inventories: dict[str, Inventory] = {}
        pcpus = cell.cpus & policy.pcpus
        vcpus = cell.cpus & policy.vcpus
        if pcpus:
            inventories["PCPU"] = Inventory(total=len(pcpus))
        if vcpus:
            inventories["VCPU"] = Inventory(
                total=len(vcpus),
                reserved=cpu_reserved[index],
                allocation_ratio=policy.cpu_allocation_ratio,
            )
        traits = {HW_NUMA_ROOT}
        providers.append(
            DesiredProvider(
                path=path,
                name=cell_provider_name(hostname, cell.id),
                uuid=provider_uuid(hostname, path),
                parent_path="",
                inventories=inventories,
                traits=frozenset(traits),
                cell_id=cell.id,
            )
        )
        providers.extend(_page_providers(host, policy, cell, mem_reserved[index]))
    providers.extend(_device_providers(host, policy))
    return DesiredTree(
        providers=tuple(providers),
        cell_ids=tuple(cell.id for cell in host.cells),
        distances=host.distances,
        sockets=tuple(cell.socket for cell in host.cells),
    )


def _device_providers(host: HostTopology, policy: HostPolicy) -> list[DesiredProvider]:
    """One provider per PF or standalone device the device specs claim, under its cell (or the
    root when its ``numa_node`` is -1 or not one of the host's cells)."""
    if not policy.device_specs:
        return []
    cells = {cell.id for cell in host.cells}
    found = []
    for device in pci_providers(host.pci_devices, policy.device_specs):
        path = f"PCI_{device.address}"
        found.append(
            DesiredProvider(
                path=path,
                name=device_provider_name(policy.hostname, device.address),
                uuid=provider_uuid(policy.hostname, path),
                parent_path=f"NUMA{device.numa_node}" if device.numa_node in cells else "",
                inventories={
                    device.resource_class: Inventory(total=device.total, max_unit=device.total)
                },
                traits=device.traits,
            )
        )
    return found
