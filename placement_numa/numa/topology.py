"""The guest NUMA topology of a (validated) flavor and image: which guest CPUs and how much
memory each guest cell gets, and which of its CPUs are dedicated (``PCPU``) or shared (``VCPU``).

Nova semantics (``nova.virt.hardware.numa_get_constraints``):

* ``hw:numa_nodes=N`` makes N cells; CPUs and memory split evenly unless ``hw:numa_cpus.N`` /
  ``hw:numa_mem.N`` assign them (memory split evenly when only CPUs are listed, as in the
  Nova spec's third example);
* a page size or pinned CPUs (``dedicated``/``mixed``) without ``hw:numa_nodes`` imply one cell
  whose count is not fixed by the flavor (``fixed_cell_count`` false, so KEP-2902 distribution
  may widen it);
* ``dedicated``: every CPU is a ``PCPU``; ``mixed``: ``hw:cpu_dedicated_mask`` CPUs are ``PCPU``,
  the rest ``VCPU``; otherwise ``VCPU``;
* ``hw:emulator_threads_policy=isolate``: one more ``PCPU`` on the host cell of guest cell 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement_numa.numa.distribute import split_evenly
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.request import NumaRequest, numa_request

__all__ = ["GuestCell", "GuestTopology", "guest_topology"]


@dataclass(frozen=True, slots=True)
class GuestCell:
    """One guest NUMA cell: guest CPU ids, memory (MiB), and its ``VCPU``/``PCPU`` amounts."""

    index: int
    cpus: frozenset[int]
    memory_mb: int
    vcpu: int
    pcpu: int

    @property
    def cpu_count(self) -> int:
        """CPUs of the cell (``VCPU`` + ``PCPU``)."""
        return self.vcpu + self.pcpu


@dataclass(frozen=True, slots=True)
class GuestTopology:
    """The guest cells plus the per-instance settings the translation needs."""

    cells: tuple[GuestCell, ...]
    page_size: PageSizeRequest
    cpu_policy: str | None
    thread_policy: str | None
    emulator_threads_isolate: bool
    fixed_cell_count: bool
    explicit_page_size: bool = False
    # Whether Nova refuses to overcommit this guest's memory: dedicated CPUs (``dedicated`` /
    # ``mixed``) or an explicit ``hw:mem_page_size`` make Nova count FREE pages at ratio 1.0
    # (``_numa_fit_instance_cell``; ``numa.memory_rule`` enforces it). Derived, not given.
    memory_not_overcommitted: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        rule = self.explicit_page_size or self.cpu_policy in ("dedicated", "mixed")
        object.__setattr__(self, "memory_not_overcommitted", rule)


def _cpu_ranges(counts: list[int] | tuple[int, ...]) -> list[frozenset[int]]:
    """Guest CPU ids 0.. given out in order: ``counts[i]`` consecutive ids to cell ``i``."""
    result: list[frozenset[int]] = []
    start = 0
    for count in counts:
        result.append(frozenset(range(start, start + count)))
        start += count
    return result


def guest_topology(
    flavor: NumaRequest | Flavor,
    image: ImageProperties | None = None,
    *,
    cell_count: int | None = None,
    cpu_split: tuple[int, ...] | None = None,
) -> GuestTopology | None:
    """The guest topology of a ``NumaRequest`` (or of a flavor + image, resolved first by
    ``numa_request`` with no aliases and no topology policy), or ``None`` for a guest without
    NUMA request.

    ``cell_count`` overrides the implicit single cell of a flavor that does not fix its count
    (KEP-2902 distribution: CPUs and memory split evenly, remainder striped); ``cpu_split``
    (one CPU count per cell, summing to the flavor's vcpus) replaces the even split of the
    CPUs over those cells (memory stays even: ``topology_policy`` restricted/best-effort
    without ``distribute_cpus_across_numa``). Raises
    ``InvalidFlavor`` (400) when a flavor given as such does not validate.
    """
    request = flavor if isinstance(flavor, NumaRequest) else numa_request(flavor, image)
    if not request.is_numa:
        return None
    size = request.page_size
    page = size or PageSizeRequest("small")
    policy = request.cpu_policy
    nodes = request.numa_nodes
    fixed = nodes is not None
    count = nodes if nodes is not None else (cell_count or 1)
    vcpus, memory_mb = request.vcpus, request.memory_mb

    if request.cell_cpus:
        cpus = list(request.cell_cpus)
    else:
        split = cpu_split if cpu_split is not None and len(cpu_split) == count else None
        cpus = _cpu_ranges(split or split_evenly(vcpus, count))
    if request.cell_memory_mb:
        memory = list(request.cell_memory_mb)
    else:
        memory = split_evenly(memory_mb, count, page.step_mb if not fixed else 1)

    mask = request.dedicated
    cells = []
    for index in range(count):
        if policy == "dedicated":
            pcpu = len(cpus[index])
        elif mask is not None:
            pcpu = len(cpus[index] & mask)
        else:
            pcpu = 0
        vcpu = len(cpus[index]) - pcpu
        if request.emulator_threads_isolate and index == 0:
            pcpu += 1
        cells.append(GuestCell(index, cpus[index], memory[index], vcpu, pcpu))
    return GuestTopology(
        tuple(cells),
        page,
        policy,
        request.thread_policy,
        request.emulator_threads_isolate,
        fixed,
        size is not None,
    )
