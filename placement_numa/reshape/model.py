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
from typing import Any

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
HW_NUMA_ROOT = "HW_NUMA_ROOT"
PAGE_SIZE_SMALL = "MEMORY_PAGE_SIZE_SMALL"
PAGE_SIZE_LARGE = "MEMORY_PAGE_SIZE_LARGE"
_PAGE_TRAIT_PREFIX = "CUSTOM_MEMORY_PAGE_SIZE_"
# Namespace of the uuids of planned child providers (uuid5 of root uuid and name), so a plan is
# reproducible: planning twice gives the same body.
_CHILD_NAMESPACE = uuid_lib.UUID("6f1f5a7e-2b0c-4f43-9d35-4c1f6a0e9b21")


@dataclass(frozen=True)
class Inventory:
    """One inventory record as Placement shows it (amounts in the class's units)."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int | None = None  # None: total
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """``(total - reserved) * allocation_ratio``, rounded down as Placement does."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def as_dict(self) -> dict[str, Any]:
        """Placement's inventory JSON (without the generation)."""
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.total if self.max_unit is None else self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": self.allocation_ratio,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Inventory:
        """From Placement's inventory JSON (missing fields take Placement's defaults)."""
        total = int(data["total"])
        return cls(
            total=total,
            reserved=int(data.get("reserved", 0)),
            min_unit=int(data.get("min_unit", 1)),
            max_unit=int(data.get("max_unit", total)),
            step_size=int(data.get("step_size", 1)),
            allocation_ratio=float(data.get("allocation_ratio", 1.0)),
        )


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


def cell_provider_name(host: str, cell_id: int) -> str:
    """``<host>_NUMA<id>`` (Nova spec naming convention for NUMA cell providers)."""
    return f"{host}_NUMA{cell_id}"


def page_provider_name(host: str, cell_id: int, page_size_kb: int) -> str:
    """``<host>_NUMA<id>_PAGE_<KiB>KB`` (the spec leaves page-size provider names open)."""
    return f"{cell_provider_name(host, cell_id)}_PAGE_{page_size_kb}KB"


def page_size_trait(page_size_kb: int) -> str:
    """``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` (Nova spec)."""
    return f"{_PAGE_TRAIT_PREFIX}{page_size_kb}"


def page_size_from_traits(traits: frozenset[str]) -> int | None:
    """The page size in KiB named by a ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` trait, if any."""
    for trait in traits:
        if trait.startswith(_PAGE_TRAIT_PREFIX) and trait[len(_PAGE_TRAIT_PREFIX) :].isdigit():
            return int(trait[len(_PAGE_TRAIT_PREFIX) :])
    return None


def child_uuid(root_uuid: str, name: str) -> str:
    """A stable uuid for a planned child provider (uuid5 of the root uuid and the name)."""
    return str(uuid_lib.uuid5(_CHILD_NAMESPACE, f"{root_uuid}/{name}"))
