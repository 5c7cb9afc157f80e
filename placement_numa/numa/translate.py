"""Step 2 of the NUMA pipeline: ``NumaRequest`` -> one ``SearchPlan`` (``search_plan``), built
once per request: the guest's NUMA cells (``guest_topology``) -> request groups with
``same_subtree`` (``translate``, the Nova spec's translation). The values they build live in
``numa.numa_query``; the groups besides the guest cells are written by ``numa.flavor_groups``.

The plan holds what the searches of one request run, each translated once: ``main`` (the
request as the flavor says, with its folded search form, guest cells, devices and ``fallback``
query, ``None`` when the request allows none); ``admitted`` (false when the topology policy
refuses the guest outright: ``single-numa-node`` and a guest fixed at more than one cell);
``widen`` (the cell count is not fixed and the topology policy or
``distribute_cpus_across_numa`` asks the guest at 1, 2, ... cells: KEP-2902, the Topology
Manager's ``restricted``/``best-effort``) and ``every`` (every width ranked together:
``best-effort``); ``widths()`` and ``attempts(width)``: the widths to try and, at each, the
guest topology of every CPU split tried (the even one only, or every split the most even first
for ``restricted``/``best-effort`` without ``distribute_cpus_across_numa``), each translated on
first use and kept, so later searches of the same plan (a claim's rounds, the bounded and the
exhaustive paths) never translate again. The candidate endpoint (``services.numa_candidates``),
the claim endpoint (``services.claims``) and ``explain`` (``NumaQuery.explain``) consume the same
plan. What depends on the fleet (traits and classes the service knows:
``services.numa_search.runnable``) is checked per snapshot by the searches, not here.

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

from dataclasses import dataclass, field

import os_traits

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.numa.distribute import cpu_splits, split_evenly, widths_to_try
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.flavor_groups import (
    HYPERTHREADING,
    device_groups,
    device_request_groups,
    extra_groups,
    flat_query,
    root_traits,
)
from placement_numa.numa.numa_query import (
    ALIGNING_POLICIES,
    CellGroups,
    DeviceGroup,
    GuestCell,
    GuestTopology,
    NumaQuery,
)
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.request import NumaRequest
from placement_numa.numa.resolve import numa_request

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
    "MAX_DISTRIBUTE_CELLS",
    "SearchPlan",
    "search_plan",
]

HW_NUMA_ROOT = os_traits.HW_NUMA_ROOT
HW_NON_NUMA = "HW_NON_NUMA"


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
        query = flat_query(request, None, frozenset({HW_NUMA_ROOT}))
        return NumaQuery(query, (), None, None, ("VCPU",), query, (), False, (), request)

    devices = device_groups(request, len(topology.cells))
    isolate = request.group_policy == "isolate"
    query, cells = _numa_query(request, topology, devices, fold=isolate)
    if isolate or not (request.numbered or devices):
        search, search_cells = _numa_query(request, topology, devices, fold=True)
        filter_anchors = False
    else:
        search, search_cells, filter_anchors = query, cells, len(cells) > 1
    fallback: CandidateQuery | None = flat_query(
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
    extra, required, forbidden, numbered = extra_groups(request, skip_placed=True)
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
    groups.extend(device_request_groups(request))
    tied = frozenset(d.suffix for d in devices if d.in_subtree)
    if tied and subtrees:
        subtrees[0] = subtrees[0] | tied
    root_required, root_forbidden = root_traits(topology)
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


# KEP-2902 tries 1..N cells; hosts rarely have more than 8 cells per socket pair.
MAX_DISTRIBUTE_CELLS = 16


@dataclass(frozen=True)
class SearchPlan:
    """The searches of one ``NumaRequest`` (see the module docstring). Build with
    ``search_plan``; safe to share between threads (a width translated twice by two threads at
    once gives equal values, the second kept)."""

    request: NumaRequest
    main: NumaQuery
    admitted: bool
    widen: bool
    every: bool
    _attempts: dict[int, tuple[NumaQuery, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def widths(self) -> list[int]:
        """The widths (guest cell counts) a widened request tries, narrowest first."""
        return widths_to_try(self.request.vcpus, MAX_DISTRIBUTE_CELLS)

    def splits(self, width: int) -> list[tuple[int, ...]]:
        """The CPU splits tried at ``width`` (``()``: the even split): the even one only
        (KEP-2902, and Nova's flavor semantics), or, for ``restricted``/``best-effort``
        without ``distribute_cpus_across_numa``, every split the most even first
        (``numa.distribute.cpu_splits``)."""
        policy = self.request.topology_policy
        uneven = (
            policy is not None and policy.widths != "flavor" and not self.request.options.distribute
        )
        if width == 1 or not uneven:
            return [()]
        return cpu_splits(self.request.vcpus, width)

    def attempts(self, width: int) -> tuple[NumaQuery, ...]:
        """The translation of the request at ``width`` cells, one per CPU split of
        ``splits(width)`` in that order (translated on first use, then kept)."""
        found = self._attempts.get(width)
        if found is None:
            found = tuple(
                translate(self.request, cell_count=width, cpu_split=split or None)
                for split in self.splits(width)
            )
            self._attempts[width] = found
        return found


def search_plan(request: NumaRequest) -> SearchPlan:
    """The ``SearchPlan`` of ``request`` (translates the main query once; widths on use).
    Raises ``InvalidFlavor`` (400) only for what the translation refuses."""
    policy = request.topology_policy
    admitted = policy is None or policy.admits(request.numa_nodes)
    main = translate_topology(request, guest_topology(request))
    widths = policy.widths if policy is not None else "flavor"
    distribute = request.options.distribute and (policy is None or policy.max_cells != 1)
    widen = (
        main.topology is not None
        and not main.topology.fixed_cell_count
        and (widths != "flavor" or distribute)
    )
    return SearchPlan(
        request=request,
        main=main,
        admitted=admitted,
        widen=widen,
        every=widths == "every",
    )
