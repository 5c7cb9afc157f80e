"""Nova's rules for NUMA flavors, as a list of small named checks.

Each check takes one ``FlavorSettings`` (the flavor and image, each setting resolved once and
shared by every check) and raises ``InvalidFlavor`` (400,
``placement_numa.flavor.invalid``, a ``placement_numa.errors.BadRequest``) whose detail starts
with the offending keys. ``check`` runs them in ``CHECKS`` order (called by
``resolve.numa_request`` and ``resolve.validate``, once the settings are resolved); the first
failure wins. The checks read only the settings' plain attributes.
The Nova exception each one mirrors is named in its docstring (behaviour of
``nova.virt.hardware.numa_get_constraints`` and ``nova.scheduler.utils.ResourceRequest``).
"""

from __future__ import annotations

from collections.abc import Callable

from placement_numa.names import CUSTOM_NAME_RE
from placement_numa.numa.cpu_spec import format_cpu_set
from placement_numa.numa.extra_specs import GranularSpec, SpecValue, cell_specs
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.invalid_flavor import InvalidFlavor
from placement_numa.numa.known_specs import closest_key
from placement_numa.numa.page_sizes import PageSizeRequest

__all__ = [
    "Check",
    "CHECKS",
    "CheckedSettings",
    "check",
    "InvalidFlavor",
    "MAX_VCPUS",
    "MAX_NUMA_NODES",
]


class CheckedSettings:
    """What the checks read, as plain attributes: the settings ``resolve.FlavorSettings`` (a
    subclass) resolves once, each ``(value, key that set it)`` where it has a key. Declared here
    so the checks need nothing of the resolution (no import cycle)."""

    flavor: Flavor
    image: ImageProperties | None
    unknown_key: str | None
    numa_nodes: tuple[int | None, str | None]
    page_size: tuple[PageSizeRequest | None, str | None]
    cpu_policy: tuple[str | None, str | None]
    thread_policy: tuple[str | None, str | None]
    emulator_threads_isolate: tuple[bool, str | None]
    cell_cpu_sets: dict[int, tuple[str, frozenset[int]]]
    dedicated: frozenset[int] | None
    granular: dict[str, GranularSpec]
    is_numa: bool
    _cells: dict[str, dict[int, SpecValue]]

    def cells(self, kind: str) -> dict[int, SpecValue]:
        """The effective per-cell list ``hw:numa_<kind>.N`` (flavor's, else image's; ``kind``
        ``"cpus"`` or ``"mem"``)."""
        return self._cells[kind]


Check = Callable[[CheckedSettings], None]

MAX_NUMA_NODES = 128
# Upper bound of a flavor's vcpus (Linux's largest NR_CPUS): guest CPU lists and masks are
# expanded only below it, so no flavor sizes work beyond it.
MAX_VCPUS = 8192
_NAME_RE = r"^[A-Z0-9_]+$"
CPU_CLASSES = ("VCPU", "PCPU")


def check_known_keys(settings: CheckedSettings) -> None:
    """Every ``hw:``/``hw_rng:``/``hw_video:`` key is one Nova registers (Nova's extra spec
    validation: "does not appear to be a valid extra spec"); the message suggests the closest
    valid key."""
    key = settings.unknown_key  # found while resolving (``FlavorSettings``)
    if key is None:
        return
    suggestion = closest_key(key)
    hint = f"; did you mean '{suggestion}'?" if suggestion else ""
    raise InvalidFlavor([key], f"'{key}' is not an extra spec Nova knows{hint}")


def check_flavor_sizes(settings: CheckedSettings) -> None:
    """1 <= vcpus <= ``MAX_VCPUS``, memory_mb >= 1, disk sizes >= 0."""
    flavor = settings.flavor
    for name in ("vcpus", "memory_mb"):
        if getattr(flavor, name) < 1:
            raise InvalidFlavor([name], f"must be >= 1, got {getattr(flavor, name)}")
    if flavor.vcpus > MAX_VCPUS:
        raise InvalidFlavor(["vcpus"], f"must be <= {MAX_VCPUS}, got {flavor.vcpus}")
    for name in ("root_gb", "ephemeral_gb", "swap"):
        if getattr(flavor, name) < 0:
            raise InvalidFlavor([name], f"must be >= 0, got {getattr(flavor, name)}")


