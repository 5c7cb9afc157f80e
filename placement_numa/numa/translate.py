"""Step 2a of the NUMA pipeline: ``NumaRequest`` -> the guest's NUMA cells (``guest_topology``)
-> request groups with ``same_subtree`` (``translate``, the Nova spec's translation); the values
they build live in ``numa.numa_query``.

The guest cells (Nova semantics, ``nova.virt.hardware.numa_get_constraints``):

* ``hw:numa_nodes=N`` makes N cells; CPUs and memory split evenly unless ``hw:numa_cpus.N`` /
  ``hw:numa_mem.N`` assign them (memory split evenly when only CPUs are listed, as in the
  Nova spec's third example);
* a page size or pinned CPUs (``dedicated``/``mixed``) without ``hw:numa_nodes`` imply one cell
  whose count is not fixed by the flavor (``fixed_cell_count`` false, so KEP-2902 distribution
  may widen it);
* ``dedicated``: every CPU is a ``PCPU``; ``mixed``: ``hw:cpu_dedicated_mask`` CPUs are ``PCPU``,
  the rest ``VCPU``; otherwise ``VCPU``;
* ``hw:emulator_threads_policy=isolate``: one more ``PCPU`` on the host cell of guest cell 0.

The request groups: for each guest cell ``i`` (1-based, as the spec writes them)::

    resources_MEMi=MEMORY_MB:<cell MiB>      required_MEMi=<page-size trait>   (none for "any")
    resources_PROCi=VCPU:<shared>,PCPU:<dedicated>
    required_NUMAi=HW_NUMA_ROOT
    same_subtree=_MEMi,_PROCi,_NUMAi
    group_policy=none

plus the unsuffixed group (``DISK_GB`` = root + ephemeral + swap, and the flavor's own
``resources:``/``trait:`` extra specs) and the flavor's numbered ``resources$S``/``trait$S``
groups. Thread policies become ``root_required`` (``require``) or forbidden (``isolate``)
``HW_CPU_HYPERTHREADING`` on the compute node.

With ``group_policy=isolate`` the resourceless ``_NUMAi`` anchors cannot coexist with ``_PROCi``
on the same cell provider (isolate counts every suffixed group, as Placement does), so the
anchor is folded into ``_PROCi`` (``required_PROCi=HW_NUMA_ROOT``, ``same_subtree=_MEMi,_PROCi``).

Guest cells on distinct host cells: ``NumaQuery.anchors`` lists the suffix of each cell's anchor
group; the search must map them to distinct providers (Nova's NUMATopologyFilter rule, enforced
here as a search constraint).

A flavor without NUMA request gets one unsuffixed group with ``!HW_NUMA_ROOT`` (never a NUMA
host). A NUMA flavor also gets a ``fallback`` query for hosts not reshaped yet
(``!HW_NON_NUMA,!HW_NUMA_ROOT``), whose candidates rank after every NUMA fit.
"""

from __future__ import annotations

import os_traits

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.numa.distribute import split_evenly
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.numa_query import (
    ALIGNING_POLICIES,
    CellGroups,
    DeviceGroup,
    GuestCell,
    GuestTopology,
    NumaQuery,
)
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.request import NumaRequest, numa_request

__all__ = [
    "CellGroups",
    "DeviceGroup",
    "GuestCell",
    "GuestTopology",
    "NumaQuery",
    "guest_topology",
    "translate",
    "translate_topology",
    "HW_NUMA_ROOT",
    "HW_NON_NUMA",
    "HYPERTHREADING",
    "ALIGNING_POLICIES",
]

HW_NUMA_ROOT = os_traits.HW_NUMA_ROOT
HW_NON_NUMA = "HW_NON_NUMA"
HYPERTHREADING = "HW_CPU_HYPERTHREADING"
_PLACED = ("VCPU", "PCPU", "MEMORY_MB")


