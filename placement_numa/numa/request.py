"""Step 1 of the NUMA pipeline: flavor + image + options -> one frozen ``NumaRequest``.

``numa_request`` is the only place that reads a flavor's extra specs and an image's
properties: it runs Nova's checks (``validation.validate``) once, then copies out every
setting resolved with Nova's precedence rules (``resolve.FlavorSettings``): the sizes, the
granular groups (``resources[$S]:``/``trait[$S]:``) and ``group_policy``, the cell count, page
size, CPU and thread policy, emulator threads, explicit per-cell CPUs and memory, the dedicated
mask of a ``mixed`` guest, the requested PCI devices with their aliases and NUMA affinity, the
Topology Manager policy, and whether the guest is a NUMA guest (``is_numa``, the one answer).
The request holds no raw flavor: the plan (``numa.plan``), the guest topology, the translation,
the ranking and the claim service read the ``NumaRequest`` only.

``NumaOptions`` are the request's options (``limit``, ranking and widening switches, the
``topology_policy`` name); they travel whole (``dataclasses.replace``), never rebuilt field by
field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.pci_alias import DeviceRequest, PciAlias
from placement_numa.numa.resolve import FlavorSettings
from placement_numa.numa.topology_policies import TopologyPolicy
from placement_numa.numa.topology_policies import policy as topology_policy_named
from placement_numa.numa.validation import validate

__all__ = ["FlavorGroup", "GroupPolicy", "NumaOptions", "NumaRequest", "numa_request"]

GroupPolicy = Literal["none", "isolate"]


@dataclass(frozen=True)
class NumaOptions:
    """``limit`` (``None`` = all), ``prefer_closest_numa_nodes`` (KEP-3545, default on),
    ``distribute_cpus_across_numa`` (KEP-2902, default off), ``every_ordering`` (default off:
    guest cells with identical requests are interchangeable, so each distinct set of host
    cells is returned once; on: every assignment of guest cells to them, as GET does) and
    ``diversify`` (default on: the best candidate of every host, in rank order, before the
    second best of any host, so a ``limit`` answer offers alternates on distinct hosts);
    ``topology_policy``: the Topology Manager policy (``none``, ``best-effort``,
    ``restricted``, ``single-numa-node``; ``None``: Nova's flavor semantics)."""

    limit: int | None = None
    prefer_closest: bool = True
    distribute: bool = False
    every_ordering: bool = False
    diversify: bool = True
    topology_policy: str | None = None


@dataclass(frozen=True, slots=True)
class FlavorGroup:
    """One granular group of the flavor (``resources$S:<RC>=<n>``, ``trait$S:<T>=required|
    forbidden``): ``suffix`` (``""``: unsuffixed), ``resources`` (class -> amount >= 0, zeros
    kept: an unsuffixed ``resources:VCPU=0`` removes the flavor's VCPU), traits."""

    suffix: str
    resources: Mapping[str, int]
    required: frozenset[str]
    forbidden: frozenset[str]


@dataclass(frozen=True)
class NumaRequest:
    """A validated flavor (+ image, + options) as one typed value.

    * ``vcpus`` (CPUs), ``memory_mb`` (MiB), ``disk_gb`` (GiB: root + ephemeral + swap rounded
      up, as Nova), ``name``;
    * ``groups``: the flavor's granular groups by suffix (unsuffixed first when present);
      ``group_policy``: ``none``, ``isolate`` or ``None`` (unset);
    * ``numa_nodes``: ``hw:numa_nodes`` (``None``: not fixed by the flavor or image);
    * ``page_size``: the explicit page-size request (``None``: small pages, implicit);
    * ``cpu_policy`` / ``thread_policy``: effective policies (``None``: unset);
    * ``emulator_threads_isolate``: one more dedicated CPU on guest cell 0;
    * ``cell_cpus`` / ``cell_memory_mb``: explicit ``hw:numa_cpus.N`` (guest CPU ids) /
      ``hw:numa_mem.N`` (MiB) per guest cell, or ``None``;
    * ``dedicated``: the dedicated guest CPUs of a ``mixed`` guest (``None`` otherwise);
    * ``devices``: one ``DeviceRequest`` per requested PCI device, its affinity policy resolved;
    * ``topology_policy``: the request's Topology Manager policy (``None``: Nova's semantics);
    * ``is_numa``: whether the guest has a NUMA topology (``FlavorSettings.is_numa``);
    * ``options``: the request's ``NumaOptions``.
    """

    vcpus: int
    memory_mb: int
    disk_gb: int
    groups: tuple[FlavorGroup, ...]
    group_policy: GroupPolicy | None
    numa_nodes: int | None
    page_size: PageSizeRequest | None
    cpu_policy: str | None
    thread_policy: str | None
    emulator_threads_isolate: bool
    cell_cpus: tuple[frozenset[int], ...] | None
    cell_memory_mb: tuple[int, ...] | None
    dedicated: frozenset[int] | None
    devices: tuple[DeviceRequest, ...]
    topology_policy: TopologyPolicy | None
    is_numa: bool
    options: NumaOptions = field(default_factory=NumaOptions)
    name: str | None = None

    @property
    def unsuffixed(self) -> FlavorGroup | None:
        """The flavor's unsuffixed granular group (``resources:``/``trait:``), if any."""
        first = self.groups[0] if self.groups else None
        return first if first is not None and first.suffix == "" else None

    @property
    def numbered(self) -> tuple[FlavorGroup, ...]:
        """The flavor's numbered granular groups, by suffix."""
        return tuple(g for g in self.groups if g.suffix)


def _groups(settings: FlavorSettings) -> tuple[FlavorGroup, ...]:
    """The validated granular specs as typed groups, by suffix (``""`` sorts first)."""
    return tuple(
        FlavorGroup(
            suffix,
            {rc: int(v.value) for rc, v in spec.resources.items()},
            frozenset(t for t, v in spec.traits.items() if v.value == "required"),
            frozenset(t for t, v in spec.traits.items() if v.value == "forbidden"),
        )
        for suffix, spec in sorted(settings.granular.items())
    )


def _cells(
    settings: FlavorSettings, nodes: int | None
) -> tuple[tuple[frozenset[int], ...] | None, tuple[int, ...] | None]:
    """The explicit per-cell CPU sets and memory (MiB) of a flavor with ``nodes`` cells."""
    if nodes is None:
        return None, None
    cpus = settings.cell_cpu_sets
    memory = settings.cells("mem")
    return (
        tuple(cpus[i][1] for i in range(nodes)) if cpus else None,
        tuple(int(memory[i].value) for i in range(nodes)) if memory else None,
    )


def numa_request(
    flavor: Flavor,
    image: ImageProperties | None = None,
    options: NumaOptions | None = None,
    *,
    aliases: Mapping[str, PciAlias] | None = None,
) -> NumaRequest:
    """Validate ``flavor`` (+ ``image``) once and resolve it into a ``NumaRequest`` under
    ``options`` (its ``topology_policy`` applies).

    ``aliases``: the ``[pci] alias`` table (``numa.pci_alias.parse_aliases``; none: a flavor
    asking a device is refused). Raises ``InvalidFlavor`` (400,
    ``placement_numa.flavor.invalid``) naming the offending keys: any of Nova's checks, a bad
    ``pci_passthrough:alias`` or affinity policy, an unknown alias.
    """
    options = options or NumaOptions()
    policy = topology_policy_named(options.topology_policy)
    settings = validate(flavor, image, aliases=aliases, topology_policy=policy)
    nodes = settings.numa_nodes[0]
    cpu_policy = settings.cpu_policy[0]
    cell_cpus, cell_memory = _cells(settings, nodes)
    group_policy = flavor.spec("group_policy")
    return NumaRequest(
        vcpus=flavor.vcpus,
        memory_mb=flavor.memory_mb,
        disk_gb=flavor.disk_gb,
        groups=_groups(settings),
        group_policy=group_policy if group_policy in ("none", "isolate") else None,  # type: ignore[arg-type]
        numa_nodes=nodes,
        page_size=settings.page_size[0],
        cpu_policy=cpu_policy,
        thread_policy=settings.thread_policy[0],
        emulator_threads_isolate=settings.emulator_threads_isolate[0],
        cell_cpus=cell_cpus,
        cell_memory_mb=cell_memory,
        dedicated=settings.dedicated if cpu_policy == "mixed" else None,
        devices=settings.devices,
        topology_policy=policy,
        is_numa=settings.is_numa,
        options=options,
        name=flavor.name,
    )
