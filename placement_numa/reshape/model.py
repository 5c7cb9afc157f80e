"""What the reshape planner reads: a compute node's provider tree and its consumers (pure).

The NUMA tree follows the Nova spec "NUMA Topology with Resource Providers"::

    <host>                                    compute node (root): DISK_GB, ... (non-NUMA classes)
    ├── <host>_NUMA0                          NUMA cell: VCPU, PCPU; trait HW_NUMA_ROOT
    │   ├── <host>_NUMA0_PAGE_4KB             page size: MEMORY_MB (step_size 1 MiB);
    │   │                                     MEMORY_PAGE_SIZE_SMALL, CUSTOM_MEMORY_PAGE_SIZE_4
    │   └── <host>_NUMA0_PAGE_2048KB          MEMORY_MB (step_size 2 MiB, one page);
    │                                         MEMORY_PAGE_SIZE_LARGE, CUSTOM_MEMORY_PAGE_SIZE_2048
    └── <host>_NUMA1 ...

A flat compute node carries ``VCPU``, ``PCPU`` and ``MEMORY_MB`` on the root itself. Units:
``MEMORY_MB`` in MiB, page sizes in KiB, CPUs as counts.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement_numa.domain.numa_tree import (
    HW_NUMA_ROOT,
    PAGE_SIZE_LARGE,
    PAGE_SIZE_SMALL,
    Inventory,
    cell_provider_name,
    page_provider_name,
    page_size_from_traits,
    page_size_trait,
)

__all__ = [
    "NUMA_CLASSES",
    "CPU_CLASSES",
    "HW_NUMA_ROOT",
    "PAGE_SIZE_SMALL",
    "PAGE_SIZE_LARGE",
    "Inventory",
    "ProviderState",
    "ConsumerState",
    "HostState",
    "cell_provider_name",
    "page_provider_name",
    "page_size_trait",
    "page_size_from_traits",
    "child_uuid",
]

CPU_CLASSES: tuple[str, ...] = ("PCPU", "VCPU")
# Resource classes that move from the compute node to its NUMA cells and page sizes.
NUMA_CLASSES: tuple[str, ...] = ("PCPU", "VCPU", "MEMORY_MB")
# Namespace of the uuids of planned child providers (uuid5 of root uuid and name), so a plan is
# reproducible: planning twice gives the same body.
_CHILD_NAMESPACE = uuid_lib.UUID("6f1f5a7e-2b0c-4f43-9d35-4c1f6a0e9b21")


@dataclass(frozen=True)
class ProviderState:
    """A resource provider of the host's tree: uuid, name, generation, inventories, traits."""

    uuid: str
    name: str
    generation: int
    parent_uuid: str | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ConsumerState:
    """A consumer with allocations on the host.

    * ``allocations``: ALL of the consumer's allocations, ``{provider uuid: {class: amount}}``,
      including those on providers outside the host (they are carried over unchanged, since the
      reshaper replaces a consumer's allocations as a whole);
    * ``generation``: the consumer generation (Placement 1.28);
    * ``page_size_kb``: the page size its memory uses when known (e.g. a flavor with
      ``hw:mem_page_size=2048``); ``None``: small pages;
    * ``numa_nodes``: how many guest NUMA cells it has when known (``hw:numa_nodes``); its CPUs and
      memory are then split evenly over that many distinct host cells. ``None``: one cell.
    """

    uuid: str
    project_id: str
    user_id: str
    generation: int | None
    allocations: Mapping[str, Mapping[str, int]]
    consumer_type: str | None = None
    page_size_kb: int | None = None
    numa_nodes: int | None = None


@dataclass(frozen=True)
class HostState:
    """A compute node: its root provider, every descendant provider, its consumers."""

    root: ProviderState
    descendants: tuple[ProviderState, ...] = ()
    consumers: tuple[ConsumerState, ...] = ()

    @property
    def host(self) -> str:
        """The hypervisor host name (the root provider's name)."""
        return self.root.name

    def children_of(self, uuid: str) -> list[ProviderState]:
        """Direct children of provider ``uuid``, by name."""
        return sorted((p for p in self.descendants if p.parent_uuid == uuid), key=lambda p: p.name)

    def cells(self) -> list[ProviderState]:
        """The NUMA cell providers (children of the root with ``HW_NUMA_ROOT``), by name."""
        return [p for p in self.children_of(self.root.uuid) if HW_NUMA_ROOT in p.traits]


def child_uuid(root_uuid: str, name: str) -> str:
    """A stable uuid for a planned child provider (uuid5 of the root uuid and the name)."""
    return str(uuid_lib.uuid5(_CHILD_NAMESPACE, f"{root_uuid}/{name}"))
