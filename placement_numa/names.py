"""Standard and custom names of traits and resource classes.

Standard names come from the ``os-traits`` and ``os-resource-classes`` packages. placement-numa
adds three standard traits of its own (documented API extensions), used by the NUMA model of the
Nova spec "NUMA Topology with Resource Providers":

* ``MEMORY_PAGE_SIZE_SMALL``: a page-size provider of the kernel's default (small) pages;
* ``MEMORY_PAGE_SIZE_LARGE``: a page-size provider of huge pages;
* ``HW_NON_NUMA``: a compute node that opted out of NUMA reporting (never gets NUMA flavors
  through the non-reshaped fallback).
"""

from __future__ import annotations

import re

import os_resource_classes
import os_traits

__all__ = [
    "CUSTOM_NAME_RE",
    "EXTENSION_TRAITS",
    "standard_traits",
    "standard_resource_classes",
    "is_custom",
]

CUSTOM_NAME_RE = re.compile(r"^CUSTOM_[A-Z0-9_]+$")

EXTENSION_TRAITS: tuple[str, ...] = (
    "MEMORY_PAGE_SIZE_SMALL",
    "MEMORY_PAGE_SIZE_LARGE",
    "HW_NON_NUMA",
)


def standard_traits() -> list[str]:
    """All standard trait names: os-traits' plus placement-numa's extensions, sorted."""
    return sorted(set(os_traits.get_traits()) | set(EXTENSION_TRAITS))


def standard_resource_classes() -> list[str]:
    """Standard resource class names in os-resource-classes order (the order fixes their ids)."""
    return list(os_resource_classes.STANDARDS)


def is_custom(name: str) -> bool:
    """True when ``name`` is a well-formed custom trait or resource class name."""
    return CUSTOM_NAME_RE.match(name) is not None
