"""One typed flavor request: flavor + image (+ ``[pci] alias`` + ``topology_policy``) resolved
once into a frozen value that the guest topology, the translation, the ranking and the claim
service share.

``resolve_request`` runs Nova's checks (``validation.validate``) once, then reads every setting
once with Nova's precedence rules (``resolve``): the cell count, page size, CPU and thread
policy, emulator threads, explicit per-cell CPUs and memory, the dedicated mask of a ``mixed``
guest, and the requested PCI devices with their NUMA affinity policy. Everything downstream reads
the ``FlavorRequest``; nothing goes back to the extra specs.

Device affinity (Nova's ``hw:pci_numa_affinity_policy`` / ``hw_pci_numa_affinity_policy``):
flavor and image may not disagree (``ImagePCINUMAPolicyForbidden``); their value wins over an
alias's ``numa_policy``; ``legacy`` by default. A ``topology_policy`` replaces all of them
(``single-numa-node``/``restricted``: ``required``, ``best-effort``: ``preferred``, ``none``:
no affinity).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placement_numa.numa.cpu_spec import parse_cpu_spec
from placement_numa.numa.extra_specs import flavor_and_image
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.pci_alias import (
    AFFINITY_POLICIES,
    ALIAS_SPEC,
    DeviceRequest,
    PciAlias,
    device_requests,
)
from placement_numa.numa.resolve import InvalidFlavor
from placement_numa.numa.topology_policies import TopologyPolicy
from placement_numa.numa.validation import dedicated_mask, validate

__all__ = ["FlavorRequest", "resolve_request", "as_request"]


@dataclass(frozen=True)
class FlavorRequest:
    """A validated flavor (+ image) as one typed value.

    * ``numa_nodes``: ``hw:numa_nodes`` (``None``: not fixed by the flavor or image);
    * ``page_size``: the explicit page-size request (``None``: small pages, implicit);
    * ``cpu_policy`` / ``thread_policy``: effective policies (``None``: unset);
    * ``emulator_threads_isolate``: one more dedicated CPU on guest cell 0;
    * ``cell_cpus`` / ``cell_memory_mb``: explicit ``hw:numa_cpus.N`` (guest CPU ids) /
      ``hw:numa_mem.N`` (MiB) per guest cell, or ``None``;
    * ``dedicated``: the dedicated guest CPUs of a ``mixed`` guest (``None`` otherwise);
    * ``devices``: one ``DeviceRequest`` per requested PCI device, its affinity policy resolved;
    * ``topology_policy``: the request's Topology Manager policy (``None``: Nova's semantics).
    """

    flavor: Flavor
    image: ImageProperties | None
    numa_nodes: int | None
    page_size: PageSizeRequest | None
    cpu_policy: str | None
    thread_policy: str | None
    emulator_threads_isolate: bool
    cell_cpus: tuple[frozenset[int], ...] | None
    cell_memory_mb: tuple[int, ...] | None
    dedicated: frozenset[int] | None
    devices: tuple[DeviceRequest, ...] = ()
    topology_policy: TopologyPolicy | None = None

    @property
    def is_numa(self) -> bool:
        """Whether the guest has a NUMA topology: ``hw:numa_nodes``, a page size, pinned CPUs
        (Nova: the last two imply one cell), PCI devices (one cell, as in Nova), or a
        ``topology_policy`` that aligns (all but ``none``)."""
        return (
            self.numa_nodes is not None
            or self.page_size is not None
            or self.cpu_policy in ("dedicated", "mixed")
            or bool(self.devices)
            or (self.topology_policy is not None and self.topology_policy.numa_guest)
        )


def _affinity_policy(flavor: Flavor, image: ImageProperties | None) -> str | None:
    """``hw:pci_numa_affinity_policy`` / ``hw_pci_numa_affinity_policy`` (Nova's
    ``get_pci_numa_policy_constraint``)."""
    from_flavor, from_image = flavor_and_image(flavor, image, "pci_numa_affinity_policy")
    for spec in (from_flavor, from_image):
        if spec is not None and spec.value not in AFFINITY_POLICIES:
            raise InvalidFlavor(
                [spec.key], f"'{spec.value}' is not one of {', '.join(AFFINITY_POLICIES)}"
            )
    if from_flavor and from_image and from_flavor.value != from_image.value:
        raise InvalidFlavor(
            [from_flavor.key, from_image.key],
            f"image PCI NUMA affinity policy '{from_image.value}' is forbidden by the flavor's"
            f" '{from_flavor.value}'",
        )
    chosen = from_flavor or from_image
    return chosen.value if chosen is not None else None


def _devices(
    flavor: Flavor,
    image: ImageProperties | None,
    aliases: Mapping[str, PciAlias],
    topology_policy: TopologyPolicy | None,
) -> tuple[DeviceRequest, ...]:
    value = flavor.spec(ALIAS_SPEC)
    policy = _affinity_policy(flavor, image)
    if value is None:
        return ()
    devices = device_requests(value, aliases, policy)
    if topology_policy is not None:
        forced = topology_policy.device_policy
        devices = tuple(DeviceRequest(d.alias, d.resource_class, d.traits, forced) for d in devices)
    return devices


def resolve_request(
    flavor: Flavor,
    image: ImageProperties | None = None,
    *,
    aliases: Mapping[str, PciAlias] | None = None,
    topology_policy: TopologyPolicy | None = None,
) -> FlavorRequest:
    """Validate ``flavor`` (+ ``image``) once and resolve it into a ``FlavorRequest``.

    ``aliases``: the ``[pci] alias`` table (``numa.pci_alias.parse_aliases``). Raises
    ``InvalidFlavor`` (400, ``placement_numa.flavor.invalid``) naming the offending keys: any
    of Nova's checks, a bad ``pci_passthrough:alias`` or affinity policy, an unknown alias.
    """
    settings = validate(flavor, image)  # every setting resolved once, shared from here on
    nodes, _ = settings.numa_nodes
    size, _ = settings.page_size
    policy, _ = settings.cpu_policy
    threads, _ = settings.thread_policy
    emulator, _ = settings.emulator_threads_isolate
    cell_cpus: tuple[frozenset[int], ...] | None = None
    cell_memory: tuple[int, ...] | None = None
    if nodes is not None:
        cpu_specs = settings.cells("cpus")
        mem_specs = settings.cells("mem")
        if cpu_specs:
            cell_cpus = tuple(
                parse_cpu_spec(cpu_specs[i].value, max_cpu=flavor.vcpus - 1) for i in range(nodes)
            )
        if mem_specs:
            cell_memory = tuple(int(mem_specs[i].value) for i in range(nodes))
    return FlavorRequest(
        flavor=flavor,
        image=image,
        numa_nodes=nodes,
        page_size=size,
        cpu_policy=policy,
        thread_policy=threads,
        emulator_threads_isolate=emulator,
        cell_cpus=cell_cpus,
        cell_memory_mb=cell_memory,
        dedicated=dedicated_mask(flavor) if policy == "mixed" else None,
        devices=_devices(flavor, image, aliases or {}, topology_policy),
        topology_policy=topology_policy,
    )


def as_request(flavor: Flavor | FlavorRequest, image: ImageProperties | None) -> FlavorRequest:
    """``flavor`` when it is already a ``FlavorRequest``, else ``resolve_request(flavor,
    image)`` (no aliases, no topology policy)."""
    if isinstance(flavor, FlavorRequest):
        return flavor
    return resolve_request(flavor, image)