def check_numa_nodes(settings: CheckedSettings) -> None:
    """``hw:numa_nodes`` is an integer >= 1, set by flavor or image, not both
    (``InvalidNUMANodesNumber``, ``ImageNUMATopologyForbidden``)."""
    _ = settings.numa_nodes  # resolving raises


def check_cell_lists_not_overridden(settings: CheckedSettings) -> None:
    """The image may not set ``hw_numa_cpus.N``/``hw_numa_mem.N`` when the flavor sets the
    same list (``ImageNUMATopologyForbidden``)."""
    flavor, image = settings.flavor, settings.image
    for kind in ("cpus", "mem"):
        from_flavor, from_image = cell_specs(flavor, image, kind)
        if from_flavor and from_image:
            keys = [v.key for v in from_flavor.values()] + [v.key for v in from_image.values()]
            raise InvalidFlavor(
                sorted(keys), f"image properties may not override the flavor's hw:numa_{kind}.N"
            )


def check_cell_keys_within_nodes(settings: CheckedSettings) -> None:
    """``hw:numa_cpus.N``/``hw:numa_mem.N`` need ``hw:numa_nodes`` and ``N < hw:numa_nodes``."""
    nodes, nodes_key = settings.numa_nodes
    for kind in ("cpus", "mem"):
        cells = settings.cells(kind)
        if cells and nodes is None:
            raise InvalidFlavor(
                sorted(v.key for v in cells.values()), "hw:numa_nodes must be set as well"
            )
        beyond = sorted(v.key for n, v in cells.items() if nodes is not None and n >= nodes)
        if beyond:
            raise InvalidFlavor(
                beyond + [nodes_key or "hw:numa_nodes"],
                f"guest NUMA cells are numbered 0..{(nodes or 1) - 1}",
            )


def check_cell_lists_complete(settings: CheckedSettings) -> None:
    """A CPU or memory list, once given, covers every guest cell
    (``ImageNUMATopologyIncomplete``)."""
    nodes, _ = settings.numa_nodes
    if nodes is None:
        return
    for kind in ("cpus", "mem"):
        cells = settings.cells(kind)
        if cells:
            prefix = next(iter(cells.values())).key.rsplit(".", 1)[0]
            missing = [f"{prefix}.{n}" for n in range(nodes) if n not in cells]
            if missing:
                raise InvalidFlavor(
                    missing,
                    f"CPU and memory allocation must be provided for all {nodes} NUMA cells",
                )


def check_cell_cpus(settings: CheckedSettings) -> None:
    """Guest CPU lists: well formed, each CPU < vcpus (``ImageNUMATopologyCPUOutOfRange``), in
    one cell only (``ImageNUMATopologyCPUDuplicates``), every CPU assigned
    (``ImageNUMATopologyCPUsUnassigned``)."""
    flavor = settings.flavor
    cells = settings.cell_cpu_sets
    if not cells:
        return
    owner: dict[int, str] = {}
    for key, cpus in cells.values():
        for cpu in sorted(cpus):
            if cpu >= flavor.vcpus:
                raise InvalidFlavor(
                    [key], f"CPU number {cpu} is larger than max {flavor.vcpus - 1}"
                )
            if cpu in owner:
                raise InvalidFlavor([owner[cpu], key], f"CPU number {cpu} is assigned to two cells")
            owner[cpu] = key
    unassigned = set(range(flavor.vcpus)) - set(owner)
    if unassigned:
        raise InvalidFlavor(
            sorted({key for key, _ in cells.values()}),
            f"CPU number(s) {format_cpu_set(unassigned)} are not assigned to any cell",
        )


