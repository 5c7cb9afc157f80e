"""Step 1 of the NUMA pipeline: flavor + image + options -> one ``NumaRequest``
(``numa_request``, the step's one entry): every setting resolved once (``FlavorSettings``),
Nova's checks run on them (``validation.check``), then the request copied out
(``numa.request`` holds the values).

Nova's precedence rules between flavor extra specs and image properties, one function per
setting. Each returns the effective value or raises ``InvalidFlavor`` naming the keys at fault.

Rules carried over from ``nova.virt.hardware`` (behaviour, not code):

* ``hw:numa_nodes`` / ``hw_numa_nodes``: an integer >= 1 written as Nova's ``is_int_like``
  accepts (``"2"``, not ``" 2"`` or ``"02"``), at most ``MAX_NUMA_NODES`` (Nova's
  ``NUMA_NODES_MAX``, beyond which Nova ignores per-cell lists); the image may not set it when
  the flavor does (``ImageNUMATopologyForbidden``);
* ``hw:mem_page_size``: the image may ask a page size only when the flavor says ``large`` or
  ``any`` (``MemoryPageSizeForbidden``); the image's then wins;
* ``hw:cpu_policy``: ``shared`` | ``dedicated`` | ``mixed``; a flavor ``dedicated`` wins, an
  image may not ask more pinning than the flavor allows (``ImageCPUPinningForbidden``);
* ``hw:cpu_thread_policy``: ``prefer`` | ``isolate`` | ``require``; a flavor without one or
  with ``prefer`` takes the image's (``flavor or image``); a flavor ``isolate``/``require`` wins,
  and an image asking another policy then is refused (``ImageCPUThreadPolicyForbidden``);
* ``hw:cpu_dedicated_mask``: ``^`` masks read as "every guest CPU but" (``dedicated_mask``);
* ``hw:pci_numa_affinity_policy`` / ``hw_pci_numa_affinity_policy``: flavor and image may not
  disagree (``ImagePCINUMAPolicyForbidden``); their value wins over an alias's ``numa_policy``;
  ``legacy`` by default. A ``topology_policy`` replaces all of them (``single-numa-node`` /
  ``restricted``: ``required``, ``best-effort``: ``preferred``, ``none``: no affinity).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NoReturn

from placement_numa.numa.cpu_spec import CpuOutOfRange, CpuSpecError, parse_cpu_spec
from placement_numa.numa.extra_specs import (
    SpecValue,
    cell_specs,
    flavor_and_image,
    granular_specs,
)
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.invalid_flavor import InvalidFlavor
from placement_numa.numa.known_specs import unknown_key
from placement_numa.numa.page_sizes import PageSizeError, PageSizeRequest, parse_page_size
from placement_numa.numa.pci_alias import (
    AFFINITY_POLICIES,
    ALIAS_SPEC,
    DeviceRequest,
    PciAlias,
    device_requests,
)
from placement_numa.numa.request import FlavorGroup, NumaOptions, NumaRequest
from placement_numa.numa.topology_policies import TopologyPolicy
from placement_numa.numa.topology_policies import policy as topology_policy_named
from placement_numa.numa.validation import MAX_NUMA_NODES, MAX_VCPUS, CheckedSettings, check

__all__ = ["FlavorSettings", "numa_request", "validate"]  # and the resolvers, one per setting

CELL_KINDS = ("cpus", "mem")

CPU_POLICIES = ("shared", "dedicated", "mixed")
THREAD_POLICIES = ("prefer", "isolate", "require")
EMULATOR_POLICIES = ("share", "isolate")


def numa_nodes(flavor: Flavor, image: ImageProperties | None) -> tuple[int | None, str | None]:
    """The guest NUMA cell count and the key that set it, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "numa_nodes")
    if from_flavor and from_image:
        raise InvalidFlavor(
            [from_flavor.key, from_image.key],
            f"image property '{from_image.key}' may not override the NUMA configuration set"
            " by the flavor",
        )
    chosen = from_flavor or from_image
    if chosen is None:
        return None, None
    text = chosen.value
    count = int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else 0
    if str(count) != text or count < 1:
        raise InvalidFlavor([chosen.key], f"must be an integer >= 1, got '{text[:40]}'")
    if count > MAX_NUMA_NODES:
        raise InvalidFlavor([chosen.key], f"must be <= {MAX_NUMA_NODES}, got {count}")
    return count, chosen.key


def _parse(spec: SpecValue) -> PageSizeRequest:
    try:
        return parse_page_size(spec.value)
    except PageSizeError as exc:
        raise InvalidFlavor([spec.key], str(exc)) from None