def _extra_groups(
    request: NumaRequest, skip_placed: bool
) -> tuple[dict[str, int], set[str], set[str], list[RequestGroup]]:
    """Unsuffixed resources/required/forbidden from the flavor's ``resources:``/``trait:``
    groups, and the numbered groups (``skip_placed``: without the CPU and memory classes, which
    the NUMA cells place)."""
    unsuffixed: dict[str, int] = {}
    required: set[str] = set()
    forbidden: set[str] = set()
    numbered: list[RequestGroup] = []
    for group in request.groups:
        resources = {
            rc: n for rc, n in group.resources.items() if not (skip_placed and rc in _PLACED)
        }
        if group.suffix == "":
            unsuffixed.update(resources)
            required |= group.required
            forbidden |= group.forbidden
        else:
            numbered.append(
                RequestGroup(
                    suffix=group.suffix,
                    resources={rc: n for rc, n in resources.items() if n > 0},
                    required_traits=group.required,
                    forbidden_traits=group.forbidden,
                )
            )
    return unsuffixed, required, forbidden, numbered


def _device_groups(request: NumaRequest, cells: int) -> tuple[DeviceGroup, ...]:
    """One group per device; tied by ``same_subtree`` when the guest has one cell and the
    policy is ``required`` (the only policy a subtree expresses exactly)."""
    return tuple(
        DeviceGroup(
            f"_PCI{n}", d.resource_class, d.numa_policy, cells == 1 and d.numa_policy == "required"
        )
        for n, d in enumerate(request.devices, start=1)
    )


def _device_request_groups(request: NumaRequest) -> list[RequestGroup]:
    return [
        RequestGroup(suffix=f"_PCI{n}", resources={d.resource_class: 1}, required_traits=d.traits)
        for n, d in enumerate(request.devices, start=1)
    ]


def _root_traits(topology: GuestTopology | None) -> tuple[frozenset[str], frozenset[str]]:
    if topology is None or topology.thread_policy is None:
        return frozenset(), frozenset()
    if topology.thread_policy == "require":
        return frozenset({HYPERTHREADING}), frozenset()
    if topology.thread_policy == "isolate":
        return frozenset(), frozenset({HYPERTHREADING})
    return frozenset(), frozenset()


def _flat_query(
    request: NumaRequest, topology: GuestTopology | None, forbidden_extra: frozenset[str]
) -> CandidateQuery:
    """One unsuffixed group with the whole flavor, plus its numbered and device groups
    (non-NUMA flavors and the fallback)."""
    extra, required, forbidden, numbered = _extra_groups(request, skip_placed=topology is not None)
    numbered = numbered + _device_request_groups(request)
    if topology is not None:
        vcpu = sum(c.vcpu for c in topology.cells)
        pcpu = sum(c.pcpu for c in topology.cells)
    else:
        vcpu, pcpu = request.vcpus, 0
    resources: dict[str, int] = {}
    if vcpu:
        resources["VCPU"] = vcpu
    if pcpu:
        resources["PCPU"] = pcpu
    resources["MEMORY_MB"] = request.memory_mb
    if request.disk_gb:
        resources["DISK_GB"] = request.disk_gb
    resources.update(extra)
    resources = {rc: n for rc, n in resources.items() if n > 0}
    root_required, root_forbidden = _root_traits(topology)
    return CandidateQuery(
        groups=(
            RequestGroup(
                suffix=None,
                resources=resources,
                required_traits=frozenset(required),
                forbidden_traits=frozenset(forbidden) | forbidden_extra,
            ),
            *numbered,
        ),
        group_policy=request.group_policy or ("none" if len(numbered) > 1 else None),
        root_required=root_required,
        root_forbidden=root_forbidden,
    )


def translate(
    flavor: NumaRequest | Flavor,
    image: ImageProperties | None = None,
    *,
    cell_count: int | None = None,
    cpu_split: tuple[int, ...] | None = None,
) -> NumaQuery:
    """Translate a ``NumaRequest`` (or a flavor and image, resolved first by ``numa_request``
    with no aliases and no topology policy) into a ``NumaQuery``.

    ``cell_count`` widens a flavor that does not fix its cell count (KEP-2902 distribution);
    ``cpu_split`` gives its CPUs per cell (``guest_topology``).
    PCI devices (``pci_passthrough:alias``) become one group each (``_PCI<n>``); with devices
    the guest cells' distinctness is checked on candidates (``filter_anchors``) unless the
    flavor asks ``group_policy=isolate``, since isolate would also keep two VFs of one PF apart.
    Raises ``InvalidFlavor`` (400, ``placement_numa.flavor.invalid``) naming the offending keys.
    """
    request = flavor if isinstance(flavor, NumaRequest) else numa_request(flavor, image)
    topology = guest_topology(request, cell_count=cell_count, cpu_split=cpu_split)
    return translate_topology(request, topology)


