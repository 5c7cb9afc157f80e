"""The target NUMA topology of a reshape, read from a JSON document (pure).

Shape (units: CPUs as counts, memory in MiB, page sizes in KiB, distances as the kernel's SLIT)::

    {
      "cells": [
        {"id": 0, "pcpus": 8, "vcpus": 8,
         "memory_mb": {"4": 30720, "2048": 2048},       # MiB per page size (KiB)
         "reserved": {"MEMORY_MB": 512, "VCPU": 0},      # optional; MEMORY_MB: small pages
         "devices": ["0000:81:00.0"]},                   # optional: PCI addresses on the cell
        {"id": 1, "pcpus": 8, "vcpus": 8, "memory_mb": {"4": 32768}}
      ],
      "distances": [[10, 21], [21, 10]],                 # optional; row/column per cell, in order
      "small_page_size_kb": 4,                           # optional, default 4
      "consumers": {"<uuid>": {"page_size_kb": 2048, "numa_nodes": 2}}   # optional hints
    }

``parse_topology`` validates it and raises ``TopologyInvalid`` naming the offending field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placement_numa.reshape.errors import TopologyInvalid

__all__ = ["PageSize", "CellSpec", "ConsumerHint", "Topology", "parse_topology"]


@dataclass(frozen=True)
class PageSize:
    """Memory of one page size on one cell: ``memory_mb`` MiB of ``size_kb`` KiB pages."""

    size_kb: int
    memory_mb: int
    reserved_mb: int = 0

    @property
    def step_mb(self) -> int:
        """The smallest allocatable amount in MiB: one page, at least 1 MiB (Nova spec)."""
        return max(1, self.size_kb // 1024)


@dataclass(frozen=True)
class CellSpec:
    """One host NUMA cell: dedicated (``pcpus``) and shared (``vcpus``) CPUs, memory by page
    size, and the PCI addresses of the devices on it (their providers, ``<host>_<address>`` as
    Nova names them, move under the cell: ``reshape.devices``)."""

    id: int
    pcpus: int
    vcpus: int
    pages: tuple[PageSize, ...]
    reserved_pcpus: int = 0
    reserved_vcpus: int = 0
    devices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerHint:
    """What is known of a consumer beyond its allocation: page size (KiB), guest NUMA cells."""

    page_size_kb: int | None = None
    numa_nodes: int | None = None


@dataclass(frozen=True)
class Topology:
    """The target topology: cells in id order, optional distances, small page size, hints."""

    cells: tuple[CellSpec, ...]
    distances: tuple[tuple[int, ...], ...] | None = None
    small_page_size_kb: int = 4
    hints: Mapping[str, ConsumerHint] = field(default_factory=dict)

    def distance_document(self) -> dict[str, Any] | None:
        """``{"cells": [ids], "distances": [[...]]}`` or ``None`` when no matrix was given."""
        if self.distances is None:
            return None
        return {"cells": [c.id for c in self.cells], "distances": [list(r) for r in self.distances]}


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TopologyInvalid(f"{where} must be an integer >= {minimum}, got {value!r}")
    return value


def _cell(data: Any, index: int, small_kb: int) -> CellSpec:
    where = f"cells[{index}]"
    if not isinstance(data, Mapping):
        raise TopologyInvalid(f"{where} must be an object")
    unknown = set(data) - {"id", "pcpus", "vcpus", "memory_mb", "reserved", "devices"}
    if unknown:
        raise TopologyInvalid(f"{where} has unknown keys {sorted(unknown)}")
    cell_id = _int(data.get("id", index), f"{where}.id")
    memory = data.get("memory_mb", {})
    if not isinstance(memory, Mapping):
        raise TopologyInvalid(f"{where}.memory_mb must map page sizes (KiB) to MiB")
    reserved = data.get("reserved", {})
    if not isinstance(reserved, Mapping) or set(reserved) - {"PCPU", "VCPU", "MEMORY_MB"}:
        raise TopologyInvalid(f"{where}.reserved may only name PCPU, VCPU and MEMORY_MB")
    reserved_mb = _int(reserved.get("MEMORY_MB", 0), f"{where}.reserved.MEMORY_MB")
    pages = []
    for key, amount in sorted(
        memory.items(), key=lambda kv: int(str(kv[0])) if str(kv[0]).isdigit() else -1
    ):
        if not str(key).isdigit() or int(key) < 4:
            raise TopologyInvalid(f"{where}.memory_mb: page size {key!r} is not a size in KiB")
        size_kb = int(key)
        page = PageSize(size_kb, _int(amount, f"{where}.memory_mb.{key}"))
        if page.memory_mb % page.step_mb:
            raise TopologyInvalid(
                f"{where}.memory_mb.{key}: {page.memory_mb} MiB is not a whole number of"
                f" {size_kb} KiB pages"
            )
        if size_kb == small_kb:
            page = PageSize(size_kb, page.memory_mb, reserved_mb)
        pages.append(page)
    if reserved_mb and small_kb not in {p.size_kb for p in pages}:
        raise TopologyInvalid(f"{where}.reserved.MEMORY_MB needs small pages ({small_kb} KiB)")
    cell = CellSpec(
        id=cell_id,
        pcpus=_int(data.get("pcpus", 0), f"{where}.pcpus"),
        vcpus=_int(data.get("vcpus", 0), f"{where}.vcpus"),
        pages=tuple(pages),
        reserved_pcpus=_int(reserved.get("PCPU", 0), f"{where}.reserved.PCPU"),
        reserved_vcpus=_int(reserved.get("VCPU", 0), f"{where}.reserved.VCPU"),
        devices=_addresses(data.get("devices", []), f"{where}.devices"),
    )
    for page in cell.pages:
        if page.reserved_mb > page.memory_mb:
            raise TopologyInvalid(f"{where}.reserved.MEMORY_MB exceeds its small-page memory")
    if cell.reserved_pcpus > cell.pcpus or cell.reserved_vcpus > cell.vcpus:
        raise TopologyInvalid(f"{where}.reserved CPUs exceed the cell's CPUs")
    return cell


def _addresses(data: Any, where: str) -> tuple[str, ...]:
    if not isinstance(data, list) or not all(isinstance(a, str) and a for a in data):
        raise TopologyInvalid(f"{where} must be a list of PCI addresses")
    return tuple(data)


def _distances(data: Any, count: int) -> tuple[tuple[int, ...], ...] | None:
    if data is None:
        return None
    if not isinstance(data, list) or len(data) != count:
        raise TopologyInvalid(f"distances must be a list of {count} rows (one per cell)")
    rows = []
    for i, row in enumerate(data):
        if not isinstance(row, list) or len(row) != count:
            raise TopologyInvalid(f"distances[{i}] must have {count} entries")
        values = tuple(_int(v, f"distances[{i}]", 10) for v in row)
        if values[i] != 10 or any(v > 254 for v in values):
            raise TopologyInvalid(f"distances[{i}]: the diagonal is 10 and entries are 10-254")
        rows.append(values)
    return tuple(rows)


def parse_topology(data: Any) -> Topology:
    """Validate a topology document (shape in the module docstring) into a ``Topology``.

    Raises ``TopologyInvalid`` for a missing or empty cell list, duplicate cell ids, negative
    amounts, memory that is not a whole number of pages, a malformed distance matrix or hint.
    """
    if not isinstance(data, Mapping):
        raise TopologyInvalid("the topology must be a JSON object")
    unknown = set(data) - {"cells", "distances", "small_page_size_kb", "consumers"}
    if unknown:
        raise TopologyInvalid(f"unknown topology keys {sorted(unknown)}")
    small_kb = _int(data.get("small_page_size_kb", 4), "small_page_size_kb", 4)
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        raise TopologyInvalid("cells must be a non-empty list")
    cells = tuple(_cell(c, i, small_kb) for i, c in enumerate(raw_cells))
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise TopologyInvalid(f"cell ids must be unique, got {ids}")
    hints: dict[str, ConsumerHint] = {}
    raw_hints = data.get("consumers", {})
    if not isinstance(raw_hints, Mapping):
        raise TopologyInvalid("consumers must map consumer uuids to hints")
    for consumer, hint in raw_hints.items():
        if not isinstance(hint, Mapping) or set(hint) - {"page_size_kb", "numa_nodes"}:
            raise TopologyInvalid(f"consumers.{consumer}: hints are page_size_kb and numa_nodes")
        page = hint.get("page_size_kb")
        nodes = hint.get("numa_nodes")
        hints[str(consumer)] = ConsumerHint(
            page_size_kb=None
            if page is None
            else _int(page, f"consumers.{consumer}.page_size_kb", 4),
            numa_nodes=None
            if nodes is None
            else _int(nodes, f"consumers.{consumer}.numa_nodes", 1),
        )
    return Topology(
        cells=cells,
        distances=_distances(data.get("distances"), len(cells)),
        small_page_size_kb=small_kb,
        hints=hints,
    )
