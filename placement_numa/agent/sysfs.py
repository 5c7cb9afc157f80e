"""Discover a Linux host's NUMA topology from sysfs (root injectable; ``/sys`` by default).

Files read, relative to the sysfs root::

    devices/system/node/node<N>/cpulist                       CPUs of cell N (cpulist syntax)
    devices/system/node/node<N>/distance                      distances to every cell, in id order
    devices/system/node/node<N>/meminfo                       "Node N MemTotal: <KiB> kB"
    devices/system/node/node<N>/hugepages/hugepages-<KiB>kB/{nr_hugepages,free_hugepages}
    devices/system/cpu/cpu<N>/topology/thread_siblings_list   SMT siblings of CPU N
    devices/system/cpu/cpu<N>/topology/physical_package_id    socket of CPU N (the cell's socket
                                                              is its first CPU's)
    bus/pci/devices/*                                         PCI devices (``agent.pci``)

A host without ``node<N>`` directories (a kernel built without NUMA, some VMs) is one cell 0:
its CPUs from ``devices/system/cpu/online`` (or the ``cpu<N>`` directories), its memory from
``<proc>/meminfo`` (``proc_root``; by default the ``proc`` directory beside the sysfs root, so
``/proc`` for ``/sys``), its huge pages from ``kernel/mm/hugepages``, distance 10 to itself.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path

from placement_numa.agent.pci import PciDevice, discover_pci
from placement_numa.agent.sysfs_files import SysfsError, read_sysfs
from placement_numa.numa.cpu_spec import CpuSpecError, parse_cpu_spec

__all__ = [
    "SysfsError",
    "HugePagePool",
    "NumaCell",
    "HostTopology",
    "discover",
    "LOCAL_DISTANCE",
]

LOCAL_DISTANCE = 10  # ACPI SLIT: distance of a cell to itself.

_NODE_DIR = re.compile(r"^node(\d+)$")
_CPU_DIR = re.compile(r"^cpu(\d+)$")
_HUGEPAGES_DIR = re.compile(r"^hugepages-(\d+)kB$")
_MEMTOTAL = re.compile(r"MemTotal:\s*(\d+)\s*kB")


@dataclass(frozen=True)
class HugePagePool:
    """The huge pages of one size on one cell: ``total`` (nr_hugepages) and ``free`` pages."""

    size_kb: int
    total: int
    free: int

    @property
    def memory_kb(self) -> int:
        """KiB held by the pool's pages."""
        return self.size_kb * self.total


@dataclass(frozen=True)
class NumaCell:
    """One NUMA cell: its id, CPUs, total memory (KiB, MemTotal), huge page pools by size and
    socket (``physical_package_id`` of its first CPU; ``None`` when unknown or CPU-less)."""

    id: int
    cpus: frozenset[int]
    memory_kb: int
    hugepages: tuple[HugePagePool, ...] = ()
    socket: int | None = None

    @property
    def hugepage_memory_kb(self) -> int:
        """KiB of the cell's memory held by huge pages of every size."""
        return sum(pool.memory_kb for pool in self.hugepages)


@dataclass(frozen=True)
class HostTopology:
    """What discovery found: cells (ascending id), the distance matrix (rows and columns in the
    order of ``cells``), SMT siblings per CPU, the kernel's small page size in KiB and the PCI
    devices (``agent.pci.PciDevice``)."""

    cells: tuple[NumaCell, ...]
    distances: tuple[tuple[int, ...], ...]
    thread_siblings: dict[int, frozenset[int]] = field(default_factory=dict)
    small_page_kb: int = 4
    pci_devices: tuple[PciDevice, ...] = ()

    @property
    def cpus(self) -> frozenset[int]:
        """Every CPU of the host."""
        return frozenset().union(*(cell.cpus for cell in self.cells))

    def cell_of(self, cpu: int) -> int:
        """The id of the cell holding ``cpu``; ``KeyError`` when the host has no such CPU."""
        for cell in self.cells:
            if cpu in cell.cpus:
                return cell.id
        raise KeyError(cpu)

    def has_smt(self, cpus: frozenset[int]) -> bool:
        """True when any of ``cpus`` shares its core with another CPU (SMT, hyperthreading)."""
        return any(len(self.thread_siblings.get(cpu, frozenset((cpu,)))) > 1 for cpu in cpus)

    def distance(self, from_cell: int, to_cell: int) -> int:
        """The distance between two cells by id (10 means local)."""
        ids = [cell.id for cell in self.cells]
        return self.distances[ids.index(from_cell)][ids.index(to_cell)]


def _read_int(path: Path) -> int:
    text = read_sysfs(path).strip()
    try:
        return int(text)
    except ValueError as exc:
        raise SysfsError(f"{path} holds {text!r}, not an integer") from exc


def _read_cpulist(path: Path) -> frozenset[int]:
    try:
        return parse_cpu_spec(read_sysfs(path).strip())
    except CpuSpecError as exc:
        raise SysfsError(f"{path}: {exc}") from exc


