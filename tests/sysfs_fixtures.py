"""Builders of sysfs trees of real machine shapes under a temporary directory.

Each builder writes ``<base>/sys/...`` (and ``<base>/proc/meminfo`` for hosts without NUMA
directories) and returns the sysfs root to pass to ``placement_numa.agent.sysfs.discover``.
CPU numbering follows what Linux shows on such machines (first threads of all cores, then the
second threads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from placement_numa.numa.cpu_spec import format_cpu_spec

__all__ = [
    "Cell",
    "build_numa_host",
    "build_flat_host",
    "set_hugepages",
    "two_socket_intel",
    "amd_epyc_nps4",
    "uneven_hugepages",
    "one_cell_vm",
    "add_pci_device",
    "set_sockets",
    "devices_host",
    "HUGE_2M",
    "HUGE_1G",
]

HUGE_2M = 2048
HUGE_1G = 1048576
GiB_KB = 1024 * 1024


@dataclass
class Cell:
    """One cell to write: CPU ids, memory (KiB) and ``{page KiB: (nr_hugepages, free)}``."""

    cpus: Sequence[int]
    memory_kb: int
    hugepages: Mapping[int, tuple[int, int]] = field(default_factory=dict)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _write_pools(
    directory: Path, pools: Mapping[int, tuple[int, int]], sizes: Sequence[int]
) -> None:
    for size_kb in sizes:
        total, free = pools.get(size_kb, (0, 0))
        _write(directory / f"hugepages-{size_kb}kB/nr_hugepages", f"{total}\n")
        _write(directory / f"hugepages-{size_kb}kB/free_hugepages", f"{free}\n")


def _write_cpus(sys: Path, siblings: Mapping[int, Sequence[int]]) -> None:
    _write(sys / "devices/system/cpu/online", format_cpu_spec(siblings) + "\n")
    for cpu, group in siblings.items():
        _write(
            sys / f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list",
            format_cpu_spec(group) + "\n",
        )


def build_numa_host(
    base: Path,
    cells: Sequence[Cell],
    distances: Sequence[Sequence[int]],
    *,
    threads_per_core: int = 1,
    page_sizes: Sequence[int] = (HUGE_2M, HUGE_1G),
) -> Path:
    """A NUMA host: ``node<i>`` per cell. With ``threads_per_core`` 2 the CPUs of the host split
    in halves: CPU n and CPU n + N/2 are siblings (Linux's numbering on x86)."""
    sys = base / "sys"
    all_cpus = sorted(cpu for cell in cells for cpu in cell.cpus)
    half = len(all_cpus) // 2
    siblings: dict[int, list[int]] = {}
    for cpu in all_cpus:
        if threads_per_core == 2:
            pair = cpu + half if cpu < half else cpu - half
            siblings[cpu] = sorted((cpu, pair))
        else:
            siblings[cpu] = [cpu]
    _write_cpus(sys, siblings)
    for index, cell in enumerate(cells):
        node = sys / f"devices/system/node/node{index}"
        _write(node / "cpulist", format_cpu_spec(cell.cpus) + "\n")
        _write(node / "distance", " ".join(str(d) for d in distances[index]) + "\n")
        _write(
            node / "meminfo",
            f"Node {index} MemTotal:       {cell.memory_kb} kB\n"
            f"Node {index} MemFree:        {cell.memory_kb // 2} kB\n",
        )
        _write_pools(node / "hugepages", cell.hugepages, page_sizes)
    _write(sys / "devices/system/node/online", f"0-{len(cells) - 1}\n")
    return sys


def build_flat_host(
    base: Path, *, cpus: int, memory_kb: int, page_sizes: Sequence[int] = (HUGE_2M,)
) -> Path:
    """A host without ``node<N>`` directories (one cell): CPUs, ``proc/meminfo``, global huge
    pages."""
    sys = base / "sys"
    _write_cpus(sys, {cpu: [cpu] for cpu in range(cpus)})
    _write(
        base / "proc/meminfo", f"MemTotal:       {memory_kb} kB\nMemFree:  {memory_kb // 2} kB\n"
    )
    _write_pools(sys / "kernel/mm/hugepages", {}, page_sizes)
    return sys


def set_hugepages(sys: Path, node: int, size_kb: int, total: int, free: int | None = None) -> None:
    """Change the huge page count of one size on one cell (as ``echo N > nr_hugepages``)."""
    directory = sys / f"devices/system/node/node{node}/hugepages/hugepages-{size_kb}kB"
    _write(directory / "nr_hugepages", f"{total}\n")
    _write(directory / "free_hugepages", f"{total if free is None else free}\n")


def two_socket_intel(base: Path) -> Path:
    """Two-socket Xeon (e.g. Gold 6230), 20 cores per socket, SMT 2, 192 GiB per socket.

    node0: CPUs 0-19,40-59   node1: CPUs 20-39,60-79   distances 10/21.
    """
    cells = [
        Cell(cpus=[*range(0, 20), *range(40, 60)], memory_kb=192 * GiB_KB),
        Cell(cpus=[*range(20, 40), *range(60, 80)], memory_kb=192 * GiB_KB),
    ]
    return build_numa_host(base, cells, [[10, 21], [21, 10]], threads_per_core=2)


def amd_epyc_nps4(base: Path) -> Path:
    """Two-socket EPYC 7542 in NPS4: 4 cells per socket, 8 cores per cell, SMT 2, 64 GiB per cell.

    node k: CPUs 8k..8k+7 and 64+8k..64+8k+7. Distances: 10 self, 11 the neighbouring quadrant,
    12 the other quadrants of the socket, 32 across sockets.
    """
    cells = [
        Cell(
            cpus=[*range(8 * k, 8 * k + 8), *range(64 + 8 * k, 64 + 8 * k + 8)],
            memory_kb=64 * GiB_KB,
        )
        for k in range(8)
    ]

    def distance(a: int, b: int) -> int:
        if a == b:
            return 10
        if a // 4 != b // 4:
            return 32
        return 11 if a // 2 == b // 2 else 12

    matrix = [[distance(a, b) for b in range(8)] for a in range(8)]
    return build_numa_host(base, cells, matrix, threads_per_core=2)


def uneven_hugepages(base: Path) -> Path:
    """Two cells of 8 cores, 64 GiB each, huge pages reserved unevenly:

    node0: 1024 x 2 MiB (1000 free), 4 x 1 GiB (2 free)   node1: 512 x 2 MiB, no 1 GiB page.
    """
    cells = [
        Cell(
            cpus=range(0, 8),
            memory_kb=64 * GiB_KB,
            hugepages={HUGE_2M: (1024, 1000), HUGE_1G: (4, 2)},
        ),
        Cell(cpus=range(8, 16), memory_kb=64 * GiB_KB, hugepages={HUGE_2M: (512, 512)}),
    ]
    return build_numa_host(base, cells, [[10, 20], [20, 10]])


def one_cell_vm(base: Path) -> Path:
    """A small VM without NUMA directories: 4 vCPUs, 8 GiB, 2 MiB pages offered but none set."""
    return build_flat_host(base, cpus=4, memory_kb=8 * GiB_KB)


def set_sockets(sys: Path, sockets: Mapping[int, int]) -> None:
    """Write ``topology/physical_package_id`` of each CPU (``{cpu: socket}``)."""
    for cpu, socket in sockets.items():
        _write(sys / f"devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{socket}\n")


def add_pci_device(
    sys: Path,
    address: str,
    vendor: str,
    device: str,
    numa_node: int,
    *,
    total_vfs: int | None = None,
    physfn: str | None = None,
    devname: str | None = None,
) -> Path:
    """One ``bus/pci/devices/<address>`` directory: ``vendor``/``device`` (``0x`` hex),
    ``numa_node``, ``sriov_totalvfs`` for a PF, a ``physfn`` link for a VF (and the PF's
    ``virtfn<N>`` link to it), a ``net/<devname>`` directory."""
    directory = sys / "bus/pci/devices" / address
    _write(directory / "vendor", f"0x{vendor}\n")
    _write(directory / "device", f"0x{device}\n")
    _write(directory / "numa_node", f"{numa_node}\n")
    if total_vfs is not None:
        _write(directory / "sriov_totalvfs", f"{total_vfs}\n")
    if physfn is not None:
        (directory / "physfn").symlink_to(f"../{physfn}")
        pf = sys / "bus/pci/devices" / physfn
        n = len(list(pf.glob("virtfn*")))
        (pf / f"virtfn{n}").symlink_to(f"../{address}")
    if devname is not None:
        (directory / "net" / devname).mkdir(parents=True)
    return directory


def devices_host(base: Path) -> Path:
    """``two_socket_intel`` (cells 0 and 1 on sockets 0 and 1) with PCI devices::

    0000:18:00.0  8086:1521  node 0   a NIC without SR-IOV (eno1)
    0000:81:00.0  8086:1572  node 1   an X710 PF, sriov_totalvfs 8, 4 VFs enabled (ens1f0)
    0000:81:02.0-3 8086:154c node 1   its VFs
    0000:3b:00.0  10de:20b5  node 0   a GPU
    0000:d8:00.0  10de:20b5  node -1  a GPU the platform gives no NUMA node
    0000:00:1f.0  8086:a1c8  node -1  a chipset function (matched by no spec)
    """
    sys = two_socket_intel(base)
    set_sockets(sys, {cpu: 0 if cpu < 20 or 40 <= cpu < 60 else 1 for cpu in range(80)})
    add_pci_device(sys, "0000:18:00.0", "8086", "1521", 0, devname="eno1")
    add_pci_device(sys, "0000:81:00.0", "8086", "1572", 1, total_vfs=8, devname="ens1f0")
    for function in range(4):
        add_pci_device(sys, f"0000:81:02.{function}", "8086", "154c", 1, physfn="0000:81:00.0")
    add_pci_device(sys, "0000:3b:00.0", "10de", "20b5", 0)
    add_pci_device(sys, "0000:d8:00.0", "10de", "20b5", -1)
    add_pci_device(sys, "0000:00:1f.0", "8086", "a1c8", -1)
    return sys
