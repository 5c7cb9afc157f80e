"""The values of step 1 of the NUMA pipeline (flavor + image + options -> one frozen
``NumaRequest``, built by ``numa.resolve.numa_request``).

``numa_request`` is the only place that reads a flavor's extra specs and an image's
properties: it resolves every setting once with Nova's precedence rules
(``resolve.FlavorSettings``), runs Nova's checks on them (``validation.check``), then copies
out what the request needs (plain reads, no step goes back to an earlier one): the sizes, the
granular groups (``resources[$S]:``/``trait[$S]:``) and ``group_policy``, the cell count, page
size, CPU and thread policy, emulator threads, explicit per-cell CPUs and memory, the dedicated
mask of a ``mixed`` guest, the requested PCI devices with their aliases and NUMA affinity, the
Topology Manager policy, and whether the guest is a NUMA guest (``is_numa``, the one answer).
The request holds no raw flavor: the plan (``numa.translate``), the guest topology, the translation,
the ranking and the claim service read the ``NumaRequest`` only.

``NumaOptions`` are the request's options (``limit``, ranking and widening switches, the
``topology_policy`` name); they travel whole (``dataclasses.replace``), never rebuilt field by
field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from placement_numa.numa.extra_specs import GranularSpec
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.pci_alias import DeviceRequest
from placement_numa.numa.topology_policies import TopologyPolicy

__all__ = ["FlavorGroup", "GroupPolicy", "NumaOptions", "NumaRequest"]

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

    @classmethod
    def from_spec(cls, suffix: str, spec: GranularSpec) -> FlavorGroup:
        """The group of the checked specs of one suffix (amounts as integers, traits split by
        ``required``/``forbidden``)."""
        required: set[str] = set()
        forbidden: set[str] = set()
        for trait, value in spec.traits.items():
            (required if value.value == "required" else forbidden).add(trait)
        amounts = {rc: int(amount.value) for rc, amount in spec.resources.items()}
        return cls(suffix, amounts, frozenset(required), frozenset(forbidden))


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
