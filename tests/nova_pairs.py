"""Generated hosts and flavors for the differential test against Nova (pure, seeded).

A ``HostSpec`` is one compute node drawn at random (1, 2, 4 or 8 cells; SMT or not; dedicated and
shared CPUs; small, 2 MiB and 1 GiB pages; usage; RAM ratio 1.0 or 1.5; sometimes reserved host
memory). It turns into:

* the agent's view (``host_topology`` + ``host_policy``) from which ``desired_tree.build``, the
  agent's own tree code, makes the provider tree that is seeded over the API, plus the usage
  (``usage``: one consumer's allocations per provider path);
* Nova's view (``nova_host``): ``NUMACell`` fields as Nova's libvirt driver would report them
  (``memory`` is the cell's whole memory, huge pages included; ``siblings`` the thread sibling
  sets; ``mempages`` per page size with pages used), for ``tests/nova_oracle.py``.

A flavor is ``{"vcpus", "memory_mb", "extra_specs"}`` drawn over CPU policies (shared,
dedicated, mixed with masks, ``^`` masks included), ``hw:numa_nodes`` 1/2/4/8,
``hw:numa_cpus.N``/``hw:numa_mem.N`` (both, or one of them), page sizes (small, large, any, 2 MiB,
1 GiB), thread and emulator thread policies, and a few without NUMA request.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from placement_numa.agent.config import HostPolicy
from placement_numa.agent.sysfs import HostTopology, HugePagePool, NumaCell

__all__ = ["CellSpec", "HostSpec", "random_host", "random_flavor"]

HUGE_2M = 2048
HUGE_1G = 1048576


@dataclass
class CellSpec:
    """One host cell: CPU ids (dedicated and shared), siblings, memory by page size and usage."""

    id: int
    dedicated: list[int]
    shared: list[int]
    siblings: list[list[int]]
    small_mb: int
    huge_pages: dict[int, int] = field(default_factory=dict)  # KiB -> pages
    pinned: int = 0  # PCPUs used
    vcpu_used: int = 0
    small_used_mb: int = 0
    huge_used: dict[int, int] = field(default_factory=dict)  # KiB -> pages used
    pinned_ids: list[int] = field(default_factory=list)  # which PCPUs Nova sees pinned

    @property
    def memory_mb(self) -> int:
        return self.small_mb + sum(size // 1024 * n for size, n in self.huge_pages.items())


@dataclass
class HostSpec:
    name: str
    cells: list[CellSpec]
    smt: bool
    ram_ratio: float
    cpu_ratio: float
    reserved_mb: int = 0

    def host_topology(self) -> HostTopology:
        """The agent's discovery result for this host."""
        siblings: dict[int, frozenset[int]] = {}
        for cell in self.cells:
            for group in cell.siblings:
                for cpu in group:
                    siblings[cpu] = frozenset(group)
        cells = tuple(
            NumaCell(
                id=c.id,
                cpus=frozenset(c.dedicated + c.shared),
                memory_kb=c.memory_mb * 1024,
                hugepages=tuple(
                    HugePagePool(size, n, n - c.huge_used.get(size, 0))
                    for size, n in sorted(c.huge_pages.items())
                ),
            )
            for c in self.cells
        )
        n = len(cells)
        distances = tuple(tuple(10 if a == b else 20 for b in range(n)) for a in range(n))
        return HostTopology(cells, distances, siblings, 4)

    def host_policy(self) -> HostPolicy:
        """The agent's settings for this host."""
        return HostPolicy(
            hostname=self.name,
            pcpus=frozenset(cpu for c in self.cells for cpu in c.dedicated),
            vcpus=frozenset(cpu for c in self.cells for cpu in c.shared),
            reserved_host_memory_mb=self.reserved_mb,
            cpu_allocation_ratio=self.cpu_ratio,
            ram_allocation_ratio=self.ram_ratio,
            disk_gb=100,
        )

    def usage(self) -> dict[str, dict[str, int]]:
        """``{provider path: {class: amount}}`` of the host's existing guests."""
        used: dict[str, dict[str, int]] = {}
        for c in self.cells:
            cpu = {rc: n for rc, n in (("PCPU", c.pinned), ("VCPU", c.vcpu_used)) if n}
            if cpu:
                used[f"NUMA{c.id}"] = cpu
            if c.small_used_mb:
                used[f"NUMA{c.id}/PAGE_4KB"] = {"MEMORY_MB": c.small_used_mb}
            for size, n in c.huge_used.items():
                if n:
                    used[f"NUMA{c.id}/PAGE_{size}KB"] = {"MEMORY_MB": n * (size // 1024)}
        return used

    def nova_host(self) -> dict[str, Any]:
        """Nova's ``NUMATopology`` of this host as the oracle reads it."""
        cells = []
        for c in self.cells:
            pages = [{"size_kb": 4, "total": c.small_mb * 256, "used": c.small_used_mb * 256}]
            pages += [
                {"size_kb": size, "total": n, "used": c.huge_used.get(size, 0)}
                for size, n in sorted(c.huge_pages.items())
            ]
            memory_usage = c.small_used_mb + sum(
                size // 1024 * n for size, n in c.huge_used.items()
            )
            cells.append(
                {
                    "id": c.id,
                    "cpuset": c.shared,
                    "pcpuset": c.dedicated,
                    "memory": c.memory_mb,
                    "cpu_usage": c.vcpu_used,
                    "memory_usage": memory_usage,
                    "pinned_cpus": sorted(c.pinned_ids or c.dedicated[: c.pinned]),
                    "siblings": c.siblings,
                    "mempages": [{**p, "reserved": 0} for p in pages],
                }
            )
        return {
            "cells": cells,
            "cpu_allocation_ratio": self.cpu_ratio,
            "ram_allocation_ratio": self.ram_ratio,
        }


def random_host(rng: random.Random, name: str) -> HostSpec:
    """One random host (see the module docstring)."""
    count = rng.choice([1, 1, 2, 2, 4, 8])
    smt = rng.random() < 0.5
    cores = rng.choice([2, 3, 4, 6, 8])
    threads = 2 if smt else 1
    per_cell = cores * threads
    split = rng.choice(["dedicated", "shared", "both", "both"])
    cells: list[CellSpec] = []
    for index in range(count):
        first = index * per_cell
        core_ids = [[first + k * threads + t for t in range(threads)] for k in range(cores)]
        cpus = [cpu for core in core_ids for cpu in core]
        if split == "dedicated":
            dedicated, shared = cpus, []
        elif split == "shared":
            dedicated, shared = [], cpus
        else:
            cut = rng.randint(1, cores - 1) * threads
            dedicated, shared = cpus[:cut], cpus[cut:]
        small_mb = rng.choice([2048, 4096, 8192, 16384])
        huge: dict[int, int] = {}
        if rng.random() < 0.4:
            huge[HUGE_2M] = rng.choice([512, 1024, 2048, 4096])
        if rng.random() < 0.25:
            huge[HUGE_1G] = rng.choice([1, 2, 4])
        cell = CellSpec(index, dedicated, shared, core_ids, small_mb, huge)
        if rng.random() < 0.4:
            cell.pinned = rng.randint(0, len(dedicated))
            cell.pinned_ids = sorted(rng.sample(dedicated, cell.pinned))
            cell.vcpu_used = rng.randint(0, len(shared))  # one consumer: max_unit = total
            cell.small_used_mb = rng.choice([0, 512, 1024, small_mb // 2, small_mb - 512])
            cell.huge_used = {size: rng.randint(0, n) for size, n in huge.items()}
        cells.append(cell)
    ram_ratio = rng.choice([1.0, 1.5])
    cpu_ratio = rng.choice([1.0, 4.0])
    reserved = 512 if rng.random() < 0.1 else 0
    return HostSpec(name, cells, smt, ram_ratio, cpu_ratio, reserved)


def _split(total: int, parts: int, rng: random.Random, unit: int = 1) -> list[int]:
    """``total`` split into ``parts`` positive multiples of ``unit`` (uneven)."""
    chunks = total // unit
    cuts = sorted(rng.sample(range(1, chunks), parts - 1)) if parts > 1 else []
    bounds = [0, *cuts, chunks]
    return [(bounds[i + 1] - bounds[i]) * unit for i in range(parts)]


def _cpu_list(cpus: list[int]) -> str:
    text = ",".join(str(c) for c in cpus)
    return text


def random_flavor(rng: random.Random) -> dict[str, Any]:
    """One random flavor (see the module docstring)."""
    vcpus = rng.choice([1, 2, 2, 3, 4, 4, 6, 8])
    memory = rng.choice([512, 1024, 2048, 2048, 3072, 4096, 6144])
    specs: dict[str, str] = {}
    policy = rng.choice([None, None, "shared", "dedicated", "dedicated", "mixed"])
    if policy == "mixed" and vcpus < 2:
        vcpus = 2
    if policy:
        specs["hw:cpu_policy"] = policy
    if policy == "mixed":
        if rng.random() < 0.4:
            excluded = rng.sample(range(vcpus), rng.randint(1, vcpus - 1))
            specs["hw:cpu_dedicated_mask"] = ",".join(f"^{c}" for c in sorted(excluded))
        else:
            chosen = rng.sample(range(vcpus), rng.randint(1, vcpus - 1))
            specs["hw:cpu_dedicated_mask"] = _cpu_list(sorted(chosen))
    if policy in ("dedicated", "mixed"):
        thread = rng.choice([None, None, "prefer", "require", "isolate"])
        if thread:
            specs["hw:cpu_thread_policy"] = thread
        if rng.random() < 0.2:
            specs["hw:emulator_threads_policy"] = "isolate"
    nodes = rng.choice([None, None, 1, 2, 2, 4, 8])
    if nodes is not None and nodes <= vcpus:
        specs["hw:numa_nodes"] = str(nodes)
        style = rng.choice(["even", "even", "even", "both", "both", "both", "cpus", "mem"])
        if style in ("both", "cpus") and nodes > 1:
            order = list(range(vcpus))
            rng.shuffle(order)
            sizes = _split(vcpus, nodes, rng)
            start = 0
            for cell, size in enumerate(sizes):
                specs[f"hw:numa_cpus.{cell}"] = _cpu_list(sorted(order[start : start + size]))
                start += size
        if style in ("both", "mem") and nodes > 1 and memory // 256 >= nodes:
            for cell, amount in enumerate(_split(memory, nodes, rng, 256)):
                specs[f"hw:numa_mem.{cell}"] = str(amount)
        if style == "even" and (vcpus % nodes or memory % nodes):
            specs["hw:numa_nodes"] = "1"
    page = rng.choice([None, None, None, "small", "large", "any", "2MB", "1GB", "2048"])
    if page:
        specs["hw:mem_page_size"] = page
        if page == "1GB":
            memory = max(1024, memory // 1024 * 1024) * (int(specs.get("hw:numa_nodes", "1")))
            for key in [k for k in specs if k.startswith("hw:numa_mem.")]:
                del specs[key]
    return {"vcpus": vcpus, "memory_mb": memory, "extra_specs": specs}