def check_cell_memory(settings: CheckedSettings) -> None:
    """``hw:numa_mem.N`` are integers >= 1 (MiB) summing to the flavor's RAM
    (``ImageNUMATopologyMemoryOutOfRange``)."""
    flavor = settings.flavor
    cells = settings.cells("mem")
    if not cells:
        return
    total = 0
    for spec in cells.values():
        try:
            amount = int(spec.value)
        except ValueError:
            amount = 0
        if amount < 1:
            raise InvalidFlavor([spec.key], f"must be an integer >= 1 (MiB), got '{spec.value}'")
        total += amount
    if total != flavor.memory_mb:
        raise InvalidFlavor(
            sorted(v.key for v in cells.values()),
            f"{total} MB of memory assigned, but expected {flavor.memory_mb} MB",
        )


def check_even_split(settings: CheckedSettings) -> None:
    """Without explicit lists, vcpus and RAM must divide evenly by the cell count
    (``ImageNUMATopologyAsymmetric``)."""
    flavor = settings.flavor
    nodes, nodes_key = settings.numa_nodes
    if nodes is None or nodes_key is None:
        return
    if not settings.cells("cpus") and flavor.vcpus % nodes:
        raise InvalidFlavor(
            [nodes_key, "vcpus"],
            f"{flavor.vcpus} CPUs cannot be evenly distributed across {nodes} NUMA cells;"
            " assign them explicitly with hw:numa_cpus.N",
        )
    if not settings.cells("mem") and flavor.memory_mb % nodes:
        raise InvalidFlavor(
            [nodes_key, "memory_mb"],
            f"{flavor.memory_mb} MB cannot be evenly distributed across {nodes} NUMA cells;"
            " assign it explicitly with hw:numa_mem.N",
        )


def check_page_size(settings: CheckedSettings) -> None:
    """``hw:mem_page_size`` parses (``MemoryPageSizeInvalid``) and the image may only refine
    ``large``/``any`` (``MemoryPageSizeForbidden``)."""
    _ = settings.page_size  # resolving raises


def check_cpu_policy(settings: CheckedSettings) -> None:
    """``hw:cpu_policy`` is known and the image asks no more pinning than the flavor allows
    (``ImageCPUPinningForbidden``)."""
    _ = settings.cpu_policy  # resolving raises


def check_thread_policy(settings: CheckedSettings) -> None:
    """A thread policy needs dedicated CPUs (``CPUThreadPolicyConfigInvalid``)."""
    policy, key = settings.thread_policy
    cpu_policy, cpu_key = settings.cpu_policy
    if policy is not None and key is not None and cpu_policy not in ("dedicated", "mixed"):
        raise InvalidFlavor(
            [key] + ([cpu_key] if cpu_key else []),
            "a CPU thread policy needs hw:cpu_policy=dedicated or mixed",
        )


def check_emulator_threads(settings: CheckedSettings) -> None:
    """``hw:emulator_threads_policy=isolate`` needs dedicated CPUs
    (``BadRequirementEmulatorThreadsPolicy``)."""
    isolate, key = settings.emulator_threads_isolate
    cpu_policy, cpu_key = settings.cpu_policy
    if isolate and key is not None and cpu_policy not in ("dedicated", "mixed"):
        raise InvalidFlavor(
            [key] + ([cpu_key] if cpu_key else []),
            "isolated emulator threads need hw:cpu_policy=dedicated or mixed",
        )


def check_dedicated_mask(settings: CheckedSettings) -> None:
    """``mixed`` needs ``hw:cpu_dedicated_mask`` and only ``mixed`` takes one
    (``RequiredMixedInstancePolicy``/``RequiredMixedOrRealtimeCPUMask``); the mask lies within
    the guest CPUs and leaves at least one shared and one dedicated CPU
    (``MixedInstanceNotEnoughDedicatedCPUs``/``...SharedCPUs``)."""
    flavor = settings.flavor
    policy, policy_key = settings.cpu_policy
    mask = settings.dedicated
    if policy == "mixed" and mask is None:
        raise InvalidFlavor(
            [policy_key or "hw:cpu_policy", "hw:cpu_dedicated_mask"],
            "hw:cpu_policy=mixed needs hw:cpu_dedicated_mask",
        )
    if mask is None:
        return
    if policy != "mixed":
        raise InvalidFlavor(
            ["hw:cpu_dedicated_mask"] + ([policy_key] if policy_key else []),
            "hw:cpu_dedicated_mask needs hw:cpu_policy=mixed",
        )
    if not mask:
        raise InvalidFlavor(["hw:cpu_dedicated_mask"], "no dedicated CPU left")
    if len(mask) == flavor.vcpus:
        raise InvalidFlavor(["hw:cpu_dedicated_mask"], "no shared CPU left for a mixed instance")