def translate_topology(request: NumaRequest, topology: GuestTopology | None) -> NumaQuery:
    """``translate`` of ``request`` whose guest topology is ``topology`` (``guest_topology``
    of it; ``None``: no NUMA request)."""
    if topology is None:
        query = _flat_query(request, None, frozenset({HW_NUMA_ROOT}))
        return NumaQuery(query, (), None, None, ("VCPU",), query, (), False, (), request)

    devices = _device_groups(request, len(topology.cells))
    isolate = request.group_policy == "isolate"
    query, cells = _numa_query(request, topology, devices, fold=isolate)
    if isolate or not (request.numbered or devices):
        search, search_cells = _numa_query(request, topology, devices, fold=True)
        filter_anchors = False
    else:
        search, search_cells, filter_anchors = query, cells, len(cells) > 1
    fallback: CandidateQuery | None = _flat_query(
        request, topology, frozenset({HW_NON_NUMA, HW_NUMA_ROOT})
    )
    policy = request.topology_policy
    if (policy is not None and not policy.fallback) or any(
        d.policy in ALIGNING_POLICIES for d in devices
    ):
        fallback = None
    classes = tuple(
        rc
        for rc in ("VCPU", "PCPU")
        if any((c.vcpu if rc == "VCPU" else c.pcpu) for c in topology.cells)
    )
    return NumaQuery(
        query,
        cells,
        fallback,
        topology,
        classes,
        search,
        search_cells,
        filter_anchors,
        devices,
        request,
    )


def _numa_query(
    request: NumaRequest,
    topology: GuestTopology,
    devices: tuple[DeviceGroup, ...],
    *,
    fold: bool,
) -> tuple[CandidateQuery, tuple[CellGroups, ...]]:
    """The NUMA-anchored query: the spec's form, or with ``fold`` the anchors folded into the
    CPU groups under ``group_policy=isolate``; device groups after the cells' (tied to the
    only cell by ``same_subtree`` when ``in_subtree``)."""
    extra, required, forbidden, numbered = _extra_groups(request, skip_placed=True)
    groups: list[RequestGroup] = []
    disk = {"DISK_GB": request.disk_gb} if request.disk_gb else {}
    unsuffixed = {**disk, **{rc: n for rc, n in extra.items() if n > 0}}
    if unsuffixed or required or forbidden:
        groups.append(
            RequestGroup(
                suffix=None,
                resources=unsuffixed,
                required_traits=frozenset(required),
                forbidden_traits=frozenset(forbidden),
            )
        )
    cells: list[CellGroups] = []
    subtrees: list[frozenset[str]] = []
    page_traits = topology.page_size.required_traits()
    for cell in topology.cells:
        n = cell.index + 1
        mem, proc, anchor = f"_MEM{n}", f"_PROC{n}", f"_NUMA{n}"
        cpu: dict[str, int] = {}
        if cell.vcpu:
            cpu["VCPU"] = cell.vcpu
        if cell.pcpu:
            cpu["PCPU"] = cell.pcpu
        groups.append(
            RequestGroup(
                suffix=mem, resources={"MEMORY_MB": cell.memory_mb}, required_traits=page_traits
            )
        )
        if fold:
            groups.append(
                RequestGroup(suffix=proc, resources=cpu, required_traits=frozenset({HW_NUMA_ROOT}))
            )
            cells.append(CellGroups(cell.index, proc, proc, mem))
            subtrees.append(frozenset({mem, proc}))
        else:
            groups.append(RequestGroup(suffix=proc, resources=cpu))
            groups.append(RequestGroup(suffix=anchor, required_traits=frozenset({HW_NUMA_ROOT})))
            cells.append(CellGroups(cell.index, anchor, proc, mem))
            subtrees.append(frozenset({mem, proc, anchor}))
    groups.extend(numbered)
    groups.extend(_device_request_groups(request))
    tied = frozenset(d.suffix for d in devices if d.in_subtree)
    if tied and subtrees:
        subtrees[0] = subtrees[0] | tied
    root_required, root_forbidden = _root_traits(topology)
    query = CandidateQuery(
        groups=tuple(groups),
        group_policy="isolate" if fold else "none",
        same_subtree=tuple(subtrees),
        root_required=root_required,
        root_forbidden=root_forbidden,
    )
    return query, tuple(cells)


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
