"""The NUMA provider tree of a compute node: provider names, page-size traits and the inventory
record used to describe the tree (pure; shared by the agent's desired tree and the reshape planner).

Tree and names (Nova spec "NUMA Topology with Resource Providers")::

    <host>                          compute node (root)
    ├── <host>_NUMA0                NUMA cell: VCPU, PCPU; trait HW_NUMA_ROOT
    │   ├── <host>_NUMA0_PAGE_4KB   page size: MEMORY_MB (MiB); MEMORY_PAGE_SIZE_SMALL,
    │   │                           CUSTOM_MEMORY_PAGE_SIZE_4
    │   └── <host>_NUMA0_PAGE_2048KB  MEMORY_MB (step_size 2 MiB, one page);
    │                               MEMORY_PAGE_SIZE_LARGE, CUSTOM_MEMORY_PAGE_SIZE_2048
    └── <host>_NUMA1 ...

The spec names cell providers ``<host>_NUMA<id>`` and page-size traits
``CUSTOM_MEMORY_PAGE_SIZE_<KiB>``; it leaves page-size provider names open (ours:
``<host>_NUMA<id>_PAGE_<KiB>KB``). Units: page sizes in KiB, ``MEMORY_MB`` in MiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import os_traits

from placement_numa.domain.inventory import capacity

__all__ = [
    "HW_NUMA_ROOT",
    "device_provider_name",
    "PAGE_SIZE_SMALL",
    "PAGE_SIZE_LARGE",
    "PAGE_TRAIT_PREFIX",
    "Inventory",
    "cell_provider_name",
    "page_provider_name",
    "page_size_trait",
    "page_size_from_traits",
]

HW_NUMA_ROOT = os_traits.HW_NUMA_ROOT
PAGE_SIZE_SMALL = "MEMORY_PAGE_SIZE_SMALL"
PAGE_SIZE_LARGE = "MEMORY_PAGE_SIZE_LARGE"
PAGE_TRAIT_PREFIX = "CUSTOM_MEMORY_PAGE_SIZE_"


@dataclass(frozen=True)
class Inventory:
    """One inventory record as Placement shows it (amounts in the class's units: CPUs, MiB, GB);
    ``max_unit`` None means ``total``."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int | None = None
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """``int((total - reserved) * allocation_ratio)``, Placement's rule
        (``placement_numa.domain.inventory.capacity``)."""
        return capacity(self.total, self.reserved, self.allocation_ratio)

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
        """From Placement's inventory JSON; missing fields take Placement's defaults. Raises
        ``KeyError`` without ``total``, ``ValueError``/``TypeError`` on non-numbers."""
        total = int(data["total"])
        return cls(
            total=total,
            reserved=int(data.get("reserved", 0)),
            min_unit=int(data.get("min_unit", 1)),
            max_unit=int(data.get("max_unit", total)),
            step_size=int(data.get("step_size", 1)),
            allocation_ratio=float(data.get("allocation_ratio", 1.0)),
        )

    def same_as(self, other: Inventory) -> bool:
        """Equal as Placement stores them (ratios compared to 1e-6, max_unit resolved)."""
        mine, theirs = self.as_dict(), other.as_dict()
        ratio_close = abs(mine.pop("allocation_ratio") - theirs.pop("allocation_ratio")) < 1e-6
        return ratio_close and mine == theirs


def cell_provider_name(host: str, cell_id: int) -> str:
    """``<host>_NUMA<id>`` (Nova spec naming of NUMA cell providers)."""
    return f"{host}_NUMA{cell_id}"


def device_provider_name(host: str, address: str) -> str:
    """Nova's name of a PCI device provider (``<host>_<PCI address>``): the agent names its
    device providers so, and the reshape planner finds Nova's by it."""
    return f"{host}_{address}"


def page_provider_name(host: str, cell_id: int, page_size_kb: int) -> str:
    """``<host>_NUMA<id>_PAGE_<KiB>KB`` (the spec leaves page-size provider names open)."""
    return f"{cell_provider_name(host, cell_id)}_PAGE_{page_size_kb}KB"


def page_size_trait(page_size_kb: int) -> str:
    """``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` (Nova spec)."""
    return f"{PAGE_TRAIT_PREFIX}{page_size_kb}"


def page_size_from_traits(traits: frozenset[str]) -> int | None:
    """The page size in KiB named by a ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` trait, if any."""
    for trait in traits:
        if trait.startswith(PAGE_TRAIT_PREFIX) and trait[len(PAGE_TRAIT_PREFIX) :].isdigit():
            return int(trait[len(PAGE_TRAIT_PREFIX) :])
    return None