def check_granular_specs(settings: CheckedSettings) -> None:
    """``resources[$S]:<RC>=<int >= 0>`` and ``trait[$S]:<T>=required|forbidden`` with
    well-formed names; ``group_policy`` is ``none`` or ``isolate``."""
    flavor = settings.flavor
    for spec in settings.granular.values():
        for name, value in spec.resources.items():
            if not _valid_name(name):
                raise InvalidFlavor([value.key], f"'{name}' is not a resource class name")
            if not value.value.isdigit():
                raise InvalidFlavor(
                    [value.key], f"amount must be an integer >= 0, got '{value.value}'"
                )
        for name, value in spec.traits.items():
            if not _valid_name(name):
                raise InvalidFlavor([value.key], f"'{name}' is not a trait name")
            if value.value not in ("required", "forbidden"):
                raise InvalidFlavor(
                    [value.key], f"must be 'required' or 'forbidden', got '{value.value}'"
                )
    group_policy = flavor.spec("group_policy")
    if group_policy is not None and group_policy not in ("none", "isolate"):
        raise InvalidFlavor(["group_policy"], f"must be 'none' or 'isolate', got '{group_policy}'")


def _valid_name(name: str) -> bool:
    import re

    return bool(re.match(_NAME_RE, name)) and (
        not name.startswith("CUSTOM_") or bool(CUSTOM_NAME_RE.match(name))
    )


def check_cpu_resources(settings: CheckedSettings) -> None:
    """Explicit CPU/memory resources must not contradict the CPU policy or the NUMA layout:
    ``resources:PCPU`` with ``shared``, ``resources:VCPU`` with ``dedicated``, both at once with
    a policy, and any ``resources[$S]:VCPU|PCPU|MEMORY_MB`` on a NUMA flavor (the NUMA
    translation places CPUs and memory itself)."""
    granular = settings.granular
    unsuffixed = granular.get("", None)
    explicit = unsuffixed.resources if unsuffixed else {}
    policy, policy_key = settings.cpu_policy
    keys = [policy_key] if policy_key else []
    if policy == "shared" and "PCPU" in explicit:
        raise InvalidFlavor(
            [explicit["PCPU"].key] + keys, "PCPU conflicts with a shared CPU policy"
        )
    if policy == "dedicated" and "VCPU" in explicit and explicit["VCPU"].value != "0":
        raise InvalidFlavor(
            [explicit["VCPU"].key] + keys, "VCPU conflicts with a dedicated CPU policy"
        )
    if policy is not None and "VCPU" in explicit and "PCPU" in explicit:
        raise InvalidFlavor(
            [explicit["VCPU"].key, explicit["PCPU"].key] + keys,
            "explicit VCPU and PCPU conflict with hw:cpu_policy",
        )
    placed = sorted(
        value.key
        for spec in granular.values()
        for name, value in spec.resources.items()
        if name in (*CPU_CLASSES, "MEMORY_MB")
    )
    if placed and settings.is_numa:
        raise InvalidFlavor(
            placed,
            "a NUMA flavor's CPUs and memory are placed per NUMA cell; drop the explicit resources",
        )


CHECKS: tuple[Check, ...] = (
    check_known_keys,
    check_flavor_sizes,
    check_numa_nodes,
    check_cell_lists_not_overridden,
    check_cell_keys_within_nodes,
    check_cell_lists_complete,
    check_cell_cpus,
    check_cell_memory,
    check_even_split,
    check_page_size,
    check_cpu_policy,
    check_thread_policy,
    check_emulator_threads,
    check_dedicated_mask,
    check_granular_specs,
    check_cpu_resources,
)


def check(settings: CheckedSettings) -> None:
    """Run every check in ``CHECKS`` on ``settings`` (resolved once, ``resolve.FlavorSettings``),
    in order; raises the first ``InvalidFlavor``."""
    for each in CHECKS:
        each(settings)