def page_size(
    flavor: Flavor, image: ImageProperties | None
) -> tuple[PageSizeRequest | None, str | None]:
    """The effective page-size request and the key that set it, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "mem_page_size")
    if from_image and not from_flavor:
        raise InvalidFlavor(
            [from_image.key],
            f"page size '{from_image.value}' is forbidden: the flavor sets no hw:mem_page_size",
        )
    if from_flavor is None:
        return None, None
    request = _parse(from_flavor)
    if from_image is not None:
        if request.kind not in ("large", "any"):
            raise InvalidFlavor(
                [from_flavor.key, from_image.key],
                f"page size '{from_image.value}' is forbidden against '{from_flavor.value}'",
            )
        return _parse(from_image), from_image.key
    return request, from_flavor.key


def cpu_policy(flavor: Flavor, image: ImageProperties | None) -> tuple[str | None, str | None]:
    """The effective CPU policy (``shared``/``dedicated``/``mixed``) and its key, or
    ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "cpu_policy")
    for spec in (from_flavor, from_image):
        if spec is not None and spec.value not in CPU_POLICIES:
            raise InvalidFlavor(
                [spec.key], f"'{spec.value}' is not one of {', '.join(CPU_POLICIES)}"
            )
    if from_flavor is not None:
        if from_image is not None:
            allowed = {
                "dedicated": CPU_POLICIES,
                "mixed": ("shared", "mixed"),
                "shared": ("shared",),
            }
            if from_image.value not in allowed[from_flavor.value]:
                raise InvalidFlavor(
                    [from_flavor.key, from_image.key],
                    f"image CPU pinning policy '{from_image.value}' is forbidden by the flavor's"
                    f" '{from_flavor.value}'",
                )
        return from_flavor.value, from_flavor.key
    if from_image is not None:
        return from_image.value, from_image.key
    return None, None