def _memtotal_kb(path: Path) -> int:
    match = _MEMTOTAL.search(read_sysfs(path))
    if match is None:
        raise SysfsError(f"{path} has no 'MemTotal: <n> kB' line")
    return int(match.group(1))


def _hugepages(directory: Path) -> tuple[HugePagePool, ...]:
    if not directory.is_dir():
        return ()
    pools = []
    for entry in directory.iterdir():
        match = _HUGEPAGES_DIR.match(entry.name)
        if match is None:
            continue
        pools.append(
            HugePagePool(
                size_kb=int(match.group(1)),
                total=_read_int(entry / "nr_hugepages"),
                free=_read_int(entry / "free_hugepages"),
            )
        )
    return tuple(sorted(pools, key=lambda pool: pool.size_kb))


def _numbered(directory: Path, pattern: re.Pattern[str]) -> dict[int, Path]:
    if not directory.is_dir():
        return {}
    found = {}
    for entry in directory.iterdir():
        match = pattern.match(entry.name)
        if match is not None and entry.is_dir():
            found[int(match.group(1))] = entry
    return dict(sorted(found.items()))


def _host_cpus(sysfs: Path) -> frozenset[int]:
    online = sysfs / "devices/system/cpu/online"
    if online.exists():
        return _read_cpulist(online)
    cpus = frozenset(_numbered(sysfs / "devices/system/cpu", _CPU_DIR))
    if not cpus:
        raise SysfsError(f"no CPUs under {sysfs / 'devices/system/cpu'}")
    return cpus


def _thread_siblings(sysfs: Path, cpus: frozenset[int]) -> dict[int, frozenset[int]]:
    siblings = {}
    for cpu in sorted(cpus):
        path = sysfs / f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
        siblings[cpu] = _read_cpulist(path) if path.exists() else frozenset((cpu,))
    return siblings


def _socket(sysfs: Path, cpus: frozenset[int]) -> int | None:
    """``physical_package_id`` of the first of ``cpus`` (``None``: no CPU or no file)."""
    if not cpus:
        return None
    path = sysfs / f"devices/system/cpu/cpu{min(cpus)}/topology/physical_package_id"
    if not path.exists():
        return None
    value = _read_int(path)
    return value if value >= 0 else None


def _numa_cells(
    sysfs: Path, nodes: dict[int, Path]
) -> tuple[tuple[NumaCell, ...], tuple[tuple[int, ...], ...]]:
    cells = []
    distances = []
    for node_id, path in nodes.items():
        cpus = _read_cpulist(path / "cpulist")
        cells.append(
            NumaCell(
                id=node_id,
                cpus=cpus,
                memory_kb=_memtotal_kb(path / "meminfo"),
                hugepages=_hugepages(path / "hugepages"),
                socket=_socket(sysfs, cpus),
            )
        )
        row_text = read_sysfs(path / "distance").split()
        try:
            row = tuple(int(value) for value in row_text)
        except ValueError as exc:
            raise SysfsError(f"{path / 'distance'} is not a list of integers") from exc
        if len(row) != len(nodes):
            raise SysfsError(
                f"{path / 'distance'} lists {len(row)} distances for {len(nodes)} cells"
            )
        distances.append(row)
    return tuple(cells), tuple(distances)


def discover(
    sysfs_root: Path | str = "/sys",
    *,
    proc_root: Path | str | None = None,
    small_page_kb: int | None = None,
) -> HostTopology:
    """Read the host's NUMA topology under ``sysfs_root``.

    ``small_page_kb`` is the kernel's base page size in KiB (the running kernel's by default);
    ``proc_root`` is only read on a host without NUMA cells (see the module docstring).
    Raises ``SysfsError`` naming the file that is missing or malformed.
    """
    sysfs = Path(sysfs_root)
    page_kb = small_page_kb if small_page_kb is not None else mmap.PAGESIZE // 1024
    nodes = _numbered(sysfs / "devices/system/node", _NODE_DIR)
    if nodes:
        cells, distances = _numa_cells(sysfs, nodes)
    else:
        proc = Path(proc_root) if proc_root is not None else sysfs.parent / "proc"
        cpus = _host_cpus(sysfs)
        cells = (
            NumaCell(
                id=0,
                cpus=cpus,
                memory_kb=_memtotal_kb(proc / "meminfo"),
                hugepages=_hugepages(sysfs / "kernel/mm/hugepages"),
                socket=_socket(sysfs, cpus),
            ),
        )
        distances = ((LOCAL_DISTANCE,),)
    all_cpus = frozenset().union(*(cell.cpus for cell in cells))
    return HostTopology(
        cells=cells,
        distances=distances,
        thread_siblings=_thread_siblings(sysfs, all_cpus),
        small_page_kb=page_kb,
        pci_devices=discover_pci(sysfs),
    )
