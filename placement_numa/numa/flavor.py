"""Nova flavors and image properties as plain frozen values (no pydantic: the API layer
validates JSON shapes; this module only normalises).

Units: ``memory_mb`` and ``swap`` in MiB, ``root_gb`` and ``ephemeral_gb`` in GiB, ``vcpus`` in
guest CPUs. ``extra_specs`` and image ``properties`` are string -> string (numbers given as JSON
numbers are turned into their decimal text, as Nova stores them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["Flavor", "ImageProperties"]


def _text_mapping(values: Mapping[str, Any] | None) -> Mapping[str, str]:
    items: dict[str, str] = {}
    for key, value in (values or {}).items():
        if isinstance(value, bool):
            items[str(key)] = "true" if value else "false"
        else:
            items[str(key)] = str(value)
    return MappingProxyType(items)


@dataclass(frozen=True)
class Flavor:
    """A Nova flavor: sizes and ``extra_specs`` (``hw:*``, ``resources[$S]:*``,
    ``trait[$S]:*``, ``group_policy``)."""

    vcpus: int
    memory_mb: int
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap: int = 0
    extra_specs: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_specs", _text_mapping(self.extra_specs))

    @property
    def disk_gb(self) -> int:
        """``DISK_GB`` the flavor asks for: root + ephemeral + swap rounded up to GiB (as Nova)."""
        return self.root_gb + self.ephemeral_gb + (self.swap + 1023) // 1024

    def spec(self, key: str) -> str | None:
        """The extra spec ``key`` (``None`` when absent)."""
        return self.extra_specs.get(key)


@dataclass(frozen=True)
class ImageProperties:
    """Glance image properties relevant to NUMA (``hw_numa_nodes``, ``hw_numa_cpus.N``,
    ``hw_numa_mem.N``, ``hw_mem_page_size``, ``hw_cpu_policy``, ``hw_cpu_thread_policy``)."""

    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", _text_mapping(self.properties))

    def prop(self, key: str) -> str | None:
        """The image property ``key`` (``None`` when absent)."""
        return self.properties.get(key)