def thread_policy(flavor: Flavor, image: ImageProperties | None) -> tuple[str | None, str | None]:
    """The effective CPU thread policy and its key, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "cpu_thread_policy")
    for spec in (from_flavor, from_image):
        if spec is not None and spec.value not in THREAD_POLICIES:
            raise InvalidFlavor(
                [spec.key], f"'{spec.value}' is not one of {', '.join(THREAD_POLICIES)}"
            )
    if from_flavor is None or from_flavor.value == "prefer":
        chosen = from_flavor or from_image
        return (chosen.value, chosen.key) if chosen is not None else (None, None)
    if from_image is not None and from_image.value != from_flavor.value:
        raise InvalidFlavor(
            [from_flavor.key, from_image.key],
            f"image CPU thread policy '{from_image.value}' is forbidden by the flavor's"
            f" '{from_flavor.value}'",
        )
    return from_flavor.value, from_flavor.key


def emulator_threads_isolate(flavor: Flavor) -> tuple[bool, str | None]:
    """Whether ``hw:emulator_threads_policy=isolate`` (one more dedicated CPU)."""
    value = flavor.spec("hw:emulator_threads_policy")
    if value is None:
        return False, None
    if value not in EMULATOR_POLICIES:
        raise InvalidFlavor(
            ["hw:emulator_threads_policy"],
            f"'{value}' is not one of {', '.join(EMULATOR_POLICIES)}",
        )
    return value == "isolate", "hw:emulator_threads_policy"


def dedicated_mask(flavor: Flavor) -> frozenset[int] | None:
    """The dedicated guest CPUs of a ``mixed`` flavor (``hw:cpu_dedicated_mask``), or ``None``
    (unset or empty).

    Nova's rule (``get_dedicated_cpu_constraint``): a mask that starts with ``^`` is read as
    ``0-(vcpus-1),<mask>``, so ``^0,1`` is every guest CPU but 0 (``1`` is included anyway);
    any other mask names the dedicated CPUs. Parsed with ``vcpus - 1`` as the bound, so a CPU
    beyond the guest's is refused before anything is expanded.
    """
    value = flavor.spec("hw:cpu_dedicated_mask")
    if not value:
        return None
    text = f"0-{flavor.vcpus - 1},{value}" if value.strip().startswith("^") else value
    try:
        return parse_cpu_spec(text, max_cpu=flavor.vcpus - 1)
    except CpuOutOfRange as exc:
        raise InvalidFlavor(
            ["hw:cpu_dedicated_mask"],
            f"CPU number {exc.cpu} is larger than max {exc.max_cpu}: the mask must be a subset"
            " of the flavor's vCPUs",
        ) from None
    except CpuSpecError as exc:
        raise InvalidFlavor(["hw:cpu_dedicated_mask"], str(exc)) from None


def affinity_policy(flavor: Flavor, image: ImageProperties | None) -> str | None:
    """``hw:pci_numa_affinity_policy`` / ``hw_pci_numa_affinity_policy`` (Nova's
    ``get_pci_numa_policy_constraint``), or ``None``."""
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


def devices(
    flavor: Flavor,
    image: ImageProperties | None,
    aliases: Mapping[str, PciAlias],
    topology_policy: TopologyPolicy | None,
) -> tuple[DeviceRequest, ...]:
    """The PCI devices of ``pci_passthrough:alias`` with ``aliases`` (the ``[pci] alias``
    table), each with its effective NUMA affinity policy (the module docstring)."""
    value = flavor.spec(ALIAS_SPEC)
    policy = affinity_policy(flavor, image)
    if value is None:
        return ()
    found = device_requests(value, aliases, policy)
    if topology_policy is not None:
        forced = topology_policy.device_policy
        found = tuple(DeviceRequest(d.alias, d.resource_class, d.traits, forced) for d in found)
    return found


class FlavorSettings(CheckedSettings):
    """A flavor (+ image) whose settings are all resolved once, at construction, with the rules
    above: ``numa_nodes``, ``page_size``, ``cpu_policy``, ``thread_policy`` (each ``(value,
    key that set it)``), ``emulator_threads_isolate`` and ``cells(kind)`` (``hw:numa_<kind>.N``
    of the flavor, else ``hw_numa_<kind>.N`` of the image; ``kind`` ``"cpus"`` or ``"mem"``).
    Also ``unknown_key`` (the first mistyped ``hw:`` key, ``numa.known_specs``), ``granular``
    (the ``resources[$S]:``/``trait[$S]:`` specs by suffix), ``cell_cpu_sets`` (each cell's CPU
    list parsed), ``dedicated`` (the parsed ``hw:cpu_dedicated_mask``),
    ``devices`` (with ``aliases`` and ``topology_policy``) and ``is_numa``, the one answer to
    "is this a NUMA guest?".

    Nova's checks (``validation``) and the typed request (``request``) share one, so no setting
    is read or parsed twice, and they read plain attributes (one pass here, then the checks). A
    setting that does not resolve keeps its ``InvalidFlavor``, raised at each use, so the checks
    still fail in their own order. CPU lists and the mask are parsed only for
    ``1 <= vcpus <= MAX_VCPUS`` (beyond, ``validation.check_flavor_sizes`` refuses the flavor
    before any of them is read; they resolve to that refusal).
    """

    # the settings the checks read are declared once, in ``validation.CheckedSettings``
    devices: tuple[DeviceRequest, ...]

    def __init__(
        self,
        flavor: Flavor,
        image: ImageProperties | None = None,
        *,
        aliases: Mapping[str, PciAlias] | None = None,
        topology_policy: TopologyPolicy | None = None,
    ) -> None:
        self.flavor = flavor
        self.image = image
        self.aliases: Mapping[str, PciAlias] = aliases or {}
        self.topology_policy = topology_policy
        # the first ``hw:``-namespace key Nova does not register (``numa.known_specs``), or None
        self.unknown_key = unknown_key(flavor.extra_specs)
        self._cells = {kind: _effective(*cell_specs(flavor, image, kind)) for kind in CELL_KINDS}
        self.granular = granular_specs(flavor)  # by suffix
        self.resolved: dict[str, object] = {}  # name -> value, or the InvalidFlavor it raises
        for name, resolve in (*_RESOLVERS, ("is_numa", FlavorSettings._is_numa)):
            try:
                value = resolve(self)
            except InvalidFlavor as exc:
                value = exc
            self.resolved[name] = value
            if not isinstance(value, InvalidFlavor):
                setattr(self, name, value)  # a plain attribute: read with no call

    def __getattr__(self, name: str) -> NoReturn:
        """Only for a setting that did not resolve (one that did is a plain attribute): raises
        its ``InvalidFlavor``."""
        found = self.__dict__.get("resolved", {}).get(name)
        if isinstance(found, InvalidFlavor):
            raise found
        raise AttributeError(name)

    def _is_numa(self) -> bool:
        """``is_numa`` from the values in its order, short cuts kept (a setting that did not
        resolve raises its error)."""
        return (
            self.numa_nodes[0] is not None
            or self.page_size[0] is not None
            or self.cpu_policy[0] in ("dedicated", "mixed")
            or bool(self.devices)
            or (self.topology_policy is not None and self.topology_policy.numa_guest)
        )


def _effective(flavor: dict[int, SpecValue], image: dict[int, SpecValue]) -> dict[int, SpecValue]:
    return flavor or image


def _sane_vcpus(flavor: Flavor) -> int:
    """``flavor.vcpus`` when CPU lists may be expanded for it (see ``FlavorSettings``)."""
    if not 1 <= flavor.vcpus <= MAX_VCPUS:
        raise InvalidFlavor(["vcpus"], f"must be between 1 and {MAX_VCPUS}, got {flavor.vcpus}")
    return flavor.vcpus


def _cell_cpu_sets(settings: FlavorSettings) -> dict[int, tuple[str, frozenset[int]]]:
    """``FlavorSettings.cell_cpu_sets`` (see there)."""
    vcpus = _sane_vcpus(settings.flavor)
    result: dict[int, tuple[str, frozenset[int]]] = {}
    for cell, spec in sorted(settings.cells("cpus").items()):
        try:
            cpus = parse_cpu_spec(spec.value, max_cpu=vcpus - 1)
        except CpuSpecError as exc:
            raise InvalidFlavor([spec.key], str(exc)) from None
        result[cell] = (spec.key, cpus)
    return result


_RESOLVERS: tuple[tuple[str, Callable[[FlavorSettings], object]], ...] = (
    ("numa_nodes", lambda s: numa_nodes(s.flavor, s.image)),
    ("page_size", lambda s: page_size(s.flavor, s.image)),
    ("cpu_policy", lambda s: cpu_policy(s.flavor, s.image)),
    ("thread_policy", lambda s: thread_policy(s.flavor, s.image)),
    ("emulator_threads_isolate", lambda s: emulator_threads_isolate(s.flavor)),
    ("cell_cpu_sets", _cell_cpu_sets),
    ("dedicated", lambda s: _sane_vcpus(s.flavor) and dedicated_mask(s.flavor)),
    ("devices", lambda s: devices(s.flavor, s.image, s.aliases, s.topology_policy)),
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
    disk_gb, group_policy = flavor.disk_gb, flavor.spec("group_policy")
    settings = validate(flavor, image, aliases=aliases, topology_policy=policy)
    # Only plain reads from here (the settings are resolved and checked): the typed groups,
    # by suffix (``""`` first), and the explicit per-cell CPU sets and memory (MiB).
    groups = [FlavorGroup.from_spec(sfx, spec) for sfx, spec in sorted(settings.granular.items())]
    nodes = settings.numa_nodes[0]
    cpus, memory = settings.cell_cpu_sets, settings.cells("mem")
    cells = range(nodes or 0)
    cpu_policy = settings.cpu_policy[0]
    # the devices (and so is_numa) are the one setting the checks may not have read
    devices, is_numa = settings.resolved["devices"], settings.resolved["is_numa"]
    if isinstance(devices, InvalidFlavor):
        raise devices
    return NumaRequest(
        vcpus=flavor.vcpus,
        memory_mb=flavor.memory_mb,
        disk_gb=disk_gb,
        groups=tuple(groups),
        group_policy=group_policy if group_policy in ("none", "isolate") else None,  # type: ignore[arg-type]
        numa_nodes=nodes,
        page_size=settings.page_size[0],
        cpu_policy=cpu_policy,
        thread_policy=settings.thread_policy[0],
        emulator_threads_isolate=settings.emulator_threads_isolate[0],
        cell_cpus=tuple(cpus[cell][1] for cell in cells) if cpus and cells else None,
        cell_memory_mb=tuple(int(memory[c].value) for c in cells) if memory and cells else None,
        dedicated=settings.dedicated if cpu_policy == "mixed" else None,
        devices=devices,  # type: ignore[arg-type]
        topology_policy=policy,
        is_numa=is_numa,  # type: ignore[arg-type]
        options=options,
        name=flavor.name,
    )


def validate(
    flavor: Flavor,
    image: ImageProperties | None = None,
    *,
    aliases: Mapping[str, PciAlias] | None = None,
    topology_policy: TopologyPolicy | None = None,
) -> FlavorSettings:
    """Run every check in ``CHECKS`` on one ``FlavorSettings`` (each setting resolved once,
    in the checks' order; ``aliases`` and ``topology_policy`` as for ``FlavorSettings``) and
    return it; raises the first ``InvalidFlavor``."""
    settings = FlavorSettings(flavor, image, aliases=aliases, topology_policy=topology_policy)
    check(settings)
    return settings
